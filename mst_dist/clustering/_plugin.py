"""Where a run's HDBSCAN core distances live on the workers: a worker plugin and its table (imports ``distributed``)."""
from __future__ import annotations

from distributed.diagnostics.plugin import WorkerPlugin

#: name -> core distances, in each worker process (filled by the plugin, emptied as it goes)
_CORES: dict = {}


class CoreDistances(WorkerPlugin):
    """A run's core distances on every worker (joiners included) until the plugin is unregistered.

    Registered with ``client.register_plugin``: Dask installs it on every
    worker, and on any that joins later; unregistering it drops the array.
    """

    def __init__(self, name, core):
        self.name = name
        self.core = core

    def setup(self, worker):
        _CORES[self.name] = self.core

    def teardown(self, worker):
        _CORES.pop(self.name, None)


def core_here(name):
    """The core distances the plugin ``name`` installed on this worker."""
    try:
        return _CORES[name]
    except KeyError:
        raise RuntimeError(f"hdbscan: the core distances {name!r} are not on this worker (its plugin was "
                           f"unregistered: the run is over)") from None

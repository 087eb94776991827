"""The worker plugin that holds a run's HDBSCAN core distances on every worker (imports ``distributed``)."""
from __future__ import annotations

from distributed.diagnostics.plugin import WorkerPlugin

from mst_dist.clustering import hdbscan as _hdbscan


class CoreDistances(WorkerPlugin):
    """A run's core distances on every worker (joiners included) until the plugin is unregistered.

    Registered with ``client.register_plugin``: Dask installs it on every
    worker, and on any that joins later; unregistering it drops the array.
    """

    def __init__(self, name, core):
        self.name = name
        self.core = core

    def setup(self, worker):
        _hdbscan._CORES[self.name] = self.core

    def teardown(self, worker):
        _hdbscan._CORES.pop(self.name, None)

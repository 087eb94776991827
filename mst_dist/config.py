"""Engine settings: the packaged defaults in ``dask.config`` and how to read them.

The settings (``mst.split-every``, ``mst.cluster.n-workers``, ...) are
documented, with their defaults, in the packaged ``mst-dist.yaml``, which this
module loads into :mod:`dask.config` on import.  They layer as Dask's own do:
a keyword argument beats ``dask.config.set``, which beats an environment
variable (``DASK_MST__SPLIT_EVERY=4``), which beats your YAML files in
``~/.config/dask``, which beat the packaged file.  Read one with :func:`get`.

The run configs given to ``mst-dist run`` are checked by
:mod:`mst_dist.cli.runconfig`; a bad one, like a bad setting, is a
:class:`ConfigError`.
"""
from __future__ import annotations

import os

import dask.config
import yaml

from mst_dist.errors import ConfigError  # defined with the package's other errors

__all__ = ["BACKENDS", "STREAM_MODES", "ConfigError", "DEFAULTS", "get", "refresh"]

#: The kernels a run may ask for (``backend=``, ``--backend``, a run config's ``engine.backend``).
BACKENDS = ("auto", "cpu", "gpu")
#: When a run streams its edges from their source (``stream=``, ``mst.stream``).
STREAM_MODES = ("auto", "always", "never")

_DEFAULTS_FILE = os.path.join(os.path.dirname(__file__), "mst-dist.yaml")

with open(_DEFAULTS_FILE, encoding="utf-8") as _f:
    #: The packaged defaults (a copy of what ``mst-dist.yaml`` holds).
    DEFAULTS = yaml.safe_load(_f)

dask.config.update_defaults(DEFAULTS)


_NO_DEFAULT = object()


def get(key, override=None, default=_NO_DEFAULT):
    """An engine setting: ``override`` when given (not ``None``), else ``dask.config``.

    ``key`` is relative to ``mst`` (``"split-every"``, ``"cluster.n-workers"``)
    or absolute (``"mst.split-every"``); hyphens and underscores are
    interchangeable, as everywhere in :mod:`dask.config`.

    >>> get("split-every", 4)
    4
    >>> get("filter.light-factor") == dask.config.get("mst.filter.light-factor")
    True
    """
    if override is not None:
        return override
    if not key.startswith("mst."):
        key = "mst." + key
    if default is _NO_DEFAULT:
        return dask.config.get(key)
    return dask.config.get(key, default)


def refresh():
    """Re-read the environment and the YAML files (packaged defaults included).

    The new configuration is built apart and then put in place key by key:
    Dask's own ``dask.config.refresh`` empties the global configuration
    first, and a thread reading it meanwhile (the heartbeat of an
    in-process worker) fails with a ``KeyError`` and closes its worker.
    """
    fresh = {}
    dask.config.refresh(config=fresh)
    live = dask.config.config
    for key, value in fresh.items():
        live[key] = value
    for key in [k for k in live if k not in fresh]:
        del live[key]

"""mst-dist: minimum spanning forests of very large graphs on a Dask cluster.

>>> import mst_dist
>>> g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])
>>> res = mst_dist.minimum_spanning_forest(g)
>>> res.edge_ids.tolist(), res.total_weight, res.n_components
([1, 2, 3], 10, 1)
"""
import logging as _logging

# a library logs, and prints nothing unless the caller configures logging
_logging.getLogger("mst_dist").addHandler(_logging.NullHandler())

from mst_dist.environment import kernel_cache_dir as _kernel_cache_dir  # noqa: E402

_kernel_cache_dir()  # compiled kernels persist even where the package folder is read-only

from mst_dist.errors import (  # noqa: E402  (every error class, one base: mst_dist.errors)
    MSTError, ConfigError, InvalidGraphError, GraphFormatError, GraphTooLargeError, CheckpointMismatchError,
    ClusterStalledError, GPUUnavailableError, WorkerAddressError, SharedStorageError, ExchangeLostError,
)
from mst_dist.graph import Graph
from mst_dist.result import MSFResult, RoundStats, RunStats, PHASES
from mst_dist.api import minimum_spanning_forest, maximum_spanning_forest
from mst_dist.generators import generate, GENERATORS
from mst_dist.io import interop as _interop  # noqa: F401  (registers Graph.from_networkx, ...)
from mst_dist.io import writers as _writers  # noqa: F401  (registers the levels' URL writer)

from mst_dist._version import __version__

#: Attributes imported on first use (the readers pull in Numba and pyarrow).
_LAZY = {
    "read": ("io.readers", "read"),
    "hdbscan": ("clustering.hdbscan", "hdbscan"),
    "HDBSCAN": ("clustering.estimator", "HDBSCAN"),
    "write_forest": ("io.writers", "write_forest"),
    "write_labels": ("io.writers", "write_labels"),
    "write_graph": ("io.writers", "write_graph"),
    "read_forest": ("io.writers", "read_forest_dataset"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "MSTError",
    "ConfigError",
    "InvalidGraphError",
    "GraphFormatError",
    "GraphTooLargeError",
    "CheckpointMismatchError",
    "ClusterStalledError",
    "ExchangeLostError",
    "GPUUnavailableError",
    "WorkerAddressError",
    "SharedStorageError",
    "Graph",
    "MSFResult",
    "RoundStats",
    "RunStats",
    "PHASES",
    "minimum_spanning_forest",
    "maximum_spanning_forest",
    "hdbscan",
    "HDBSCAN",
    "generate",
    "GENERATORS",
    "read",
    "write_forest",
    "write_labels",
    "write_graph",
    "read_forest",
    "__version__",
]

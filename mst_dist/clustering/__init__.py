"""Clustering from the spanning forest: single linkage, flat clusters, Borůvka levels, HDBSCAN.

Single-linkage hierarchical clustering is Kruskal's merge order over the
minimum spanning forest; HDBSCAN builds its hierarchy from the forest of
mutual reachability distances; each Borůvka round is one level of affinity
clustering.  :class:`~mst_dist.MSFResult` has :meth:`~mst_dist.MSFResult.linkage`,
:meth:`~mst_dist.MSFResult.clusters` and :meth:`~mst_dist.MSFResult.levels`;
this package holds their implementations, :func:`mst_dist.hdbscan`, the
:class:`~mst_dist.HDBSCAN` estimator with its prediction functions, and the kNN
graph inputs (points in memory, as a Dask array, or read from ``.npy``,
Parquet and Zarr files by :func:`~mst_dist.clustering.read_points`).
"""
from mst_dist.clustering.flat import clusters
from mst_dist.clustering.knn import from_kneighbors_graph
from mst_dist.clustering.levels import levels, write_levels
from mst_dist.clustering.linkage import linkage

#: Names imported on first use, by module: HDBSCAN runs the engine and the kNN search runs on the
#: cluster (they sit above the API), while the forest's own methods here sit beside the result.
_LAZY = {"hdbscan": ".hdbscan", "HDBSCANResult": ".hdbscan", "CONDENSED_DTYPE": ".hdbscan",
         "knn_graph": ".neighbours", "from_points": ".neighbours", "knn_recall": ".neighbours", "HDBSCAN": ".estimator",
         "read_points": ".point_files",
         "approximate_predict": ".prediction", "membership_vector": ".prediction",
         "all_points_membership_vectors": ".prediction"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["linkage", "clusters", "levels", "write_levels", "hdbscan", "HDBSCANResult",
           "CONDENSED_DTYPE", "from_kneighbors_graph", "from_points", "knn_graph", "knn_recall", "read_points",
           "approximate_predict", "membership_vector", "all_points_membership_vectors"]
# (HDBSCAN, the estimator, is here too, documented once: as mst_dist.HDBSCAN)

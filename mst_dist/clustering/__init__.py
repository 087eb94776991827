"""Clustering from the spanning forest: single linkage, flat clusters, Borůvka levels, HDBSCAN.

Single-linkage hierarchical clustering is Kruskal's merge order over the
minimum spanning forest; HDBSCAN builds its hierarchy from the forest of
mutual reachability distances; each Borůvka round is one level of affinity
clustering.  :class:`~mst_dist.MSFResult` has :meth:`~mst_dist.MSFResult.linkage`,
:meth:`~mst_dist.MSFResult.clusters` and :meth:`~mst_dist.MSFResult.levels`;
this package holds their implementations, :func:`mst_dist.hdbscan` and the kNN
graph inputs.
"""
from mst_dist.clustering.flat import clusters
from mst_dist.clustering.hdbscan import CONDENSED_DTYPE, HDBSCANResult, hdbscan
from mst_dist.clustering.knn import from_kneighbors_graph, from_points
from mst_dist.clustering.levels import levels, write_levels
from mst_dist.clustering.linkage import linkage

__all__ = ["linkage", "clusters", "levels", "write_levels", "hdbscan", "HDBSCANResult",
           "CONDENSED_DTYPE", "from_kneighbors_graph", "from_points"]

"""HDBSCAN on a sparse graph of distances: core distances, mutual reachability, its forest, its tree."""
from __future__ import annotations

import logging
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["hdbscan", "HDBSCANResult", "CONDENSED_DTYPE"]

logger = logging.getLogger("mst_dist")

#: Fields of :attr:`mst_dist.clustering.HDBSCANResult.condensed_tree_`, the ``hdbscan`` package's names.
CONDENSED_DTYPE = np.dtype([("parent", np.int64), ("child", np.int64), ("lambda_val", np.float64),
                            ("child_size", np.int64)])


@dataclass
class HDBSCANResult:
    """What :func:`mst_dist.hdbscan` found, under scikit-learn's names.

    Attributes
    ----------
    labels_ : int64 ndarray of length n
        Cluster of each vertex, ``-1`` for noise; clusters numbered ``0, 1,
        ...`` in order of each cluster's smallest vertex.
    probabilities_ : float64 ndarray of length n
        Strength of each vertex's membership of its cluster (its lambda
        over the cluster's largest, capped at 1); 0 for noise.
    core_distances_ : float64 ndarray of length n
        Core distance of each vertex (``inf``: fewer neighbours than
        ``min_samples - 1``).
    condensed_tree_ : structured ndarray
        Rows ``(parent, child, lambda_val, child_size)`` (fields of
        ``mst_dist.clustering.CONDENSED_DTYPE``): clusters are ``n`` (the root), ``n + 1``,
        ...; a child below ``n`` is a vertex leaving its cluster at
        ``lambda_val = 1 / distance``.
    single_linkage_tree_ : float64 ndarray of shape (n - 1, 4)
        The single-linkage hierarchy of the mutual reachability distances,
        in SciPy's format (components of a disconnected graph join at
        ``inf``).
    forest_ : MSFResult
        The minimum spanning forest of the mutual reachability graph.
    n_clusters_ : int
        Clusters found (noise not counted).
    """

    labels_: np.ndarray
    probabilities_: np.ndarray
    core_distances_: np.ndarray
    condensed_tree_: np.ndarray
    single_linkage_tree_: np.ndarray
    forest_: object
    n_clusters_: int

    def __repr__(self):
        noise = int(np.count_nonzero(self.labels_ < 0))
        return f"HDBSCANResult(n_clusters_={self.n_clusters_}, noise={noise:,} of {self.labels_.shape[0]:,})"


def _positive_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"hdbscan: {name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _edges(graph, block=1 << 22):
    """All edges of ``graph`` in this process: ``(src, dst, weight)`` as int64, int64, float64."""
    from mst_dist.kernels.contract import to_host

    parts = []
    for s in graph.sources:
        for a in range(0, s.n_edges, block):
            parts.append(tuple(to_host(x) for x in s.load(a, min(a + block, s.n_edges))))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return (np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts]),
            np.concatenate([np.asarray(p[1], dtype=np.int64) for p in parts]),
            np.concatenate([np.asarray(p[2], dtype=np.float64) for p in parts]))


def core_distances(n, src, dst, weight, min_samples):
    """Core distance of every vertex: its ``(min_samples - 1)``-th nearest distinct neighbour.

    A vertex counts as its own first neighbour (scikit-learn's convention),
    so ``min_samples = 1`` gives zeros; a vertex with fewer distinct
    neighbours gets ``inf``.
    """
    from mst_dist.clustering._kernels import core_distances as kernel

    return kernel(n, src, dst, weight, min_samples - 1)


def mutual_reachability(src, dst, weight, core):
    """Edges weighted ``max(core[u], core[v], d(u, v))``, without self-loops and ends of no core distance."""
    mr = np.maximum(np.maximum(core[src], core[dst]), weight)
    keep = np.isfinite(mr) & (src != dst)
    if keep.all():
        return src, dst, mr
    return src[keep], dst[keep], mr[keep]


def hdbscan(graph, min_cluster_size=5, min_samples=None, *, cluster_selection_method="eom",
            allow_single_cluster=False, ties="merge", client=None, **options):
    """HDBSCAN clustering of a graph of distances (a kNN graph, or any sparse distance graph).

    Campello, Moulavi and Sander's HDBSCAN ("Density-Based Clustering Based
    on Hierarchical Density Estimates"), run on the edges of a graph: the
    core distance of each vertex from its incident edges, the mutual
    reachability weight ``max(core(u), core(v), d(u, v))`` of every edge
    (both computed in this process, from the edges read here),
    the minimum spanning forest of those weights (:func:`~mst_dist.minimum_spanning_forest`),
    its single-linkage hierarchy, the condensed tree and the excess-of-mass
    selection.

    Parameters
    ----------
    graph : Graph, SciPy sparse matrix or networkx graph
        Edge weights are distances (non-negative).  A directed kNN graph
        (``sklearn.neighbors.kneighbors_graph``) is best given through
        :func:`mst_dist.clustering.from_kneighbors_graph`, which symmetrises
        it and keeps zero distances.
    min_cluster_size : int, default 5
        Smallest cluster (at least 2).
    min_samples : int, optional
        Neighbours that make a core point, the point itself counted
        (scikit-learn's convention): the core distance is the distance to
        the ``(min_samples - 1)``-th nearest distinct neighbour along the
        vertex's edges.  Default: ``min_cluster_size``.
    cluster_selection_method : {"eom", "leaf"}
        Excess of mass (default), or the leaves of the condensed tree.
    allow_single_cluster : bool
        Let the root (all points) be the one cluster, as scikit-learn does.
    ties : {"merge", "order"}
        How merges of equal mutual reachability distance are condensed.
        ``"merge"`` (default): as one event, a cluster splitting at once into
        every part those merges join (the level sets of HDBSCAN*'s
        definition): the clusters do not depend on which of the equally
        good forests was found, nor on the vertices' numbering.
        ``"order"``: one merge at a time in the linkage's ``(weight, edge
        id)`` order, as scikit-learn and the ``hdbscan`` package condense
        the order their Prim walk found.
    client : distributed.Client, optional
        Passed to :func:`~mst_dist.minimum_spanning_forest`, with ``options``.

    Returns
    -------
    HDBSCANResult

    Notes
    -----
    On the complete graph of a distance matrix whose mutual reachability
    distances are distinct (``min_samples=1`` and distinct distances) the
    clusters and probabilities are those of
    ``sklearn.cluster.HDBSCAN(metric="precomputed")`` with the same
    parameters (the partition; clusters are numbered here by smallest
    vertex).  Core distances make ties common (every edge of a point to a
    neighbour closer than its core distance weighs that core distance);
    scikit-learn then condenses its Prim walk's order of the tied merges,
    an arbitrary one, and a point or two on the edge of a cluster may be
    labelled otherwise here (see ``ties``); given the same linkage,
    ``ties="order"`` gives scikit-learn's labels and probabilities exactly.

    A vertex with fewer than ``min_samples - 1`` distinct neighbours has no
    finite core distance: its edges are left out and it is noise.  The
    components of a disconnected graph join at infinite distance (lambda
    0): each component of at least ``min_cluster_size`` vertices is then
    clustered on its own, smaller ones are noise; never an error.

    Examples
    --------
    >>> import numpy as np, mst_dist
    >>> x = np.r_[np.arange(6.0), 100 + np.arange(6.0)]
    >>> i, j = np.triu_indices(12, 1)
    >>> g = mst_dist.Graph.from_arrays(i, j, np.abs(x[i] - x[j]))
    >>> mst_dist.hdbscan(g, min_cluster_size=3).labels_.tolist()
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    """
    from mst_dist.api import minimum_spanning_forest
    from mst_dist.clustering._kernels import condense, select_clusters
    from mst_dist.graph import Graph, as_graph

    graph = as_graph(graph)
    min_cluster_size = _positive_int("min_cluster_size", min_cluster_size, 2)
    min_samples = min_cluster_size if min_samples is None else _positive_int("min_samples", min_samples, 1)
    if ties not in ("merge", "order"):
        raise ValueError(f"hdbscan: unknown ties {ties!r}; choose one of merge, order")
    if cluster_selection_method not in ("eom", "leaf"):
        raise ValueError(f"hdbscan: unknown cluster_selection_method {cluster_selection_method!r}; "
                         f"choose one of eom, leaf")
    n = graph.n_vertices
    src, dst, w = _edges(graph)
    if w.shape[0] and w.min() < 0:
        raise ValueError(f"hdbscan: edge weights are distances and must be >= 0; edge "
                         f"{int(np.argmin(w))} has weight {w.min()!r}")
    core = core_distances(n, src, dst, w, min_samples)
    lacking = int(np.count_nonzero(~np.isfinite(core)))
    if lacking:
        logger.warning("hdbscan: %s of %s vertices have fewer than min_samples - 1 = %d neighbours: "
                       "no core distance, they are noise", f"{lacking:,}", f"{n:,}", min_samples - 1)
    mr = Graph.from_arrays(*mutual_reachability(src, dst, w, core), n_vertices=n, name="mutual-reachability")
    del src, dst, w
    forest = minimum_spanning_forest(mr, client, **options)
    Z = forest.linkage()
    parent, child, lam, size = condense(Z, n, min_cluster_size, ties == "merge")
    selected, lab, prob = select_clusters(parent, child, lam, size, n, cluster_selection_method == "leaf",
                                          bool(allow_single_cluster))
    labels = np.full(n, -1, dtype=np.int64)
    noisy = lab < 0
    if selected.shape[0]:
        # number the clusters by their smallest vertex
        idx = np.flatnonzero(~noisy)
        cl = lab[idx]
        uniq, first = np.unique(cl, return_index=True)
        rank = np.empty(uniq.shape[0], dtype=np.int64)
        rank[np.argsort(idx[first], kind="stable")] = np.arange(uniq.shape[0])
        labels[idx] = rank[np.searchsorted(uniq, cl)]
    tree = np.empty(parent.shape[0], dtype=CONDENSED_DTYPE)
    tree["parent"], tree["child"], tree["lambda_val"], tree["child_size"] = parent, child, lam, size
    return HDBSCANResult(labels_=labels, probabilities_=prob, core_distances_=core, condensed_tree_=tree,
                         single_linkage_tree_=Z, forest_=forest,
                         n_clusters_=int(labels.max()) + 1 if n and labels.max() >= 0 else 0)

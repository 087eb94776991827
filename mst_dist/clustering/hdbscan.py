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


# ---------------------------------------------------------------------------
# Core distances and mutual reachability on the workers (graphs read or generated there)
# ---------------------------------------------------------------------------

#: Candidate lists merged per task (the fan-in of the core distances' tree reduction).
FAN_IN = 8
#: The mutual-reachability weight of an edge with an end of no core distance: heavier than any
#: distance, so the forest takes such edges last, and the hierarchy leaves them out.
ABSENT = float(np.finfo(np.float64).max)


def _no_lists(k):
    return np.zeros(0, np.int64), np.zeros((0, k)), np.zeros((0, k), np.int64)


def _host_rows(source, start, stop):
    from mst_dist.kernels.contract import to_host

    s, d, w = (to_host(x) for x in source.load(start, stop))
    return np.asarray(s, np.int64), np.asarray(d, np.int64), np.asarray(w, np.float64)


def _check_distances(w, offset):
    """Distances are finite and non-negative: the first edge that is not (NaN, infinite, negative) is named."""
    from mst_dist.graph import InvalidGraphError

    bad = ~((w >= 0) & (w < np.inf))  # NaN fails both comparisons
    if w.shape[0] and bad.any():
        i = int(np.argmax(bad))
        what = "is negative" if w[i] < 0 else "is not a distance"
        raise InvalidGraphError(f"edge {offset + i}: weight {float(w[i])!r} {what}; hdbscan's edge weights "
                                f"are distances (finite, >= 0)", edge=offset + i)


def chunk_nearest(source, start, stop, offset, k):
    """A task: ``(vertices, d, nb)``, the ``k`` nearest distinct neighbours of every vertex these rows touch.

    ``d``/``nb`` are ``(len(vertices), k)``: ascending weights and the
    neighbours' ids (``inf``/``-1`` where fewer than ``k``), over these rows only.
    """
    from mst_dist.clustering._kernels import nearest

    s, d, w = _host_rows(source, start, stop)
    _check_distances(w, offset)
    if not s.shape[0]:
        return _no_lists(k)
    m = s.shape[0]
    verts, inv = np.unique(np.concatenate([s, d]), return_inverse=True)
    dist, nb = nearest(verts.shape[0], inv[:m], inv[m:], w, k, True)
    return verts, dist, np.where(nb >= 0, verts[np.maximum(nb, 0)], -1)


def merge_nearest(k, *parts):
    """A task: the ``k`` nearest distinct neighbours of each vertex over several :func:`chunk_nearest` results."""
    from mst_dist.clustering._kernels import nearest

    parts = [p for p in parts if p[0].shape[0]]
    if len(parts) <= 1:
        return parts[0] if parts else _no_lists(k)
    v = np.concatenate([np.repeat(p[0], k) for p in parts])
    u = np.concatenate([p[2].ravel() for p in parts])
    w = np.concatenate([p[1].ravel() for p in parts])
    keep = u >= 0
    v, u, w = v[keep], u[keep], w[keep]
    verts, inv = np.unique(v, return_inverse=True)
    dist, nb = nearest(verts.shape[0], inv, u, w, k, False)
    return verts, dist, nb


def core_array(n, k, merged=None):
    """A task: the core distance of every vertex from the merged nearest lists (``k = 0``: zeros)."""
    if k <= 0:
        return np.zeros(n)
    core = np.full(n, np.inf)
    verts, dist, _ = merged
    if verts.shape[0]:
        core[verts] = dist[:, k - 1]
    return core


def mutual_reachability_rows(start, stop, *, source, core, first=0):
    """Rows ``start:stop`` of ``source`` weighted by mutual reachability, where they load.

    ``core``: the name of the published core distances.  An edge with an end
    of no core distance weighs :data:`ABSENT`; the row count is the source's.
    ``first``: the source's first edge id (a weight that is not a distance
    is named by its edge, also where no nearest lists were made).
    """
    from mst_dist.clustering._plugin import core_here

    s, d, w = _host_rows(source, start, stop)
    _check_distances(w, first + start)
    c = core_here(core)
    cs, cd = c[s], c[d]
    mr = np.maximum(np.maximum(cs, cd), w)
    mr[~(np.isfinite(cs) & np.isfinite(cd))] = ABSENT
    return s, d, mr


def _forest_on_workers(graph, client, k, options):
    """``(core, forest)``: core distances and mutual reachability computed by tasks, then the forest.

    The rows are read where the graph's sources load them (files,
    generators): each chunk's nearest-neighbour lists, merged by a tree of
    tasks into the core distances (one array, on a worker), which come here
    (they are the result's ``core_distances_``) and go to every worker as a
    worker plugin under a run-unique name; the mutual-reachability graph is
    the same sources, weighted as they load.
    """
    import uuid

    from mst_dist.api import minimum_spanning_forest
    from mst_dist.graph import FunctionSource, Graph

    n = graph.n_vertices
    tok = uuid.uuid4().hex[:12]
    parts = []
    if k > 0:
        threads = sum(client.nthreads().values()) or 1
        chunks = graph.chunk_ranges(options.get("partitions") or 2 * threads)
        parts = [client.submit(chunk_nearest, graph.sources[r.source], r.start, r.stop, r.offset, k,
                               key=f"mst-hdbscan-nearest-{tok}-{i}") for i, r in enumerate(chunks)]
        level = 0
        while len(parts) > 1:
            parts = [client.submit(merge_nearest, k, *parts[i:i + FAN_IN],
                                   key=f"mst-hdbscan-merge-{tok}-{level}-{i}")
                     for i in range(0, len(parts), FAN_IN)]
            level += 1
    core = client.submit(core_array, n, k, *parts[:1], key=f"mst-hdbscan-core-{tok}").result()
    name = f"mst-hdbscan-core-{tok}"
    from mst_dist.clustering._plugin import CoreDistances

    client.register_plugin(CoreDistances(name, core), name=name)
    try:
        firsts = np.concatenate([[0], np.cumsum([s.n_edges for s in graph.sources], dtype=np.int64)])
        mr = Graph(n_vertices=n, weight_dtype=np.dtype(np.float64), name="mutual-reachability",
                   sources=[FunctionSource(mutual_reachability_rows, {"source": s, "core": name, "first": int(f)},
                                           s.n_edges, name=f"mutual-reachability of {getattr(s, 'name', 'source')}",
                                           splittable=getattr(s, "splittable", True))
                            for s, f in zip(graph.sources, firsts)])
        forest = minimum_spanning_forest(mr, client, **options)
    finally:
        try:
            client.unregister_worker_plugin(name)
        except Exception:  # pragma: no cover - a cluster gone: nothing is left there
            logger.debug("hdbscan: releasing the core distances failed", exc_info=True)
    return core, forest


def _single_linkage(forest, core, n):
    """The single-linkage matrix of the forest's edges of finite mutual reachability (both ends core points)."""
    from mst_dist.clustering._kernels import linkage_rows
    from mst_dist.clustering.linkage import component_reps, engine_order, forest_arrays

    src, dst, weight, order = forest_arrays(forest, "hdbscan")
    present = np.isfinite(core[src]) & np.isfinite(core[dst])
    if not present.all():  # edges of ABSENT weight: their ends are noise whatever the cut
        src, dst, weight = src[present], dst[present], weight[present]
        order = engine_order(weight)
    height = np.asarray(weight, np.float64)
    reps = component_reps(n, None, src, dst)
    return linkage_rows(n, src, dst, height, order, reps, np.inf)


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
    (both computed where the edges are: by the workers for a graph read or
    generated there, a tree reduction of each chunk's nearest neighbours;
    here for arrays given by the caller), the minimum spanning forest of those weights (:func:`~mst_dist.minimum_spanning_forest`),
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
        vertex's edges.  Default: ``min_cluster_size``.  At most the number
        of vertices (a ``ValueError`` otherwise, as scikit-learn's).
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
    if min_samples > max(n, 1):  # no vertex could be a core point (scikit-learn refuses it too)
        raise ValueError(f"hdbscan: min_samples={min_samples} is more than the graph's {n} vertices; "
                         f"give at most {max(n, 1)}")
    if graph.in_memory:  # the caller's arrays, in this process already
        src, dst, w = _edges(graph)
        _check_distances(w, 0)
        core = core_distances(n, src, dst, w, min_samples)
        mr = Graph.from_arrays(*mutual_reachability(src, dst, w, core), n_vertices=n, name="mutual-reachability")
        del src, dst, w
        forest = minimum_spanning_forest(mr, client, **options)
    else:  # read or generated on the workers: core distances and weights computed there
        from mst_dist.deploy.current import choose, using

        choice = choose(client)
        if choice.asynchronous:
            raise TypeError("hdbscan: an asynchronous client is not supported; give a synchronous client of "
                            "the same scheduler")
        with using(choice) as c:
            core, forest = _forest_on_workers(graph, c, min_samples - 1, options)
    lacking = int(np.count_nonzero(~np.isfinite(core)))
    if lacking:
        logger.warning("hdbscan: %s of %s vertices have fewer than min_samples - 1 = %d neighbours: "
                       "no core distance, they are noise", f"{lacking:,}", f"{n:,}", min_samples - 1)
    Z = _single_linkage(forest, core, n)
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

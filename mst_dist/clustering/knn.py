"""kNN graphs as clustering users hold them: SciPy's sparse output of scikit-learn, or points searched here.

The search in this process (points in memory): :func:`exact_neighbours`
over one k-d tree of Numba kernels on all cores, :func:`knn_edges` for the
graph's edges.  The public entry, which also runs on a cluster, is
:func:`mst_dist.clustering.knn_graph`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["from_kneighbors_graph", "METRICS", "metric_of", "check_points", "prepare_points",
           "exact_neighbours", "knn_edges"]


def from_kneighbors_graph(A, *, symmetrize="union", name="knn"):
    """An undirected graph of distances from a (directed) kNN graph's sparse matrix.

    ``sklearn.neighbors.kneighbors_graph(X, k, mode="distance")`` gives row
    ``i`` the distances from point ``i`` to its ``k`` nearest neighbours: a
    directed graph, asymmetric (``j`` can be among ``i``'s neighbours
    without ``i`` among ``j``'s), storing zero distances (duplicate points)
    as entries.

    Parameters
    ----------
    A : scipy.sparse matrix or array, shape ``(n, n)``
        Entry ``A[i, j]``: the distance from ``i`` to its neighbour ``j``.
        Stored zeros are edges of distance 0; the diagonal is ignored.
    symmetrize : {"union", "mutual"}
        ``"union"`` (default): an edge ``{i, j}`` wherever ``j`` is a
        neighbour of ``i`` or ``i`` one of ``j``, the usual symmetrisation
        (``A.maximum(A.T)`` for a distance matrix).  ``"mutual"``: only where
        each is a neighbour of the other (the mutual kNN graph).  Where both
        entries are stored, the edge takes the lesser.

    Returns
    -------
    Graph
        One edge per unordered pair ``i < j``, in order of ``(i, j)``,
        weights as stored (float64 for ``kneighbors_graph``).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from mst_dist.clustering import from_kneighbors_graph
    >>> A = sp.csr_array(([1.0, 1.0, 2.0], ([0, 1, 2], [1, 0, 1])), shape=(3, 3))
    >>> from_kneighbors_graph(A).to_arrays()
    (array([0, 1]), array([1, 2]), array([1., 2.]))
    >>> from_kneighbors_graph(A, symmetrize="mutual").to_arrays()
    (array([0]), array([1]), array([1.]))
    """
    import scipy.sparse as sp

    from mst_dist.graph import Graph, InvalidGraphError

    if symmetrize not in ("union", "mutual"):
        raise ValueError(f"symmetrize must be 'union' or 'mutual', got {symmetrize!r}")
    if not sp.issparse(A):
        raise TypeError(f"from_kneighbors_graph takes a scipy.sparse matrix or array, got {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InvalidGraphError(f"a kNN graph's matrix must be square, got shape {A.shape}")
    C = A.tocoo()
    r = np.asarray(C.row, dtype=np.int64)
    c = np.asarray(C.col, dtype=np.int64)
    w = np.asarray(C.data)
    off = r != c
    r, c, w = r[off], c[off], w[off]
    lo, hi = np.minimum(r, c), np.maximum(r, c)
    n = A.shape[0]
    order = np.lexsort((w, hi, lo))  # by pair, the lesser weight first
    lo, hi, w, fwd = lo[order], hi[order], w[order], (r < c)[order]
    new = np.ones(lo.shape[0], dtype=bool)
    new[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    if symmetrize == "mutual":
        # a pair is mutual when both directions are stored
        start = np.flatnonzero(new)
        has_fwd = np.logical_or.reduceat(fwd, start) if start.shape[0] else np.zeros(0, bool)
        has_bwd = np.logical_or.reduceat(~fwd, start) if start.shape[0] else np.zeros(0, bool)
        keep = np.zeros(lo.shape[0], dtype=bool)
        keep[start[has_fwd & has_bwd]] = True
        new = keep
    return Graph.from_arrays(lo[new], hi[new], w[new], n_vertices=n, name=name)


#: metric name -> kernel metric code; "cosine" is Euclidean on the points normalised
METRICS = {"euclidean": 0, "l2": 0, "manhattan": 1, "cityblock": 1, "l1": 1, "chebyshev": 2, "infinity": 2,
           "minkowski": 3, "cosine": 0}

#: leaf size of the k-d trees (measured: 16-48 are within a few percent at 2-D and 10-D)
LEAF_SIZE = 32


def metric_of(metric, p=2):
    """``(code, p)`` of a metric name for the kernels; a ``ValueError`` listing the choices otherwise.

    ``"minkowski"`` with ``p`` (>= 1); ``p = 1``, ``2`` and ``inf`` become
    Manhattan, Euclidean and Chebyshev.
    """
    if not isinstance(metric, str) or metric.lower() not in METRICS:
        raise ValueError(f"metric must be one of {sorted(set(METRICS))}, got {metric!r}")
    name = metric.lower()
    if name == "minkowski":
        if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or not p >= 1:
            raise ValueError(f"minkowski: p must be a number >= 1, got {p!r}")
        if p == 1:
            return METRICS["manhattan"], 1.0
        if p == 2:
            return METRICS["euclidean"], 2.0
        if np.isinf(p):
            return METRICS["chebyshev"], float(p)
    return METRICS[name], float(p)


def check_points(X, k, *, where="X", offset=0, n=None):
    """Validate a block of points: a 2-D finite float array, and ``1 <= k < n``; returns it as float64.

    ``offset``: the global index of the block's first row (errors name the
    point by its global row); ``n``: all the points (default the block's).
    """
    from mst_dist.clustering._neighbours_kernels import first_not_finite

    if isinstance(X, (list, tuple)):
        try:
            X = np.asarray(X, dtype=np.float64)
        except ValueError as e:  # ragged rows
            raise ValueError(f"{where}: points must be rows of equal length (a 2-D array): {e}") from None
    X = np.asarray(X)
    if X.dtype == object:
        raise ValueError(f"{where}: points must be rows of equal length of numbers, got an object array")
    if X.ndim != 2:
        raise ValueError(f"{where} must be 2-dimensional (points x coordinates), got shape {X.shape}")
    if X.dtype.kind not in "iufb":
        raise ValueError(f"{where}: coordinates must be numbers, got dtype {X.dtype}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    total = X.shape[0] if n is None else n
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < total):
        raise ValueError(f"k must be an integer in [1, {total - 1}] (fewer than the {total} points), got {k!r}")
    if X.shape[1] == 0:
        raise ValueError(f"{where}: points need at least one coordinate, got shape {X.shape}")
    bad = first_not_finite(X) if X.shape[0] else -1
    if bad >= 0:
        raise ValueError(f"{where}: point {offset + bad} has a coordinate that is NaN or infinite: "
                         f"{X[bad].tolist()}")
    return X


def prepare_points(X, metric, offset=0):
    """The points the kernels search for ``metric``: for "cosine", rows scaled to unit length."""
    if metric != "cosine":
        return X
    norm = np.sqrt(np.einsum("ij,ij->i", X, X))
    zero = np.flatnonzero(norm == 0)
    if zero.shape[0]:
        raise ValueError(f"cosine: point {offset + int(zero[0])} is zero, it has no direction")
    return X / norm[:, None]


def finished(reduced, metric, code, p):
    """Distances as users read them from the kernels' reduced ones (cosine: ``1 - cos``)."""
    from mst_dist.clustering._neighbours_kernels import finish_distances

    if metric == "cosine":
        return reduced * 0.5  # |x - y|^2 / 2 = 1 - cos for unit vectors
    return finish_distances(reduced, code, p)


def search_tree(points, ids):
    """A k-d tree over ``points`` (global ids ``ids``): ``(points in tree order, them transposed, ids, lo, hi, depth)``."""
    from mst_dist.clustering._neighbours_kernels import build_tree, tree_depth

    depth = tree_depth(points.shape[0], LEAF_SIZE)
    order, lo, hi = build_tree(points, depth)
    Xs = np.ascontiguousarray(points[order])
    return Xs, np.ascontiguousarray(Xs.T), np.ascontiguousarray(ids[order]), lo, hi, depth


def empty_lists(m, k):
    """``m`` empty neighbour lists of ``k`` slots: ``(dist, nbr)``."""
    from mst_dist.clustering._neighbours_kernels import NO_ID

    return np.full((m, k), np.inf), np.full((m, k), NO_ID, np.int64)


def exact_neighbours(X, k, *, metric="euclidean", p=2):
    """The ``k`` nearest neighbours of each point of ``X`` (itself excluded), by ``(distance, index)``.

    One k-d tree over all points, queried in tree order on all cores.
    Returns ``(dist, ind)`` of shape ``(n, k)``, rows ascending; distances
    reduced (see :mod:`mst_dist.clustering._neighbours_kernels`): use
    :func:`finished` for true ones.
    """
    from mst_dist.clustering._neighbours_kernels import query_tree

    code, p = metric_of(metric, p)
    n = X.shape[0]
    Xs, XT, ids, lo, hi, depth = search_tree(X, np.arange(n, dtype=np.int64))
    dist, nbr = empty_lists(n, k)
    query_tree(XT, ids, lo, hi, depth, Xs, ids, np.arange(n, dtype=np.int64), dist, nbr, code, p)
    out_d = np.empty_like(dist)
    out_n = np.empty_like(nbr)
    out_d[ids] = dist
    out_n[ids] = nbr
    return out_d, out_n


def knn_edges(qids, dist, nbr, kth_dist, kth_id, symmetrize):
    """The undirected edges of the lists (see the kernel ``edge_rows``): ``(src, dst, reduced)``."""
    from mst_dist.clustering._neighbours_kernels import edge_rows

    if symmetrize not in ("union", "mutual"):
        raise ValueError(f"symmetrize must be 'union' or 'mutual', got {symmetrize!r}")
    return edge_rows(qids, dist, nbr, kth_dist, kth_id, symmetrize == "mutual")


def local_knn_graph(X, k, *, metric="euclidean", p=2, symmetrize="union", name=None):
    """The kNN graph of points in this process (the search on all its cores): an in-memory Graph."""
    from mst_dist.graph import ArraySource, Graph

    if symmetrize not in ("union", "mutual"):
        raise ValueError(f"symmetrize must be 'union' or 'mutual', got {symmetrize!r}")
    code, p = metric_of(metric, p)
    X = prepare_points(check_points(X, k), metric.lower())
    n = X.shape[0]
    dist, nbr = exact_neighbours(X, int(k), metric=metric, p=p)
    kd, ki = dist[:, -1], nbr[:, -1]
    src, dst, w = knn_edges(np.arange(n, dtype=np.int64), dist, nbr, kd[nbr], ki[nbr], symmetrize)
    w = finished(w, metric.lower(), code, p)
    return Graph(n_vertices=n, sources=[ArraySource(src, dst, w)], weight_dtype=np.dtype(np.float64),
                 validated=True, name=name or f"knn-{int(k)}")

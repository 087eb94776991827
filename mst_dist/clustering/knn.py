"""kNN graphs as clustering users hold them: SciPy's sparse output of scikit-learn, or points."""
from __future__ import annotations

import numpy as np

__all__ = ["from_kneighbors_graph", "from_points"]


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


def from_points(X, k, *, symmetrize="union", n_jobs=None):
    """The kNN graph (``k`` neighbours, Euclidean) of points, as an undirected graph of distances.

    Exact neighbours from scikit-learn's ``NearestNeighbors`` (a k-d tree or
    ball tree, chosen by scikit-learn): the optional extra ``clustering``
    (``pip install 'mst-dist[clustering]'``).  scikit-learn is chosen over
    approximate libraries (pynndescent, faiss) because its neighbours are
    exact, so the forest and clusters are those of the true kNN graph, and
    it is the library whose HDBSCAN results are compared.

    Parameters
    ----------
    X : array_like of shape ``(n, d)``
    k : int
        Neighbours of each point, itself not counted.
    symmetrize : {"union", "mutual"}
        See :func:`mst_dist.clustering.from_kneighbors_graph`.
    n_jobs : int, optional
        scikit-learn's threads for the search.
    """
    try:
        from sklearn.neighbors import kneighbors_graph
    except ImportError:
        raise ImportError("from_points needs scikit-learn: pip install 'mst-dist[clustering]'") from None
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"from_points: X must be 2-dimensional (points x coordinates), got shape {X.shape}")
    if isinstance(k, bool) or int(k) != k or not 1 <= k < X.shape[0]:
        raise ValueError(f"from_points: k must be an integer in [1, {X.shape[0] - 1}], got {k!r}")
    A = kneighbors_graph(X, int(k), mode="distance", n_jobs=n_jobs)
    return from_kneighbors_graph(A, symmetrize=symmetrize, name=f"knn-{int(k)}")

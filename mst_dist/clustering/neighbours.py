"""The kNN graph of points: exact neighbours in this process or on the Dask workers, or approximate ones.

:func:`knn_graph` is the entry point: points in memory are searched here by
one k-d tree of Numba kernels on all cores; points as a Dask array (or
points in memory given with a cluster) are searched on the workers, the
edges left there (:mod:`mst_dist.clustering._distributed_knn`).
``approximate=True`` runs NN-descent instead
(:mod:`mst_dist.clustering._nndescent`); :func:`knn_recall` measures how
many true neighbours a graph or lists found.
"""
from __future__ import annotations

import numbers
import operator
import os

import numpy as np

__all__ = ["knn_graph", "from_points", "knn_recall"]


def _is_dask_array(X):
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks")


def knn_graph(X, k, *, metric="euclidean", p=2, symmetrize="union", approximate=False, client=None,
              partitions=None, random_state=None):
    """The undirected kNN graph of points: an edge ``{i, j}`` of weight ``d(i, j)`` for neighbours.

    The ``k`` nearest neighbours of every point (itself not counted; ties in
    distance go to the smaller index, so the lists are one set whatever the
    partitioning) are searched exactly with k-d trees (Friedman, Bentley and
    Finkel) compiled by Numba, on all cores.  Points in memory and no
    ``client``: one tree here, an in-memory :class:`~mst_dist.Graph`.  A Dask
    array (or points with a ``client``): on the workers, in boxes split at
    medians of a sample; each box's points answered in their box, then sent
    only to the boxes closer than their current ``k``-th neighbour; the
    edges stay on the workers (a graph read there, as a file's).

    Parameters
    ----------
    X : array_like, dask.array.Array of shape ``(n, d)``, or str or os.PathLike
        Points, finite coordinates.  A path (a ``.npy`` file, a Parquet file
        or directory of them, a Zarr array; a URL too) is read as a Dask
        array by :func:`~mst_dist.clustering.read_points`, its blocks on
        the workers, and searched there; call that yourself for its options
        (``columns=``, ``chunks=``, ``storage_options=``).
    k : int
        Neighbours of each point, ``1 <= k < n``.
    metric : {"euclidean", "manhattan", "chebyshev", "minkowski", "cosine"}
        ``"minkowski"`` with ``p``; ``"cosine"``: ``1 - cos`` (the search is
        Euclidean on the points normalised; a zero point is an error).
    p : float
        Minkowski's power, at least 1.
    symmetrize : {"union", "mutual"}
        ``"union"`` (default): ``{i, j}`` where either is a neighbour of the
        other; ``"mutual"``: where each is.  Duplicate points give edges of
        distance 0.
    approximate : bool
        ``False`` (default): the exact neighbours.  ``True``: NN-descent
        (Dong, Moses and Li, "Efficient k-nearest neighbor graph construction
        for generic similarity measures"): lists started from the leaves of
        random projection trees, then improved in rounds by each point's
        neighbours' neighbours (new candidates joined with each other and
        with old ones, sampled at rate 1), until fewer than ``0.001 n k``
        entries change; the descent keeps ``2 k`` neighbours per point and
        the graph takes the first ``k``.  Far faster than the tree in many
        dimensions; most but not all neighbours are the true ones (measure
        it with :func:`knn_recall`: 0.98-1.0 on 2,000 Gaussian points at
        2-32 dimensions, ``k = 10``).  Edge weights are the true
        distances of the pairs found, the same numbers the exact search
        gives; ``symmetrize`` asks the lists themselves whether each lists
        the other.  The graph's ``meta["knn"]`` says how it was built
        (seed, trees, rounds, changes per round).  On a cluster (a Dask
        array, or a ``client``) of one worker the points are gathered on it
        and searched there by one task; on more, no worker holds them all:
        each point goes to the parts of its two nearest centres (k-means of
        a sample), each part is searched by one task, and each point's two
        lists are merged into its ``k`` nearest (a neighbour outside both
        its parts is missed: the recall is a little lower).  The edges stay
        on the workers.
    client : distributed.Client, "embedded" or None
        The cluster of a Dask array's search (None: the current client, else
        the embedded cluster).  With points in memory, ``None`` searches here
        and a client or ``"embedded"`` searches on that cluster.
    partitions : int, optional
        Boxes of the exact search on a cluster (default: two per worker
        thread); parts of the approximate one (default: two per worker on
        more than one worker; 1: one task searches all the points).
    random_state : int, numpy.random.Generator or None
        The seed of ``approximate=True`` (None: a fixed seed, 0): the same
        seed gives the same graph, whatever the number of threads.  The
        exact search does not use it.

    Returns
    -------
    Graph
        One edge per unordered pair, float64 distances, ``n_vertices = n``.

    Examples
    --------
    >>> from mst_dist.clustering import knn_graph
    >>> g = knn_graph([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], 1)
    >>> g.to_arrays()
    (array([0, 1]), array([1, 2]), array([1., 2.]))
    >>> a = knn_graph([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], 1, approximate=True)
    >>> a.to_arrays(), a.meta["knn"]["method"]
    ((array([0, 1]), array([1, 2]), array([1., 2.])), 'nn-descent')
    """
    from mst_dist.clustering.knn import local_knn_graph, metric_of

    if isinstance(X, (str, os.PathLike)):  # a file of points: read by the workers, searched there
        from mst_dist.clustering.point_files import read_points

        X = read_points(X)
    metric_of(metric, p)
    if symmetrize not in ("union", "mutual"):
        raise ValueError(f"symmetrize must be 'union' or 'mutual', got {symmetrize!r}")
    if not isinstance(approximate, (bool, np.bool_)):
        raise ValueError(f"approximate must be True or False, got {approximate!r}")
    if approximate:
        from mst_dist.clustering._nndescent import seed_of

        seed = seed_of(random_state)
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, numbers.Integral)
                                   or partitions < 1):
        raise ValueError(f"partitions must be a positive integer, got {partitions!r}")
    if approximate:
        from mst_dist.clustering._nndescent import approximate_knn_graph

        if not _is_dask_array(X) and client is None:
            return approximate_knn_graph(X, k, metric=metric, p=p, symmetrize=symmetrize, random_state=seed)
        from mst_dist.deploy.current import choose, using

        with using(choose(client)) as c:
            workers = len(c.scheduler_info().get("workers", {}))
            parts = partitions or (2 * workers if workers > 1 else 1)
            if parts == 1:
                return _approximate_on_one_worker(X, k, metric, p, symmetrize, c, seed)
            from mst_dist.clustering._distributed_nndescent import partitioned_nndescent_graph

            return partitioned_nndescent_graph(X, k, metric, p, symmetrize, c, seed, int(parts))
    if not _is_dask_array(X) and client is None:
        return local_knn_graph(X, k, metric=metric, p=p, symmetrize=symmetrize)
    from mst_dist.clustering._distributed_knn import distributed_knn_graph

    return distributed_knn_graph(X, k, metric=metric, p=p, symmetrize=symmetrize, client=client,
                                 partitions=partitions)


def _approximate_on_one_worker(X, k, metric, p, symmetrize, client, seed):
    """NN-descent as one task, the points gathered on its worker; the edges left there (one graph source)."""
    import uuid

    from mst_dist.clustering import _distributed_knn as dk
    from mst_dist.clustering._nndescent import edges_task

    X = dk.dask_points(X, client)
    n = int(X.shape[0])
    k = dk.checked_k(k, n)
    tok = uuid.uuid4().hex[:12]
    whole = client.compute(X.rechunk({0: -1, 1: -1}).to_delayed().ravel()[0])
    edges = client.submit(edges_task, whole, k, metric.lower(), p, symmetrize, seed, key=f"mst-knn-edges-{tok}-0")
    del whole
    info = client.submit(operator.getitem, edges, 3, key=f"mst-knn-info-{tok}-0").result()
    return dk.held_graph(client, [edges], tok, n, name=f"knn-{k}", source="knn-nndescent",
                         meta={"knn": dict(info, on="one worker")})


def from_points(X, k, *, symmetrize="union", n_jobs=None, metric="euclidean", p=2, client=None,
                partitions=None, approximate=False, random_state=None):
    """The kNN graph (``k`` neighbours) of points: :func:`knn_graph` under its former name.

    ``n_jobs``: threads of the search here (Numba's; default all cores).
    ``approximate``, ``random_state``: NN-descent, as :func:`knn_graph`.
    """
    kw = dict(metric=metric, p=p, symmetrize=symmetrize, client=client, partitions=partitions,
              approximate=approximate, random_state=random_state)
    if n_jobs is None or n_jobs == -1:
        return knn_graph(X, k, **kw)
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_jobs), numba.config.NUMBA_NUM_THREADS)))
    try:
        return knn_graph(X, k, **kw)
    finally:
        numba.set_num_threads(before)


def knn_recall(X, neighbours, k, *, sample=1000, random_state=0, metric="euclidean", p=2):
    """The share of true ``k`` nearest neighbours found, over a random sample of the points (brute force).

    For each sampled point, its ``k``-th nearest distance is computed
    against every point (the sample times ``n`` distances, on all cores),
    and its hits are the found neighbours at most that far (ties at the
    ``k``-th distance count, up to ``k`` per point); the recall is the hits
    over ``k`` times the sample.

    Parameters
    ----------
    X : array_like of shape ``(n, d)``
        The points the neighbours were searched among.
    neighbours : Graph or int array of shape ``(n, m)``
        A graph's neighbours of a point are its adjacent vertices (for a
        ``"union"`` graph: those it lists and those listing it; a
        ``"mutual"`` graph's recall is lower by construction); an array
        gives each point's neighbour ids per row (``-1``: none).
    k : int
        The neighbours that count, ``1 <= k < n``.
    sample : int
        Points checked (all when ``n`` is smaller).
    random_state : int or None
        The seed of the sample.
    metric, p
        As the search's (:func:`knn_graph`).

    Returns
    -------
    float
        In ``[0, 1]``; 1 for the exact search's ``"union"`` graph.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(500, 8))
    >>> knn_recall(X, knn_graph(X, 10), 10)
    1.0
    >>> knn_recall(X, knn_graph(X, 10, approximate=True), 10) > 0.95
    True
    """
    from mst_dist.clustering._nndescent_kernels import brute_kth, hits
    from mst_dist.clustering.knn import check_points, metric_of, prepare_points
    from mst_dist.graph import Graph

    code, p = metric_of(metric, p)
    X = prepare_points(check_points(X, k), metric.lower())
    n = X.shape[0]
    if isinstance(sample, bool) or not isinstance(sample, numbers.Integral) or sample < 1:
        raise ValueError(f"sample must be a positive integer, got {sample!r}")
    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(n, sample, replace=False)) if sample < n else np.arange(n)
    rows = rows.astype(np.int64)
    if isinstance(neighbours, Graph):
        if neighbours.n_vertices != n:
            raise ValueError(f"the graph has {neighbours.n_vertices} vertices for {n} points")
        src, dst, _ = neighbours.to_arrays()
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        slot = np.full(n, -1, np.int64)
        slot[rows] = np.arange(rows.shape[0])
        a = np.r_[slot[src], slot[dst]]
        b = np.r_[dst, src]
        keep = a >= 0
        a, b = a[keep], b[keep]
        order = np.lexsort((b, a))
        a, b = a[order], b[order]
        fresh = np.ones(a.shape[0], bool)
        fresh[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])  # parallel edges: one neighbour
        a, b = a[fresh], b[fresh]
        width = int(np.bincount(a, minlength=rows.shape[0]).max()) if a.shape[0] else 1
        found = np.full((rows.shape[0], max(width, 1)), -1, np.int64)
        start = np.searchsorted(a, np.arange(rows.shape[0]))
        found[a, np.arange(a.shape[0]) - start[a]] = b
    else:
        ind = np.asarray(neighbours)
        if ind.ndim != 2 or ind.shape[0] != n or ind.dtype.kind not in "iu":
            raise ValueError(f"neighbours must be a Graph or an integer array of {n} rows, got "
                             f"{getattr(ind, 'shape', None)} {getattr(ind, 'dtype', '')}")
        found = np.sort(ind[rows].astype(np.int64), axis=1)
        found[:, 1:][found[:, 1:] == found[:, :-1]] = -1  # a neighbour listed twice counts once
        found[(found >= n)] = -1
    kth = brute_kth(X, rows, int(k), code, p)
    return float(hits(X, rows, np.ascontiguousarray(found), kth, int(k), code, p).sum() / (k * rows.shape[0]))

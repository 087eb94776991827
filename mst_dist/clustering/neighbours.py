"""The kNN graph of points: exact neighbours in this process or on the Dask workers.

:func:`knn_graph` is the entry point: points in memory are searched here by
one k-d tree of Numba kernels on all cores; points as a Dask array (or
points in memory given with a cluster) are searched on the workers, the
edges left there (:mod:`mst_dist.clustering._distributed_knn`).
"""
from __future__ import annotations

import numbers
import os

import numpy as np

__all__ = ["knn_graph", "from_points"]


def _is_dask_array(X):
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks")


def knn_graph(X, k, *, metric="euclidean", p=2, symmetrize="union", approximate=False, client=None,
              partitions=None):
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
        Only ``False`` (exact) is offered: ``True`` is a ``ValueError``.
    client : distributed.Client, "embedded" or None
        The cluster of a Dask array's search (None: the current client, else
        the embedded cluster).  With points in memory, ``None`` searches here
        and a client or ``"embedded"`` searches on that cluster.
    partitions : int, optional
        Boxes of the search on a cluster (default: two per worker thread).

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
    """
    from mst_dist.clustering.knn import local_knn_graph, metric_of

    if isinstance(X, (str, os.PathLike)):  # a file of points: read by the workers, searched there
        from mst_dist.clustering.point_files import read_points

        X = read_points(X)
    metric_of(metric, p)
    if symmetrize not in ("union", "mutual"):
        raise ValueError(f"symmetrize must be 'union' or 'mutual', got {symmetrize!r}")
    if approximate:
        raise ValueError("approximate=True is not offered: the search is exact (approximate=False)")
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, numbers.Integral)
                                   or partitions < 1):
        raise ValueError(f"partitions must be a positive integer, got {partitions!r}")
    if not _is_dask_array(X) and client is None:
        return local_knn_graph(X, k, metric=metric, p=p, symmetrize=symmetrize)
    from mst_dist.clustering._distributed_knn import distributed_knn_graph

    return distributed_knn_graph(X, k, metric=metric, p=p, symmetrize=symmetrize, client=client,
                                 partitions=partitions)


def from_points(X, k, *, symmetrize="union", n_jobs=None, metric="euclidean", p=2, client=None,
                partitions=None):
    """The kNN graph (``k`` neighbours) of points: :func:`knn_graph` under its former name.

    ``n_jobs``: threads of the search here (Numba's; default all cores).
    """
    if n_jobs is None or n_jobs == -1:
        return knn_graph(X, k, metric=metric, p=p, symmetrize=symmetrize, client=client, partitions=partitions)
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_jobs), numba.config.NUMBA_NUM_THREADS)))
    try:
        return knn_graph(X, k, metric=metric, p=p, symmetrize=symmetrize, client=client, partitions=partitions)
    finally:
        numba.set_num_threads(before)

"""Flat clusters cut from a forest, as SciPy's ``fcluster`` cuts a linkage matrix."""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["clusters"]


def clusters(result, threshold=None, n_clusters=None, *, join_distance=np.inf):
    """Flat clusters of a forest's single-linkage hierarchy, without building the hierarchy.

    Parameters
    ----------
    result : MSFResult
        A minimum spanning forest holding its rows.
    threshold : float, optional
        Join every two vertices linked by forest edges of weight at most
        ``threshold``: the partition of ``fcluster(Z, threshold,
        criterion="distance")``.
    n_clusters : int, optional
        At most this many clusters, merging in the order of the hierarchy
        until the count is at most ``n_clusters`` (a group of equal weights
        at a time): the partition of ``fcluster(Z, n_clusters,
        criterion="maxclust")``.  ``n_clusters >= n`` gives one cluster per
        vertex.
    join_distance : float, optional
        The height at which the components of a disconnected graph join, as
        in :meth:`mst_dist.MSFResult.linkage` (default ``inf``).

    Give exactly one of ``threshold`` and ``n_clusters``.

    Returns
    -------
    labels : int64 ndarray of length ``n_vertices``
        Cluster of each vertex, numbered ``0, 1, ...`` in order of each
        cluster's smallest vertex (``fcluster`` numbers from 1 in its own
        order: the partition is the same).

    Examples
    --------
    >>> import mst_dist
    >>> g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])
    >>> res = mst_dist.minimum_spanning_forest(g)
    >>> res.clusters(threshold=2).tolist(), res.clusters(n_clusters=3).tolist()
    ([0, 0, 0, 1], [0, 1, 1, 2])
    """
    from mst_dist.clustering._kernels import flat_labels
    from mst_dist.clustering.linkage import component_reps, forest_arrays

    if (threshold is None) == (n_clusters is None):
        raise ValueError("clusters: give exactly one of threshold (a distance) and n_clusters "
                         f"(a count), got threshold={threshold!r}, n_clusters={n_clusters!r}")
    if n_clusters is not None:
        if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral) or n_clusters < 1:
            raise ValueError(f"clusters: n_clusters must be a positive integer, got {n_clusters!r}")
        k, t = int(n_clusters), 0.0
    else:
        try:
            t = float(threshold)
        except (TypeError, ValueError):
            raise ValueError(f"clusters: threshold must be a number, got {threshold!r}") from None
        if np.isnan(t):
            raise ValueError("clusters: threshold must be a number, got nan")
        k = -1
    n = int(result.n_vertices)
    # a distance cut is the union of the edges at or below it, in any order: no sort
    src, dst, weight, order = forest_arrays(result, "clusters", ordered=k >= 0)
    height = weight.astype(np.float64, copy=False)
    m = src.shape[0]
    reps = component_reps(n, result.labels, src, dst)
    if reps.shape[0] > 1:  # the components' joins, last
        j = reps.shape[0] - 1
        src = np.concatenate([src, np.full(j, reps[0], dtype=np.int64)])
        dst = np.concatenate([dst, reps[1:]])
        height = np.concatenate([height, np.full(j, float(join_distance))])
        if order is not None:
            order = np.concatenate([order, np.arange(m, m + j)])
    if order is None:
        order = np.flatnonzero(height <= t)
    return flat_labels(n, src, dst, height, order, k, t)

"""Density-based cluster validity (DBCV) read from the mutual-reachability spanning forest.

Moulavi, Jaskowiak, Campello, Zimek and Sander, "Density-Based Clustering
Validation" (SDM 2014) score a clustering by each cluster's *density
sparseness* (the heaviest edge of the minimum spanning tree of its
mutual-reachability distances) against its *density separation* (the
lightest mutual-reachability distance to another cluster):

    V(C) = (DSPC(C) - DSC(C)) / max(DSPC(C), DSC(C))

and the index is the size-weighted mean of ``V`` over all points (noise
counts in the total, as a cluster of score 0).  The full index needs each
cluster's own tree under the all-points core distance; this module
computes the ``hdbscan`` package's approximation, ``relative_validity_``:
both quantities read off the one spanning forest HDBSCAN already built
(its within-cluster edges for sparseness, its edges between clusters for
separation).  It ranks clusterings of the same data (for choosing
parameters); it is not comparable across data sets.
"""
from __future__ import annotations

import numpy as np

__all__ = ["relative_validity"]

#: A cluster's separation where no forest edge leaves it for another cluster, in multiples of the
#: heaviest forest edge (the ``hdbscan`` package's constant).
ISLAND_FACTOR = 2.0


def relative_validity(labels, src, dst, weight):
    """The approximate DBCV of ``labels`` over a mutual-reachability forest's edges ``(src, dst, weight)``.

    ``labels``: one per vertex, ``-1`` for noise.  Edges of infinite (or
    no) weight are left out.  Returns a float in ``[-1, 1]``, 0 without
    clusters.

    Examples
    --------
    >>> import numpy as np
    >>> from mst_dist.clustering.validity import relative_validity
    >>> labels = np.array([0, 0, 0, 1, 1, 1])
    >>> src, dst = np.array([0, 1, 2, 3, 4]), np.array([1, 2, 3, 4, 5])
    >>> round(relative_validity(labels, src, dst, np.array([1.0, 1.0, 10.0, 2.0, 2.0])), 6)
    0.85
    """
    labels = np.asarray(labels, dtype=np.int64)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    weight = np.asarray(weight, dtype=np.float64)
    keep = np.isfinite(weight) & (weight < np.finfo(np.float64).max)
    src, dst, weight = src[keep], dst[keep], weight[keep]
    sizes = np.bincount(labels + 1, minlength=1)
    cluster_size = sizes[1:]
    total = int(sizes.sum())
    k = cluster_size.shape[0]
    if k == 0 or total == 0:
        return 0.0
    sparseness = np.zeros(k)
    separation = np.full(k, np.inf)
    l1, l2 = labels[src], labels[dst]
    heaviest = float(weight.max()) if weight.shape[0] else 0.0
    one_noise = (l1 < 0) ^ (l2 < 0)
    both = (l1 >= 0) & (l2 >= 0)
    same, apart = both & (l1 == l2), both & (l1 != l2)
    np.maximum.at(sparseness, l1[same], weight[same])
    np.minimum.at(separation, l1[apart], weight[apart])
    np.minimum.at(separation, l2[apart], weight[apart])
    if k > 1:
        island = ISLAND_FACTOR * heaviest
    else:  # one cluster: measured against the noise around it
        island = ISLAND_FACTOR * (float(weight[one_noise].min()) if one_noise.any() else heaviest)
    separation[np.isinf(separation)] = island
    denom = np.maximum(separation, sparseness)
    v = np.divide(separation - sparseness, denom, out=np.zeros(k), where=denom > 0)
    return float(np.sum(cluster_size * v) / total)

"""GLOSH outlier scores from a condensed tree (Campello, Moulavi, Zimek and Sander, TKDD 2015).

Campello, Moulavi, Zimek and Sander, "Hierarchical Density Estimates for
Data Clustering, Visualization, and Outlier Detection": a point's
Global-Local Outlier Score from Hierarchies compares the density at which
it leaves the hierarchy with the highest density of any point of the
cluster it leaves, over that cluster's whole subtree:

    score(x) = (lambda_max(C) - lambda(x)) / lambda_max(C)

where ``C`` is the cluster ``x`` falls out of, ``lambda(x) = 1 / d(x)``
the lambda at which it does, and ``lambda_max(C)`` the largest lambda at
which any point of ``C`` or of a cluster below it falls out.  Scores are in
``[0, 1]``; larger is more outlying.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["glosh", "subtree_deaths"]


@njit(nogil=True, cache=True)
def subtree_deaths(parent, child, lam, n):
    """The largest lambda at which a point leaves each cluster or a cluster below it, indexed ``cluster - n``.

    Clusters are numbered parents before children (``n`` the root), so one
    pass from the last cluster up carries each subtree's largest lambda to
    its parent.
    """
    C = 1
    for r in range(parent.shape[0]):
        if parent[r] - n + 1 > C:
            C = parent[r] - n + 1
        if child[r] >= n and child[r] - n + 1 > C:
            C = child[r] - n + 1
    death = np.zeros(C)
    up = np.full(C, -1, dtype=np.int64)
    for r in range(parent.shape[0]):
        p = parent[r] - n
        if lam[r] > death[p]:
            death[p] = lam[r]
        if child[r] >= n:
            up[child[r] - n] = p
    for c in range(C - 1, 0, -1):
        p = up[c]
        if p >= 0 and death[c] > death[p]:
            death[p] = death[c]
    return death


@njit(nogil=True, cache=True)
def _scores(parent, child, lam, n, death):
    out = np.zeros(n)
    for r in range(parent.shape[0]):
        v = child[r]
        if v >= n:
            continue
        top = death[parent[r] - n]
        if top == 0.0 or not np.isfinite(lam[r]):
            out[v] = 0.0
        else:
            out[v] = (top - lam[r]) / top
    return out


def glosh(condensed_tree, n):
    """GLOSH outlier score of each of the ``n`` points of a condensed tree (``CONDENSED_DTYPE`` rows).

    A point that leaves at infinite lambda (a duplicate of another) or a
    cluster of no positive lambda scores 0, as the ``hdbscan`` package
    scores them.

    Examples
    --------
    >>> import numpy as np
    >>> from mst_dist.clustering import CONDENSED_DTYPE
    >>> from mst_dist.clustering.outliers import glosh
    >>> tree = np.array([(3, 0, 1.0, 1), (3, 1, 1.0, 1), (3, 2, 0.25, 1)], dtype=CONDENSED_DTYPE)
    >>> glosh(tree, 3).tolist()
    [0.0, 0.0, 0.75]
    """
    parent = np.ascontiguousarray(condensed_tree["parent"], dtype=np.int64)
    child = np.ascontiguousarray(condensed_tree["child"], dtype=np.int64)
    lam = np.ascontiguousarray(condensed_tree["lambda_val"], dtype=np.float64)
    if parent.shape[0] == 0:
        return np.zeros(n)
    return _scores(parent, child, lam, n, subtree_deaths(parent, child, lam, n))

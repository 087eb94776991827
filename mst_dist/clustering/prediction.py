"""New points against a fitted HDBSCAN: approximate labels and soft clustering, as the ``hdbscan`` package gives them.

A model fitted with ``prediction_data=True`` keeps a :class:`PredictionData`
(the points and a k-d tree over them, their core distances, where each
point and cluster sits in the condensed tree, the exemplars of each
cluster), like the ``hdbscan`` package's object of that name.  A new point
joins the tree beside its nearest neighbour by mutual reachability, at the
lambda of that distance, without changing the clusters
(:func:`approximate_predict`); its *membership vector* mixes its distance
to each cluster's exemplars with the lambda at which it would merge into
each cluster (:func:`membership_vector`, :func:`all_points_membership_vectors`),
with the package's formulas, so the numbers are comparable with it.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["PredictionData", "prediction_data", "exemplar_indices", "approximate_predict",
           "membership_vector", "all_points_membership_vectors"]

#: A division by a non-positive denominator divides by this instead (the ``hdbscan`` package's guard).
TINY = 1e-8


@dataclass
class PredictionData:
    """What prediction needs of a fitted model (the ``hdbscan`` package's ``PredictionData``).

    Attributes
    ----------
    raw_data : float64 ndarray (n, d)
        The points fitted.
    tree : sklearn.neighbors.KDTree
        Over ``raw_data``: a new point's nearest neighbours.
    core_distances : float64 ndarray (n,)
    min_samples : int
    point_cluster, point_lambda : ndarrays (n,)
        The condensed-tree cluster each point falls out of (``n`` is the
        root) and the lambda at which it does.
    cluster_parent, cluster_birth : ndarrays (c,)
        For cluster ``n + i``: its parent's id and the lambda at which it
        was born (the root: ``-1`` and 0).
    cluster_label : int64 ndarray (c,)
        The label of the selected cluster holding each cluster, ``-1`` if none.
    cluster_max_lambda : float64 ndarray (c,)
        The largest lambda among each cluster's own rows of the condensed tree.
    selected : int64 ndarray
        The selected clusters' ids, in label order.
    exemplars : list of ndarrays
        The exemplar points of each cluster, in label order.
    """

    raw_data: np.ndarray
    tree: object
    core_distances: np.ndarray
    min_samples: int
    point_cluster: np.ndarray
    point_lambda: np.ndarray
    cluster_parent: np.ndarray
    cluster_birth: np.ndarray
    cluster_label: np.ndarray
    cluster_max_lambda: np.ndarray
    selected: np.ndarray
    exemplars: list

    @property
    def n(self):
        return self.raw_data.shape[0]


def _tree_arrays(tree, n):
    """``(point_cluster, point_lambda, cluster_parent, cluster_birth, cluster_max_lambda)`` of a condensed tree."""
    parent = np.asarray(tree["parent"], np.int64)
    child = np.asarray(tree["child"], np.int64)
    lam = np.asarray(tree["lambda_val"], np.float64)
    C = int(max(parent.max(initial=n), child.max(initial=n)) - n + 1)
    pts = child < n
    point_cluster = np.full(n, n, dtype=np.int64)
    point_lambda = np.zeros(n)
    point_cluster[child[pts]], point_lambda[child[pts]] = parent[pts], lam[pts]
    cluster_parent = np.full(C, -1, dtype=np.int64)
    cluster_birth = np.zeros(C)
    cl = ~pts
    cluster_parent[child[cl] - n], cluster_birth[child[cl] - n] = parent[cl], lam[cl]
    cluster_max_lambda = np.zeros(C)
    np.maximum.at(cluster_max_lambda, parent - n, lam)
    return point_cluster, point_lambda, cluster_parent, cluster_birth, cluster_max_lambda


def exemplar_indices(tree, n, selected):
    """The exemplars of each selected cluster: the points of its leaf clusters that leave them last.

    ``selected``: cluster ids in label order.  A leaf cluster's exemplars are
    the points falling out of it at its largest lambda (the densest core of
    the leaf); a cluster's are those of every leaf below it (itself if it
    has no child cluster).  Returns one sorted int64 array per cluster.
    """
    point_cluster, point_lambda, cluster_parent, _, cluster_max_lambda = _tree_arrays(tree, n)
    C = cluster_parent.shape[0]
    has_kids = np.zeros(C, dtype=bool)
    has_kids[cluster_parent[cluster_parent >= 0] - n] = True
    top = _selected_ancestor(cluster_parent, n, np.asarray(selected, np.int64))
    best = (point_lambda == cluster_max_lambda[point_cluster - n]) & ~has_kids[point_cluster - n]
    owner = top[point_cluster - n]
    out = []
    for label in range(len(selected)):
        out.append(np.flatnonzero(best & (owner == label)))
    return out


def _selected_ancestor(cluster_parent, n, selected):
    """The label of the selected cluster holding each cluster (itself included), ``-1`` if none."""
    C = cluster_parent.shape[0]
    label = np.full(C, -1, dtype=np.int64)
    label[selected - n] = np.arange(selected.shape[0])
    for c in range(1, C):  # parents come before children
        if label[c] < 0:
            label[c] = label[cluster_parent[c] - n]
    return label


def prediction_data(X, tree, n, selected, core_distances, min_samples):
    """The :class:`PredictionData` of points ``X`` fitted into the condensed ``tree`` with clusters ``selected``."""
    from sklearn.neighbors import KDTree

    X = np.ascontiguousarray(X, dtype=np.float64)
    selected = np.asarray(selected, np.int64)
    point_cluster, point_lambda, cluster_parent, cluster_birth, cluster_max_lambda = _tree_arrays(tree, n)
    label = _selected_ancestor(cluster_parent, n, selected)
    exemplars = [X[i] for i in exemplar_indices(tree, n, selected)]
    return PredictionData(raw_data=X, tree=KDTree(X), core_distances=np.asarray(core_distances, np.float64),
                          min_samples=int(min_samples), point_cluster=point_cluster, point_lambda=point_lambda,
                          cluster_parent=cluster_parent, cluster_birth=cluster_birth, cluster_label=label,
                          cluster_max_lambda=cluster_max_lambda, selected=selected, exemplars=exemplars)


# ---------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def _nearest_by_reachability(dist, idx, core, min_samples):
    """For each new point: its nearest neighbour by mutual reachability and the lambda of that distance.

    ``dist``/``idx``: its ``2 * min_samples`` nearest neighbours by distance.
    The new point's own core distance is the fitted points' rule: the
    distance to its ``(min_samples - 1)``-th nearest fitted point (the point
    itself counted first), 0 for ``min_samples = 1``.
    """
    m = dist.shape[0]
    nb = np.empty(m, dtype=np.int64)
    lam = np.empty(m)
    own = min(min_samples - 2, dist.shape[1] - 1)
    for i in range(m):
        best, at = np.inf, 0
        mine = dist[i, own] if own >= 0 else 0.0
        for j in range(dist.shape[1]):
            mr = max(core[idx[i, j]], mine, dist[i, j])
            if mr < best:
                best, at = mr, j
        nb[i] = idx[i, at]
        lam[i] = 1.0 / best if best > 0.0 else np.finfo(np.float64).max
    return nb, lam


@njit(nogil=True, cache=True)
def _place(nb, lam, point_cluster, point_lambda, cluster_parent, cluster_birth, cluster_label,
           cluster_max_lambda, selected, n):
    """Label and probability of new points joining beside ``nb`` at ``lam`` (the package's ``approximate_predict``)."""
    m = nb.shape[0]
    labels = np.full(m, -1, dtype=np.int64)
    prob = np.zeros(m)
    for i in range(m):
        c = point_cluster[nb[i]]
        if point_lambda[nb[i]] > lam[i]:
            while c > n and cluster_birth[c - n] >= lam[i]:
                c = cluster_parent[c - n]
        label = cluster_label[c - n]
        if label < 0:
            continue
        labels[i] = label
        top = cluster_max_lambda[selected[label] - n]
        prob[i] = min(top, lam[i]) / top if top > 0.0 else 1.0
    return labels, prob


@njit(nogil=True, cache=True)
def _merge_heights(start, point_lam, selected, cluster_parent, cluster_birth, n):
    """The lambda at which each point (leaving cluster ``start`` at ``point_lam``) merges with each selected cluster.

    Where the point's cluster and the selected one lie on one path from the
    root, its own lambda; else the birth lambda of the last cluster passed
    on the way up to their common ancestor (the package's ``merge_height``).
    """
    m, k = start.shape[0], selected.shape[0]
    out = np.empty((m, k))
    for i in range(m):
        for j in range(k):
            left, right = start[i], selected[j]
            took_left = took_right = False
            last = left
            while left != right:
                if left > right:
                    took_left, last = True, left
                    left = cluster_parent[left - n]
                else:
                    took_right, last = True, right
                    right = cluster_parent[right - n]
            out[i, j] = cluster_birth[last - n] if took_left and took_right else point_lam[i]
    return out


def _highest(heights, selected):
    """The selected cluster each point merges with first (the highest lambda; of equal ones, the lowest id)."""
    by_id = np.argsort(selected, kind="stable")
    return selected[by_id][heights[:, by_id].argmax(axis=1)]


def _exemplar_weights(points, data):
    """Inverse distance to each cluster's nearest exemplar, normalised per point (the package's distance vector)."""
    from sklearn.neighbors import KDTree

    k = len(data.exemplars)
    d = np.empty((points.shape[0], k))
    for j, ex in enumerate(data.exemplars):
        d[:, j] = KDTree(ex).query(points, k=1)[0][:, 0] if ex.shape[0] else np.inf
    with np.errstate(divide="ignore"):
        w = np.where(d != 0, 1.0 / d, np.finfo(np.float64).max / k)
    return w / w.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------


def _data_of(model, who):
    data = getattr(model, "prediction_data_", None)
    if data is None:
        raise ValueError(f"{who}: the model has no prediction data; fit it with HDBSCAN(prediction_data=True) "
                         f"on points (not metric='precomputed')")
    return data


def _new_points(points, data, who):
    P = np.asarray(points, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != data.raw_data.shape[1]:
        raise ValueError(f"{who}: points must be 2-dimensional with {data.raw_data.shape[1]} coordinates "
                         f"(as the points fitted), got shape {P.shape}")
    if not np.isfinite(P).all():
        raise ValueError(f"{who}: points hold NaN or infinite coordinates")
    return P


def _neighbour_lambdas(P, data):
    k = min(2 * data.min_samples, data.n)
    dist, idx = data.tree.query(P, k=k)
    return _nearest_by_reachability(dist, idx.astype(np.int64), data.core_distances, data.min_samples)


def approximate_predict(model, points):
    """Labels and membership strengths of new points in a fitted model's clusters.

    Each point joins the condensed tree beside its nearest fitted point by
    mutual reachability (among its ``2 * min_samples`` nearest), at the
    lambda of that distance, and takes the selected cluster holding the
    place it joins (the clusters are not recomputed: hence *approximate*).

    Parameters
    ----------
    model : HDBSCAN
        Fitted with ``prediction_data=True``.
    points : array_like (m, d)

    Returns
    -------
    labels : int64 ndarray (m,)
        ``-1`` for noise.
    probabilities : float64 ndarray (m,)

    Examples
    --------
    >>> import numpy as np, mst_dist
    >>> from mst_dist.clustering import approximate_predict
    >>> X = np.r_[np.random.default_rng(0).normal(0, 0.1, (20, 2)), np.random.default_rng(1).normal(5, 0.1, (20, 2))]
    >>> model = mst_dist.HDBSCAN(min_cluster_size=5, prediction_data=True).fit(X)
    >>> approximate_predict(model, [[0.05, 0.0], [5.0, 4.95]])[0].tolist()
    [0, 1]
    """
    data = _data_of(model, "approximate_predict")
    P = _new_points(points, data, "approximate_predict")
    if data.selected.shape[0] == 0:
        warnings.warn("approximate_predict: the model found no cluster; every new point is noise", stacklevel=2)
        return np.full(P.shape[0], -1, dtype=np.int64), np.zeros(P.shape[0])
    nb, lam = _neighbour_lambdas(P, data)
    return _place(nb, lam, data.point_cluster, data.point_lambda, data.cluster_parent, data.cluster_birth,
                  data.cluster_label, data.cluster_max_lambda, data.selected, data.n)


def membership_vector(model, points):
    """How much each new point belongs to each cluster: an ``(m, n_clusters)`` array, rows summing to at most 1.

    The ``hdbscan`` package's soft clustering: a distance part (inverse
    distance to each cluster's nearest exemplar) times an outlier part (a
    softmax of how soon the point merges with each cluster in the condensed
    tree), normalised, then scaled by the probability that the point is in
    some cluster at all.  Columns are in label order.
    """
    data = _data_of(model, "membership_vector")
    P = _new_points(points, data, "membership_vector")
    k = data.selected.shape[0]
    if k == 0:
        return np.zeros((P.shape[0], 0))
    nb, lam = _neighbour_lambdas(P, data)
    lam = np.minimum(lam, data.point_lambda[nb])
    start = data.point_cluster[nb]
    # the package passes lambda to its per-cluster scores as float32
    lam32 = lam.astype(np.float32).astype(np.float64)
    h32 = _merge_heights(start, lam32, data.selected, data.cluster_parent, data.cluster_birth, data.n)
    top = data.cluster_max_lambda[start - data.n][:, None]
    denom = top - h32
    score = top / np.where(denom <= 0, TINY, denom)
    outlier = np.exp(score - np.nanmax(score, axis=1, keepdims=True))
    outlier /= outlier.sum(axis=1, keepdims=True)
    out = _exemplar_weights(P, data) ** 0.5 * outlier ** 2.0
    out /= out.sum(axis=1, keepdims=True)
    h = _merge_heights(start, lam, data.selected, data.cluster_parent, data.cluster_birth, data.n)
    nearest = _highest(h, data.selected)
    most = np.maximum(lam, data.cluster_max_lambda[nearest - data.n]) + TINY
    return out * (h.max(axis=1) / most)[:, None]


def all_points_membership_vectors(model):
    """The membership vector of every fitted point: an ``(n, n_clusters)`` array (columns in label order).

    As :func:`membership_vector`, from each point's own place in the
    condensed tree, with the ``hdbscan`` package's formulas for fitted
    points (which differ from its formulas for new points).  No cluster: an
    ``(n, 0)`` array.
    """
    data = _data_of(model, "all_points_membership_vectors")
    n, k = data.n, data.selected.shape[0]
    if k == 0:
        return np.zeros((n, 0))
    start, lam = data.point_cluster, data.point_lambda
    h = _merge_heights(start, lam, data.selected, data.cluster_parent, data.cluster_birth, n)
    top = data.cluster_max_lambda[start - n][:, None] + TINY
    with np.errstate(divide="ignore"):
        score = np.exp(-(top / h))
    outlier = np.exp(score - np.nanmax(score))
    outlier /= outlier.sum(axis=1, keepdims=True)
    out = _exemplar_weights(data.raw_data, data) * outlier
    out /= out.sum(axis=1, keepdims=True)
    nearest = _highest(h, data.selected)
    most = np.maximum(data.cluster_max_lambda[nearest - n], lam)
    return out * (h.max(axis=1) / most)[:, None]

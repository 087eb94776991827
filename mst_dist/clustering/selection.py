"""The HDBSCAN estimator's steps that are plain arrays: flat clusters of a condensed tree, the forest's rows, inputs.

:func:`flat` selects clusters as the ``hdbscan`` package does (excess of
mass or leaves, then ``cluster_selection_epsilon``), and keeps what the
estimator's attributes need beyond :func:`mst_dist.hdbscan`'s labels: the
selected clusters' ids and their persistence.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

__all__ = ["Flat", "flat", "spanning_rows", "precomputed_graph", "ParamsMixin"]


@dataclass
class Flat:
    """Flat clusters of a condensed tree.

    ``selected``: the clusters' ids in label order; ``labels`` (``-1``
    noise) and ``probabilities`` per point; ``persistence`` per cluster.
    """

    selected: np.ndarray
    labels: np.ndarray
    probabilities: np.ndarray
    persistence: np.ndarray


class _Tree:
    """The clusters of a condensed tree, indexed ``cluster - n`` (0 the root, parents before children)."""

    def __init__(self, tree, n):
        self.parent = np.asarray(tree["parent"], np.int64) - n
        self.child = np.asarray(tree["child"], np.int64)
        self.lam = np.asarray(tree["lambda_val"], np.float64)
        self.size = np.asarray(tree["child_size"], np.int64)
        self.n = n
        cl = self.child >= n
        self.C = int(max(self.parent.max(initial=0), (self.child[cl] - n).max(initial=0)) + 1)
        self.up = np.full(self.C, -1, dtype=np.int64)
        self.up[self.child[cl] - n] = self.parent[cl]
        self.birth = np.zeros(self.C)
        self.birth[self.child[cl] - n] = self.lam[cl]
        self.stability = np.zeros(self.C)
        np.add.at(self.stability, self.parent, (self.lam - self.birth[self.parent]) * self.size)
        self.death = np.zeros(self.C)
        np.maximum.at(self.death, self.parent, self.lam)
        self.has_kids = np.zeros(self.C, dtype=bool)
        self.has_kids[self.up[1:]] = True

    def topmost(self, chosen):
        """The chosen clusters that have no chosen ancestor."""
        anc = self.ancestors(chosen)
        return np.array([c for c in range(self.C) if chosen[c] and (c == 0 or anc[self.up[c]] < 0)], np.int64)

    def ancestors(self, chosen):
        """Each cluster's nearest chosen ancestor (itself included), ``-1`` if none."""
        anc = np.full(self.C, -1, dtype=np.int64)
        for c in range(self.C):
            anc[c] = c if chosen[c] else (anc[self.up[c]] if c else -1)
        return anc

    def excess_of_mass(self, allow_single_cluster):
        """``(chosen, stability)``: clusters holding more stability than their children's (the subtree's for the others)."""
        stab = self.stability.copy()
        sub = np.zeros(self.C)
        chosen = np.zeros(self.C, dtype=bool)
        for c in range(self.C - 1, -1 if allow_single_cluster else 0, -1):
            if sub[c] > stab[c]:
                stab[c] = sub[c]
            else:
                chosen[c] = True
            if c:
                sub[self.up[c]] += stab[c]
        return chosen, stab

    def epsilon(self, selected, epsilon, allow_single_cluster):
        """Each selected cluster born below distance ``epsilon`` replaced by its ancestor alive at ``epsilon``."""
        out = []
        with np.errstate(divide="ignore"):
            born = 1.0 / self.birth  # the distance at which each cluster appears
        for c in selected:
            if c > 0 and born[c] < epsilon:
                while True:
                    p = self.up[c]
                    if p == 0:
                        c = 0 if allow_single_cluster else c
                        break
                    c = p
                    if born[c] > epsilon:
                        break
            out.append(c)
        chosen = np.zeros(self.C, dtype=bool)
        chosen[out] = True
        return self.topmost(chosen)


def flat(tree, n, method="eom", allow_single_cluster=False, epsilon=0.0):
    """The flat clustering of a condensed tree (``CONDENSED_DTYPE`` rows of ``n`` points), as :class:`Flat`.

    ``method``: ``"eom"`` (excess of mass) or ``"leaf"``; ``epsilon``: a
    selected cluster born at a distance below ``epsilon`` gives way to the
    ancestor that exists at ``epsilon`` (the root only with
    ``allow_single_cluster``).  Points take the selected cluster above the
    cluster they leave; probabilities are their lambda over the cluster's
    largest (capped at 1).  Persistence: the cluster's stability over its
    labelled size times the tree's largest lambda (1 where that is 0 or
    infinite).  Clusters are numbered by their smallest point.
    """
    t = _Tree(tree, n)
    stab = t.stability
    if method == "eom":
        chosen, stab = t.excess_of_mass(allow_single_cluster)
        selected = t.topmost(chosen)
    else:
        leaves = ~t.has_kids
        leaves[0] = False
        selected = np.flatnonzero(leaves)
    if epsilon > 0 and t.C > 1 and not (selected.tolist() == [0]):
        selected = t.epsilon(selected, epsilon, allow_single_cluster)
    chosen = np.zeros(t.C, dtype=bool)
    chosen[selected] = True
    labels, prob = _points(t, chosen, selected, allow_single_cluster, epsilon)
    return _numbered(t, labels, prob, stab)


def _points(t, chosen, selected, allow_single_cluster, epsilon):
    """Cluster (a condensed id, ``-1`` noise) and probability of every point."""
    anc = t.ancestors(chosen)
    rows = np.flatnonzero(t.child < t.n)
    v, p, lam = t.child[rows], t.parent[rows], t.lam[rows]
    s = anc[p]
    keep = s >= 0
    if selected.shape[0] == 1 and selected[0] == 0:  # the root as the one cluster: its densest points only
        need = 1.0 / epsilon if epsilon > 0 else t.death[0]
        keep &= ~((s == 0) & ~(lam >= need))
    labels = np.full(t.n, -1, dtype=np.int64)
    prob = np.zeros(t.n)
    top = t.death[np.maximum(s, 0)]
    with np.errstate(divide="ignore", invalid="ignore"):
        pr = np.where((top == 0) | np.isinf(lam), 1.0, np.minimum(lam, top) / top)
    labels[v[keep]] = s[keep]
    prob[v[keep]] = pr[keep]
    return labels, prob


def _numbered(t, labels, prob, stab):
    """Clusters renumbered ``0, 1, ...`` by their smallest point, with their persistence."""
    idx = np.flatnonzero(labels >= 0)
    ids, first = np.unique(labels[idx], return_index=True)
    order = np.argsort(idx[first], kind="stable")
    selected = ids[order]
    rank = np.empty(ids.shape[0], dtype=np.int64)
    rank[order] = np.arange(ids.shape[0])
    out = np.full(t.n, -1, dtype=np.int64)
    out[idx] = rank[np.searchsorted(ids, labels[idx])]
    sizes = np.bincount(out[idx], minlength=selected.shape[0])
    top = float(t.lam.max()) if t.lam.shape[0] else 0.0
    if np.isinf(top) or top == 0.0:
        persistence = np.ones(selected.shape[0])
    else:
        persistence = stab[selected] / (sizes * top)
    return Flat(selected=selected + t.n, labels=out, probabilities=prob, persistence=persistence)


def spanning_rows(forest, core):
    """The forest's edges between core points as ``(u, v, weight)`` float rows, in ``(weight, edge id)`` order."""
    from mst_dist.clustering.linkage import forest_arrays

    src, dst, weight, order = forest_arrays(forest, "HDBSCAN")
    src, dst, weight = src[order], dst[order], np.asarray(weight, np.float64)[order]
    keep = np.isfinite(core[src]) & np.isfinite(core[dst])
    return np.column_stack([src[keep], dst[keep], weight[keep]]).astype(np.float64)


def precomputed_graph(X):
    """A graph of distances given as a :class:`~mst_dist.Graph`, a SciPy sparse matrix or a dense square matrix."""
    import scipy.sparse as sp

    from mst_dist.clustering.knn import from_kneighbors_graph
    from mst_dist.graph import Graph

    if isinstance(X, Graph):
        return X
    if sp.issparse(X):
        if X.ndim != 2 or X.shape[0] != X.shape[1]:
            raise ValueError(f"HDBSCAN: a precomputed distance matrix must be square, got shape {X.shape}")
        data = np.asarray(X.data, dtype=np.float64)
        if not np.isfinite(data).all() or (data < 0).any():
            raise ValueError("HDBSCAN: a precomputed distance matrix holds NaN, infinite or negative entries")
        return from_kneighbors_graph(X)
    D = np.asarray(X, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"HDBSCAN: a precomputed distance matrix must be square, got shape {D.shape}")
    if not np.isfinite(D).all() or (D < 0).any():
        raise ValueError("HDBSCAN: a precomputed distance matrix holds NaN, infinite or negative entries")
    i, j = np.triu_indices(D.shape[0], 1)
    return Graph.from_arrays(i, j, D[i, j], n_vertices=D.shape[0], name="precomputed")


class ParamsMixin:
    """``get_params``/``set_params`` from the constructor's signature, where scikit-learn is not installed."""

    def get_params(self, deep=True):
        names = [p.name for p in inspect.signature(type(self).__init__).parameters.values()
                 if p.name != "self" and p.kind is not p.VAR_KEYWORD]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params):
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}; valid: {', '.join(valid)}")
            setattr(self, key, value)
        return self

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_params().items())})"

"""Approximate kNN graphs: NN-descent over random projection trees.

:func:`nndescent_neighbours` runs the kernels of
:mod:`mst_dist.clustering._nndescent_kernels`; :func:`approximate_knn_graph`
makes the graph (the edges of the exact path's rules, the lists' own
distances finished); :func:`edges_task` is the one task of the search on a
cluster (:func:`mst_dist.clustering.neighbours.knn_graph`).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from mst_dist.clustering.knn import check_points, finished, knn_edges, metric_of, prepare_points

__all__ = ["seed_of", "default_list_size", "nndescent_neighbours", "approximate_knn_graph", "approximate_edges", "edges_task"]

#: the seed of ``random_state=None``: results are reproducible unless asked otherwise
DEFAULT_SEED = 0

#: pairs of candidates the local joins hold at once (sets the block of points joined together)
PAIRS_PER_BLOCK = 1 << 21


def seed_of(random_state):
    """A non-negative integer seed from ``None`` (the fixed default), an int or a NumPy generator."""
    if random_state is None:
        return DEFAULT_SEED
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2 ** 63 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2 ** 31 - 1))
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) or random_state < 0:
        raise ValueError(f"random_state must be None, a non-negative integer or a NumPy generator, "
                         f"got {random_state!r}")
    return int(random_state) % (2 ** 63)


def default_list_size(k):
    """Lists of ``2 k`` up to ``k = 10``, then ``k + max(10, k // 2)``.

    The extra slots carry the joins out of local optima: at 32 dimensions,
    3,000 Gaussian points, the recall of ``k = 10`` goes from 0.78 with lists
    of 10 to 0.98 with 20; on 200,000 points of 3 blobs at 10-D, 0.991 with
    15, 0.998 with 20.  Larger ``k`` needs fewer extra slots for each
    neighbour, while a round's pairs grow as the square of the list: for
    ``k = 22`` on 200,000 points of 10 blobs at 10-D, lists of 33 take about
    half the time of lists of 44 at a recall of 0.9999 against 1.0 (20,000
    Gaussian points at 32-D: 0.978 against 0.994).
    """
    return 2 * k if k <= 10 else k + max(10, k // 2)


#: Points whose true neighbours (brute force) measure the recall an approximate graph reports.
RECALL_POINTS = 200


def recall_rows(n, seed):
    """The points whose recall is measured: ``RECALL_POINTS`` of them drawn by the seed (all when fewer), ascending."""
    if n <= RECALL_POINTS:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, RECALL_POINTS, replace=False)).astype(np.int64)


def search_points(X, p=2.0):
    """The points the descent compares: float32, centred (every metric here is translation invariant).

    Float32 halves the memory the joins read; the lists' final distances are
    measured on the float64 points.  Points whose spread float32 cannot hold
    (or whose reduced distances, sums of ``|x - y| ** p``, it cannot) are
    searched as they are.
    """
    C = X - X.mean(axis=0)
    scale = float(np.abs(C).max()) if C.size else 0.0
    if not (1e-15 < scale < 1e15) or math.log10(2 * scale) * max(p, 1.0) + math.log10(X.shape[1]) > 30:
        return X
    return np.ascontiguousarray(C, dtype=np.float32)


def nndescent_neighbours(X, k, *, metric="euclidean", p=2, random_state=None, list_size=None, n_trees=None,
                         leaf_size=None, rho=1.0, delta=0.001, max_iterations=None):
    """Approximate ``k`` nearest neighbours of each point of ``X`` (prepared float64): ``(dist, nbr, info)``.

    Rows ascending by ``(reduced distance, id)``, self excluded, as
    :func:`mst_dist.clustering.knn.exact_neighbours` gives them.  The
    descent keeps lists of ``list_size`` (default
    :func:`default_list_size`, at most ``n - 1``) and returns their first
    ``k``: the longer lists carry the joins out of local optima.  The search runs on a float32 copy of the points, numbered
    in the first tree's leaf order; the distances returned are the float64
    ones.
    ``max_candidates = ceil(rho * list_size)`` (at most 60) new and old
    candidates per point per round.  ``info``: how the lists were built.
    """
    from mst_dist.clustering import _nndescent_kernels as K


    code, p = metric_of(metric, p)
    n = X.shape[0]
    k = int(k)
    seed = seed_of(random_state)
    want = k
    k = min(n - 1, max(k, default_list_size(k) if list_size is None else int(list_size)))
    if n_trees is None:
        n_trees = min(32, 4 + int(math.ceil(math.log2(max(n, 2)) / 3)))
    if leaf_size is None:
        leaf_size = max(24, 2 * (k + 1))
    if max_iterations is None:
        max_iterations = max(8, int(math.ceil(math.log2(max(n, 2)))))
    max_candidates = max(1, min(60, int(math.ceil(rho * k))))
    S = search_points(X, float(p))
    ps = S.dtype.type(p)
    idt = np.int32 if n < np.iinfo(np.int32).max else np.int64
    none = np.iinfo(idt).max
    hd = np.full((n, k), np.inf, S.dtype)
    hn = np.full((n, k), none, idt)
    hf = np.zeros((n, k), np.bool_)
    order, leaf_start = K.rp_forest(S, n_trees, leaf_size, seed)
    # the search numbers the points in the first tree's leaf order: near points, near rows (cache)
    perm = order[0].copy()
    inv = np.empty(n, np.int64)
    inv[perm] = np.arange(n, dtype=np.int64)
    S = np.ascontiguousarray(S[perm])
    for t in range(n_trees):
        starts = np.flatnonzero(leaf_start[t]).astype(np.int64)
        K.leaf_join(S, inv[order[t]], np.append(starts, n), hd, hn, hf, code, ps)
    del order, leaf_start, inv
    K.random_fill(S, hd, hn, hf, code, ps, seed, none)
    pairs_per_point = max_candidates * (max_candidates - 1) // 2 + max_candidates * max_candidates
    block = min(n, max(64, PAIRS_PER_BLOCK // max(1, pairs_per_point)))
    up_to = np.empty((block, 2 * pairs_per_point), idt)
    up_from = np.empty_like(up_to)
    up_d = np.empty((block, 2 * pairs_per_point), S.dtype)
    count = np.zeros(block, np.int64)
    rounds, changes = 0, []
    for r in range(max_iterations):
        rstart, rids, rflags = K.reverse_lists(hn, hf, none)
        new, old = K.candidates(hn, hf, rstart, rids, rflags, max_candidates, seed, r + 1, none)
        del rstart, rids, rflags
        K.mark_old(hn, hf, new, none)
        if not (new != none).any():
            break
        changed = 0
        for first in range(0, n, block):
            last = min(n, first + block)
            K.local_join(S, hd, hn, new, old, first, last, code, ps, up_to, up_from, up_d, count, none)
            changed += int(K.apply_updates(hd, hn, hf, up_to, up_from, up_d, count, last - first))
        rounds += 1
        changes.append(changed)
        if changed < delta * n * k:
            break
    del S, hd, hf
    found = hn != none
    ids = np.full((n, k), none, np.int64)
    ids[perm] = np.where(found, perm[np.where(found, hn, 0)], none)
    del hn, found
    hd, hn = K.finish_rows(X, ids, want, code, p, none)
    info = {"method": "nn-descent", "random_state": seed, "list_size": k, "trees": int(n_trees),
            "leaf_size": int(leaf_size),
            "rho": float(rho), "max_candidates": max_candidates, "delta": float(delta), "rounds": rounds,
            "changes": changes}
    return hd, hn, info


def approximate_knn_graph(X, k, *, metric="euclidean", p=2, symmetrize="union", random_state=None, name=None,
                          **options):
    """The approximate kNN graph of points in this process: an in-memory Graph (``meta["knn"]``: how)."""
    from mst_dist.graph import ArraySource, Graph

    src, dst, w, n, info = approximate_edges(X, k, metric=metric, p=p, symmetrize=symmetrize,
                                             random_state=random_state, **options)
    return Graph(n_vertices=n, sources=[ArraySource(src, dst, w)], weight_dtype=np.dtype(np.float64),
                 validated=True, name=name or f"knn-{int(k)}", meta={"knn": info})


def approximate_edges(X, k, *, metric="euclidean", p=2, symmetrize="union", random_state=None, offset=0,
                      **options):
    """``(src, dst, distance, n, info)`` of the approximate kNN graph of points (checked here)."""
    from mst_dist.clustering._nndescent_kernels import listed_back

    if symmetrize not in ("union", "mutual"):
        raise ValueError(f"symmetrize must be 'union' or 'mutual', got {symmetrize!r}")
    code, p = metric_of(metric, p)
    X = prepare_points(check_points(X, k, offset=offset), metric.lower(), offset)
    n = X.shape[0]
    dist, nbr, info = nndescent_neighbours(X, int(k), metric=metric, p=p, random_state=random_state, **options)
    info.update(list_recall(X, dist, nbr, int(k), code, p, info["random_state"]))
    # "does j list i" asked of the lists themselves (not of j's k-th distance, as for exact lists)
    src, dst, w = knn_edges(np.arange(n, dtype=np.int64), dist, nbr, listed_back(nbr), nbr, symmetrize)
    return src, dst, finished(w, metric.lower(), code, p), n, info


def list_recall(X, dist, nbr, k, code, p, seed):
    """``{"recall", "recall_points"}``: the share of the true ``k`` nearest the lists hold, on :func:`recall_rows`.

    The true ``k``-th distance of each sampled point by brute force (its
    distances to all the points); a listed neighbour that near is a hit.
    """
    from mst_dist.clustering._neighbours_kernels import NO_ID
    from mst_dist.clustering._nndescent_kernels import brute_kth

    rows = recall_rows(X.shape[0], seed)
    kth = brute_kth(X, rows, k, code, p)
    found = (nbr[rows] != NO_ID) & (dist[rows] <= kth[:, None])
    return {"recall": float(found.sum() / (k * rows.shape[0])), "recall_points": int(rows.shape[0])}


def edges_task(X, k, metric, p, symmetrize, seed):
    """A task's approximate kNN edges of a block of all the points: ``(src, dst, distance, info)``."""
    src, dst, w, _, info = approximate_edges(X, k, metric=metric, p=p, symmetrize=symmetrize, random_state=seed)
    return src, dst, w, info

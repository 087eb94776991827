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

__all__ = ["seed_of", "nndescent_neighbours", "approximate_knn_graph", "approximate_edges", "edges_task"]

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


def nndescent_neighbours(X, k, *, metric="euclidean", p=2, random_state=None, list_size=None, n_trees=None,
                         leaf_size=None, rho=1.0, delta=0.001, max_iterations=None):
    """Approximate ``k`` nearest neighbours of each point of ``X`` (prepared float64): ``(dist, nbr, info)``.

    Rows ascending by ``(reduced distance, id)``, self excluded, as
    :func:`mst_dist.clustering.knn.exact_neighbours` gives them.  The
    descent keeps lists of ``list_size`` (default ``2 k``, at most
    ``n - 1``) and returns their first ``k``: the longer lists carry the
    joins out of local optima (at 32 dimensions, 3,000 Gaussian points, the
    recall of ``k = 10`` goes from 0.78 with lists of 10 to 0.98 with 20).
    ``max_candidates = ceil(rho * list_size)`` (at most 60) new and old
    candidates per point per round.  ``info``: how the lists were built.
    """
    from mst_dist.clustering import _nndescent_kernels as K
    from mst_dist.clustering._neighbours_kernels import NO_ID

    import numba

    code, p = metric_of(metric, p)
    n = X.shape[0]
    k = int(k)
    seed = seed_of(random_state)
    want = k
    k = min(n - 1, max(k, 2 * k if list_size is None else int(list_size)))
    if n_trees is None:
        n_trees = min(32, 4 + int(math.ceil(math.log2(max(n, 2)) / 3)))
    if leaf_size is None:
        leaf_size = max(24, 2 * (k + 1))
    if max_iterations is None:
        max_iterations = max(8, int(math.ceil(math.log2(max(n, 2)))))
    max_candidates = max(1, min(60, int(math.ceil(rho * k))))
    hd = np.full((n, k), np.inf)
    hn = np.full((n, k), NO_ID, np.int64)
    hf = np.zeros((n, k), np.bool_)
    order, leaf_start = K.rp_forest(X, n_trees, leaf_size, seed)
    for t in range(n_trees):
        starts = np.flatnonzero(leaf_start[t]).astype(np.int64)
        K.leaf_join(X, order[t], np.append(starts, n), hd, hn, hf, code, p)
    del order, leaf_start
    K.random_fill(X, hd, hn, hf, code, p, seed)
    pairs_per_point = max_candidates * (max_candidates - 1) // 2 + max_candidates * max_candidates
    block = max(64, PAIRS_PER_BLOCK // max(1, pairs_per_point))
    pa = np.empty((min(block, n), pairs_per_point), np.int64)
    pb = np.empty_like(pa)
    pd = np.empty((min(block, n), pairs_per_point))
    count = np.zeros(min(block, n), np.int64)
    parts = max(1, numba.get_num_threads())  # the results do not depend on it
    rounds, changes = 0, []
    for r in range(max_iterations):
        rstart, rids, rflags = K.reverse_lists(hn, hf)
        new, old = K.candidates(hn, hf, rstart, rids, rflags, max_candidates, seed, r + 1)
        del rstart, rids, rflags
        K.mark_old(hn, hf, new)
        if not (new != NO_ID).any():
            break
        changed = 0
        for first in range(0, n, block):
            last = min(n, first + block)
            K.local_join(X, hd, hn, hf, new, old, first, last, code, p, pa, pb, pd, count)
            changed += int(K.apply_pairs(hd, hn, hf, pa, pb, pd, count[:last - first], parts))
        rounds += 1
        changes.append(changed)
        if changed < delta * n * k:
            break
    K.sort_rows(hd, hn)
    hd, hn = np.ascontiguousarray(hd[:, :want]), np.ascontiguousarray(hn[:, :want])
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
    # "does j list i" asked of the lists themselves (not of j's k-th distance, as for exact lists)
    src, dst, w = knn_edges(np.arange(n, dtype=np.int64), dist, nbr, listed_back(nbr), nbr, symmetrize)
    return src, dst, finished(w, metric.lower(), code, p), n, info


def edges_task(X, k, metric, p, symmetrize, seed):
    """A task's approximate kNN edges of a block of all the points: ``(src, dst, distance)``."""
    src, dst, w, _, _ = approximate_edges(X, k, metric=metric, p=p, symmetrize=symmetrize, random_state=seed)
    return src, dst, w

"""Numba kernels of exact k-nearest-neighbour search: a k-d tree, its queries, the kNN graph's edges.

Arrays in, arrays out.  Neighbours are ordered by ``(distance, id)``: ties in
distance go to the smaller point id, so the ``k`` nearest of a point are one
set whatever the tree, the partitioning or the threads.  Distances are kept
*reduced* while searching (the squared Euclidean distance, the sum of
``|x - y| ** p``), as in scikit-learn's trees, and finished by
:func:`finish_distances`; the reduced distance of two points is the same
floating-point number in both directions (each term is ``|x - y|``-symmetric
and the terms are added in coordinate order), so "is ``i`` among ``j``'s
neighbours" is decided exactly from ``j``'s ``k``-th neighbour.

The tree (Friedman, Bentley and Finkel, "An Algorithm for Finding Best
Matches in Logarithmic Expected Time", 1977) is implicit and balanced: node
``v`` has children ``2v + 1`` and ``2v + 2``, each node halves its points at
the median of its widest coordinate, the points are stored in tree order and
every node keeps the tight bounding box of its points, whose distance to a
query is a lower bound of the query's distance to any of them (also after
rounding: each coordinate's gap to the box is at most its gap to the point).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

#: metric codes of the kernels
EUCLIDEAN, MANHATTAN, CHEBYSHEV, MINKOWSKI = 0, 1, 2, 3

#: the id of an empty neighbour slot (after every real id in the ``(distance, id)`` order)
NO_ID = np.iinfo(np.int64).max

#: queries one thread answers in a row (consecutive in tree order: they share cached nodes)
QUERY_BLOCK = 256


@njit(nogil=True, cache=True, inline="always")
def _term(delta, metric, p):
    a = abs(delta)
    if metric == EUCLIDEAN:
        return a * a
    if metric == MINKOWSKI:
        return a ** p
    return a


@njit(nogil=True, cache=True, inline="always")
def _add(acc, term, metric):
    if metric == CHEBYSHEV:
        return term if term > acc else acc
    return acc + term


@njit(nogil=True, cache=True)
def _box_reduced(lo, hi, v, Q, q, metric, p):
    """Reduced distance of ``Q[q]`` to node ``v``'s box (0 inside it; ``inf`` for an empty box)."""
    acc = 0.0
    for c in range(Q.shape[1]):
        x = Q[q, c]
        gap = lo[v, c] - x
        if x - hi[v, c] > gap:
            gap = x - hi[v, c]
        if gap > 0.0:
            acc = _add(acc, _term(gap, metric, p), metric)
    return acc


# ---------------------------------------------------------------------------
# the tree
# ---------------------------------------------------------------------------

def tree_depth(n, leaf_size):
    """Levels below the root so that a leaf holds at most ``leaf_size`` points."""
    depth = 0
    while (n + (1 << depth) - 1) >> depth > leaf_size:
        depth += 1
    return depth


@njit(nogil=True, cache=True)
def _select(keys, order, lo, hi, nth):
    """Reorder ``keys[lo:hi]`` (and ``order`` with them) so that ``keys[nth]`` is in its sorted place."""
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        a, b, c = keys[lo], keys[mid], keys[hi - 1]
        pivot = max(min(a, b), min(max(a, b), c))
        # three-way partition: < pivot | == pivot | > pivot (many equal keys: duplicate points)
        lt, i, gt = lo, lo, hi - 1
        while i <= gt:
            if keys[i] < pivot:
                keys[lt], keys[i] = keys[i], keys[lt]
                order[lt], order[i] = order[i], order[lt]
                lt += 1
                i += 1
            elif keys[i] > pivot:
                keys[gt], keys[i] = keys[i], keys[gt]
                order[gt], order[i] = order[i], order[gt]
                gt -= 1
            else:
                i += 1
        if nth < lt:
            hi = lt
        elif nth > gt:
            lo = gt + 1
        else:
            return


@njit(nogil=True, cache=True)
def _node_range(v, n, level):
    """Points ``[start, stop)`` of node ``v`` (at ``level``) in a balanced tree of ``n`` points."""
    first = (1 << level) - 1
    pos = v - first
    start, stop = 0, n
    for lv in range(level - 1, -1, -1):
        mid = (start + stop) // 2
        if (pos >> lv) & 1:
            start = mid
        else:
            stop = mid
    return start, stop


@njit(parallel=True, cache=True)
def build_tree(X, depth):
    """``(order, lo, hi)``: the tree-order permutation of ``X``'s rows and each node's bounding box."""
    n, d = X.shape
    order = np.arange(n)
    n_nodes = (1 << (depth + 1)) - 1
    lo = np.empty((n_nodes, d))
    hi = np.empty((n_nodes, d))
    for level in range(depth):
        first = (1 << level) - 1
        for v in prange(first, 2 * first + 1):
            start, stop = _node_range(v, n, level)
            if stop - start < 2:
                continue
            best, spread = 0, -1.0
            for c in range(d):
                mn, mx = np.inf, -np.inf
                for t in range(start, stop):
                    x = X[order[t], c]
                    mn = min(mn, x)
                    mx = max(mx, x)
                if mx - mn > spread:
                    best, spread = c, mx - mn
            keys = np.empty(stop - start)
            for t in range(start, stop):
                keys[t - start] = X[order[t], best]
            sub = order[start:stop].copy()
            _select(keys, sub, 0, stop - start, (stop - start) // 2)
            order[start:stop] = sub
    first_leaf = (1 << depth) - 1
    for v in prange(first_leaf, n_nodes):
        start, stop = _node_range(v, n, depth)
        for c in range(d):
            mn, mx = np.inf, -np.inf
            for t in range(start, stop):
                x = X[order[t], c]
                mn = min(mn, x)
                mx = max(mx, x)
            lo[v, c] = mn
            hi[v, c] = mx
    for v in range(first_leaf - 1, -1, -1):
        for c in range(d):
            lo[v, c] = min(lo[2 * v + 1, c], lo[2 * v + 2, c])
            hi[v, c] = max(hi[2 * v + 1, c], hi[2 * v + 2, c])
    return order, lo, hi


# ---------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _worse(da, ia, db, ib):
    return da > db or (da == db and ia > ib)


@njit(nogil=True, cache=True)
def _sift_down(hd, hn, at, k):
    while True:
        left = 2 * at + 1
        if left >= k:
            return
        big = left
        if left + 1 < k and _worse(hd[left + 1], hn[left + 1], hd[left], hn[left]):
            big = left + 1
        if _worse(hd[big], hn[big], hd[at], hn[at]):
            hd[at], hd[big] = hd[big], hd[at]
            hn[at], hn[big] = hn[big], hn[at]
            at = big
        else:
            return


@njit(nogil=True, cache=True)
def _sort_row(hd, hn):
    """Heap row ascending by ``(distance, id)`` (insertion sort: rows are short)."""
    for a in range(1, hd.shape[0]):
        dv, iv = hd[a], hn[a]
        b = a - 1
        while b >= 0 and _worse(hd[b], hn[b], dv, iv):
            hd[b + 1] = hd[b]
            hn[b + 1] = hn[b]
            b -= 1
        hd[b + 1] = dv
        hn[b + 1] = iv


@njit(nogil=True, cache=True)
def _search(XT, ids, lo, hi, n, depth, Q, q, qid, hd, hn, metric, p, stack, stack_d, acc):
    k = hd.shape[0]
    first_leaf = (1 << depth) - 1
    top = 0
    stack[0] = 0
    stack_d[0] = _box_reduced(lo, hi, 0, Q, q, metric, p)
    while top >= 0:
        v = stack[top]
        vd = stack_d[top]
        top -= 1
        if vd > hd[0]:
            continue
        if v >= first_leaf:
            start, stop = _node_range(v, n, depth)
            # the leaf's distances a coordinate at a time (points in lanes: SIMD), each summed in
            # coordinate order as _reduced does
            width = stop - start
            for t in range(width):
                acc[t] = 0.0
            for c in range(XT.shape[0]):
                x = Q[q, c]
                if metric == EUCLIDEAN:
                    for t in range(width):
                        a = x - XT[c, start + t]
                        acc[t] += a * a
                elif metric == MANHATTAN:
                    for t in range(width):
                        acc[t] += abs(x - XT[c, start + t])
                elif metric == CHEBYSHEV:
                    for t in range(width):
                        acc[t] = max(acc[t], abs(x - XT[c, start + t]))
                else:
                    for t in range(width):
                        acc[t] += abs(x - XT[c, start + t]) ** p
            for t in range(start, stop):
                pid = ids[t]
                if pid == qid:
                    continue
                dist = acc[t - start]
                if _worse(hd[0], hn[0], dist, pid):
                    hd[0] = dist
                    hn[0] = pid
                    _sift_down(hd, hn, 0, k)
            continue
        left, right = 2 * v + 1, 2 * v + 2
        dl = _box_reduced(lo, hi, left, Q, q, metric, p)
        dr = _box_reduced(lo, hi, right, Q, q, metric, p)
        if dl <= dr:
            near, far, dn, df = left, right, dl, dr
        else:
            near, far, dn, df = right, left, dr, dl
        if df <= hd[0]:
            top += 1
            stack[top] = far
            stack_d[top] = df
        if dn <= hd[0]:
            top += 1
            stack[top] = near
            stack_d[top] = dn


@njit(parallel=True, cache=True)
def query_tree(XT, ids, lo, hi, depth, Q, qids, visit, dist, nbr, metric, p):
    """Improve each query's neighbour list (``dist``, ``nbr``, rows ascending) with the tree's points.

    ``XT``: the tree's points in tree order, transposed (coordinates x
    points, C order), ``ids`` their global ids;
    ``Q[q]`` is the query of global id ``qids[q]`` (never its own
    neighbour); ``visit``: the order the queries are answered in (rows of
    ``Q``, neighbours in space best).  Empty slots are ``(inf, NO_ID)``.
    Rows come back ascending by ``(distance, id)``.
    """
    n = XT.shape[1]
    m = visit.shape[0]
    leaf_most = (n + (1 << depth) - 1) >> depth
    k = dist.shape[1]
    blocks = (m + QUERY_BLOCK - 1) // QUERY_BLOCK
    for b in prange(blocks):
        stack = np.empty(2 * depth + 4, np.int64)
        stack_d = np.empty(2 * depth + 4)
        hd = np.empty(k)
        hn = np.empty(k, np.int64)
        acc = np.empty(leaf_most)
        for t in range(b * QUERY_BLOCK, min(m, (b + 1) * QUERY_BLOCK)):
            q = visit[t]
            # the ascending row reversed is a max-heap
            for s in range(k):
                hd[s] = dist[q, k - 1 - s]
                hn[s] = nbr[q, k - 1 - s]
            if n > 0:
                _search(XT, ids, lo, hi, n, depth, Q, q, qids[q], hd, hn, metric, p, stack, stack_d, acc)
            _sort_row(hd, hn)
            for s in range(k):
                dist[q, s] = hd[s]
                nbr[q, s] = hn[s]


@njit(parallel=True, cache=True)
def box_gaps(Q, lo, hi, metric, p):
    """Reduced distance of every row of ``Q`` to the box ``[lo, hi]``."""
    out = np.empty(Q.shape[0])
    lo2 = lo.reshape(1, -1)
    hi2 = hi.reshape(1, -1)
    for q in prange(Q.shape[0]):
        out[q] = _box_reduced(lo2, hi2, 0, Q, q, metric, p)
    return out


@njit(parallel=True, cache=True)
def merge_lists(dist, nbr, more_dist, more_nbr):
    """Row by row, the ``k`` least ``(distance, id)`` of two ascending lists of distinct points (in place)."""
    k = dist.shape[1]
    for q in prange(dist.shape[0]):
        a = 0
        b = 0
        od = np.empty(k)
        on = np.empty(k, np.int64)
        for s in range(k):
            if _worse(more_dist[q, b], more_nbr[q, b], dist[q, a], nbr[q, a]):
                od[s], on[s] = dist[q, a], nbr[q, a]
                a += 1
            else:
                od[s], on[s] = more_dist[q, b], more_nbr[q, b]
                b += 1
        dist[q] = od
        nbr[q] = on


# ---------------------------------------------------------------------------
# the graph's edges
# ---------------------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _listed(dist, who, kth_dist, kth_id):
    """Whether a point ``who`` at ``dist`` is among the neighbours of one whose ``k``-th is ``(kth_dist, kth_id)``."""
    return dist < kth_dist or (dist == kth_dist and who <= kth_id)


@njit(parallel=True, cache=True)
def edge_rows(qids, dist, nbr, kth_dist, kth_id, mutual):
    """The kNN graph's edges from its lists: ``(src, dst, reduced distance)``, each undirected edge once.

    Row ``q`` lists the neighbours of point ``qids[q]``; ``kth_dist[q]``,
    ``kth_id[q]``: the ``k``-th neighbour of each listed point ``nbr[q, s]``
    (at ``[q, s]``).  Union: an edge ``{i, j}`` where either lists the
    other, written by ``i`` when ``i < j`` or ``j`` does not list ``i``.
    Mutual: where each lists the other, written by the smaller.  Edges come
    out row by row, each row's neighbours in order, as ``(smaller, larger)``.
    """
    m, k = dist.shape
    count = np.zeros(m + 1, np.int64)
    for q in prange(m):
        i = qids[q]
        c = 0
        for s in range(k):
            j = nbr[q, s]
            if j == NO_ID:
                continue
            back = _listed(dist[q, s], i, kth_dist[q, s], kth_id[q, s])
            if mutual:
                c += i < j and back
            else:
                c += i < j or not back
        count[q + 1] = c
    for q in range(m):
        count[q + 1] += count[q]
    src = np.empty(count[m], np.int64)
    dst = np.empty(count[m], np.int64)
    w = np.empty(count[m])
    for q in prange(m):
        i = qids[q]
        at = count[q]
        for s in range(k):
            j = nbr[q, s]
            if j == NO_ID:
                continue
            back = _listed(dist[q, s], i, kth_dist[q, s], kth_id[q, s])
            keep = (i < j and back) if mutual else (i < j or not back)
            if keep:
                src[at] = min(i, j)
                dst[at] = max(i, j)
                w[at] = dist[q, s]
                at += 1
    return src, dst, w


def finish_distances(reduced, metric, p):
    """True distances from reduced ones (in place where it can)."""
    if metric == EUCLIDEAN:
        return np.sqrt(reduced, out=reduced)
    if metric == MINKOWSKI:
        return np.power(reduced, 1.0 / p, out=reduced)
    return reduced


@njit(parallel=True, cache=True)
def first_not_finite(X):
    """The first row of ``X`` holding a NaN or an infinity, else -1."""
    n, d = X.shape
    blocks = (n + 4095) // 4096
    bad = np.full(blocks, -1, np.int64)
    for b in prange(blocks):
        for i in range(b * 4096, min(n, (b + 1) * 4096)):
            ok = True
            for c in range(d):
                if not np.isfinite(X[i, c]):
                    ok = False
            if not ok:
                bad[b] = i
                break
    for b in range(blocks):
        if bad[b] >= 0:
            return bad[b]
    return -1

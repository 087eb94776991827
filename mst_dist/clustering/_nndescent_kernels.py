"""Numba kernels of approximate k-nearest-neighbour search: NN-descent over random projection trees.

NN-descent (Dong, Moses and Li, "Efficient k-nearest neighbor graph
construction for generic similarity measures", WWW 2011) improves every
point's neighbour list by its neighbours' neighbours: in each round each
point's *new* candidates (neighbours not yet joined, sampled at rate
``rho``) are compared with each other and with its *old* ones, and every
pair closer than one end's current ``k``-th neighbour enters that end's
list; the rounds stop when fewer than ``delta * n * k`` entries changed.
The lists start from the leaves of random projection trees (each node cut
by the hyperplane halfway between two of its points chosen at random).

Neighbour lists are rows of ``(reduced distance, id, new flag)`` kept
sorted ascending by ``(distance, id)`` (ties go to the smaller id, as in
:mod:`mst_dist.clustering._neighbours_kernels`).  The search compares
float32 distances of a centred float32 copy of the points (ids int32): a
candidate no nearer than a row's last is rejected before any other work,
and as a pair's distance is one number whoever computes it (summed in
coordinate order, symmetric), an entry already present sits exactly where
the candidate would go, so no scan of the row is needed to find it.  The
lists' final distances are measured on the float64 points
(:func:`finish_rows`), the same numbers as the exact search's.

Determinism whatever the threads: randomness is a hash of ``(seed, round,
point, point)``, never a generator state; every parallel loop writes only
the rows it owns, and every row receives its insertions in one order fixed
by the data (the local joins of a block of points are generated first in
parallel, reading the lists as they stand and keeping only the updates a
list would take then, then one thread applies them in the order they were
generated).  A bounded sorted row that keeps the ``k`` least distinct
entries of a strict order holds the same set whatever order they come in;
the new flags and the counts of changes follow that order too, so the
lists, the rounds and the stop are the same for 1 or many
threads.  Block sizes depend on ``k`` and ``rho`` only.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mst_dist.clustering._neighbours_kernels import CHEBYSHEV, EUCLIDEAN, MANHATTAN, NO_ID, _sift_down, _sort_row, _worse

# ---------------------------------------------------------------------------
# hashing: randomness that does not depend on the order of work
# ---------------------------------------------------------------------------


@njit(nogil=True, cache=True, inline="always")
def _mix(z):
    """splitmix64's finaliser (Steele, Lea and Flood): a bijection of 64-bit words."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(nogil=True, cache=True)
def _hash(seed, a, b, c):
    """A 64-bit word of ``(seed, a, b, c)`` (non-negative integers)."""
    h = _mix(np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15))
    h = _mix(h ^ np.uint64(a))
    h = _mix(h + np.uint64(b))
    return _mix(h ^ (np.uint64(c) * np.uint64(0x9E3779B97F4A7C15)))


@njit(nogil=True, cache=True, inline="always")
def _below(h, m):
    """``h`` taken to ``[0, m)``."""
    return np.int64(h % np.uint64(m))


# ---------------------------------------------------------------------------
# distances and sorted lists
# ---------------------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _reduced(X, i, j, metric, p):
    """Reduced distance of rows ``i`` and ``j`` (squared Euclidean, sum of ``|x - y| ** p``, ...).

    Accumulated in ``X``'s precision (``p`` of the same type): the search's
    float32 copy gives float32 distances, the points themselves float64,
    the same numbers as :mod:`mst_dist.clustering._neighbours_kernels`'s
    (summed in coordinate order; the metric's test is outside the loop).
    """
    return _reduced_between(X, i, X, j, metric, p)


@njit(nogil=True, cache=True, inline="always")
def _reduced_between(A, i, B, j, metric, p):
    """Reduced distance of row ``i`` of ``A`` and row ``j`` of ``B`` (as :func:`_reduced`)."""
    acc = A[i, 0] - A[i, 0]
    d = A.shape[1]
    if metric == EUCLIDEAN:
        for c in range(d):
            a = A[i, c] - B[j, c]
            acc += a * a
    elif metric == MANHATTAN:
        for c in range(d):
            acc += abs(A[i, c] - B[j, c])
    elif metric == CHEBYSHEV:
        for c in range(d):
            acc = max(acc, abs(A[i, c] - B[j, c]))
    else:
        for c in range(d):
            acc += abs(A[i, c] - B[j, c]) ** p
    return acc


@njit(nogil=True, cache=True, inline="always")
def _insert(rd, rn, rf, dist, who, flag):
    """Into a row ascending by ``(distance, id)``: ``who`` at ``dist`` if it beats the last and is not there; 1 if it went in.

    A candidate no nearer than the row's last is rejected before any other
    work.  The distance of a pair is one number whoever computes it (the sum
    runs in coordinate order and is symmetric), so ``who`` already present
    sits exactly where ``(dist, who)`` sorts: the scan for the place finds it.
    """
    last = rd.shape[0] - 1
    if dist > rd[last] or (dist == rd[last] and who >= rn[last]):
        return 0
    s = last
    while s > 0 and (rd[s - 1] > dist or (rd[s - 1] == dist and rn[s - 1] > who)):
        s -= 1
    if s > 0 and rd[s - 1] == dist and rn[s - 1] == who:
        return 0
    for t in range(last, s, -1):
        rd[t] = rd[t - 1]
        rn[t] = rn[t - 1]
        rf[t] = rf[t - 1]
    rd[s] = dist
    rn[s] = who
    rf[s] = flag
    return 1


@njit(nogil=True, cache=True, inline="always")
def _enters(rd, rn, dist, who):
    """Whether :func:`_insert` would take ``who`` at ``dist`` into the row as it stands (read only)."""
    last = rd.shape[0] - 1
    if dist > rd[last] or (dist == rd[last] and who >= rn[last]):
        return False
    s = last
    while s > 0 and (rd[s - 1] > dist or (rd[s - 1] == dist and rn[s - 1] > who)):
        s -= 1
    return not (s > 0 and rd[s - 1] == dist and rn[s - 1] == who)


# ---------------------------------------------------------------------------
# initial lists: random projection trees
# ---------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def rp_forest(X, n_trees, leaf_size, seed):
    """``n_trees`` random projection trees: ``(order, leaf_start)``, one row per tree.

    ``order[t]``: the points in tree ``t``'s leaf order; ``leaf_start[t, s]``:
    whether a leaf starts at position ``s``.  A node of more than
    ``leaf_size`` points is cut by the hyperplane halfway between two of its
    points (chosen by hash); points on the plane go to the side of their
    id's hash; a cut that leaves a side empty (all points equal) halves the
    node instead.
    """
    n, d = X.shape
    order = np.empty((n_trees, n), np.int64)
    leaf_start = np.zeros((n_trees, n + 1), np.bool_)
    for t in prange(n_trees):
        idx = np.arange(n)
        stack_a = np.empty(n + 1, np.int64)
        stack_b = np.empty(n + 1, np.int64)
        normal = np.empty(d, X.dtype)
        top = 0
        stack_a[0], stack_b[0] = 0, n
        top = 1
        node = 0
        while top > 0:
            top -= 1
            a, b = stack_a[top], stack_b[top]
            if b - a <= leaf_size:
                leaf_start[t, a] = True
                continue
            node += 1
            r1 = a + _below(_hash(seed, t, node, 1), b - a)
            r2 = a + _below(_hash(seed, t, node, 2), b - a - 1)
            if r2 >= r1:
                r2 += 1
            u, v = idx[r1], idx[r2]
            offset = X[u, 0] - X[u, 0]
            for c in range(d):
                normal[c] = X[u, c] - X[v, c]
                offset += normal[c] * (X[u, c] + X[v, c])
            offset *= 0.5
            # partition [a, b): left of the plane first
            lo, hi = a, b - 1
            while lo <= hi:
                w = idx[lo]
                m = -offset
                for c in range(d):
                    m += normal[c] * X[w, c]
                left = m < 0.0 or (m == 0.0 and (_hash(seed, t, w, 3) & np.uint64(1)) == np.uint64(0))
                if left:
                    lo += 1
                else:
                    idx[lo], idx[hi] = idx[hi], idx[lo]
                    hi -= 1
            mid = lo
            if mid == a or mid == b:
                mid = (a + b) // 2
            stack_a[top], stack_b[top] = mid, b
            top += 1
            stack_a[top], stack_b[top] = a, mid
            top += 1
        order[t] = idx
    return order, leaf_start


@njit(parallel=True, cache=True)
def leaf_join(X, order, starts, hd, hn, hf, metric, p):
    """Every point's list given the other points of its leaf (one tree: each row written by its leaf only).

    Each pair of a leaf is measured once and offered to both ends.
    """
    for f in prange(starts.shape[0] - 1):
        a, b = starts[f], starts[f + 1]
        for s in range(a, b):
            i = order[s]
            for r in range(s + 1, b):
                j = order[r]
                dist = _reduced(X, i, j, metric, p)
                _insert(hd[i], hn[i], hf[i], dist, j, True)
                _insert(hd[j], hn[j], hf[j], dist, i, True)


@njit(parallel=True, cache=True)
def random_fill(X, hd, hn, hf, metric, p, seed, none):
    """Lists with empty slots left filled with points chosen by hash (tiny leaves)."""
    n, k = hn.shape
    for i in prange(n):
        tries = 0
        while hn[i, k - 1] == none and tries < 4 * k + 16:
            j = _below(_hash(seed, 1 << 40, i, tries), n)
            tries += 1
            if j != i:
                _insert(hd[i], hn[i], hf[i], _reduced(X, i, j, metric, p), j, True)


# ---------------------------------------------------------------------------
# one round of NN-descent
# ---------------------------------------------------------------------------

@njit(cache=True)
def reverse_lists(hn, hf, none):
    """Who lists each point: CSR ``(start, ids, flags)`` of the reversed lists (ids ascending per point)."""
    n, k = hn.shape
    start = np.zeros(n + 1, np.int64)
    for i in range(n):
        for s in range(k):
            j = hn[i, s]
            if j != none:
                start[j + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
    at = start[:-1].copy()
    ids = np.empty(start[n], hn.dtype)
    flags = np.empty(start[n], np.bool_)
    for i in range(n):
        for s in range(k):
            j = hn[i, s]
            if j != none:
                ids[at[j]] = i
                flags[at[j]] = hf[i, s]
                at[j] += 1
    return start, ids, flags


@njit(nogil=True, cache=True)
def _sample(cd, cn, prio, who):
    """Into a candidate row (a max-heap by ``(priority, id)``): ``who`` unless present or not among the least."""
    m = cd.shape[0]
    if not _worse(cd[0], cn[0], prio, who):
        return
    for s in range(m):
        if cn[s] == who:
            return
    cd[0], cn[0] = prio, who
    _sift_down(cd, cn, 0, m)


@njit(parallel=True, cache=True)
def candidates(hn, hf, rstart, rids, rflags, max_candidates, seed, round_, none):
    """Each point's new and old candidates: its list and its reversed list, each kind sampled to ``max_candidates``.

    The sample keeps the candidates of least hash priority (a function of
    the round and the pair), so it is one set whatever the order.  Returns
    ``(new, old)``, rows padded with ``none``; the list entries sampled as
    new are then marked old (:func:`mark_old`).
    """
    n, k = hn.shape
    new = np.full((n, max_candidates), none, hn.dtype)
    old = np.full((n, max_candidates), none, hn.dtype)
    for i in prange(n):
        nd = np.full(max_candidates, np.inf)
        od = np.full(max_candidates, np.inf)
        for s in range(k + rstart[i + 1] - rstart[i]):
            if s < k:
                j, f = hn[i, s], hf[i, s]
            else:
                j, f = rids[rstart[i] + s - k], rflags[rstart[i] + s - k]
            if j == none:
                continue
            prio = (_hash(seed, round_, min(i, j), max(i, j)) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
            if f:
                _sample(nd, new[i], prio, j)
            else:
                _sample(od, old[i], prio, j)
    return new, old


@njit(parallel=True, cache=True)
def mark_old(hn, hf, new, none):
    """List entries sampled among their point's new candidates: joined from now on, old."""
    n, k = hn.shape
    for i in prange(n):
        for s in range(k):
            if hf[i, s]:
                for c in range(new.shape[1]):
                    if new[i, c] == hn[i, s]:
                        hf[i, s] = False
                        break


@njit(parallel=True, cache=True)
def local_join(X, hd, hn, new, old, first, last, metric, p, up_to, up_from, up_d, count, none):
    """Candidate pairs of points ``first:last`` (new x new and new x old) as updates of the ends they beat.

    Read-only on the lists.  A pair measured by point ``q`` becomes an
    update ``(to, from, distance)`` of each end whose list, as it stands,
    would take it (nearer than its last, not there yet): row ``q - first``
    of ``up_*``, ``count`` of them, in the order generated.
    """
    m = new.shape[1]
    last_slot = hd.shape[1] - 1
    for q in prange(first, last):
        row = q - first
        # the candidates (new, then old) and their lists' last distances, read once
        ids = np.empty(m + m, up_to.dtype)
        lim = np.empty(m + m, hd.dtype)
        for x in range(m + m):
            a = new[q, x] if x < m else old[q, x - m]
            ids[x] = a
            if a != none:
                lim[x] = hd[a, last_slot]
        c = 0
        for x in range(m):
            a = ids[x]
            if a == none:
                continue
            for y in range(x + 1, m + m):
                b = ids[y]
                if b == none or b == a:
                    continue
                dist = _reduced(X, a, b, metric, p)
                if dist <= lim[x] and _enters(hd[a], hn[a], dist, b):
                    up_to[row, c], up_from[row, c], up_d[row, c] = a, b, dist
                    c += 1
                if dist <= lim[y] and _enters(hd[b], hn[b], dist, a):
                    up_to[row, c], up_from[row, c], up_d[row, c] = b, a, dist
                    c += 1
        count[row] = c


@njit(nogil=True, cache=True)
def apply_updates(hd, hn, hf, up_to, up_from, up_d, count, rows):
    """The updates of :func:`local_join` into their lists, as new, in the order generated; the entries that went in.

    One thread: a few per cent of the join's time, and no wait for others.
    """
    c = 0
    for row in range(rows):
        for e in range(count[row]):
            a = up_to[row, e]
            c += _insert(hd[a], hn[a], hf[a], up_d[row, e], up_from[row, e], True)
    return c


@njit(parallel=True, cache=True)
def finish_rows(X, hn, want, metric, p, none):
    """The ``want`` nearest of each list by the points' own (float64) reduced distances: ``(dist, nbr)``.

    The search's distances (float32) only ordered the lists; the exact
    ones are measured here and the rows sorted by ``(distance, id)``.
    """
    n, k = hn.shape
    dist = np.full((n, want), np.inf)
    nbr = np.full((n, want), NO_ID, np.int64)
    for i in prange(n):
        rd = np.full(k, np.inf)
        rn = np.full(k, NO_ID, np.int64)
        for s in range(k):
            j = hn[i, s]
            if j != none:
                rd[s] = _reduced(X, i, j, metric, p)
                rn[s] = j
        _sort_row(rd[:k], rn[:k])
        for s in range(want):
            dist[i, s] = rd[s]
            nbr[i, s] = rn[s]
    return dist, nbr


@njit(parallel=True, cache=True)
def listed_back(nbr):
    """For each list entry ``j`` of ``i``: ``inf`` where ``j`` lists ``i``, else ``-1``.

    Given to ``edge_rows`` as the ``k``-th distance of ``j`` it makes its
    "does ``j`` list ``i``" exact for lists that are not the exact ones.
    """
    n, k = nbr.shape
    out = np.empty((n, k))
    for i in prange(n):
        for s in range(k):
            j = nbr[i, s]
            found = False
            if j != NO_ID:
                for t in range(k):
                    if nbr[j, t] == i:
                        found = True
                        break
            out[i, s] = np.inf if found else -1.0
    return out


# ---------------------------------------------------------------------------
# recall against brute force
# ---------------------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _keep_least(best, dist):
    """``dist`` into ``best`` (ascending, the ``len(best)`` least so far) if it is less than the last."""
    s = best.shape[0] - 1
    if not dist < best[s]:
        return
    while s > 0 and best[s - 1] > dist:
        best[s] = best[s - 1]
        s -= 1
    best[s] = dist


@njit(cache=True)
def brute_kth(X, rows, k, metric, p):
    """The reduced distance of each of ``rows`` to its ``k``-th nearest other point (all points scanned)."""
    return nearest_in_block(X, X.shape[0], rows, 0, k, metric, p, X[rows])[:, k - 1].copy()


@njit(parallel=True, cache=True)
def nearest_in_block(X, m, qids, offset, k, metric, p, Q):
    """The ``k`` least reduced distances of each point ``Q[q]`` (id ``qids[q]``) to rows ``X[:m]`` (ids from ``offset``), itself left out.

    ``inf`` where the rows are fewer; rows ascending.  The distance sums
    run in coordinate order, as :func:`_reduced`'s (the same numbers).
    """
    out = np.full((qids.shape[0], k), np.inf)
    for q in prange(qids.shape[0]):
        best = out[q]
        for j in range(m):
            if offset + j != qids[q]:
                _keep_least(best, _reduced_between(Q, q, X, j, metric, p))
    return out


@njit(parallel=True, cache=True)
def hits(X, rows, found, kth, k, metric, p):
    """For each of ``rows``: how many of its found neighbours are as near as its ``k``-th.

    ``found``: a row per point of ``rows``, neighbour ids padded with ``-1``.

    At most ``k`` (ties at the ``k``-th distance count once each, up to ``k``).
    """
    out = np.zeros(rows.shape[0], np.int64)
    for q in prange(rows.shape[0]):
        i = rows[q]
        c = 0
        for s in range(found.shape[1]):
            j = found[q, s]
            if j >= 0 and j != i and _reduced(X, i, j, metric, p) <= kth[q]:
                c += 1
        out[q] = min(c, k)
    return out

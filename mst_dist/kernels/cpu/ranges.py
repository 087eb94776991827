"""CPU kernels of the rounds whose per-vertex state is cut into ranges (host arrays, any worker).

What :mod:`mst_dist.kernels.vertex_ranges` does on every chunk in every
partitioned round, written as serial ``nogil`` loops because NumPy's own
forms sort or scatter more than they need to:

- :func:`rank` -- the sorted distinct values and each value's index among
  them: an 11-bit least-significant-digit radix sort over only the bits the
  values span (two passes for ids under 2^22), where ``np.unique(...,
  return_inverse=True)`` runs a comparison argsort;
- :func:`first_touch` -- the first edge at each local id: one pass, where
  ``np.minimum.at`` (twice) costs about ten times as much;
- :func:`first_of_pairs` -- the first edge of each pair of local ids: an
  open-addressing set of the pairs, one pass, where ``np.unique(...,
  return_index=True)`` sorts them;
- :func:`cheapest_rows` -- the cheapest row of each component of a range
  (the merge of candidate tables): one pass, where ``np.minimum.at`` takes
  two and a comparison of every row with its winner;
- :func:`positions` -- where each of some sorted ids is in a sorted table:
  one walk along both, where ``np.searchsorted`` runs a binary search per id;
  :func:`sparse_values` -- the values of some sorted ids in a map kept over
  the ids present only, the others numbered in order: the same walk, with
  no temporaries.

``python -m benchmarks.vertex_partition round`` times the hook, pointer
jumping and numbering of a partitioned round, which these kernels serve.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["rank", "local_ids", "sort_edges", "first_touch", "cheapest_sorted", "lightest_parallel", "first_of_pairs",
           "cheapest_rows", "positions", "sparse_values"]

_DIGIT = 11
_BUCKETS = 1 << _DIGIT


@njit(nogil=True, cache=True)
def _radix(key, pos, span):
    """``key`` (unsigned) sorted stably with ``pos`` beside it, over the digits ``span`` has."""
    m = key.shape[0]
    key2 = np.empty_like(key)
    pos2 = np.empty_like(pos)
    mask = _BUCKETS - 1
    count = np.empty(_BUCKETS, np.int64)
    for p in range(0, 64, _DIGIT):
        if (span >> np.uint64(p)) == 0:
            break
        count[:] = 0
        for i in range(m):
            count[(key[i] >> p) & mask] += 1
        total = 0
        for d in range(_BUCKETS):
            c = count[d]
            count[d] = total
            total += c
        for i in range(m):
            d = (key[i] >> p) & mask
            j = count[d]
            count[d] = j + 1
            key2[j] = key[i]
            pos2[j] = pos[i]
        key, key2 = key2, key
        pos, pos2 = pos2, pos
    return key, pos


@njit(nogil=True, cache=True)
def _distinct(key, pos, lo, out):
    """The sorted ``key`` (values less ``lo``) as distinct values into ``out``; each position's rank."""
    m = key.shape[0]
    inverse = np.empty(m, np.int64)
    k = -1
    for i in range(m):
        if k < 0 or key[i] != key[i - 1]:
            k += 1
            out[k] = np.uint64(key[i]) + np.uint64(lo)
        inverse[pos[i]] = k
    return k + 1, inverse


def rank(values):
    """``(distinct, inverse)``: the sorted distinct integers of ``values`` and each one's index among them
    (what ``np.unique(values, return_inverse=True)`` gives, int64 indices).

    Keys and positions are 32-bit where the values' span and count allow (most chunks): the sort's
    scratch is then 16 bytes a value.

    >>> [a.tolist() for a in rank(np.array([7, 3, 7, 10, 3]))]
    [[3, 7, 10], [1, 0, 1, 2, 0]]
    """
    values = np.ascontiguousarray(values)
    m = values.shape[0]
    if m == 0:
        return values.copy(), np.zeros(0, np.int64)
    wide = values if values.dtype in (np.int32, np.int64) else values.astype(np.int64)
    unsigned = np.uint32 if wide.dtype == np.int32 else np.uint64
    lo, hi = int(wide.min()), int(wide.max())
    span = hi - lo
    # each value less the smallest, modulo 2**bits of the values: right for any signed values
    key = wide.view(unsigned) - unsigned(lo % (1 << (8 * wide.dtype.itemsize)))
    if span <= 0xFFFFFFFF:
        key = key.astype(np.uint32, copy=False)
    pos = np.arange(m, dtype=np.int32 if m <= np.iinfo(np.int32).max else np.int64)
    key, pos = _radix(key, pos, np.uint64(span))
    out = np.empty(m, wide.dtype)
    k, inverse = _distinct(key, pos, np.int64(lo), out)
    return out[:k].astype(values.dtype), inverse


@njit(nogil=True, cache=True)
def _first_touch(lu, lv, k):
    m = lu.shape[0]
    first = np.full(k, m, np.int64)
    for i in range(m - 1, -1, -1):
        first[lu[i]] = i
        first[lv[i]] = i
    return first


def first_touch(lu, lv, k):
    """The first edge (position) at each of ``k`` local ids, ``len(lu)`` where none is.

    >>> first_touch(np.array([2, 0]), np.array([0, 1]), 4).tolist()
    [0, 1, 0, 2]
    """
    return _first_touch(np.ascontiguousarray(lu), np.ascontiguousarray(lv), int(k))


@njit(nogil=True, cache=True)
def _first_of_pairs(lu, lv, k):
    m = lu.shape[0]
    size = 1
    bits = 0
    while size < 2 * m:
        size *= 2
        bits += 1
    empty = np.int64(-1)
    table = np.full(size, empty, np.int64)
    mask = np.uint64(size - 1)
    out = np.empty(m, np.int64)
    n = 0
    for i in range(m):
        a, b = np.int64(lu[i]), np.int64(lv[i])
        if a > b:
            a, b = b, a
        pair = a * np.int64(k) + b
        h = (np.uint64(pair) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)  # m >= 1: bits >= 1
        while True:
            at = table[h]
            if at == empty:
                table[h] = pair
                out[n] = i
                n += 1
                break
            if at == pair:
                break
            h = (h + np.uint64(1)) & mask
    return out[:n].copy()


def first_of_pairs(lu, lv, k):
    """Positions (ascending) of the first edge of each unordered pair of local ids (``k`` of them).

    >>> first_of_pairs(np.array([0, 1, 2, 0]), np.array([1, 0, 1, 2]), 3).tolist()
    [0, 2, 3]
    """
    if lu.shape[0] == 0:
        return np.zeros(0, np.int64)
    return _first_of_pairs(np.ascontiguousarray(lu), np.ascontiguousarray(lv), int(k))


@njit(nogil=True, cache=True)
def _cheapest_rows(c, key, eid, span):
    best = np.full(span, -1, np.int64)
    for i in range(c.shape[0]):
        j = c[i]
        b = best[j]
        if b < 0 or key[i] < key[b] or (key[i] == key[b] and eid[i] < eid[b]):
            best[j] = i
    n = 0
    for j in range(span):
        if best[j] >= 0:
            n += 1
    out = np.empty(n, np.int64)
    n = 0
    for j in range(span):
        if best[j] >= 0:
            out[n] = best[j]
            n += 1
    return out


def cheapest_rows(c, key, eid, span):
    """For each of ``span`` slots, the row with the least ``(key, eid)`` among those at it (``c``: each
    row's slot): the rows, in slot order (slots with no row left out).

    >>> cheapest_rows(np.array([1, 0, 1]), np.array([5, 7, 5], np.uint64), np.array([9, 1, 4]), 3).tolist()
    [1, 2]
    """
    if c.shape[0] == 0:
        return np.zeros(0, np.int64)
    return _cheapest_rows(np.ascontiguousarray(c), np.ascontiguousarray(key), np.ascontiguousarray(eid), int(span))


@njit(nogil=True, cache=True)
def _gallop(table, j, x):
    """The first index ``>= j`` of sorted ``table`` whose value is not below ``x``: steps doubling from
    ``j``, then a binary search, so ``k`` sorted look-ups cost ``O(k log(n / k))``, not ``O(n)`` each
    (an owner answers every requester's few ids out of its whole range)."""
    n = table.shape[0]
    if j >= n or table[j] >= x:
        return j
    step = 1
    while j + step < n and table[j + step] < x:
        step *= 2
    lo, hi = j + step // 2 + 1, min(j + step, n)  # table[lo - 1] < x; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if table[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(nogil=True, cache=True)
def _positions(table, ids):
    out = np.empty(ids.shape[0], np.int64)
    j = 0
    for i in range(ids.shape[0]):
        j = _gallop(table, j, ids[i])
        out[i] = j
    return out


def positions(table, ids):
    """Where each of ``ids`` goes in ``table`` (both sorted ascending): ``np.searchsorted(table, ids)``,
    in one galloping walk along both.

    >>> positions(np.array([2, 5, 9]), np.array([2, 6, 9, 12])).tolist()
    [0, 2, 2, 3]
    """
    if ids.shape[0] == 0:
        return np.zeros(0, np.int64)
    return _positions(np.ascontiguousarray(table), np.ascontiguousarray(ids))


@njit(nogil=True, cache=True)
def _sparse_values(ids, values, lo, fin, asked):
    out = np.empty(asked.shape[0], np.int64)
    j = 0
    n = ids.shape[0]
    for i in range(asked.shape[0]):
        x = np.int64(asked[i])
        j = _gallop(ids, j, x)
        if j < n and ids[j] == x:
            out[i] = values[j]
        else:  # absent: the (x - lo - j)-th absent id of the range, finished after fin
            out[i] = -(fin + (x - lo) - j + 1)
    return out


def sparse_values(ids, values, lo, fin, asked):
    """The values of the ids ``asked`` (sorted, distinct, in ``[lo, ...)``) in a map kept over the ids
    present only (``ids`` sorted, ``values`` beside them); an absent id ``x`` is finished, numbered
    ``-(F + 1)`` with ``F = fin +`` its rank among the absent ids from ``lo``.

    >>> sparse_values(np.array([11, 14]), np.array([7, 8]), 10, 100, np.array([10, 11, 13, 14])).tolist()
    [-101, 7, -103, 8]
    """
    if asked.shape[0] == 0:
        return np.zeros(0, np.int64)
    return _sparse_values(np.ascontiguousarray(ids), np.ascontiguousarray(values), np.int64(lo), np.int64(fin),
                          np.ascontiguousarray(asked))


def sort_edges(u, v, key, eid):
    """The edges in the strict ``(key, eid)`` order (one ``np.lexsort``)."""
    order = np.lexsort((eid, key))
    return u[order], v[order], key[order], eid[order]


def local_ids(u, v):
    """``(ids, lu, lv)``: the sorted distinct ids the edges touch (one :func:`rank`), and each end's index."""
    m = u.shape[0]
    ids, inv = rank(np.concatenate([np.asarray(u, np.int64), np.asarray(v, np.int64)]))
    return ids, inv[:m], inv[m:]


def cheapest_sorted(ids, lu, lv, u, v, key, eid):
    """The cheapest edge leaving each component edges in the ``(key, eid)`` order touch: the first one
    touching it (:func:`first_touch`), ``(comp, key, eid, other)``, rows by ``comp``."""
    m = lu.shape[0]
    if m == 0:
        z = np.zeros(0, np.int64)
        return z, np.zeros(0, np.uint64), z.copy(), z.copy()
    first = first_touch(lu, lv, ids.shape[0])
    at = np.flatnonzero(first < m)
    f = first[at]
    other = np.where(lu[f] == at, v[f], u[f])
    return ids[at], key[f], eid[f], np.asarray(other, np.int64)


def lightest_parallel(lu, lv, k):
    """Positions (ascending) of the lightest edge of each pair of ``k`` local ids (:func:`first_of_pairs`)."""
    return first_of_pairs(lu, lv, k)

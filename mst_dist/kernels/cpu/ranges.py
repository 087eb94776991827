"""CPU kernels of the rounds whose per-vertex state is cut into ranges (host arrays, any worker).

What :mod:`mst_dist.kernels.vertex_ranges` does on every chunk in every
partitioned round, written as serial ``nogil`` loops because NumPy's own
forms sort or scatter more than they need to (measured on one chunk of 2^19
edges over 2^21 ids, this project's 2-core machine):

- :func:`rank` -- the sorted distinct values and each value's index among
  them: an 11-bit least-significant-digit radix sort over only the bits the
  values span (two passes for ids under 2^22), where ``np.unique(...,
  return_inverse=True)`` runs a comparison argsort;
- :func:`first_touch` -- the first edge at each local id: one pass, where
  ``np.minimum.at`` (twice) costs about ten times as much;
- :func:`first_of_pairs` -- the first edge of each pair of local ids: an
  open-addressing set of the pairs, one pass, where ``np.unique(...,
  return_index=True)`` sorts them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["rank", "first_touch", "first_of_pairs"]

_DIGIT = 11
_BUCKETS = 1 << _DIGIT


@njit(nogil=True, cache=True)
def _rank(values):
    m = values.shape[0]
    lo, hi = values[0], values[0]
    for i in range(m):
        x = values[i]
        if x < lo:
            lo = x
        if x > hi:
            hi = x
    span = np.uint64(hi) - np.uint64(lo)  # modulo 2**64: right for any int64 values
    key = np.empty(m, np.uint64)
    pos = np.empty(m, np.int64)
    for i in range(m):
        key[i] = np.uint64(values[i]) - np.uint64(lo)
        pos[i] = i
    key2 = np.empty(m, np.uint64)
    pos2 = np.empty(m, np.int64)
    mask = np.uint64(_BUCKETS - 1)
    count = np.empty(_BUCKETS, np.int64)
    for p in range(0, 64, _DIGIT):
        shift = np.uint64(p)
        if (span >> shift) == 0:
            break
        count[:] = 0
        for i in range(m):
            count[(key[i] >> shift) & mask] += 1
        total = 0
        for d in range(_BUCKETS):
            c = count[d]
            count[d] = total
            total += c
        for i in range(m):
            d = (key[i] >> shift) & mask
            j = count[d]
            count[d] = j + 1
            key2[j] = key[i]
            pos2[j] = pos[i]
        key, key2 = key2, key
        pos, pos2 = pos2, pos
    inverse = np.empty(m, np.int64)
    distinct = np.empty(m, values.dtype)
    k = -1
    for i in range(m):
        if k < 0 or key[i] != key[i - 1]:
            k += 1
            distinct[k] = key[i] + np.uint64(lo)
        inverse[pos[i]] = k
    return distinct[:k + 1].copy(), inverse


def rank(values):
    """``(distinct, inverse)``: the sorted distinct integers of ``values`` and each one's index among them
    (what ``np.unique(values, return_inverse=True)`` gives, int64 indices).

    >>> [a.tolist() for a in rank(np.array([7, 3, 7, 10, 3]))]
    [[3, 7, 10], [1, 0, 1, 2, 0]]
    """
    values = np.ascontiguousarray(values)
    if values.shape[0] == 0:
        return values.copy(), np.zeros(0, np.int64)
    return _rank(values)


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
        h = (np.uint64(pair) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits) if bits else np.uint64(0)
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

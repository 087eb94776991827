"""The ranged kernels written once over an array module ``xp``: the reference's and the GPU's.

The kernels of rounds whose per-vertex state is cut into ranges (see
:data:`mst_dist.kernels.contract.RANGED_FUNCTIONS` and
:mod:`mst_dist.kernels.vertex_ranges`, their glue), in sorts, searches and
gathers that NumPy and CuPy both have: with ``numpy`` it is the reference
the CPU's Numba kernels are held to, with ``cupy`` the GPU's, and the GPU
backend's NumPy stand-in runs the very same code on the host.

:class:`RangedKernels` gives a backend with an ``xp`` attribute these
functions as methods under the contract's names: host or ``xp`` arrays in,
host arrays out (what they make crosses workers or indexes host records).
"""
from __future__ import annotations

import numpy as np

from mst_dist.kernels.contract import to_host

__all__ = ["RangedKernels", "rank", "local_ids", "sort_edges", "first_touch", "cheapest_sorted",
           "lightest_parallel", "cheapest_rows", "positions", "sparse_values"]


def _stable_argsort(a, xp):
    return np.argsort(a, kind="stable") if xp is np else xp.argsort(a)  # CuPy's argsort is stable


def _heads(sorted_values, xp):
    """Where each run of equal values of a sorted array starts."""
    head = xp.ones(sorted_values.shape[0], dtype=bool)
    head[1:] = sorted_values[1:] != sorted_values[:-1]
    return head


def _zeros(xp):
    return xp.zeros(0, xp.int64)


def rank(values, xp=np):
    """``(distinct, inverse)``: the sorted distinct values and each value's index among them (int64)."""
    values = xp.asarray(values)
    if values.shape[0] == 0:
        return values.copy(), _zeros(xp)
    ids, inverse = xp.unique(values, return_inverse=True)
    return ids, inverse.reshape(-1).astype(xp.int64)


def local_ids(u, v, xp=np):
    """``(ids, lu, lv)``: the sorted distinct ids (int64) edges ``(u, v)`` touch, each end's index into them."""
    m = u.shape[0]
    ids, inv = rank(xp.concatenate([xp.asarray(u).astype(xp.int64), xp.asarray(v).astype(xp.int64)]), xp)
    return ids, inv[:m], inv[m:]


def sort_edges(u, v, key, eid, xp=np):
    """The edges in the strict ``(key, eid)`` order."""
    u, v, key, eid = (xp.asarray(a) for a in (u, v, key, eid))
    order = _stable_argsort(eid, xp)
    order = order[_stable_argsort(key[order], xp)]
    return u[order], v[order], key[order], eid[order]


def first_touch(lu, lv, k, xp=np):
    """The first edge (position) at each of ``k`` local ids, ``len(lu)`` where none is: the edges' ends
    sorted by position, then stably by local id, the head of each id's run."""
    lu, lv = xp.asarray(lu), xp.asarray(lv)
    m = lu.shape[0]
    first = xp.full(int(k), m, dtype=xp.int64)
    if m == 0:
        return first
    at = xp.concatenate([lu, lv]).astype(xp.int64)
    pos = xp.concatenate([xp.arange(m, dtype=xp.int64)] * 2)
    order = _stable_argsort(pos, xp)
    order = order[_stable_argsort(at[order], xp)]
    at, pos = at[order], pos[order]
    head = _heads(at, xp)
    first[at[head]] = pos[head]
    return first


def cheapest_sorted(ids, lu, lv, u, v, key, eid, xp=np):
    """The cheapest edge leaving each component edges in the ``(key, eid)`` order touch (the first one
    touching it): ``(comp, key, eid, other)``, rows by ``comp``."""
    lu, lv = xp.asarray(lu), xp.asarray(lv)
    m = lu.shape[0]
    if m == 0:
        z = _zeros(xp)
        return z, xp.zeros(0, xp.uint64), z.copy(), z.copy()
    ids, u, v, key, eid = (xp.asarray(a) for a in (ids, u, v, key, eid))
    first = first_touch(lu, lv, ids.shape[0], xp)
    at = xp.flatnonzero(first < m)
    f = first[at]
    other = xp.where(lu[f] == at, v[f], u[f])
    return ids[at], key[f], eid[f], other.astype(xp.int64)


def lightest_parallel(lu, lv, k, xp=np):
    """Positions (ascending) of the first edge of each unordered pair of ``k`` local ids."""
    lu, lv = xp.asarray(lu), xp.asarray(lv)
    if lu.shape[0] == 0:
        return _zeros(xp)
    a = xp.minimum(lu, lv).astype(xp.int64)
    b = xp.maximum(lu, lv).astype(xp.int64)
    pair = a * np.int64(k) + b
    order = _stable_argsort(pair, xp)  # positions ascending within a pair
    return xp.sort(order[_heads(pair[order], xp)]).astype(xp.int64)


def cheapest_rows(c, key, eid, span, xp=np):
    """For each of ``span`` slots, the row with the least ``(key, eid)`` among those at it (``c``: each
    row's slot; the first such row on a tie): the rows, in slot order."""
    c, key, eid = xp.asarray(c), xp.asarray(key), xp.asarray(eid)
    if c.shape[0] == 0:
        return _zeros(xp)
    order = _stable_argsort(eid, xp)
    order = order[_stable_argsort(key[order], xp)]
    order = order[_stable_argsort(c[order], xp)]
    return order[_heads(c[order], xp)].astype(xp.int64)


def positions(table, ids, xp=np):
    """Where each of ``ids`` goes in ``table`` (both sorted ascending): the left insertion points."""
    ids = xp.asarray(ids)
    if ids.shape[0] == 0:
        return _zeros(xp)
    return xp.searchsorted(xp.asarray(table).astype(xp.int64), ids.astype(xp.int64)).astype(xp.int64)


def sparse_values(ids, values, lo, fin, asked, xp=np):
    """The values of the ids ``asked`` (sorted, distinct) in a map kept over the ids present only; an absent
    id ``x`` is ``-(F + 1)``, ``F = fin +`` its rank among the absent ids from ``lo``."""
    asked = xp.asarray(asked).astype(xp.int64)
    if asked.shape[0] == 0:
        return _zeros(xp)
    ids, values = xp.asarray(ids).astype(xp.int64), xp.asarray(values).astype(xp.int64)
    n = ids.shape[0]
    j = xp.searchsorted(ids, asked)
    absent = -(np.int64(fin) + (asked - np.int64(lo)) - j + 1)
    if n == 0:
        return absent
    jc = xp.minimum(j, n - 1)
    return xp.where((j < n) & (ids[jc] == asked), values[jc], absent)


def _host(result):
    if isinstance(result, tuple):
        return tuple(to_host(a) for a in result)
    return to_host(result)


class RangedKernels:
    """The ranged kernels as methods of a backend over ``self.xp`` (see :class:`mst_dist.kernels.contract.Backend`)."""

    xp = np

    def rank(self, values):
        return _host(rank(values, self.xp))

    def local_ids(self, u, v):
        return _host(local_ids(u, v, self.xp))

    def sort_edges(self, u, v, key, eid):
        return _host(sort_edges(u, v, key, eid, self.xp))

    def first_touch(self, lu, lv, k):
        return _host(first_touch(lu, lv, k, self.xp))

    def cheapest_sorted(self, ids, lu, lv, u, v, key, eid):
        return _host(cheapest_sorted(ids, lu, lv, u, v, key, eid, self.xp))

    def lightest_parallel(self, lu, lv, k):
        return _host(lightest_parallel(lu, lv, k, self.xp))

    def cheapest_rows(self, c, key, eid, span):
        return _host(cheapest_rows(c, key, eid, span, self.xp))

    def positions(self, table, ids):
        return _host(positions(table, ids, self.xp))

    def sparse_values(self, ids, values, lo, fin, asked):
        return _host(sparse_values(ids, values, lo, fin, asked, self.xp))

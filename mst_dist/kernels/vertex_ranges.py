"""Array functions of rounds whose per-vertex state is cut into ranges of component ids.

The component id space ``[0, n)`` is cut by ``bounds`` (``R + 1`` ascending
ints, ``bounds[0] == 0``, ``bounds[-1] == n``) into ``R`` ranges, each owned
by one task.  A chunk never holds an ``n``-sized array: it works on the ids
it touches, and asks the owners of their ranges for what it needs.  These
are the host glue of that (NumPy, no Dask): splitting requests by owner and
putting the answers back in place, narrowing what crosses workers, cutting
candidate tables by range and merging them.  The kernels under them (a
chunk's strict order, local ids and cheapest edges, a range's lookups) are
the contract's ranged functions
(:data:`mst_dist.kernels.contract.RANGED_FUNCTIONS`): the functions here
that need one take the backend ``kern`` whose kernels they run.

The strict order is ``(key, eid)``: ``key`` is the weight's order-preserving
``uint64`` image, ``eid`` the edge id.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


__all__ = ["distinct", "narrow", "even_bounds", "owner_of", "split_by_owner", "put_back", "Split", "EndsSplit",
           "cut_sorted", "cut_ends", "cut_values", "ValuesSplit", "answers_of", "SPARSE", "few", "merge_cheapest",
           "split_candidates", "EMPTY_CANDIDATES"]


def distinct(a):
    """The sorted distinct values of ``a``: one sort and a comparison of neighbours.

    ``np.unique`` without ``return_*`` hashes since NumPy 2.3, which is
    much slower than a sort on integer ids.

    >>> distinct(np.array([5, 1, 5, 3, 1])).tolist()
    [1, 3, 5]
    """
    s = np.sort(np.asarray(a).ravel())
    if s.shape[0] < 2:
        return s
    keep = np.empty(s.shape[0], bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


_I32 = np.iinfo(np.int32)


def narrow(a, is_sorted=False):
    """Integers ``a`` as int32 where every value fits, else as they are: what crosses workers is half the
    bytes.  Whoever reads them widens them again (:func:`answers_of`), so int64 stays the type at the
    edges of the system.

    >>> narrow(np.array([3, -1])).dtype, narrow(np.array([2**40])).dtype
    (dtype('int32'), dtype('int64'))
    """
    if a.dtype != np.int64 or not a.shape[0]:
        return a
    lo, hi = (a[0], a[-1]) if is_sorted else (a.min(), a.max())
    return a.astype(np.int32) if _I32.min <= lo and hi <= _I32.max else a


def even_bounds(n, ranges):
    """``ranges`` (at most ``n``, at least 1) nearly equal ranges of ``[0, n)``, as ``R + 1`` bounds.

    >>> even_bounds(10, 3).tolist()
    [0, 3, 7, 10]
    """
    r = max(1, min(int(ranges), int(n))) if n else 1
    return np.round(np.linspace(0, int(n), r + 1)).astype(np.int64)


def owner_of(ids, bounds):
    """The range (index into ``bounds``) of each id."""
    return np.searchsorted(bounds, ids, side="right") - 1


def split_by_owner(ids, bounds):
    """``(order, parts)``: ``ids[order]`` grouped by owner; ``parts[r]`` the ids owned by range ``r``.

    >>> order, parts = split_by_owner(np.array([5, 1, 8, 2]), np.array([0, 3, 10]))
    >>> [p.tolist() for p in parts]
    [[1, 2], [5, 8]]
    """
    ids = np.asarray(ids)
    own = owner_of(ids, bounds)
    order = np.argsort(own, kind="stable")
    cuts = np.searchsorted(own[order], np.arange(bounds.shape[0]))
    grouped = ids[order]
    return order, [grouped[cuts[r]:cuts[r + 1]] for r in range(bounds.shape[0] - 1)]


class Split(NamedTuple):
    """Sorted, distinct ids cut by owner: owner ``r`` is asked for ``ids[cuts[r]:cuts[r + 1]]``."""

    ids: np.ndarray
    cuts: np.ndarray

    def part(self, r):
        return self.ids[self.cuts[r]:self.cuts[r + 1]]


class EndsSplit(NamedTuple):
    """A :class:`Split` of the distinct ids a chunk's edges touch, with each end's index into them.

    ``lu``/``lv`` (int32: a chunk touches fewer than 2**31 ids) let the
    requester put the answers on its edges without sorting its ids again.
    """

    ids: np.ndarray
    cuts: np.ndarray
    lu: np.ndarray
    lv: np.ndarray

    def part(self, r):
        return self.ids[self.cuts[r]:self.cuts[r + 1]]


def cut_ends(kern, u, v, bounds) -> EndsSplit:
    """The distinct ids of edges ``(u, v)`` cut by the ranges of ``bounds``, and each end's index
    (``kern``'s ``local_ids``).

    >>> from mst_dist.kernels import backend
    >>> s = cut_ends(backend("reference"), np.array([5, 1]), np.array([1, 8]), np.array([0, 3, 10]))
    >>> [s.part(r).tolist() for r in range(2)], s.lu.tolist(), s.lv.tolist()
    ([[1], [5, 8]], [1, 0], [0, 2])
    """
    ids, lu, lv = kern.local_ids(u, v)
    return EndsSplit(narrow(ids, is_sorted=True), np.searchsorted(ids, bounds), lu.astype(np.int32),
                     lv.astype(np.int32))


class ValuesSplit(NamedTuple):
    """A :class:`Split` of the distinct values of an array, with each value's index into them (``at``):
    the answers go back on the array as ``answers[at]``, with no second search."""

    ids: np.ndarray
    cuts: np.ndarray
    at: np.ndarray

    def part(self, r):
        return self.ids[self.cuts[r]:self.cuts[r + 1]]


def cut_values(kern, values, bounds) -> ValuesSplit:
    """The distinct ``values`` cut by the ranges of ``bounds`` (``kern``'s ``rank``), and each value's index
    among them.

    >>> from mst_dist.kernels import backend
    >>> s = cut_values(backend("reference"), np.array([5, 1, 5, 8]), np.array([0, 3, 10]))
    >>> [s.part(r).tolist() for r in range(2)], s.at.tolist()
    ([[1], [5, 8]], [1, 0, 1, 2])
    """
    ids, at = kern.rank(values)
    return ValuesSplit(narrow(ids, is_sorted=True), np.searchsorted(ids, bounds), at)


def cut_sorted(ids, bounds) -> Split:
    """Sorted distinct ``ids`` cut by the ranges of ``bounds`` (no copy: each owner's ids are a slice).

    >>> s = cut_sorted(np.array([1, 2, 5, 8]), np.array([0, 3, 10]))
    >>> [s.part(r).tolist() for r in range(2)]
    [[1, 2], [5, 8]]
    """
    return Split(narrow(ids, is_sorted=True), np.searchsorted(ids, bounds))


def answers_of(split: Split, answers, dtype=np.int64):
    """The owners' answers to a :class:`Split`, aligned with its ids."""
    if not answers:
        return np.zeros(0, dtype)
    return np.concatenate([np.asarray(a, dtype=dtype) for a in answers])


def put_back(order, answers, dtype=np.int64):
    """The answers to the ids of :func:`split_by_owner`, in the ids' own order."""
    out = np.empty(order.shape[0], dtype=dtype)
    if order.shape[0]:
        out[order] = np.concatenate([np.asarray(a, dtype=dtype) for a in answers])
    return out


#: A candidate table with no row: ``(comp, key, eid, other)``.
EMPTY_CANDIDATES = (np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64))


#: A range's state is kept over the components present where they are fewer than ``1 / SPARSE`` of the range
SPARSE = 4


def few(present, width):
    """Whether ``present`` components of a range ``width`` wide are few enough (:data:`SPARSE`) that state
    over them alone beats state over the range."""
    return SPARSE * present < width


def merge_cheapest(kern, lo, hi, *tables):
    """Candidate tables of components in ``[lo, hi)`` combined: the cheapest row of each (associative,
    commutative), ``kern``'s ``cheapest_rows``.  Scratch of ``hi - lo`` entries (one range's share, as its
    owner holds), or, where the rows are few beside the range (a worker's own chunks merged first), of the
    components they hold: one slot per distinct component, found by ``kern``'s ``rank``."""
    tables = [t for t in tables if t[0].shape[0]]
    if not tables:
        return EMPTY_CANDIDATES
    if len(tables) == 1:
        return tables[0]
    comp, key, eid, other = (np.concatenate([t[j] for t in tables]) for j in range(4))
    if few(comp.shape[0], hi - lo):
        ids, slot = kern.rank(comp)
        row = kern.cheapest_rows(slot, key, eid, ids.shape[0])
    else:
        row = kern.cheapest_rows(comp - lo, key, eid, hi - lo)
    return comp[row], key[row], eid[row], other[row]


def split_candidates(table, bounds):
    """A candidate table (sorted by ``comp``) cut into the ranges of ``bounds``; components as int32 where
    they fit (:func:`narrow`: the candidates cross workers to their ranges' owners)."""
    cuts = np.searchsorted(table[0], bounds)
    table = (narrow(table[0], is_sorted=True), table[1], table[2], narrow(table[3]))
    return [tuple(col[cuts[r]:cuts[r + 1]] for col in table) for r in range(bounds.shape[0] - 1)]

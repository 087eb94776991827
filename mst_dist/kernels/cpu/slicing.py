"""One pass over raw edges, fused: keys, a slice of the order, relabel, self-loops (role: filter-edges).

A streaming pass (and a pass over the caller's arrays) keeps, of each raw
chunk ``(src, dst, weight)``, only the edges of one slice of the strict
``(weight, edge id)`` order that still join two components.  Done as
prepare, split, split and filter, that writes every edge three times before
almost all of them are dropped; :func:`slice_edges` reads each edge once and
writes only the ones kept (mark, then write the marked ones, in parallel
blocks), so a pass's memory is its output and a byte an edge of marks.

The weight key is computed in the loop for float64 (from its bits), signed
and unsigned integers and bools, exactly as :func:`.chunk.weight_keys`
computes it; other float dtypes take the keys precomputed.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mst_dist.kernels.contract import Chunk, packing_for, to_host
from mst_dist.kernels.cpu.arena import alloc_soa, blocks, nthreads
from mst_dist.kernels.cpu.chunk import id_dtype, weight_keys

__all__ = ["slice_edges", "slice_many"]

_SIGN = np.uint64(1 << 63)

# how the kernel reads a weight: float64 bits, a signed integer, an unsigned one (or bool), a key
_F64, _SIGNED, _UNSIGNED, _KEY = 0, 1, 2, 3


@njit(inline="always")
def _key(w, i, mode):
    if mode == _F64:
        b = np.uint64(w[i])
        if b == _SIGN:  # -0.0 sorts with +0.0
            b = np.uint64(0)
        if b >> np.uint64(63):
            return ~b
        return b | _SIGN
    if mode == _SIGNED:
        return np.uint64(np.int64(w[i])) ^ _SIGN
    return np.uint64(w[i])


@njit(inline="always")
def _ends(src, dst, vmap, relabel, i):
    a = np.int64(src[i])
    b = np.int64(dst[i])
    if relabel:
        return np.int64(vmap[a]), np.int64(vmap[b])
    return a, b


@njit(inline="always")
def _kept(a, b, k, e, has_lo, lk, le, has_hi, hk, he):
    if a == b:
        return False
    if has_hi and (k > hk or (k == hk and e > he)):
        return False
    if has_lo and (k < lk or (k == lk and e <= le)):
        return False
    return True


@njit(parallel=True, nogil=True, cache=True)
def _mark(src, dst, w, mode, vmap, relabel, offset, has_lo, lk, le, has_hi, hk, he, bounds, keep):
    """Mark each kept edge in ``keep``; the count kept per block (the write then reads only those)."""
    T = bounds.shape[0] - 1
    counts = np.zeros(T, np.int64)
    for t in prange(T):
        c = 0
        for i in range(bounds[t], bounds[t + 1]):
            a, b = _ends(src, dst, vmap, relabel, i)
            ok = _kept(a, b, _key(w, i, mode), offset + i, has_lo, lk, le, has_hi, hk, he)
            keep[i] = ok
            if ok:
                c += 1
        counts[t] = c
    return counts


@njit(parallel=True, nogil=True, cache=True)
def _write_marked(src, dst, w, mode, vmap, relabel, offset, bounds, keep, starts, u, v, k, e):
    T = bounds.shape[0] - 1
    for t in prange(T):
        j = starts[t]
        for i in range(bounds[t], bounds[t + 1]):
            if keep[i]:
                a, b = _ends(src, dst, vmap, relabel, i)
                u[j] = a
                v[j] = b
                k[j] = _key(w, i, mode)
                e[j] = offset + i
                j += 1


def _weights(w):
    """``(array, mode)``: how the kernel reads the weights (no copy for the common dtypes)."""
    k = w.dtype.kind
    if k == "f" and w.dtype == np.float64:
        return np.ascontiguousarray(w).view(np.uint64), _F64
    if k == "i":
        return w, _SIGNED
    if k in "ub":
        return (w.view(np.uint8) if k == "b" else w), _UNSIGNED
    return weight_keys(w), _KEY


def _ids(a):
    a = to_host(a)
    if a.dtype == np.uint64:
        return a.view(np.int64)  # validated: ids are < 2**63
    return a


def _bounds(lo, hi):
    has_lo, has_hi = lo is not None, hi is not None
    lk, le = (np.uint64(lo[0]), np.int64(lo[1])) if has_lo else (np.uint64(0), np.int64(0))
    hk, he = (np.uint64(hi[0]), np.int64(hi[1])) if has_hi else (np.uint64(0), np.int64(0))
    return has_lo, lk, le, has_hi, hk, he


def _vertex_map(vmap):
    """The vertex map as the kernels take it: int32 whenever its values fit (no map: an int32
    placeholder), so the kernels have one compiled form for every pass."""
    if vmap is None:
        return None
    vm = to_host(vmap)
    if vm.dtype != np.int32 and (not vm.shape[0] or int(vm.max()) <= np.iinfo(np.int32).max):
        vm = vm.astype(np.int32)
    return vm


def _args(raw, offset, vmap, lo, hi):
    """The kernels' arguments for one raw chunk (the weights read in place where the dtype allows)."""
    src, dst, w = (to_host(a) for a in raw[:3])
    src, dst = _ids(src), _ids(dst)
    wk, mode = _weights(w)
    m = src.shape[0]
    relabel = vmap is not None
    vm = vmap if relabel else _NO_MAP
    bounds = blocks(m, max(1, min(nthreads() * 4, m // 65536 + 1)))
    return (src, dst, wk, mode, vm, relabel, np.int64(offset), *_bounds(lo, hi), bounds), w.dtype


_NO_MAP = np.zeros(1, np.int32)


def slice_edges(raw, offset, n_vertices, vmap=None, lo=None, hi=None):
    """The edges of ``raw`` in the slice ``lo < (key, eid) <= hi`` that join two components.

    ``raw = (src, dst, weight)``; edge ``i`` has the global id ``offset + i``.
    Endpoints are relabelled by ``vmap`` (vertex -> component; ``None``: the
    identity) and self-loops (after relabelling) dropped.  A threshold is
    ``(key, eid)``; ``None`` for no bound.  Returns a plain host chunk,
    edges in their raw order, arrays of exactly the kept size (one buffer
    of its own, not the scratch arena's: a streaming pass's chunks live
    until their slice is solved).
    """
    return slice_many([raw], [offset], n_vertices, vmap, lo, hi, arena=False)


def slice_many(raws, offsets, n_vertices, vmap=None, lo=None, hi=None, arena=True):
    """:func:`slice_edges` of several raw chunks into one chunk, chunks in the given order.

    Each chunk's kept edges are marked in one read of every edge (a byte an
    edge while the marks live), then written straight to their place in one
    skewed buffer (:func:`.arena.alloc_soa`; ``arena``: from the scratch
    arena) by a second loop that touches only the marked edges: a pass that
    keeps few edges reads the rest once.  No per-chunk arrays, no
    concatenated copy.  The single-task solve over the caller's arrays
    (:func:`.solve.solve_raw`) slices with it.
    """
    vmap = _vertex_map(vmap)  # once for all the chunks
    work = [_args(r, off, vmap, lo, hi) for r, off in zip(raws, offsets)]
    marks = [np.empty(a[0].shape[0], np.bool_) for a, _ in work]
    counts = [_mark(*a, mk) for (a, _), mk in zip(work, marks)]
    idt = id_dtype(n_vertices)
    u, v, k, e = alloc_soa(int(sum(int(c.sum()) for c in counts)), [idt, idt, np.uint64, np.int64], arena=arena)
    pos = 0
    for (a, _), mk, cnt in zip(work, marks, counts):
        starts = np.zeros(cnt.shape[0], np.int64)
        np.cumsum(cnt[:-1], out=starts[1:])
        if int(cnt.sum()):
            _write_marked(*a[:7], a[13], mk, starts + pos, u, v, k, e)
        pos += int(cnt.sum())
    packings = {packing_for(d) for _, d in work}
    return Chunk(u, v, k, e, packing=packings.pop() if len(packings) == 1 else "rank")

"""CPU chunks: validation, weight keys, prepare, concatenation (role: prepare).

A CPU chunk is a :class:`~mst_dist.kernels.contract.Chunk` in the plain form
with host arrays, carved from one skewed buffer (:func:`.arena.alloc_soa`).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mst_dist.kernels.contract import Chunk, packing_for, to_host
from mst_dist.kernels.cpu.arena import alloc_soa, blocks, empty, nthreads

__all__ = ["first_invalid_edge", "weight_keys", "id_dtype", "adopt", "prepare", "prepare_many",
           "concat"]

_SIGN = np.uint64(1 << 63)


# ---------------------------------------------------------------------------
# validation and keys
# ---------------------------------------------------------------------------

@njit(parallel=True, nogil=True, cache=True)
def _first_invalid(src, dst, w, check_w, n, bounds):
    T = bounds.shape[0] - 1
    first = np.full(T, -1, np.int64)
    mx = np.full(T, -1, np.int64)
    for t in prange(T):
        hi_id = np.int64(-1)
        for i in range(bounds[t], bounds[t + 1]):
            a = np.int64(src[i])
            b = np.int64(dst[i])
            bad = a < 0 or b < 0 or (n >= 0 and (a >= n or b >= n))
            if check_w:
                x = w[i]
                if not np.isfinite(x):
                    bad = True
            if bad:
                first[t] = i
                break
            if a > hi_id:
                hi_id = a
            if b > hi_id:
                hi_id = b
        mx[t] = hi_id
    return first, mx


def first_invalid_edge(src, dst, w, n_vertices):
    """First edge with a negative/out-of-range id or a NaN/inf weight.

    Returns ``(index, reason, max_id)``; ``index`` is -1 when all are valid
    (then ``max_id`` is the largest id, -1 for no edges).
    """
    m = src.shape[0]
    check_w = w is not None and w.dtype.kind == "f"
    wa = w if check_w else np.zeros(1, np.float64)
    bounds = blocks(m, max(1, min(nthreads() * 4, m // 65536 + 1)))
    if src.dtype == np.uint64 or dst.dtype == np.uint64:
        big = np.uint64(2**63 - 1)
        if m and (src.max() > big or dst.max() > big):
            i = int(np.flatnonzero((src > big) | (dst > big))[0])
            return i, "vertex id out of range", -1
        src = src.view(np.int64)
        dst = dst.view(np.int64)
    first, mx = _first_invalid(src, dst, wa, check_w, -1 if n_vertices is None else int(n_vertices), bounds)
    hits = first[first >= 0]
    if hits.size:
        i = int(hits.min())
        a, b = int(src[i]), int(dst[i])
        if a < 0 or b < 0:
            reason = "negative vertex id"
        elif check_w and not np.isfinite(w[i]):
            reason = "weight is NaN" if np.isnan(w[i]) else "weight is infinite"
        else:
            reason = "vertex id out of range"
        return i, reason, -1
    return -1, "", int(mx.max()) if m else -1


@njit(parallel=True, nogil=True, cache=True)
def _keys_f64(bits, out):
    for i in prange(bits.shape[0]):
        b = bits[i]
        if b == _SIGN:  # -0.0 sorts with +0.0
            b = np.uint64(0)
        if b >> np.uint64(63):
            out[i] = ~b
        else:
            out[i] = b | _SIGN


@njit(parallel=True, nogil=True, cache=True)
def _keys_i64(w, out):
    for i in prange(w.shape[0]):
        out[i] = np.uint64(w[i]) ^ _SIGN


def weight_keys(w):
    """Order-preserving ``uint64`` key of each weight (see reference.weight_keys)."""
    w = np.asarray(w)
    out = empty(w.shape[0], np.uint64)
    k = w.dtype.kind
    if k == "f":
        _keys_f64(np.ascontiguousarray(w, dtype=np.float64).view(np.uint64), out)
    elif k == "i":
        _keys_i64(np.ascontiguousarray(w, dtype=np.int64), out)
    elif k in "ub":  # unsigned (bool too): the value, as the reference
        out[:] = w
    else:
        raise TypeError(f"weights of dtype {w.dtype} have no order-preserving key")
    return out


@njit(nogil=True, cache=True)
def _prepare(src, dst, key, offset, u, v, k, e):
    j = 0
    for i in range(src.shape[0]):
        a = src[i]
        b = dst[i]
        if a != b:
            u[j] = a
            v[j] = b
            k[j] = key[i]
            e[j] = offset + i
            j += 1
    return j


def id_dtype(n_vertices):
    """Narrowest id dtype for a graph: int32 below 2**31 vertices."""
    return np.int32 if n_vertices < 2**31 else np.int64


def prepare(raw, offset, n_vertices):
    """A raw chunk ``(src, dst, weight)`` as a plain host chunk, self-loops dropped (role: prepare)."""
    src, dst, w = (to_host(a) for a in raw[:3])
    key = weight_keys(w)
    m = src.shape[0]
    idt = id_dtype(n_vertices)
    u, v, k, e = alloc_soa(m, [idt, idt, np.uint64, np.int64])
    j = _prepare(src, dst, key, np.int64(offset), u, v, k, e)
    return Chunk(u[:j], v[:j], k[:j], e[:j], packing=packing_for(w.dtype))


def adopt(chunk):
    """Any chunk as a plain host chunk (a packed one is gathered; a device one copied here)."""
    if chunk.pk is None and isinstance(chunk.u, np.ndarray):
        return chunk
    u, v, key, eid = (to_host(a) for a in chunk.edges())
    return Chunk(u, v, key, eid, packing=chunk.packing, h2d=chunk.h2d)


@njit(parallel=True, nogil=True, cache=True)
def _copy_into(cu, cv, ck, ce, o, u, v, k, e):
    for i in prange(cu.shape[0]):
        u[o + i] = cu[i]
        v[o + i] = cv[i]
        k[o + i] = ck[i]
        e[o + i] = ce[i]


def concat(chunks, n_vertices):
    """One chunk from several (parallel copy into one skewed buffer; chunks in the given order)."""
    chunks = [adopt(c) for c in chunks]
    packings = {c.packing for c in chunks}
    packing = packings.pop() if len(packings) == 1 else "rank"
    m = sum(len(c) for c in chunks)
    idt = id_dtype(n_vertices)
    u, v, k, e = alloc_soa(m, [idt, idt, np.uint64, np.int64])
    o = 0
    # one parallel copy per chunk: typed lists of arrays would cost a compilation in every process
    for c in chunks:
        if len(c):
            _copy_into(np.ascontiguousarray(c.u, dtype=idt), np.ascontiguousarray(c.v, dtype=idt),
                       c.key, c.eid, np.int64(o), u, v, k, e)
            o += len(c)
    return Chunk(u, v, k, e, packing=packing, h2d=sum(c.h2d for c in chunks))


@njit(parallel=True, nogil=True, cache=True)
def _count_nonloops(src, dst, bounds):
    nb = bounds.shape[0] - 1
    out = np.zeros(nb, np.int64)
    for b in prange(nb):
        a = 0
        for i in range(bounds[b], bounds[b + 1]):
            if src[i] != dst[i]:
                a += 1
        out[b] = a
    return out


@njit(parallel=True, nogil=True, cache=True)
def _prepare_blocks(src, dst, key, offset, bounds, outpos, u, v, k, e):
    for b in prange(bounds.shape[0] - 1):
        j = outpos[b]
        for i in range(bounds[b], bounds[b + 1]):
            a = src[i]
            c = dst[i]
            if a != c:
                u[j] = a
                v[j] = c
                k[j] = key[i]
                e[j] = offset + i
                j += 1


def prepare_many(raws, offsets, n_vertices):
    """Several raw chunks prepared into one plain host chunk, self-loops dropped (role: prepare).

    ``raws`` is a list of ``(src, dst, weight)``; ``offsets`` the global id of
    each chunk's first edge.  Each raw chunk is cut into blocks so every
    thread has work: a parallel count of the edges kept per block, then a
    parallel copy of each block to its place.
    """
    idt = id_dtype(n_vertices)
    raws = [tuple(to_host(a) for a in r[:3]) for r in raws]
    packings = {packing_for(r[2].dtype) for r in raws}
    packing = packings.pop() if len(packings) == 1 else "rank"
    raws = [(r, int(off)) for r, off in zip(raws, offsets) if r[0].shape[0]]
    if not raws:
        return Chunk(*alloc_soa(0, [idt, idt, np.uint64, np.int64]), packing=packing)
    sdt = np.result_type(*[r[0].dtype for r, _ in raws], *[r[1].dtype for r, _ in raws])
    if sdt.kind == "u" and sdt.itemsize == 8:
        sdt = np.dtype(np.int64)  # validated: ids are < 2**63
    T = nthreads()
    work = []
    for (s, d, w), off in raws:
        s = np.ascontiguousarray(s, dtype=sdt)
        d = np.ascontiguousarray(d, dtype=sdt)
        bounds = blocks(s.shape[0], max(1, min(4 * T, s.shape[0] // (1 << 16))))
        work.append((s, d, weight_keys(w), off, bounds, _count_nonloops(s, d, bounds)))
    m = int(sum(int(x[5].sum()) for x in work))
    u, v, k, e = alloc_soa(m, [idt, idt, np.uint64, np.int64])
    pos = 0
    for s, d, key, off, bounds, counts in work:
        outpos = pos + np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        _prepare_blocks(s, d, key, np.int64(off), bounds, outpos, u, v, k, e)
        pos += int(counts.sum())
    return Chunk(u, v, k, e, packing=packing)

"""GPU chunks: packed keys, prepare, adoption of any chunk, concatenation (role: prepare).

A GPU chunk is a :class:`~mst_dist.kernels.contract.Chunk` in the packed
form: every edge carries one 64-bit key ``pk = (hi << 32) | row``, where
``hi`` is a 32-bit order-preserving image of its weight and ``row`` its row
in the chunk's table of weight keys and edge ids (as prepared, ids
ascending).  So ``pk`` orders the chunk's edges exactly as the strict
``(weight, edge id)`` order does, and the cheapest edge of a component is
one atomic min of ``pk`` over its edges.  How ``hi`` is made depends on the
weight dtype (:func:`mst_dist.kernels.contract.packing_for`):

=========================================  ===========  =====================
weights                                    packing      ``hi``
=========================================  ===========  =====================
float16, float32                           ``"f32"``    IEEE bits, sign-flipped
int8, int16, int32                         ``"i32"``    two's complement, sign bit flipped
uint8, uint16, uint32, bool                ``"u32"``    the value
float64, int64, uint64 (do not fit)        ``"rank"``   exact dense rank of the
                                                        weight in the chunk (a sort
                                                        once, when the chunk is packed)
=========================================  ===========  =====================

A rank is only comparable inside its chunk; candidates leave a chunk as the
common records (full 64-bit weight key, global edge id), so merging
candidates of GPU and CPU chunks is exact.  A chunk holds at most
``2**32 - 1`` edges; a run may hold any number (edge ids are int64).
"""
from __future__ import annotations

import numpy as np

from mst_dist.kernels.contract import Chunk, packing_for
from mst_dist.kernels.gpu.device import to_device
from mst_dist.kernels.reference import weight_keys

__all__ = ["MAX_CHUNK", "MAXKEY", "hi_keys", "pack", "prepare", "adopt", "concat", "with_edges"]

MAXKEY = np.uint64(0xFFFFFFFFFFFFFFFF)
SHIFT = np.uint64(32)
_SIGN64 = np.uint64(1 << 63)
_I32_BASE = np.uint64((1 << 63) - (1 << 31))
_SIGN32 = np.uint32(1 << 31)
#: The most edges one GPU chunk holds (a row index fits 32 bits).
MAX_CHUNK = 2**32 - 1


def hi_keys(key, packing, xp):
    """High 32 bits (as ``uint64``) of the packed keys, from the 64-bit weight keys.

    ``key`` is :func:`mst_dist.kernels.reference.weight_keys` of the weights.
    For the direct packings the 32-bit image is computed from it exactly (the
    weights fit); for ``"rank"`` it is the dense rank of ``key`` among the
    given keys.
    """
    if packing == "u32":
        return key
    if packing == "i32":
        return key - _I32_BASE
    if packing == "f32":
        bits = xp.where(key >= _SIGN64, key ^ _SIGN64, ~key)
        b32 = bits.view(xp.float64).astype(xp.float32).view(xp.uint32)
        neg = b32 >= _SIGN32
        return xp.where(neg, ~b32, b32 | _SIGN32).astype(xp.uint64)
    if packing == "rank":
        if key.shape[0] == 0:
            return key.copy()
        _, inv = xp.unique(key, return_inverse=True)
        return inv.reshape(-1).astype(xp.uint64)
    raise ValueError(f"unknown packing {packing!r}")


def pack(hi, xp):
    """Packed keys ``(hi << 32) | row`` for rows ``0..m-1``."""
    m = hi.shape[0]
    if m > MAX_CHUNK:
        raise ValueError(f"a GPU chunk holds at most {MAX_CHUNK:,} edges, this one {m:,}: "
                         "use more partitions")
    return (hi << SHIFT) | xp.arange(m, dtype=xp.uint64)


def with_edges(chunk, u, v, pk, h2d=0):
    """``chunk`` with other live edges ``u, v, pk`` (same table, same packing)."""
    return Chunk(u, v, chunk.key, chunk.eid, pk, chunk.packing, h2d)


def _id_dtype(xp, n_vertices):
    return xp.int32 if n_vertices < 2**31 else xp.int64


def prepare(raw, offset, n_vertices, xp):
    """A raw chunk (host or device arrays) as a packed chunk on ``xp``, self-loops dropped (role: prepare)."""
    h2d = 0
    arrs = []
    for a in raw[:3]:
        d, nb = to_device(a, xp)
        arrs.append(d)
        h2d += nb
    src, dst, w = arrs
    packing = packing_for(w.dtype)
    pos = xp.flatnonzero(src != dst)
    idt = _id_dtype(xp, n_vertices)
    u = src[pos].astype(idt)
    v = dst[pos].astype(idt)
    key0 = weight_keys(w[pos], xp)
    eid0 = pos.astype(xp.int64) + np.int64(offset)
    pk = pack(hi_keys(key0, packing, xp), xp)
    return Chunk(u, v, key0, eid0, pk, packing, h2d)


def _ascending(eid, xp):
    return eid.shape[0] < 2 or bool(xp.all(eid[1:] > eid[:-1]))


def _from_edges(u, v, key, eid, packing, xp, h2d=0):
    """A packed chunk from live ``(u, v, key, eid)`` arrays on ``xp`` (ids ascending or made so)."""
    if not _ascending(eid, xp):
        order = xp.argsort(eid)
        u, v, key, eid = u[order], v[order], key[order], eid[order]
    pk = pack(hi_keys(key, packing, xp), xp)
    return Chunk(u, v, key, eid, pk, packing, h2d)


def adopt(chunk, xp):
    """Any chunk as a packed chunk on ``xp`` (bytes copied to the device added to ``h2d``)."""
    if chunk.pk is not None:
        if chunk.xp is xp:
            return chunk
        arrs, h2d = [], chunk.h2d
        for a in (chunk.u, chunk.v, chunk.key, chunk.eid, chunk.pk):
            d, nb = to_device(a, xp)
            arrs.append(d)
            h2d += nb
        return Chunk(*arrs, packing=chunk.packing, h2d=h2d)
    arrs, h2d = [], chunk.h2d
    for a in (chunk.u, chunk.v, chunk.key, chunk.eid):
        d, nb = to_device(a, xp)
        arrs.append(d)
        h2d += nb
    u, v, key, eid = arrs
    return _from_edges(u, v, key, eid.astype(xp.int64), chunk.packing, xp, h2d)


def concat(chunks, n_vertices, xp):
    """One packed chunk from several (moved to ``xp`` first), ids ascending."""
    chunks = [adopt(c, xp) for c in chunks]
    if len(chunks) == 1:
        return chunks[0]
    idt = _id_dtype(xp, n_vertices)
    if not chunks:
        z = xp.zeros(0, idt)
        return Chunk(z, z.copy(), xp.zeros(0, xp.uint64), xp.zeros(0, xp.int64), xp.zeros(0, xp.uint64),
                     "rank")
    packings = {c.packing for c in chunks}
    packing = packings.pop() if len(packings) == 1 else "rank"
    chunks = sorted(chunks, key=lambda c: int(c.eid[0]) if c.eid.shape[0] else 0)
    parts = [c.edges() for c in chunks]
    cols = [xp.concatenate([p[i] for p in parts]) for i in range(4)]
    h2d = sum(c.h2d for c in chunks)
    return _from_edges(cols[0].astype(idt), cols[1].astype(idt), cols[2], cols[3], packing, xp, h2d)

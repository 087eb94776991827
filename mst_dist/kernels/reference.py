"""The reference backend: every function of the kernel contract in plain array calls.

Written for clarity, not speed, over an array module ``xp`` (NumPy by
default; CuPy has the same calls), so the same formulation can serve a
device.  The conformance test holds the CPU and GPU backends equal to it.
Chunks are in the plain form (see :class:`mst_dist.kernels.contract.Chunk`).
"""
from __future__ import annotations

import time

import numpy as np

from mst_dist.kernels.contract import (Candidates, Chunk, RoundTrace, SolveRound, Solution, packing_for,
                                       slice_by_phases, take_to_host, to_host)
from mst_dist.kernels.ranged_xp import RangedKernels
from mst_dist.phases import Phase

__all__ = ["ReferenceKernels", "weight_keys", "first_invalid_edge", "group_min"]

_SIGN64 = np.uint64(1 << 63)


def weight_keys(w, xp=np):
    """Order-preserving ``uint64`` bits of a weight array (role: prepare).

    ``a < b`` as weights iff ``key(a) < key(b)`` as unsigned integers, for
    every integer and floating dtype.  Floats: the IEEE-754 bits with the sign
    bit flipped for positives and all bits flipped for negatives
    (``-0.0`` and ``+0.0`` compare equal and get the same key).  Signed
    integers: two's complement with the sign bit flipped.  Unsigned integers:
    unchanged.
    """
    w = xp.asarray(w)
    kind = w.dtype.kind
    if kind == "f":
        f = w.astype(xp.float64) + 0.0  # turns -0.0 into +0.0
        bits = f.view(xp.uint64)
        neg = (bits >> np.uint64(63)).astype(bool)
        return xp.where(neg, ~bits, bits | _SIGN64)
    if kind == "i":
        return w.astype(xp.int64).view(xp.uint64) ^ _SIGN64
    if kind in "ub":
        return w.astype(xp.uint64)
    raise TypeError(f"weights of dtype {w.dtype} have no order-preserving key")


def first_invalid_edge(src, dst, w, n_vertices, xp=np):
    """Index of the first edge with a bad endpoint or weight, or -1 (validation).

    Bad: a negative id, an id ``>= n_vertices`` (when ``n_vertices >= 0``), a
    NaN or infinite weight.
    """
    bad = (src < 0) | (dst < 0)
    if n_vertices >= 0:
        bad |= (src >= n_vertices) | (dst >= n_vertices)
    if w is not None and xp.asarray(w).dtype.kind == "f":
        bad |= ~xp.isfinite(w)
    idx = xp.flatnonzero(bad)
    if idx.size == 0:
        return -1
    return int(idx[0])


def group_min(comp, key, eid, other, xp=np):
    """The least ``(key, eid)`` row of each ``comp``, sorted by ``comp`` (map and merge's core)."""
    if comp.shape[0] == 0:
        z = xp.zeros(0, xp.int64)
        return z, xp.zeros(0, xp.uint64), z.copy(), z.copy()
    # three stable sorts: by comp, then key, then eid (CuPy's argsort is stable)
    order = _stable_argsort(eid, xp)
    order = order[_stable_argsort(key[order], xp)]
    order = order[_stable_argsort(comp[order], xp)]
    comp, key, eid, other = comp[order], key[order], eid[order], other[order]
    first = xp.ones(comp.shape[0], dtype=bool)
    first[1:] = comp[1:] != comp[:-1]
    return comp[first], key[first], eid[first], other[first]


def _stable_argsort(a, xp):
    return np.argsort(a, kind="stable") if xp is np else xp.argsort(a)


def _id_dtype(xp, n_vertices):
    return xp.int32 if n_vertices < 2**31 else xp.int64


class ReferenceKernels(RangedKernels):
    """The kernel contract over ``xp`` (see :class:`mst_dist.kernels.contract.Backend`); the ranged kernels
    are :mod:`mst_dist.kernels.ranged_xp`'s, over the same ``xp``."""

    name = "reference"
    #: The single-task solve over raw chunks is the CPU backend's alone.
    supports_raw_solve = False
    #: No scratch memory kept, no limit on a chunk, and no device memory of its own to plan for.
    scratch = None
    max_chunk_edges = None
    device_bytes_per_edge = 0

    def __init__(self, xp=np):
        self.xp = xp

    def __repr__(self):
        return f"ReferenceKernels(xp={self.xp.__name__})"

    @property
    def kind(self):
        """``"cpu"`` on NumPy, ``"gpu"`` on a device's array module."""
        return "cpu" if self.xp is np else "gpu"

    # -- validation and the forest's rows ------------------------------------

    def first_invalid_edge(self, src, dst, w, n_vertices):
        xp = self.xp
        src, dst = xp.asarray(src), xp.asarray(dst)
        w = None if w is None else xp.asarray(w)
        n = -1 if n_vertices is None else int(n_vertices)
        i = first_invalid_edge(src, dst, w, n, xp=xp)
        if i < 0:
            return -1, "", int(xp.maximum(src.max(), dst.max())) if src.shape[0] else -1
        a, b = int(src[i]), int(dst[i])
        if a < 0 or b < 0:
            return i, "negative vertex id", -1
        if n >= 0 and (a >= n or b >= n):
            return i, "vertex id out of range", -1
        return i, "weight is NaN" if bool(xp.isnan(w[i])) else "weight is infinite", -1

    def take_rows(self, src, dst, w, ids):
        return tuple(take_to_host(a, ids) for a in (src, dst, w))

    def device_memory(self):
        if self.xp is np:
            return None
        return int(self.xp.cuda.Device().mem_info[1])

    # -- memory ------------------------------------------------------------

    def to_device(self, a):
        xp = self.xp
        if xp is np:
            return to_host(a), 0
        if isinstance(a, xp.ndarray):
            return a, 0
        h = np.asarray(a)
        return xp.asarray(h), int(h.nbytes)

    def synchronize(self):
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()

    def adopt(self, chunk):
        u, v, key, eid = chunk.edges()
        arrs, h2d = [], chunk.h2d
        for a in (u, v, key, eid):
            d, nb = self.to_device(a)
            arrs.append(d)
            h2d += nb
        return Chunk(*arrs, packing=chunk.packing, h2d=h2d)

    def _empty(self, idt, packing="rank"):
        xp = self.xp
        return Chunk(xp.zeros(0, idt), xp.zeros(0, idt), xp.zeros(0, xp.uint64), xp.zeros(0, xp.int64),
                     packing=packing)

    # -- prepare -----------------------------------------------------------

    def prepare(self, raw, offset, n_vertices):
        xp = self.xp
        h2d = 0
        arrs = []
        for a in raw[:3]:
            d, nb = self.to_device(a)
            arrs.append(d)
            h2d += nb
        src, dst, w = arrs
        pos = xp.flatnonzero(src != dst)
        idt = _id_dtype(xp, n_vertices)
        return Chunk(src[pos].astype(idt), dst[pos].astype(idt), weight_keys(w[pos], xp),
                     pos.astype(xp.int64) + np.int64(offset), packing=packing_for(w.dtype), h2d=h2d)

    def prepare_many(self, raws, offsets, n_vertices):
        return self.concat([self.prepare(r, off, n_vertices) for r, off in zip(raws, offsets)],
                           n_vertices)

    def concat(self, chunks, n_vertices):
        xp = self.xp
        chunks = [self.adopt(c) for c in chunks]
        idt = _id_dtype(xp, n_vertices)
        packings = {c.packing for c in chunks}
        packing = packings.pop() if len(packings) == 1 else "rank"
        if not chunks:
            return self._empty(idt, packing)
        cols = [xp.concatenate([c.edges()[i] for c in chunks]) for i in range(4)]
        order = _stable_argsort(cols[3], xp)
        return Chunk(cols[0][order].astype(idt), cols[1][order].astype(idt), cols[2][order],
                     cols[3][order], packing=packing, h2d=sum(c.h2d for c in chunks))

    # -- a round -----------------------------------------------------------

    def map(self, chunk, n_comp, M=None):
        xp = self.xp
        if M is not None:
            chunk = self.filter_edges(chunk, M)
        u, v, key, eid = chunk.edges()
        comp = xp.concatenate([u, v]).astype(xp.int64)
        other = xp.concatenate([v, u]).astype(xp.int64)
        cand = group_min(comp, xp.concatenate([key, key]), xp.concatenate([eid, eid]).astype(xp.int64),
                         other, xp)
        return chunk, Candidates(*(to_host(a) for a in cand))

    def merge(self, parts):
        xp = self.xp
        parts = [p for p in parts if len(p)]
        if not parts:
            return Candidates.empty()
        cols = [xp.concatenate([self.to_device(p.arrays()[i])[0] for p in parts]) for i in range(4)]
        return Candidates(*(to_host(a) for a in group_min(*cols, xp)))

    def contract(self, cand, n_comp, finished_offset, finish=True):
        xp = self.xp
        comp, key, eid, other = (self.to_device(a)[0] for a in cand.arrays())
        parent = xp.arange(n_comp, dtype=xp.int64)
        parent[comp] = other
        mutual = (parent[other] == comp) & (comp < other)
        parent[comp[mutual]] = comp[mutual]
        hooked = parent[comp] != comp
        chosen = xp.sort(eid[hooked])
        while True:  # pointer jumping
            nxt = parent[parent]
            if bool(xp.all(nxt == parent)):
                break
            parent = nxt
        has = xp.zeros(n_comp, dtype=bool)
        has[comp] = True
        M, n_next, n_fin = self.filter_nodes(parent, has, finished_offset, finish)
        return M, to_host(chosen.astype(xp.int64)), n_next, n_fin

    def filter_nodes(self, root, has, finished_offset, finish=True):
        xp = self.xp
        root, _ = self.to_device(root)
        has, _ = self.to_device(has)
        n = root.shape[0]
        is_root = root == xp.arange(n)
        fin = is_root & ~has if finish else xp.zeros(n, dtype=bool)
        live = is_root & ~fin
        new_id = xp.cumsum(live) - 1
        fin_id = xp.cumsum(fin) - 1 + np.int64(finished_offset)
        at_root = xp.where(fin, -(fin_id + 1), new_id)
        M = at_root[root].astype(xp.int64)
        return to_host(M), int(live.sum()), int(fin.sum())

    def filter_edges(self, chunk, M):
        xp = self.xp
        M, _ = self.to_device(M)
        u, v, key, eid = chunk.edges()
        nu, nv = M[u], M[v]
        keep = xp.flatnonzero(nu != nv)
        return Chunk(nu[keep].astype(u.dtype), nv[keep].astype(v.dtype), key[keep], eid[keep],
                     packing=chunk.packing, h2d=chunk.h2d)

    def split_light(self, chunk, M, tk, te):
        xp = self.xp
        if M is not None:
            chunk = self.filter_edges(chunk, M)
        u, v, key, eid = chunk.edges()
        tk, te = np.uint64(tk), np.int64(te)
        light = (key < tk) | ((key == tk) & (eid <= te))
        li, hi = xp.flatnonzero(light), xp.flatnonzero(~light)
        return (Chunk(u[li], v[li], key[li], eid[li], packing=chunk.packing, h2d=chunk.h2d),
                Chunk(u[hi], v[hi], key[hi], eid[hi], packing=chunk.packing))

    def slice_edges(self, raw, offset, n_vertices, vmap=None, lo=None, hi=None):
        return slice_by_phases(self, raw, offset, n_vertices, vmap, lo, hi)

    def sample(self, chunk, pos):
        _, _, key, eid = chunk.edges()
        p, _ = self.to_device(np.asarray(pos, np.int64))
        return to_host(key[p]), to_host(eid[p])

    # -- the single-task solve ---------------------------------------------

    def solve_local(self, chunk, n_comp, finished_offset=0, *, relabel=None, light_factor=1.5,
                    min_degree=3.0, seed=0, on_round=None):
        """Plain Borůvka rounds (map, contract, filter-edges) until no component is left.

        The tuning knobs (``light_factor``, ``min_degree``, ``seed``) are
        accepted for the contract's sake and not used: the reference runs no
        light-edge pass, which the result does not depend on.
        """
        chunk = self.adopt(chunk)
        rounds = RoundTrace(on_round)
        if relabel is not None:
            t0 = time.perf_counter()
            m0 = len(chunk)
            chunk = self.filter_edges(chunk, relabel)
            rounds.append(SolveRound(int(relabel.shape[0]), int(n_comp), m0, len(chunk), 0,
                                     {Phase.FILTER_EDGES: time.perf_counter() - t0}, filter_pass=True))
        n = int(n_comp)
        fin = int(finished_offset)
        maps, chosen = [], []
        while n > 0:
            m0 = len(chunk)
            t0 = time.perf_counter()
            chunk, cand = self.map(chunk, n)
            t1 = time.perf_counter()
            M, ch, n_next, n_fin = self.contract(cand, n, fin)
            t2 = time.perf_counter()
            chunk = self.filter_edges(chunk, M)
            t3 = time.perf_counter()
            rounds.append(SolveRound(n, n_next, m0, len(chunk), int(ch.shape[0]),
                                     {Phase.MAP: t1 - t0, Phase.CONTRACT: t2 - t1, Phase.FILTER_EDGES: t3 - t2}))
            maps.append(M)
            chosen.append(ch)
            fin += n_fin
            n = n_next
        if maps:
            M = self.compose_maps(maps)
        else:
            M = -(np.arange(int(n_comp), dtype=np.int64) + int(finished_offset) + 1)
        ids = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
        return Solution(M, ids, fin - int(finished_offset), rounds)

    # -- labels and the forest ---------------------------------------------

    def compose_maps(self, maps):
        xp = self.xp
        final = None
        for M in reversed(list(maps)):
            M, _ = self.to_device(M)
            M = M.astype(xp.int64)
            if final is not None:
                live = M >= 0
                M[live] = final[M[live]]
            final = M
        return to_host(final)

    def labels(self, maps, n_vertices):
        xp = self.xp
        if n_vertices == 0:
            return np.zeros(0, np.int64), 0
        final, _ = self.to_device(self.compose_maps(maps))
        if bool(xp.any(final >= 0)):
            raise ValueError("the last round map still has live components")
        fid = -final - 1
        # canonical numbering: order of first appearance over vertices 0..n-1
        uniq, first = xp.unique(fid, return_index=True)
        order = xp.argsort(first)
        rank = xp.empty_like(order)
        rank[order] = xp.arange(order.shape[0])
        labels = rank[xp.searchsorted(uniq, fid)]
        return to_host(labels.astype(xp.int64)), int(uniq.shape[0])

    def contract_interior(self, lu, lv, interior):
        # a plain union-find over host arrays, in the edges' order
        lu, lv, interior = (np.asarray(to_host(a)) for a in (lu, lv, interior))
        parent = list(range(interior.shape[0]))
        tainted = [not bool(x) for x in interior]

        def root(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        keep, chosen = [], []
        for e, (a, b) in enumerate(zip(lu.tolist(), lv.tolist())):
            a, b = root(a), root(b)
            if a == b:
                continue
            if tainted[a] and tainted[b]:
                keep.append(e)
                continue
            if tainted[a] or (not tainted[b] and a < b):
                a, b = b, a  # b becomes the root
            parent[a] = b
            chosen.append(e)
        rep = np.array([root(x) for x in range(len(parent))], np.int64)
        return np.array(keep, np.int64), np.array(chosen, np.int64), rep

    def forest_ids(self, parts):
        xp = self.xp
        parts = [self.to_device(p)[0] for p in parts if p.shape[0]]
        if not parts:
            return np.zeros(0, np.int64)
        return to_host(xp.sort(xp.concatenate(parts)).astype(xp.int64))

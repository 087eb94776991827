"""The CPU single-task solve: the whole forest of an edge set that fits on one worker.

``parallel=True`` kernels over per-thread edge segments with per-thread best
arrays, merged afterwards, so no two threads ever write the same slot.
"""
from __future__ import annotations

import time

import numpy as np
from numba import njit, prange

from mst_dist.kernels.contract import RoundTrace, SolveRound, Solution
from mst_dist.kernels.cpu.arena import alloc_soa, blocks, nthreads
from mst_dist.kernels.cpu.atomics import cas
from mst_dist.kernels.contract import to_host
from mst_dist.kernels.cpu.chunk import adopt, id_dtype, weight_keys
from mst_dist.kernels.cpu.finish import compose_maps
from mst_dist.kernels.cpu.phases import jump, number
from mst_dist.kernels.cpu.slicing import slice_many
from mst_dist.phases import Phase

__all__ = ["solve_local", "solve_raw"]


#: An empty cheapest-edge slot (no packed value reaches it: a position is below the arrays' length).
_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(nogil=True, cache=True, inline="always")
def _offer(slot, c, mine, q, k, e, key, eid, qshift, pmask):
    """Keep edge ``mine`` (packed) in ``slot[c]`` if it comes first in the strict order (a CAS loop).

    A slot packs ``q`` (the key's bits that differ within the edge set, its
    high bits) over the edge's position: a smaller ``q`` wins outright, a
    larger one loses, and only on equal ``q`` are the full key and edge id
    read, so the minimum kept is exactly that of ``(key, eid)``.
    """
    cur = slot[c]
    while True:
        if cur != _EMPTY:
            cq = cur >> qshift
            if q > cq:
                return
            if q == cq:
                j = np.int64(cur & pmask)
                kj = key[j]
                if k > kj or (k == kj and e >= eid[j]):
                    return
        prev = cas(slot, c, cur, mine)
        if prev == cur:
            return
        cur = prev


@njit(parallel=True, nogil=True, cache=True)
def _p_best(u, v, key, eid, seg, cnt, n_comp, slot, kshift, qshift):
    """The cheapest edge per component, in one slot per component that every thread shares (role: map).

    A slot holds ``(q << qshift) | position`` (``q``: bits ``kshift`` up of
    the key, as many as the position leaves): an atomic minimum by
    compare-and-swap (:func:`.atomics.cas`), exact in ``(key, eid)``.  Eight
    bytes a component whatever the thread count; the merge reads the edge's
    id and other end at its position.
    """
    for c in prange(n_comp):
        slot[c] = _EMPTY
    T = cnt.shape[0]
    pmask = (np.uint64(1) << qshift) - np.uint64(1)
    qmask = _EMPTY >> qshift
    for t in prange(T):
        for i in range(seg[t], seg[t] + cnt[t]):
            k = key[i]
            e = eid[i]
            q = (k >> kshift) & qmask
            mine = (q << qshift) | np.uint64(i)
            _offer(slot, np.int64(u[i]), mine, q, k, e, key, eid, qshift, pmask)
            _offer(slot, np.int64(v[i]), mine, q, k, e, key, eid, qshift, pmask)


@njit(parallel=True, nogil=True, cache=True)
def _key_range(key, seg, cnt):
    """``(smallest, largest)`` key of the live edges (``(0, 0)``: none)."""
    T = cnt.shape[0]
    lo = np.full(T, _EMPTY, np.uint64)
    hi = np.zeros(T, np.uint64)
    for t in prange(T):
        a = _EMPTY
        b = np.uint64(0)
        for i in range(seg[t], seg[t] + cnt[t]):
            k = key[i]
            if k < a:
                a = k
            if k > b:
                b = k
        lo[t] = a
        hi[t] = b
    a = lo.min()
    b = hi.max()
    if a > b:
        return np.uint64(0), np.uint64(0)
    return a, b


def _packing(key, seg, cnt, length):
    """``(kshift, qshift)`` of :func:`_p_best`'s slots for edge arrays of ``length`` (positions below it).

    The position takes ``qshift`` low bits; the key gives its bits from
    ``kshift`` up, the highest that differ within the live keys, as many
    as are left: every key shares the bits above them, so ``q`` follows
    the key's order.
    """
    qshift = max(1, int(length).bit_length())
    lo, hi = _key_range(key, seg, cnt)
    kshift = max(0, (int(lo) ^ int(hi)).bit_length() - (64 - qshift))
    return np.uint64(kshift), np.uint64(qshift)


@njit(parallel=True, nogil=True, cache=True)
def _p_relabel(u, v, key, eid, seg, cnt, M):
    T = cnt.shape[0]
    for t in prange(T):
        j = seg[t]
        for i in range(seg[t], seg[t] + cnt[t]):
            a = M[u[i]]
            b = M[v[i]]
            if a != b:
                u[j] = a
                v[j] = b
                key[j] = key[i]
                eid[j] = eid[i]
                j += 1
        cnt[t] = j - seg[t]


@njit(parallel=True, nogil=True, cache=True)
def _p_split(u, v, key, eid, seg, cnt, tk, te, lu, lv, lk, le, lseg, lcnt):
    """Move edges with (key, eid) <= (tk, te) to the light arrays; compact the rest in place."""
    T = cnt.shape[0]
    for t in prange(T):
        j = seg[t]
        h = lseg[t]
        for i in range(seg[t], seg[t] + cnt[t]):
            k = key[i]
            e = eid[i]
            if k < tk or (k == tk and e <= te):
                lu[h] = u[i]
                lv[h] = v[i]
                lk[h] = k
                le[h] = e
                h += 1
            else:
                u[j] = u[i]
                v[j] = v[i]
                key[j] = k
                eid[j] = e
                j += 1
        cnt[t] = j - seg[t]
        lcnt[t] = h - lseg[t]


@njit(parallel=True, nogil=True, cache=True)
def _p_count_light(key, eid, seg, cnt, tk, te):
    T = cnt.shape[0]
    out = np.zeros(T, np.int64)
    for t in prange(T):
        a = 0
        for i in range(seg[t], seg[t] + cnt[t]):
            k = key[i]
            if k < tk or (k == tk and eid[i] <= te):
                a += 1
        out[t] = a
    return out


@njit(parallel=True, nogil=True, cache=True)
def _p_compose_forward(cur, M):
    for i in prange(cur.shape[0]):
        cur[i] = M[cur[i]]


@njit(parallel=True, nogil=True, cache=True)
def _p_dedupe(u, v, key, eid, seg, cnt):
    """Keep only the lightest of parallel edges within each segment (role: filter-edges).

    Open addressing on the unordered endpoint pair; a loser is dropped, the
    segment compacted in place.  Any subset of parallel edges that keeps each
    pair's lightest is safe to drop (the cycle property).
    """
    T = cnt.shape[0]
    dropped = np.zeros(T, np.int64)
    for t in prange(T):
        s0 = seg[t]
        n = cnt[t]
        if n < 2:
            continue
        cap = 1
        while cap < 2 * n:
            cap *= 2
        mask = np.uint64(cap - 1)
        table = np.full(cap, -1, np.int64)
        dead = np.zeros(n, np.bool_)
        for i in range(s0, s0 + n):
            a = np.uint64(u[i])
            b = np.uint64(v[i])
            if a > b:
                a, b = b, a
            h = ((a * np.uint64(0x9E3779B97F4A7C15)) ^ (b * np.uint64(0xC2B2AE3D27D4EB4F))) >> np.uint64(17)
            h &= mask
            while True:
                p = table[h]
                if p < 0:
                    table[h] = i
                    break
                pa = np.uint64(u[p])
                pb = np.uint64(v[p])
                if pa > pb:
                    pa, pb = pb, pa
                if pa == a and pb == b:
                    if key[i] < key[p] or (key[i] == key[p] and eid[i] < eid[p]):
                        dead[p - s0] = True
                        table[h] = i
                    else:
                        dead[i - s0] = True
                    break
                h = (h + np.uint64(1)) & mask
        j = s0
        for i in range(s0, s0 + n):
            if not dead[i - s0]:
                u[j] = u[i]
                v[j] = v[i]
                key[j] = key[i]
                eid[j] = eid[i]
                j += 1
        dropped[t] = s0 + n - j
        cnt[t] = j - s0
    return dropped.sum()


@njit(parallel=True, nogil=True, cache=True)
def _p_reduce_contract(slot, u, v, eid, qshift, T, n_comp, fin_off, finish, parent, has, M, chosen):
    """Read the shared slots' edges and contract on dense arrays (roles: merge, contract, filter-nodes).

    The dense twin of :func:`merge_candidates` followed by :func:`contract`
    (same result), without building a sparse candidate set.  Returns
    ``(n_chosen, n_next, n_finished)``; the chosen edge ids are written to
    ``chosen[:n_chosen]`` (at most ``n_comp - 1`` of them).
    """
    B = min(T * 4, n_comp // 65536 + 1)
    pmask = (np.uint64(1) << qshift) - np.uint64(1)
    # hook each component to the other end of its best edge
    for c in prange(n_comp):
        s = slot[c]
        if s != _EMPTY:
            i = np.int64(s & pmask)
            a = u[i]
            parent[c] = v[i] if a == c else a
            has[c] = True
        else:
            parent[c] = c
            has[c] = False
    # a mutual pair keeps its smaller id as root (safe in place: only the
    # partner reads parent[c] here, and its own test needs partner < c)
    cnt = np.zeros(B + 1, np.int64)
    for b in prange(B):
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        a = 0
        for c in range(lo, hi):
            if has[c]:
                o = parent[c]
                if c < o and parent[o] == c:
                    parent[c] = c
                else:
                    a += 1
        cnt[b + 1] = a
    for b in range(B):
        cnt[b + 1] += cnt[b]
    for b in prange(B):
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        j = cnt[b]
        for c in range(lo, hi):
            if has[c] and parent[c] != c:
                chosen[j] = eid[np.int64(slot[c] & pmask)]
                j += 1
    jump(parent, n_comp)
    n_next, n_fin = number(parent, has, n_comp, fin_off, finish, M, B)
    return cnt[B], n_next, n_fin


class _Segments:
    """Edge arrays split into per-thread segments (each segment compacts in place)."""

    def __init__(self, u, v, key, eid, T):
        self.u, self.v, self.key, self.eid = u, v, key, eid
        m = u.shape[0]
        b = blocks(m, T)
        self.seg = b[:-1].copy()
        self.cnt = np.diff(b)
        self._packing = None

    @property
    def packing(self):
        """``(kshift, qshift)`` of the map's shared slots (:func:`_packing`), from the keys when first asked:
        the live keys only ever narrow, so it holds for every later round."""
        if self._packing is None:
            self._packing = _packing(self.key, self.seg, self.cnt, self.u.shape[0])
        return self._packing

    @property
    def m(self):
        return int(self.cnt.sum())


def _sample_threshold(S, n_light, rng):
    """A (key, eid) threshold with about ``n_light`` edges at or below it (sampled)."""
    m = S.m
    ns = min(m, 4096)
    # sample positions uniformly over the live edges of all segments
    cum = np.concatenate([[0], np.cumsum(S.cnt)])
    r = np.sort(rng.integers(0, m, ns))
    t = np.searchsorted(cum, r, side="right") - 1
    pos = S.seg[t] + (r - cum[t])
    ks = S.key[pos]
    es = S.eid[pos]
    order = np.lexsort((es, ks))
    q = min(ns - 1, max(0, int(ns * n_light / m)))
    j = order[q]
    return ks[j], es[j]


class _Solver:
    """The state of one single-task solve: scratch, round maps, chosen edges, the trace.

    :meth:`boruvka` runs rounds on a segmented edge set; :meth:`light_pass`
    solves a light slice and gives the map of the whole pass; :meth:`run`
    is the loop of :func:`solve_local` (light passes while the edges are
    many per component, then rounds to the end).
    """

    def __init__(self, n_comp, finished_offset, id_dtype, light_factor, min_degree, dedupe, seed, on_round):
        self.T = max(1, nthreads())
        self.rng = np.random.default_rng(seed)
        self.trace = RoundTrace(on_round)  # on_round hears of each round as it ends
        self.light_factor, self.min_degree, self.dedupe = light_factor, min_degree, dedupe
        # per-component arrays reused by every round of this solve (fresh ones would page-fault each
        # round): one shared cheapest-edge slot, a parent and a flag per component, whatever the thread
        # count.  Not from the arena: they go with the solve, so a streaming run's later steps (the vertex
        # map composed, the labels) never stack on them
        n0 = max(1, int(n_comp))
        self.slot_buf = np.empty(n0, np.uint64)
        self.work = (np.empty(n0, id_dtype), np.empty(n0, np.bool_))
        # round maps hold live ids and finished ones -(F + 1): int32 while they fit
        self.map_dtype = np.int32 if int(n_comp) + int(finished_offset) < 2**31 - 1 else np.int64
        self.maps = []          # round maps, input comp space first
        self.ch_buf = np.empty(n0, np.int64)  # every round's chosen edge ids, back to back (touched as written)
        self.n_chosen = 0
        self.n_cur = int(n_comp)
        self.fin = int(finished_offset)

    def boruvka(self, S, finish):
        """Rounds until no edge is left in ``S`` (``finish=False``: a light pass); the round maps."""
        T, trace = self.T, self.trace
        local_maps = []
        while True:
            n_cur = self.n_cur
            m_before = S.m
            if m_before == 0 and not finish:
                break
            t0 = time.perf_counter()
            slot = self.slot_buf[:n_cur]
            kshift, qshift = S.packing
            _p_best(S.u, S.v, S.key, S.eid, S.seg, S.cnt, np.int64(n_cur), slot, kshift, qshift)
            t1 = time.perf_counter()
            M = np.empty(n_cur, self.map_dtype)
            n_ch, n_next, n_f = _p_reduce_contract(slot, S.u, S.v, S.eid, qshift, np.int64(T), np.int64(n_cur),
                                                   np.int64(self.fin),
                                                   bool(finish), self.work[0][:n_cur], self.work[1][:n_cur], M,
                                                   self.ch_buf[self.n_chosen:])
            self.n_chosen += int(n_ch)
            n_next = int(n_next)
            t3 = time.perf_counter()
            local_maps.append(M)
            if n_next:
                _p_relabel(S.u, S.v, S.key, S.eid, S.seg, S.cnt, M)
                if self.dedupe > 0 and S.m > self.dedupe * n_next:
                    _p_dedupe(S.u, S.v, S.key, S.eid, S.seg, S.cnt)
            else:
                S.cnt[:] = 0
            t4 = time.perf_counter()
            # merge, contract and filter-nodes are one fused kernel here
            trace.append(SolveRound(n_cur, n_next, m_before, S.m, int(n_ch),
                                    {Phase.MAP: t1 - t0, Phase.CONTRACT: t3 - t1, Phase.FILTER_EDGES: t4 - t3},
                                    light=not finish))
            self.fin += int(n_f)
            self.n_cur = n_next
            if n_next == 0 or (not finish and S.m == 0):
                break
        return local_maps

    def light_pass(self, L, split_seconds):
        """Solve the light edges ``L``; the map of the whole pass (``None``: no round ran).

        ``split_seconds``: the time it took to set ``L`` apart, counted as
        the first light round's filter-edges (as on the GPU).
        """
        first = len(self.trace)
        lmaps = self.boruvka(L, False)
        if len(self.trace) > first:
            ps = self.trace[first].phase_seconds
            ps[Phase.FILTER_EDGES] = ps.get(Phase.FILTER_EDGES, 0.0) + split_seconds
        if not lmaps:
            return None
        P = lmaps[0].copy()
        for Mx in lmaps[1:]:
            _p_compose_forward(P, Mx)
        self.maps.append(P)
        return P

    def heavy_relabelled(self, n_before, m_before, t0, S):
        """Record the relabelling of the heavy edges after a light pass (a filter pass)."""
        if self.dedupe > 0 and S.m > self.dedupe * self.n_cur:
            _p_dedupe(S.u, S.v, S.key, S.eid, S.seg, S.cnt)
        self.trace.append(SolveRound(n_before, self.n_cur, m_before, S.m, 0,
                                     {Phase.FILTER_EDGES: time.perf_counter() - t0}, filter_pass=True))

    def dense(self, m):
        return self.n_cur and m > self.min_degree * self.n_cur and self.light_factor > 0

    def run(self, S):
        """Light passes while ``S`` is dense, then rounds until every component is finished."""
        T = self.T
        while self.dense(S.m):
            t_split = time.perf_counter()
            tk, te = _sample_threshold(S, self.light_factor * self.n_cur, self.rng)
            lc = _p_count_light(S.key, S.eid, S.seg, S.cnt, tk, te)
            nl = int(lc.sum())
            lu, lv, lk, le = alloc_soa(nl, [S.u.dtype, S.v.dtype, np.uint64, np.int64])
            lseg = np.concatenate([[0], np.cumsum(lc)[:-1]]).astype(np.int64)
            lcnt = np.zeros(T, np.int64)
            _p_split(S.u, S.v, S.key, S.eid, S.seg, S.cnt, tk, te, lu, lv, lk, le, lseg, lcnt)
            L = _Segments(lu, lv, lk, le, T)
            L.seg, L.cnt = lseg, lcnt
            n_before = self.n_cur
            P = self.light_pass(L, time.perf_counter() - t_split)
            del L, lu, lv, lk, le
            if P is not None:  # relabel the heavy edges once, for the whole light pass
                t0 = time.perf_counter()
                m_h = S.m
                _p_relabel(S.u, S.v, S.key, S.eid, S.seg, S.cnt, P)
                self.heavy_relabelled(n_before, m_h, t0, S)
        self.maps.extend(self.boruvka(S, True))

    def solution(self, n_comp, finished_offset):
        """The maps composed back to the input component space: filter-nodes' bookkeeping."""
        if not self.maps:
            M = -(np.arange(int(n_comp), dtype=np.int64) + int(finished_offset) + 1)
            return Solution(M, np.zeros(0, np.int64), int(n_comp), self.trace)
        t0 = time.perf_counter()
        final = compose_maps(self.maps)
        self.trace[-1].phase_seconds[Phase.FILTER_NODES] = time.perf_counter() - t0
        return Solution(final, self.ch_buf[:self.n_chosen], self.fin - int(finished_offset), self.trace)


def solve_local(chunk, n_comp, finished_offset=0, *, relabel=None, light_factor=1.5,
                min_degree=3.0, seed=0, on_round=None):
    """The whole forest of one chunk in this process (roles: all five, in a loop).

    The chunk's ``u, v`` are component ids in ``[0, n_comp)``; its arrays
    are consumed (compacted in place).  Borůvka rounds run on per-thread
    segments with per-thread best arrays.  While the edges are many per
    component (``m > min_degree * n``), a *light pass* first solves the about
    ``light_factor * n`` lightest edges (a prefix of the strict order, found
    by sampling), then relabels the heavy rest and drops what fell inside a
    component: the filtering of GBBS and ECL-MST, which saves whole passes on
    dense graphs.

    ``relabel``: an id map to apply to ``u, v`` first (with self-loops
    dropped), in place: the filter-edges of a distributed round before it.
    The input ids are then those of the map's *values*.

    Returns a :class:`~mst_dist.kernels.contract.Solution`.
    """
    return solve_local_dedupe(chunk, n_comp, finished_offset, relabel=relabel, light_factor=light_factor,
                              min_degree=min_degree, dedupe=0.0, seed=seed, on_round=on_round)


def solve_local_dedupe(chunk, n_comp, finished_offset=0, *, relabel=None, light_factor=1.5, min_degree=3.0,
                       dedupe=2.0, seed=0, on_round=None):
    """:func:`solve_local` that also cuts parallel edges (not the contract's: measured, not used).

    After a relabel that leaves more than ``dedupe`` edges per component
    (``dedupe > 0``), parallel edges are cut to the lightest of each pair
    (within each thread's segment).  The same forest either way; whether
    it pays is what the benchmarks measure
    (:func:`mst_dist.kernels.tuning.solve_local_dedupe`).
    """
    chunk = adopt(chunk)
    sv = _Solver(n_comp, finished_offset, chunk.u.dtype, light_factor, min_degree, dedupe, seed, on_round)
    S = _Segments(chunk.u, chunk.v, chunk.key, chunk.eid, sv.T)
    if relabel is not None:
        t0 = time.perf_counter()
        m_before = S.m
        _p_relabel(S.u, S.v, S.key, S.eid, S.seg, S.cnt, relabel)
        sv.trace.append(SolveRound(int(relabel.shape[0]), int(n_comp), m_before, S.m, 0,
                                   {Phase.FILTER_EDGES: time.perf_counter() - t0}, filter_pass=True))
    sv.run(S)
    return sv.solution(n_comp, finished_offset)


def _raw_threshold(raws, offsets, n_light, m, rng, samples=8192):
    """A (key, eid) threshold with about ``n_light`` of the ``m`` raw edges at or below it (sampled).

    Self-loops in the sample are left out (they never enter a slice).
    """
    pos = np.sort(rng.integers(0, m, min(m, samples)))
    ends = np.cumsum([r[0].shape[0] for r in raws])
    part = np.searchsorted(ends, pos, side="right")
    ks, es = [], []
    for i, (r, off) in enumerate(zip(raws, offsets)):
        loc = pos[part == i] - (ends[i] - r[0].shape[0])
        if loc.shape[0]:
            keep = to_host(r[0])[loc] != to_host(r[1])[loc]
            loc = loc[keep]
            ks.append(weight_keys(to_host(r[2])[loc]))
            es.append(loc + np.int64(off))
    ks = np.concatenate(ks) if ks else np.zeros(0, np.uint64)
    es = np.concatenate(es) if es else np.zeros(0, np.int64)
    if not ks.shape[0]:
        return None
    order = np.lexsort((es, ks))
    q = min(ks.shape[0] - 1, max(0, int(ks.shape[0] * n_light / m)))
    return ks[order[q]], es[order[q]]


def solve_raw(raws, offsets, n_vertices, *, light_factor=1.5, min_degree=3.0, seed=0, on_round=None):
    """The whole forest of raw chunks in this process, read where they lie (roles: all five).

    ``raws``: ``(src, dst, weight)`` chunks (the caller's arrays, or views of
    them), edge ``i`` of chunk ``j`` having the id ``offsets[j] + i``.  No
    working copy of every edge is made: on a dense graph (more than
    ``min_degree`` edges per vertex) the light pass slices the about
    ``light_factor * n`` lightest edges out of the raw chunks
    (:func:`.slicing.slice_many`: keys, bounds and self-loops in one read),
    solves them, then slices the heavy edges that still join two
    components, relabelled; a sparse graph is sliced whole.  Either way the
    rest is :func:`solve_local`'s loop.  Same result as ``solve_local`` on
    the prepared chunks.  Returns ``(Solution, prepare_seconds)``: the time
    the first slice took, when it is the whole graph (else it is the light
    pass's filter-edges).
    """
    raws = [tuple(to_host(a) for a in r[:3]) for r in raws]
    n = int(n_vertices)
    idt = id_dtype(n)
    sv = _Solver(n, 0, idt, light_factor, min_degree, 0.0, seed, on_round)
    m = int(sum(r[0].shape[0] for r in raws))
    t0 = time.perf_counter()
    lo = hi = None
    if sv.dense(m):
        hi = _raw_threshold(raws, offsets, light_factor * n, m, sv.rng)
    if hi is None:
        ch = slice_many(raws, offsets, n)
        prepare = time.perf_counter() - t0
        S = _Segments(ch.u, ch.v, ch.key, ch.eid, sv.T)
    else:
        ch = slice_many(raws, offsets, n, hi=hi)
        n_light = len(ch)
        L = _Segments(ch.u, ch.v, ch.key, ch.eid, sv.T)
        del ch
        P = sv.light_pass(L, time.perf_counter() - t0)
        del L
        t0 = time.perf_counter()
        ch = slice_many(raws, offsets, n, vmap=P, lo=hi)
        S = _Segments(ch.u, ch.v, ch.key, ch.eid, sv.T)
        if P is not None:  # the heavy edges, as read: the raw rows not in the light slice
            sv.heavy_relabelled(n, m - n_light, t0, S)
        prepare = 0.0
    del ch
    sv.run(S)
    return sv.solution(n, 0), prepare

"""The GPU single-task solve: the whole forest of one packed chunk on its device.

Borůvka rounds of the GPU phases (:mod:`.phases`) on dense per-component
arrays, with a light-edge pass on dense graphs as the CPU solve has.
"""
from __future__ import annotations

import numpy as np

from mst_dist.kernels.contract import LOW32, RoundTrace, SolveRound, Solution, to_host
from mst_dist.kernels.gpu.device import clock, to_device
from mst_dist.kernels.gpu.chunk import MAXKEY
from mst_dist.kernels.gpu.phases import best_edges, filter_edges, filter_nodes, hook, jump
from mst_dist.phases import Phase

__all__ = ["solve_local", "DEVICE_BYTES_PER_EDGE"]

#: Device bytes per edge of the single-task solve, temporaries included
#: (u, v, pk, key, eid = 32 bytes, plus the round's gathers and compaction).
DEVICE_BYTES_PER_EDGE = 64


def _lightest_parallel(u, v, pk, xp):
    """Of parallel edges (same unordered endpoint pair), only the lightest: ``(u, v, pk)``."""
    a = xp.minimum(u, v).astype(xp.int64)
    b = xp.maximum(u, v).astype(xp.int64)
    order = xp.argsort(pk)  # packed keys are unique: any sort is stable here
    order = order[_stable_argsort(b[order], xp)]
    order = order[_stable_argsort(a[order], xp)]
    a, b = a[order], b[order]
    first = xp.ones(a.shape[0], dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    keep = order[first]
    return u[keep], v[keep], pk[keep]


def _stable_argsort(a, xp):
    return np.argsort(a, kind="stable") if xp is np else xp.argsort(a)


def _rounds(u, v, pk, n, cur, fin, eid, xp, *, finish, chosen, trace, dedupe, light=False, extra_s=0.0):
    """Borůvka rounds on the device until no component has an edge left.

    ``finish=False`` (a light pass, more edges to come): components without
    an edge stay live, and the rounds stop when the edges run out.  Returns
    ``(u, v, pk, n, cur, fin)``; ``cur`` maps the solve's input components to
    the current ones (``>= 0``) or to ``-(F + 1)``.
    """
    while n > 0 and (finish or u.shape[0] > 0):
        m_in = int(u.shape[0])
        t0 = clock(xp)
        best, parent = best_edges(u, v, pk, n, xp)
        t1 = clock(xp)
        has = best != MAXKEY
        parent, hooked = hook(parent, xp)
        cpos = (best[hooked] & LOW32).astype(xp.int64)
        M, n_next, n_fin = filter_nodes(jump(parent, xp), has, fin, xp, finish)
        chosen.append(eid[cpos])
        t2 = clock(xp)
        cur = xp.where(cur >= 0, M[xp.maximum(cur, 0)], cur)
        t3 = clock(xp)
        if m_in:
            nu = M[u]
            nv = M[v]
            keep = xp.flatnonzero(nu != nv)
            u, v, pk = nu[keep].astype(u.dtype), nv[keep].astype(v.dtype), pk[keep]
            if dedupe > 0 and u.shape[0] > dedupe * n_next:
                u, v, pk = _lightest_parallel(u, v, pk, xp)
        t4 = clock(xp)
        trace.append(SolveRound(n, n_next, m_in, int(u.shape[0]), int(cpos.shape[0]),
                                {Phase.MAP: t1 - t0, Phase.CONTRACT: t2 - t1, Phase.FILTER_EDGES: (t4 - t3) + extra_s,
                                 Phase.FILTER_NODES: t3 - t2}, light=light))
        extra_s = 0.0
        fin += n_fin
        n = n_next
    return u, v, pk, n, cur, fin


def _light_threshold(pk, n, light_factor, seed, xp):
    """A packed key below which about ``light_factor * n`` of the edges lie (from a sample)."""
    m = int(pk.shape[0])
    k = min(m, 1 << 16)
    pos, _ = to_device(np.random.default_rng(seed).integers(0, m, k), xp)
    sample = to_host(xp.sort(pk[pos]))
    q = int(k * light_factor * n / m)
    return None if not 0 < q < k else sample[q]


def solve_local(chunk, n_comp, finished_offset=0, *, relabel=None, light_factor=1.5, min_degree=3.0,
                dedupe=0.0, seed=0, on_round=None):
    """The whole forest of one packed chunk on its device: Borůvka rounds until no edge is left.

    ``relabel``: a pending round map (host or on the device) applied first.
    While edges outnumber components by more than ``min_degree`` to one, a
    light pass first solves the about ``light_factor * n`` lightest edges (a
    prefix of the packed-key order, threshold from a sample), then relabels
    the heavy rest once and drops what fell inside a component, as the CPU
    solve does.  With ``dedupe > 0``, after a relabel that leaves more than
    ``dedupe`` edges per component, parallel edges are cut to the lightest.
    Returns a :class:`~mst_dist.kernels.contract.Solution` on the host.
    """
    xp = chunk.xp
    trace = RoundTrace(on_round)  # on_round hears of each round as it ends
    t = clock(xp)
    if relabel is not None:
        chunk = filter_edges(chunk, relabel)
    extra = clock(xp) - t
    u, v, pk = chunk.u, chunk.v, chunk.pk
    n = int(n_comp)
    cur = xp.arange(n, dtype=xp.int64)
    chosen = []
    fin = int(finished_offset)
    if light_factor > 0 and n > 0 and u.shape[0] > min_degree * n:
        t0 = clock(xp)
        tpk = _light_threshold(pk, n, light_factor, seed, xp)
        if tpk is not None:
            light = pk <= tpk
            li, hi = xp.flatnonzero(light), xp.flatnonzero(~light)
            hu, hv, hpk = u[hi], v[hi], pk[hi]
            u, v, pk = u[li], v[li], pk[li]
            extra += clock(xp) - t0
            _, _, _, n, cur, fin = _rounds(u, v, pk, n, cur, fin, chunk.eid, xp, finish=False,
                                           chosen=chosen, trace=trace, dedupe=dedupe, light=True,
                                           extra_s=extra)
            extra = 0.0
            # the heavy edges, relabelled once: those inside a component are gone
            t1 = clock(xp)
            m_heavy = int(hu.shape[0])
            nu, nv = cur[hu], cur[hv]
            keep = xp.flatnonzero(nu != nv)
            u, v, pk = nu[keep].astype(hu.dtype), nv[keep].astype(hv.dtype), hpk[keep]
            if dedupe > 0 and u.shape[0] > dedupe * n:
                u, v, pk = _lightest_parallel(u, v, pk, xp)
            trace.append(SolveRound(n, n, m_heavy, int(u.shape[0]), 0,
                                    {Phase.FILTER_EDGES: clock(xp) - t1}, filter_pass=True))
    _, _, _, n, cur, fin = _rounds(u, v, pk, n, cur, fin, chunk.eid, xp, finish=True, chosen=chosen,
                                   trace=trace, dedupe=dedupe, extra_s=extra)
    ids = xp.concatenate(chosen) if chosen else xp.zeros(0, xp.int64)
    M, ids = to_host(cur), to_host(ids)
    return Solution(M, ids, fin - int(finished_offset), trace,
                    d2h=int(M.nbytes + ids.nbytes))

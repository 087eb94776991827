"""GPU phases over an array module ``xp``: map, merge, contract, filter-nodes, filter-edges.

Written once over ``xp``: with ``cupy`` they run on the worker's device; with
``numpy`` the very same code runs on the host (the stand-in CI runs).  No
RawKernel: every step is a CuPy/NumPy array operation (``cupyx.scatter_min``
is CUDA's ``atomicMin``), so nothing here is unmeasured hand-written CUDA.
Chunks are packed (:mod:`.chunk`); only candidate records (device -> host)
and round maps (host -> device) cross, and the records say how many bytes.
"""
from __future__ import annotations

import numpy as np

from mst_dist.kernels.contract import LOW32, Candidates, to_host
from mst_dist.kernels.gpu.chunk import MAXKEY, with_edges
from mst_dist.kernels.gpu.device import scatter_min, to_device
from mst_dist.kernels.reference import group_min

__all__ = ["best_edges", "map", "merge", "hook", "jump", "contract", "filter_nodes", "filter_edges",
           "split_light", "sample"]


def best_edges(u, v, pk, n_comp, xp):
    """Cheapest edge of every component (role: map): ``(best, parent)`` over ``0..n_comp-1``.

    ``best[c]`` is the least packed key of an edge at ``c`` (``MAXKEY``: none);
    ``parent[c]`` the component at that edge's other end (``c`` itself: none).
    Two atomic mins, then one pass that finds each winning edge again (packed
    keys are unique, so each component has exactly one).  No self-loops.
    """
    best = xp.full(n_comp, MAXKEY, dtype=xp.uint64)
    scatter_min(best, u, pk, xp)
    scatter_min(best, v, pk, xp)
    parent = xp.arange(n_comp, dtype=xp.int64)
    if u.shape[0]:
        a = best[u] == pk
        parent[u[a]] = v[a]
        b = best[v] == pk
        parent[v[b]] = u[b]
    return best, parent


def map(chunk, n_comp, M=None):
    """Candidates of a packed chunk, on the host (role: map); ``M``: filter-edges fused in first.

    Returns ``(chunk, candidates)``; the record's ``d2h`` counts its copy to the host.
    """
    if M is not None:
        chunk = filter_edges(chunk, M)
    xp = chunk.xp
    best, parent = best_edges(chunk.u, chunk.v, chunk.pk, int(n_comp), xp)
    comp = xp.flatnonzero(best != MAXKEY)
    row = (best[comp] & LOW32).astype(xp.int64)
    host = [to_host(a) for a in (comp.astype(xp.int64), chunk.key[row], chunk.eid[row], parent[comp])]
    return chunk, Candidates(*host, d2h=int(sum(a.nbytes for a in host)))


def merge(parts, xp):
    """Candidate records combined into one cheapest edge per component, on ``xp`` (role: merge)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return Candidates.empty()
    cols = [xp.concatenate([to_device(p.arrays()[i], xp)[0] for p in parts]) for i in range(4)]
    return Candidates(*(to_host(a) for a in group_min(*cols, xp)))


def hook(parent, xp):
    """Hook every component with a candidate to the other end of its edge (role: contract).

    ``parent[c]``: the other end of ``c``'s cheapest edge (``c``: none).  A
    mutual pair keeps the smaller id as root, so its edge counts once.
    Returns ``(parent, hooked)``: the hooked components chose forest edges.
    """
    idx = xp.arange(parent.shape[0], dtype=xp.int64)
    mutual = (parent[parent] == idx) & (idx < parent)
    parent[mutual] = idx[mutual]
    return parent, parent != idx


def jump(parent, xp):
    """Pointer jumping until every component points at its root (role: contract)."""
    while True:
        nxt = parent[parent]
        if bool(xp.all(nxt == parent)):
            return parent
        parent = nxt


def filter_nodes(root, has, finished_offset, xp, finish=True):
    """Compact a contracted round's component ids into its round map, on ``xp`` (role: filter-nodes).

    Returns ``(M, n_next, n_finished)`` with ``M`` on ``xp``.
    """
    n = root.shape[0]
    is_root = root == xp.arange(n, dtype=xp.int64)
    fin = is_root & ~has if finish else xp.zeros(n, dtype=bool)
    live = is_root & ~fin
    new_id = xp.cumsum(live) - 1
    fin_id = xp.cumsum(fin) - 1 + np.int64(finished_offset)
    M = xp.where(fin, -(fin_id + 1), new_id)[root].astype(xp.int64)
    n_next = int(new_id[-1]) + 1 if n else 0
    n_fin = int(fin_id[-1]) + 1 - int(finished_offset) if n else 0
    return M, n_next, n_fin


def contract(cand, n_comp, finished_offset, xp, finish=True):
    """Hook, pointer-jump and compact a candidate record on ``xp`` (role: contract).

    Returns ``(M, chosen_eids, n_next, n_finished)`` on the host.
    """
    comp, _, eid, other = (to_device(a, xp)[0] for a in cand.arrays())
    parent = xp.arange(n_comp, dtype=xp.int64)
    parent[comp] = other
    has = xp.zeros(n_comp, dtype=bool)
    has[comp] = True
    best_eid = xp.full(n_comp, -1, dtype=xp.int64)
    best_eid[comp] = eid
    parent, hooked = hook(parent, xp)
    chosen = best_eid[hooked]
    M, n_next, n_fin = filter_nodes(jump(parent, xp), has, finished_offset, xp, finish)
    return to_host(M), to_host(chosen), n_next, n_fin


def filter_edges(chunk, M):
    """Relabel endpoints by the round map and drop self-loops (role: filter-edges).

    ``M`` on the chunk's device is used as it is; a host one is copied there.
    """
    xp = chunk.xp
    if not isinstance(M, xp.ndarray):
        M, _ = to_device(M, xp)
    nu = M[chunk.u]
    nv = M[chunk.v]
    keep = xp.flatnonzero(nu != nv)
    idt = chunk.u.dtype
    return with_edges(chunk, nu[keep].astype(idt), nv[keep].astype(idt), chunk.pk[keep], chunk.h2d)


def split_light(chunk, M, tk, te):
    """Pending relabel (``M`` or None), then the light edges ``(key, eid) <= (tk, te)`` apart from the heavy."""
    xp = chunk.xp
    if M is not None:
        chunk = filter_edges(chunk, M)
    _, _, key, eid = chunk.edges()
    tk, te = np.uint64(tk), np.int64(te)
    light = (key < tk) | ((key == tk) & (eid <= te))
    li = xp.flatnonzero(light)
    hi = xp.flatnonzero(~light)
    # a pending upload is reported by the light chunk's first round
    return (with_edges(chunk, chunk.u[li], chunk.v[li], chunk.pk[li], chunk.h2d),
            with_edges(chunk, chunk.u[hi], chunk.v[hi], chunk.pk[hi]))


def sample(chunk, pos):
    """``(key, eid)`` of the live edges at host positions ``pos``, on the host."""
    xp = chunk.xp
    p, _ = to_device(np.asarray(pos, np.int64), xp)
    row = (chunk.pk[p] & LOW32).astype(xp.int64)
    return to_host(chunk.key[row]), to_host(chunk.eid[row])

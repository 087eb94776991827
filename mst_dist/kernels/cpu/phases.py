"""CPU phases for one chunk in one task: map, merge, contract, filter-nodes, filter-edges.

Serial ``nogil`` kernels: a worker runs as many of them at once as it has
threads.  The contract and filter-nodes kernels run in parallel over the
components.

The map keeps its cheapest edge per component in arrays indexed by
component id while the chunk has edges enough to fill them; a chunk with
few edges among many components (``n_comp > SPARSE_MAP_RATIO * edges``: many
chunks, or the first rounds of a graph with many vertices) ranks the ids it
touches first (:func:`mst_dist.kernels.cpu.ranges.rank`), so its scratch
and its time follow its edges rather than the components.  Where the edges
are many for the components, the dense arrays win: ranking costs a sort the
direct indexing does not.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mst_dist.kernels.contract import Candidates, Chunk
from mst_dist.kernels.cpu.arena import alloc_soa, nthreads
from mst_dist.kernels.cpu.ranges import rank

__all__ = ["map", "merge", "contract", "filter_nodes", "filter_edges", "split_light", "sample", "contract_interior"]

KMAX = np.uint64(0xFFFFFFFFFFFFFFFF)

#: The map ranks a chunk's ids first when the components are more than this many times its edges.
SPARSE_MAP_RATIO = 4


@njit(nogil=True, cache=True, inline="always")
def _better(k1, e1, k2, e2):
    return k1 < k2 or (k1 == k2 and e1 < e2)


@njit(nogil=True, cache=True)
def _extract(bk, be, bo):
    n = bk.shape[0]
    cnt = 0
    for c in range(n):
        if be[c] >= 0:
            cnt += 1
    comp = np.empty(cnt, np.int64)
    key = np.empty(cnt, np.uint64)
    eid = np.empty(cnt, np.int64)
    oth = np.empty(cnt, np.int64)
    j = 0
    for c in range(n):
        if be[c] >= 0:
            comp[j] = c
            key[j] = bk[c]
            eid[j] = be[c]
            oth[j] = bo[c]
            j += 1
    return comp, key, eid, oth


@njit(nogil=True, cache=True)
def _best_update(bk, be, bo, su, sv, ou, ov, key, eid, m):
    """Each edge ``i`` offered to the slots ``su[i]`` and ``sv[i]`` of its ends (the other end kept as
    ``ov[i]`` / ``ou[i]``): each slot keeps its cheapest edge."""
    for i in range(m):
        a = su[i]
        b = sv[i]
        if a == b:
            continue
        k = key[i]
        e = eid[i]
        if be[a] < 0 or _better(k, e, bk[a], be[a]):
            bk[a] = k
            be[a] = e
            bo[a] = ov[i]
        if be[b] < 0 or _better(k, e, bk[b], be[b]):
            bk[b] = k
            be[b] = e
            bo[b] = ou[i]


@njit(nogil=True, cache=True)
def _map_chunk(u, v, key, eid, n_comp):
    bk = np.full(n_comp, KMAX, np.uint64)
    be = np.full(n_comp, -1, np.int64)
    bo = np.empty(n_comp, np.int64)
    _best_update(bk, be, bo, u, v, u, v, key, eid, u.shape[0])
    return _extract(bk, be, bo)


def _map_ranked(u, v, key, eid):
    """:func:`_map_chunk` with scratch sized by the ids the edges touch, not by the components."""
    m = u.shape[0]
    if m == 0:
        return Candidates.empty().arrays()
    ids, inv = rank(np.concatenate([u, v]))
    k = ids.shape[0]
    bk, be, bo = np.empty(k, np.uint64), np.full(k, -1, np.int64), np.empty(k, np.int64)
    _best_update(bk, be, bo, inv[:m], inv[m:], u, v, key, eid, m)  # slots: local ids; others: the ids
    local, ck, ce, co = _extract(bk, be, bo)
    return ids[local].astype(np.int64), ck, ce, co


def map(chunk, n_comp, M=None):
    """Cheapest edge leaving each component the chunk touches (role: map).

    With a round map ``M``, the previous round's filter-edges is fused into
    the same pass: endpoints relabelled, self-loops dropped, the filtered
    chunk returned beside the candidates.  Candidates come sorted by
    component either way (dense scratch or ranked ids, see the module).
    """
    ranked = n_comp > SPARSE_MAP_RATIO * len(chunk)
    if M is None:
        if ranked:
            return chunk, Candidates(*_map_ranked(chunk.u, chunk.v, chunk.key, chunk.eid))
        return chunk, Candidates(*_map_chunk(chunk.u, chunk.v, chunk.key, chunk.eid, np.int64(n_comp)))
    u = chunk.u
    nu, nv, nk, ne = alloc_soa(len(chunk), [u.dtype, chunk.v.dtype, np.uint64, np.int64])
    if ranked:
        j = _filter(u, chunk.v, chunk.key, chunk.eid, M, nu, nv, nk, ne)
        new = Chunk(nu[:j], nv[:j], nk[:j], ne[:j], packing=chunk.packing, h2d=chunk.h2d)
        return new, Candidates(*_map_ranked(new.u, new.v, new.key, new.eid))
    # M is int64; the kernel stores into the chunk's id dtype (values < n_comp)
    j, comp, ck, ce, co = _filter_map(u, chunk.v, chunk.key, chunk.eid, M, np.int64(n_comp),
                                      nu, nv, nk, ne)
    new = Chunk(nu[:j], nv[:j], nk[:j], ne[:j], packing=chunk.packing, h2d=chunk.h2d)
    return new, Candidates(comp, ck, ce, co)


@njit(nogil=True, cache=True)
def _filter_map(u, v, key, eid, M, n_comp, nu, nv, nk, ne):
    bk = np.full(n_comp, KMAX, np.uint64)
    be = np.full(n_comp, -1, np.int64)
    bo = np.empty(n_comp, np.int64)
    j = 0
    for i in range(u.shape[0]):
        a = M[u[i]]
        b = M[v[i]]
        if a == b:
            continue
        k = key[i]
        e = eid[i]
        nu[j] = a
        nv[j] = b
        nk[j] = k
        ne[j] = e
        j += 1
        if be[a] < 0 or _better(k, e, bk[a], be[a]):
            bk[a] = k
            be[a] = e
            bo[a] = b
        if be[b] < 0 or _better(k, e, bk[b], be[b]):
            bk[b] = k
            be[b] = e
            bo[b] = a
    comp, ck, ce, co = _extract(bk, be, bo)
    return j, comp, ck, ce, co


@njit(nogil=True, cache=True)
def _filter(u, v, key, eid, M, nu, nv, nk, ne):
    j = 0
    for i in range(u.shape[0]):
        a = M[u[i]]
        b = M[v[i]]
        if a != b:
            nu[j] = a
            nv[j] = b
            nk[j] = key[i]
            ne[j] = eid[i]
            j += 1
    return j


def filter_edges(chunk, M):
    """Relabel endpoints by the round map and drop self-loops (role: filter-edges)."""
    nu, nv, nk, ne = alloc_soa(len(chunk), [chunk.u.dtype, chunk.v.dtype, np.uint64, np.int64])
    j = _filter(chunk.u, chunk.v, chunk.key, chunk.eid, M, nu, nv, nk, ne)
    return Chunk(nu[:j], nv[:j], nk[:j], ne[:j], packing=chunk.packing, h2d=chunk.h2d)


@njit(nogil=True, cache=True)
def _split_light(u, v, key, eid, M, relabel, tk, te, lu, lv, lk, le, hu, hv, hk, he):
    nl = 0
    nh = 0
    for i in range(u.shape[0]):
        a = u[i]
        b = v[i]
        if relabel:
            a = M[a]
            b = M[b]
        if a == b:
            continue
        k = key[i]
        e = eid[i]
        if k < tk or (k == tk and e <= te):
            lu[nl] = a
            lv[nl] = b
            lk[nl] = k
            le[nl] = e
            nl += 1
        else:
            hu[nh] = a
            hv[nh] = b
            hk[nh] = k
            he[nh] = e
            nh += 1
    return nl, nh


def split_light(chunk, M, tk, te):
    """Light edges (``(key, eid) <= (tk, te)``) apart from heavy ones (role: filter-edges).

    Relabels by ``M`` first when given, and drops self-loops.  Returns
    ``(light, heavy)`` chunks; a pending ``h2d`` goes with the light one.
    """
    m = len(chunk)
    dts = [chunk.u.dtype, chunk.v.dtype, np.uint64, np.int64]
    L = alloc_soa(m, dts)
    H = alloc_soa(m, dts)
    Mi = M if M is not None else np.zeros(1, np.int64)
    nl, nh = _split_light(chunk.u, chunk.v, chunk.key, chunk.eid, Mi, M is not None, np.uint64(tk),
                          np.int64(te), *L, *H)
    # copy the light part out (it is small); keep the heavy part as a view of its buffer
    return (Chunk(*(a[:nl].copy() for a in L), packing=chunk.packing, h2d=chunk.h2d),
            Chunk(*(a[:nh] for a in H), packing=chunk.packing))


def sample(chunk, pos):
    """``(key, eid)`` of the chunk's edges at positions ``pos``."""
    return chunk.key[pos], chunk.eid[pos]


@njit(nogil=True, cache=True)
def _merge2(c1, k1, e1, o1, c2, k2, e2, o2):
    n1 = c1.shape[0]
    n2 = c2.shape[0]
    cap = n1 + n2
    c = np.empty(cap, np.int64)
    k = np.empty(cap, np.uint64)
    e = np.empty(cap, np.int64)
    o = np.empty(cap, np.int64)
    i = 0
    j = 0
    n = 0
    while i < n1 or j < n2:
        if j >= n2 or (i < n1 and c1[i] < c2[j]):
            c[n] = c1[i]; k[n] = k1[i]; e[n] = e1[i]; o[n] = o1[i]
            i += 1
        elif i >= n1 or c2[j] < c1[i]:
            c[n] = c2[j]; k[n] = k2[j]; e[n] = e2[j]; o[n] = o2[j]
            j += 1
        else:
            if _better(k2[j], e2[j], k1[i], e1[i]):
                c[n] = c2[j]; k[n] = k2[j]; e[n] = e2[j]; o[n] = o2[j]
            else:
                c[n] = c1[i]; k[n] = k1[i]; e[n] = e1[i]; o[n] = o1[i]
            i += 1
            j += 1
        n += 1
    return c[:n], k[:n], e[:n], o[:n]


def merge(parts):
    """Combine sorted candidate records into one cheapest edge per component (role: merge).

    Pairwise two-pointer merges, smallest first; associative, commutative and
    idempotent, so any tree of merges gives the same answer.
    """
    parts = [p.arrays() for p in parts if len(p)]
    if not parts:
        return Candidates.empty()
    while len(parts) > 1:
        parts.sort(key=lambda p: p[0].shape[0])
        a, b = parts[0], parts[1]
        parts = parts[2:] + [_merge2(*a, *b)]
    return Candidates(*parts[0])


@njit(parallel=True, nogil=True, cache=True)
def jump(parent, n_comp):
    """Pointer-jump ``parent`` in place until every component points at its root (role: contract).

    Follow each pointer up to 16 steps and store where it got (its root,
    almost always: hook trees are shallow); repeat while some did not reach
    a root (a long chain).  Writes only ever replace a pointer by an
    ancestor, and roots never change, so concurrent readers stay correct
    and every pass shortens every path.  One pass in the common case,
    against 4-5 full passes of plain pointer doubling.
    """
    while True:
        left = 0
        for c in prange(n_comp):
            p = parent[c]
            if parent[p] == p:
                continue
            r = p
            for _ in range(16):
                q = parent[r]
                if q == r:
                    break
                r = q
            parent[c] = r
            if parent[r] != r:
                left += 1
        if left == 0:
            break


@njit(parallel=True, nogil=True, cache=True)
def number(parent, has, n_comp, fin_off, finish, M, B):
    """Number the roots of a jumped ``parent`` into ``M`` (role: filter-nodes).

    Live roots get ``0..n_next-1`` in id order; with ``finish``, roots without
    a candidate (``has`` false) are finished: ``-(F + 1)``, ``F`` from
    ``fin_off`` on.  Every component then takes its root's number.  A
    blocked scan over ``B`` blocks.  Returns ``(n_next, n_finished)``.
    """
    nl = np.zeros(B + 1, np.int64)
    nf = np.zeros(B + 1, np.int64)
    for b in prange(B):
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        a = 0
        f = 0
        for c in range(lo, hi):
            if parent[c] == c:
                if has[c] or not finish:
                    a += 1
                else:
                    f += 1
        nl[b + 1] = a
        nf[b + 1] = f
    for b in range(B):
        nl[b + 1] += nl[b]
        nf[b + 1] += nf[b]
    for b in prange(B):
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        a = nl[b]
        f = nf[b] + fin_off
        for c in range(lo, hi):
            if parent[c] == c:
                if has[c] or not finish:
                    M[c] = a
                    a += 1
                else:
                    M[c] = -(f + 1)
                    f += 1
    for c in prange(n_comp):
        p = parent[c]
        if p != c:
            M[c] = M[p]
    return nl[B], nf[B]


@njit(parallel=True, nogil=True, cache=True)
def _contract(comp, key, eid, other, n_comp, fin_off, finish, parent, M, has, B):
    k = comp.shape[0]
    for c in prange(n_comp):
        parent[c] = c
        has[c] = False
    for i in prange(k):
        parent[comp[i]] = other[i]
        has[comp[i]] = True
    mark = np.empty(k, np.bool_)
    n_mut = 0
    for i in prange(k):
        c = comp[i]
        o = other[i]
        mk = parent[o] == c and c < o
        mark[i] = mk
        if mk:
            n_mut += 1
    for i in prange(k):
        if mark[i]:
            parent[comp[i]] = comp[i]
    chosen = np.empty(k - n_mut, np.int64)
    j = 0
    for i in range(k):
        if not mark[i]:
            chosen[j] = eid[i]
            j += 1
    jump(parent, n_comp)
    n_next, n_fin = number(parent, has, n_comp, fin_off, finish, M, B)
    return chosen, n_next, n_fin


def blocks_for(n_comp):
    """How many blocks the parallel scans over ``n_comp`` components use."""
    return max(1, min(nthreads() * 4, n_comp // 65536 + 1))


def contract(cand, n_comp, finished_offset, finish=True):
    """Hook, pointer-jump and compact (role: contract, ending with filter-nodes' numbering).

    ``chosen_eids`` come in candidate order.  See
    :meth:`mst_dist.kernels.contract.Backend.contract`.
    """
    n_comp = int(n_comp)
    parent = np.empty(n_comp, np.int64)
    has = np.empty(n_comp, np.bool_)
    M = np.empty(n_comp, np.int64)
    chosen, n_next, n_fin = _contract(*cand.arrays(), np.int64(n_comp), np.int64(finished_offset),
                                      bool(finish), parent, M, has, np.int64(blocks_for(n_comp)))
    return M, chosen, int(n_next), int(n_fin)


def filter_nodes(root, has, finished_offset, finish=True):
    """Compact the component ids of a contracted round into its round map (role: filter-nodes).

    See :meth:`mst_dist.kernels.contract.Backend.filter_nodes`.
    """
    n_comp = int(root.shape[0])
    M = np.empty(n_comp, np.int64)
    n_next, n_fin = number(np.ascontiguousarray(root, dtype=np.int64), np.ascontiguousarray(has, np.bool_),
                           np.int64(n_comp), np.int64(finished_offset), bool(finish), M,
                           np.int64(blocks_for(n_comp)))
    return M, int(n_next), int(n_fin)


# -- local contraction: the edges of vertices no other chunk touches ----------------------------------


@njit(nogil=True, cache=True, inline="always")
def _root(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]  # path halving
        x = parent[x]
    return x


@njit(nogil=True, cache=True)
def _interior_kruskal(lu, lv, interior):
    m, k = lu.shape[0], interior.shape[0]
    parent = np.arange(k)
    tainted = ~interior
    chosen = np.empty(m, np.int64)
    keep = np.empty(m, np.int64)
    nc = nk = 0
    for e in range(m):
        a = _root(parent, lu[e])
        b = _root(parent, lv[e])
        if a == b:
            continue  # both ends joined by lighter forest edges: the heaviest edge of a cycle
        if tainted[a] and tainted[b]:
            keep[nk] = e
            nk += 1
            continue
        # one side holds only interior vertices: every edge leaving it is here and this is the lightest
        if tainted[a] or (not tainted[b] and a < b):
            parent[b] = a
        else:
            parent[a] = b
        chosen[nc] = e
        nc += 1
    rep = np.empty(k, np.int64)
    for x in range(k):
        rep[x] = _root(parent, x)
    return keep[:nk].copy(), chosen[:nc].copy(), rep


def contract_interior(lu, lv, interior):
    """Contract what a chunk decides alone: the forest edges of its interior vertices.

    The edges are in the strict ``(key, eid)`` order, ``lu``/``lv`` each
    end's index into the chunk's sorted distinct ids, ``interior[x]``
    whether id ``x`` is touched by no other chunk (every edge at it is
    here).  Kruskal over the edges, where a union needs one side made only
    of interior vertices: every edge leaving that side is in the chunk, so
    the first one met is the side's cheapest and in the minimum spanning
    forest (the cut property).  Sets holding a vertex that others touch
    never join each other, so each holds at most one such vertex, its
    representative; a set of interior vertices only is a whole component of
    the graph (represented by its smallest id).

    Returns ``(keep, chosen, rep)``: the positions (ascending) of the edges
    between two sets of the first kind (the cut edges, still to be
    decided), those of the forest edges found, and each local id's
    representative (a local id).
    """
    return _interior_kruskal(np.ascontiguousarray(lu), np.ascontiguousarray(lv),
                             np.ascontiguousarray(interior, dtype=np.bool_))

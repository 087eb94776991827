"""Plain NumPy reference versions of the engine's kernels.

Each function here has the same signature and the same result as its fast
counterpart in :mod:`mst_dist.kernels.cpu`; the tests hold the fast kernels
equal to these.  They are written for clarity, not speed, over an array module
``xp`` (numpy by default; cupy has the same calls), so the same formulation can
serve a GPU worker.

Conventions shared by every kernel:

* an edge chunk is four arrays of equal length: ``u``, ``v`` (current
  component ids), ``key`` (``uint64``, order-preserving bits of the weight,
  see :func:`weight_keys`) and ``eid`` (``int64`` global edge id);
* the strict edge order is the lexicographic order of ``(key, eid)``;
* a candidate set is four arrays ``(comp, key, eid, other)`` sorted by
  ``comp`` with unique ``comp``: for each component, its cheapest leaving edge
  and the component at the other end;
* a round map ``M`` sends each component id to its id in the next round
  (``>= 0``) or, for a component that is finished (has no edge left), to
  ``-(F + 1)`` where ``F`` is its final component number.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "weight_keys",
    "first_invalid_edge",
    "map_chunk",
    "merge_candidates",
    "contract",
    "filter_edges",
    "compose_labels",
]

_SIGN64 = np.uint64(1 << 63)


def weight_keys(w, xp=np):
    """Order-preserving ``uint64`` bits of a weight array (chunk role: prepare).

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
    if kind == "u":
        return w.astype(xp.uint64)
    if kind == "b":
        return w.astype(xp.uint64)
    raise TypeError(f"weights of dtype {w.dtype} have no order-preserving key")


def first_invalid_edge(src, dst, w, n_vertices, xp=np):
    """Index of the first edge with a bad endpoint or weight, or -1.

    Bad: a negative id, an id ``>= n_vertices`` (when ``n_vertices >= 0``), a
    NaN or infinite weight.  Returns ``(index, reason)``.
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


def map_chunk(u, v, key, eid, n_comp, xp=np):
    """Cheapest edge leaving each component that the chunk touches (role: map).

    Self-loops (``u == v``) are ignored.  Returns a candidate set
    ``(comp, key, eid, other)`` sorted by ``comp``.
    """
    keep = u != v
    u, v, key, eid = u[keep], v[keep], key[keep], eid[keep]
    comp = xp.concatenate([u, v]).astype(xp.int64)
    other = xp.concatenate([v, u]).astype(xp.int64)
    k = xp.concatenate([key, key])
    e = xp.concatenate([eid, eid]).astype(xp.int64)
    return _group_min(comp, k, e, other, xp)


def _group_min(comp, key, eid, other, xp=np):
    if comp.size == 0:
        z = xp.zeros(0, xp.int64)
        return z, xp.zeros(0, xp.uint64), z.copy(), z.copy()
    order = xp.lexsort((eid, key, comp))
    comp, key, eid, other = comp[order], key[order], eid[order], other[order]
    first = xp.ones(comp.size, bool)
    first[1:] = comp[1:] != comp[:-1]
    return comp[first], key[first], eid[first], other[first]


def merge_candidates(parts, xp=np):
    """Combine candidate sets into one cheapest edge per component (role: merge).

    Associative, commutative and idempotent: any tree of merges gives the same
    answer.
    """
    parts = [p for p in parts if p[0].size]
    if not parts:
        z = xp.zeros(0, xp.int64)
        return z, xp.zeros(0, xp.uint64), z.copy(), z.copy()
    cols = [xp.concatenate([p[i] for p in parts]) for i in range(4)]
    return _group_min(cols[0], cols[1], cols[2], cols[3], xp)


def contract(comp, key, eid, other, n_comp, finished_offset, finish=True, xp=np):
    """Hook components along their cheapest edges and compact ids (roles: contract, filter-nodes).

    Every component with a candidate hooks to the component at the other end;
    a mutual pair (both chose the same edge) keeps the smaller id as root, so
    each chosen edge is counted once.  Pointer jumping takes every component
    to its root.  Roots are numbered ``0..n_next-1`` in increasing order.
    With ``finish``, a component without a candidate has no edge left: it is
    finished and mapped to ``-(F + 1)``, ``F = finished_offset, ...`` in
    increasing id order.  Without ``finish`` (a light-edge pass that will see
    more edges later) such components stay and get ids like the roots.

    Returns ``(M, chosen_eids, n_next, n_finished)`` with ``chosen_eids``
    ascending.
    """
    parent = xp.arange(n_comp, dtype=xp.int64)
    parent[comp] = other
    mutual = (parent[other] == comp) & (comp < other)
    parent[comp[mutual]] = comp[mutual]
    hooked = parent[comp] != comp
    chosen = xp.sort(eid[hooked])
    while True:
        nxt = parent[parent]
        if bool(xp.all(nxt == parent)):
            break
        parent = nxt
    has_cand = xp.zeros(n_comp, bool)
    has_cand[comp] = True
    is_root = parent == xp.arange(n_comp)
    if finish:
        fin = is_root & ~has_cand
        live_root = is_root & has_cand
    else:
        fin = xp.zeros(n_comp, bool)
        live_root = is_root
    new_id = xp.cumsum(live_root) - 1
    fin_id = xp.cumsum(fin) - 1 + finished_offset
    M = xp.where(fin, -(fin_id + 1), new_id[parent])
    return M.astype(xp.int64), chosen.astype(xp.int64), int(live_root.sum()), int(fin.sum())


def filter_edges(u, v, key, eid, M, xp=np):
    """Relabel endpoints by the round map and drop self-loops (role: filter-edges)."""
    nu = M[u]
    nv = M[v]
    keep = nu != nv
    return nu[keep], nv[keep], key[keep], eid[keep]


def compose_labels(maps, n_vertices, xp=np):
    """Final component of every vertex from the rounds' maps, canonically numbered.

    Components are numbered by their smallest vertex, in increasing order, so
    the labels do not depend on how the run went.  Returns
    ``(labels, n_components)``.
    """
    if n_vertices == 0:
        return xp.zeros(0, xp.int64), 0
    final = None
    for M in reversed(maps):
        M = xp.asarray(M, dtype=xp.int64)
        if final is None:
            if bool(xp.any(M >= 0)):
                raise ValueError("the last round map still has live components")
            final = M
        else:
            final = xp.where(M >= 0, final[xp.maximum(M, 0)], M)
    fid = -final - 1
    # canonical numbering: order of first appearance over vertices 0..n-1
    uniq, first = xp.unique(fid, return_index=True)
    order = xp.argsort(first)
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.size)
    labels = rank[xp.searchsorted(uniq, fid)]
    return labels.astype(xp.int64), int(uniq.size)

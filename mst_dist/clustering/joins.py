"""Exact mutual-reachability spanning trees of points: Borůvka rounds over a k-d tree that knows components.

March, Ram and Gray ("Fast Euclidean Minimum Spanning Tree: Algorithm,
Analysis, and Applications", KDD 2010) run Borůvka's rounds on points: in
each round every component needs its lightest edge to another component,
found by a nearest-neighbour search that skips the tree nodes whose points
all lie in the searching point's component.  Here the weight is mutual
reachability, ``max(core(u), core(v), d(u, v))``, so a node is also skipped
when its least core distance, or the searching point's own, is already
above the component's best; the searches are single-tree (one per point, a
component's best so far bounding every search of its points).

Two uses: :func:`join_components` adds, to a kNN graph whose components
are apart, the edges that join them as the exact tree of all pairs would
(each round of Borůvka on the components); :func:`exact_tree` runs the
rounds from single points, the exact mutual-reachability minimum spanning
tree.  Ties are broken by ``(weight, smaller end, larger end)``, one strict
order, so the rounds never close a cycle.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from mst_dist.clustering._kernels import _find
from mst_dist.clustering._neighbours_kernels import _select

__all__ = ["join_components", "exact_tree", "LEAF_SIZE"]

#: Points of a leaf of the k-d tree.
LEAF_SIZE = 16


@njit(nogil=True, cache=True)
def build(X, leaf_size):
    """A k-d tree of ``X``: ``(order, start, end, left, right, lo, hi, nodes)``, split at the median of the widest side.

    Node ``i`` holds the points ``order[start[i]:end[i]]`` in the box
    ``lo[i]..hi[i]``; a leaf has ``left[i] == -1``.  Children come after
    their parent.
    """
    n, d = X.shape
    cap = 2 * (n // max(leaf_size // 2, 1)) + 3
    order = np.arange(n)
    start = np.zeros(cap, np.int64)
    end = np.zeros(cap, np.int64)
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    lo = np.zeros((cap, d))
    hi = np.zeros((cap, d))
    end[0] = n
    nodes = 1
    stack = [0]
    while len(stack):
        i = stack.pop()
        s, e = start[i], end[i]
        for k in range(d):
            lo[i, k] = np.inf
            hi[i, k] = -np.inf
        for t in range(s, e):
            for k in range(d):
                x = X[order[t], k]
                lo[i, k] = min(lo[i, k], x)
                hi[i, k] = max(hi[i, k], x)
        if e - s <= leaf_size:
            continue
        dim = np.argmax(hi[i] - lo[i])
        if hi[i, dim] <= lo[i, dim]:
            continue  # every point the same: a leaf, however many
        m = (s + e) // 2
        keys = np.empty(e - s)
        for t in range(s, e):
            keys[t - s] = X[order[t], dim]
        part = order[s:e].copy()
        _select(keys, part, 0, e - s, m - s)  # the lesser half first, the median at m
        order[s:e] = part
        left[i], right[i] = nodes, nodes + 1
        start[nodes], end[nodes], start[nodes + 1], end[nodes + 1] = s, m, m, e
        stack.append(nodes)
        stack.append(nodes + 1)
        nodes += 2
    return order, start, end, left, right, lo, hi, nodes


@njit(nogil=True, cache=True)
def _node_core(order, start, end, left, right, nodes, core):
    out = np.empty(nodes)
    for i in range(nodes - 1, -1, -1):
        if left[i] < 0:
            m = np.inf
            for t in range(start[i], end[i]):
                m = min(m, core[order[t]])
            out[i] = m
        else:
            out[i] = min(out[left[i]], out[right[i]])
    return out


@njit(nogil=True, cache=True)
def _node_comp(order, start, end, left, right, nodes, comp):
    out = np.empty(nodes, np.int64)
    for i in range(nodes - 1, -1, -1):
        if left[i] < 0:
            c = comp[order[start[i]]]
            for t in range(start[i] + 1, end[i]):
                if comp[order[t]] != c:
                    c = -1
                    break
            out[i] = c
        else:
            out[i] = out[left[i]] if out[left[i]] == out[right[i]] else -1
    return out


@njit(nogil=True, cache=True)
def _box_dist(X, u, lo, hi, i):
    s = 0.0
    for k in range(X.shape[1]):
        x = X[u, k]
        g = lo[i, k] - x if x < lo[i, k] else (x - hi[i, k] if x > hi[i, k] else 0.0)
        s += g * g
    return np.sqrt(s)


@njit(nogil=True, cache=True)
def _better(w, a, b, bw, ba, bb):
    return w < bw or (w == bw and (a < ba or (a == ba and b < bb)))


@njit(nogil=True, cache=True)
def _search_from(X, core, comp, tree, node_core, node_comp, u, stack, bw, bu, bv):
    """Improve component ``comp[u]``'s best edge (``bw``, ``bu``, ``bv`` at it) with the edges out of point ``u``."""
    order, start, end, left, right, lo, hi, nodes = tree
    c = comp[u]
    stack[0] = 0
    top = 1
    while top:
        top -= 1
        i = stack[top]
        if node_comp[i] == c:
            continue
        if max(core[u], node_core[i], _box_dist(X, u, lo, hi, i)) > bw[c]:
            continue
        if left[i] >= 0:
            a, b = left[i], right[i]
            if _box_dist(X, u, lo, hi, a) > _box_dist(X, u, lo, hi, b):
                a, b = b, a
            stack[top] = b
            stack[top + 1] = a  # the nearer child first
            top += 2
            continue
        for s in range(start[i], end[i]):
            v = order[s]
            if comp[v] == c:
                continue
            d = 0.0
            for k in range(X.shape[1]):
                g = X[u, k] - X[v, k]
                d += g * g
            w = max(core[u], core[v], np.sqrt(d))
            if _better(w, min(u, v), max(u, v), bw[c], min(bu[c], bv[c]), max(bu[c], bv[c])):
                bw[c], bu[c], bv[c] = w, u, v


#: components of a round from which on each point's distance to the other parts is bounded by
#: balls: one per component of that round (a bound costs balls x dimensions a point)
BALLED_COMPONENTS = 32


@njit(parallel=True, cache=True)
def _balls(X, comp, ncomp):
    """A ball about each component's mean holding all its points: ``(centre, radius)``."""
    n, d = X.shape
    centre = np.zeros((ncomp, d))
    size = np.zeros(ncomp)
    for u in range(n):
        size[comp[u]] += 1
        for k in range(d):
            centre[comp[u], k] += X[u, k]
    for c in range(ncomp):
        for k in range(d):
            centre[c, k] /= max(size[c], 1.0)
    to_centre = np.empty(n)
    for u in prange(n):
        q = 0.0
        for k in range(d):
            g = X[u, k] - centre[comp[u], k]
            q += g * g
        to_centre[u] = np.sqrt(q)
    radius = np.zeros(ncomp)
    for u in range(n):
        radius[comp[u]] = max(radius[comp[u]], to_centre[u])
    return centre, radius


@njit(parallel=True, cache=True)
def _raise_bounds(X, comp, ball_of, centre, radius, low):
    """Raise ``low[u]`` to point ``u``'s distance to the nearest ball of points outside its component.

    ``ball_of[u]``: the ball holding point ``u`` (the balls are the
    components of an earlier round, so each lies in one component now).
    The distance to a ball, its centre's less its radius, is lowered by a
    margin above rounding: a bound a hair too high could rule out a pair
    that wins a tie.
    """
    n, d = X.shape
    balls = radius.shape[0]
    ball_comp = np.empty(balls, np.int64)
    for u in range(n):
        ball_comp[ball_of[u]] = comp[u]
    for u in prange(n):
        best = np.inf
        for b in range(balls):
            if ball_comp[b] == comp[u]:
                continue
            q = 0.0
            for k in range(d):
                g = X[u, k] - centre[b, k]
                q += g * g
            q = np.sqrt(q)
            best = min(best, q - radius[b] - 1e-9 * (q + radius[b]))
        low[u] = max(low[u], best)


#: points one thread searches from in a row (consecutive in the visit order: in tree order, near
#: points sharing nodes; by bound, the points nearest other parts first)
SEARCH_BLOCK = 4096


@njit(parallel=True, cache=True)
def _round(X, core, comp, ncomp, tree, node_core, threads, low):
    """Each component's lightest edge to another: ``(u, v, w)`` arrays of length ``ncomp``.

    ``low[u]`` bounds the distance of point ``u`` to every point outside
    its component (:func:`_raise_bounds`; 0: none known).  Where bounds
    are known the points are searched from least bound first (a
    component's best comes early, and its points whose bound is above the
    best need no search), else in the tree's order; in blocks dealt
    round-robin to ``threads`` workers.  Each keeps its own best per
    component (a bound for its later searches), and the bests are merged by
    the one strict order, so the result does not depend on the threads.
    """
    order = tree[0]
    nodes = tree[7]
    node_comp = _node_comp(order, tree[1], tree[2], tree[3], tree[4], nodes, comp)
    bw = np.full((threads, ncomp), np.inf)
    bu = np.full((threads, ncomp), -1, np.int64)
    bv = np.full((threads, ncomp), -1, np.int64)
    n = order.shape[0]
    bounded = n > 0 and low.max() > 0.0
    visit = np.argsort(low, kind="mergesort") if bounded else order
    blocks = (n + SEARCH_BLOCK - 1) // SEARCH_BLOCK
    depth = 0
    while (1 << depth) < nodes + 1:
        depth += 1
    if bounded:
        # every component's first point (the nearest to another part) searched here: each thread
        # starts from those bests, not from none (with the points in this order, one thread's
        # blocks can hold every point near another part)
        stack = np.empty(4 * depth + 64, np.int64)
        seen = np.zeros(ncomp, np.bool_)
        left_to_see = ncomp
        for t in range(n):
            u = visit[t]
            if not seen[comp[u]]:
                seen[comp[u]] = True
                _search_from(X, core, comp, tree, node_core, node_comp, u, stack, bw[0], bu[0], bv[0])
                left_to_see -= 1
                if left_to_see == 0:
                    break
        for me in range(1, threads):
            bw[me], bu[me], bv[me] = bw[0], bu[0], bv[0]
    for me in prange(threads):
        tw, tu, tv = bw[me], bu[me], bv[me]
        stack = np.empty(4 * depth + 64, np.int64)
        for b in range(me, blocks, threads):
            for t in range(b * SEARCH_BLOCK, min(n, (b + 1) * SEARCH_BLOCK)):
                u = visit[t]
                if max(core[u], low[u]) > tw[comp[u]]:
                    continue
                _search_from(X, core, comp, tree, node_core, node_comp, u, stack, tw, tu, tv)
    for c in prange(ncomp):
        for me in range(1, threads):
            if bu[me, c] >= 0 and (bu[0, c] < 0 or _better(bw[me, c], min(bu[me, c], bv[me, c]),
                                                          max(bu[me, c], bv[me, c]), bw[0, c],
                                                          min(bu[0, c], bv[0, c]), max(bu[0, c], bv[0, c]))):
                bw[0, c], bu[0, c], bv[0, c] = bw[me, c], bu[me, c], bv[me, c]
    return bu[0], bv[0], bw[0]


@njit(nogil=True, cache=True)
def _merge(comp, ncomp, bu, bv):
    """Join each component to its best edge's other end: the edges taken ``(u, v)`` and the new components."""
    parent = np.arange(ncomp)
    us = np.empty(ncomp, np.int64)
    vs = np.empty(ncomp, np.int64)
    taken = 0
    for c in range(ncomp):
        a, b = _find(parent, comp[bu[c]]), _find(parent, comp[bv[c]])
        if a != b:
            parent[max(a, b)] = min(a, b)
            us[taken], vs[taken] = bu[c], bv[c]
            taken += 1
    label = np.full(ncomp, -1, np.int64)
    count = 0
    for c in range(ncomp):  # roots numbered in order: a root is the least member of its set
        r = _find(parent, c)
        if label[r] < 0:
            label[r] = count
            count += 1
        label[c] = label[r]
    out = np.empty(comp.shape[0], np.int64)
    for i in range(comp.shape[0]):
        out[i] = label[comp[i]]
    return us[:taken], vs[:taken], out, count


def _rounds(X, core, comp):
    """Borůvka's rounds from the components ``comp`` until one is left: the edges added, ``(u, v)``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    core = np.ascontiguousarray(core, dtype=np.float64)
    tree = build(X, LEAF_SIZE)
    node_core = _node_core(*tree[:5], tree[7], core)
    us, vs = [], []
    _, comp = np.unique(comp, return_inverse=True)
    comp = comp.astype(np.int64)
    ncomp = int(comp.max()) + 1 if comp.shape[0] else 0
    low = np.zeros(X.shape[0])
    ball_of = None
    while ncomp > 1:
        if ball_of is None and ncomp <= BALLED_COMPONENTS:
            ball_of = comp.copy()
            centre, radius = _balls(X, comp, ncomp)
        if ball_of is not None:
            _raise_bounds(X, comp, ball_of, centre, radius, low)
        bu, bv, _ = _round(X, core, comp, ncomp, tree, node_core, numba.get_num_threads(), low)
        u, v, comp, ncomp = _merge(comp, ncomp, bu, bv)
        us.append(u)
        vs.append(v)
    if not us:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(us), np.concatenate(vs)


def join_components(X, core, src, dst):
    """Edges ``(u, v)`` joining the components of the graph ``(src, dst)`` on points ``X``, as the exact tree would.

    Empty where the graph is connected.  ``core``: the points' core
    distances (finite).
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    n = X.shape[0]
    A = sp.coo_matrix((np.ones(src.shape[0]), (src, dst)), shape=(n, n))
    k, comp = connected_components(A, directed=False)
    if k <= 1:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return _rounds(X, core, comp)


def exact_tree(X, core):
    """The exact minimum spanning tree of the points' mutual reachability distances: edges ``(u, v)``, ``n - 1`` of them."""
    return _rounds(X, core, np.arange(X.shape[0]))


def with_joins(graph, X, min_samples, exact=False):
    """The kNN ``graph`` of points ``X`` with the edges of the exact tree added, weighted by distance.

    ``exact=False``: the edges joining its components (none where it is
    connected); ``exact=True``: every edge of the exact mutual-reachability
    tree.  The forest of the result's mutual reachability distances is then
    a spanning tree, and with ``exact`` the exact one.
    """
    from mst_dist.clustering._kernels import core_distances
    from mst_dist.graph import Graph

    X = np.ascontiguousarray(X, dtype=np.float64)
    src, dst, w = graph.to_arrays()
    n = X.shape[0]
    # each point's core distance from the neighbours the kNN graph already holds: its (min_samples - 1)-th
    # nearest other point, the point itself counted first (the kernel hdbscan's core_distances calls)
    core = core_distances(n, np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(w, np.float64),
                          min_samples - 1)
    short = ~np.isfinite(core)
    if short.any():  # a graph of fewer neighbours than that: those points asked of a tree of all of them
        from sklearn.neighbors import KDTree

        core[short] = KDTree(X).query(X[short], k=min_samples)[0][:, -1]
    u, v = exact_tree(X, core) if exact else join_components(X, core, np.asarray(src), np.asarray(dst))
    if not u.shape[0]:
        return graph
    d = np.sqrt(((X[u] - X[v]) ** 2).sum(axis=1))
    return Graph.from_arrays(np.concatenate([src, u]), np.concatenate([dst, v]), np.concatenate([w, d]),
                             n_vertices=X.shape[0], name=f"{graph.name}+joins" if getattr(graph, "name", None)
                             else "knn+joins")

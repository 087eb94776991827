"""Numba kernels of the clustering layer: arrays in, arrays out.

Every kernel walks the forest's edges in the engine's order, ``(weight, edge
id)``, given as ``order`` (positions into ``src``/``dst``) or as ``rank``
(each edge's position in that order).  The walks are sequential union-finds,
O(n alpha(n)) apart from the Borůvka levels (O(n) per round).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the CPU to bring ``array[index]`` (its first element on that row) into cache; no effect else.

    The union-find walks below reach their arrays at random: issued a few
    edges ahead, the loads of later edges overlap the work on this one
    instead of waiting for memory in turn (LLVM's ``llvm.prefetch``, which
    Numba does not expose).
    """
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        first = context.cast(builder, args[1], idxty, types.intp)
        at = [first] + [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, at, wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        # read, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


#: bits of the key one pass of :func:`radix_order` sorts by: 256 buckets, each pass writing to 256
#: places at once (faster on a 10M-edge forest than 10-16 bits, with fewer passes)
RADIX_BITS = 8


def sort_keys(values):
    """uint64 keys whose unsigned order is the order of ``values`` (any real dtype), equal values equal keys.

    Floats: IEEE bits with the sign flipped (negatives all bits flipped);
    ``-0.0`` is keyed as ``0.0`` and every nan as one nan, after ``inf``, as
    NumPy sorts them.  Signed integers: the sign bit flipped.
    """
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind == "f":
        v = values.astype(np.float64, copy=False)
        return _float_keys(v, v.view(np.uint64))
    if kind in "iu" or kind == "b":
        if kind == "i":
            return values.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
        return values.astype(np.uint64)
    raise TypeError(f"no order for weights of dtype {values.dtype}")


@njit(nogil=True, cache=True)
def _float_keys(values, bits):
    top = np.uint64(1) << np.uint64(63)
    keys = np.empty(values.shape[0], dtype=np.uint64)
    for i in range(values.shape[0]):
        x = values[i]
        if x != x:
            b = np.uint64(0x7FF8000000000000)
        elif x == 0:
            b = np.uint64(0)
        else:
            b = bits[i]
        keys[i] = ~b if b & top else b | top
    return keys


@njit(nogil=True, cache=True)
def radix_order(keys, bits):
    """Positions of ``keys`` in ``(key, position)`` order: a least-significant-digit radix sort.

    Stable, so ties keep their positions' order; a pass whose digit is the
    same for every key is skipped (the high bits of weights of one range).
    Positions are int32 while they fit (less to move per pass), returned as
    int64.
    """
    m = keys.shape[0]
    nb = 1 << bits
    mask = np.uint64(nb - 1)
    npass = (64 + bits - 1) // bits
    hist = np.zeros((npass, nb), dtype=np.int64)
    for i in range(m):
        k = keys[i]
        for p in range(npass):
            hist[p, (k >> np.uint64(p * bits)) & mask] += 1
    if m < 2**31:
        return _radix_passes(keys, hist, bits, np.arange(m, dtype=np.int32)).astype(np.int64)
    return _radix_passes(keys, hist, bits, np.arange(m, dtype=np.int64))


@njit(nogil=True, cache=True)
def _radix_passes(keys, hist, bits, pos):
    m = keys.shape[0]
    nb = hist.shape[1]
    mask = np.uint64(nb - 1)
    k1 = keys.copy()
    k2 = np.empty_like(k1)
    p2 = np.empty_like(pos)
    start = np.empty(nb, dtype=np.int64)
    for p in range(hist.shape[0]):
        shift = np.uint64(p * bits)
        if m == 0 or hist[p, (k1[0] >> shift) & mask] == m:
            continue  # one digit for all: nothing to move
        s = 0
        for b in range(nb):
            start[b] = s
            s += hist[p, b]
        for i in range(m):
            k = k1[i]
            d = (k >> shift) & mask
            j = start[d]
            start[d] = j + 1
            k2[j] = k
            p2[j] = pos[i]
        k1, k2 = k2, k1
        pos, p2 = p2, pos
    return pos


@njit(nogil=True, cache=True)
def _find(parent, x):
    """Root of ``x``, halving the path on the way."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def linkage_rows(n, src, dst, height, order, reps, join_height):
    """Rows of the single-linkage matrix: Kruskal's merges over the forest, then joins.

    ``src``/``dst``/``height`` (float64): the forest's edges; ``order``: their
    positions in ``(weight, edge id)`` order, the walk's order; ``reps``: one
    vertex per connected component, in order of the components' smallest
    vertex.  Each forest edge merges the clusters of its ends; cluster ids
    are SciPy's (vertices ``0..n-1``, the cluster made by row ``i`` is
    ``n + i``), a row is ``[smaller id, larger id, height, size]``.  Then the
    cluster of ``reps[0]`` joins ``reps[1]``'s, then ``reps[2]``'s, ... at
    ``join_height``.  A vertex's union-find parent, and as a root its size and
    cluster id, share one 16- or 32-byte entry (one cache line per vertex
    reached), int32 where the cluster ids fit.
    """
    idt = np.int32 if 2 * n < 2**31 else np.int64
    uf = np.empty((n, 4), dtype=idt)  # [parent, size, cluster id, unused] of each vertex
    uf[:, 0] = np.arange(n, dtype=idt)
    uf[:, 1] = 1
    uf[:, 2] = uf[:, 0]
    return _linkage_walk(n, src, dst, height, order, reps, join_height, uf)


#: how many edges ahead the linkage walk prefetches an edge, its ends' union-find entries, and
#: their parents' (each needs the one before in cache): far enough ahead for a fetch to land, near
#: enough that the lines are still in cache when the walk gets there
EDGE_AHEAD, ENDS_AHEAD, PARENTS_AHEAD = 48, 24, 8


@njit(nogil=True, cache=True)
def _prefetch_ahead(k, order, src, dst, height, table):
    """At step ``k`` of a walk over ``order``: prefetch the edge ``EDGE_AHEAD`` on, and the union-find
    ``table`` entries of the ends of the edge ``ENDS_AHEAD`` on (in cache by then)."""
    m = order.shape[0]
    if k + EDGE_AHEAD < m:
        e = order[k + EDGE_AHEAD]
        prefetch(src, e)
        prefetch(dst, e)
        prefetch(height, e)
    if k + ENDS_AHEAD < m:
        e = order[k + ENDS_AHEAD]
        prefetch(table, src[e])
        prefetch(table, dst[e])


@njit(nogil=True, cache=True)
def _uf_find(uf, x):
    """Root of ``x`` in the ``[parent, ...]`` rows of ``uf``, halving the path on the way."""
    while uf[x, 0] != x:
        uf[x, 0] = uf[uf[x, 0], 0]
        x = uf[x, 0]
    return x


@njit(nogil=True, cache=True)
def _linkage_walk(n, src, dst, height, order, reps, join_height, uf):
    """:func:`linkage_rows`' walk, over the union-find rows it was given."""
    Z = np.empty((max(n - 1, 0), 4), dtype=np.float64)
    i = 0
    m = order.shape[0]
    for k in range(m + max(reps.shape[0] - 1, 0)):
        if k < m:
            _prefetch_ahead(k, order, src, dst, height, uf)
            if k + PARENTS_AHEAD < m:
                e = order[k + PARENTS_AHEAD]
                prefetch(uf, uf[src[e], 0])
                prefetch(uf, uf[dst[e], 0])
            e = order[k]
            ra = _uf_find(uf, src[e])
            rb = _uf_find(uf, dst[e])
            h = height[e]
        else:
            ra = _uf_find(uf, reps[0])
            rb = _uf_find(uf, reps[k - m + 1])
            h = join_height
        if ra == rb:  # not a forest (a caller's mistake): such an edge merges nothing
            continue
        ca, cb = uf[ra, 2], uf[rb, 2]
        Z[i, 0] = min(ca, cb)
        Z[i, 1] = max(ca, cb)
        Z[i, 2] = h
        s = uf[ra, 1] + uf[rb, 1]
        Z[i, 3] = s
        if uf[ra, 1] < uf[rb, 1]:
            ra, rb = rb, ra
        uf[rb, 0] = ra
        uf[ra, 1] = s
        uf[ra, 2] = n + i
        i += 1
    return Z[:i]


@njit(nogil=True, cache=True)
def _link(parent, ra, rb):
    """Join the sets of roots ``ra != rb`` under the smaller: every vertex's parent is then at most
    itself, and a set's root is its smallest vertex."""
    if ra < rb:
        parent[rb] = ra
    else:
        parent[ra] = rb


@njit(nogil=True, cache=True)
def _number(parent, n):
    """Labels ``0..k-1`` of the union-find's sets (linked by :func:`_link`), in order of each set's smallest vertex.

    A set's root is its smallest vertex and every parent is below its child,
    so one pass upwards labels a vertex from its parent's label, no find.
    """
    labels = np.empty(n, dtype=np.int64)
    k = 0
    for v in range(n):
        if v + PARENTS_AHEAD < n:
            prefetch(labels, parent[v + PARENTS_AHEAD])
        p = parent[v]
        if p == v:
            labels[v] = k
            k += 1
        else:
            labels[v] = labels[p]
    return labels


def flat_labels(n, src, dst, height, order, max_clusters, threshold):
    """Flat clusters of the forest: SciPy's ``fcluster`` criteria, from the forest's edges.

    ``max_clusters < 0``: merge every edge of ``height <= threshold``
    (criterion ``"distance"``).  Otherwise merge edges in order, a whole
    group of equal heights at a time, until at most ``max_clusters``
    clusters are left (criterion ``"maxclust"``: the lowest merge height at
    which the count is at most ``max_clusters``).  ``src``/``dst``/``height``
    include the joins of components, if any; ``order``: the edges to walk, in
    that order.  Labels are numbered in order of each cluster's smallest
    vertex.
    """
    parent = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    return _flat_walk(n, src, dst, height, order, max_clusters, threshold, parent)


@njit(nogil=True, cache=True)
def _flat_walk(n, src, dst, height, order, max_clusters, threshold, parent):
    """:func:`flat_labels`' walk over the union-find array it was given (prefetching as the linkage's walk)."""
    count = n
    m = order.shape[0]
    if max_clusters >= 0 and count <= max_clusters:
        return _number(parent, n)
    for k in range(m):
        _prefetch_ahead(k, order, src, dst, height, parent)
        e = order[k]
        h = height[e]
        if max_clusters < 0 and not h <= threshold:
            break
        ra = _find(parent, src[e])
        rb = _find(parent, dst[e])
        if ra != rb:
            _link(parent, ra, rb)
            count -= 1
        if max_clusters >= 0 and count <= max_clusters:
            if k + 1 == m or height[order[k + 1]] != h:
                break
    return _number(parent, n)


@njit(nogil=True, cache=True)
def boruvka_levels(n, src, dst, rank):
    """The components after each Borůvka round, run on the forest itself.

    In each round every component takes its cheapest incident edge (least
    ``rank``) and the components those edges join are merged.  Returns a
    ``(rounds, n)`` int64 array: row ``r`` labels each vertex with its
    component after round ``r + 1``, numbered by smallest vertex.
    """
    m = src.shape[0]
    parent = np.arange(n)
    comp = np.arange(n)              # component of each vertex, this round's numbering
    best = np.full(n, -1, dtype=np.int64)
    alive = np.arange(m)             # edges still joining two components
    levels = []
    while alive.shape[0] > 0:
        for k in range(alive.shape[0]):
            e = alive[k]
            for c in (comp[src[e]], comp[dst[e]]):
                b = best[c]
                if b < 0 or rank[e] < rank[b]:
                    best[c] = e
        for k in range(alive.shape[0]):
            e = alive[k]
            for c in (comp[src[e]], comp[dst[e]]):
                b = best[c]
                if b >= 0:
                    ra = _find(parent, src[b])
                    rb = _find(parent, dst[b])
                    if ra != rb:
                        _link(parent, ra, rb)
                    best[c] = -1
        lab = _number(parent, n)
        levels.append(lab)
        comp = lab
        keep = 0
        for k in range(alive.shape[0]):
            e = alive[k]
            if comp[src[e]] != comp[dst[e]]:
                alive[keep] = e
                keep += 1
        alive = alive[:keep]
    out = np.empty((len(levels), n), dtype=np.int64)
    for r in range(len(levels)):
        out[r] = levels[r]
    return out


@njit(parallel=True, cache=True)
def nearest(n, src, dst, weight, k, both):
    """Each vertex's ``k`` nearest distinct neighbours along its edges: ``(d, nb)``, both ``(n, k)``.

    Row ``v`` holds the least weights to ``v``'s nearest neighbours,
    ascending (``inf``, neighbour ``-1``, where fewer than ``k``; of equal
    weights the edge given first).  Edges count for both ends (``both``) or
    for ``src`` only (lists of candidates being merged).  Self-loops are
    skipped; parallel edges count once (their least weight).  The edges are
    first bucketed by vertex (in edge order), then the vertices' rows are
    filled in parallel.
    """
    m = src.shape[0]
    start = np.zeros(n + 1, np.int64)
    for e in range(m):
        a, b = src[e], dst[e]
        if both:
            if a == b:  # (lists being merged hold no self-loop, and their ids are not comparable)
                continue
            start[b + 1] += 1
        start[a + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:n].copy()
    # each vertex's neighbours and weights, in edge order (read in order below, not gathered)
    other = np.empty(start[n], np.int64)
    ws = np.empty(start[n], np.float64)
    for e in range(m):
        a, b = src[e], dst[e]
        if both and a == b:
            continue
        other[fill[a]] = b
        ws[fill[a]] = weight[e]
        fill[a] += 1
        if both:
            other[fill[b]] = a
            ws[fill[b]] = weight[e]
            fill[b] += 1
    d = np.full((n, k), np.inf)
    nb = np.full((n, k), -1, dtype=np.int64)
    for v in prange(n):
        for s in range(start[v], start[v + 1]):
            u = other[s]
            w = ws[s]
            # already one of v's k nearest? keep the lesser weight
            j = -1
            for i in range(k):
                if nb[v, i] == u:
                    j = i
                    break
            if j >= 0:
                if w >= d[v, j]:
                    continue
                # drop the old entry, then insert as new
                for i in range(j, k - 1):
                    d[v, i] = d[v, i + 1]
                    nb[v, i] = nb[v, i + 1]
                d[v, k - 1] = np.inf
                nb[v, k - 1] = -1
            if w >= d[v, k - 1]:
                continue
            i = k - 1
            while i > 0 and d[v, i - 1] > w:
                d[v, i] = d[v, i - 1]
                nb[v, i] = nb[v, i - 1]
                i -= 1
            d[v, i] = w
            nb[v, i] = u
    return d, nb


@njit(parallel=True, cache=True)
def core_distances(n, src, dst, weight, k):
    """Distance of each vertex to its ``k``-th nearest distinct neighbour along its edges.

    Self-loops are skipped; parallel edges count once (their least
    weight).  A vertex with fewer than ``k`` distinct neighbours gets
    ``inf``; ``k = 0`` gives zeros.
    """
    out = np.zeros(n, dtype=np.float64)
    if k <= 0:
        return out
    d, _ = nearest(n, src, dst, weight, k, True)
    for v in prange(n):
        out[v] = d[v, k - 1]
    return out


@njit(nogil=True, cache=True)
def _emit(p_out, c_out, l_out, s_out, o, parent, child, lam, size):
    p_out[o] = parent
    c_out[o] = child
    l_out[o] = lam
    s_out[o] = size
    return o + 1


@njit(nogil=True, cache=True)
def condense(Z, n, min_cluster_size, merge_ties):
    """The condensed tree of a single-linkage matrix (Campello, Moulavi and Sander's HDBSCAN*).

    Walks the hierarchy top down (a parent row before its children): at
    each height every cluster loses, all at once, its merges of that height
    (the rows of equal height beneath one another are one event, so the
    order in which tied merges were recorded does not matter; without
    ``merge_ties`` each row is an event of its own, in the matrix's order,
    the binary condensation of scikit-learn and the ``hdbscan`` package).
    The parts
    left are the cluster's children: with two or more of at least
    ``min_cluster_size`` points, each such part is a new cluster; with
    one, it goes on as the same cluster; the points of the smaller parts
    fall out at that lambda (``1 / height``).  Clusters are numbered ``n``
    (the root), ``n + 1``, ... parents before children.  Without tied
    heights both ways are the same.

    Returns ``(parent, child, lam, child_size)``: one row per point (the
    cluster it falls out of) and one per cluster but the root (its parent).
    """
    rows = Z.shape[0]
    cap = n + 2 * max(rows, 1)
    p_out = np.empty(cap, dtype=np.int64)
    c_out = np.empty(cap, dtype=np.int64)
    l_out = np.empty(cap, dtype=np.float64)
    s_out = np.empty(cap, dtype=np.int64)
    if rows == 0:
        for v in range(n):
            _emit(p_out, c_out, l_out, s_out, v, n, v, np.inf, 1)
        return p_out[:n], c_out[:n], l_out[:n], s_out[:n]
    label = np.full(rows, -1, dtype=np.int64)    # cluster an internal node belongs to
    fallen = np.zeros(rows, dtype=np.bool_)      # the node has fallen out at fall_lam
    inner = np.zeros(rows, dtype=np.bool_)       # a tied merge handled with the row above it
    fall_lam = np.zeros(rows, dtype=np.float64)
    parts = np.empty(rows + 1, dtype=np.int64)   # the parts a cluster splits into at one height
    stack = np.empty(rows + 1, dtype=np.int64)
    label[rows - 1] = n
    nxt = n + 1
    o = 0
    for i in range(rows - 1, -1, -1):
        if inner[i]:
            continue
        L = label[i]
        if fallen[i]:
            lam = fall_lam[i]
            for t in range(2):
                c = np.int64(Z[i, t])
                if c < n:
                    o = _emit(p_out, c_out, l_out, s_out, o, L, c, lam, 1)
                else:
                    label[c - n] = L
                    fallen[c - n] = True
                    fall_lam[c - n] = lam
            continue
        h = Z[i, 2]
        lam = 1.0 / h if h > 0.0 else np.inf
        # the parts left when every merge of height h below row i is undone
        k = 0
        top = 0
        stack[top] = i
        top += 1
        while top > 0:
            top -= 1
            r = stack[top]
            for t in range(2):
                c = np.int64(Z[r, t])
                if merge_ties and c >= n and Z[c - n, 2] == h:
                    inner[c - n] = True
                    stack[top] = c - n
                    top += 1
                else:
                    parts[k] = c
                    k += 1
        big = 0
        for t in range(k):
            c = parts[t]
            if (1 if c < n else np.int64(Z[c - n, 3])) >= min_cluster_size:
                big += 1
        for t in range(k):
            c = parts[t]
            sz = 1 if c < n else np.int64(Z[c - n, 3])
            if sz >= min_cluster_size and big >= 2:  # a true split: a new cluster
                o = _emit(p_out, c_out, l_out, s_out, o, L, nxt, lam, sz)
                if c < n:  # a one-point cluster (min_cluster_size 1) empties at once
                    o = _emit(p_out, c_out, l_out, s_out, o, nxt, c, lam, 1)
                else:
                    label[c - n] = nxt
                nxt += 1
            elif sz >= min_cluster_size:  # the one part that goes on as the same cluster
                if c < n:
                    o = _emit(p_out, c_out, l_out, s_out, o, L, c, lam, 1)
                else:
                    label[c - n] = L
            else:  # falls out
                if c < n:
                    o = _emit(p_out, c_out, l_out, s_out, o, L, c, lam, 1)
                else:
                    label[c - n] = L
                    fallen[c - n] = True
                    fall_lam[c - n] = lam
    return p_out[:o], c_out[:o], l_out[:o], s_out[:o]


@njit(nogil=True, cache=True)
def select_clusters(parent, child, lam, size, n, leaf, allow_single_cluster):
    """Flat clusters of a condensed tree: excess of mass (or its leaves), then each point's cluster.

    Stability of a cluster: the sum over its rows of ``(lambda - birth) *
    size``.  Excess of mass (Campello, Moulavi, Zimek and Sander,
    "Hierarchical Density Estimates for Data Clustering, Visualization, and
    Outlier Detection") walks the clusters from the last (the deepest)
    up: a cluster whose children's summed stability exceeds its own takes
    that sum and is not selected; else it is, and none of its descendants
    is.  The root is a candidate only with ``allow_single_cluster``.
    ``leaf``: the clusters without child clusters instead.

    Returns ``(selected, labels, probabilities)``: the selected cluster ids,
    each point's selected cluster (or ``-1``, noise) and its membership
    strength (its lambda over its cluster's largest, capped at 1).
    """
    C = 1
    for r in range(parent.shape[0]):
        if child[r] >= n and child[r] - n + 1 > C:
            C = child[r] - n + 1
    birth = np.zeros(C)
    cpar = np.full(C, -1, dtype=np.int64)
    has_kids = np.zeros(C, dtype=np.bool_)
    point_row = np.full(n, -1, dtype=np.int64)
    for r in range(parent.shape[0]):
        c = child[r]
        if c >= n:
            birth[c - n] = lam[r]
            cpar[c - n] = parent[r] - n
            has_kids[parent[r] - n] = True
        else:
            point_row[c] = r
    stab = np.zeros(C)
    death = np.zeros(C)
    for r in range(parent.shape[0]):
        p = parent[r] - n
        stab[p] += (lam[r] - birth[p]) * size[r]
        if lam[r] > death[p]:
            death[p] = lam[r]
    own = np.zeros(C, dtype=np.bool_)
    if leaf:
        for c in range(1, C):  # never the root: a tree of the root alone has no cluster
            own[c] = not has_kids[c]
    else:
        sub = np.zeros(C)
        last = 0 if allow_single_cluster else 1
        for c in range(C - 1, last - 1, -1):
            if sub[c] > stab[c]:
                stab[c] = sub[c]
            else:
                own[c] = True
            if c > 0:
                sub[cpar[c]] += stab[c]
    anc = np.full(C, -1, dtype=np.int64)   # the selected cluster holding each cluster, if any
    selected = []
    for c in range(C):
        up = anc[cpar[c]] if c > 0 else -1
        if up < 0 and own[c]:
            anc[c] = c
            selected.append(c + n)
        else:
            anc[c] = up
    labels = np.full(n, -1, dtype=np.int64)
    prob = np.zeros(n)
    root_max = death[0]
    for v in range(n):
        r = point_row[v]
        if r < 0:
            continue
        s = anc[parent[r] - n]
        if s < 0:
            continue
        if s == 0 and (not allow_single_cluster or not lam[r] >= root_max):
            continue  # the root as the single cluster: its densest points only
        labels[v] = s
        if death[s] == 0.0 or np.isinf(lam[r]):
            prob[v] = 1.0
        else:
            prob[v] = min(lam[r], death[s]) / death[s]
    return np.array(selected, dtype=np.int64), labels, prob

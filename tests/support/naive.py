"""Slow, obviously-correct reference implementations the engine is tested against."""
from __future__ import annotations

import numpy as np


def kruskal(n_vertices, src, dst, weight):
    """Kruskal over a stable sort by weight: the unique MSF under (weight, edge id).

    Pure Python union-find with union by size; weights compared as Python
    numbers (exact for int64 beyond 2**53).  Returns ``(edge_ids, n_components)``.
    """
    src = np.asarray(src).tolist()
    dst = np.asarray(dst).tolist()
    w = np.asarray(weight).tolist()
    order = sorted(range(len(w)), key=lambda i: (w[i], i))
    parent = list(range(n_vertices))
    size = [1] * n_vertices

    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    chosen = []
    for i in order:
        a, b = find(src[i]), find(dst[i])
        if a == b:
            continue
        if size[a] < size[b]:
            a, b = b, a
        parent[b] = a
        size[a] += size[b]
        chosen.append(i)
    comps = len({find(x) for x in range(n_vertices)})
    return np.array(sorted(chosen), dtype=np.int64), comps


def component_labels(n_vertices, src, dst):
    """Connected components numbered by their smallest vertex (BFS)."""
    adj = [[] for _ in range(n_vertices)]
    for a, b in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
        adj[a].append(b)
        adj[b].append(a)
    lab = [-1] * n_vertices
    c = 0
    for s in range(n_vertices):
        if lab[s] >= 0:
            continue
        lab[s] = c
        stack = [s]
        while stack:
            x = stack.pop()
            for y in adj[x]:
                if lab[y] < 0:
                    lab[y] = c
                    stack.append(y)
        c += 1
    return np.array(lab, dtype=np.int64)


def single_linkage(n_vertices, src, dst, weight):
    """SciPy's linkage matrix of single linkage over the graph's edges, by Kruskal's merges.

    Merges in ``(weight, edge id)`` order, each row ``[smaller cluster id, larger, weight, size]``
    (cluster ``n + i`` made by row ``i``); the components left are then joined at ``inf`` in order
    of their smallest vertex, each onto the cluster of those joined before.
    """
    src = np.asarray(src).tolist()
    dst = np.asarray(dst).tolist()
    w = np.asarray(weight).tolist()
    parent = list(range(n_vertices))
    cluster = list(range(n_vertices))
    size = [1] * n_vertices

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    rows = []
    for e in sorted(range(len(w)), key=lambda i: (w[i], i)):
        a, b = find(src[e]), find(dst[e])
        if a == b:
            continue
        ca, cb = cluster[a], cluster[b]
        parent[b] = a
        size[a] += size[b]
        cluster[a] = n_vertices + len(rows)
        rows.append([min(ca, cb), max(ca, cb), float(w[e]), size[a]])
    roots = []
    for v in range(n_vertices):
        r = find(v)
        if r not in roots:
            roots.append(r)
    if roots:
        acc, total = cluster[roots[0]], size[roots[0]]
        for r in roots[1:]:
            total += size[r]
            rows.append([min(acc, cluster[r]), max(acc, cluster[r]), np.inf, total])
            acc = n_vertices + len(rows) - 1
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def numbered_by_smallest_vertex(labels):
    """Cluster labels renumbered ``0, 1, ...`` in order of each cluster's smallest vertex."""
    names = {}
    return np.array([names.setdefault(x, len(names)) for x in np.asarray(labels).tolist()], dtype=np.int64)

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

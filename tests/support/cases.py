"""Hand-made graphs shared by the engine tests: (name, n_vertices, src, dst, weight)."""
import numpy as np
import pytest

import mst_dist
from support.naive import component_labels, kruskal

# The Wikipedia MST example (vertices A..G = 0..6).
_WIKI = [(0, 1, 7), (0, 3, 5), (1, 2, 8), (1, 3, 9), (1, 4, 7), (2, 4, 5), (3, 4, 15),
         (3, 5, 6), (4, 5, 8), (4, 6, 9), (5, 6, 11)]


def _split(edges, wdtype=np.int64):
    if not edges:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, wdtype)
    s, d, w = zip(*edges)
    return np.array(s, np.int64), np.array(d, np.int64), np.array(w, wdtype)


def hand_cases():
    big = 2**53
    out = [
        ("wikipedia", 7, *_split(_WIKI)),
        ("disconnected", 7, *_split([(0, 1, 3), (1, 2, 1), (0, 2, 2), (4, 5, 7), (5, 6, 7), (4, 6, 7)])),
        ("empty", 0, *_split([])),
        ("one-vertex", 1, *_split([])),
        ("isolated-vertices", 10, *_split([(2, 7, 1), (7, 3, 4)])),
        ("self-loops", 4, *_split([(0, 0, -5), (0, 1, 3), (1, 1, 0), (1, 2, 2), (2, 3, 9), (3, 3, 1), (2, 0, 1)])),
        ("parallel-edges", 3, *_split([(0, 1, 5), (1, 0, 2), (0, 1, 2), (1, 2, 2), (2, 1, 1), (1, 2, 1)])),
        ("all-equal", 6, *_split([(i, j, 4) for i in range(6) for j in range(i + 1, 6)])),
        ("negative", 5, *_split([(0, 1, -3), (1, 2, -7), (2, 3, 0), (3, 4, -1), (4, 0, -10), (1, 3, -8)])),
        ("zero", 4, *_split([(0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 0, 0), (0, 2, 1)])),
        ("float", 5, *_split([(0, 1, 0.5), (1, 2, -0.25), (2, 3, 1e-300), (3, 4, 2.5), (4, 0, -0.0),
                               (0, 2, 0.0), (1, 3, 1e300)], np.float64)),
        ("float32", 4, *_split([(0, 1, 1.5), (1, 2, 1.5), (2, 3, -2.0), (3, 0, 1.25)], np.float32)),
        ("int64-beyond-2**53", 4, *_split([(0, 1, big + 1), (1, 2, big), (2, 3, big + 3),
                                            (3, 0, big + 2), (0, 2, big + 1)])),
        ("int64-extremes", 3, *_split([(0, 1, 2**63 - 1), (1, 2, -2**63), (2, 0, 2**63 - 2)])),
        ("uint64", 3, *_split([(0, 1, 2**64 - 1), (1, 2, 2**63), (2, 0, 3)], np.uint64)),
        ("int8", 4, *_split([(0, 1, -128), (1, 2, 127), (2, 3, 0), (3, 0, -128)], np.int8)),
    ]
    return out


def family_cases():
    """Seeded random graphs of the published benchmark families, small enough for the oracle."""
    import mst_dist

    specs = [
        ("erdos_renyi", dict(n=300, m=3000)),
        ("erdos_renyi", dict(n=2000, m=1500)),   # sparse: many components
        ("circulant", dict(n=500, d=3)),
        ("hypercube", dict(d=8)),
        ("caveman", dict(g=20, k=8)),
        ("connected_caveman", dict(g=15, k=6)),
        ("grid", dict(rows=25, cols=30)),
        ("rmat", dict(scale=9, edge_factor=8)),
        ("gnp", dict(n=120, p=0.1)),
        ("random_geometric", dict(n=600, radius=0.05)),     # a few components, many ties of near points
        ("ssca2", dict(n=400, max_clique=8, inter=1)),
    ]
    out = []
    for seed, (kind, params) in enumerate(specs):
        g = mst_dist.generate(kind, seed=seed + 11, **params)
        s, d, w = g.to_arrays()
        out.append((f"{kind}-{seed}", g.n_vertices, s, d, w))
    g = mst_dist.generate("erdos_renyi", seed=5, weights="float", n=400, m=2500)
    s, d, w = g.to_arrays()
    out.append(("erdos_renyi-float", g.n_vertices, s, d, w))
    return out


# ---------------------------------------------------------------------------
# engine checks shared by the CPU and GPU engine tests
# ---------------------------------------------------------------------------

HAND = hand_cases()
FAMILY = family_cases()
ALL = HAND + FAMILY


def check(res, n, src, dst, w):
    exp_ids, exp_comps = kruskal(n, src, dst, w)
    assert res.edge_ids.dtype == np.int64
    np.testing.assert_array_equal(res.edge_ids, exp_ids)
    np.testing.assert_array_equal(res.src, src[exp_ids])
    np.testing.assert_array_equal(res.dst, dst[exp_ids])
    np.testing.assert_array_equal(res.weight, w[exp_ids])
    assert res.weight.dtype == w.dtype
    exact = sum(int(x) for x in w[exp_ids].tolist()) if w.dtype.kind in "iu" else float(np.sum(w[exp_ids], dtype=np.float64))
    assert res.total_weight == exact
    assert type(res.total_weight) is (int if w.dtype.kind in "iu" else float)
    assert res.n_components == exp_comps
    np.testing.assert_array_equal(res.labels, component_labels(n, src, dst))
    assert res.n_vertices == n and res.n_edges == len(src)


class EngineCases:
    """Shared cases; each subclass runs them on one cluster shape/mode."""

    kwargs = {}

    def run(self, g, request):
        raise NotImplementedError

    @pytest.mark.parametrize("case", ALL, ids=[c[0] for c in ALL])
    def test_matches_kruskal(self, case, request):
        name, n, src, dst, w = case
        copies = [a.copy() for a in (src, dst, w)]
        g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
        res = self.run(g, request)
        check(res, n, src, dst, w)
        for a, b in zip(copies, (src, dst, w)):
            np.testing.assert_array_equal(a, b)  # input never modified


def by_source(src, dst, w):
    """The edges sorted by their smaller end, then the other (as an edge list sorted by source is)."""
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    order = np.lexsort((hi, lo))
    return src[order], dst[order], w[order]


def sorted_grid(rows, cols, seed=0):
    """A rows x cols lattice with random integer weights, its edges sorted by source: ``(n, src, dst, w)``."""
    idx = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    src = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    dst = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    w = np.random.default_rng(seed).integers(1, 50, src.shape[0])  # few weights: many ties
    return (rows * cols, *by_source(src, dst, w))

"""The CPU solve straight over raw chunks (``cpu.solve_raw``), held to Kruskal's forest.

It slices the caller's arrays where they lie (a light slice and the heavy
edges that still cross components on dense graphs, the whole graph on sparse
ones) instead of preparing a copy of every edge: every weight dtype, ties,
self-loops, ``-0.0``, several raw chunks, light pass forced on and off.
"""
import numpy as np
import pytest

from mst_dist.kernels import cpu
from mst_dist.kernels import backend
from mst_dist.kernels.cpu import slicing
from support.naive import kruskal

ref = backend("reference")

DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float16, np.float32, np.float64, np.bool_]


def _graph(seed, dtype, dense):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 80))
    m = int(rng.integers(8 * n, 20 * n)) if dense else int(rng.integers(0, 2 * n + 1))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        w = (rng.standard_normal(m) * 2).round(0).astype(dt)  # many ties, -0.0 among them
    elif dt.kind == "b":
        w = rng.integers(0, 2, m).astype(bool)
    else:
        w = rng.integers(0, 5, m).astype(dt)
    return n, src, dst, w


def _chunks(rng, src, dst, w):
    m = src.shape[0]
    cuts = sorted(int(x) for x in rng.integers(0, m + 1, int(rng.integers(0, 4))))
    b = [0, *cuts, m]
    return [(src[i:j], dst[i:j], w[i:j]) for i, j in zip(b, b[1:])], b[:-1]


@pytest.mark.parametrize("dense", [True, False], ids=["dense", "sparse"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
def test_solve_raw_is_kruskals_forest(dtype, dense):
    for seed in range(6):
        n, src, dst, w = _graph(seed, dtype, dense)
        exp, comps = kruskal(n, src, dst, w)
        raws, offsets = _chunks(np.random.default_rng(seed + 100), src, dst, w)
        for knobs in (dict(), dict(min_degree=0.5, light_factor=0.3), dict(light_factor=0)):
            sol, prep = cpu.solve_raw(raws, offsets, n, seed=seed, **knobs)
            np.testing.assert_array_equal(np.sort(sol.chosen), exp)
            assert sol.n_finished == comps
            assert (sol.M < 0).all()
            want = ref.solve_local(ref.prepare((src, dst, w), 0, n), n, 0)
            np.testing.assert_array_equal(ref.labels([sol.M], n)[0], ref.labels([want.M], n)[0])
            assert sum(r.forest_edges for r in sol.rounds) == len(exp)
            assert prep >= 0.0


def test_dense_graphs_take_a_light_pass_and_keep_only_crossing_heavy_edges():
    """The trace shows the light rounds, then one filter pass that kept a small share of the heavy edges."""
    rng = np.random.default_rng(5)
    n, m = 2000, 60_000
    src, dst, w = rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m)
    heard = []
    sol, prep = cpu.solve_raw([(src, dst, w)], [0], n, on_round=heard.append)
    exp, _ = kruskal(n, src, dst, w)
    np.testing.assert_array_equal(np.sort(sol.chosen), exp)
    assert heard == list(sol.rounds)
    assert sol.rounds[0].light and sol.rounds[0].edges_before < m // 5
    fp = next(r for r in sol.rounds if r.filter_pass)
    light = sol.rounds[0].edges_before
    assert fp.edges_before == m - light and fp.edges_after < m // 5  # the heavy edges, then the survivors
    assert prep == 0.0  # the first slice was the light one: its time is the light pass's


def test_slice_many_is_slice_edges_of_each_chunk_back_to_back():
    rng = np.random.default_rng(2)
    n, m = 50, 3000
    src, dst, w = rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(-3, 4, m)
    raws = [(src[:1000], dst[:1000], w[:1000]), (src[1000:], dst[1000:], w[1000:])]
    vmap = rng.integers(0, 20, n).astype(np.int32)
    keys = cpu.weight_keys(w)
    lo = (keys[10], np.int64(10))
    for vm, bounds in ((None, (None, None)), (vmap, (lo, None)), (vmap, (None, lo))):
        got = slicing.slice_many(raws, [0, 1000], n, vm, *bounds)
        parts = [cpu.slice_edges(r, off, n, vm, *bounds) for r, off in zip(raws, [0, 1000])]
        for a, b in zip(got.edges(), zip(*(p.edges() for p in parts))):
            np.testing.assert_array_equal(a, np.concatenate(b))

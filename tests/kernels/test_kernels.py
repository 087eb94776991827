"""Each Numba kernel equals its NumPy reference on random inputs."""
import numpy as np
import pytest

from mst_dist.kernels import cpu
from mst_dist.kernels import reference as ref
from support.naive import kruskal

SEEDS = range(25)


def random_chunk(rng, n, m, wkind="int"):
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if wkind == "int":
        w = rng.integers(-5, 6, m)
    else:
        w = rng.normal(size=m).round(2)
    return src, dst, w


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float32, np.float64])
def test_weight_keys_order(dtype):
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "f":
        w = np.concatenate([rng.normal(size=500) * 1e3, [0.0, -0.0, 1e-30, -1e-30, np.finfo(dtype).max, np.finfo(dtype).min]]).astype(dtype)
    else:
        info = np.iinfo(dtype)
        w = np.concatenate([rng.integers(info.min, info.max, 500, dtype=dtype, endpoint=True),
                            np.array([info.min, info.max, 0], dtype=dtype)])
    k = cpu.weight_keys(w)
    np.testing.assert_array_equal(k, ref.weight_keys(w))
    i, j = rng.integers(0, w.size, (2, 5000))
    wi, wj = w[i].astype(object) if w.dtype.kind != "f" else w[i], w[j].astype(object) if w.dtype.kind != "f" else w[j]
    np.testing.assert_array_equal(k[i] < k[j], wi < wj)
    np.testing.assert_array_equal(k[i] == k[j], wi == wj)


@pytest.mark.parametrize("seed", SEEDS)
def test_map_merge_contract_filter_equal_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    src, dst, w = random_chunk(rng, n, int(rng.integers(0, 400)), "int" if seed % 2 else "float")
    u, v, k, e = cpu.prepare_chunk(src, dst, w, 1000, n)
    keep = src != dst
    np.testing.assert_array_equal(u, src[keep])
    np.testing.assert_array_equal(e, np.flatnonzero(keep) + 1000)
    np.testing.assert_array_equal(k, ref.weight_keys(w)[keep])
    # map on three slices, merged in two different tree shapes
    cuts = sorted(rng.integers(0, len(u) + 1, 2))
    parts = [(u[a:b], v[a:b], k[a:b], e[a:b]) for a, b in zip([0, *cuts], [*cuts, len(u)])]
    fast = [cpu.map_chunk(*p, n) for p in parts]
    slow = [ref.map_chunk(*p, n) for p in parts]
    for f, s in zip(fast, slow):
        for a, b in zip(f, s):
            np.testing.assert_array_equal(a, b)
    m1 = cpu.merge_candidates(fast)
    m2 = cpu.merge_candidates([cpu.merge_candidates(fast[:2]), fast[2]])
    m3 = ref.merge_candidates(slow)
    for a, b, c in zip(m1, m2, m3):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, c)
    for finish in (True, False):
        Mf, cf, nf, ff = cpu.contract(*m1, n, 7, finish)
        Mr, cr, nr, fr = ref.contract(*m3, n, 7, finish)
        np.testing.assert_array_equal(Mf, Mr)
        np.testing.assert_array_equal(np.sort(cf), cr)
        assert (nf, ff) == (nr, fr)
    Mr, _, nr, _ = ref.contract(*m3, n, 0, True)
    if nr:
        live = Mr >= 0
        uu, vv = u[live[u] & live[v]], v[live[u] & live[v]]
        kk, ee = k[live[u] & live[v]], e[live[u] & live[v]]
        a = cpu.filter_edges(uu, vv, kk, ee, Mr)
        b = ref.filter_edges(uu, vv, kk, ee, Mr)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        (fu, fv, fk, fe), cand = cpu.filter_map_chunk(uu, vv, kk, ee, Mr, nr)
        np.testing.assert_array_equal(fe, b[3])
        for x, y in zip(cand, ref.map_chunk(*b, nr)):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("min_degree", [0.5, 3.0])
def test_solve_local_equals_kruskal_and_reference_labels(seed, min_degree):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 120))
    src, dst, w = random_chunk(rng, n, int(rng.integers(0, 900)), "int" if seed % 3 else "float")
    exp, comps = kruskal(n, src, dst, w)
    u, v, k, e = cpu.prepare_many([(src[:50], dst[:50], w[:50]), (src[50:], dst[50:], w[50:])], [0, 50], n)
    M, chosen, nfin = cpu.solve_local(u, v, k, e, n, 0, min_degree=min_degree, seed=seed)
    np.testing.assert_array_equal(np.sort(chosen), exp)
    assert nfin == comps
    lab, nc = cpu.compose_labels([M], n)
    lab_ref, nc_ref = ref.compose_labels([M], n)
    np.testing.assert_array_equal(lab, lab_ref)
    assert nc == nc_ref == comps


def test_first_invalid_edge_finds_the_first():
    rng = np.random.default_rng(3)
    src = rng.integers(0, 100, 100_000)
    dst = rng.integers(0, 100, 100_000)
    w = rng.random(100_000)
    assert cpu.first_invalid_edge(src, dst, w, 100)[0] == -1
    w[[70_000, 99_999]] = np.nan
    dst[[80_000, 5]] = [100, 100]
    src[90_000] = -1
    i, reason, _ = cpu.first_invalid_edge(src, dst, w, 100)
    assert i == ref.first_invalid_edge(src, dst, w, 100) == 5
    assert reason == "vertex id out of range"


def test_alloc_soa_skewed_and_disjoint():
    arrs = cpu.alloc_soa(1 << 20, [np.int32, np.int32, np.uint64, np.int64])
    starts = [a.__array_interface__["data"][0] for a in arrs]
    assert len({s % 4096 for s in starts}) == 4  # not aliased modulo the page size
    for a, b in zip(arrs, arrs[1:]):
        assert a.__array_interface__["data"][0] + a.nbytes <= b.__array_interface__["data"][0]


def test_parallel_canonical_labels_and_take_rows():
    rng = np.random.default_rng(8)
    for _ in range(10):
        n = int(rng.integers(70_000, 200_000))
        F = int(rng.integers(1, n // 4))
        final = -(rng.integers(0, F, n) + 1)
        a, ca = cpu._canonical(final, F)
        b, cb = cpu._canonical_p(final, F, 2, np.empty(n, np.int64))
        np.testing.assert_array_equal(a, b)
        assert ca == cb
        lab, nc = ref.compose_labels([final], n)
        np.testing.assert_array_equal(lab, b)
    s, d, w = rng.integers(0, 9, 1000), rng.integers(0, 9, 1000).astype(np.int32), rng.random(1000)
    ids = np.sort(rng.choice(1000, 300, replace=False))
    for x, y in zip(cpu.take_rows(s, d, w, ids), (s[ids], d[ids], w[ids])):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype

"""CPU helpers outside the phase contract: weight keys, validation, the arena, labels' numbering, row gathers.

The phase functions themselves are held to the reference by test_conformance.py.
"""
import numpy as np
import pytest

from mst_dist.kernels import cpu
from mst_dist.kernels import reference as ref
from mst_dist.kernels.cpu import finish as cpu_finish


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float32, np.float64, np.bool_])
def test_weight_keys_order(dtype):
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "b":
        w = rng.integers(0, 2, 500).astype(bool)
    elif np.dtype(dtype).kind == "f":
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
        a, ca = cpu_finish._canonical(final, F, np.full(F, -1, np.int32))
        b, cb = cpu_finish._canonical_p(final, F, 2, np.empty(n, np.int64))
        np.testing.assert_array_equal(a, b)
        assert ca == cb
        lab, nc = ref.ReferenceKernels().labels([final], n)
        np.testing.assert_array_equal(lab, b)
    s, d, w = rng.integers(0, 9, 1000), rng.integers(0, 9, 1000).astype(np.int32), rng.random(1000)
    ids = np.sort(rng.choice(1000, 300, replace=False))
    for x, y in zip(cpu.take_rows(s, d, w, ids), (s[ids], d[ids], w[ids])):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype

"""The CPU solve's cheapest-edge slots, one per component shared by the threads (compare-and-swap).

A slot packs the high bits of the key that differ within the edge set over
the edge's position; on equal bits the full key and edge id decide.  These
cases force every branch of that order: keys far apart (the packed bits are
not the whole key), ties on the packed bits between different keys, equal
keys whose edge ids run against their positions, and one thread or several.
"""
import numba
import numpy as np
import pytest
from numba import njit, prange

from mst_dist.kernels import cpu
from mst_dist.kernels.contract import Chunk
from mst_dist.kernels.cpu.atomics import cas
from mst_dist.kernels.cpu.chunk import weight_keys
from mst_dist.kernels.cpu.solve import _packing
from support.naive import kruskal


@njit(parallel=True, cache=True)
def _parallel_min(slots, index, values):
    for i in prange(values.shape[0]):
        c = index[i]
        cur = slots[c]
        while values[i] < cur:
            prev = cas(slots, c, cur, values[i])
            if prev == cur:
                break
            cur = prev


def test_cas_keeps_the_minimum_under_contention():
    rng = np.random.default_rng(0)
    index = rng.integers(0, 7, 200_000)  # few slots: the threads collide on every one
    values = rng.integers(0, 2**62, 200_000).astype(np.uint64)  # the solve's slots are uint64
    slots = np.full(7, np.iinfo(np.uint64).max, np.uint64)
    _parallel_min(slots, index, values)
    want = np.full(7, np.iinfo(np.uint64).max, np.uint64)
    np.minimum.at(want, index, values)
    np.testing.assert_array_equal(slots, want)


def _chunk(n, src, dst, key, eid):
    idt = np.int32
    return Chunk(src.astype(idt), dst.astype(idt), key.astype(np.uint64), eid.astype(np.int64))


def _weights(rng, m, kind):
    if kind == "far":  # keys spread over all 64 bits: the slot holds only their high bits
        return rng.choice(np.array([-1e300, -1.0, 0.0, 1e-300, 1.0, 1.0 + 2**-52, 1e300]), m)
    if kind == "near":  # keys equal in their high bits, apart in their low ones
        return 1.0 + rng.integers(0, 3, m) * 2.0**-52
    return rng.integers(0, 3, m).astype(np.float64)  # equal keys: the edge id decides


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["far", "near", "ties"])
@pytest.mark.parametrize("seed", range(3))
def test_solve_is_kruskals_forest_with_ids_against_positions(seed, kind, threads):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    m = int(rng.integers(n, 12 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = _weights(rng, m, kind)
    keep = src != dst
    eid = np.flatnonzero(keep)
    # the edges stored against their id order: positions never stand in for ids
    order = eid[::-1] if seed % 2 else rng.permutation(eid)
    ch = _chunk(n, src[order], dst[order], weight_keys(w[order]), order)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        sol = cpu.solve_local(ch, n, 0, light_factor=1.5 if seed < 2 else 0.0, min_degree=1.0)
    finally:
        numba.set_num_threads(before)
    want, _ = kruskal(n, src, dst, w)
    np.testing.assert_array_equal(np.sort(sol.chosen), want)


def test_the_packing_takes_the_bits_that_differ():
    key = weight_keys(np.array([1.0, 1.0 + 2**-52, 1.0 + 2**-51]))
    seg, cnt = np.zeros(1, np.int64), np.array([3])
    kshift, qshift = _packing(key, seg, cnt, 3)
    assert int(qshift) == 2  # positions 0..2
    assert int(kshift) == 0  # the keys differ in their 2 low bits only: q is the whole difference
    q = (key >> kshift) & (np.uint64(0xFFFFFFFFFFFFFFFF) >> qshift)
    assert (np.diff(q.astype(np.int64)) > 0).all()
    wide = weight_keys(np.array([-1e300, 1e300]))
    kshift, qshift = _packing(wide, seg, np.array([2]), 2**40)
    assert int(qshift) == 41 and int(kshift) == 41  # all 64 bits differ: the top 23 kept

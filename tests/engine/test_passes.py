"""The worker side of a streaming pass: kept rows, weights given back from their keys."""
import numpy as np
import pytest

from mst_dist.engine import passes
from mst_dist.kernels import reference

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.bool_]


def _weights(dt, rng):
    dt = np.dtype(dt)
    if dt.kind == "f":
        fin = np.finfo(dt)
        extremes = [0.0, float(fin.tiny), -float(fin.tiny), float(fin.max), -float(fin.max)]
        return np.concatenate([rng.standard_normal(500) * 100, extremes]).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, 50).astype(bool)
    info = np.iinfo(dt)
    return np.concatenate([rng.integers(info.min, info.max, 500, dtype=dt, endpoint=True),
                           np.array([info.min, info.max], dtype=dt)])


@pytest.mark.parametrize("dt", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
def test_weights_come_back_from_their_keys_exactly(dt):
    w = _weights(dt, np.random.default_rng(3))
    back = passes.weights_from_keys(reference.weight_keys(w), dt)
    assert back.dtype == np.dtype(dt)
    np.testing.assert_array_equal(back, w)


@pytest.mark.parametrize("first_pass", [True, False])
@pytest.mark.parametrize("wdtype", [np.float64, np.float32, np.int64, np.uint8])
def test_pass_chunk_rows_are_the_source_rows_of_the_kept_edges(first_pass, wdtype):
    rng = np.random.default_rng(7)
    n, m, offset = 50, 2000, 10_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(-3, 4, m).astype(wdtype)
    if np.dtype(wdtype).kind == "f":
        w[::7] = -0.0  # their keys are those of +0.0: the rows must still give -0.0 back
    vmap = None if first_pass else (np.arange(n) // 3).astype(np.int64)
    keys = reference.weight_keys(w)
    eids = np.arange(m) + offset
    order = np.lexsort((eids, keys))
    lo = None if first_pass else (int(keys[order[100]]), int(eids[order[100]]))
    hi = (int(keys[order[1500]]), int(eids[order[1500]]))
    ch, rows, st = passes.pass_chunk((src, dst, w), 0, m, offset, n, False, vmap, lo, hi, "cpu")
    assert st.edges_in == m and st.edges_kept == len(ch)
    eid, s, d, ww = rows
    np.testing.assert_array_equal(eid, np.sort(ch.eid))
    loc = eid - offset
    np.testing.assert_array_equal(s, src[loc])
    np.testing.assert_array_equal(d, dst[loc])
    assert s.dtype == src.dtype and ww.dtype == w.dtype
    np.testing.assert_array_equal(ww, w[loc])
    np.testing.assert_array_equal(np.signbit(ww), np.signbit(w[loc]))  # -0.0 stays -0.0
    trimmed = passes.trim_rows(rows, eid[::2])
    np.testing.assert_array_equal(trimmed[3], w[loc[::2]])
    np.testing.assert_array_equal(np.signbit(trimmed[3]), np.signbit(w[loc[::2]]))
    if first_pass:  # nothing relabelled: the rows hold no copy of the kept ids
        assert np.shares_memory(rows.src, ch.u)

"""The array pieces of partitioned rounds, against plain Python on random edges with many ties.

The ranged kernels are held to plain Python (or NumPy's own calls) here on
every backend: the reference, the CPU's Numba kernels and the GPU's on their
NumPy stand-in (the same code CuPy runs); test_conformance.py holds the
backends to the reference on the shared cases, CuPy on a device included.
"""
import numpy as np
import pytest

from mst_dist.kernels import backend
from mst_dist.kernels import vertex_ranges as vr


@pytest.fixture(params=[("reference", None), ("cpu", None), ("gpu", "numpy")], ids=["reference", "cpu", "gpu-numpy"])
def kern(request):
    name, xp = request.param
    return backend(name, xp=xp)


def _edges(seed, n=40, m=300, kern=None):
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = u != v
    u, v = u[keep] * 7 + 3, v[keep] * 7 + 3  # sparse ids: the local ids are not the ids
    key = rng.integers(0, 5, u.shape[0]).astype(np.uint64)  # few keys: ties decided by the edge id
    eid = rng.permutation(10**6)[:u.shape[0]].astype(np.int64)
    return (kern or backend("reference")).sort_edges(u, v, key, eid)


def _cheapest(u, v, key, eid):
    best = {}
    for a, b, k, e in zip(u.tolist(), v.tolist(), key.tolist(), eid.tolist()):
        for c, o in ((a, b), (b, a)):
            if c not in best or (k, e) < best[c][:2]:
                best[c] = (k, e, o)
    comps = sorted(best)
    return comps, [best[c][0] for c in comps], [best[c][1] for c in comps], [best[c][2] for c in comps]


@pytest.mark.parametrize("seed", range(6))
def test_cheapest_edge_of_each_component(kern, seed):
    u, v, key, eid = _edges(seed, kern=kern)
    assert np.all(np.diff(key.astype(np.int64)) >= 0)
    assert all(np.all(np.diff(eid[key == k]) > 0) for k in np.unique(key))  # the strict order
    ids, lu, lv = kern.local_ids(u, v)
    np.testing.assert_array_equal(ids[lu], u)
    np.testing.assert_array_equal(ids[lv], v)
    got = kern.cheapest_sorted(ids, lu, lv, u, v, key, eid)
    assert [c.tolist() for c in got] == [list(x) for x in _cheapest(u, v, key, eid)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lo, hi", [(50, 200), (0, 10**6)], ids=["rows-fill-the-range", "rows-few-in-a-wide-range"])
def test_merge_of_candidate_tables_is_the_cheapest_over_all(kern, seed, lo, hi):
    u, v, key, eid = _edges(seed)
    tables = []
    for part in np.array_split(np.arange(u.shape[0]), 4):  # four chunks of the edges
        ids, lu, lv = kern.local_ids(u[part], v[part])
        t = kern.cheapest_sorted(ids, lu, lv, u[part], v[part], key[part], eid[part])
        inside = (t[0] >= lo) & (t[0] < hi)
        tables.append(tuple(col[inside] for col in t))
    got = vr.merge_cheapest(kern, lo, hi, *tables)
    comps, k, e, o = _cheapest(u, v, key, eid)
    want = [(c, kk, ee, oo) for c, kk, ee, oo in zip(comps, k, e, o) if lo <= c < hi]
    assert list(zip(*(col.tolist() for col in got))) == want
    # in any grouping (the merge is a tree)
    two = vr.merge_cheapest(kern, lo, hi, vr.merge_cheapest(kern, lo, hi, *tables[:3]), tables[3])
    assert [c.tolist() for c in two] == [c.tolist() for c in got]
    assert all(c.shape[0] == 0 for c in vr.merge_cheapest(kern, lo, hi))


@pytest.mark.parametrize("seed", range(6))
def test_lightest_of_parallel_edges(kern, seed):
    u, v, key, eid = _edges(seed, n=8)  # 8 vertices, ~260 edges: many parallel
    ids, lu, lv = kern.local_ids(u, v)
    kept = kern.lightest_parallel(lu, lv, ids.shape[0])
    assert np.all(np.diff(kept) > 0)
    best = {}
    for i, (a, b, k, e) in enumerate(zip(u.tolist(), v.tolist(), key.tolist(), eid.tolist())):
        p = (min(a, b), max(a, b))
        if p not in best or (k, e) < best[p][0]:
            best[p] = ((k, e), i)
    assert kept.tolist() == sorted(i for _, i in best.values())


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64, np.float64])
@pytest.mark.parametrize("size", [0, 1, 2, 7, 1000])
def test_distinct_is_numpys_unique(dtype, size):
    a = np.random.default_rng(size).integers(0, max(1, size // 3), size).astype(dtype)
    got = vr.distinct(a)
    np.testing.assert_array_equal(got, np.unique(a))
    assert got.dtype == a.dtype


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("spread", [3, 2**11, 2**22 + 5, 2**40, "extremes"])
@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_rank_is_numpys_unique_with_inverse(kern, dtype, spread, size):
    """The radix sort of ``rank`` takes as many 11-bit digits as the values span: one, two, three, all."""
    rng = np.random.default_rng(size)
    info = np.iinfo(dtype)
    if spread == "extremes":
        a = rng.choice(np.array([info.min, info.min + 1, -1, 0, info.max - 1, info.max], dtype), size)
    else:
        hi = min(int(info.max), spread)
        a = rng.integers(-hi // 2, hi - hi // 2, size).astype(dtype)
    ids, inverse = kern.rank(a)
    want, want_inverse = np.unique(a, return_inverse=True)
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_array_equal(inverse, want_inverse)
    assert ids.dtype == a.dtype and inverse.dtype == np.int64


@pytest.mark.parametrize("top", [2**31 - 1, 2**31, 2**40])
def test_a_range_of_labels_asks_each_owner_for_its_distinct_values_and_puts_the_answers_back(kern, top):
    """``cut_values``: each owner is sent its distinct values once, and ``answers[at]`` is each label's
    answer (what the labels of a range of vertices do at every round)."""
    rng = np.random.default_rng(top % 89)
    labels = np.concatenate([rng.integers(0, 3000, 5000), [top, 0, top]]).astype(np.int64)
    bounds = np.array([0, 1000, 2500, top + 1], np.int64)
    split = vr.cut_values(kern, labels, bounds)
    for r in range(3):
        part = split.part(r)
        assert np.all((bounds[r] <= part) & (part < bounds[r + 1]))
    np.testing.assert_array_equal(split.ids, np.unique(labels))
    answers = [vr.narrow(split.part(r).astype(np.int64) * 2 + r) for r in range(3)]
    got = vr.answers_of(split, answers)[split.at]
    want = labels * 2 + np.searchsorted(bounds, labels, side="right") - 1
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("top", [2**31 - 1, 2**31, 2**40])
def test_ids_narrowed_on_the_wire_only_where_they_fit_and_widened_back(kern, top):
    """Requests, answers and candidates cross workers as int32 where every value fits, else as int64;
    the requester reads the same int64 values either way."""
    rng = np.random.default_rng(top % 97)
    u = np.concatenate([rng.integers(0, 1000, 50), [top]]).astype(np.int64)
    v = rng.integers(0, 1000, 51).astype(np.int64)
    bounds = np.array([0, 500, top + 1], np.int64)
    split = vr.cut_ends(kern, u, v, bounds)
    fits = top <= np.iinfo(np.int32).max
    assert split.ids.dtype == (np.int32 if fits else np.int64)
    np.testing.assert_array_equal(split.ids, np.unique(np.concatenate([u, v])))
    np.testing.assert_array_equal(split.ids[split.lu], u)
    np.testing.assert_array_equal(split.ids[split.lv], v)
    # answers of two owners, one narrowed and one not, read back as int64
    parts = [vr.narrow(split.part(r).astype(np.int64) * -3) for r in range(2)]
    got = vr.answers_of(split, parts)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.asarray(split.ids, np.int64) * -3)
    # candidate tables: components and partners narrowed where they fit, keys and edge ids kept
    table = (np.array([1, 7, top], np.int64), np.array([5, 6, 7], np.uint64), np.array([0, 1, 2**40], np.int64),
             np.array([7, top, 1], np.int64))
    cut = vr.split_candidates(table, bounds)
    assert [c[0].dtype for c in cut] == [np.int32 if fits else np.int64] * 2
    assert cut[0][2].dtype == np.int64 and cut[0][1].dtype == np.uint64
    merged = vr.merge_cheapest(kern, 0, 500, cut[0])
    np.testing.assert_array_equal(merged[0], [1, 7])
    np.testing.assert_array_equal(merged[3], [7, top])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtypes", [(np.int64, np.int64), (np.int32, np.int64), (np.int64, np.int32)])
def test_positions_are_numpys_searchsorted(kern, seed, dtypes):
    rng = np.random.default_rng(seed)
    table = vr.distinct(rng.integers(0, 500, 200)).astype(dtypes[0])
    asked = np.sort(np.concatenate([rng.choice(table, 50), rng.integers(-5, 505, 50)])).astype(dtypes[1])
    np.testing.assert_array_equal(kern.positions(table, asked), np.searchsorted(table, asked))
    assert kern.positions(table, asked[:0]).shape == (0,)
    np.testing.assert_array_equal(kern.positions(table[:0], asked), np.zeros(asked.shape[0]))

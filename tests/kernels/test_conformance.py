"""The kernel contract: every function of every backend equals the reference on the shared cases,
and the reference's phases equal plain-Python versions written from the contract's words.

Backends: the CPU (Numba) kernels, the GPU kernels on their NumPy stand-in
and, marked ``gpu``, on CuPy (skipped without a CUDA device).  Cases: the
hand-made graphs of :mod:`support.cases` and small random graphs of every
weight dtype (ties, self-loops, parallel edges, an empty one).  Each test
feeds a backend the reference's inputs, turned into the backend's own chunk
form with its ``adopt``, and compares the output with the reference's; the
single-task solve is also held to Kruskal.  The reference is not compared
with itself: its phases (prepare's keys, map, contract, filter-edges,
compose-maps, labels) are held to the loops at the end of this module, and
its rounds, run to the end, to Kruskal and the BFS labels.
"""
import inspect
import pickle

import numpy as np
import pytest

from mst_dist import kernels
from mst_dist.kernels.contract import PHASE_FUNCTIONS, Backend, Candidates, Chunk
from mst_dist.kernels.tuning import solve_local_dedupe
from mst_dist.kernels.gpu import gpu_ready
from support.cases import family_cases, hand_cases
from support.naive import component_labels, kruskal

_CUDA, _CUDA_WHY = gpu_ready("cupy")

BACKENDS = [
    pytest.param(("cpu", None), id="cpu"),
    pytest.param(("gpu", "numpy"), id="gpu-numpy"),
    pytest.param(("gpu", "cupy"), id="gpu-cupy",
                 marks=[pytest.mark.gpu,
                        pytest.mark.skipif(not _CUDA, reason=f"needs a CUDA GPU and CuPy: {_CUDA_WHY}")]),
]

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.bool_]


def _weights(rng, dt, m):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return (rng.standard_normal(m) * 3).round(1).astype(dt)  # rounded: many ties
    if dt.kind == "b":
        return rng.integers(0, 2, m).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -6), min(info.max, 6) + 1, m).astype(dt)


def random_cases():
    """Small random multigraphs (self-loops and parallel edges included), one per weight dtype."""
    out = []
    for seed, dt in enumerate(DTYPES):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 40))
        m = int(rng.integers(n, 12 * n))  # dense enough for a light pass now and then
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        out.append((f"random-{np.dtype(dt).name}", n, src, dst, _weights(rng, dt, m)))
    rng = np.random.default_rng(99)
    src, dst = rng.integers(0, 300, 200), rng.integers(0, 300, 200)
    out.append(("random-sparse", 300, src, dst, rng.integers(0, 4, 200)))
    out.append(("random-loops-only", 5, np.arange(5), np.arange(5), np.ones(5)))
    return out


CASES = hand_cases() + random_cases()
IDS = [c[0] for c in CASES]


@pytest.fixture(params=BACKENDS)
def kern(request):
    name, xp = request.param
    return kernels.backend(name, xp=xp)


@pytest.fixture(scope="module")
def ref():
    return kernels.backend("reference")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def host_edges(chunk):
    """A chunk's live edges as host arrays sorted by edge id (edge order is not part of the contract)."""
    u, v, key, eid = (np.asarray(a) if isinstance(a, np.ndarray) else a.get() for a in chunk.edges())
    order = np.argsort(eid, kind="stable")
    return u[order], v[order], key[order], eid[order]


def assert_same_edges(a, b):
    for x, y in zip(host_edges(a), host_edges(b)):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype
    assert a.packing == b.packing


def assert_same_candidates(a, b):
    assert isinstance(a, Candidates)
    for x, y in zip(a.arrays(), b.arrays()):
        assert isinstance(x, np.ndarray)  # records come back on the host
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype


def split3(src, dst, w):
    cuts = [0, len(src) // 3, 2 * len(src) // 3, len(src)]
    return [(src[a:b], dst[a:b], w[a:b]) for a, b in zip(cuts, cuts[1:])], cuts[:3]


def prepared(ref, case, offset=1000):
    name, n, src, dst, w = case
    return ref.prepare((src, dst, w), offset, n)


def round_maps(ref, chunk, n):
    """The round maps of plain reference rounds on ``chunk`` until nothing is left."""
    maps, fin = [], 0
    while n:
        chunk, cand = ref.map(chunk, n)
        M, _, n_next, n_fin = ref.contract(cand, n, fin)
        chunk = ref.filter_edges(chunk, M)
        maps.append(M)
        fin += n_fin
        n = n_next
    return maps


# ---------------------------------------------------------------------------
# the contract itself
# ---------------------------------------------------------------------------

def test_every_backend_has_every_function_with_the_contracts_signature(kern):
    assert kern.name in kernels.BACKENDS
    for fname in PHASE_FUNCTIONS:
        want = [p for p in inspect.signature(getattr(Backend, fname)).parameters.values()
                if p.name != "self"]
        got = list(inspect.signature(getattr(kern, fname)).parameters.values())
        assert [(p.name, p.kind, p.default) for p in got] == [(p.name, p.kind, p.default) for p in want], fname


def test_unknown_backend_lists_the_choices():
    with pytest.raises(ValueError, match="reference, cpu, gpu"):
        kernels.backend("tpu")
    with pytest.raises(ValueError, match="array module"):
        kernels.backend("gpu")


# ---------------------------------------------------------------------------
# prepare, adopt, concat
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_prepare(kern, ref, case):
    name, n, src, dst, w = case
    got = kern.prepare((src, dst, w), 1000, n)
    assert isinstance(got, Chunk) and got.xp is kern.xp
    assert_same_edges(got, ref.prepare((src, dst, w), 1000, n))
    assert not (host_edges(got)[0] == host_edges(got)[1]).any()  # no self-loops


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_prepare_many_and_concat(kern, ref, case):
    name, n, src, dst, w = case
    raws, offsets = split3(src, dst, w)
    want = ref.prepare((src, dst, w), 0, n)
    assert_same_edges(kern.prepare_many(raws, offsets, n), want)
    parts = [ref.prepare(r, off, n) for r, off in zip(raws, offsets)]
    assert_same_edges(kern.concat([kern.adopt(p) for p in parts], n), want)
    assert_same_edges(kern.concat(parts[::-1], n), want)  # any form, any order in


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_adopt_and_travel(kern, ref, case):
    c = prepared(ref, case)
    mine = kern.adopt(c)
    assert mine.xp is kern.xp and len(mine) == len(c)
    assert_same_edges(mine, c)
    assert_same_edges(ref.adopt(mine), c)  # and back to the plain host form
    back = pickle.loads(pickle.dumps(mine))  # travels as host arrays, same form
    assert back.xp is np and back.packed == mine.packed and back.h2d == 0
    assert_same_edges(back, c)
    assert_same_edges(kern.adopt(back), c)


# ---------------------------------------------------------------------------
# a round: map, merge, contract, filter-nodes, filter-edges
# ---------------------------------------------------------------------------

@pytest.fixture(params=["dense", "ranked"])
def scratch(request, monkeypatch):
    """The CPU map's two forms: scratch indexed by component id, or the chunk's ids ranked first."""
    from mst_dist.kernels.cpu import phases

    monkeypatch.setattr(phases, "SPARSE_MAP_RATIO", 10**9 if request.param == "dense" else -1)
    return request.param


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_map(kern, ref, case, scratch):
    n = case[1]
    c = prepared(ref, case)
    new, cand = kern.map(kern.adopt(c), n)
    _, want = ref.map(c, n)
    assert_same_candidates(cand, want)
    assert_same_edges(new, c)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_map_with_filter_edges_fused(kern, ref, case, scratch):
    n = case[1]
    c = prepared(ref, case)
    _, cand = ref.map(c, n)
    M, _, n_next, _ = ref.contract(cand, n, 0)
    new, got = kern.map(kern.adopt(c), n_next, kern.to_device(M)[0])
    want_chunk, want = ref.map(c, n_next, M)
    assert_same_candidates(got, want)
    assert_same_edges(new, want_chunk)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_merge(kern, ref, case):
    name, n, src, dst, w = case
    raws, offsets = split3(src, dst, w)
    parts = [ref.map(ref.prepare(r, off, n), n)[1] for r, off in zip(raws, offsets)]
    want = ref.merge(parts)
    assert_same_candidates(kern.merge(parts), want)
    assert_same_candidates(kern.merge([kern.merge(parts[:2]), parts[2]]), want)  # any tree
    assert_same_candidates(kern.merge([parts[2], kern.merge(parts[1:]), parts[0]]), want)  # idempotent
    assert_same_candidates(kern.merge([]), Candidates.empty())


@pytest.mark.parametrize("finish", [True, False])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_contract(kern, ref, case, finish):
    n = case[1]
    _, cand = ref.map(prepared(ref, case), n)
    M, chosen, n_next, n_fin = kern.contract(cand, n, 7, finish)
    wM, wchosen, wn, wf = ref.contract(cand, n, 7, finish)
    assert isinstance(M, np.ndarray) and M.dtype == np.int64
    np.testing.assert_array_equal(M, wM)
    np.testing.assert_array_equal(np.sort(chosen), wchosen)
    assert (n_next, n_fin) == (wn, wf)


@pytest.mark.parametrize("finish", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_filter_nodes(kern, ref, seed, finish):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000)) if seed else 0
    is_root = rng.random(n) < 0.3
    roots = np.flatnonzero(is_root)
    root = np.arange(n, dtype=np.int64)
    if roots.size:
        root[~is_root] = rng.choice(roots, int((~is_root).sum()))
    else:
        root[:] = np.arange(n)
    has = rng.random(n) < 0.8
    has[~(root == np.arange(n))] = True  # a hooked component had a candidate
    M, n_next, n_fin = kern.filter_nodes(root, has, 5, finish)
    wM, wn, wf = ref.filter_nodes(root, has, 5, finish)
    assert isinstance(M, np.ndarray)
    np.testing.assert_array_equal(M, wM)
    assert (n_next, n_fin) == (wn, wf)
    assert sorted(set(M[M >= 0].tolist())) == list(range(n_next))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_filter_edges(kern, ref, case):
    n = case[1]
    c = prepared(ref, case)
    _, cand = ref.map(c, n)
    M, _, _, _ = ref.contract(cand, n, 0)
    assert_same_edges(kern.filter_edges(kern.adopt(c), kern.to_device(M)[0]), ref.filter_edges(c, M))
    assert_same_edges(kern.filter_edges(kern.adopt(c), M), ref.filter_edges(c, M))  # a host map too


@pytest.mark.parametrize("relabel", [False, True])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_split_light_and_sample(kern, ref, case, relabel):
    n = case[1]
    c = prepared(ref, case)
    M = None
    if relabel:
        M = ref.contract(ref.map(c, n)[1], n, 0, False)[0]
    u, v, key, eid = host_edges(c)
    tk, te = (key[len(c) // 2], eid[len(c) // 2]) if len(c) else (0, 0)
    light, heavy = kern.split_light(kern.adopt(c), None if M is None else kern.to_device(M)[0], tk, te)
    wl, wh = ref.split_light(c, M, tk, te)
    assert_same_edges(light, wl)
    assert_same_edges(heavy, wh)
    assert len(light) + len(heavy) == len(ref.filter_edges(c, M) if relabel else c)
    pos = np.random.default_rng(1).integers(0, max(1, len(c)), 20 if len(c) else 0)
    mine = kern.adopt(c)
    k, e = kern.sample(mine, pos)
    wk, we = ref.sample(ref.adopt(mine), pos)  # the same positions of the same live edges
    np.testing.assert_array_equal(k, wk)
    np.testing.assert_array_equal(e, we)
    assert isinstance(k, np.ndarray) and isinstance(e, np.ndarray)


@pytest.mark.parametrize("bounds", ["none", "hi", "lo", "both"])
@pytest.mark.parametrize("relabel", [False, True])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_slice_edges(kern, ref, case, relabel, bounds):
    """One streaming pass over raw edges equals the slice written out by hand, and the reference."""
    name, n, src, dst, w = case
    c = prepared(ref, case)
    vmap = ref.contract(ref.map(c, n)[1], n, 0, False)[0] if relabel else None
    _, _, key, eid = host_edges(c)
    order = np.lexsort((eid, key))
    q1, q2 = len(order) // 3, 2 * len(order) // 3
    lo = (int(key[order[q1]]), int(eid[order[q1]])) if bounds in ("lo", "both") and len(c) else None
    hi = (int(key[order[q2]]), int(eid[order[q2]])) if bounds in ("hi", "both") and len(c) else None
    got = kern.slice_edges((src, dst, w), 1000, n, None if vmap is None else kern.to_device(vmap)[0], lo, hi)
    assert isinstance(got, Chunk) and got.xp is kern.xp
    assert_same_edges(got, ref.slice_edges((src, dst, w), 1000, n, vmap, lo, hi))
    # by hand: keys of every raw edge, the slice, relabel, no self-loops
    k_all = kernels.reference.weight_keys(w)
    e_all = np.arange(len(src), dtype=np.int64) + 1000
    a, b = (np.asarray(src), np.asarray(dst)) if vmap is None else (vmap[src], vmap[dst])
    keep = a != b
    if lo is not None:
        keep &= (k_all > lo[0]) | ((k_all == lo[0]) & (e_all > lo[1]))
    if hi is not None:
        keep &= (k_all < hi[0]) | ((k_all == hi[0]) & (e_all <= hi[1]))
    gu, gv, gk, ge = host_edges(got)
    np.testing.assert_array_equal(ge, e_all[keep])
    np.testing.assert_array_equal(gk, k_all[keep])
    np.testing.assert_array_equal(gu, a[keep])
    np.testing.assert_array_equal(gv, b[keep])


# ---------------------------------------------------------------------------
# the single-task solve
# ---------------------------------------------------------------------------

SOLVE_CASES = CASES + family_cases()


@pytest.mark.parametrize("knobs", [dict(), dict(min_degree=0.5), dict(light_factor=0),
                                   dict(min_degree=0.5, dedupe=1.0, seed=3)],
                         ids=["default", "light-pass", "no-light-pass", "dedupe"])
@pytest.mark.parametrize("case", SOLVE_CASES, ids=[c[0] for c in SOLVE_CASES])
def test_solve_local(kern, ref, case, knobs):
    name, n, src, dst, w = case
    exp, comps = kruskal(n, src, dst, w)
    knobs = dict(knobs)
    dedupe = knobs.pop("dedupe", None)  # not the contract's: the benchmarks' variant of the solve
    chunk = kern.prepare((src, dst, w), 0, n)
    sol = kern.solve_local(chunk, n, 4, **knobs) if dedupe is None else \
        solve_local_dedupe(kern, chunk, n, 4, dedupe=dedupe, **knobs)
    assert isinstance(sol.M, np.ndarray) and isinstance(sol.chosen, np.ndarray)
    np.testing.assert_array_equal(np.sort(sol.chosen), exp)
    assert sol.n_finished == comps
    assert (sol.M < 0).all() and sorted(set((-sol.M - 1).tolist())) == list(range(4, 4 + comps))
    # the same partition as the reference's (final numbers may differ)
    want = ref.solve_local(ref.prepare((src, dst, w), 0, n), n, 4)
    np.testing.assert_array_equal(ref.labels([sol.M], n)[0], ref.labels([want.M], n)[0])
    assert sum(r.forest_edges for r in sol.rounds) == len(exp)


@pytest.mark.parametrize("knobs", [dict(), dict(min_degree=0.5)], ids=["default", "light-pass"])
def test_solve_local_tells_each_round_as_it_ends(kern, knobs):
    """``on_round`` hears every record of the trace, in order, while the solve runs (and it pickles plain)."""
    import pickle

    name, n, src, dst, w = SOLVE_CASES[-1]
    heard = []
    sol = kern.solve_local(kern.prepare((src, dst, w), 0, n), n, 0, on_round=heard.append, **knobs)
    assert len(heard) == len(sol.rounds) > 1
    assert all(a is b for a, b in zip(heard, sol.rounds))
    assert type(pickle.loads(pickle.dumps(sol.rounds))) is list


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_solve_local_after_a_round(kern, ref, case):
    """A pending relabel: the filter-edges of the distributed round before the solve."""
    name, n, src, dst, w = case
    exp, comps = kruskal(n, src, dst, w)
    c = ref.prepare((src, dst, w), 0, n)
    _, cand = ref.map(c, n)
    M0, chosen0, n1, fin0 = ref.contract(cand, n, 0)
    # a fresh chunk: the solve may overwrite its arrays
    sol = kern.solve_local(kern.adopt(ref.prepare((src, dst, w), 0, n)), n1, fin0,
                           relabel=kern.to_device(M0)[0])
    np.testing.assert_array_equal(np.sort(np.concatenate([chosen0, sol.chosen])), exp)
    assert fin0 + sol.n_finished == comps
    labels, k = kern.labels([M0, sol.M], n)
    np.testing.assert_array_equal(labels, ref.labels([M0, ref.solve_local(c, n1, fin0, relabel=M0).M], n)[0])
    assert k == comps


# ---------------------------------------------------------------------------
# labels and the forest
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compose_maps_and_labels(kern, ref, case):
    n = case[1]
    maps = round_maps(ref, prepared(ref, case), n)
    if not maps:
        assert kern.labels(maps, n)[1] == ref.labels(maps, n)[1] == 0
        return
    np.testing.assert_array_equal(kern.compose_maps(maps), ref.compose_maps(maps))
    np.testing.assert_array_equal(kern.compose_maps(maps[:1]), maps[0])
    labels, k = kern.labels(maps, n)
    wl, wk = ref.labels(maps, n)
    np.testing.assert_array_equal(labels, wl)
    assert k == wk


@pytest.mark.parametrize("seed", range(5))
def test_forest_ids(kern, ref, seed):
    rng = np.random.default_rng(seed)
    spread = [10, 10**3, 10**7, 10, 10**9][seed]  # dense ids and sparse ones
    ids = rng.choice(spread, min(spread, 500), replace=False).astype(np.int64)
    parts = np.array_split(rng.permutation(ids), 4)
    got = kern.forest_ids(parts)
    np.testing.assert_array_equal(got, ref.forest_ids(parts))
    np.testing.assert_array_equal(got, np.sort(ids))
    assert kern.forest_ids([]).shape == (0,)


@pytest.mark.parametrize("seed", range(6))
def test_contract_interior(kern, ref, seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 40))
    m = int(rng.integers(0, 3 * k))
    lu, lv = rng.integers(0, k, m), rng.integers(0, k, m)
    interior = rng.random(k) < [0.0, 0.3, 0.7, 1.0, 0.5, 0.9][seed]
    got, want = kern.contract_interior(lu, lv, interior), ref.contract_interior(lu, lv, interior)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    keep, chosen, rep = want
    assert np.array_equal(np.sort(np.concatenate([keep, chosen])), np.unique(np.concatenate([keep, chosen])))
    if interior.all():  # nothing is left to decide: Kruskal's forest of the edges
        assert keep.shape == (0,)


def test_to_device_and_synchronize(kern):
    a = np.arange(5, dtype=np.int64)
    d, nb = kern.to_device(a)
    kern.synchronize()
    assert d.__class__ is kern.xp.ndarray
    assert nb == (0 if kern.name != "gpu" else a.nbytes)
    np.testing.assert_array_equal(kern.xp.asnumpy(d) if hasattr(kern.xp, "asnumpy") else d, a)


# ---------------------------------------------------------------------------
# the ranged kernels: a partitioned round's chunk and range work
# ---------------------------------------------------------------------------

def assert_same_arrays(got, want):
    """Host arrays (or tuples of them) equal in values and dtypes."""
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for x, y in zip(got, want):
        assert isinstance(x, np.ndarray)  # ranged results come back on the host
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype


def on_device(kern, *arrays):
    """The arrays in the backend's own memory (a ranged kernel takes host or backend arrays)."""
    return tuple(kern.to_device(a)[0] for a in arrays)


def sorted_edges(ref, case, seed=0):
    """A case's prepared edges, shuffled, then in the strict order by the reference: ``(shuffled, sorted)``."""
    u, v, key, eid = prepared(ref, case).edges()
    perm = np.random.default_rng(seed).permutation(u.shape[0])
    shuffled = (u[perm], v[perm], key[perm], eid[perm])
    return shuffled, ref.sort_edges(*shuffled)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ranged_sort_edges(kern, ref, case):
    shuffled, want = sorted_edges(ref, case)
    assert_same_arrays(kern.sort_edges(*shuffled), want)
    assert_same_arrays(kern.sort_edges(*on_device(kern, *shuffled)), want)
    _, _, key, eid = want
    order = np.lexsort((eid, key))
    np.testing.assert_array_equal(order, np.arange(key.shape[0]))  # the strict (key, eid) order


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ranged_local_ids_and_rank(kern, ref, case):
    _, (u, v, _, _) = sorted_edges(ref, case)
    assert_same_arrays(kern.local_ids(u, v), ref.local_ids(u, v))
    assert_same_arrays(kern.local_ids(*on_device(kern, u, v)), ref.local_ids(u, v))
    for values in (u, np.asarray(u, np.int64) * 3 - 7, np.concatenate([v, u])[::-1]):
        assert_same_arrays(kern.rank(values), ref.rank(values))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ranged_cheapest_sorted_and_first_touch(kern, ref, case):
    _, (u, v, key, eid) = sorted_edges(ref, case, seed=1)
    ids, lu, lv = ref.local_ids(u, v)
    k = ids.shape[0]
    assert_same_arrays(kern.first_touch(lu, lv, k), ref.first_touch(lu, lv, k))
    assert_same_arrays(kern.first_touch(lu, lv, k + 3), ref.first_touch(lu, lv, k + 3))  # ids no edge touches
    want = ref.cheapest_sorted(ids, lu, lv, u, v, key, eid)
    assert_same_arrays(kern.cheapest_sorted(ids, lu, lv, u, v, key, eid), want)
    assert_same_arrays(kern.cheapest_sorted(*on_device(kern, ids, lu, lv, u, v, key, eid)), want)
    # the same cheapest edges as the map phase finds (there over component ids 0..n-1, here over ids)
    _, cand = ref.map(prepared(ref, case), case[1])
    np.testing.assert_array_equal(want[0], cand.comp)
    np.testing.assert_array_equal(want[2], cand.eid)
    np.testing.assert_array_equal(want[3], cand.other)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ranged_lightest_parallel(kern, ref, case):
    _, (u, v, _, _) = sorted_edges(ref, case, seed=2)
    ids, lu, lv = ref.local_ids(u, v)
    want = ref.lightest_parallel(lu, lv, ids.shape[0])
    assert_same_arrays(kern.lightest_parallel(lu, lv, ids.shape[0]), want)
    pairs = {(min(a, b), max(a, b)) for a, b in zip(lu.tolist(), lv.tolist())}
    assert len(want) == len(pairs) and np.all(np.diff(want) > 0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ranged_cheapest_rows(kern, ref, case):
    """A range's merge of the candidate tables of three chunks: every row of each, one slot a component."""
    name, n, src, dst, w = case
    raws, offsets = split3(src, dst, w)
    parts = [ref.map(ref.prepare(r, off, n), n)[1] for r, off in zip(raws, offsets)]
    comp, key, eid = (np.concatenate([p.arrays()[j] for p in parts]) for j in range(3))
    for c, span in ((comp, n), (comp[::-1].copy(), n + 2)):
        k, e = (key, eid) if c is comp else (key[::-1].copy(), eid[::-1].copy())
        want = ref.cheapest_rows(c, k, e, span)
        assert_same_arrays(kern.cheapest_rows(c, k, e, span), want)
        merged = ref.merge(parts)
        np.testing.assert_array_equal(c[want], merged.comp)
        np.testing.assert_array_equal(e[want], merged.eid)


@pytest.mark.parametrize("seed", range(9))
def test_ranged_positions_and_sparse_values(kern, ref, seed):
    """Any share of a range present and asked; from seed 6 a few ids asked of a wide range (an owner
    answering one requester's part: the look-ups step through the table, not along it)."""
    rng = np.random.default_rng(seed)
    lo = int(rng.integers(0, 50))
    width = (int(rng.integers(1, 400)) if seed < 6 else int(rng.integers(2000, 20000))) if seed else 0
    present = np.sort(rng.choice(np.arange(lo, lo + width), int(rng.integers(0, width + 1)), replace=False)) \
        if width else np.zeros(0, np.int64)
    values = rng.integers(-5, 1000, present.shape[0])
    few = int(rng.integers(1, 12)) if seed >= 6 else width + 1
    asked = np.sort(rng.choice(np.arange(lo, lo + width), int(rng.integers(0, few)), replace=False)) \
        if width else np.zeros(0, np.int64)
    for table, ids in ((present, asked), (present.astype(np.int32), asked), (present, asked.astype(np.int32))):
        assert_same_arrays(kern.positions(table, ids), ref.positions(table, ids))
        assert_same_arrays(kern.sparse_values(table, values, lo, 7, ids), ref.sparse_values(table, values, lo, 7, ids))
    assert_same_arrays(kern.positions(*on_device(kern, present, asked)), ref.positions(present, asked))


# ---------------------------------------------------------------------------
# the reference against plain Python, written from the contract's words
# ---------------------------------------------------------------------------

def py_weight(x):
    """A weight as a Python number, compared exactly (ints unbounded, -0.0 == 0.0)."""
    return x.item() if hasattr(x, "item") else x


def naive_prepare(src, dst, w, offset):
    """Rows ``(u, v, weight, eid)`` of the non-loop edges, edge ``i`` with id ``offset + i``."""
    return [(int(a), int(b), py_weight(x), offset + i)
            for i, (a, b, x) in enumerate(zip(src.tolist(), dst.tolist(), list(w))) if a != b]


def naive_map(rows, n_comp):
    """``{component: (weight, eid, other end)}``: the least (weight, eid) edge at each component."""
    best = {}
    for u, v, x, e in rows:
        for c, o in ((u, v), (v, u)):
            if c not in best or (x, e) < best[c][:2]:
                best[c] = (x, e, o)
    assert all(0 <= c < n_comp for c in best)
    return best


def naive_contract(best, n_comp, finished_offset, finish=True):
    """Hook along the candidates (a mutual pair keeps its smaller id as root), follow to the roots,
    number live roots 0.. and finished ones -(F+1).. in id order: ``(M, chosen, n_next, n_fin)``."""
    parent = list(range(n_comp))
    for c, (_, _, o) in best.items():
        parent[c] = o
    for c, (_, e, o) in best.items():
        if best.get(o, (None, None))[1] == e and c < o:  # both chose the same edge
            parent[c] = c
    chosen = sorted(best[c][1] for c in range(n_comp) if parent[c] != c)
    root = []
    for c in range(n_comp):
        seen = 0
        while parent[c] != c:
            c = parent[c]
            seen += 1
            assert seen <= n_comp, "hooking made a cycle"
        root.append(c)
    return naive_filter_nodes(root, [c in best for c in range(n_comp)], finished_offset, finish) \
        + (chosen,)


def naive_filter_nodes(root, has, finished_offset, finish=True):
    number, live, fin = {}, 0, 0
    for r in range(len(root)):
        if root[r] != r:
            continue
        if finish and not has[r]:
            number[r] = -(finished_offset + fin + 1)
            fin += 1
        else:
            number[r] = live
            live += 1
    return [number[root[c]] for c in range(len(root))], live, fin


def naive_filter_edges(rows, M):
    return [(M[u], M[v], x, e) for u, v, x, e in rows if M[u] != M[v]]


def naive_compose(maps):
    out = []
    for c in range(len(maps[0])):
        x = int(maps[0][c])
        for M in maps[1:]:
            if x >= 0:
                x = int(M[x])
        out.append(x)
    return out


def naive_labels(final):
    """Finished ids renumbered by their first vertex."""
    number = {}
    return [number.setdefault(f, len(number)) for f in final], len(set(final))


def key_order_holds(w, keys):
    """``key(a) < key(b)`` exactly when ``w[a] < w[b]``, over every pair (weights as Python numbers)."""
    ws, ks = [py_weight(x) for x in w], [int(k) for k in keys.tolist()]
    return all((ws[i] < ws[j]) == (ks[i] < ks[j]) and (ws[i] == ws[j]) == (ks[i] == ks[j])
               for i in range(len(ws)) for j in range(len(ws)))


def rows_of(chunk):
    u, v, key, eid = host_edges(chunk)
    return sorted(zip(u.tolist(), v.tolist(), key.tolist(), eid.tolist()), key=lambda r: r[3])


def keyed(rows, w, offset):
    """Naive rows with their weight replaced by the reference's key of that edge (to compare chunks)."""
    keys = kernels.reference.weight_keys(w)
    return sorted(((u, v, int(keys[e - offset]), e) for u, v, _, e in rows), key=lambda r: r[3])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reference_prepare_is_the_edges_with_ordered_keys(ref, case):
    name, n, src, dst, w = case
    keys = kernels.reference.weight_keys(w)
    assert keys.dtype == np.uint64 and key_order_holds(w[:60], keys[:60])
    assert rows_of(ref.prepare((src, dst, w), 1000, n)) == keyed(naive_prepare(src, dst, w, 1000), w, 1000)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reference_rounds_are_the_naive_rounds(ref, case):
    """map, contract (with filter-nodes), filter-edges, the fused map, compose-maps and labels of the
    reference, round by round, against the loops above; the rounds end with Kruskal's forest and the
    BFS labels."""
    name, n, src, dst, w = case
    rows = naive_prepare(src, dst, w, 0)
    chunk = ref.prepare((src, dst, w), 0, n)
    comps, fin, maps, chosen = n, 0, [], []
    while comps:
        best = naive_map(rows, comps)
        _, cand = ref.map(chunk, comps)
        got = dict(zip(cand.comp.tolist(), zip(cand.eid.tolist(), cand.other.tolist())))
        assert got == {c: (e, o) for c, (_, e, o) in best.items()}
        for finish in (False, True):
            M, n_next, n_fin, ch = naive_contract(best, comps, fin, finish)
            gM, gch, gn, gf = ref.contract(cand, comps, fin, finish)
            assert gM.tolist() == M and sorted(gch.tolist()) == ch and (gn, gf) == (n_next, n_fin)
        fused, _ = ref.map(chunk, n_next, gM)
        rows = naive_filter_edges(rows, M)
        chunk = ref.filter_edges(chunk, gM)
        assert rows_of(chunk) == keyed(rows, w, 0) == rows_of(fused)
        maps.append(gM)
        chosen += ch
        fin += n_fin
        comps = n_next
    assert sorted(chosen) == kruskal(n, src, dst, w)[0].tolist()
    if maps:
        assert ref.compose_maps(maps).tolist() == naive_compose(maps)
        labels, k = ref.labels(maps, n)
        assert (labels.tolist(), k) == naive_labels(naive_compose(maps))
        np.testing.assert_array_equal(labels, component_labels(n, src, dst))


@pytest.mark.parametrize("seed", range(4))
def test_reference_filter_nodes_is_the_naive_one(ref, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    root = np.arange(n, dtype=np.int64)
    roots = np.flatnonzero(rng.random(n) < 0.3)
    if roots.size:
        others = np.setdiff1d(np.arange(n), roots)
        root[others] = rng.choice(roots, others.size)
    has = rng.random(n) < 0.7
    for finish in (True, False):
        M, n_next, n_fin = ref.filter_nodes(root, has, 9, finish)
        assert (M.tolist(), n_next, n_fin) == naive_filter_nodes(root.tolist(), has.tolist(), 9, finish)


def naive_first_touch(lu, lv, k):
    first = [len(lu)] * k
    for i in range(len(lu) - 1, -1, -1):
        first[lu[i]] = i
        first[lv[i]] = i
    return first


def naive_sparse_values(ids, values, lo, fin, asked):
    """Each asked id's value, or for an absent one ``-(fin + its rank among the absent ids from lo) - 1``."""
    present = dict(zip(ids, values))
    out = []
    for x in asked:
        if x in present:
            out.append(present[x])
        else:
            absent_before = (x - lo) - sum(1 for i in ids if i < x)
            out.append(-(fin + absent_before) - 1)
    return out


def naive_cheapest_rows(c, key, eid):
    best = {}
    for i, (slot, k, e) in enumerate(zip(c, key, eid)):
        if slot not in best or (k, e) < (key[best[slot]], eid[best[slot]]):
            best[slot] = i
    return [best[slot] for slot in sorted(best)]


@pytest.mark.parametrize("seed", range(6))
def test_reference_ranged_kernels_are_the_naive_ones(ref, seed):
    rng = np.random.default_rng(seed)
    m, k = int(rng.integers(0, 200)), int(rng.integers(1, 40))
    lu, lv = rng.integers(0, k, m), rng.integers(0, k, m)
    assert ref.first_touch(lu, lv, k).tolist() == naive_first_touch(lu.tolist(), lv.tolist(), k)
    c, key, eid = rng.integers(0, k, m), rng.integers(0, 4, m).astype(np.uint64), rng.integers(0, 6, m)
    assert ref.cheapest_rows(c, key, eid, k).tolist() == naive_cheapest_rows(c.tolist(), key.tolist(), eid.tolist())
    lo, width = int(rng.integers(0, 30)), int(rng.integers(1, 80))
    ids = np.sort(rng.choice(np.arange(lo, lo + width), int(rng.integers(0, width + 1)), replace=False))
    values = rng.integers(0, 100, ids.shape[0])
    asked = np.sort(rng.choice(np.arange(lo, lo + width), int(rng.integers(0, width + 1)), replace=False))
    assert ref.sparse_values(ids, values, lo, 5, asked).tolist() == \
        naive_sparse_values(ids.tolist(), values.tolist(), lo, 5, asked.tolist())
    assert ref.positions(ids, asked).tolist() == [sum(1 for i in ids.tolist() if i < x) for x in asked.tolist()]

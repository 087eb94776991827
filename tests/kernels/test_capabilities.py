"""The contract's capabilities: what every backend is and can do, beside its phase functions.

Every backend (the reference, the CPU kernels, the GPU kernels on their
NumPy stand-in) has the contract's attributes and its validation, row
gather and device memory, with the same answers; an optional function is
there exactly where its flag says; the registry says which backends can
run here.  The phase functions are held to the reference by
test_conformance.py.
"""
import inspect

import numpy as np
import pytest

from mst_dist import kernels
from mst_dist.kernels.contract import ATTRIBUTES, CAPABILITIES, OPTIONAL_FUNCTIONS, PHASE_FUNCTIONS, Backend

BACKENDS = [("reference", None), ("cpu", None), ("gpu", "numpy")]


@pytest.fixture(params=BACKENDS, ids=[b[0] for b in BACKENDS])
def kern(request):
    name, xp = request.param
    return kernels.backend(name, xp=xp)


def test_the_capabilities_are_every_name_of_the_contract():
    assert CAPABILITIES == set(PHASE_FUNCTIONS) | set(ATTRIBUTES) | set(OPTIONAL_FUNCTIONS)
    declared = set(Backend.__annotations__) | {n for n in vars(Backend) if not n.startswith("_")}
    assert CAPABILITIES <= declared, sorted(CAPABILITIES - declared)
    assert set(OPTIONAL_FUNCTIONS.values()) <= set(ATTRIBUTES)


def test_every_backend_says_what_it_is(kern):
    assert kern.name in kernels.BACKENDS
    assert kern.kind in ("cpu", "gpu")
    assert isinstance(kern.supports_raw_solve, bool)
    assert kern.max_chunk_edges is None or kern.max_chunk_edges > 0
    assert kern.device_bytes_per_edge >= 0
    assert kern.device_memory() is None  # no device: host arrays, or the NumPy stand-in


def test_the_kinds_name_the_workers_that_run_them():
    assert kernels.backend("cpu").kind == "cpu"
    assert kernels.backend("reference").kind == "cpu"
    stand_in = kernels.backend("gpu", xp="numpy")
    assert stand_in.kind == "gpu"  # the stand-in runs the GPU's code: its records count as the GPU's
    assert stand_in.max_chunk_edges and stand_in.device_bytes_per_edge > 0


def test_optional_functions_are_there_exactly_where_flagged(kern):
    for func, flag in OPTIONAL_FUNCTIONS.items():
        assert hasattr(kern, func) == getattr(kern, flag)
        if getattr(kern, flag):
            want = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(Backend, func)).parameters.values()
                    if p.name != "self"]
            got = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(kern, func)).parameters.values()]
            assert got == want, func


def test_the_raw_solve_finds_the_prepared_solves_forest():
    cpu = kernels.backend("cpu")
    rng = np.random.default_rng(5)
    n, m = 200, 3000
    src, dst, w = rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m)
    raws = [(src[:1000], dst[:1000], w[:1000]), (src[1000:], dst[1000:], w[1000:])]
    sol, prep = cpu.solve_raw(raws, [0, 1000], n)
    want = cpu.solve_local(cpu.prepare_many(raws, [0, 1000], n), n)
    np.testing.assert_array_equal(np.sort(sol.chosen), np.sort(want.chosen))
    assert sol.n_finished == want.n_finished and prep >= 0


def test_scratch_is_the_arena_or_nothing(kern):
    if kern.scratch is None:
        assert kern.name != "cpu"
        return
    scratch = kern.scratch
    assert scratch.default_limit() > 0 and isinstance(scratch.takes, int)
    assert scratch.release() >= 0


# ---------------------------------------------------------------------------
# validation and the forest's rows
# ---------------------------------------------------------------------------

_BAD = [
    ("valid", [0, 1, 2], [1, 2, 3], [1.0, 2.0, 3.0], 4, (-1, "", 3)),
    ("negative", [0, -1, 2], [1, 2, 3], [1.0, 2.0, 3.0], 4, (1, "negative vertex id", -1)),
    ("out of range", [0, 1, 2], [1, 4, 3], [1.0, 2.0, 3.0], 4, (1, "vertex id out of range", -1)),
    ("nan", [0, 1, 2], [1, 2, 3], [1.0, 2.0, np.nan], 4, (2, "weight is NaN", -1)),
    ("inf", [0, 1, 2], [1, 2, 3], [np.inf, 2.0, 3.0], 4, (0, "weight is infinite", -1)),
    ("no bound", [0, 1, 9], [1, 2, 3], [1, 2, 3], None, (-1, "", 9)),
    ("no weights", [0, 5, 2], [1, 2, 3], None, 4, (1, "vertex id out of range", -1)),
    ("empty", [], [], [], 4, (-1, "", -1)),
]


@pytest.mark.parametrize("case", _BAD, ids=[c[0] for c in _BAD])
def test_first_invalid_edge_is_the_same_everywhere(kern, case):
    _, src, dst, w, n, want = case
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    w = None if w is None else np.asarray(w, np.float64 if any(isinstance(x, float) for x in w) else np.int64)
    i, reason, max_id = kern.first_invalid_edge(src, dst, w, n)
    assert (int(i), reason, int(max_id)) == want


@pytest.mark.parametrize("wdtype", [np.int32, np.int64, np.float32, np.float64, np.float16, np.uint8])
def test_take_rows_gathers_the_rows(kern, wdtype):
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 100, 500), rng.integers(0, 100, 500).astype(np.int32)
    w = (rng.random(500) * 100).astype(wdtype)
    ids = np.sort(rng.choice(500, 40, replace=False)).astype(np.int64)
    got = kern.take_rows(src, dst, w, ids)
    for g, a in zip(got, (src, dst, w)):
        assert isinstance(g, np.ndarray) and g.dtype == a.dtype
        np.testing.assert_array_equal(g, a[ids])


# ---------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------

def test_ready_answers_for_every_backend():
    assert kernels.ready("cpu") == (True, "host")
    assert kernels.ready("reference")[0]
    ok, reason = kernels.ready("gpu", "numpy")
    assert ok and "stand-in" in reason
    with pytest.raises(ValueError, match="reference, cpu, gpu"):
        kernels.ready("tpu")


def test_ready_for_the_gpu_asks_the_gpu_backend(monkeypatch):
    from mst_dist.kernels import gpu

    monkeypatch.setattr(gpu, "gpu_ready", lambda xp: (False, f"no device for {xp}"))
    assert kernels.ready("gpu") == (False, "no device for cupy")


def test_solve_local_dedupe_is_outside_the_contract_and_finds_the_same_forest(kern):
    from mst_dist.kernels.tuning import solve_local_dedupe

    assert "dedupe" not in inspect.signature(kern.solve_local).parameters
    rng = np.random.default_rng(2)
    n, m = 60, 2000  # dense, with many parallel edges: the cut has work to do
    src, dst, w = rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 50, m)
    want = kern.solve_local(kern.prepare((src, dst, w), 0, n), n)
    got = solve_local_dedupe(kern, kern.prepare((src, dst, w), 0, n), n, dedupe=1.0, min_degree=0.5)
    np.testing.assert_array_equal(np.sort(got.chosen), np.sort(want.chosen))
    assert got.n_finished == want.n_finished

"""The GPU backend: packed keys, its solve's light pass, GPU workers, clusters mixing CPU and GPU workers.

The GPU kernels are written once over an array module ``xp``.  Everything here
but the ``gpu``-marked tests runs them with the NumPy stand-in
(``mst.gpu.array-module: numpy``) on workers that advertise ``GPU=1``: the
same code path as CuPy on a device, on any machine.  The ``gpu``-marked tests
run the very same checks with CuPy on a CUDA device, and skip without one.
Each phase function is held to the reference by test_conformance.py.
"""
import logging

import dask
import numpy as np
import pytest

import mst_dist
from mst_dist.kernels import backend, gpu, reference
from mst_dist.kernels.contract import packing_for
from mst_dist.kernels.gpu.chunk import hi_keys, pack
from support.naive import kruskal
from support.cases import ALL, EngineCases, check
from support.oracle import assert_result, expected

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.bool_]

_CUDA, _CUDA_WHY = gpu.gpu_ready("cupy")
needs_cuda = pytest.mark.skipif(not _CUDA, reason=f"needs a CUDA GPU and CuPy: {_CUDA_WHY}")


@pytest.fixture(autouse=True)
def standin():
    """GPU workers of this module run the GPU kernels on NumPy (unless a test says otherwise)."""
    with dask.config.set({"mst.gpu.array-module": "numpy"}):
        yield


def _weights(rng, dt, m):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return (rng.standard_normal(m) * 3).round(1).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, m).astype(bool)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -6), min(info.max, 6)
    return rng.integers(lo, hi + 1, m).astype(dt)


# ---------------------------------------------------------------------------
# packed keys
# ---------------------------------------------------------------------------

EXTREMES = {
    "i": lambda dt: [np.iinfo(dt).min, -1, 0, 1, np.iinfo(dt).max],
    "u": lambda dt: [0, 1, np.iinfo(dt).max],
    "f": lambda dt: [-np.finfo(dt).max, -1.5, -np.finfo(dt).tiny, -0.0, 0.0, np.finfo(dt).smallest_subnormal,
                     np.finfo(dt).tiny, 1.5, np.finfo(dt).max],
    "b": lambda dt: [False, True],
}


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_packed_keys_follow_the_strict_order(dt):
    """Sorting packed keys sorts a chunk by (weight, edge id), whatever the packing."""
    rng = np.random.default_rng(1)
    ext = np.array(EXTREMES[np.dtype(dt).kind](dt), dtype=dt)
    w = np.concatenate([ext, _weights(rng, dt, 400), ext[::-1]])
    key = reference.weight_keys(w)
    pk = pack(hi_keys(key, packing_for(dt), np), np)
    expect = np.lexsort((np.arange(w.size), w.astype(np.float64) if w.dtype.kind == "f" else w))
    if w.dtype.kind in "iu" and w.dtype.itemsize == 8:
        expect = np.array(sorted(range(w.size), key=lambda i: (int(w[i]), i)))
    np.testing.assert_array_equal(np.argsort(pk, kind="stable"), expect)
    # equal weights (-0.0 and 0.0 included) get equal high halves
    hi = pk >> np.uint64(32)
    for i in range(w.size):
        same = w == w[i]
        assert len(set(hi[same].tolist())) == 1


@pytest.mark.parametrize("dt,packing", [(np.float32, "f32"), (np.float16, "f32"), (np.float64, "rank"),
                                        (np.int32, "i32"), (np.int8, "i32"), (np.int64, "rank"),
                                        (np.uint32, "u32"), (np.bool_, "u32"), (np.uint64, "rank")])
def test_which_dtypes_are_ranked(dt, packing):
    assert packing_for(dt) == packing


def test_chunk_size_limit():
    class Huge:  # only its length is looked at
        shape = (gpu.MAX_CHUNK + 1,)

    with pytest.raises(ValueError, match="at most 4,294,967,295 edges"):
        pack(Huge(), np)


@pytest.mark.parametrize("light", [0, 1.5])
def test_solve_dense_graphs_light_pass(light):
    """Dense graphs take the light pass first (then the heavy edges, relabelled once)."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        n, m = int(rng.integers(5, 300)), int(rng.integers(2000, 6000))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        w = rng.integers(0, 40, m).astype(np.float64 if seed % 2 else np.int32)
        kern = backend("gpu", xp="numpy")
        sol = kern.solve_local(kern.prepare((src, dst, w), 0, n), n, 0, light_factor=light)
        exp, comps = kruskal(n, src, dst, w)
        np.testing.assert_array_equal(np.sort(sol.chosen), exp)
        assert sol.n_finished == comps
        assert any(t.filter_pass for t in sol.rounds) == (light > 0)
        assert any(t.light for t in sol.rounds) == (light > 0)
        assert sum(t.forest_edges for t in sol.rounds) == len(exp)


# ---------------------------------------------------------------------------
# the engine on GPU workers (stand-in)
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gclient():
    """One in-process worker advertising a GPU (2 threads)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, resources={"GPU": 1},
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def mixed():
    """One CPU worker and one GPU worker, in process: a heterogeneous cluster."""
    from distributed import Client, Scheduler, SpecCluster, Worker

    spec = {"cpu": {"cls": Worker, "options": {"nthreads": 1}},
            "gpu": {"cls": Worker, "options": {"nthreads": 1, "resources": {"GPU": 1}}}}
    with SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}}) \
            as cluster, Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


class TestGPUWorkerLocal(EngineCases):
    """backend="gpu": the single-task solve on the GPU worker's device."""

    def run(self, g, request):
        res = mst_dist.minimum_spanning_forest(g, request.getfixturevalue("gclient"), backend="gpu")
        assert res.stats.backend == "gpu"
        return res


class TestGPUWorkerRounds(EngineCases):
    """backend="gpu": every round as Dask tasks over 7 device chunks, fan-in 2."""

    def run(self, g, request):
        res = mst_dist.minimum_spanning_forest(g, request.getfixturevalue("gclient"), backend="gpu",
                                               partitions=7, local_finish=0, split_every=2)
        assert all(r.gpu_edges == r.edges_before for r in res.stats.rounds)
        return res


class TestMixedCluster(EngineCases):
    """auto on a CPU + GPU cluster: chunks on both kinds (given throughputs), merged together."""

    def run(self, g, request):
        return mst_dist.minimum_spanning_forest(g, request.getfixturevalue("mixed"), partitions=6,
                                                local_finish=0, throughput={"gpu": 1, "cpu": 1})


@pytest.fixture
def ranged_calls(monkeypatch):
    """How often the GPU kernels' ranged functions run (the workers are in this process)."""
    from mst_dist.kernels.contract import RANGED_FUNCTIONS
    from mst_dist.kernels.gpu import GPUKernels

    calls = dict.fromkeys(RANGED_FUNCTIONS, 0)
    for name in RANGED_FUNCTIONS:
        def counted(self, *args, _name=name, _inner=getattr(GPUKernels, name)):
            calls[_name] += 1
            return _inner(self, *args)
        monkeypatch.setattr(GPUKernels, name, counted)
    return calls


@pytest.mark.parametrize("mode", [{"mst.local-contraction": "never"}, {"mst.local-contraction": "always"},
                                  {"mst.stream": "always"}], ids=["partitioned", "local-contraction-first", "spread"])
@pytest.mark.parametrize("case", [c for c in ALL if c[0] in ("wikipedia", "parallel-edges", "erdos_renyi-1",
                                                             "int64-extremes")], ids=lambda c: c[0])
def test_partitioned_rounds_on_a_gpu_worker(gclient, ranged_calls, case, mode):
    """backend="gpu", every round partitioned: the chunks' ranged kernels are the GPU's (here on NumPy),
    and the forest is Kruskal's."""
    name, n, src, dst, w = case
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    settings = {"mst.vertex-base": 0, "mst.vertex-ranges": 3, "mst.slice-edges": max(1, g.n_edges // 3), **mode}
    with dask.config.set(settings):
        res = mst_dist.minimum_spanning_forest(g, gclient, backend="gpu", vertex_partition="always", partitions=3,
                                               local_finish=0, split_every=2)
    assert res.stats.kind == ("spread-streaming" if "mst.stream" in mode else "partitioned")
    assert_result(res, expected(g))
    assert ranged_calls["sort_edges"] >= 3  # every chunk put in the strict order by the GPU's kernels
    assert ranged_calls["local_ids"] + ranged_calls["rank"] > 0 and ranged_calls["cheapest_sorted"] > 0


def test_gpu_rounds_report_host_device_traffic(gclient):
    g = mst_dist.generate("rmat", scale=11, edge_factor=8, seed=3)
    res = mst_dist.minimum_spanning_forest(g, gclient, backend="gpu", partitions=4, local_finish=0,
                                           light_factor=0)
    rounds = res.stats.rounds
    # round 0 uploads the raw chunks (src, dst int64 and weights) and brings candidates back
    assert rounds[0].h2d_bytes >= g.n_edges * (8 + 8 + np.dtype(g.weight_dtype).itemsize)
    assert rounds[0].d2h_bytes > 0
    # later rounds copy only the last round's map in, once per worker (chunks stay on the
    # device), and candidates out
    for prev, r in zip(rounds, rounds[1:]):
        assert r.h2d_bytes == 8 * prev.components_before
    assert res.stats.h2d_bytes == sum(r.h2d_bytes for r in rounds)
    assert res.stats.to_dict()["d2h_bytes"] == sum(r.d2h_bytes for r in rounds)
    cpu = mst_dist.minimum_spanning_forest(g, gclient, backend="cpu", partitions=4, local_finish=0)
    np.testing.assert_array_equal(cpu.edge_ids, res.edge_ids)
    assert cpu.stats.backend == "cpu" and cpu.stats.h2d_bytes == 0 and cpu.stats.d2h_bytes == 0


@pytest.mark.parametrize("wdtype", ["int32", "float32", "float64", "uint64"])
@pytest.mark.parametrize("light", [0, 1.5])
def test_mixed_cluster_same_ids_as_cpu(mixed, client, wdtype, light):
    rng = np.random.default_rng(5)
    n, m = 3000, 40000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = (rng.integers(0, 50, m) if wdtype != "float32" else rng.random(m)).astype(wdtype)
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    ref = mst_dist.minimum_spanning_forest(g, client, backend="cpu")
    res = mst_dist.minimum_spanning_forest(g, mixed, partitions=8, local_finish=0, light_factor=light,
                                           throughput={"gpu": 3, "cpu": 1})
    np.testing.assert_array_equal(res.edge_ids, ref.edge_ids)
    np.testing.assert_array_equal(res.labels, ref.labels)
    assert res.stats.backend == "mixed"
    kinds = {p["kind"]: p for p in res.stats.placement.values()}
    assert kinds["gpu"]["chunks"] == 6 and kinds["cpu"]["chunks"] == 2  # 3 : 1
    r0 = res.stats.rounds[0]
    assert 0 < r0.gpu_edges < r0.edges_before  # both kinds mapped edges


@pytest.mark.parametrize("fastest", ["gpu", "cpu"])
def test_mixed_cluster_local_finish_gathers_both_kinds(mixed, client, fastest):
    """The single task runs on the fastest worker and takes the other kind's chunks
    (device chunks travel pickled as host arrays; host chunks go onto the device)."""
    g = mst_dist.generate("rmat", scale=12, edge_factor=8, seed=7)
    ref = mst_dist.minimum_spanning_forest(g, client, backend="cpu")
    tp = {"gpu": 3, "cpu": 1} if fastest == "gpu" else {"gpu": 1, "cpu": 3}
    res = mst_dist.minimum_spanning_forest(g, mixed, partitions=8, local_finish=30000, light_factor=0,
                                           throughput=tp)
    np.testing.assert_array_equal(res.edge_ids, ref.edge_ids)
    np.testing.assert_array_equal(res.labels, ref.labels)
    modes = [r.mode for r in res.stats.rounds]
    assert modes[0] == "distributed" and modes[-1] == "local"
    local = [r for r in res.stats.rounds if r.mode == "local"]
    if fastest == "gpu":
        assert local[0].gpu_edges == local[0].edges_before > 0 and local[0].h2d_bytes > 0
    else:
        assert all(r.gpu_edges == 0 for r in local) and local[0].h2d_bytes == 0


def test_mixed_cluster_measures_throughput(mixed, caplog):
    from mst_dist.engine import tasks

    tasks.THROUGHPUT.clear()
    g = mst_dist.generate("erdos_renyi", n=2000, m=30000, seed=2)
    with dask.config.set({"mst.placement.calibration-edges": 20000}), caplog.at_level(logging.INFO, "mst_dist"):
        res = mst_dist.minimum_spanning_forest(g, mixed, local_finish=0)
    assert "measured throughput" in caplog.text
    tp = {p["kind"]: p for p in res.stats.placement.values()}
    assert tp["gpu"]["throughput"] > 0 and tp["cpu"]["throughput"] > 0
    assert len(tasks.THROUGHPUT) == 2  # kept for the next run
    # chunks dealt out in proportion: each worker's edges over its throughput about equal
    finish = [p["edges"] / p["throughput"] for p in tp.values()]
    biggest = max(p["edges"] for p in tp.values()) / sum(p["chunks"] for p in tp.values())
    assert max(finish) - min(finish) <= 2 * biggest / min(p["throughput"] for p in tp.values())
    ref = mst_dist.minimum_spanning_forest(g, mixed, backend="cpu")
    np.testing.assert_array_equal(res.edge_ids, ref.edge_ids)


def test_backend_gpu_keeps_chunks_on_gpu_workers(mixed):
    g = mst_dist.generate("grid", rows=40, cols=50, seed=1)
    res = mst_dist.minimum_spanning_forest(g, mixed, backend="gpu", partitions=4, local_finish=0)
    assert res.stats.backend == "gpu"
    assert [p["kind"] for p in res.stats.placement.values()] == ["gpu"]
    assert all(r.gpu_edges == r.edges_before for r in res.stats.rounds)


def test_backend_gpu_without_gpu_workers_says_how(client):
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1, 2])
    with pytest.raises(mst_dist.GPUUnavailableError, match=r"none of the cluster's 1 worker.*mst-dist\[gpu\]"):
        mst_dist.minimum_spanning_forest(g, client, backend="gpu")


def test_backend_gpu_on_a_machine_without_cuda():
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1, 2])
    with dask.config.set({"mst.gpu.array-module": "cupy"}):
        if gpu.gpu_ready("cupy")[0]:
            assert mst_dist.minimum_spanning_forest(g, backend="gpu").edge_ids.tolist() == [0, 1]
            return
        with pytest.raises(mst_dist.GPUUnavailableError, match=r"pip install 'mst-dist\[gpu\]'"):
            mst_dist.minimum_spanning_forest(g, backend="gpu")


def test_auto_without_gpus_falls_back_with_a_log_line(client, caplog):
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1, 2])
    with caplog.at_level(logging.INFO, "mst_dist"):
        res = mst_dist.minimum_spanning_forest(g, client)
    assert "no GPU workers in the cluster" in caplog.text
    assert res.stats.backend == "cpu" and res.edge_ids.tolist() == [0, 1]


def test_gpu_worker_that_cannot_run_cupy(gclient, caplog):
    """A worker advertising GPU=1 without CuPy: 'gpu' refuses naming it, 'auto' runs on its CPU."""
    g = mst_dist.generate("hypercube", d=6, seed=1)
    with dask.config.set({"mst.gpu.array-module": "no-such-module"}):
        with pytest.raises(mst_dist.GPUUnavailableError, match="cannot run the GPU kernels"):
            mst_dist.minimum_spanning_forest(g, gclient, backend="gpu")
        with caplog.at_level(logging.WARNING, "mst_dist"):
            res = mst_dist.minimum_spanning_forest(g, gclient)
    assert "advertises a GPU but cannot run the GPU kernels" in caplog.text
    assert res.stats.backend == "cpu"
    src, dst, w = g.to_arrays()
    check(res, g.n_vertices, src, dst, w)


def test_gpu_worker_warmup_runs_the_gpu_kernels():
    from mst_dist.engine import warmup

    class FakeState:
        total_resources = {"GPU": 1}

    class FakeWorker:
        state = FakeState()

    assert warmup._is_gpu_worker(FakeWorker())
    assert warmup.warm(gpu=True) > 0


# ---------------------------------------------------------------------------
# on a real CUDA device
# ---------------------------------------------------------------------------

@pytest.fixture
def cupy_xp():
    if not _CUDA:
        pytest.skip(f"needs a CUDA GPU and CuPy: {_CUDA_WHY}")
    import cupy

    with dask.config.set({"mst.gpu.array-module": "cupy"}):
        yield cupy


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("case", ALL, ids=[c[0] for c in ALL])
def test_cuda_engine_matches_kruskal(cupy_xp, gclient, case):
    name, n, src, dst, w = case
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    for kw in ({}, {"partitions": 5, "local_finish": 0, "split_every": 2}):
        res = mst_dist.minimum_spanning_forest(g, gclient, backend="gpu", **kw)
        check(res, n, src, dst, w)
        assert res.stats.backend == "gpu"


@pytest.mark.gpu
@needs_cuda
def test_cuda_device_resident_input(cupy_xp, gclient):
    rng = np.random.default_rng(9)
    n, m = 20000, 200000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.random(m).astype(np.float32)
    g = mst_dist.Graph.from_arrays(cupy_xp.asarray(src), cupy_xp.asarray(dst), cupy_xp.asarray(w))
    res = mst_dist.minimum_spanning_forest(g, gclient, backend="gpu")
    check(res, n, src, dst, w)
    assert res.stats.rounds[0].h2d_bytes == 0  # nothing was uploaded: the chunks were there
    with pytest.raises(mst_dist.InvalidGraphError, match="edge 3 .*negative vertex id"):
        bad = src.copy()
        bad[3] = -1
        mst_dist.Graph.from_arrays(cupy_xp.asarray(bad), cupy_xp.asarray(dst), cupy_xp.asarray(w))


@pytest.mark.gpu
@needs_cuda
def test_cuda_mixed_cluster(cupy_xp, mixed, client):
    g = mst_dist.generate("rmat", scale=14, edge_factor=8, seed=4)
    ref = mst_dist.minimum_spanning_forest(g, client, backend="cpu")
    res = mst_dist.minimum_spanning_forest(g, mixed, local_finish=0)
    np.testing.assert_array_equal(res.edge_ids, ref.edge_ids)
    assert res.stats.backend == "mixed"

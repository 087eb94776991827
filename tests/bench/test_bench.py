"""The benchmark harness (benchmarks/) on tiny graphs: every method agrees."""
import json
import os

import pytest

from support import ROOT
from support.needs import module

module("scipy", "pip install -r benchmarks/requirements.txt", module_level=True)
module("rustworkx", "pip install -r benchmarks/requirements.txt", module_level=True)

import benchmarks as bench  # noqa: E402
from benchmarks import gpu as bench_gpu  # noqa: E402


# two of bench-small's families at m ~ 5e3 (R-MAT with self-loops, parallel edges and isolated vertices)
TINY = {
    "repeat": 1,
    "warmup": 0,
    "graphs": [
        {"name": "er", "generate": {"kind": "erdos_renyi", "n": 1_000, "m": 5_000, "seed": 1}},
        {"name": "rmat", "generate": {"kind": "rmat", "scale": 9, "edge_factor": 10, "seed": 5}},
    ],
}


@pytest.mark.timeout(300)
def test_run_bench_tiny_all_methods_agree(tmp_path):
    report = bench.run_bench(TINY, tmp_path, log=lambda msg: None)
    data = json.loads((tmp_path / "bench.json").read_text())
    md = (tmp_path / "bench.md").read_text()
    assert [g["name"] for g in data["graphs"]] == [g["name"] for g in TINY["graphs"]]
    for g in data["graphs"]:
        meths = g["methods"]
        assert set(meths) == set(bench.METHODS)
        weights = {k: v["total_weight"] for k, v in meths.items()}
        assert not [k for k, v in meths.items() if "error" in v]
        assert len(set(weights.values())) == 1, (g["name"], weights)
        assert len({v["forest_edges"] for v in meths.values()}) == 1, g["name"]
        # the engine, the distributed engine and the kernel loop pick the same edge ids
        assert len({meths[k]["edge_ids_crc32"]
                    for k in ("engine", "engine-no-client", "engine-distributed", "kernels-loop")}) == 1
        assert g["agree"] and not g["problems"]
        assert g["total_weight"] == weights["scipy"]
        for k, v in meths.items():
            assert v["min"]["total"] > 0 and len(v["runs"]) == 1
        # every distributed round of engine-distributed reports its Dask overhead
        st = meths["engine-distributed"]["stats"]
        assert st["distributed_rounds"] >= 1
        assert len(st["dask_overhead_per_round"]) == st["distributed_rounds"]
        assert st["dask_overhead_mean"] is not None
        assert meths["engine"]["stats"]["n_rounds"] >= 1
        assert meths["scipy"]["min"]["build"] > 0 and meths["rustworkx"]["min"]["call"] > 0
    assert data["summary"]["all_agree"] is True
    assert data["cluster"]["start_seconds"] > 0
    assert data["machine"]["cpu_count"] >= 1 and data["versions"]["scipy"]
    assert "geometric mean" in md and "Targets" in md
    # the four CPU targets, and three of them again for the call without a client
    assert len(data["summary"]["min"]["targets"]) == 7
    assert "engine without a client s" in md
    assert report["markdown"] == md


def test_rmat_parallel_edges_not_summed(tmp_path):
    """scipy's build keeps parallel edges apart (csr_matrix((w, (i, j))) would sum them)."""
    cfg = {"repeat": 1, "warmup": 0, "methods": ["kernels-loop", "scipy"],
           "graphs": [{"name": "multi", "generate": {"kind": "rmat", "scale": 8, "edge_factor": 16,
                                                     "seed": 3}}]}
    report = bench.run_bench(cfg, tmp_path, log=lambda msg: None)
    g = report["graphs"][0]
    assert g["agree"], g["problems"]
    assert set(g["methods"]) == {"kernels-loop", "scipy"}


def test_only_and_repeat_and_bad_config(tmp_path):
    cfg = {"methods": ["engine", "kernels-loop"], "warmup": 0,
           "graphs": [{"name": "a", "generate": {"kind": "grid", "rows": 20, "cols": 20, "seed": 1}},
                      {"name": "b", "generate": {"kind": "circulant", "n": 500, "d": 2, "seed": 1}}]}
    report = bench.run_bench(cfg, tmp_path, only="b", repeat=2, log=lambda msg: None)
    assert [g["name"] for g in report["graphs"]] == ["b"]
    assert len(report["graphs"][0]["methods"]["engine"]["runs"]) == 2
    with pytest.raises(ValueError, match="no graph named"):
        bench.run_bench(cfg, tmp_path, only="zzz", log=lambda msg: None)
    with pytest.raises(ValueError, match="unknown method"):
        bench.validate_config({**cfg, "methods": ["engine", "networkx"]})
    with pytest.raises(ValueError, match="graphs"):
        bench.validate_config({"graphs": []})
    with pytest.raises(ValueError, match="unknown key"):
        bench.validate_config({**cfg, "repeats": 2})


def test_dedupe_config_validates():
    cfg = bench.load_config(os.path.join(ROOT, "benchmarks", "configs", "bench-dedupe.yaml"))
    assert cfg["methods"] == ["kernels-loop", "kernels-loop-dedupe"]


@pytest.mark.parametrize("name", ["bench-cpu.yaml", "bench-small.yaml"])
def test_shipped_configs_validate(name):
    cfg = bench.load_config(os.path.join(ROOT, "benchmarks", "configs", name))
    assert cfg["methods"] == ["engine", "engine-no-client", "engine-distributed", "kernels-loop", "scipy",
                              "rustworkx", "cold"]
    assert len(cfg["graphs"]) == 5
    kinds = {g["generate"]["kind"] for g in cfg["graphs"]}
    assert kinds == {"erdos_renyi", "circulant", "grid", "caveman", "rmat"}


def test_cli_parser(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("repeat: 1\nwarmup: 0\nmethods: [kernels-loop, scipy]\n"
                   "graphs:\n  - name: g\n    generate: {kind: grid, rows: 30, cols: 30, seed: 1}\n")
    rc = bench.cli([str(cfg), "--out", str(tmp_path / "o")])
    assert rc == 0
    assert (tmp_path / "o" / "bench.md").exists()
    assert "| g |" in capsys.readouterr().out
    assert bench.cli([str(cfg), "--only", "nope", "--out", str(tmp_path / "o2")]) == 2


# ---------------------------------------------------------------------------
# the GPU methods (engine-gpu, cugraph): on a CPU machine, unavailable
# ---------------------------------------------------------------------------

GPU_TINY = {
    "repeat": 1,
    "warmup": 0,
    "methods": ["engine-gpu", "engine", "cugraph"],
    "targets": {"gpu_graph": "circ"},
    "graphs": [
        {"name": "circ", "generate": {"kind": "circulant", "n": 3000, "d": 3, "seed": 2}},
        {"name": "rmat", "generate": {"kind": "rmat", "scale": 9, "edge_factor": 8, "seed": 5}},
    ],
}

needs_no_gpu = pytest.mark.skipif(bench_gpu.cupy_device()[0] is not None,
                                  reason="a CUDA device is visible: the GPU methods would run")


def test_validate_config_gpu_methods_and_targets():
    cfg = bench.validate_config(GPU_TINY)
    assert cfg["methods"] == ["engine", "engine-gpu", "cugraph"]  # in ALL_METHODS order
    assert set(bench.GPU_METHODS) <= set(bench.ALL_METHODS)
    assert cfg["targets"]["gpu_graph"] == "circ"
    assert cfg["targets"]["cugraph_each"] == 3.0
    assert cfg["targets"]["circulant_total_s"] == 0.336 and cfg["targets"]["circulant_kernel_s"] == 0.1
    assert bench.validate_config({**GPU_TINY, "targets": {"cugraph_each": 4}})["targets"]["gpu_graph"] is None
    # a config validated twice (run_bench re-validates with --methods) is unchanged
    assert bench.validate_config(cfg) == cfg
    with pytest.raises(ValueError, match="gpu_graph: no graph named"):
        bench.validate_config({**GPU_TINY, "targets": {"gpu_graph": "nope"}})
    with pytest.raises(ValueError, match="'targets' takes"):
        bench.validate_config({**GPU_TINY, "targets": {"cugraph_all": 3}})
    with pytest.raises(ValueError, match="must be numbers"):
        bench.validate_config({**GPU_TINY, "targets": {"cugraph_each": "fast"}})
    with pytest.raises(ValueError, match="not a GPU method"):
        bench.gpu_method_status("engine")


def test_gpu_method_status_reasons(monkeypatch):
    import dask.config

    if bench_gpu.cupy_device()[0] is None:
        xp, reason = bench.gpu_method_status("cugraph")
        assert xp is None and "cupy" in reason.lower()
    # as if CuPy saw a device: engine-gpu still refuses the NumPy stand-in (no GPU numbers from it)
    monkeypatch.setattr(bench_gpu, "cupy_device", lambda: (object(), None))
    with dask.config.set({"mst.gpu.array-module": "numpy"}):
        xp, reason = bench.gpu_method_status("engine-gpu")
    assert xp is None and "array-module is 'numpy'" in reason


def test_gpu_config_validates():
    cfg = bench.load_config(os.path.join(ROOT, "benchmarks", "configs", "bench-gpu.yaml"))
    assert cfg["methods"] == ["engine", "engine-gpu", "cugraph"]
    assert cfg["repeat"] == 5
    gens = {g["name"]: g["generate"] for g in cfg["graphs"]}
    assert cfg["targets"]["gpu_graph"] == "circulant100m"
    assert gens["circulant100m"] == {"kind": "circulant", "n": 100_000_000, "d": 3, "seed": 2}
    assert gens["rmat24"]["scale"] == 24 and gens["rmat24"]["edge_factor"] == 16
    er = next(g for g in gens.values() if g["kind"] == "erdos_renyi")
    assert er["m"] >= 100_000_000
    grid = next(g for g in gens.values() if g["kind"] == "grid")
    assert grid["rows"] * grid["cols"] >= 10**8
    assert {k: cfg["targets"][k] for k in bench.GPU_TARGETS} == bench.GPU_TARGETS


@needs_no_gpu
@pytest.mark.timeout(120)
def test_gpu_methods_unavailable_on_cpu(tmp_path):
    logs = []
    report = bench.run_bench(GPU_TINY, tmp_path, log=logs.append)
    data = json.loads((tmp_path / "bench.json").read_text())
    md = (tmp_path / "bench.md").read_text()
    for meth in bench.GPU_METHODS:
        reason = data["unavailable"][meth]
        assert reason and "cupy" in reason.lower()  # this machine has no CuPy
        assert any(line.startswith(f"{meth}: unavailable: ") for line in logs)
        assert f"`{meth}`: {reason}" in md
        for g in data["graphs"]:
            assert g["methods"][meth] == {"unavailable": reason}  # no numbers made up
    for g in data["graphs"]:
        assert g["agree"] and not g["problems"]  # unavailable is not a mismatch
        assert "min" in g["methods"]["engine"]
    for stat in ("min", "median"):
        tg = data["summary"][stat]["gpu_targets"]
        assert [t["target"] for t in tg] == list(bench.GPU_TARGETS)
        assert all(t["pass"] is None and t["note"] for t in tg)
        assert "engine-gpu unavailable" in tg[1]["note"]
    assert md.count("**NOT MEASURED**") == 3 and "PASS" not in md
    assert "## GPU: engine-gpu" in md and "| circ | 9k | unavailable |" in md
    assert "scipy build+call" not in md  # a GPU config shows the GPU table only
    assert data["gpu_cluster"] is None and data["machine"]["gpu"] == {}
    assert report["markdown"] == md


@needs_no_gpu
def test_cli_gpu_config_on_cpu(tmp_path, capsys):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("repeat: 1\nwarmup: 0\nmethods: [kernels-loop, engine-gpu, cugraph]\n"
                   "graphs:\n  - name: g\n    generate: {kind: grid, rows: 30, cols: 30, seed: 1}\n")
    assert bench.cli([str(cfg), "--out", str(tmp_path / "o")]) == 0
    out, err = capsys.readouterr()
    assert "engine-gpu: unavailable: " in err and "cugraph: unavailable: " in err
    assert "NOT MEASURED" in out and "no targets.gpu_graph in the config" in out
    assert "| g |" in out  # the CPU table too: kernels-loop ran


def _reference_simple(src, dst, w):
    best = {}
    for u, v, x in zip(src.tolist(), dst.tolist(), w.tolist()):
        if u != v:
            key = (min(u, v), max(u, v))
            best[key] = min(best.get(key, x), x)
    return best


def test_simple_undirected_keeps_lightest_of_parallel_edges():
    import numpy as np

    rng = np.random.default_rng(7)
    n = 30
    src = rng.integers(0, n, 2000)
    dst = rng.integers(0, n, 2000)
    w = rng.integers(1, 20, 2000)
    lo, hi, ww, dropped = bench.simple_undirected(src, dst, w, n)
    assert lo.dtype == np.int32 and hi.dtype == np.int32 and ww.dtype == np.float64
    assert (lo < hi).all()
    key = lo.astype(np.int64) * n + hi
    assert (np.diff(key) > 0).all()  # sorted, one edge per pair
    assert dict(zip(zip(lo.tolist(), hi.tolist()), ww.tolist())) == _reference_simple(src, dst, w)
    assert dropped["self_loops"] == int((src == dst).sum())
    assert dropped["self_loops"] + dropped["parallel"] + lo.shape[0] == src.shape[0]
    with pytest.raises(ValueError, match="int32"):
        bench.simple_undirected(src, dst, w, 2**31)


class _FakePylibcugraph:
    """A stand-in for pylibcugraph's SGGraph / minimum_spanning_tree calls (scipy's MST)

    Checks what the harness passes (symmetric int32 COO, float64 weights, no
    renumbering) and answers like pylibcugraph: the forest in both directions.
    """

    __version__ = "stand-in"

    class ResourceHandle:
        pass

    class GraphProperties:
        def __init__(self, is_symmetric, is_multigraph):
            assert is_symmetric and not is_multigraph
            self.is_symmetric = is_symmetric

    class SGGraph:
        def __init__(self, handle, props, src, dst, weight_array=None, store_transposed=False,
                     renumber=True, do_expensive_check=True):
            import numpy as np

            assert src.dtype == np.int32 and dst.dtype == np.int32 and weight_array.dtype == np.float64
            assert not renumber and not store_transposed
            pairs = set(zip(src.tolist(), dst.tolist()))
            assert all((v, u) in pairs for u, v in pairs)  # stored both ways
            self.edges = (src, dst, weight_array)

    @staticmethod
    def minimum_spanning_tree(handle, graph, do_expensive_check):
        import numpy as np
        import scipy.sparse as sp
        from scipy.sparse.csgraph import minimum_spanning_tree

        s, d, w = graph.edges
        one = s < d
        n = int(max(s.max(), d.max())) + 1
        T = minimum_spanning_tree(sp.csr_matrix((w[one], (s[one], d[one])), shape=(n, n))).tocoo()
        return (np.concatenate([T.row, T.col]).astype(np.int32),
                np.concatenate([T.col, T.row]).astype(np.int32),
                np.concatenate([T.data, T.data]), np.array([0, 2 * T.nnz]))


@pytest.mark.timeout(120)
def test_cugraph_method_with_stand_in(tmp_path, monkeypatch):
    """The cugraph method's harness (input, build, call, both-ways answer) on NumPy and a stand-in."""
    import sys
    import numpy as np

    monkeypatch.setitem(sys.modules, "pylibcugraph", _FakePylibcugraph)
    monkeypatch.setattr(bench_gpu, "gpu_method_status",
                        lambda m: (np, None) if m == "cugraph" else (None, "stand-in test: no GPU"))
    cfg = {**GPU_TINY, "methods": ["kernels-loop", "engine-gpu", "cugraph"]}
    report = bench.run_bench(cfg, tmp_path, log=lambda msg: None)
    for g in report["graphs"]:
        M = g["methods"]
        assert g["agree"], g["problems"]
        assert M["cugraph"]["total_weight"] == M["kernels-loop"]["total_weight"]
        assert M["cugraph"]["forest_edges"] == M["kernels-loop"]["forest_edges"]
        assert M["cugraph"]["returned_rows"] == 2 * M["cugraph"]["forest_edges"]
        assert M["cugraph"]["min"]["total"] >= M["cugraph"]["min"]["call"] > 0
        assert M["engine-gpu"] == {"unavailable": "stand-in test: no GPU"}
    prep = {g["name"]: g["methods"]["cugraph"]["prep"] for g in report["graphs"]}
    assert prep["circ"]["self_loops"] == prep["circ"]["parallel"] == 0
    assert prep["rmat"]["self_loops"] > 0 and prep["rmat"]["parallel"] > 0
    tg = report["summary"]["min"]["gpu_targets"][0]
    assert tg["pass"] is None and tg["note"] == "engine-gpu unavailable here"


@pytest.mark.timeout(120)
def test_engine_gpu_method_on_numpy_stand_in(tmp_path, monkeypatch):
    """engine-gpu's harness on the GPU code path with NumPy arrays (mst.gpu.array-module: numpy)."""
    import dask.config
    import numpy as np

    monkeypatch.setattr(bench_gpu, "gpu_method_status",
                        lambda m: (np, None) if m == "engine-gpu" else (None, "stand-in test"))
    cfg = {**GPU_TINY, "methods": ["engine", "engine-gpu"]}
    with dask.config.set({"mst.gpu.array-module": "numpy"}):
        report = bench.run_bench(cfg, tmp_path, log=lambda msg: None)
    assert report["gpu_cluster"]["start_seconds"] > 0 and report["gpu_cluster"]["stop_seconds"] is not None
    for g in report["graphs"]:
        M = g["methods"]
        assert g["agree"], g["problems"]
        assert M["engine-gpu"]["edge_ids_crc32"] == M["engine"]["edge_ids_crc32"]
        assert M["engine-gpu"]["min"]["kernel"] >= 0
        assert "h2d_bytes" in M["engine-gpu"] and "d2h_bytes" in M["engine-gpu"]
    tg = {t["target"]: t for t in report["summary"]["min"]["gpu_targets"]}
    assert tg["circulant_total_s"]["pass"] is not None  # measured (on the stand-in)
    assert tg["cugraph_each"]["pass"] is None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cold_method_runs_fresh_processes(tmp_path):
    """``cold``: the engine, scipy, the CLI and the floor each in a fresh process per run, interleaved."""
    cfg = {**TINY, "methods": ["engine", "scipy", "cold"], "graphs": TINY["graphs"][:1]}
    lines = []
    report = bench.run_bench(cfg, tmp_path, log=lines.append)
    for g in report["graphs"]:
        cold, warm = g["methods"]["cold"], g["methods"]["engine"]
        assert "error" not in cold, cold
        assert g["agree"], g["problems"]
        assert cold["edge_ids_crc32"] == warm["edge_ids_crc32"]
        assert cold["total_weight"] == warm["total_weight"] == cold["scipy"]["total_weight"]
        assert len(cold["runs"]) == len(cold["scipy"]["runs"]) == 1
        for run in cold["runs"]:
            assert run["total"] == pytest.approx(run["import"] + run["graph"] + run["solve"])
            assert run["process"] > run["total"] > 0
        for run in cold["scipy"]["runs"]:
            assert run["total"] == pytest.approx(run["import"] + run["build"] + run["call"])
        # the command line generated the same graph on its workers and found the same forest
        cli = cold["cli"]
        assert (cli["total_weight"], cli["forest_edges"], cli["components"]) == \
            (warm["total_weight"], warm["forest_edges"], warm["components"])
        assert len(cli["runs"]) == 1
        for run in cli["runs"]:
            assert run["total"] == pytest.approx(run["setup"] + run["solve"] + run["finish"], abs=1e-3)
            assert run["process"] > run["wall"] > run["total"] > 0
        # the floor: Numba's start, one cached kernel and an in-process Dask cluster, without mst-dist
        floor = cold["floor"]
        assert len(floor["runs"]) == 1
        for run in floor["runs"]:
            assert run["total"] == pytest.approx(run["numba"] + run["kernel"] + run["dask"])
            assert min(run["numba"], run["kernel"], run["dask"]) > 0
            assert run["process"] > run["total"]
        assert cold["printed"] is False  # the library's fresh processes wrote nothing to stderr
    # interleaved (run i of each before run i + 1 of any); then the method's summary line
    order = [ln.split()[1] for ln in lines if ln.strip().startswith("cold ")]
    assert order == ["engine", "scipy", "cli", "floor", "min"]
    md = (tmp_path / "bench.md").read_text()
    assert "## Cold start (a fresh Python process per run)" in md
    assert "### The command line on the same graph, generated on its workers" in md
    assert md.count("| er |") >= 3  # the CPU table, the cold table and the CLI's
    assert "floor s (numba / kernel / dask)" in md

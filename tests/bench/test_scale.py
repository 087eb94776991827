"""The scale benchmark end to end on tiny graphs (benchmarks/scale): table, memory, targets, failures."""
import json
import signal

import psutil
import pytest
import yaml

import benchmarks as bench
from benchmarks.scale.runner import classify

GEN = {"kind": "rmat", "scale": 12, "edge_factor": 8, "seed": 3}

# each run is a process of its own (a cluster started, kernels primed): a few runs, each source once
TINY = {
    "benchmark": "scale",
    "timeout": 120,
    "sample_interval": 0.02,
    "graphs": [
        {"name": "r", "generate": GEN},
        {"name": "r-npy", "written": {"generate": GEN, "format": "npy"}, "methods": ["engine-stream"]},
        {"name": "r-arrays", "arrays": {"generate": GEN}, "methods": ["engine"]},
    ],
    "targets": [
        {"graph": "r", "versus": "engine", "max_time_ratio": 1000, "max_peak_ratio": 1000},
        {"graph": "r-npy", "max_peak_gib": 100, "completes": True, "same_edges_as": "r"},
        {"graph": "r-arrays", "method": "engine", "max_engine_bytes_per_edge": 1e9},
        {"graph": "r", "max_seconds": 1e-6},
    ],
}


@pytest.mark.processes
@pytest.mark.timeout(300)
def test_scale_bench_tiny(tmp_path):
    path = tmp_path / "scale.yaml"
    path.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "out"
    assert bench.cli([str(path), "--out", str(out)]) == 0
    data = json.loads((out / "bench.json").read_text())
    md = (out / "bench.md").read_text()
    assert data["benchmark"] == "scale" and data["all_agree"] and not data["problems"]
    runs = {(g["name"], m): r for g in data["graphs"] for m, r in g["methods"].items()}
    assert set(runs) == {("r", "engine"), ("r", "engine-stream"), ("r-npy", "engine-stream"),
                         ("r-arrays", "engine")}
    crcs = set()
    for (name, meth), r in runs.items():
        assert r["status"] == "ok", (name, meth, r.get("note"), r.get("tail"))
        assert r["m"] == 2**15 and r["agree"] is True
        assert 0 < r["baseline_bytes"] < r["peak_bytes"]
        assert 0 < r["peak_anon_bytes"] < r["peak_bytes"]
        assert r["lifetime_peak_bytes"] > r["baseline_bytes"]  # sampled by the runner, from outside
        assert r["best"]["samples"] >= 1 and len(r["runs"]) == 1 and r["seconds"] > 0
        assert r["best"]["streamed"] == (meth == "engine-stream")
        crcs.add(r["edge_ids_crc32"])
    assert len(crcs) == 1
    # the streamed runs keep some edges in each pass; the in-memory ones have no passes
    kept = [p["edges_kept"] for p in runs[("r", "engine-stream")]["best"]["passes"] if p["name"] != "sample"]
    assert kept and sum(kept) > 0 and not runs[("r", "engine")]["best"]["passes"]
    assert runs[("r", "engine")]["best"]["peak_processes"] == 1  # an in-process cluster
    arrays = runs[("r-arrays", "engine")]
    assert arrays["baseline_bytes"] < arrays["arrays_bytes"] <= arrays["peak_bytes"]
    assert arrays["arrays_nbytes"] == 2**15 * 24
    rows = {(r["graph"], r["method"]): r for r in data["summary"]["rows"]}
    assert rows[("r-arrays", "engine")]["engine_bytes_per_edge"] is not None
    assert rows[("r", "engine")]["engine_bytes_per_edge"] is None
    assert rows[("r", "engine-stream")]["edges_kept"] == sum(kept)
    verdicts = [t["pass"] for t in data["summary"]["targets"]]
    assert verdicts == [True] * 6 + [False]
    assert md.count("**PASS**") == 6 and md.count("**FAIL**") == 1
    assert "| r-npy | 33k | engine-stream | embedded default |" in md
    assert "peak RSS GiB (tree, absolute)" in md and "bytes/edge (absolute peak / m)" in md
    assert (out / "runs" / "r-engine.log").exists()


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_a_run_past_its_timeout_is_reported_and_killed(tmp_path):
    # 67M edges streamed by two worker processes: far more than 3 s of work on any machine we run on
    cfg = {"benchmark": "scale", "timeout": 3, "methods": ["engine-stream"],
           "graphs": [{"name": "r", "generate": {**GEN, "scale": 22, "edge_factor": 16},
                       "cluster": {"processes": True, "n_workers": 2}}],
           "targets": [{"graph": "r", "completes": True}]}
    report = bench.run_scale(cfg, tmp_path, log=lambda msg: None)
    r = report["graphs"][0]["methods"]["engine-stream"]
    assert r["status"] == "timeout" and "past the 3 s timeout" in r["note"]
    assert r["pids"] and not any(psutil.pid_exists(p) for p in r["pids"])
    assert report["summary"]["targets"][0]["pass"] is False
    assert "**timeout**" in report["markdown"] and "## Runs that did not complete" in report["markdown"]


@pytest.mark.parametrize("args, status", [
    ((0, None, False, 0, 100), "ok"),
    ((0, None, True, 0, 100), "timeout"),
    ((1, {"type": "MemoryError", "message": "", "oom": True}, False, 0, 100), "oom"),
    ((1, {"type": "ValueError", "message": "x", "oom": False}, False, 0, 100), "error"),
    ((-signal.SIGKILL, None, False, 80, 100), "oom"),
    ((-signal.SIGKILL, None, False, 10, 100), "killed"),
    ((-signal.SIGSEGV, None, False, 80, 100), "killed"),
    ((3, None, False, 0, 100), "error"),
])
def test_classify(args, status):
    got, note = classify(*args, timeout=5)
    assert got == status
    assert (note is None) == (status == "ok")

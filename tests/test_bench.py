"""The benchmark harness (mst_dist.bench) on tiny graphs: every method agrees."""
import json
import os

import pytest

pytest.importorskip("scipy")
pytest.importorskip("rustworkx")

from mst_dist import bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# bench-small's families at m ~ 1e5 (R-MAT with self-loops, parallel edges and isolated vertices)
TINY = {
    "repeat": 1,
    "warmup": 0,
    "graphs": [
        {"name": "er", "generate": {"kind": "erdos_renyi", "n": 10_000, "m": 100_000, "seed": 1}},
        {"name": "circulant3", "generate": {"kind": "circulant", "n": 30_000, "d": 3, "seed": 2}},
        {"name": "grid", "generate": {"kind": "grid", "rows": 200, "cols": 250, "seed": 3}},
        {"name": "caveman", "generate": {"kind": "caveman", "g": 100, "k": 40, "seed": 4}},
        {"name": "rmat", "generate": {"kind": "rmat", "scale": 13, "edge_factor": 12, "seed": 5}},
    ],
}


@pytest.mark.timeout(120)
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
        assert len({meths[k]["edge_ids_crc32"] for k in ("engine", "engine-distributed", "kernels-loop")}) == 1
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
    assert len(data["summary"]["min"]["targets"]) == 4
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
    cfg = bench.load_config(os.path.join(ROOT, "configs", "bench-dedupe.yaml"))
    assert cfg["methods"] == ["kernels-loop", "kernels-loop-dedupe"]


@pytest.mark.parametrize("name", ["bench-cpu.yaml", "bench-small.yaml"])
def test_shipped_configs_validate(name):
    cfg = bench.load_config(os.path.join(ROOT, "configs", name))
    assert cfg["methods"] == ["engine", "engine-distributed", "kernels-loop", "scipy", "rustworkx"]
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

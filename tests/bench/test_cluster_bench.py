"""``mst-dist bench`` (mst_dist/bench.py): the engine on the user's cluster, its flags forwarded, no targets."""
import json
import subprocess
import sys

import pytest

from mst_dist import bench
from mst_dist.cli import main
from support.needs import module

GRAPHS = """\
description: two tiny graphs
repeat: 1
warmup: 0
graphs:
  - name: a
    generate: {kind: grid, rows: 20, cols: 20, seed: 1}
  - name: b
    generate: {kind: rmat, scale: 9, edge_factor: 8, seed: 2}
"""


@pytest.fixture
def graphs(tmp_path):
    path = tmp_path / "graphs.yaml"
    path.write_text(GRAPHS)
    return str(path)


def _report(out):
    return json.loads((out / "bench.json").read_text()), (out / "bench.md").read_text()


def test_flags_reach_the_run(graphs, tmp_path, capsys):
    """--repeat, --only and --methods of `mst-dist bench` decide what runs."""
    out = tmp_path / "o"
    rc = main(["bench", graphs, "--out", str(out), "--repeat", "2", "--only", "b", "--methods", "engine"])
    assert rc == 0
    data, md = _report(out)
    assert [g["name"] for g in data["graphs"]] == ["b"]
    assert data["config"]["repeat"] == 2 and data["config"]["methods"] == ["engine"]
    (g,) = data["graphs"]
    assert list(g["methods"]) == ["engine"] and len(g["methods"]["engine"]["runs"]) == 2
    best = g["methods"]["engine"]["best"]
    assert g["m"] == 2**9 * 8 and best["forest_edges"] > 0 and best["rounds"] >= 1
    assert set(best["phases"]) >= {"map", "merge", "contract", "filter-edges", "filter-nodes"}
    assert data["cluster"]["workers"] >= 1 and data["cluster"]["threads"] >= 1
    assert "| b | 512 | 4k |" in md and "scipy s" not in md
    for word in ("PASS", "FAIL", "target"):  # measures, never judges
        assert word not in md
    assert md in capsys.readouterr().out


def test_scipy_beside_the_engine_agrees(graphs, tmp_path):
    module("scipy", "pip install 'mst-dist[bench]'")
    out = tmp_path / "o"
    assert bench.cli([graphs, "--out", str(out), "--methods", "scipy,engine"]) == 0
    data, md = _report(out)
    assert data["config"]["methods"] == ["engine", "scipy"] and data["all_agree"] is True
    for g in data["graphs"]:
        e, s = g["methods"]["engine"]["best"], g["methods"]["scipy"]["best"]
        assert (e["total_weight"], e["forest_edges"]) == (s["total_weight"], s["forest_edges"])
    assert "two tiny graphs" in md and md.count("| yes |") == 2


@pytest.mark.parametrize("args, words", [
    (["--no-strict"], ["--no-strict", "python -m benchmarks"]),
    (["--methods", "engine,rustworkx"], ["unknown method(s) rustworkx", "benchmarks/"]),
    (["--only", "nope"], ["--only: no graph named nope", "a, b"]),
    (["--repeat", "0"], ["--repeat must be an integer >= 1"]),
])
def test_bad_flags_exit_2_and_say_why(graphs, tmp_path, capsys, args, words):
    assert main(["bench", graphs, "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err
    assert not (tmp_path / "o").exists()


def test_a_comparison_config_names_the_new_place(tmp_path, capsys):
    path = tmp_path / "cpu.yaml"
    path.write_text("repeat: 1\ntargets: informational\nmethods: [engine, rustworkx]\n"
                    "graphs:\n  - name: g\n    generate: {kind: grid, rows: 3, cols: 3}\n")
    assert main(["bench", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: unknown key(s) targets" in err and "python -m benchmarks CONFIG" in err


def test_graphs_file_defaults_and_errors():
    cfg = bench.validate_graphs_config({"graphs": [dict(g) for g in bench.DEFAULT_GRAPHS]})
    assert (cfg["repeat"], cfg["warmup"], cfg["methods"]) == (3, 1, ["engine", "scipy"])
    assert [g["name"] for g in cfg["graphs"]] == ["er", "grid2000", "rmat20"]
    with pytest.raises(ValueError, match=r"g.yaml: graphs\[1\]: duplicate graph name 'a'"):
        bench.validate_graphs_config({"graphs": [{"name": "a", "generate": {"kind": "grid"}}] * 2},
                                     source="g.yaml")
    with pytest.raises(ValueError, match="'warmup' must be an integer >= 0"):
        bench.validate_graphs_config({"warmup": -1, "graphs": [{"name": "a", "generate": {"kind": "grid"}}]})


def test_python_m_mst_dist_bench(graphs):
    """The module runs as a script too, with the same parser (a flag that moved: exit 2, before any run)."""
    proc = subprocess.run([sys.executable, "-m", "mst_dist.bench", graphs, "--no-strict"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "python -m benchmarks" in proc.stderr and not proc.stdout

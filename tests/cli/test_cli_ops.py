"""Operating runs from the command line: live progress on a terminal, the run report and the
plot, ``submit`` to a cluster that is already up."""
import json
import os
import re

import numpy as np
import pytest

import mst_dist
from mst_dist.diagnostics import dashboard
from support.chromium import chromium_path
from support.naive import kruskal
from support import ROOT, needs
from support.cli import on_a_terminal, run_cli
from support.oracle import assert_forest_file, assert_summary, expected

# --------------------------------------------------------------------------
# live progress
# --------------------------------------------------------------------------

@pytest.mark.slow
def test_live_progress_on_a_terminal(tmp_path):
    rc, screen = on_a_terminal("run", "--generate", "rmat", "--scale", "12", "--seed", "2", "--local-finish", "0",
                               "--workers", "2", "--threads", "1", cwd=tmp_path)
    assert rc == 0, screen[-3000:]
    # the live line: round, phase, components, edges left, elapsed
    live = re.findall(r"round (\d+)\s+(map|local|load|finish)\s+([\d,]+) components\s+([\d,]+) edges left\s+"
                      r"([\d.]+) s", screen)
    assert live, screen[-3000:]
    assert {int(r) for r, *_ in live} >= {0, 1, 2}
    assert "forest edges" in screen and "total weight" in screen  # then the summary
    assert "INFO     round" not in screen  # no per-phase log lines when the live display runs


@pytest.mark.slow
def test_no_live_progress_when_piped(tmp_path):
    p = run_cli("run", "--generate", "grid", "--rows", "30", "--cols", "30", "--local-finish", "0", "-v",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "edges left" in p.stdout  # the round table's column, but no live line into a pipe:
    assert not re.search(r"[\d,]+ components +[\d,]+ edges left", p.stdout + p.stderr)
    assert re.search(r"round 0 map\s+900 components", p.stderr)  # -v: the log lines instead
    assert "\x1b[" not in p.stdout


@pytest.mark.slow
def test_quiet_on_a_terminal(tmp_path):
    rc, screen = on_a_terminal("run", "--generate", "grid", "--rows", "20", "--cols", "20", "--quiet",
                               cwd=tmp_path)
    assert rc == 0
    assert not re.search(r"[\d,]+ components +[\d,]+ edges left", screen)  # no live line
    assert "INFO" not in screen
    assert "forest edges" in screen


# --------------------------------------------------------------------------
# the run report and the plot
# --------------------------------------------------------------------------

@pytest.mark.slow
def test_report_and_html_plot(tmp_path):
    p = run_cli("run", "--generate", "erdos_renyi", "--n", "2000", "--m", "9000", "--seed", "7", "--local-finish", "0",
                "--workers", "2", "--threads", "1", "--json", "--report", "run.json", "--plot", "rounds.html",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep == json.loads((tmp_path / "run.json").read_text())
    assert set(rep) >= {"config", "versions", "cluster", "summary", "timings", "stats"}
    assert rep["cluster"]["kind"] == "local" and rep["cluster"]["n_workers"] == 2
    assert [w["nthreads"] for w in rep["cluster"]["workers"]] == [1, 1]
    assert rep["timings"]["wall_seconds"] >= rep["timings"]["engine_seconds"] > 0
    assert set(rep["timings"]["phase_totals"]) == set(mst_dist.PHASES)
    assert len(rep["stats"]["rounds"]) == rep["summary"]["rounds"] > 1
    assert rep["versions"]["bokeh"]
    html = (tmp_path / "rounds.html").read_text()
    assert "Bokeh" in html and "mst-rounds" in html and "cdn.bokeh.org" not in html  # offline: JS inlined
    # the rounds in the file are the report's
    rounds = [r["round"] for r in rep["stats"]["rounds"]]
    assert json.dumps(rounds)[1:-1].replace(" ", "") in html.replace(" ", "")
    assert sorted(os.listdir(tmp_path)) == ["rounds.html", "run.json"]


@pytest.mark.slow
def test_png_plot(tmp_path):
    if chromium_path() is None:
        needs.unavailable("chromium is not installed: apt-get install chromium")
    from PIL import Image

    # two workers: chunks move between them, so the bytes-moved figure has bars
    p = run_cli("run", "--generate", "grid", "--rows", "40", "--cols", "40", "--local-finish", "0", "--quiet",
                "--workers", "2", "--threads", "1", "--plot", "rounds.png", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    img = np.asarray(Image.open(tmp_path / "rounds.png").convert("RGB")).astype(int)
    assert img.shape[0] >= 600 and img.shape[1] >= 1000
    purple = (np.abs(img - [0x6a, 0x3d, 0x9a]).max(axis=2) <= 8).sum()  # the bytes-moved bars
    red = (np.abs(img - [0xd6, 0x27, 0x28]).max(axis=2) <= 8).sum()     # the components line
    swatch = 16 * 16  # a legend entry's square, drawn even when no bar is
    assert red > 50
    assert purple > 4 * swatch, "no bytes-moved bars beyond the legend's swatch"


@pytest.mark.parametrize("args, match", [
    (("--plot", "rounds.svg"), "--plot: plot 'rounds.svg': unknown file type '.svg'; supported: .html, .png"),
    (("--report", "no/such/dir/r.json"), "--report 'no/such/dir/r.json': directory"),
])
def test_report_path_errors(tmp_path, args, match):
    p = run_cli("run", "--generate", "hypercube", "--d", "3", *args, cwd=tmp_path)
    assert p.returncode == 2
    assert match in p.stderr


# --------------------------------------------------------------------------
# submit: a cluster that is already up
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def running():
    """A scheduler with two workers listening on TCP, as if started by hand."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as c:
        yield cluster, c


def runs_of(cluster):
    p = cluster.scheduler.plugins.get(dashboard.NAME)
    return {} if p is None else dict(p.runs)


@pytest.mark.slow
def test_submit_generated(tmp_path, running):
    cluster, c = running
    (tmp_path / "run.yaml").write_text("graph:\n  generate: {kind: erdos_renyi, n: 3000, m: 12000, seed: 9}\n"
                                       "local_finish: 0\npartitions: 4\noutput: {path: forest.parquet}\n")
    before = set(runs_of(cluster))
    p = run_cli("submit", "--scheduler", cluster.scheduler_address, "run.yaml", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["cluster"]["kind"] == "address" and rep["cluster"]["scheduler"] == cluster.scheduler_address
    assert rep["cluster"]["n_workers"] == 2
    g = mst_dist.generate("erdos_renyi", n=3000, m=12000, seed=9)
    exp, _ = kruskal(g.n_vertices, *g.to_arrays())
    import pyarrow.parquet as pq

    np.testing.assert_array_equal(pq.read_table(tmp_path / "forest.parquet").column("edge_id").to_numpy(), exp)
    # submit added the MST page to the running scheduler; the chunks were generated by its workers
    (token,) = set(runs_of(cluster)) - before
    run = runs_of(cluster)[token]
    assert run["state"] == "finished" and run["tasks"].get("load") == 4
    assert set(run["chunks"].values()) <= set(c.scheduler_info()["workers"])
    # the cluster outlives the submission
    assert len(c.scheduler_info()["workers"]) == 2


@pytest.mark.slow
def test_submit_reads_input_on_the_workers(tmp_path, running):
    cluster, c = running
    rng = np.random.default_rng(3)
    src, dst, w = rng.integers(0, 500, 4000), rng.integers(0, 500, 4000), rng.integers(1, 100, 4000)
    np.savez(tmp_path / "g.npz", src=src, dst=dst, weight=w)
    (tmp_path / "run.yaml").write_text(f"graph: {{input: {tmp_path / 'g.npz'}}}\nlocal_finish: 0\n")
    before = set(runs_of(cluster))
    p = run_cli("submit", "--scheduler", cluster.scheduler_address, "run.yaml", "--json", "-o", "f.npz",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    exp = expected(n_vertices=500, src=src, dst=dst, weight=w)
    assert_summary(json.loads(p.stdout)["summary"], exp)
    assert_forest_file(tmp_path / "f.npz", exp)
    (token,) = set(runs_of(cluster)) - before
    assert runs_of(cluster)[token]["tasks"].get("load", 0) > 0  # mst-load tasks read the file


@pytest.mark.slow
def test_submit_input_not_visible_on_workers(tmp_path, running):
    cluster, _ = running
    (tmp_path / "run.yaml").write_text("graph: {input: /nowhere/graph.npz}\n")
    p = run_cli("submit", "--scheduler", cluster.scheduler_address, "run.yaml", cwd=tmp_path)
    assert p.returncode == 2
    assert "graph.input: '/nowhere/graph.npz' is not visible on 2 of 2 worker(s)" in p.stderr


def test_submit_needs_a_scheduler(tmp_path):
    p = run_cli("submit", os.path.join(ROOT, "configs", "quickstart.yaml"), cwd=tmp_path)
    assert p.returncode == 2
    assert "submit runs on a cluster that is already up" in p.stderr


@pytest.mark.slow
def test_submit_address_from_config(tmp_path, running):
    cluster, _ = running
    (tmp_path / "run.yaml").write_text("graph:\n  generate: {kind: grid, rows: 10, cols: 10}\n"
                                       f"cluster: {{kind: address, address: '{cluster.scheduler_address}'}}\n")
    p = run_cli("submit", "run.yaml", "--json", "--quiet", "-o", "f.npz", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    exp = expected(mst_dist.generate("grid", rows=10, cols=10))
    assert_summary(json.loads(p.stdout)["summary"], exp)
    assert_forest_file(tmp_path / "f.npz", exp)


# --------------------------------------------------------------------------
# checks before work, bounded connection
# --------------------------------------------------------------------------

#: A path no process can create a file in, root included.
UNWRITABLE = "/proc/mst-dist-test-output"


@pytest.mark.slow
@pytest.mark.parametrize("flags", [("-o", UNWRITABLE + ".parquet"), ("--report", UNWRITABLE + ".json")],
                         ids=["output", "report"])
def test_unwritable_outputs_refused_before_the_run(tmp_path, flags):
    """No run, no forest written: the unwritable path is named at once (exit 2, one line)."""
    ok = tmp_path / "forest.parquet"
    p = run_cli("run", "--generate", "grid", "--rows", "30", "--cols", "30", *flags,
                *(() if flags[0] == "-o" else ("-o", str(ok))), cwd=tmp_path, timeout=120)
    assert p.returncode == 2, p.stderr
    assert f"mst-dist: error: {flags[0].replace('-o', '--output')} '{flags[1]}': cannot write in '/proc'" in p.stderr
    assert "Traceback" not in p.stderr and "round 0" not in p.stderr  # refused before any work
    assert not ok.exists()


def test_api_refuses_unwritable_output_before_the_run():
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1.0, 2.0])
    with pytest.raises(PermissionError, match="output '/proc/mst-dist-test-output': cannot write in '/proc'"):
        mst_dist.minimum_spanning_forest(g, client=object(), output=UNWRITABLE)  # never reaches the client
    with pytest.raises(FileNotFoundError, match="labels_output .* directory .* does not exist"):
        mst_dist.minimum_spanning_forest(g, client=object(), labels_output="/no/such/dir/labels")


@pytest.mark.slow
def test_submit_to_nothing_is_a_quick_one_line_error(tmp_path):
    from support.cli import cli_env

    env = cli_env(DASK_MST__CLUSTER__CONNECT_TIMEOUT="2")
    p = run_cli("submit", "--scheduler", "tcp://127.0.0.1:1", "--generate", "grid", "--rows", "4", "--cols", "4",
                cwd=tmp_path, env=env, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert re.search(r"mst-dist: error: cannot connect to the scheduler at tcp://127.0.0.1:1 .* within 2 s",
                     p.stderr), p.stderr


@pytest.mark.slow
def test_quiet_memory_starved_run_is_one_line(tmp_path):
    """Worker processes killed by their memory limit: with -q, stderr holds only mst-dist's own error line."""
    from support.cli import cli_env

    # killed workers or a stall (every worker paused): either ends the run; 5 s of a stall tell it
    env = cli_env(DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="1", DASK_MST__STALL_TIMEOUT="5")
    p = run_cli("run", "-q", "--generate", "rmat", "--scale", "18", "--seed", "3", "--processes", "--workers", "2",
                "--threads", "1", "--memory-limit", "320MiB", "--stream", "never", cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mst-dist: error: "), p.stderr[-3000:]
    assert "memory" in lines[0] and "--partitions" in lines[0] and "--stream" in lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("text, flags, rc, said", [
    ("# nothing here\n", (), 2, "no edges: g.txt holds no edge rows"),
    ("# nothing here\n", ("--allow-empty",), 0, "holds no edges: the forest is empty"),
    ("0 1 1\n1 1099511627776 2\n", (), 2, "g.txt, line 2: vertex id 1099511627776 (target id)"),
], ids=["empty", "empty-allowed", "huge-id"])
def test_bad_inputs_refused_before_the_run(tmp_path, text, flags, rc, said):
    (tmp_path / "g.txt").write_text(text)
    p = run_cli("run", "--input", "g.txt", *flags, cwd=tmp_path, timeout=120)
    assert p.returncode == rc, p.stderr
    assert said in " ".join(p.stderr.split()), p.stderr
    assert "Traceback" not in p.stderr

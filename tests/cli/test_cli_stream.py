"""Streaming runs and memory-limited local clusters from the command line: ``--stream``, the run
config's ``stream`` key and ``mst.stream``; ``--memory-limit`` and ``cluster.memory_limit``; the
passes in the summary and the JSON report."""
import json
import logging

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

import mst_dist
from mst_dist.cli import commands as cli
from mst_dist.cli.report import run_report
from mst_dist.cli.summary import print_summary
from mst_dist.config import ConfigError
from support.cli import cli_env, run_cli
from support.oracle import assert_forest_file, assert_minimum_forest, assert_summary, expected

GRID = ("--generate", "grid", "--rows", "20", "--cols", "30")
PASS_KEYS = {"name", "chunks", "edges_read", "bytes_read", "edges_kept", "seconds", "waves"}


def cfg_of(*argv):
    return cli.run_config_from_args(cli.build_parser().parse_args(["run", *argv]))


def main_error(argv, capsys):
    """``mst-dist ARGV`` in this process: its exit status must be 2; the one-line error it printed."""
    try:
        rc = cli.main(argv)
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


# --------------------------------------------------------------------------
# stream: flag, run-config key, dask config
# --------------------------------------------------------------------------

def test_stream_flag_and_key(tmp_path):
    assert cfg_of(*GRID)["stream"] == "auto"
    assert cfg_of(*GRID, "--stream", "always")["stream"] == "always"
    (tmp_path / "run.yaml").write_text("graph: {generate: {kind: grid, rows: 3, cols: 4}}\nstream: never\n")
    assert cfg_of(str(tmp_path / "run.yaml"))["stream"] == "never"
    assert cfg_of(str(tmp_path / "run.yaml"), "--stream", "always")["stream"] == "always"  # the flag wins
    # what the API gets
    assert cli._engine_spec(cfg_of(*GRID, "--stream", "never"), None).stream == "never"
    assert cli._engine_spec(cfg_of(str(tmp_path / "run.yaml")), None).stream == "never"


def test_stream_from_the_environment(environ):
    environ(DASK_MST__STREAM="always")
    assert cli._engine_spec(cfg_of(*GRID), None).stream == "always"
    assert cfg_of(*GRID, "--stream", "never")["stream"] == "never"  # a flag beats the environment


@pytest.mark.usefixtures("restore_logging")
def test_environment_streams_a_run(environ, capsys, tmp_path):
    """DASK_MST__STREAM=always: the CLI leaves the setting to the run, which streams."""
    environ(DASK_MST__STREAM="always")
    assert cli.main(["run", *GRID, "--seed", "2", "-q", "--json", "-o", str(tmp_path / "f.parquet")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["config"]["stream"] == "always"
    assert rep["stats"]["streamed"] is True
    assert rep["stats"]["passes"][0]["name"] == "sample" and len(rep["stats"]["passes"]) >= 2
    exp = expected(mst_dist.generate("grid", rows=20, cols=30, seed=2))
    assert_summary(rep["summary"], exp)
    assert_forest_file(tmp_path / "f.parquet", exp)


@pytest.mark.usefixtures("restore_logging")
def test_bad_stream_flag(capsys):
    err = main_error(["run", *GRID, "--stream", "sometimes"], capsys)
    assert "argument --stream: invalid choice: 'sometimes'" in err
    assert "always" in err and "never" in err


@pytest.mark.usefixtures("restore_logging")
def test_bad_stream_key(tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text("graph: {generate: {kind: grid, rows: 3, cols: 4}}\nstream: sometimes\n")
    assert main_error(["run", str(path)], capsys) == (
        f"mst-dist: error: {path}: stream: expected one of auto, always, never; got 'sometimes'")
    path.write_text("graph: {generate: {kind: grid, rows: 3, cols: 4}}\nstream: true\n")
    assert main_error(["run", str(path)], capsys) == (
        f"mst-dist: error: {path}: stream: expected str, got bool True")


@pytest.mark.usefixtures("restore_logging")
def test_bad_stream_setting_named(environ, capsys):
    environ(DASK_MST__STREAM="sometimes")
    assert main_error(["run", *GRID], capsys) == (
        "mst-dist: error: mst.stream (dask config): expected one of auto, always, never; got 'sometimes'")


# --------------------------------------------------------------------------
# memory limit of the local cluster's workers
# --------------------------------------------------------------------------

@pytest.mark.parametrize("flag, expect", [
    ("4GiB", "4GiB"), ("600 MiB", "600 MiB"), ("1000000000", 1000000000), ("2e9", 2000000000),
    ("0.25", 0.25), ("auto", "auto"), ("none", None), ("0", None),
])
def test_memory_limit_flag(flag, expect):
    cluster = cfg_of(*GRID, "--memory-limit", flag, "--processes", "--workers", "2")["cluster"]
    assert cluster["memory_limit"] == expect
    assert cluster["processes"] is True and cluster["n_workers"] == 2


def test_memory_limit_key_and_default(tmp_path):
    assert cfg_of(*GRID)["cluster"]["memory_limit"] == "auto"
    (tmp_path / "run.yaml").write_text("graph: {generate: {kind: grid, rows: 3, cols: 4}}\n"
                                       "cluster: {kind: local, processes: true, n_workers: 2, "
                                       "memory_limit: 600MiB}\n")
    assert cfg_of(str(tmp_path / "run.yaml"))["cluster"]["memory_limit"] == "600MiB"
    assert cfg_of(str(tmp_path / "run.yaml"), "--memory-limit", "1GiB")["cluster"]["memory_limit"] == "1GiB"


def test_memory_limit_from_the_environment(environ):
    environ(DASK_MST__CLUSTER__MEMORY_LIMIT="2GiB")
    assert cfg_of(*GRID)["cluster"]["memory_limit"] == "2GiB"
    assert cfg_of(*GRID, "--memory-limit", "3GiB")["cluster"]["memory_limit"] == "3GiB"
    environ(DASK_MST__CLUSTER__MEMORY_LIMIT="1000000000")  # a Python literal: an int
    assert cfg_of(*GRID)["cluster"]["memory_limit"] == 1000000000


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("value, fragment", [
    ("lots", "argument --memory-limit: expected 'auto', bytes (an integer or a size such as '4GiB'), "
             "a fraction of the machine's memory in (0, 1] or none; got 'lots'"),
    ("10MiB", "argument --memory-limit: '10MiB' (10.00 MiB) is too small for a worker: at least 256.00 MiB"),
    ("-1GiB", "argument --memory-limit: expected 'auto'"),
])
def test_bad_memory_limit_flag(value, fragment, capsys):
    err = main_error(["run", *GRID, f"--memory-limit={value}"], capsys)
    assert fragment in err


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("value, message", [
    ("lots", "cluster.memory_limit: expected 'auto', bytes (an integer or a size such as '4GiB'), a fraction "
             "of the machine's memory in (0, 1] or none; got 'lots'"),
    ("1000", "cluster.memory_limit: 1000 bytes (0.98 kiB) is too small for a worker: at least 256.00 MiB"),
    ("-3", "cluster.memory_limit: expected 'auto'"),
    ("[1]", "cluster.memory_limit: expected str or int or float or null, got list"),
])
def test_bad_memory_limit_key(value, message, tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text(f"graph: {{generate: {{kind: grid, rows: 3, cols: 4}}}}\ncluster: {{memory_limit: {value}}}\n")
    assert main_error(["run", str(path)], capsys).startswith(f"mst-dist: error: {path}: {message}")


@pytest.mark.usefixtures("restore_logging")
def test_bad_memory_limit_setting_named(environ, capsys):
    environ(DASK_MST__CLUSTER__MEMORY_LIMIT="lots")
    assert main_error(["run", *GRID], capsys).startswith(
        "mst-dist: error: mst.cluster.memory-limit (dask config): expected 'auto'")


def test_memory_limit_only_where_it_applies():
    with pytest.raises(ConfigError, match=r"cluster.memory_limit: only for kinds 'local', 'local-cuda', 'mpi' "
                                          r"\(this is kind 'address'\)"):
        cfg_of(*GRID, "--memory-limit", "4GiB", "--scheduler", "tcp://h:1")


@pytest.mark.usefixtures("restore_logging")
def test_memory_limit_reaches_the_workers(capsys):
    """A threaded local cluster (this process) with --memory-limit: its worker has that limit."""
    assert cli.main(["run", *GRID, "--memory-limit", "3GiB", "--threads", "1", "-q", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [w["memory_limit"] for w in rep["cluster"]["workers"]] == [3 * 2**30]
    assert rep["config"]["cluster"]["memory_limit"] == "3GiB"


# --------------------------------------------------------------------------
# passes in the summary, the progress log and the report
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs(client):
    """The same graph solved streamed and resident: ``{mode: MSFResult}``."""
    g = mst_dist.generate("rmat", scale=10, seed=5)
    return {mode: mst_dist.minimum_spanning_forest(g, client, stream=mode) for mode in ("always", "never")}


def summary_text(result):
    from rich.console import Console

    console = Console(record=True, width=200)
    print_summary(result, 1.0, console=console)
    return console.export_text()


def test_summary_shows_the_passes(runs):
    res = runs["always"]
    text = summary_text(res)
    assert "streamed" in text and "yes: " in text
    lines = [line.strip() for line in text.splitlines()]
    start, end = lines.index("passes"), lines.index("rounds")
    header, *rows = [line for line in lines[start + 1:end] if not set(line) <= set("━╇─┼")]
    assert [c.strip() for c in header.split("┃")] == ["pass", "chunks", "edges read", "GiB read", "edges kept",
                                                       "seconds"]
    cells = [[c.strip() for c in row.split("│")] for row in rows]
    assert [c[0] for c in cells] == [p.name for p in res.stats.passes] + ["total"]
    for c, p in zip(cells, res.stats.passes):
        assert c[1:] == [f"{p.chunks:,}", f"{p.edges_read:,}", f"{p.bytes_read / 2**30:.3f}", f"{p.edges_kept:,}",
                         f"{p.seconds:.3f}"]
    assert cells[-1][2] == f"{sum(p.edges_read for p in res.stats.passes):,}"


def test_summary_of_a_resident_run_has_no_passes(runs):
    text = summary_text(runs["never"])
    assert "no: every chunk resident" in text
    assert "passes" not in text and "GiB read" not in text


def test_report_carries_the_passes(runs):
    cfg = cfg_of("--generate", "rmat", "--scale", "10", "--seed", "5", "--stream", "always")
    rep = json.loads(json.dumps(run_report(cfg, runs["always"], 1.0)))
    assert rep["config"]["stream"] == "always"
    assert rep["stats"]["streamed"] is True
    passes = rep["stats"]["passes"]
    assert [p["name"] for p in passes] == [p.name for p in runs["always"].stats.passes]
    assert all(set(p) == PASS_KEYS for p in passes)
    assert passes[1]["edges_read"] == runs["always"].n_edges
    never = json.loads(json.dumps(run_report(cfg, runs["never"], 1.0)))
    assert never["stats"]["streamed"] is False and never["stats"]["passes"] == []


def test_progress_log_names_the_pass(caplog):
    with caplog.at_level(logging.INFO, logger="mst_dist.cli"):
        cli._progress({"round": 0, "phase": "pass", "pass": "pass 2", "chunks_done": 3, "chunks_total": 16,
                       "bytes_read": 3 * 2**20, "edges": 10, "elapsed": 1.5})
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.split() == ["pass", "2", "3", "of", "16", "chunks", "3.00", "MiB", "read", "(1.50s)"]


# --------------------------------------------------------------------------
# end to end (subprocesses, worker processes)
# --------------------------------------------------------------------------

@pytest.mark.slow
def test_cli_stream_always_same_forest_as_never(tmp_path):
    reps = {}
    exp = expected(mst_dist.generate("rmat", scale=14, seed=4))
    for mode in ("always", "never"):
        p = run_cli("run", "--generate", "rmat", "--scale", "14", "--seed", "4", "--stream", mode, "--json", "-q",
                    "-o", f"{mode}.npz", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        reps[mode] = json.loads(p.stdout)
        assert_summary(reps[mode]["summary"], exp)
        assert_forest_file(tmp_path / f"{mode}.npz", exp)
    assert reps["always"]["summary"]["forest_edges"] > 0
    st = reps["always"]["stats"]
    assert st["streamed"] is True and reps["always"]["config"]["stream"] == "always"
    names = [p["name"] for p in st["passes"]]
    assert names[0] == "sample" and names[1:] == [f"pass {k}" for k in range(1, len(names))] and len(names) >= 2
    for p in st["passes"]:
        assert set(p) == PASS_KEYS
        if p["name"] != "sample":  # every pass reads every edge
            assert p["edges_read"] == 16 * 2**14 and p["bytes_read"] > 0
    assert reps["never"]["stats"]["streamed"] is False and reps["never"]["stats"]["passes"] == []


@pytest.mark.slow
def test_cli_environment_streams(tmp_path):
    p = run_cli("run", *GRID, "--json", "-q", cwd=tmp_path, env=cli_env(DASK_MST__STREAM="always"))
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["config"]["stream"] == "always" and rep["stats"]["streamed"] is True


#: Worker memory limit of the memory-limited run, and its graph: 16.8M edges, ~1.2 GB as resident
#: chunks (~70 bytes per edge), as much as the two workers' limits together before their own memory.
LIMIT = 600 * 2**20
LIMITED_GRAPH = {"kind": "rmat", "scale": 20, "edge_factor": 16, "seed": 3}


@pytest.mark.slow
@pytest.mark.usefixtures("restore_logging")
def test_memory_limited_worker_processes_stream(tmp_path, monkeypatch, capsys):
    """Two 600 MiB worker processes, streaming: the run completes with the forest of an unlimited
    resident run, and no worker was restarted (the scheduler saw two workers join and none leave)."""
    from mst_dist.engine.plan import should_stream

    params = {k: v for k, v in LIMITED_GRAPH.items() if k != "kind"}
    graph = mst_dist.generate("rmat", **params)
    assert should_stream("auto", graph, 2 * LIMIT)  # the engine's own rule: too big to keep resident there
    # partitions left to the engine: a streaming plan cuts chunks a 600 MiB worker can hold in flight
    run = {"graph": {"generate": LIMITED_GRAPH}, "stream": "always",
           "output": {"path": "forest.parquet"},
           "cluster": {"kind": "local", "processes": True, "n_workers": 2, "threads_per_worker": 1,
                       "memory_limit": "600MiB", "dashboard_address": None}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(run))
    seen = {}
    real = cli.make_client

    def watched(cluster, gpu=False):
        c, close = real(cluster, gpu=gpu)
        c.wait_for_workers(2, timeout=60)
        seen["start"] = c.scheduler_info()["workers"]

        def closing():
            seen["end"] = c.scheduler_info()["workers"]
            seen["events"] = [e for _, e in c.get_events("all")]
            close()

        return c, closing

    monkeypatch.setattr(cli, "make_client", watched)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "run.yaml", "-q", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["stats"]["streamed"] is True and rep["stats"]["workers"] == 2
    assert [w["memory_limit"] for w in seen["start"].values()] == [LIMIT, LIMIT]
    # no worker restarted: the same two workers at the end, none removed, none added after the first two
    assert set(seen["end"]) == set(seen["start"])
    actions = [e.get("action") for e in seen["events"]]
    assert "remove-worker" not in actions and actions.count("add-worker") == 2
    # a minimum spanning forest by SciPy's account (16.8M edges: too many for the pure-Python Kruskal)
    t = pq.read_table(tmp_path / "forest.parquet")
    ids = t.column("edge_id").to_numpy()
    s, d, w = graph.to_arrays()
    np.testing.assert_array_equal(t.column("src").to_numpy(), s[ids])
    np.testing.assert_array_equal(t.column("dst").to_numpy(), d[ids])
    np.testing.assert_array_equal(t.column("weight").to_numpy(), w[ids])
    assert rep["summary"]["forest_edges"] == len(ids)
    assert_minimum_forest(graph.n_vertices, s, d, w, ids, total=rep["summary"]["total_weight"],
                          n_components=rep["summary"]["components"])

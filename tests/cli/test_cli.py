"""The command line (``mst-dist run``) and the forest writers it uses."""
import json
import os
import re
import stat
import sys

import numpy as np
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

import mst_dist
from mst_dist.cli import commands as cli
from mst_dist.io import writers as io
from mst_dist.config import ConfigError
from mst_dist.graph import InvalidGraphError
from support import ROOT
from support.cli import run_cli
from support.oracle import assert_forest_file, assert_summary, expected

QUICKSTART = os.path.join(ROOT, "configs", "quickstart.yaml")


def scipy_forest(graph):
    """(total weight, components) of the MSF by scipy, parallel edges reduced to their minimum."""
    src, dst, w = graph.to_arrays()
    n = graph.n_vertices
    keep = src != dst
    u = np.minimum(src, dst)[keep]
    v = np.maximum(src, dst)[keep]
    w = w[keep]
    order = np.lexsort((w, v, u))
    u, v, w = u[order], v[order], w[order]
    first = np.ones(u.shape[0], bool)
    first[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
    assert (w > 0).all()  # scipy drops explicit zeros
    csr = csr_matrix((w[first], (u[first], v[first])), shape=(n, n))
    total = minimum_spanning_tree(csr).sum()
    ncomp, _ = connected_components(csr, directed=False)
    return total, ncomp


class FakeResult:
    def __init__(self, m=5, weight_dtype=np.int64):
        rng = np.random.default_rng(0)
        self.edge_ids = np.arange(0, 2 * m, 2, dtype=np.int64)
        self.src = rng.integers(0, 100, m)
        self.dst = rng.integers(0, 100, m)
        self.weight = (rng.random(m) * 10).astype(weight_dtype)


# --------------------------------------------------------------------------
# forest writers
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
@pytest.mark.parametrize("ext", ["parquet", "csv", "npz"])
def test_writer_round_trip(tmp_path, ext, dtype):
    r = FakeResult(weight_dtype=dtype)
    path = tmp_path / f"forest.{ext}"
    out = io.write_forest(r, path)
    assert out == str(path)
    if ext == "parquet":
        t = pq.read_table(path)
        cols = {c: t.column(c).to_numpy() for c in t.column_names}
        assert t.schema.field("weight").type.to_pandas_dtype() == np.dtype(dtype)
    elif ext == "csv":
        t = pcsv.read_csv(path)
        cols = {c: t.column(c).to_numpy() for c in t.column_names}
    else:
        with np.load(path, allow_pickle=False) as z:
            cols = {k: z[k] for k in z.files}
        assert cols["weight"].dtype == np.dtype(dtype)
    assert list(cols) == ["edge_id", "src", "dst", "weight"]
    np.testing.assert_array_equal(cols["edge_id"], r.edge_ids)
    np.testing.assert_array_equal(cols["src"], r.src)
    np.testing.assert_array_equal(cols["dst"], r.dst)
    np.testing.assert_allclose(cols["weight"], r.weight)
    assert sorted(os.listdir(tmp_path)) == [f"forest.{ext}"]


def test_writer_empty_forest(tmp_path):
    r = FakeResult(m=0)
    io.write_forest(r, tmp_path / "f.parquet")
    assert pq.read_table(tmp_path / "f.parquet").num_rows == 0


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npz"])
def test_writer_explicit_format(tmp_path, fmt):
    io.write_forest(FakeResult(), tmp_path / "forest.out", format=fmt)
    assert os.listdir(tmp_path) == ["forest.out"]  # np.savez adds no ".npz"


def test_writer_format_errors(tmp_path):
    with pytest.raises(ValueError, match="from its extension '.txt'"):
        io.write_forest(FakeResult(), tmp_path / "f.txt")
    with pytest.raises(ValueError, match="unknown forest format 'orc'"):
        io.write_forest(FakeResult(), tmp_path / "f.parquet", format="orc")
    assert os.listdir(tmp_path) == []


def test_writer_permissions_follow_umask(tmp_path):
    old = os.umask(0o022)
    try:
        io.write_forest(FakeResult(), tmp_path / "f.npz")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "f.npz").st_mode) == 0o644


@pytest.mark.parametrize("ext, module, func", [
    ("parquet", "pyarrow.parquet", "write_table"),
    ("csv", "pyarrow.csv", "write_csv"),
    ("npz", "numpy", "savez"),
])
@pytest.mark.parametrize("existing", [False, True])
def test_writer_atomic_on_failure(tmp_path, monkeypatch, ext, module, func, existing):
    """A write that fails half way leaves no file, no temporary file, and an old file intact."""
    import importlib

    target = tmp_path / f"forest.{ext}"
    if existing:
        target.write_bytes(b"old contents")
    real = getattr(importlib.import_module(module), func)

    def half_then_fail(first, *args, **kwargs):
        if func == "savez":  # np.savez(file, **arrays)
            first.write(b"PK\x03\x04 partial")
        else:  # write_table(table, where) / write_csv(table, where)
            with open(args[0], "wb") as f:
                f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(importlib.import_module(module), func, half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        io.write_forest(FakeResult(), target)
    monkeypatch.setattr(importlib.import_module(module), func, real)
    if existing:
        assert os.listdir(tmp_path) == [target.name]
        assert target.read_bytes() == b"old contents"
    else:
        assert os.listdir(tmp_path) == []


def test_writer_atomic_on_interrupt(tmp_path, monkeypatch):
    def interrupted(cols, tmp):
        with open(tmp, "wb") as f:
            f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setitem(io._WRITERS, "parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io.write_forest(FakeResult(), tmp_path / "f.parquet")
    assert os.listdir(tmp_path) == []


def test_writer_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        io.write_forest(FakeResult(), tmp_path / "no" / "f.parquet")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------
# argument handling (in-process, no cluster)
# --------------------------------------------------------------------------

def cfg_of(*argv):
    return cli.run_config_from_args(cli.build_parser().parse_args(["run", *argv]))


def test_generate_flags():
    cfg = cfg_of("--generate", "rmat", "--scale", "12", "--edge-factor", "8", "--seed", "5",
                 "--partitions", "3", "--local-finish", "0")
    assert cfg["graph"]["generate"] == {"kind": "rmat", "scale": 12, "edge_factor": 8, "seed": 5,
                                        "weights": "int", "wmin": 1, "wmax": 1000}
    assert cfg["partitions"] == 3 and cfg["local_finish"] == 0


def test_flags_override_config(tmp_path):
    cfg = cfg_of(QUICKSTART, "--scale", "10", "--output", str(tmp_path / "f.csv"),
                 "--workers", "2", "--threads", "1", "--processes")
    assert cfg["graph"]["generate"]["scale"] == 10
    assert cfg["graph"]["generate"]["seed"] == 1  # from the config
    assert cfg["output"] == {"path": str(tmp_path / "f.csv"), "format": "csv"}
    assert cfg["cluster"]["n_workers"] == 2 and cfg["cluster"]["processes"] is True


def test_generate_replaces_config_graph():
    cfg = cfg_of(QUICKSTART, "--generate", "grid", "--rows", "3", "--cols", "4")
    assert cfg["graph"]["generate"]["kind"] == "grid"
    assert "scale" not in cfg["graph"]["generate"]


def test_scheduler_flag():
    cfg = cfg_of("--generate", "hypercube", "--d", "3", "--scheduler", "tcp://10.0.0.1:8786")
    assert cfg["cluster"]["kind"] == "address"
    assert cfg["cluster"]["address"] == "tcp://10.0.0.1:8786"
    with pytest.raises(ConfigError, match="cluster.n_workers: only for kinds 'local', 'local-cuda'"):
        cfg_of("--generate", "hypercube", "--d", "3", "--scheduler", "tcp://h:1", "--workers", "2")


@pytest.mark.parametrize("argv, match", [
    ((), "no graph"),
    (("--generate", "rmat"), "graph.generate.scale: missing"),
    (("--generate", "grid", "--rows", "2", "--cols", "2", "--scale", "3"), "graph.generate.scale: unknown"),
    (("--generate", "nope"), "graph.generate.kind: expected one of"),
    (("--generate", "rmat", "--scale", "3", "--format", "csv"), "--format: only with an output"),
    (("--generate", "rmat", "--scale", "3", "--partitions", "0"), "partitions: must be >= 1"),
])
def test_bad_arguments(argv, match):
    with pytest.raises(ConfigError, match=match):
        cfg_of(*argv)


def test_generator_params_need_generated_graph(tmp_path):
    np.savez(tmp_path / "g.npz", src=[0], dst=[1])
    p = tmp_path / "run.yaml"
    p.write_text(f"graph: {{input: {tmp_path / 'g.npz'}}}\n")
    with pytest.raises(ConfigError, match="--scale: only with a generated graph"):
        cfg_of(str(p), "--scale", "3")


@pytest.mark.usefixtures("restore_logging")
def test_dedupe_directions_flag(tmp_path, capsys):
    """--dedupe-directions keeps one arc of each pair of a .gr file; by default both are edges."""
    gr = tmp_path / "roads.gr"
    gr.write_text("p sp 3 4\na 1 2 5\na 2 1 5\na 2 3 7\na 3 2 7\n")
    assert cfg_of("--input", str(gr), "--dedupe-directions")["graph"]["options"] == {"dedupe_directions": True}
    assert "options" not in cfg_of("--input", str(gr))["graph"]
    for flag, edges in (("--dedupe-directions", 2), ("--no-dedupe-directions", 4), (None, 4)):
        assert cli.main(["run", "--input", str(gr), "--json", "--quiet", *([flag] if flag else [])]) == 0
        summary = json.loads(capsys.readouterr().out)["summary"]
        assert (summary["edges"], summary["forest_edges"], summary["total_weight"]) == (edges, 2, 12), flag
    with pytest.raises(ConfigError, match="--dedupe-directions: only with an input file"):
        cfg_of("--generate", "grid", "--rows", "2", "--cols", "2", "--dedupe-directions")


def test_build_graph_generate():
    g = cli.build_graph(cfg_of("--generate", "grid", "--rows", "3", "--cols", "4", "--seed", "2"))
    ref = mst_dist.generate("grid", rows=3, cols=4, seed=2)
    for a, b in zip(g.to_arrays(), ref.to_arrays()):
        np.testing.assert_array_equal(a, b)


def test_build_graph_generator_range_error():
    with pytest.raises(ConfigError, match="graph.generate: circulant: n must be > 2"):
        cli.build_graph(cfg_of("--generate", "circulant", "--n", "3", "--d", "2"))


def npz_config(tmp_path, n_vertices=None, **arrays):
    np.savez(tmp_path / "g.npz", **arrays)
    cfg = {"graph": {"input": str(tmp_path / "g.npz")}}
    if n_vertices is not None:
        cfg["n_vertices"] = n_vertices
    from mst_dist.cli.runconfig import validate_run_config

    return validate_run_config(cfg)


def test_build_graph_npz(tmp_path):
    g = cli.build_graph(npz_config(tmp_path, n_vertices=7, src=np.array([0, 1]), dst=np.array([1, 2]),
                                   weight=np.array([2.5, 1.0])))
    assert g.n_vertices == 7 and g.n_edges == 2
    g = cli.build_graph(npz_config(tmp_path, src=np.array([0, 1]), dst=np.array([1, 2])))
    assert g.to_arrays()[2].tolist() == [1, 1]


@pytest.mark.parametrize("arrays, match", [
    ({"src": np.array([0, 1]), "dst": np.array([1, -2])}, r"g.npz, row 1: negative vertex id"),
    ({"src": np.array([0, 1]), "dst": np.array([1, 2]), "weight": np.array([1.0, np.nan])},
     r"g.npz, row 1: weight is NaN"),
    ({"src": np.array([0, 1])}, "no array 'dst'"),
    ({"src": np.array([0]), "dst": np.array([1]), "w": np.array([1])}, r"unexpected array\(s\) 'w'"),
    ({"src": np.array([0], dtype=object), "dst": np.array([1])}, "refusing to unpickle"),
])
def test_build_graph_npz_errors(tmp_path, arrays, match):
    with pytest.raises(InvalidGraphError, match=match):
        cli.build_graph(npz_config(tmp_path, **arrays))


def test_build_graph_npz_not_a_zip(tmp_path):
    (tmp_path / "g.npz").write_bytes(b"not a zip")
    from mst_dist.cli.runconfig import validate_run_config

    cfg = validate_run_config({"graph": {"input": str(tmp_path / "g.npz")}})
    with pytest.raises(InvalidGraphError, match="not a readable .npz"):
        cli.build_graph(cfg)


def test_default_cluster_is_embedded():
    client, close = cli.make_client(cfg_of("--generate", "hypercube", "--d", "2")["cluster"])
    try:
        # the engine's embedded default: one in-process worker with the MST dashboard page
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 1
        assert client.cluster.scheduler.plugins["mst-dist"].page
    finally:
        close()
    assert client.status == "closed"


def test_gpu_backend_passed_through(tmp_path):
    """--backend gpu and `backend: gpu` reach the engine as they are: it decides what the cluster can run."""
    spec = cli._engine_spec(cfg_of("--generate", "hypercube", "--d", "2", "--backend", "gpu"), None)
    assert spec.backend == "gpu"
    (tmp_path / "run.yaml").write_text("graph: {generate: {kind: hypercube, d: 2}}\nbackend: gpu\n")
    assert cli._engine_spec(cfg_of(str(tmp_path / "run.yaml")), None).backend == "gpu"
    assert cli._engine_spec(cfg_of(str(tmp_path / "run.yaml"), "--backend", "cpu"), None).backend == "cpu"
    assert cli._engine_spec(cfg_of("--generate", "hypercube", "--d", "2"), None).backend == "auto"


def _one_line_error(err):
    assert err.startswith("mst-dist: error: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.usefixtures("restore_logging")
def test_gpu_backend_without_gpus_names_the_extra(monkeypatch, capsys):
    """On a machine without GPUs (CuPy and dask-cuda made unimportable here) --backend gpu exits
    with status 2 and a one-line error that says how to install the GPU extra."""
    from mst_dist.kernels import gpu

    for name in ("cupy", "dask_cuda"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    gpu.gpu_ready.cache_clear()  # what this process found before (a GPU, on a machine with one)
    try:
        assert cli.main(["run", "--generate", "hypercube", "--d", "3", "--backend", "gpu", "-q"]) == 2
    finally:
        gpu.gpu_ready.cache_clear()
    err = _one_line_error(capsys.readouterr().err)
    assert re.search(r"pip install '?mst-dist\[gpu\]'?", err), err


@pytest.mark.usefixtures("restore_logging")
def test_engine_gpu_refusal_is_a_one_line_error(monkeypatch, capsys):
    """The engine's GPUUnavailableError (no GPU workers, no CuPy) is the CLI's one-line error, status 2."""
    message = ("backend='gpu' needs GPU workers, and none of the cluster's 1 worker(s) advertises "
               "resources={'GPU': 1}. A GPU worker needs CuPy: pip install 'mst-dist[gpu]'")

    def refuse(graph, client, spec):
        assert spec.backend == "gpu"
        raise mst_dist.GPUUnavailableError(message)

    monkeypatch.setattr(mst_dist.api, "solve", refuse)
    monkeypatch.setattr(cli, "_local_gpu", lambda cfg: False)  # the engine, not the CLI, refuses here
    assert cli.main(["run", "--generate", "hypercube", "--d", "2", "--backend", "gpu", "-q"]) == 2
    assert _one_line_error(capsys.readouterr().err) == f"mst-dist: error: {message}\n"


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("backend", ["gpu", "auto"])
def test_local_cluster_gets_the_gpu(capsys, tmp_path, backend):
    """Kind local with a usable GPU (here the numpy stand-in of the GPU kernels): its in-process
    worker is a GPU worker, as the engine's embedded default is; backend gpu runs there."""
    import dask.config

    with dask.config.set({"mst.gpu.array-module": "numpy"}):
        assert cli.main(["run", "--generate", "grid", "--rows", "30", "--cols", "30", "--local-finish", "0",
                         "--backend", backend, "-q", "--json", "-o", str(tmp_path / "f.npz")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["config"]["backend"] == backend
    assert [w["resources"] for w in rep["cluster"]["workers"]] == [{"GPU": 1}]
    exp = expected(mst_dist.generate("grid", rows=30, cols=30))
    assert_summary(rep["summary"], exp)
    assert_forest_file(tmp_path / "f.npz", exp)


def test_local_gpu_only_for_local_kind_and_gpu_backends():
    import dask.config

    with dask.config.set({"mst.gpu.array-module": "numpy"}):
        assert cli._local_gpu(cfg_of("--generate", "hypercube", "--d", "2")) is True
        assert cli._local_gpu(cfg_of("--generate", "hypercube", "--d", "2", "--backend", "cpu")) is False
        assert cli._local_gpu(cfg_of("--generate", "hypercube", "--d", "2", "--scheduler", "tcp://h:1",
                                     "--backend", "gpu")) is False  # the cluster's workers decide


@pytest.mark.usefixtures("restore_logging")
def test_other_engine_errors_are_not_rewritten(monkeypatch):
    def fail(graph, client, spec):
        raise RuntimeError("something else broke")

    monkeypatch.setattr(mst_dist.api, "solve", fail)
    with pytest.raises(RuntimeError, match="something else broke"):
        cli.main(["run", "--generate", "hypercube", "--d", "2", "-q"])


@pytest.mark.usefixtures("restore_logging")
def test_placement_applies_to_the_run(tmp_path, monkeypatch, capsys):
    """A run config's placement section is the dask config mst.placement.* during its run only."""
    import dask.config

    real = mst_dist.api.solve
    seen = {}

    def spy(graph, client, spec):
        seen["throughput"] = dask.config.get("mst.placement.throughput")
        seen["calibration"] = dask.config.get("mst.placement.calibration-edges")
        seen["backend"] = spec.backend
        return real(graph, client, spec)

    monkeypatch.setattr(mst_dist.api, "solve", spy)
    (tmp_path / "run.yaml").write_text(
        "graph: {generate: {kind: grid, rows: 4, cols: 5}}\n"
        "placement:\n  throughput: {gpu: 40, cpu: 1}\n  calibration_edges: 4096\n")
    assert cli.main(["run", str(tmp_path / "run.yaml"), "-q", "--json", "-o", str(tmp_path / "f.npz")]) == 0
    assert seen == {"throughput": {"gpu": 40, "cpu": 1}, "calibration": 4096, "backend": "auto"}
    rep = json.loads(capsys.readouterr().out)
    assert rep["config"]["placement"] == {"throughput": {"gpu": 40, "cpu": 1}, "calibration_edges": 4096}
    exp = expected(mst_dist.generate("grid", rows=4, cols=5))
    assert_summary(rep["summary"], exp)
    assert_forest_file(tmp_path / "f.npz", exp)
    assert dask.config.get("mst.placement.throughput") is None  # restored after the run


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("argv", [
    ["run"],
    ["run", "--generate", "rmat"],
    ["run", "no-such-file.yaml"],
    ["run", "--generate", "circulant", "--n", "3", "--d", "2"],
])
def test_main_config_errors_exit_2(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mst-dist: error: ")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_main_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"mst-dist {mst_dist.__version__}"


# --------------------------------------------------------------------------
# end to end (subprocess: python -m mst_dist.cli)
# --------------------------------------------------------------------------

@pytest.mark.slow
def test_cli_json_matches_scipy(tmp_path):
    p = run_cli("run", "--generate", "rmat", "--scale", "10", "--seed", "3", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    total, ncomp = scipy_forest(mst_dist.generate("rmat", scale=10, seed=3))
    s = rep["summary"]
    assert s["total_weight"] == int(round(total))
    assert s["components"] == ncomp
    assert s["vertices"] == 1024 and s["edges"] == 16 * 1024
    assert s["forest_edges"] == s["vertices"] - s["components"]
    assert rep["config"]["graph"]["generate"]["scale"] == 10
    assert set(rep["versions"]) >= {"mst_dist", "numpy", "numba", "dask", "distributed"}
    st = rep["stats"]
    assert len(st["rounds"]) == s["rounds"] > 0
    assert set(st["phase_totals"]) == set(mst_dist.PHASES)
    assert st["rounds"][0]["components_before"] == 1024
    assert rep["output"] is None
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_cli_quickstart_writes_parquet(tmp_path):
    out = tmp_path / "forest.parquet"
    p = run_cli("run", QUICKSTART, "--output", str(out), "--json", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    t = pq.read_table(out)
    assert t.column_names == ["edge_id", "src", "dst", "weight"]
    assert t.num_rows == rep["summary"]["forest_edges"] > 0
    assert int(np.sum(t.column("weight").to_numpy())) == rep["summary"]["total_weight"]
    ids = t.column("edge_id").to_numpy()
    assert (np.diff(ids) > 0).all()
    assert rep["summary"]["vertices"] == 2**18 and rep["summary"]["edges"] == 16 * 2**18
    assert os.listdir(tmp_path) == ["forest.parquet"]
    assert "INFO" not in p.stderr  # --quiet


@pytest.mark.slow
def test_cli_table_npz_input_csv_output(tmp_path):
    rng = np.random.default_rng(1)
    n, m = 60, 240
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    w = rng.integers(1, 50, m)
    np.savez(tmp_path / "g.npz", src=src, dst=dst, weight=w)
    (tmp_path / "run.yaml").write_text(
        "graph:\n  input: g.npz\nn_vertices: 64\noutput:\n  path: forest.csv\n"
        "cluster:\n  n_workers: 1\n  threads_per_worker: 2\n  dashboard_address: null\n")
    p = run_cli("run", "run.yaml", "--wide", "-v", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    total, ncomp = scipy_forest(mst_dist.Graph.from_arrays(src, dst, w, n_vertices=64))
    out = p.stdout
    for word in ("vertices", "forest edges", "total weight", "components", "rounds", "wall",
                 "overhead", "moved", *mst_dist.PHASES):
        assert word in out
    assert f"{int(total):,}" in out
    t = pcsv.read_csv(tmp_path / "forest.csv")
    assert t.num_rows == 64 - ncomp
    assert int(np.sum(t.column("weight").to_numpy())) == int(total)
    assert "INFO" in p.stderr  # -v: progress logs go to stderr


def test_cli_bad_config_exit_2(tmp_path):
    (tmp_path / "bad.yaml").write_text("graph:\n  generate:\n    kind: rmat\n    scale: x\n")
    p = run_cli("run", "bad.yaml", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == "mst-dist: error: bad.yaml: graph.generate.scale: expected int, got str 'x'"
    assert p.stdout == ""

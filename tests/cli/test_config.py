"""Packaged defaults, their layering through dask.config, and run-config validation."""
import glob
import inspect
import os
import re

import dask.config
import numpy as np
import pytest
import yaml

from mst_dist import config
from mst_dist.cli import runconfig
from mst_dist.cli.runconfig import load_run_config, validate_run_config
from mst_dist.config import ConfigError
from support import ROOT



@pytest.fixture
def fresh_config(monkeypatch):
    """Refresh dask.config around a test that changes the environment."""
    yield monkeypatch
    monkeypatch.undo()
    config.refresh()


def gen(**params):
    return {"graph": {"generate": {"kind": "rmat", "scale": 4, **params}}}


def error_of(raw):
    with pytest.raises(ConfigError) as info:
        validate_run_config(raw)
    return str(info.value)


# --------------------------------------------------------------------------
# packaged defaults
# --------------------------------------------------------------------------

EXPECTED_DEFAULTS = {
    "partitions": None,
    "local-finish": "auto",
    "split-every": 8,
    "filter.light-factor": 1.5,
    "filter.min-degree": 3.0,
    "backend": "auto",
    "stream": "auto",
    "cluster.kind": "local",
    "cluster.n-workers": None,
    "cluster.threads-per-worker": None,
    "cluster.processes": None,
    "cluster.dashboard-address": "127.0.0.1:0",
    "cluster.address": None,
    "cluster.memory-limit": "auto",
    "cluster.warmup": True,
    "cluster.wait-timeout": 600,
    "cluster.jobs": 1,
    "gpu.array-module": "cupy",
    "placement.throughput": None,
    "placement.calibration-edges": 1048576,
}


@pytest.mark.parametrize("key, value", EXPECTED_DEFAULTS.items())
def test_packaged_defaults_present(key, value):
    assert config.get(key) == value
    assert dask.config.get("mst." + key) == value
    assert config.get("mst." + key) == value


def test_packaged_yaml_every_key_commented():
    path = os.path.join(ROOT, "mst_dist", "mst-dist.yaml")
    with open(path) as f:
        lines = f.read().splitlines()
    keys = 0
    for i, line in enumerate(lines):
        m = re.match(r"^\s*([A-Za-z][\w-]*):", line)
        if not m or m.group(1) == "mst":
            continue
        keys += 1
        before = [ln.strip() for ln in lines[:i] if ln.strip()]
        assert "#" in line or (before and before[-1].startswith("#")), f"key {m.group(1)!r} has no comment"
    assert keys >= len(EXPECTED_DEFAULTS)
    with open(path) as f:
        assert yaml.safe_load(f) == config.DEFAULTS


def test_packaged_yaml_is_package_data():
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        pp = tomllib.load(f)
    assert "*.yaml" in pp["tool"]["setuptools"]["package-data"]["mst_dist"]


def test_env_override(fresh_config):
    fresh_config.setenv("DASK_MST__SPLIT_EVERY", "4")
    fresh_config.setenv("DASK_MST__CLUSTER__N_WORKERS", "3")
    config.refresh()
    assert config.get("split-every") == 4
    assert config.get("cluster.n-workers") == 3
    # a keyword beats the environment
    assert config.get("split-every", 16) == 16
    # the packaged defaults survive a refresh
    assert config.get("filter.light-factor") == 1.5


def test_env_override_reaches_run_config(fresh_config):
    fresh_config.setenv("DASK_MST__CLUSTER__THREADS_PER_WORKER", "2")
    fresh_config.setenv("DASK_MST__PARTITIONS", "5")
    config.refresh()
    cfg = validate_run_config(gen())
    assert cfg["cluster"]["threads_per_worker"] == 2
    assert cfg["partitions"] == 5
    # the run config beats the environment
    assert validate_run_config({**gen(), "partitions": 7})["partitions"] == 7


def test_bad_env_value_named(fresh_config):
    fresh_config.setenv("DASK_MST__PARTITIONS", "lots")
    config.refresh()
    msg = error_of(gen())
    assert "mst.partitions (dask config)" in msg and "expected int or null" in msg


def test_dask_config_set_and_keyword():
    with dask.config.set({"mst.split-every": 2}):
        assert config.get("split-every") == 2
        assert config.get("split_every") == 2
        assert config.get("split-every", 3) == 3
    assert config.get("split-every") == 8


def test_get_unknown_key():
    with pytest.raises(KeyError):
        config.get("no-such-key")
    assert config.get("no-such-key", default=1) == 1


# --------------------------------------------------------------------------
# run configs: valid
# --------------------------------------------------------------------------

def test_minimal_run_config_defaults():
    cfg = validate_run_config(gen())
    assert cfg["graph"] == {"generate": {"kind": "rmat", "scale": 4, "seed": 0, "weights": "int",
                                         "wmin": 1, "wmax": 1000}}
    assert cfg["backend"] == "auto"
    assert cfg["partitions"] is None
    assert cfg["local_finish"] == "auto"
    assert cfg["stream"] == "auto"
    assert cfg["vertex_partition"] == "auto"
    assert cfg["output"] is None
    assert cfg["n_vertices"] is None
    assert cfg["placement"] == {"throughput": None, "calibration_edges": 1048576}
    assert cfg["cluster"] == {"kind": "local", "n_workers": None,
                              "threads_per_worker": None, "processes": None,
                              "dashboard_address": "127.0.0.1:0", "memory_limit": "auto", "warmup": True}


RUN_CONFIGS = [os.path.join(ROOT, "configs", "quickstart.yaml"),
               *sorted(glob.glob(os.path.join(ROOT, "configs", "example-*.yaml")))]


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=os.path.basename)
def test_shipped_run_configs_validate(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # output paths are relative to the current directory
    cfg = load_run_config(path)
    assert "generate" in cfg["graph"] or "input" in cfg["graph"]


def test_quickstart_config():
    cfg = load_run_config(os.path.join(ROOT, "configs", "quickstart.yaml"))
    assert cfg["graph"]["generate"] == {"kind": "rmat", "scale": 18, "edge_factor": 16, "seed": 1,
                                        "weights": "int", "wmin": 1, "wmax": 1000}
    assert cfg["output"] == {"path": "msf-quickstart.parquet", "format": "parquet"}
    assert cfg["cluster"]["kind"] == "local" and cfg["cluster"]["n_workers"] is None


def test_example_rmat_config():
    cfg = load_run_config(os.path.join(ROOT, "configs", "example-rmat.yaml"))
    assert cfg["graph"]["generate"]["scale"] == 21
    assert cfg["stream"] == "auto"
    assert cfg["cluster"] == {"kind": "local", "n_workers": 2,
                              "threads_per_worker": 1, "processes": True,
                              "dashboard_address": "127.0.0.1:0", "memory_limit": "auto", "warmup": True}


def test_example_gpu_configs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cuda = load_run_config(os.path.join(ROOT, "configs", "example-local-cuda.yaml"))
    assert cuda["backend"] == "auto"
    assert cuda["cluster"]["kind"] == "local-cuda" and cuda["cluster"]["warmup"] is True
    assert cuda["cluster"]["threads_per_worker"] == 1
    mixed = load_run_config(os.path.join(ROOT, "configs", "example-mixed.yaml"))
    assert mixed["backend"] == "auto"
    assert mixed["cluster"]["kind"] == "address" and mixed["cluster"]["address"].startswith("tcp://")
    assert mixed["placement"] == {"throughput": None, "calibration_edges": 1048576}
    with open(os.path.join(ROOT, "configs", "example-mixed.yaml")) as f:
        text = f.read()
    # the commands it documents: one scheduler, the CPU and the GPU worker specs for workers on hosts of
    # their own (the loopback specs would be refused by a scheduler of other hosts)
    for spec in ("workers/cpu-worker-hosts.yaml", "workers/gpu-worker-hosts.yaml"):
        assert f"--spec-file {spec}" in text and os.path.exists(os.path.join(ROOT, spec))


def test_full_run_config(tmp_path):
    np.savez(tmp_path / "g.npz", src=[0, 1], dst=[1, 2], weight=[1.0, 2.0])
    raw = {
        "graph": {"input": str(tmp_path / "g.npz")},
        "n_vertices": 10,
        "backend": "cpu",
        "partitions": 4,
        "local_finish": 1000,
        "output": {"path": str(tmp_path / "f.csv")},
        "cluster": {"kind": "address", "address": "tcp://127.0.0.1:8786"},
    }
    cfg = validate_run_config(raw)
    assert cfg["graph"] == {"input": str(tmp_path / "g.npz")}
    assert cfg["output"] == {"path": str(tmp_path / "f.csv"), "format": "csv"}
    assert cfg["cluster"]["kind"] == "address"
    assert cfg["local_finish"] == 1000 and cfg["partitions"] == 4 and cfg["n_vertices"] == 10


def test_hyphenated_keys_accepted():
    cfg = validate_run_config({"graph": {"generate": {"kind": "rmat", "scale": 3, "edge-factor": 4}},
                               "local-finish": 0, "cluster": {"n-workers": 2}})
    assert cfg["graph"]["generate"]["edge_factor"] == 4
    assert cfg["local_finish"] == 0 and cfg["cluster"]["n_workers"] == 2


def test_int_accepted_for_float():
    cfg = validate_run_config({"graph": {"generate": {"kind": "gnp", "n": 10, "p": 1}}})
    assert cfg["graph"]["generate"]["p"] == 1


def test_generator_table_matches_generators():
    from mst_dist.generators import GENERATORS

    assert set(runconfig.GENERATOR_PARAMS) == set(GENERATORS)
    for kind, params in runconfig.GENERATOR_PARAMS.items():
        sig = inspect.signature(GENERATORS[kind]).parameters
        positional = {p: v for p, v in sig.items() if v.kind == v.POSITIONAL_OR_KEYWORD}
        assert set(positional) == set(params), kind
        for p, (_, required) in params.items():
            assert required == (positional[p].default is inspect.Parameter.empty), (kind, p)


# --------------------------------------------------------------------------
# run configs: errors name the key path
# --------------------------------------------------------------------------

def test_wrong_type_message_exact():
    assert error_of(gen(scale="x")) == "graph.generate.scale: expected int, got str 'x'"


@pytest.mark.parametrize("raw, path, expect", [
    ({**gen(), "partitions": "4"}, "partitions", "expected int or null, got str '4'"),
    ({**gen(), "partitions": 2.5}, "partitions", "expected int or null, got float 2.5"),
    ({**gen(), "backend": 3}, "backend", "expected str, got int 3"),
    ({**gen(), "local_finish": 1.5}, "local_finish", "expected str or int, got float 1.5"),
    ({**gen(), "cluster": {"n_workers": True}}, "cluster.n_workers", "expected int or null, got bool True"),
    ({**gen(), "cluster": {"processes": "yes"}}, "cluster.processes", "expected bool or null, got str 'yes'"),
    ({**gen(), "cluster": [1]}, "cluster", "expected mapping, got list"),
    ({**gen(), "output": {"path": 3}}, "output.path", "expected str, got int 3"),
    ({"graph": {"generate": {"kind": "gnp", "n": 5, "p": "half"}}}, "graph.generate.p",
     "expected float, got str 'half'"),
    ({"graph": {"generate": {"kind": 7}}}, "graph.generate.kind", "expected str, got int 7"),
    (gen(seed=1.0), "graph.generate.seed", "expected int, got float 1.0"),
    ({"graph": "rmat"}, "graph", "expected mapping, got str 'rmat'"),
])
def test_wrong_type(raw, path, expect):
    assert error_of(raw) == f"{path}: {expect}"


@pytest.mark.parametrize("raw, path, allowed", [
    ({**gen(), "partition": 4}, "partition", "graph, n_vertices, backend, partitions"),
    (gen(sclae=3), "graph.generate.sclae", "kind, scale, edge_factor, a, b, c, seed, weights"),
    ({"graph": {"generate": {"kind": "grid", "rows": 2, "cols": 2, "scale": 3}}},
     "graph.generate.scale", "kind, rows, cols, seed"),
    ({**gen(), "cluster": {"workers": 2}}, "cluster.workers", "kind, address, n_workers"),
    ({**gen(), "output": {"path": "x.npz", "compression": "zstd"}}, "output.compression", "path, format"),
    ({"graph": {"file": "x.npz"}}, "graph.file", "generate, input"),
])
def test_unknown_key(raw, path, allowed):
    msg = error_of(raw)
    assert msg.startswith(f"{path}: unknown key; allowed: ")
    assert allowed in msg


@pytest.mark.parametrize("raw, path", [
    ({}, "graph"),
    ({"backend": "cpu"}, "graph"),
    ({"graph": {"generate": {"kind": "rmat"}}}, "graph.generate.scale"),
    ({"graph": {"generate": {"kind": "grid", "rows": 3}}}, "graph.generate.cols"),
    ({"graph": {"generate": {"scale": 3}}}, "graph.generate.kind"),
    ({**gen(), "output": {"format": "csv"}}, "output.path"),
    ({**gen(), "cluster": {"kind": "address"}}, "cluster.address"),
])
def test_missing_field(raw, path):
    msg = error_of(raw)
    assert msg.startswith(f"{path}: missing")


def test_missing_kind_lists_choices():
    assert "rmat" in error_of({"graph": {"generate": {"scale": 3}}})


@pytest.mark.parametrize("raw, path, fragment", [
    (gen(kind="rmatt"), "graph.generate.kind", "expected one of erdos_renyi, gnp"),
    ({**gen(), "backend": "tpu"}, "backend", "expected one of auto, cpu, gpu"),
    ({**gen(), "local_finish": "never"}, "local_finish", "expected one of auto"),
    ({**gen(), "local_finish": -1}, "local_finish", "must be >= 0"),
    ({**gen(), "partitions": 0}, "partitions", "must be >= 1"),
    ({**gen(), "cluster": {"kind": "lsf"}}, "cluster.kind",
     "expected one of local, local-cuda, address, slurm, pbs, mpi"),
    ({**gen(), "cluster": {"threads_per_worker": 0}}, "cluster.threads_per_worker", "must be >= 1"),
    ({**gen(), "cluster": {"kind": "address", "address": "tcp://h:1", "n_workers": 2}},
     "cluster.n_workers", "only for kinds 'local', 'local-cuda' (this is kind 'address')"),
    ({**gen(), "cluster": {"address": "tcp://h:1"}}, "cluster.address", "only for kind 'address'"),
    ({**gen(), "output": {"path": "x.txt"}}, "output.path", "output.format"),
    ({**gen(), "output": {"path": "x.parquet", "format": "orc"}}, "output.format",
     "expected one of parquet, csv, npz"),
    ({**gen(), "output": {"path": "/no/such/dir/x.parquet"}}, "output.path", "does not exist"),
    ({**gen(), "n_vertices": 10}, "n_vertices", "only with graph.input"),
    (gen(weights="normal"), "graph.generate.weights", "expected one of int, float"),
    (gen(wmin=10, wmax=1), "graph.generate.wmin", "must be <= wmax"),
    (gen(scale=-1), "graph.generate.scale", "must be >= 0"),
    ({"graph": {"generate": {"kind": "rmat", "scale": 3}, "input": "g.npz"}}, "graph", "exactly one of"),
    ({"graph": {}}, "graph", "exactly one of"),
    ({"graph": {"input": "g.xyz"}}, "graph.input", "cannot tell the format"),
    ({"graph": {"input": "g.txt", "format": "snap"}}, "graph.format", "expected one of edgelist"),
    ({"graph": {"generate": {"kind": "grid", "rows": 2, "cols": 2}, "format": "gr"}}, "graph.format",
     "only with graph.input"),
    ({"graph": {"input": "/no/such/graph.npz"}}, "graph.input", "no such file"),
])
def test_bad_value(raw, path, fragment):
    msg = error_of(raw)
    assert msg.startswith(f"{path}: ")
    assert fragment in msg


def test_error_is_value_error_with_key():
    with pytest.raises(ValueError) as info:
        validate_run_config(gen(scale="x"))
    assert info.value.key == "graph.generate.scale"


# --------------------------------------------------------------------------
# run config files
# --------------------------------------------------------------------------

def write(tmp_path, text, name="run.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_load_names_file_and_key(tmp_path):
    p = write(tmp_path, "graph:\n  generate:\n    kind: rmat\n    scale: x\n")
    with pytest.raises(ConfigError) as info:
        load_run_config(p)
    assert str(info.value) == f"{p}: graph.generate.scale: expected int, got str 'x'"
    assert info.value.source == p


def test_load_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such run config file"):
        load_run_config(tmp_path / "nope.yaml")


def test_load_bad_yaml(tmp_path):
    p = write(tmp_path, "graph:\n  generate: [1,\n")
    with pytest.raises(ConfigError, match=r"invalid YAML at line \d+"):
        load_run_config(p)


@pytest.mark.parametrize("text", ["", "# nothing\n"])
def test_load_empty_file(tmp_path, text):
    with pytest.raises(ConfigError, match="graph: missing"):
        load_run_config(write(tmp_path, text))


def test_load_not_a_mapping(tmp_path):
    with pytest.raises(ConfigError, match="a run config is a mapping"):
        load_run_config(write(tmp_path, "- graph\n"))


def test_load_pathlike(tmp_path):
    p = tmp_path / "run.yaml"
    p.write_text("graph: {generate: {kind: hypercube, d: 3}}\n")
    assert load_run_config(p)["graph"]["generate"]["d"] == 3


# --------------------------------------------------------------------------
# placement: how chunks are shared between GPU and CPU workers
# --------------------------------------------------------------------------

@pytest.mark.parametrize("section, expect", [
    ({"throughput": {"gpu": 40, "cpu": 1}}, {"throughput": {"gpu": 40, "cpu": 1}, "calibration_edges": 1048576}),
    ({"throughput": {"cpu": 0.5, "gpu": 12.5}, "calibration-edges": 4096},
     {"throughput": {"gpu": 12.5, "cpu": 0.5}, "calibration_edges": 4096}),
    ({"throughput": None}, {"throughput": None, "calibration_edges": 1048576}),
    ({}, {"throughput": None, "calibration_edges": 1048576}),
    (None, {"throughput": None, "calibration_edges": 1048576}),
])
def test_placement_section(section, expect):
    assert validate_run_config({**gen(), "placement": section})["placement"] == expect


@pytest.mark.parametrize("section, expect", [
    ([40, 1], "placement: expected mapping, got list"),
    ({"thruput": {"gpu": 4, "cpu": 1}}, "placement.thruput: unknown key; allowed: throughput, calibration_edges"),
    ({"throughput": 40}, "placement.throughput: expected mapping or null, got int 40"),
    ({"throughput": {"gpu": 40}}, "placement.throughput.cpu: missing required key (needed here: gpu, cpu)"),
    ({"throughput": {"gpu": 40, "cpu": 1, "tpu": 9}}, "placement.throughput.tpu: unknown key; allowed: gpu, cpu"),
    ({"throughput": {"gpu": "fast", "cpu": 1}}, "placement.throughput.gpu: expected float, got str 'fast'"),
    ({"throughput": {"gpu": True, "cpu": 1}}, "placement.throughput.gpu: expected float, got bool True"),
    ({"throughput": {"gpu": 40, "cpu": 0}}, "placement.throughput.cpu: must be a finite number > 0"),
    ({"throughput": {"gpu": -2.0, "cpu": 1}}, "placement.throughput.gpu: must be a finite number > 0"),
    ({"throughput": {"gpu": float("nan"), "cpu": 1}}, "placement.throughput.gpu: must be a finite number > 0"),
    ({"throughput": {"gpu": float("inf"), "cpu": 1}}, "placement.throughput.gpu: must be a finite number > 0"),
    ({"calibration_edges": 0}, "placement.calibration_edges: must be >= 1"),
    ({"calibration_edges": 1e6}, "placement.calibration_edges: expected int, got float 1000000.0"),
])
def test_placement_errors_name_key(section, expect):
    assert error_of({**gen(), "placement": section}).startswith(expect)


def test_placement_from_dask_config_and_env(fresh_config):
    with dask.config.set({"mst.placement.throughput": {"gpu": 20, "cpu": 2}}):
        assert validate_run_config(gen())["placement"]["throughput"] == {"gpu": 20, "cpu": 2}
        # the run config beats the dask config
        assert validate_run_config({**gen(), "placement": {"throughput": None}})["placement"]["throughput"] is None
    fresh_config.setenv("DASK_MST__PLACEMENT__THROUGHPUT", "{'gpu': 8, 'cpu': 1}")
    fresh_config.setenv("DASK_MST__PLACEMENT__CALIBRATION_EDGES", "65536")
    config.refresh()
    assert validate_run_config(gen())["placement"] == {"throughput": {"gpu": 8, "cpu": 1},
                                                       "calibration_edges": 65536}


def test_bad_placement_in_dask_config_named():
    with dask.config.set({"mst.placement.throughput": {"gpu": 0, "cpu": 1}}):
        msg = error_of(gen())
    assert msg.startswith("mst.placement.throughput (dask config).gpu: must be a finite number > 0")


def test_run_settings_set_placement_for_the_run():
    cfg = validate_run_config({**gen(), "placement": {"throughput": {"gpu": 40, "cpu": 1},
                                                      "calibration_edges": 2048}})
    settings = runconfig.run_settings(cfg)
    assert settings == {"mst.placement.throughput": {"gpu": 40, "cpu": 1},
                        "mst.placement.calibration-edges": 2048}
    with dask.config.set(settings):
        assert config.get("placement.throughput") == {"gpu": 40, "cpu": 1}
        assert config.get("placement.calibration-edges") == 2048
    assert config.get("placement.throughput") is None

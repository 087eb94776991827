"""The scale benchmark's configs (benchmarks/scale/config.py): the shipped ones, defaults, errors."""
import os

import pytest
import yaml

from mst_dist import generate
from benchmarks.scale import config
from mst_dist.config import ConfigError
from support import ROOT

SMALL = os.path.join(ROOT, "benchmarks", "configs", "bench-scale-small.yaml")
BIG = os.path.join(ROOT, "benchmarks", "configs", "bench-scale.yaml")

ONE = [{"name": "a", "generate": {"kind": "rmat", "scale": 8, "seed": 1}}]


def _load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _m(g):
    spec = dict(config.generator_spec(g))
    return generate(spec.pop("kind"), **spec).n_edges


@pytest.mark.parametrize("path", [SMALL, BIG], ids=["small", "big"])
def test_shipped_configs_validate_to_themselves(path):
    raw = _load(path)
    assert config.is_scale_config(raw)
    cfg = config.validate_scale_config(raw, source=path)
    assert config.validate_scale_config(cfg) == cfg
    assert cfg["repeat"] == 1 and cfg["warmup"] == 0
    assert {config.source_of(g) for g in cfg["graphs"]} >= {"generate", "written"}
    assert any(g["cluster"].get("processes") and g["cluster"].get("memory_limit") for g in cfg["graphs"])
    # every graph of the config has another of the same generator spec to agree with, or a target
    keys = [config.graph_spec_key(g) for g in cfg["graphs"]]
    assert [g["name"] for g in cfg["graphs"] if keys.count(config.graph_spec_key(g)) < 2] in (
        [], ["er-arrays"])
    kinds = {k for t in cfg["targets"] for k in t if k in config.TARGET_CHECKS}
    assert kinds >= {"max_peak_gib", "max_seconds", "max_time_ratio", "max_peak_ratio", "completes",
                     "same_edges_as"}


def test_small_config_is_small():
    cfg = config.validate_scale_config(_load(SMALL), source=SMALL)
    assert cfg["timeout"] <= 120
    for g in cfg["graphs"]:
        assert _m(g) <= 2**22 + 1, g["name"]  # R-MAT 18 x 16 at most: the whole run in about two minutes
    limits = [g["cluster"]["memory_limit"] for g in cfg["graphs"] if g["cluster"]]
    assert limits == ["1GiB"]


def test_big_config_has_the_targets_graphs():
    cfg = config.validate_scale_config(_load(BIG), source=BIG)
    graphs = {g["name"]: g for g in cfg["graphs"]}
    assert _m(graphs["rmat24"]) == 2**28 and graphs["rmat24"]["methods"] == ["engine", "engine-stream"]
    assert _m(graphs["rmat26"]) == 2**30 and graphs["rmat26"]["methods"] == ["engine-stream"]
    assert graphs["rmat26-npy"]["written"]["format"] == "npy"
    assert config.graph_spec_key(graphs["rmat26-npy"]) == config.graph_spec_key(graphs["rmat26"])
    assert graphs["rmat24-4gib"]["cluster"] == {"processes": True, "n_workers": 2, "memory_limit": "4GiB"}
    assert all(not g["cluster"] for n, g in graphs.items() if n != "rmat24-4gib")  # embedded default
    t26 = next(t for t in cfg["targets"] if t["graph"] == "rmat26")
    assert (t26["max_peak_gib"], t26["max_bytes_per_edge"], t26["max_seconds"]) == (16, 16, 300)
    t24 = next(t for t in cfg["targets"] if t["graph"] == "rmat24")
    assert (t24["versus"], t24["max_time_ratio"]) == ("engine", 1.25) and t24["max_peak_ratio"] < 0.34


def test_defaults():
    cfg = config.validate_scale_config({"benchmark": "scale", "graphs": ONE})
    assert list(cfg) == list(config.SCALE_SCHEMA)
    assert cfg["methods"] == list(config.SCALE_METHODS) and cfg["cluster"] == {} and cfg["targets"] == []
    g = cfg["graphs"][0]
    assert g["methods"] == ["engine", "engine-stream"] and g["cluster"] == {}
    written = config.validate_scale_config({"benchmark": "scale", "methods": "engine-stream",
                                            "cluster": {"n_workers": 2},
                                            "graphs": [{"name": "w", "written": {"generate": ONE[0]["generate"]}}]})
    w = written["graphs"][0]
    assert w["written"]["format"] == "npy" and w["methods"] == ["engine-stream"] and w["cluster"] == {"n_workers": 2}


@pytest.mark.parametrize("bad, key, message", [
    ({"benchmark": "compare"}, "benchmark", "'benchmark' must be 'scale' here"),
    ({"timeout": 0}, "timeout", "'timeout' must be a number > 0, got 0"),
    ({"methods": ["scipy"]}, "methods", "unknown method(s) scipy"),
    ({"cluster": {"memory_limt": "4GiB"}}, "cluster", "'cluster' takes only n_workers"),
    ({"cluster": {"memory_limit": "lots"}}, "cluster.memory_limit", "must be a size such as 4GiB"),
    ({"graphs": [{"name": "a"}]}, "graphs[0]", "needs exactly one of generate, written, arrays"),
    ({"graphs": [{**ONE[0], "arrays": ONE[0]}]}, "graphs[0]", "needs exactly one of"),
    ({"graphs": [{"name": "a", "generate": {"kind": "rmat", "scale": 0}}]}, "graphs[0].generate", "scale"),
    ({"graphs": [{"name": "a", "generate": {"kind": "rmat", "scael": 8}}]}, "graphs[0].generate", "scael"),
    ({"graphs": [{"name": "a", "written": {**ONE[0], "format": "xls"}}]}, "graphs[0].written",
     "must be a mapping with 'generate'"),
    ({"graphs": [{"name": "a", "written": {"generate": ONE[0]["generate"], "format": "xls"}}]},
     "graphs[0].written.format", "must be one of"),
    ({"graphs": [{**ONE[0], "repeat": 2}]}, "graphs[0].repeat", "unknown key(s) repeat"),
    ({"graphs": ONE * 2}, "graphs[1].name", "duplicate graph name 'a'"),
    ({"targets": [{"graph": "b", "max_seconds": 1}]}, "targets[0].graph", "no graph named 'b'"),
    ({"targets": [{"graph": "a"}]}, "targets[0]", "checks nothing"),
    ({"targets": [{"graph": "a", "max_secs": 1}]}, "targets[0].max_secs", "unknown key(s) max_secs"),
    ({"targets": [{"graph": "a", "versus": "engine", "max_seconds": 1}]}, "targets[0].versus", "go together"),
    ({"targets": [{"graph": "a", "max_time_ratio": 1}]}, "targets[0].versus", "go together"),
    ({"targets": [{"graph": "a", "max_engine_bytes_per_edge": 16}]}, "targets[0].max_engine_bytes_per_edge",
     "applies to graphs from arrays"),
    ({"graphs": [{**ONE[0], "methods": ["engine"]}], "targets": [{"graph": "a", "max_seconds": 9}]},
     "targets[0].method", "does not run 'engine-stream'"),
    ({"graphs": [ONE[0], {"name": "b", "generate": {"kind": "rmat", "scale": 9, "seed": 1}}],
      "targets": [{"graph": "a", "same_edges_as": "b"}]}, "targets[0].same_edges_as", "other parameters"),
    ({"targets": [{"graph": "a", "same_edges_as": "a"}]}, "targets[0].same_edges_as", "no other graph"),
    ({"targets": [{"graph": "a", "completes": "yes"}]}, "targets[0].completes", "must be true"),
])
def test_errors_name_the_key(bad, key, message):
    with pytest.raises(ConfigError) as err:
        config.validate_scale_config({"benchmark": "scale", "graphs": ONE, **bad}, source="s.yaml")
    assert err.value.key == key
    assert str(err.value).startswith("s.yaml: ") and message in str(err.value)


def test_compare_configs_are_not_scale_configs():
    import benchmarks as bench

    raw = _load(os.path.join(ROOT, "benchmarks", "configs", "bench-small.yaml"))
    assert not config.is_scale_config(raw)
    with pytest.raises(ConfigError, match="unknown key"):
        bench.validate_config(_load(SMALL))

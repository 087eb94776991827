"""The benchmark config's schema (benchmarks/config.py): defaults, checks, messages."""
import pytest

from benchmarks import config
from mst_dist.config import ConfigError
from support import ROOT
from support.needs import module

ONE = [{"name": "a", "generate": {"kind": "grid", "rows": 3, "cols": 3}}]


def test_defaults_fill_every_key_of_the_schema():
    cfg = config.validate_config({"graphs": ONE})
    assert list(cfg) == list(config.SCHEMA)
    assert cfg["methods"] == list(config.METHODS)
    assert (cfg["repeat"], cfg["warmup"], cfg["schedule"]) == (3, 1, "interleaved")
    assert cfg["rustworkx"] == {"chunk": config.RX_CHUNK, "build_repeat": 1}
    assert cfg["targets"] == {**config.DEFAULT_TARGETS, **config.GPU_TARGETS, "gpu_graph": None,
                              "informational": False}
    assert config.validate_config(cfg) == cfg


@pytest.mark.parametrize("bad, key, message", [
    ({"schedule": "random"}, "schedule", "'schedule' must be 'interleaved' or 'sequential', got 'random'"),
    ({"warmup": -1}, "warmup", "'warmup' must be an integer >= 0, got -1"),
    ({"repeat": True}, "repeat", "'repeat' must be an integer >= 1, got True"),
    ({"rustworkx": {"chunks": 5}}, "rustworkx", "'rustworkx' takes only 'chunk' and 'build_repeat'"),
    ({"rustworkx": {"chunk": 0}}, "rustworkx.chunk", "'rustworkx.chunk' must be an integer >= 1, got 0"),
    ({"methods": "networkx"}, "methods", "unknown method(s) networkx"),
    ({"graphs": [ONE[0], ONE[0]]}, "graphs[1].name", "duplicate graph name 'a'"),
    ({"graphs": [{"name": "b", "generate": {}}]}, "graphs[0].generate", "must be a mapping with 'kind'"),
    ({"targets": "off"}, "targets", "'targets' takes scipy_geomean"),
    ({"targets": {"informational": "yes"}}, "targets.informational", "must be true or false, got 'yes'"),
])
def test_errors_name_the_key(bad, key, message):
    with pytest.raises(ConfigError) as err:
        config.validate_config({"graphs": ONE, **bad}, source="b.yaml")
    assert err.value.key == key
    assert str(err.value).startswith("b.yaml: ") and message in str(err.value)


def test_informational_targets_validate_and_round_trip():
    cfg = config.validate_config({"graphs": ONE, "targets": "informational"})
    assert cfg["targets"]["informational"] is True
    assert cfg["targets"]["scipy_geomean"] == config.DEFAULT_TARGETS["scipy_geomean"]
    assert config.validate_config(cfg) == cfg
    assert config.load_config(f"{ROOT}/benchmarks/configs/bench-small.yaml")["targets"]["informational"] is True
    assert config.load_config(f"{ROOT}/benchmarks/configs/bench-cpu.yaml")["targets"]["informational"] is False


def test_informational_targets_report_ratios_without_verdicts(tmp_path):
    """bench-small's targets: each ratio beside its target, marked INFO, never PASS or FAIL."""
    module("scipy", "pip install -r benchmarks/requirements.txt")
    import benchmarks as bench

    cfg = {"repeat": 1, "warmup": 0, "methods": ["engine", "kernels-loop", "scipy"], "targets": "informational",
           "graphs": [{"name": "er", "generate": {"kind": "erdos_renyi", "n": 2000, "m": 8000, "seed": 1}}]}
    report = bench.run_bench(cfg, tmp_path, log=lambda msg: None)
    for stat in ("min", "median"):
        targets = report["summary"][stat]["targets"]
        assert [t["pass"] for t in targets] == [None] * 4 and all(t["informational"] for t in targets)
    md = (tmp_path / "bench.md").read_text()
    assert md.count("- **INFO** ") == 4 and "**PASS**" not in md and "**FAIL**" not in md
    assert "Informational: the targets are set for the full-size graphs" in md
    speedup = report["summary"]["min"]["geomean"]["speedup_scipy"]
    assert speedup > 0 and f"(geometric mean): {bench.report._fmt_x(speedup)}" in md
    # the same measurements under checked targets get verdicts
    report["config"]["targets"]["informational"] = False
    checked = bench.summarise(report)["min"]["targets"]
    assert {t["pass"] for t in checked[:2]} <= {True, False} and "informational" not in checked[0]
    assert "**INFO**" not in bench.format_report({k: v for k, v in report.items() if k != "summary"})

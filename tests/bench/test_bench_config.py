"""The benchmark config's schema (mst_dist.bench.config): defaults, checks, messages."""
import pytest

from mst_dist.bench import config
from mst_dist.config import ConfigError

ONE = [{"name": "a", "generate": {"kind": "grid", "rows": 3, "cols": 3}}]


def test_defaults_fill_every_key_of_the_schema():
    cfg = config.validate_config({"graphs": ONE})
    assert list(cfg) == list(config.SCHEMA)
    assert cfg["methods"] == list(config.METHODS)
    assert (cfg["repeat"], cfg["warmup"], cfg["schedule"]) == (3, 1, "interleaved")
    assert cfg["rustworkx"] == {"chunk": config.RX_CHUNK, "build_repeat": 1}
    assert cfg["targets"] == {**config.DEFAULT_TARGETS, **config.GPU_TARGETS, "gpu_graph": None}
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
])
def test_errors_name_the_key(bad, key, message):
    with pytest.raises(ConfigError) as err:
        config.validate_config({"graphs": ONE, **bad}, source="b.yaml")
    assert err.value.key == key
    assert str(err.value).startswith("b.yaml: ") and message in str(err.value)

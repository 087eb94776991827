"""A run's settings, validated once: each bad value is a ConfigError naming its key and what it allows."""
import dask
import numpy as np
import pytest

import mst_dist
from mst_dist.config import ConfigError
from mst_dist.engine.spec import RunSpec

BAD = {
    "vertex_ranges": [0, -3, 2.5, "4", True],
    "vertex_base": [-1, 1.5, "big", False],
}
ALLOWED = {
    "vertex_ranges": "a positive integer or None",
    "vertex_base": "'auto' or a number of components >= 0",
}


@pytest.mark.parametrize("key, value", [(k, v) for k, vs in BAD.items() for v in vs])
def test_a_bad_value_is_named_by_its_key(key, value):
    with pytest.raises(ConfigError, match=rf"^{key}: must be {ALLOWED[key]}.*got {value!r}$") as e:
        RunSpec.build(**{key: value})
    assert e.value.key == key
    # the same through the settings (YAML, DASK_MST__... environment variables)
    with dask.config.set({f"mst.{key.replace('_', '-')}": value}):
        with pytest.raises(ConfigError, match=rf"^{key}: must be"):
            RunSpec.build()
        # and so refused by the entry point before any work
        events = []
        with pytest.raises(ConfigError, match=rf"^{key}:"):
            mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays([0], [1], [1.0]), "embedded",
                                             progress=events.append)
        assert events == []


@pytest.mark.parametrize("key, value, kept", [
    ("vertex_ranges", None, None), ("vertex_ranges", 1, 1), ("vertex_ranges", np.int64(16), 16),
    ("vertex_base", "auto", "auto"), ("vertex_base", 0, 0), ("vertex_base", np.int32(4096), 4096),
])
def test_good_values_are_kept(key, value, kept):
    assert getattr(RunSpec.build(**{key: value}), key) == kept

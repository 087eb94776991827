"""The task-key codec: every key the engine builds parses back to its parts."""
import pytest

from mst_dist.engine.keys import TaskKey, new_token, parse_key, task_key

TOKEN = new_token()


@pytest.mark.parametrize("phase,rnd,sub,index", [
    ("map", 0, 0, 3), ("map", 12, 7, 0), ("merge", 2, 1, "0.3"), ("merge", 2, None, "1.0"),
    ("contract", 5, 4, None), ("load", 0, None, 17), ("local", 9, None, None),
    ("filter-edges", 1, None, 2),
])
def test_round_trip(phase, rnd, sub, index):
    key = task_key(phase, rnd, TOKEN, sub, index)
    k = parse_key(key)
    assert k == TaskKey(phase, rnd, TOKEN, sub, None if index is None else str(index))
    assert str(k) == key


def test_chunk_index_of_per_chunk_tasks_only():
    assert parse_key(task_key("map", 1, TOKEN, 3, 5)).chunk == 5
    assert parse_key(task_key("merge", 1, TOKEN, 3, "0.1")).chunk is None
    assert parse_key(task_key("contract", 1, TOKEN, 3)).chunk is None


@pytest.mark.parametrize("key", ["other-key", "mst-", "mst-map-x0-abcd", ("mst-map-r0-ab", 1), None, 3])
def test_foreign_keys_are_none(key):
    assert parse_key(key) is None

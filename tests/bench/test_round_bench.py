"""The one-round benchmark runs the engine's worker functions of a partitioned round in one process and
reports both versions by step (here both versions are this checkout)."""
import json
import os

from benchmarks import vertex_partition

STEPS = {"prepare", "merge", "hook", "jump", "number", "filter-edges", "labels"}


def test_one_round_by_step_against_a_checkout(tmp_path, capsys):
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = tmp_path / "round.json"
    vertex_partition.main(["round", "--before", here, "--n", "5000", "--m", "9000", "--chunks", "3", "--ranges", "4",
                           "--turns", "1", "--repeat", "1", "--out", str(out)])
    assert "now / before" in capsys.readouterr().out
    data = json.loads(out.read_text())  # (the same forest edges, labels and edges left, or it raised)
    assert data["graph"] == {"n": 5000, "m": 9000, "chunks": 3, "ranges": 4}
    assert set(data["steps"]) == {"before", "now"} and all(set(s) == STEPS for s in data["steps"].values())
    assert data["before"] > 0 and data["now"] > 0

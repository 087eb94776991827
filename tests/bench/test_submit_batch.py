"""The one-by-one against one-graph submission benchmark runs and reports both ways."""
import json

from benchmarks import submit_batch


def test_submit_batch_reports_both_ways(tmp_path, capsys):
    out = tmp_path / "batch.json"
    submit_batch.main(["--tasks", "20", "--repeat", "1", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "one by one / one graph" in printed
    data = json.loads(out.read_text())
    assert data["tasks"] == 40 and set(data["ms_per_task"]) == {"submit", "batch"}
    assert all(v > 0 for v in data["seconds"].values())

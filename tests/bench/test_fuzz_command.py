"""``python -m benchmarks.fuzz``: the longer fuzzing run outside CI."""
import json

from benchmarks import fuzz


def test_a_short_fuzzing_run_reports_what_it_tried(tmp_path, capsys):
    out = tmp_path / "fuzz.json"
    assert fuzz.main(["--minutes", "0", "--examples", "3", "-k", "path_is_local", "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["rounds"] == 1 and summary["property_runs"] == 1 and summary["examples_tried"] == 3
    assert summary["failing_rounds"] == 0 and summary["failures"] == []
    assert "fuzzed 1 round(s)" in capsys.readouterr().out

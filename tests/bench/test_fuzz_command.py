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


def test_round_limits_follow_the_examples_not_the_clock():
    assert fuzz.test_timeout(200) == 600 and fuzz.test_timeout(3) == 120
    assert fuzz.round_timeout(200) == 4 * 600 + 120


def test_a_round_past_its_limit_keeps_what_it_printed(monkeypatch):
    """A round stopped by its limit is a failure whose output (bytes in ``TimeoutExpired``) is kept."""
    import subprocess

    def late(cmd, **kw):
        assert "--timeout=120" in cmd and kw["timeout"] == fuzz.round_timeout(3)
        raise subprocess.TimeoutExpired(cmd, kw["timeout"], output=b"...F", stderr=b"Falsifying example")

    monkeypatch.setattr(subprocess, "run", late)
    passed, failed, out = fuzz._round(3, 1, None)
    assert (passed, failed) == (0, 1)
    assert out.startswith("...FFalsifying example") and "round stopped after 600 s" in out


def test_a_test_stopped_by_its_timeout_fails_the_round(monkeypatch):
    """pytest-timeout ends the process of a hanging test with the threads' stacks and no summary line."""
    import subprocess

    done = subprocess.CompletedProcess([], 1, stdout="..\n+++ Timeout +++\n~~ Stack of MainThread ~~", stderr="")
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: done)
    passed, failed, out = fuzz._round(3, 1, None)
    assert (passed, failed) == (0, 1) and "Timeout" in out

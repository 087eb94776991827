"""``mst-dist run --checkpoint DIR``: a run killed part-way and run again goes on to the same forest."""
import json
import os
import signal
import subprocess
import time

import pytest
import yaml

from mst_dist.cli.parser import build_parser, run_config_from_args
from mst_dist.config import ConfigError
from mst_dist.engine.checkpoint import MANIFEST
from support.cli import CLI, cli_env, run_cli
from support.oracle import assert_forest_file, expected

GRAPH = ("--generate", "rmat", "--scale", "16", "--seed", "1")


def _args(*argv):
    return build_parser().parse_args(["run", *argv])


def test_flags_reach_the_run_config(tmp_path):
    cfg = run_config_from_args(_args(*GRAPH, "--checkpoint", str(tmp_path / "ck")))
    assert cfg["checkpoint"] == {"path": str(tmp_path / "ck"), "resume": True}
    cfg = run_config_from_args(_args(*GRAPH, "--checkpoint", str(tmp_path / "ck"), "--no-resume"))
    assert cfg["checkpoint"]["resume"] is False
    assert run_config_from_args(_args(*GRAPH))["checkpoint"] is None


def test_checkpoint_key_and_flag_override(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"graph": {"generate": {"kind": "grid", "rows": 3, "cols": 3}},
                                    "checkpoint": {"path": "ck-a", "resume": False}}))
    cfg = run_config_from_args(_args(str(path)))
    assert cfg["checkpoint"] == {"path": "ck-a", "resume": False}
    cfg = run_config_from_args(_args(str(path), "--checkpoint", "ck-b", "--resume"))
    assert cfg["checkpoint"] == {"path": "ck-b", "resume": True}


@pytest.mark.parametrize("section, message", [
    ({"resume": True}, "checkpoint.path: missing required key"),
    ({"path": "ck", "resume": "yes"}, "checkpoint.resume: expected bool"),
    ({"path": "ck", "every": 3}, "checkpoint.every: unknown key"),
    ("ck", "checkpoint: expected mapping"),
])
def test_bad_checkpoint_section_named(tmp_path, section, message):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"graph": {"generate": {"kind": "grid", "rows": 3, "cols": 3}},
                                    "checkpoint": section}))
    with pytest.raises(ConfigError, match=message):
        run_config_from_args(_args(str(path)))


def test_a_file_is_no_checkpoint_directory(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="checkpoint.path: .* is a file; give a directory"):
        run_config_from_args(_args(*GRAPH, "--checkpoint", str(tmp_path / "f")))


def test_resume_needs_a_checkpoint():
    with pytest.raises(ConfigError, match="--resume/--no-resume: only with a checkpoint"):
        run_config_from_args(_args(*GRAPH, "--no-resume"))


def _saved(ck):
    try:
        with open(os.path.join(ck, MANIFEST)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def _kill_when(argv, cwd, ready, timeout=600):
    """Start ``mst-dist ARGV`` and SIGKILL it once its checkpoint manifest satisfies ``ready``."""
    ck = argv[argv.index("--checkpoint") + 1]
    p = subprocess.Popen([*CLI, *argv], cwd=cwd, env=cli_env(), start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and p.poll() is None:
            saved = _saved(os.path.join(cwd, ck))
            if saved is not None and ready(saved):
                os.killpg(p.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
    finally:
        if p.poll() is None and time.monotonic() >= deadline:
            os.killpg(p.pid, signal.SIGKILL)
        err = p.communicate(timeout=60)[1]
    assert p.returncode == -signal.SIGKILL, f"the run ended before it was killed (exit {p.returncode}): {err}"
    return _saved(os.path.join(cwd, ck))


def _expected(seed, scale=16):
    """The forest of ``GRAPH`` (with ``seed``, ``scale``) by the naive Kruskal."""
    import mst_dist

    return expected(mst_dist.generate("rmat", scale=scale, seed=seed))


MODES = {
    # engine flags, when to kill, what the manifest says then
    "resident": (("--local-finish", "0", "--partitions", "4"), lambda s: s["round"] >= 2, "round"),
    "streamed": (("--stream", "always", "--partitions", "4"), lambda s: s["passes"] >= 1, "passes"),
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_killed_run_resumes_to_the_same_forest(tmp_path, mode):
    flags, ready, field = MODES[mode]
    argv = ["run", *GRAPH, *flags, "--checkpoint", "ck", "-q"]
    saved = _kill_when([*argv, "-o", "killed.npz"], str(tmp_path), ready)
    assert not (tmp_path / "killed.npz").exists()
    assert saved["mode"] == ("streaming" if mode == "streamed" else "resident") and not saved["complete"]

    again = run_cli(*argv, "-o", "resumed.npz", "--report", "report.json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert_forest_file(tmp_path / "resumed.npz", _expected(1))  # by Kruskal, not by another run of the engine
    stats = json.loads((tmp_path / "report.json").read_text())["stats"]
    assert stats["resumed_from"] == saved["round"]  # went on from where it was killed
    if mode == "streamed":
        assert "pass 1" not in [p["name"] for p in stats["passes"]]
    assert not (tmp_path / "ck" / MANIFEST).exists()  # a finished run leaves no state


@pytest.mark.slow
def test_checkpoint_of_another_graph_refused_then_started_over(tmp_path):
    argv = ["run", *GRAPH, "--local-finish", "0", "--checkpoint", "ck", "-q"]
    _kill_when(argv, str(tmp_path), lambda s: s["round"] >= 1)
    # another graph (a smaller one: the run started over is solved whole)
    other = ["run", "--generate", "rmat", "--scale", "12", "--seed", "2", "--local-finish", "0",
             "--checkpoint", "ck", "-q", "-o", "other.npz"]
    refused = run_cli(*other, cwd=tmp_path)
    assert refused.returncode == 2
    assert "mst-dist: error: checkpoint" in refused.stderr and "holds the state of another run" in refused.stderr
    assert "seed=1" in refused.stderr and "seed=2" in refused.stderr and "--no-resume" in refused.stderr
    assert "Traceback" not in refused.stderr
    fresh = run_cli(*other, "--no-resume", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert_forest_file(tmp_path / "other.npz", _expected(2, scale=12))

"""``.ci/run``, the CI entry point: what it says of the test suite is true."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "run"


def test_every_test_file_named_in_the_ci_script_exists():
    named = set(re.findall(r"tests/[\w/]+\.py", SCRIPT.read_text()))
    assert named, "the script names the test modules that need each system package"
    missing = sorted(p for p in named if not (ROOT / p).is_file())
    assert not missing, f".ci/run names test files that do not exist: {missing}"


def test_the_ci_script_sets_ci_itself():
    """Missing tools fail rather than skip only with ``CI`` set: the script sets it, before any test."""
    lines = [ln.strip() for ln in SCRIPT.read_text().splitlines()]
    assert "export CI=true" in lines
    assert lines.index("export CI=true") < next(i for i, ln in enumerate(lines) if "pytest" in ln and
                                                not ln.startswith("#"))

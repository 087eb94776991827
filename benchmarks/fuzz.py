"""A longer fuzzing run of the suite's property-based tests (``tests/test_fuzz.py``), outside CI.

::

    python -m benchmarks.fuzz --minutes 10 [--examples 200] [-k EXPR] [--out fuzz.json]

Runs the properties again and again, each round with a fresh random seed and ``--examples`` examples
per property (``MST_FUZZ_EXAMPLES``; the suite runs a bounded few), until ``--minutes`` have passed.
Prints, and writes to ``--out`` as JSON, the rounds run, the examples tried, and every failing round's
falsifying examples as pytest reported them (hypothesis prints the seed to run one again with
``--hypothesis-seed``).  Exit status 1 when a round failed.

The time limits follow the examples, not the clock: ``--minutes`` only stops new rounds from starting
(the last one runs to its end); each property may take :func:`test_timeout` seconds (pytest-timeout,
which stops a test that hangs with every thread's stack in the round's output), and a whole round
:func:`round_timeout`.  A failing property takes longer than a passing one: hypothesis shrinks each
failure it found, running the property again each step.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join("tests", "test_fuzz.py")


#: Seconds a property may take per example: those running the engine run a third of the examples at
#: up to a second each on a busy machine, and shrinking a failure runs a few hundred more.
SECONDS_PER_EXAMPLE = 3.0


def test_timeout(examples):
    """Seconds one property may take with ``examples`` examples before it counts as a hang."""
    return max(120, int(SECONDS_PER_EXAMPLE * examples))


def round_timeout(examples):
    """Seconds one round may take: every property at its limit would be a round of many hangs, so four
    properties' worth, and the start of pytest and of the test cluster."""
    return 4 * test_timeout(examples) + 120


def _text(out):
    """A timed-out process's output: bytes even with ``text=True`` (``TimeoutExpired``)."""
    if isinstance(out, bytes):
        return out.decode("utf-8", "replace")
    return out or ""


def _round(examples, seed, select, timeout=None):
    """One pytest run of the properties: ``(passed, failed, output tail)``."""
    timeout = round_timeout(examples) if timeout is None else timeout
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", TESTS,
           f"--hypothesis-seed={seed}", f"--timeout={test_timeout(examples)}", "--timeout-method=thread"]
    if select:
        cmd += ["-k", select]
    env = dict(os.environ, MST_FUZZ_EXAMPLES=str(examples))
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        out, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = _text(e.stdout) + _text(e.stderr) + f"\nround stopped after {timeout:.0f} s (round_timeout)"
        return 0, 1, out[-6000:]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|errors?)\b", out)}
    passed = counts.get("passed", 0)
    failed = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
    if rc not in (0, 5) and not failed:  # pytest-timeout ended the process: no summary line
        failed = 1
    return passed, failed, out[-6000:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="how long to fuzz (default 10)")
    p.add_argument("--examples", type=int, default=200, help="examples per property and round (default 200)")
    p.add_argument("-k", dest="select", default=None, help="only the properties pytest's -k selects")
    p.add_argument("--out", default=None, help="write the summary here as JSON")
    args = p.parse_args(argv)
    deadline = time.monotonic() + args.minutes * 60
    rounds, properties, failures = 0, 0, []
    seed = int.from_bytes(os.urandom(4), "little")
    while True:
        passed, failed, tail = _round(args.examples, seed + rounds, args.select)
        rounds += 1
        properties += passed + failed
        if failed:
            failures.append({"seed": seed + rounds - 1, "output": tail})
        if time.monotonic() >= deadline:
            break
    summary = {"minutes": args.minutes, "rounds": rounds, "examples_per_property": args.examples,
               "property_runs": properties, "examples_tried": properties * args.examples,
               "failing_rounds": len(failures), "failures": failures}
    print(f"fuzzed {rounds} round(s): {properties} property runs, up to {properties * args.examples} examples; "
          f"{len(failures)} failing round(s)")
    for f in failures:
        print(f"--- seed {f['seed']}\n{f['output']}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

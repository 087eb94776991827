"""A longer fuzzing run of the suite's property-based tests (``tests/test_fuzz.py``), outside CI.

::

    python -m benchmarks.fuzz --minutes 10 [--examples 200] [-k EXPR] [--out fuzz.json]

Runs the properties again and again, each round with a fresh random seed and ``--examples`` examples
per property (``MST_FUZZ_EXAMPLES``; the suite runs a bounded few), until ``--minutes`` have passed.
Prints, and writes to ``--out`` as JSON, the rounds run, the examples tried, and every failing round's
falsifying examples as pytest reported them (hypothesis prints the seed to run one again with
``--hypothesis-seed``).  Exit status 1 when a round failed.
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


def _round(examples, seed, select, timeout):
    """One pytest run of the properties: ``(passed, failed, output tail)``."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", TESTS,
           f"--hypothesis-seed={seed}"]
    if select:
        cmd += ["-k", select]
    env = dict(os.environ, MST_FUZZ_EXAMPLES=str(examples))
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        out = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        out = f"round timed out after {timeout} s (a hang?)\n" + (e.stdout or "") if isinstance(e.stdout, str) \
            else f"round timed out after {timeout} s (a hang?)"
        return 0, 1, out[-6000:]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|error)", out)}
    return counts.get("passed", 0), counts.get("failed", 0) + counts.get("error", 0), out[-6000:]


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
        passed, failed, tail = _round(args.examples, seed + rounds, args.select,
                                      timeout=max(60.0, deadline - time.monotonic() + 60))
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

"""The project's benchmarks: the engine against scipy, rustworkx and cuGraph; the scale runs.

Not part of the installed package: run them from the repository's root, after
``pip install -e . -r benchmarks/requirements.txt``::

    python -m benchmarks benchmarks/configs/bench-cpu.yaml [--out DIR] [--repeat N] [--only NAME]
    python -m benchmarks benchmarks/configs/bench-gpu.yaml --out bench-gpu-out     # on a CUDA machine
    python -m benchmarks benchmarks/configs/bench-scale.yaml --out bench-scale-out  # the scale benchmark
    python -m benchmarks.iobench --edges 10000000 --dir DIR                        # the readers

The published results are docs/benchmarks.md.  (``mst-dist bench``, in the
package, measures a user's own cluster, with no peers and no targets.)

Every method of a comparison config runs on every graph, on the same int64
edge arrays in memory, and is timed from those arrays to the result in hand
(min and median of the timed runs).  The harness, module by module:

- :mod:`~benchmarks.config`: the methods (:data:`METHODS`,
  :data:`GPU_METHODS`), the targets (:data:`DEFAULT_TARGETS`,
  :data:`GPU_TARGETS`) and the YAML config (:func:`load_config`,
  :func:`validate_config`);
- :mod:`~benchmarks.methods`: the CPU methods (engine,
  engine-distributed, kernels-loop, kernels-loop-dedupe, scipy, rustworkx,
  cold);
- :mod:`~benchmarks.gpu`: the GPU methods (engine-gpu, cugraph), which
  without CuPy, a CUDA device or pylibcugraph are recorded as
  ``{"unavailable": reason}``, listed in the report and left out of the
  targets ("not measured"), while the run goes on;
- :mod:`~benchmarks.timing`: a method's timed runs and their summary;
- :mod:`~benchmarks.runner`: :func:`run_bench`, the whole run and the
  agreement check (:class:`BenchMismatch`);
- :mod:`~benchmarks.report`: :func:`summarise` and :func:`format_report`.

Outputs in ``out_dir``: ``bench.json`` (machine, versions, every run's times,
the engine's per-round statistics) and ``bench.md`` (the table, a geometric
mean row and a pass/fail line per target), the table also printed.  A config
with a GPU method adds a GPU table and the :data:`GPU_TARGETS`.
:mod:`benchmarks.iobench` measures the readers' throughput apart.

A config with ``benchmark: scale`` is the scale benchmark instead
(:mod:`benchmarks.scale`): the engine in memory and streamed on graphs up
to larger than memory, each run in a process of its own, with the peak RSS
of its whole process tree (:mod:`benchmarks.memory`).
"""
from __future__ import annotations

import argparse
import sys

from benchmarks.config import (
    ALL_METHODS,
    DEFAULT_TARGETS,
    GPU_METHODS,
    GPU_TARGETS,
    METHODS,
    load_config,
    validate_config,
)
from benchmarks.gpu import gpu_method_status, simple_undirected
from benchmarks.report import format_report, summarise
from benchmarks.runner import BenchMismatch, run_bench
from benchmarks.scale import SCALE_METHODS, is_scale_config, run_scale, validate_scale_config

__all__ = ["METHODS", "GPU_METHODS", "ALL_METHODS", "DEFAULT_TARGETS", "GPU_TARGETS",
           "BenchMismatch", "load_config", "validate_config", "run_bench", "summarise", "format_report",
           "gpu_method_status", "simple_undirected", "main", "build_parser", "cli",
           "SCALE_METHODS", "run_scale", "validate_scale_config"]


def main(config_path, out_dir="bench-out", repeat=None, only=None, methods=None, strict=True):
    """Load ``config_path`` and run it; returns the report dict.

    A config with ``benchmark: scale`` runs :func:`run_scale`, any other
    :func:`run_bench`.
    """
    import yaml

    with open(config_path, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    if is_scale_config(raw):
        cfg = validate_scale_config(raw, source=str(config_path))
        return run_scale(cfg, out_dir, repeat=repeat, only=only, methods=methods, strict=strict)
    cfg = validate_config(raw, source=str(config_path))
    return run_bench(cfg, out_dir, repeat=repeat, only=only, methods=methods, strict=strict)


def build_parser():
    """The benchmark's arguments (``python -m benchmarks``)."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmark the engine against scipy, rustworkx and cuGraph on the graphs of a "
                    "config (GPU methods without a GPU: reported unavailable, with the reason).")
    p.add_argument("config", help="benchmark YAML (e.g. benchmarks/configs/bench-cpu.yaml)")
    p.add_argument("--out", default="bench-out", help="output folder for bench.json and bench.md")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per method (default: config)")
    p.add_argument("--only", default=None, help="comma-separated graph names to run")
    p.add_argument("--methods", default=None,
                   help=f"comma-separated subset of: {', '.join(ALL_METHODS)} (a scale config: "
                        f"{', '.join(SCALE_METHODS)})")
    p.add_argument("--no-strict", action="store_true",
                   help="exit 0 even when methods disagree on a total weight (or runs of a graph on its "
                        "edge ids)")
    return p


def cli(argv=None):
    """``python -m benchmarks``: 0 done, 1 methods disagree, 2 bad input."""
    args = build_parser().parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",")] if args.methods else None
    try:
        main(args.config, args.out, repeat=args.repeat, only=args.only, methods=methods,
             strict=not args.no_strict)
    except BenchMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0

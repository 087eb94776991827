"""The scale benchmark: time and peak memory of the engine on graphs up to larger than memory.

    python -m benchmarks benchmarks/configs/bench-scale.yaml [--out DIR] [--only NAME] [--methods engine-stream]
    python -m benchmarks benchmarks/configs/bench-scale-small.yaml --out bench-scale-small-out   # two minutes

A config with ``benchmark: scale`` runs the engine in memory (``engine``:
``stream="never"``) and streamed (``engine-stream``: ``stream="always"``) on
generated graphs (generated on the workers), graphs written to disk and read
back, and graphs from arrays in memory, each method on each graph in a
process of its own, on the embedded default cluster or the graph's own
(worker processes with a ``memory_limit``).  It reports the time and the peak
RSS of the whole process tree (workers included), in GiB and bytes per edge,
and the targets of the config as PASS/FAIL lines.

- :mod:`~benchmarks.scale.config`: the YAML schema
  (:func:`validate_scale_config`), the methods and the target checks;
- :mod:`~benchmarks.scale.runner`: :func:`run_scale`, which writes each
  graph's file, starts and watches each run (timeout, out of memory) and
  checks that runs of one graph agree;
- :mod:`~benchmarks.scale.isolated`: what the run's own process does;
- :mod:`~benchmarks.scale.report`: the table and the targets' verdicts.

The sampler of a process tree's RSS is :mod:`benchmarks.memory`.
"""
from benchmarks.scale.config import (
    SCALE_METHODS,
    TARGET_CHECKS,
    is_scale_config,
    validate_scale_config,
)
from benchmarks.scale.report import format_scale_report, summarise_scale
from benchmarks.scale.runner import STATUSES, run_scale

__all__ = ["SCALE_METHODS", "TARGET_CHECKS", "STATUSES", "is_scale_config", "validate_scale_config",
           "run_scale", "summarise_scale", "format_scale_report"]

"""Timed runs of a method: the per-run record, the min/median summary, the run orders.

A method's single run is a function ``fn(ctx) -> record``: ``{"times": {...},
"total_weight", "forest_edges", ...}`` (``ctx`` holds the graph's arrays and
the clients).  :func:`run_sequential` and :func:`run_interleaved` call it
``warmup + repeat`` times and :func:`finish` turns the records into the
method's result: every run's times, their ``min``, ``median`` and ``best``,
and the answers (which must be the same in every run).
"""
from __future__ import annotations

import gc
import os
import statistics
import time
import zlib

import numpy as np

__all__ = ["cpu_seconds", "crc", "as_exact", "summarise_stats", "collect", "run_once", "finish",
           "run_sequential", "run_interleaved", "done"]


def cpu_seconds():
    """CPU seconds of this process so far (user + system, every thread)."""
    t = os.times()
    return t.user + t.system


def crc(ids):
    """CRC-32 of the forest's edge ids as int64: equal ids, equal checksums."""
    return zlib.crc32(np.ascontiguousarray(ids, dtype=np.int64).tobytes())


def as_exact(x, w):
    """A total weight as the input's kind: an ``int`` for integer weights, else a ``float``."""
    if np.asarray(w).dtype.kind in "iub":
        return int(round(float(x)))
    return float(x)


def summarise_stats(st):
    """The engine's RunStats as a JSON-friendly dict plus the Dask overhead per round."""
    d = st.to_dict()
    # rounds run as Dask tasks over the chunks ("distributed", "distributed-light")
    dist = [r for r in st.rounds if r.mode.startswith("distributed")]
    per_round = [r.wall_seconds - sum(r.phase_seconds.values()) for r in dist]
    modes = {}
    for r in st.rounds:
        modes[r.mode] = modes.get(r.mode, 0) + 1
    d["n_rounds"] = st.n_rounds
    d["round_modes"] = modes
    d["distributed_rounds"] = len(dist)
    d["dask_overhead_per_round"] = per_round
    d["dask_overhead_mean"] = (sum(per_round) / len(per_round)) if per_round else None
    d["dask_overhead_median"] = statistics.median(per_round) if per_round else None
    # round 0's wall also holds the chunks' preparation (no phase of its own)
    d["dask_overhead_first"] = per_round[0] if per_round else None
    rest = per_round[1:]
    d["dask_overhead_mean_after_first"] = (sum(rest) / len(rest)) if rest else None
    d["distributed_round_wall_mean"] = (sum(r.wall_seconds for r in dist) / len(dist)) if dist else None
    d["tasks_per_round"] = [r.tasks for r in dist]
    return d


def collect(runs, warm):
    """Every run's times, their min, median and best, and the answers the runs agree on."""
    keys = list(runs[0]["times"])
    out = {"runs": [r["times"] for r in runs],
           "warmup": [r["times"] for r in warm],
           "min": {k: min(r["times"][k] for r in runs) for k in keys},
           "median": {k: statistics.median(r["times"][k] for r in runs) for k in keys},
           "best": dict(min(runs, key=lambda r: r["times"]["total"])["times"])}
    for key in ("total_weight", "forest_edges", "components", "edge_ids_crc32"):
        vals = [r[key] for r in warm + runs if key in r]
        if vals:
            out[key] = vals[0]
            if any(v != vals[0] for v in vals):
                out.setdefault("inconsistent", []).append(key)
    return out


def run_once(fn, ctx):
    """One run of ``fn``; its record with the process CPU time of the run added."""
    c0 = cpu_seconds()
    rec = fn(ctx)
    # process CPU time (all threads, Dask's included) over the run: with 2
    # cores free, a parallel method shows up to 2x its wall time
    rec["times"]["cpu"] = cpu_seconds() - c0
    return rec


def finish(runs, warm):
    """A method's result: :func:`collect`, with the best run's statistics and byte counts."""
    out = collect(runs, warm)
    best = min(runs, key=lambda r: r["times"]["total"])
    if "stats" in best:
        out["stats"] = summarise_stats(best["stats"])
    for key in ("h2d_bytes", "d2h_bytes", "backend", "returned_rows"):  # the best run's
        if key in best:
            out[key] = best[key]
    return out


def run_interleaved(fns, ctx, repeat, warmup, log):
    """Round-robin over methods (``{name: fn}``): run i of every method before run i + 1 of any.

    On a shared machine, load from other processes then hits every method
    alike instead of whichever happened to run during it.  A method that
    raises is recorded as ``{"error": ...}`` and the others go on.
    """
    names = list(fns)
    runs = {m: [] for m in names}
    warm = {m: [] for m in names}
    errors = {}
    started = {m: None for m in names}
    for i in range(warmup + repeat):
        for m in names:
            if m in errors:
                continue
            t0 = time.perf_counter()
            try:
                rec = run_once(fns[m], ctx)
            except Exception as exc:  # recorded; the other methods still run
                errors[m] = f"{type(exc).__name__}: {exc}"
                log(f"   {m}: FAILED {errors[m]}")
                continue
            finally:
                gc.collect()
            started[m] = (started[m] or 0.0) + time.perf_counter() - t0
            (warm[m] if i < warmup else runs[m]).append(rec)
    out = {}
    for m in names:
        if m in errors:
            out[m] = {"error": errors[m]}
        else:
            out[m] = finish(runs[m], warm[m])
        out[m]["wall_seconds"] = started[m] or 0.0
    return out


def run_sequential(fn, ctx, repeat, warmup):
    """A method's ``warmup + repeat`` runs one after the other; its result (:func:`finish`)."""
    runs, warm = [], []
    t0 = time.perf_counter()
    for i in range(warmup + repeat):
        rec = run_once(fn, ctx)
        (warm if i < warmup else runs).append(rec)
        gc.collect()
    out = finish(runs, warm)
    out["wall_seconds"] = time.perf_counter() - t0
    return out


def done(res):
    """A method's result holds timings (it ran; not failed, not unavailable)."""
    return bool(res) and "error" not in res and "unavailable" not in res

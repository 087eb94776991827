"""Run a benchmark config: every method on every graph, checked for agreement, reported.

For every graph of the config the edge arrays (int64 ``src, dst, weight``) are
materialised once with ``Graph.to_arrays()``; then each method runs on the same
arrays, ``warmup`` untimed runs and ``repeat`` timed runs (min and median
reported).  By default (``schedule: interleaved``) the methods of
:data:`benchmarks.methods.ONCE` go round-robin (run i of each before run
i + 1 of any), so load from other processes on a shared machine hits all of
them alike; rustworkx, whose graph is expensive to build, runs after them,
then the GPU methods (:mod:`benchmarks.gpu`).  What one method builds is
freed before the next (``del`` + ``gc.collect()``).

Every method must find the same total weight on a graph (and the engine, the
distributed engine and the kernel loop the same edge ids); a disagreement is
recorded, and :func:`run_bench` raises :class:`BenchMismatch` after writing
the reports.
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import time

import numpy as np

from benchmarks import gpu
from benchmarks.config import GPU_METHODS, validate_config
from benchmarks.methods import ONCE, cold_method, engine_settings, rustworkx_method
from benchmarks.report import format_report, summarise
from benchmarks.timing import done, run_interleaved, run_sequential
from mst_dist.config import ConfigError
from mst_dist.environment import gpu_info, loadavg, machine_info, versions

__all__ = ["BenchMismatch", "run_bench"]


class BenchMismatch(AssertionError):
    """Methods disagreed on a graph's total weight (or the forest's edges)."""


def _peak_rss():
    """The process's peak resident memory in bytes (``None`` where unknown)."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # KiB on Linux
    except Exception:  # pragma: no cover - not Unix
        return None


def _rss():
    """The process's resident memory now, in bytes (``None`` without psutil)."""
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # pragma: no cover
        return None


def _versions(gpu):
    """:func:`mst_dist.environment.versions` with Numba's threading layer as the engine sets it."""
    from mst_dist.kernels import cpu  # noqa: F401  (sets the threading layer the engine uses)

    return versions(gpu=gpu)


def _time_cluster():
    """Start and stop of the embedded default cluster (what a call with no client pays)."""
    from mst_dist.deploy.local import embedded

    t0 = time.perf_counter()
    cm = embedded()
    client = cm.__enter__()
    t1 = time.perf_counter()
    info = client.scheduler_info()
    workers = info.get("workers", {})
    cm.__exit__(None, None, None)
    t2 = time.perf_counter()
    return {"start_seconds": t1 - t0, "stop_seconds": t2 - t1, "total_seconds": t2 - t0,
            "workers": len(workers),
            "threads": sum(w.get("nthreads", 0) for w in workers.values())}


def _check_agreement(gres):
    """Compare the methods of one graph; returns a list of problems (empty: all agree)."""
    problems = []
    meths = gres["methods"]
    ran = {k: v for k, v in meths.items() if done(v)}
    if "cold" in ran:  # its fresh scipy and CLI processes answer too
        ran.update({f"cold-{k}": v for k, v in ran["cold"].items() if k in ("scipy", "cli") and done(v)})
    for k, v in ran.items():
        if v.get("inconsistent"):
            problems.append(f"{k}: runs disagree on {', '.join(v['inconsistent'])}")
    weights = {k: v.get("total_weight") for k, v in ran.items()}
    ref = next(iter(weights.values()), None)
    if any(x != ref for x in weights.values()):
        problems.append("total weights differ: " + ", ".join(f"{k}={x}" for k, x in weights.items()))
    edges = {k: v.get("forest_edges") for k, v in ran.items()}
    ref_e = next(iter(edges.values()), None)
    if any(x != ref_e for x in edges.values()):
        problems.append("forest edge counts differ: " + ", ".join(f"{k}={x}" for k, x in edges.items()))
    crcs = {k: v["edge_ids_crc32"] for k, v in ran.items() if "edge_ids_crc32" in v}
    if len(set(crcs.values())) > 1:
        problems.append("edge ids differ: " + ", ".join(f"{k}={x:08x}" for k, x in crcs.items()))
    for k, v in meths.items():
        if "error" in v:
            problems.append(f"{k} failed: {v['error']}")
    gres["total_weight"] = ref
    gres["forest_edges"] = ref_e
    gres["agree"] = not problems
    gres["problems"] = problems
    return problems


def select_graphs(graphs, only):
    """The graphs named by ``--only`` (a comma-separated string or a list), in config order."""
    wanted = [s.strip() for s in (only.split(",") if isinstance(only, str) else only) if s.strip()]
    unknown = [s for s in wanted if s not in {g["name"] for g in graphs}]
    if unknown:
        raise ConfigError(f"--only: no graph named {', '.join(unknown)}; the config has "
                          f"{', '.join(g['name'] for g in graphs)}", key="only")
    return [g for g in graphs if g["name"] in wanted]


def _with_overrides(cfg, repeat, only, methods):
    """The validated config with the command line's ``--repeat``, ``--only`` and ``--methods``."""
    if repeat is not None:
        cfg["repeat"] = max(1, int(repeat))
    if methods is not None:
        cfg = validate_config({**cfg, "methods": list(methods)})
    if only:
        cfg["graphs"] = select_graphs(cfg["graphs"], only)
    return cfg


def _graph_arrays(gcfg, log):
    """Generate a config's graph: its report entry (no methods yet) and its ``(src, dst, w, n)``."""
    from mst_dist.generators import generate

    gen = dict(gcfg["generate"])
    kind = gen.pop("kind")
    seed = gen.pop("seed", 0)
    log(f"== {gcfg['name']}: generate {kind} {gen} seed={seed}")
    t0 = time.perf_counter()
    graph = generate(kind, seed=seed, **gen)
    src, dst, w = graph.to_arrays()
    n = int(graph.n_vertices)
    del graph
    gres = {"name": gcfg["name"], "kind": kind, "params": gen, "seed": seed,
            "n": n, "m": int(src.shape[0]), "generate_seconds": time.perf_counter() - t0,
            "loadavg_start": loadavg(), "methods": {}}
    log(f"   n={n:,} m={src.shape[0]:,} ({gres['generate_seconds']:.1f} s)")
    return gres, (np.ascontiguousarray(src, np.int64), np.ascontiguousarray(dst, np.int64),
                  np.ascontiguousarray(w), n)


def _run_methods(cfg, ctx, unavailable, results, log):
    """Every method of the config on the graph in ``ctx``, in order, into ``results``."""
    simple = {m: ONCE[m] for m in cfg["methods"] if m in ONCE}
    if cfg["schedule"] == "interleaved" and simple:
        log(f"   {', '.join(simple)}: interleaved, {cfg['warmup']} warm-up + {cfg['repeat']} runs")
        interleaved = run_interleaved(simple, ctx, cfg["repeat"], cfg["warmup"], log)
    else:
        interleaved = {}
    for meth in cfg["methods"]:
        gc.collect()
        if meth in unavailable:
            res = {"unavailable": unavailable[meth]}
        elif meth in interleaved:
            res = interleaved[meth]
        else:
            t0 = time.perf_counter()
            try:
                if meth == "rustworkx":
                    res = rustworkx_method(ctx, cfg["repeat"], cfg["warmup"], log)
                elif meth == "cold":
                    res = cold_method(ctx, cfg["repeat"], log)
                elif meth in GPU_METHODS:
                    res = gpu.run_gpu(meth, ctx, cfg["repeat"], cfg["warmup"], log)
                else:
                    res = run_sequential(ONCE[meth], ctx, cfg["repeat"], cfg["warmup"])
            except Exception as exc:  # recorded; the other methods still run
                res = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"   {meth}: FAILED {res['error']}")
            res["wall_seconds"] = time.perf_counter() - t0
            res["rss_after_bytes"] = _rss()
        results[meth] = res
        gc.collect()
        if done(res):
            key = "call" if meth == "rustworkx" else "total"
            log(f"   {meth:<19} min {res['min'][key]:8.3f} s  median "
                f"{res['median'][key]:8.3f} s  weight {res.get('total_weight')}"
                + (" (call only)" if key == "call" else ""))
    return results


def log_to_stderr(msg):
    """The benchmarks' default progress log: one line on stderr."""
    print(msg, file=sys.stderr, flush=True)


def run_bench(config, out_dir, *, repeat=None, only=None, methods=None, log=None,
              strict=True) -> dict:
    """Run a benchmark config; write ``bench.json`` and ``bench.md`` in ``out_dir``.

    Parameters
    ----------
    config : dict
        A benchmark config (as YAML-loaded; validated here).
    out_dir : path
        Created if needed.
    repeat : int, optional
        Timed runs per method (overrides the config).
    only : str or list of str, optional
        Graph names to run (comma-separated string or list).
    methods : list of str, optional
        Methods to run (overrides the config).
    log : callable, optional
        Progress lines (default: printed to stderr).
    strict : bool
        Raise :class:`BenchMismatch` (after writing the reports) when methods
        disagree on a graph.

    Returns
    -------
    dict
        What ``bench.json`` holds, plus ``"markdown"``: the report's text.
    """
    cfg = _with_overrides(validate_config(config), repeat, only, methods)
    log = log or log_to_stderr

    os.makedirs(out_dir, exist_ok=True)
    gpu_methods = [m for m in cfg["methods"] if m in GPU_METHODS]
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(sys.argv),
        "machine": machine_info(),
        "versions": _versions(gpu=bool(gpu_methods)),
        "config": cfg,
        "engine_settings": dict(zip(("light_factor", "min_degree"), engine_settings())),
        "cluster": None,
        "graphs": [],
    }
    uses_engine = any(m in ("engine", "engine-distributed") for m in cfg["methods"])
    # GPU methods that cannot run here are recorded with the reason, not run
    gpu_xp, unavailable = {}, {}
    for meth in gpu_methods:
        xp, reason = gpu.gpu_method_status(meth)
        if xp is None:
            unavailable[meth] = reason
            log(f"{meth}: unavailable: {reason}")
        else:
            gpu_xp[meth] = xp
    if gpu_methods:
        report["machine"]["gpu"] = gpu_info()
        report["unavailable"] = unavailable
        report["gpu_cluster"] = None

    def write():
        report["machine"]["loadavg_end"] = loadavg()
        report["machine"]["peak_rss_bytes"] = _peak_rss()
        summary = summarise(report)
        report["summary"] = summary
        md = format_report(report)
        with open(os.path.join(out_dir, "bench.json"), "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, default=_json_default)
        with open(os.path.join(out_dir, "bench.md"), "w", encoding="utf-8") as f:
            f.write(md)
        return md

    if uses_engine:
        report["cluster"] = _time_cluster()
        log(f"embedded cluster start {report['cluster']['start_seconds']:.2f} s, "
            f"stop {report['cluster']['stop_seconds']:.2f} s")
    stack = contextlib.ExitStack()
    with stack:
        client = None
        if uses_engine:
            from mst_dist.deploy.local import embedded

            client = stack.enter_context(embedded())
        gpu_client = None
        if "engine-gpu" in gpu_xp:
            try:
                gpu_client = gpu.start_gpu_cluster(stack, report)
                log(f"one-GPU-worker cluster start {report['gpu_cluster']['start_seconds']:.2f} s")
            except Exception as exc:  # recorded; the other methods still run
                unavailable["engine-gpu"] = ("the one-GPU-worker cluster did not start "
                                             f"({type(exc).__name__}: {exc})")
                log(f"engine-gpu: unavailable: {unavailable['engine-gpu']}")
        ctx = {"client": client, "gpu_client": gpu_client, "gpu_xp": gpu_xp, "config": cfg,
               "engine_settings": engine_settings()}
        for gcfg in cfg["graphs"]:
            gres, ctx["arrays"] = _graph_arrays(gcfg, log)
            ctx["generate"] = dict(gcfg["generate"])  # the cold method's CLI runs generate it themselves
            _run_methods(cfg, ctx, unavailable, gres["methods"], log)
            ctx.pop("arrays")
            ctx.pop("generate")
            ctx.pop("device", None)
            gc.collect()
            for xp in set(gpu_xp.values()):
                gpu.free_device_memory(xp)
            gres["loadavg_end"] = loadavg()
            problems = _check_agreement(gres)
            for p in problems:
                log(f"   MISMATCH {gcfg['name']}: {p}")
            report["graphs"].append(gres)
            write()  # partial results survive a crash
    md = write()
    print(md)
    report["markdown"] = md
    bad = [g["name"] for g in report["graphs"] if not g["agree"]]
    if bad and strict:
        raise BenchMismatch(f"methods disagree on {', '.join(bad)}: " + "; ".join(
            p for g in report["graphs"] for p in g["problems"]))
    return report


def _json_default(o):
    """JSON for NumPy scalars and arrays; anything else as its ``str``."""
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)

"""Side-by-side benchmark: the engine against scipy and rustworkx, in one process.

    mst-dist bench configs/bench-cpu.yaml [--out DIR] [--repeat N] [--only NAME]
    python -m mst_dist.bench configs/bench-cpu.yaml --out bench-out

For every graph of the config the edge arrays (int64 ``src, dst, weight``) are
materialised once with ``Graph.to_arrays()``; then each method runs on the same
arrays, one warm-up run and ``repeat`` timed runs (min and median reported).
By default (``schedule: interleaved``) the engine, engine-distributed,
kernels-loop and scipy runs go round-robin (run i of each before run i + 1 of
any), so load from other processes on a shared machine hits all of them alike;
rustworkx, whose graph is expensive to build, runs after them.
What is timed is "from arrays in memory to the result in hand":

``engine``
    ``Graph.from_arrays`` (validation included) and ``minimum_spanning_forest``
    on the embedded default cluster (``mst_dist.cluster.embedded()``), started
    once for the whole benchmark; its start and stop are timed once apart.
``engine-distributed``
    The same with ``local_finish=0``: every round as Dask tasks, to measure the
    Dask overhead per round (round wall time minus kernel time).
``kernels-loop``
    The engine's own kernels chained in a plain loop, no Dask:
    ``prepare_many`` -> ``solve_local`` -> ``compose_labels``, sorted edge ids,
    rows gathered, total weight.  The bar for the Dask driver's overhead.
``scipy``
    CSR built with scipy's own linear ``coo_tocsr`` kernel *without* summing
    duplicate entries (``csr_matrix((w, (i, j)))`` would add up parallel edges
    and give a wrong forest), int32 indices, float64 data; then
    ``scipy.sparse.csgraph.minimum_spanning_tree``.  Build and call are timed
    apart and together.
``rustworkx``
    ``PyGraph(multigraph=True)``, ``add_nodes_from``, ``extend_from_weighted_edge_list``
    from Python lists of tuples in chunks; then ``minimum_spanning_edges``.  The
    build (slow: Python objects) is timed ``rustworkx.build_repeat`` times
    (default once); the call after a warm-up, ``repeat`` times.

Every method must find the same total weight on a graph (and the engine, the
distributed engine and the kernel loop the same edge ids); a disagreement is
recorded, and :func:`run_bench` raises :class:`BenchMismatch` after writing
the reports.  Methods run one after the other and what one builds is freed
before the next (``del`` + ``gc.collect()``).

Outputs in ``out_dir``: ``bench.json`` (machine, versions, every run's times,
the engine's per-round statistics) and ``bench.md`` (the table, a geometric
mean row and a pass/fail line per target), the table also printed.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
import zlib

import numpy as np

__all__ = ["METHODS", "DEFAULT_TARGETS", "BenchMismatch", "load_config", "validate_config",
           "run_bench", "format_report", "main", "cli"]

#: Methods in the order they run on each graph.
METHODS = ("engine", "engine-distributed", "kernels-loop", "kernels-loop-dedupe", "scipy", "rustworkx")

#: The issue's targets (engine on the embedded default, min times).
DEFAULT_TARGETS = {
    "scipy_geomean": 8.0,     # engine at least 8x faster than scipy build+call, geometric mean
    "scipy_each": 5.0,        # ... and at least 5x on each graph
    "rustworkx_call_each": 1.0,  # faster than rustworkx's call alone on each graph
    "kernels_ratio_max": 1.5,    # engine within 1.5x of the kernels chained without Dask
}

_RX_CHUNK = 2_000_000


class BenchMismatch(AssertionError):
    """Methods disagreed on a graph's total weight (or the forest's edges)."""


def _err(msg, key=None):
    try:
        from .config import ConfigError

        return ConfigError(msg, key=key)
    except Exception:  # pragma: no cover - config module unavailable
        return ValueError(msg)


# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------

def load_config(path):
    """Read a benchmark YAML file and validate it (see :func:`validate_config`)."""
    import yaml

    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    return validate_config(cfg, source=str(path))


def validate_config(cfg, source="config"):
    """Check a benchmark config and fill in defaults; returns a new dict.

    Keys: ``graphs`` (list of ``{name, generate: {kind, seed, ...params}}``),
    ``methods`` (subset of :data:`METHODS`), ``repeat`` (default 3), ``warmup``
    (default 1), ``rustworkx: {chunk, build_repeat}``, ``targets`` (overrides
    of :data:`DEFAULT_TARGETS`).
    """
    if not isinstance(cfg, dict):
        raise _err(f"{source}: a benchmark config must be a mapping with a 'graphs' list")
    known = {"graphs", "methods", "repeat", "warmup", "schedule", "rustworkx", "targets", "description"}
    extra = sorted(set(cfg) - known)
    if extra:
        raise _err(f"{source}: unknown key(s) {', '.join(extra)}; allowed: {', '.join(sorted(known))}",
                   key=extra[0])
    out = {"description": cfg.get("description", "")}
    graphs = cfg.get("graphs")
    if not isinstance(graphs, list) or not graphs:
        raise _err(f"{source}: 'graphs' must be a non-empty list", key="graphs")
    names = set()
    out["graphs"] = []
    for i, g in enumerate(graphs):
        where = f"{source}: graphs[{i}]"
        if not isinstance(g, dict) or "name" not in g or "generate" not in g:
            raise _err(f"{where} must be a mapping with 'name' and 'generate'", key=f"graphs[{i}]")
        name = str(g["name"])
        if name in names:
            raise _err(f"{where}: duplicate graph name {name!r}", key=f"graphs[{i}].name")
        names.add(name)
        gen = g["generate"]
        if not isinstance(gen, dict) or "kind" not in gen:
            raise _err(f"{where}.generate must be a mapping with 'kind'", key=f"graphs[{i}].generate")
        out["graphs"].append({"name": name, "generate": dict(gen)})
    methods = cfg.get("methods", list(METHODS))
    if isinstance(methods, str):
        methods = [methods]
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise _err(f"{source}: unknown method(s) {', '.join(map(str, bad))}; choose from "
                   f"{', '.join(METHODS)}", key="methods")
    out["methods"] = [m for m in METHODS if m in methods]
    for key, default, lo in (("repeat", 3, 1), ("warmup", 1, 0)):
        v = cfg.get(key, default)
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise _err(f"{source}: '{key}' must be an integer >= {lo}, got {v!r}", key=key)
        out[key] = v
    sched = cfg.get("schedule", "interleaved")
    if sched not in ("interleaved", "sequential"):
        raise _err(f"{source}: 'schedule' must be 'interleaved' or 'sequential', got {sched!r}",
                   key="schedule")
    out["schedule"] = sched
    rx = cfg.get("rustworkx") or {}
    if not isinstance(rx, dict) or set(rx) - {"chunk", "build_repeat"}:
        raise _err(f"{source}: 'rustworkx' takes only 'chunk' and 'build_repeat'", key="rustworkx")
    out["rustworkx"] = {"chunk": int(rx.get("chunk", _RX_CHUNK)),
                        "build_repeat": int(rx.get("build_repeat", 1))}
    if out["rustworkx"]["chunk"] < 1 or out["rustworkx"]["build_repeat"] < 1:
        raise _err(f"{source}: rustworkx.chunk and rustworkx.build_repeat must be >= 1", key="rustworkx")
    tg = cfg.get("targets") or {}
    if not isinstance(tg, dict) or set(tg) - set(DEFAULT_TARGETS):
        raise _err(f"{source}: 'targets' takes {', '.join(DEFAULT_TARGETS)}", key="targets")
    out["targets"] = {**DEFAULT_TARGETS, **{k: float(v) for k, v in tg.items()}}
    return out


# ---------------------------------------------------------------------------
# machine and versions
# ---------------------------------------------------------------------------

def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info():
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "hostname": platform.node(),
    }
    try:
        info["cpu_affinity"] = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        pass
    try:
        import psutil

        vm = psutil.virtual_memory()
        info["memory_total_bytes"] = int(vm.total)
        info["memory_available_bytes"] = int(vm.available)
    except Exception:  # pragma: no cover - psutil missing
        pass
    try:
        info["loadavg_start"] = _loadavg()
    except OSError:  # pragma: no cover
        pass
    return info


def _git_state():
    """The commit of the checkout the package was imported from (and whether it had edits)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return {}
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return {"git_commit": head.stdout.strip(), "git_dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def versions():
    out = {}
    for mod in ("mst_dist", "numpy", "numba", "dask", "distributed", "scipy", "rustworkx"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "?")
        except Exception:  # pragma: no cover - optional package missing
            out[mod] = None
    out.update(_git_state())
    try:
        import numba

        from .kernels import cpu  # noqa: F401  (sets the threading layer the engine uses)

        out["numba_threads"] = numba.get_num_threads()
        out["numba_threading_layer"] = numba.config.THREADING_LAYER
    except Exception:  # pragma: no cover
        pass
    return out


# ---------------------------------------------------------------------------
# the methods: each returns {"times": {...}, "total_weight", "forest_edges", ...}
# ---------------------------------------------------------------------------

def _engine_settings():
    try:
        import dask.config

        from . import config  # noqa: F401  (loads the packaged defaults)

        return (dask.config.get("mst.filter.light-factor", 1.5),
                dask.config.get("mst.filter.min-degree", 3.0))
    except Exception:  # pragma: no cover
        return 1.5, 3.0


def _crc(ids):
    return zlib.crc32(np.ascontiguousarray(ids, dtype=np.int64).tobytes())


def _engine_once(ctx, local_finish=None):
    from .api import minimum_spanning_forest
    from .graph import Graph

    src, dst, w, n = ctx["arrays"]
    t0 = time.perf_counter()
    g = Graph.from_arrays(src, dst, w, n_vertices=n)
    t1 = time.perf_counter()
    res = minimum_spanning_forest(g, ctx["client"], local_finish=local_finish)
    t2 = time.perf_counter()
    out = {"times": {"total": t2 - t1 + (t1 - t0), "validate": t1 - t0, "msf": t2 - t1},
           "total_weight": res.total_weight, "forest_edges": res.n_forest_edges,
           "components": res.n_components, "edge_ids_crc32": _crc(res.edge_ids),
           "stats": res.stats}
    del res, g
    return out


def _summarise_stats(st):
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


def _kernels_once(ctx, dedupe=0.0):
    from .kernels import cpu
    from .result import exact_total

    src, dst, w, n = ctx["arrays"]
    lf, md = ctx["engine_settings"]
    t0 = time.perf_counter()
    u, v, k, e = cpu.prepare_many([(src, dst, w)], [0], n)
    t1 = time.perf_counter()
    M, chosen, _ = cpu.solve_local(u, v, k, e, n, light_factor=lf, min_degree=md, dedupe=dedupe)
    del u, v, k, e
    t2 = time.perf_counter()
    labels, n_comp = cpu.compose_labels([M], n)
    ids = cpu.sorted_ids([chosen])  # the same finishing helpers as the engine's
    rs, rd, rw = cpu.take_rows(src, dst, w, ids)
    total = exact_total(rw)
    t3 = time.perf_counter()
    out = {"times": {"total": t3 - t0, "prepare": t1 - t0, "solve": t2 - t1, "finish": t3 - t2},
           "total_weight": total, "forest_edges": int(ids.shape[0]), "components": int(n_comp),
           "edge_ids_crc32": _crc(ids)}
    del M, chosen, labels, ids, rs, rd, rw
    return out


def _scipy_build(src, dst, w, n):
    import scipy.sparse as sp
    from scipy.sparse import _sparsetools

    m = src.shape[0]
    if n >= 2**31 or m >= 2**31:
        raise ValueError("scipy method: int32 CSR needs n and m below 2**31")
    indptr = np.empty(n + 1, np.int32)
    indices = np.empty(m, np.int32)
    data = np.empty(m, np.float64)
    # scipy's own linear COO->CSR kernel, without sum_duplicates (which would
    # add parallel edges' weights together)
    _sparsetools.coo_tocsr(n, n, m, src.astype(np.int32), dst.astype(np.int32),
                           w.astype(np.float64), indptr, indices, data)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def _scipy_once(ctx):
    from scipy.sparse.csgraph import minimum_spanning_tree

    src, dst, w, n = ctx["arrays"]
    t0 = time.perf_counter()
    A = _scipy_build(src, dst, w, n)
    t1 = time.perf_counter()
    T = minimum_spanning_tree(A)
    t2 = time.perf_counter()
    total = T.sum()
    out = {"times": {"total": t2 - t0, "build": t1 - t0, "call": t2 - t1},
           "total_weight": _as_exact(total, w), "forest_edges": int(T.nnz)}
    del A, T
    return out


def _as_exact(x, w):
    if np.asarray(w).dtype.kind in "iub":
        return int(round(float(x)))
    return float(x)


def _rustworkx_build(src, dst, w, n, chunk):
    import rustworkx as rx

    G = rx.PyGraph(multigraph=True)
    G.add_nodes_from(range(n))
    m = src.shape[0]
    for a in range(0, m, chunk):
        b = min(m, a + chunk)
        G.extend_from_weighted_edge_list(list(zip(src[a:b].tolist(), dst[a:b].tolist(),
                                                  w[a:b].tolist())))
    return G


def _rustworkx_method(ctx, repeat, warmup, log):
    import rustworkx as rx

    src, dst, w, n = ctx["arrays"]
    opts = ctx["config"]["rustworkx"]
    builds = []
    G = None
    for _ in range(opts["build_repeat"]):
        G = None
        gc.collect()
        t0 = time.perf_counter()
        G = _rustworkx_build(src, dst, w, n, opts["chunk"])
        builds.append(time.perf_counter() - t0)
    build = min(builds)
    log(f"    rustworkx build {build:.2f} s")
    runs, warm = [], []
    for i in range(warmup + repeat):
        c0 = _cpu_seconds()
        t0 = time.perf_counter()
        edges = rx.minimum_spanning_edges(G, weight_fn=float)
        dt = time.perf_counter() - t0
        cpu_dt = _cpu_seconds() - c0
        total = sum(e[2] for e in edges)
        rec = {"times": {"total": build + dt, "build": build, "call": dt, "cpu": cpu_dt},
               "total_weight": _as_exact(total, w) if isinstance(total, float) else total,
               "forest_edges": len(edges)}
        del edges
        (warm if i < warmup else runs).append(rec)
    del G
    gc.collect()
    out = _collect(runs, warm)
    out["build_runs"] = builds
    return out


def _collect(runs, warm):
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


def _run_once(fn, ctx):
    c0 = _cpu_seconds()
    rec = fn(ctx)
    # process CPU time (all threads, Dask's included) over the run: with 2
    # cores free, a parallel method shows up to 2x its wall time
    rec["times"]["cpu"] = _cpu_seconds() - c0
    return rec


def _finish_simple(runs, warm):
    out = _collect(runs, warm)
    if "stats" in runs[0]:
        best = min(runs, key=lambda r: r["times"]["total"])
        out["stats"] = _summarise_stats(best["stats"])
    return out


#: One run of each method that needs nothing built beforehand.
_ONCE = {
    "engine": lambda ctx: _engine_once(ctx),
    "engine-distributed": lambda ctx: _engine_once(ctx, local_finish=0),
    "kernels-loop": _kernels_once,
    # the same, keeping only the lightest of parallel edges after each relabel
    # (measures whether that filter-edges option pays; configs/bench-dedupe.yaml)
    "kernels-loop-dedupe": lambda ctx: _kernels_once(ctx, dedupe=2.0),
    "scipy": _scipy_once,
}


def _run_interleaved(names, ctx, repeat, warmup, log):
    """Round-robin over methods: run i of every method before run i + 1 of any.

    On a shared machine, load from other processes then hits every method
    alike instead of whichever happened to run during it.
    """
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
                rec = _run_once(_ONCE[m], ctx)
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
            out[m] = _finish_simple(runs[m], warm[m])
        out[m]["wall_seconds"] = started[m] or 0.0
    return out


def _run_sequential(name, ctx, repeat, warmup, log):
    runs, warm = [], []
    t0 = time.perf_counter()
    for i in range(warmup + repeat):
        rec = _run_once(_ONCE[name], ctx)
        (warm if i < warmup else runs).append(rec)
        gc.collect()
    out = _finish_simple(runs, warm)
    out["wall_seconds"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------

def _cpu_seconds():
    t = os.times()
    return t.user + t.system


def _peak_rss():
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # KiB on Linux
    except Exception:  # pragma: no cover - not Unix
        return None


def _rss():
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # pragma: no cover
        return None


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return None


def _time_cluster():
    """Start and stop of the embedded default cluster (what a call with no client pays)."""
    from .cluster import embedded

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
    done = {k: v for k, v in meths.items() if "error" not in v}
    for k, v in done.items():
        if v.get("inconsistent"):
            problems.append(f"{k}: runs disagree on {', '.join(v['inconsistent'])}")
    weights = {k: v.get("total_weight") for k, v in done.items()}
    ref = next(iter(weights.values()), None)
    if any(x != ref for x in weights.values()):
        problems.append("total weights differ: " + ", ".join(f"{k}={x}" for k, x in weights.items()))
    edges = {k: v.get("forest_edges") for k, v in done.items()}
    ref_e = next(iter(edges.values()), None)
    if any(x != ref_e for x in edges.values()):
        problems.append("forest edge counts differ: " + ", ".join(f"{k}={x}" for k, x in edges.items()))
    crcs = {k: v["edge_ids_crc32"] for k, v in done.items() if "edge_ids_crc32" in v}
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
    from .generators import generate

    cfg = validate_config(config)
    if repeat is not None:
        cfg["repeat"] = max(1, int(repeat))
    if methods is not None:
        cfg = validate_config({**{k: v for k, v in cfg.items()}, "methods": list(methods)})
    if only:
        wanted = [s.strip() for s in (only.split(",") if isinstance(only, str) else only) if s.strip()]
        unknown = [s for s in wanted if s not in {g["name"] for g in cfg["graphs"]}]
        if unknown:
            raise _err(f"--only: no graph named {', '.join(unknown)}; the config has "
                       f"{', '.join(g['name'] for g in cfg['graphs'])}", key="only")
        cfg["graphs"] = [g for g in cfg["graphs"] if g["name"] in wanted]
    if log is None:
        def log(msg):
            print(msg, file=sys.stderr, flush=True)

    os.makedirs(out_dir, exist_ok=True)
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(sys.argv),
        "machine": machine_info(),
        "versions": versions(),
        "config": cfg,
        "engine_settings": dict(zip(("light_factor", "min_degree"), _engine_settings())),
        "cluster": None,
        "graphs": [],
    }
    uses_engine = any(m.startswith("engine") for m in cfg["methods"])

    def write():
        report["machine"]["loadavg_end"] = _loadavg()
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
            from .cluster import embedded

            client = stack.enter_context(embedded())
        ctx = {"client": client, "config": cfg, "engine_settings": _engine_settings()}
        for gcfg in cfg["graphs"]:
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
                    "loadavg_start": _loadavg(), "methods": {}}
            log(f"   n={n:,} m={src.shape[0]:,} ({gres['generate_seconds']:.1f} s)")
            ctx["arrays"] = (np.ascontiguousarray(src, np.int64), np.ascontiguousarray(dst, np.int64),
                             np.ascontiguousarray(w), n)
            del src, dst, w
            simple = [m for m in cfg["methods"] if m in _ONCE]
            if cfg["schedule"] == "interleaved" and simple:
                log(f"   {', '.join(simple)}: interleaved, {cfg['warmup']} warm-up + {cfg['repeat']} runs")
                results = _run_interleaved(simple, ctx, cfg["repeat"], cfg["warmup"], log)
            else:
                results = {}
            for meth in cfg["methods"]:
                gc.collect()
                if meth not in results:
                    t0 = time.perf_counter()
                    try:
                        if meth == "rustworkx":
                            res = _rustworkx_method(ctx, cfg["repeat"], cfg["warmup"], log)
                        else:
                            res = _run_sequential(meth, ctx, cfg["repeat"], cfg["warmup"], log)
                    except Exception as exc:  # recorded; the other methods still run
                        res = {"error": f"{type(exc).__name__}: {exc}"}
                        log(f"   {meth}: FAILED {res['error']}")
                    res["wall_seconds"] = time.perf_counter() - t0
                    res["rss_after_bytes"] = _rss()
                    results[meth] = res
                res = results[meth]
                gres["methods"][meth] = res
                gc.collect()
                if "error" not in res:
                    key = "call" if meth == "rustworkx" else "total"
                    log(f"   {meth:<19} min {res['min'][key]:8.3f} s  median "
                        f"{res['median'][key]:8.3f} s  weight {res.get('total_weight')}"
                        + (" (call only)" if key == "call" else ""))
            ctx.pop("arrays")
            gc.collect()
            gres["loadavg_end"] = _loadavg()
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
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


# ---------------------------------------------------------------------------
# summary and markdown
# ---------------------------------------------------------------------------

def _gmean(xs):
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _get(meths, meth, stat, key):
    m = meths.get(meth)
    if not m or "error" in m:
        return None
    return m[stat].get(key)


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def summarise(report):
    """Per-graph ratios, geometric means and the targets' verdicts (min and median times)."""
    tg = report["config"]["targets"]
    out = {}
    for stat in ("min", "median"):
        rows = []
        for g in report["graphs"]:
            M = g["methods"]
            eng = _get(M, "engine", stat, "total")
            rows.append({
                "graph": g["name"],
                "engine": eng,
                "kernels": _get(M, "kernels-loop", stat, "total"),
                "scipy": _get(M, "scipy", stat, "total"),
                "rx_call": _get(M, "rustworkx", stat, "call"),
                "rx_total": _get(M, "rustworkx", stat, "total"),
                "engine_over_kernels": _ratio(eng, _get(M, "kernels-loop", stat, "total")),
                "speedup_scipy": _ratio(_get(M, "scipy", stat, "total"), eng),
                "speedup_rx_call": _ratio(_get(M, "rustworkx", stat, "call"), eng),
                "speedup_rx_total": _ratio(_get(M, "rustworkx", stat, "total"), eng),
            })
        gm = {k: _gmean([r[k] for r in rows]) for k in rows[0] if k != "graph"} if rows else {}
        targets = []

        def verdict(name, desc, vals, ok):
            vals = [v for v in vals if v is not None]
            targets.append({"target": name, "description": desc,
                            "pass": (bool(vals) and ok(vals)) if vals else None})

        sc = [r["speedup_scipy"] for r in rows]
        verdict("scipy_geomean", f">= {tg['scipy_geomean']:g}x faster than scipy build+call "
                f"(geometric mean): {_fmt_x(gm.get('speedup_scipy'))}",
                [gm.get("speedup_scipy")], lambda v: v[0] >= tg["scipy_geomean"])
        verdict("scipy_each", f">= {tg['scipy_each']:g}x faster than scipy build+call on each graph: "
                f"min {_fmt_x(min([x for x in sc if x is not None], default=None))}",
                sc, lambda v: len(v) == len(rows) and min(v) >= tg["scipy_each"])
        rc = [r["speedup_rx_call"] for r in rows]
        verdict("rustworkx_call_each", f"faster than rustworkx's call alone on each graph: "
                f"min {_fmt_x(min([x for x in rc if x is not None], default=None))}",
                rc, lambda v: len(v) == len(rows) and min(v) > tg["rustworkx_call_each"])
        kr = [r["engine_over_kernels"] for r in rows]
        verdict("kernels_ratio_max", f"within {tg['kernels_ratio_max']:g}x of the kernels in a plain loop "
                f"on each graph: max {_fmt_r(max([x for x in kr if x is not None], default=None))}",
                kr, lambda v: len(v) == len(rows) and max(v) <= tg["kernels_ratio_max"])
        out[stat] = {"rows": rows, "geomean": gm, "targets": targets}
    out["all_agree"] = all(g.get("agree") for g in report["graphs"])
    return out


def _fmt_s(x):
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _fmt_x(x):
    if x is None:
        return "–"
    return f"{x:.2f}×" if x < 2 else (f"{x:.1f}×" if x < 100 else f"{x:.0f}×")


def _fmt_r(x):
    return "–" if x is None else f"{x:.2f}"


def _load1(la):
    return "–" if not la else f"{la[0]:.1f}"


def _fmt_m(m):
    return f"{m / 1e6:.1f}M" if m >= 1e6 else (f"{m / 1e3:.0f}k" if m >= 1e3 else str(m))


def format_report(report):
    """The markdown report: main table, targets, engine details."""
    s = report.get("summary") or summarise(report)
    mi = report["machine"]
    lines = []
    lines.append("# mst-dist benchmark")
    lines.append("")
    mem = mi.get("memory_total_bytes")
    v = report["versions"]
    lines.append(f"Machine: {mi.get('cpu_model')}, {mi.get('cpu_count')} CPUs"
                 f"{f', {mem / 2**30:.1f} GiB' if mem else ''}; {mi.get('platform')}; Python {mi.get('python')}.  ")
    lines.append("Versions: " + ", ".join(f"{k} {v[k]}" for k in
                                          ("mst_dist", "numpy", "numba", "dask", "scipy", "rustworkx")
                                          if v.get(k)) +
                 f"; numba threads {v.get('numba_threads')}"
                 + (f"; commit {v['git_commit'][:10]}{' (with local edits)' if v.get('git_dirty') else ''}"
                    if v.get("git_commit") else "") + ".  ")
    lines.append(f"Runs: {report['config']['warmup']} warm-up + {report['config']['repeat']} timed per method "
                 f"({report['config'].get('schedule', 'sequential')}); "
                 f"load average at start {mi.get('loadavg_start')}, at end {mi.get('loadavg_end')}.")
    cl = report.get("cluster")
    if cl:
        lines.append("")
        lines.append(f"Embedded default cluster ({cl['workers']} worker × {cl['threads']} threads): start "
                     f"{cl['start_seconds']:.2f} s, stop {cl['stop_seconds']:.2f} s, paid once by a call "
                     "without a client and not included in the engine times below.")
    lines.append("")
    lines.append("Times in seconds, from int64 arrays in memory to the result in hand; min of the timed runs "
                 "(median in brackets for the engine).")
    lines.append("")
    hdr = ["graph", "m", "engine s", "kernels-loop s", "engine / kernels", "scipy build+call s",
           "vs scipy", "rustworkx call s", "vs rx call", "rustworkx build+call s",
           "engine-distributed s (Dask rounds, median Dask overhead / round)", "weights agree"]
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 2) + ["---"]) + "|")
    rows = {r["graph"]: r for r in s["min"]["rows"]}
    for g in report["graphs"]:
        r = rows[g["name"]]
        M = g["methods"]
        eng_med = _get(M, "engine", "median", "total")
        dist = M.get("engine-distributed")
        if dist and "error" not in dist:
            st = dist.get("stats", {})
            ov = st.get("dask_overhead_median")
            dcell = (f"{_fmt_s(dist['min']['total'])} ({st.get('distributed_rounds')} rounds, "
                     f"{'–' if ov is None else f'{ov * 1000:.0f} ms'})")
        else:
            dcell = "–" if not dist else "failed"
        lines.append("| " + " | ".join([
            g["name"], _fmt_m(g["m"]),
            f"{_fmt_s(r['engine'])}" + (f" ({_fmt_s(eng_med)})" if eng_med is not None else ""),
            _fmt_s(r["kernels"]), _fmt_r(r["engine_over_kernels"]),
            _fmt_s(r["scipy"]), _fmt_x(r["speedup_scipy"]),
            _fmt_s(r["rx_call"]), _fmt_x(r["speedup_rx_call"]), _fmt_s(r["rx_total"]),
            dcell, "yes" if g.get("agree") else "**NO**",
        ]) + " |")
    gm = s["min"]["geomean"]
    if report["graphs"]:
        lines.append("| " + " | ".join([
            "**geometric mean**", "", _fmt_s(gm.get("engine")), _fmt_s(gm.get("kernels")),
            _fmt_r(gm.get("engine_over_kernels")), _fmt_s(gm.get("scipy")),
            f"**{_fmt_x(gm.get('speedup_scipy'))}**", _fmt_s(gm.get("rx_call")),
            _fmt_x(gm.get("speedup_rx_call")), _fmt_s(gm.get("rx_total")), "", "",
        ]) + " |")
    lines.append("")
    lines.append("## Targets (engine on the embedded default)")
    lines.append("")
    med = {t["target"]: t for t in s["median"]["targets"]}
    for t in s["min"]["targets"]:
        verdict = {True: "PASS", False: "FAIL", None: "n/a"}[t["pass"]]
        mv = {True: "pass", False: "fail", None: "n/a"}[med[t["target"]]["pass"]]
        lines.append(f"- **{verdict}** {t['description']} (min times; with medians: {mv})")
    lines.append(f"- total weights agree on every graph: **{'yes' if s['all_agree'] else 'NO'}**")
    for g in report["graphs"]:
        for p in g.get("problems", []):
            lines.append(f"  - {g['name']}: {p}")
    lines.append("")
    lines.append("## Engine details (best run)")
    lines.append("")
    lines.append("| graph | n | forest edges | components | total weight | validate s | engine rounds (modes) "
                 "| map | merge | contract | filter-edges | setup s | overhead s | kernels-loop prepare / solve / finish s "
                 "| distributed: Dask rounds, mean round wall, Dask overhead mean, round 0, mean of the others "
                 "| engine CPU / wall | load avg |")
    lines.append("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|")
    for g in report["graphs"]:
        M = g["methods"]
        e = M.get("engine")
        if not e or "error" in e:
            continue
        st = e["stats"]
        pt = st.get("phase_totals", {})
        modes = ", ".join(f"{k} {v}" for k, v in st.get("round_modes", {}).items())
        kl = M.get("kernels-loop")
        kcell = "–"
        if kl and "error" not in kl:
            kcell = " / ".join(_fmt_s(kl["min"].get(x)) for x in ("prepare", "solve", "finish"))
        d = M.get("engine-distributed")
        dcell = "–"
        if d and "error" not in d:
            ds = d["stats"]
            def ms(x):
                return "–" if x is None else f"{x * 1000:.0f} ms"

            dcell = (f"{ds.get('distributed_rounds')}, {ms(ds.get('distributed_round_wall_mean'))}, "
                     f"{ms(ds.get('dask_overhead_mean'))}, {ms(ds.get('dask_overhead_first'))}, "
                     f"{ms(ds.get('dask_overhead_mean_after_first'))}")
        lines.append("| " + " | ".join([
            g["name"], f"{g['n']:,}", f"{g.get('forest_edges') or 0:,}", f"{e.get('components', 0):,}",
            f"{g.get('total_weight')}", _fmt_s(e["min"].get("validate")),
            f"{st.get('n_rounds')} ({modes})",
            *(_fmt_s(pt.get(p, 0.0)) for p in ("map", "merge", "contract", "filter-edges")),
            _fmt_s(st.get("setup_seconds")), _fmt_s(st.get("overhead_seconds")), kcell, dcell,
            _fmt_r(_ratio(e.get("best", {}).get("cpu"), e.get("best", {}).get("total"))),
            f"{_load1(g.get('loadavg_start'))} → {_load1(g.get('loadavg_end'))}",
        ]) + " |")
    lines.append("")
    lines.append("Dask overhead of a round: its wall time as the driver saw it minus the kernel time of its "
                 "phases (engine-distributed, `local_finish=0`); round 0 also holds the chunks' preparation.  ")
    lines.append("CPU / wall: process CPU time over wall time of the engine's best run (up to the "
                 "number of cores when nothing else competes).  load avg: 1-minute load average "
                 "when the graph's runs started and ended; above the core count, other processes "
                 "shared the machine and the times are noisy.")
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------

def main(config_path, out_dir="bench-out", repeat=None, only=None, methods=None, strict=True):
    """Load ``config_path`` and run it (see :func:`run_bench`); returns the report dict."""
    cfg = load_config(config_path)
    return run_bench(cfg, out_dir, repeat=repeat, only=only, methods=methods, strict=strict)


def build_parser(parser=None):
    p = parser or argparse.ArgumentParser(
        prog="python -m mst_dist.bench",
        description="Benchmark the engine against scipy and rustworkx on the graphs of a config.")
    p.add_argument("config", help="benchmark YAML (e.g. configs/bench-cpu.yaml)")
    p.add_argument("--out", default="bench-out", help="output folder for bench.json and bench.md")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per method (default: config)")
    p.add_argument("--only", default=None, help="comma-separated graph names to run")
    p.add_argument("--methods", default=None,
                   help=f"comma-separated subset of: {', '.join(METHODS)}")
    p.add_argument("--no-strict", action="store_true",
                   help="exit 0 even when methods disagree on a total weight")
    return p


def cli(argv=None):
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


if __name__ == "__main__":
    sys.exit(cli())

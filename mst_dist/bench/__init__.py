"""Side-by-side benchmark: the engine against scipy, rustworkx and cuGraph, in one process.

    mst-dist bench configs/bench-cpu.yaml [--out DIR] [--repeat N] [--only NAME]
    mst-dist bench configs/bench-gpu.yaml --out bench-gpu-out     # on a CUDA machine
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
    on the embedded default cluster (``mst_dist.deploy.local.embedded()``), started
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

The GPU methods (:data:`GPU_METHODS`) need CuPy and a CUDA device; without
them (or without pylibcugraph) they are recorded as ``{"unavailable":
reason}``, listed in the report and left out of the targets ("not measured"),
and the run goes on.  They run after the CPU methods, one after the other
(not interleaved: each keeps its device memory pool warm over its runs):

``engine-gpu``
    The engine on one GPU worker: an in-process ``LocalCluster`` (one worker,
    one thread, ``resources={"GPU": 1}``) started once for the whole benchmark,
    its start and stop timed apart.  The edge arrays are copied to the device
    once per graph before timing (``cupy.asarray``); timed:
    ``Graph.from_arrays`` on the device arrays and
    ``minimum_spanning_forest(g, client, backend="gpu")``.  Also recorded:
    kernel time (the phase seconds of every round, summed) and the bytes the
    run copied host to device and back (``RunStats.h2d_bytes``/``d2h_bytes``).
    Same edge ids as ``engine``.
``cugraph``
    ``pylibcugraph.minimum_spanning_tree`` on an ``SGGraph``.  cuGraph wants
    a simple undirected graph stored in both directions with int32 edge
    offsets; made once per graph on the device before timing and not timed:
    self-loops dropped, parallel edges reduced to their lightest (neither
    changes the forest's weight; both only shrink cuGraph's input), int32
    vertex ids, float64 weights.  Timed as build (both directions
    concatenated, ``SGGraph(..., renumber=False)``) and call, apart and
    together.  Total weight and forest size only: cuGraph cannot apply the
    engine's ``(weight, edge id)`` tie-break.

Every method must find the same total weight on a graph (and the engine, the
distributed engine and the kernel loop the same edge ids); a disagreement is
recorded, and :func:`run_bench` raises :class:`BenchMismatch` after writing
the reports.  Methods run one after the other and what one builds is freed
before the next (``del`` + ``gc.collect()``).

Outputs in ``out_dir``: ``bench.json`` (machine, versions, every run's times,
the engine's per-round statistics) and ``bench.md`` (the table, a geometric
mean row and a pass/fail line per target), the table also printed.  A config
with a GPU method adds a GPU table and the :data:`GPU_TARGETS`.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import statistics
import sys
import time
import zlib

import numpy as np

from mst_dist.environment import gpu_info, loadavg, machine_info, versions

__all__ = ["METHODS", "GPU_METHODS", "ALL_METHODS", "DEFAULT_TARGETS", "GPU_TARGETS",
           "BenchMismatch", "load_config", "validate_config", "run_bench", "format_report",
           "main", "cli"]

#: CPU methods in the order they run on each graph (what a config without
#: ``methods`` runs).
METHODS = ("engine", "engine-distributed", "kernels-loop", "kernels-loop-dedupe", "scipy", "rustworkx")

#: Methods that need a CUDA GPU; run after the CPU ones, in this order.
GPU_METHODS = ("engine-gpu", "cugraph")

#: Every method a config may list, in the order they run on each graph.
ALL_METHODS = METHODS + GPU_METHODS

#: The issue's targets (engine on the embedded default, min times).
DEFAULT_TARGETS = {
    "scipy_geomean": 8.0,     # engine at least 8x faster than scipy build+call, geometric mean
    "scipy_each": 5.0,        # ... and at least 5x on each graph
    "rustworkx_call_each": 1.0,  # faster than rustworkx's call alone on each graph
    "kernels_ratio_max": 1.5,    # engine within 1.5x of the kernels chained without Dask
}

#: The GPU benchmark's targets (engine-gpu, min times); checked when a config
#: lists a GPU method.  The circulant ones apply to the graph named by the
#: config's ``targets.gpu_graph`` (configs/bench-gpu.yaml: circulant100m).
GPU_TARGETS = {
    "cugraph_each": 3.0,         # engine-gpu >= 3x faster than cuGraph build+call on each graph
    "circulant_total_s": 0.336,  # engine-gpu end to end on targets.gpu_graph, below this (seconds)
    "circulant_kernel_s": 0.1,   # ... and its kernel time (phase seconds summed), below this
}

_RX_CHUNK = 2_000_000


class BenchMismatch(AssertionError):
    """Methods disagreed on a graph's total weight (or the forest's edges)."""


def _err(msg, key=None):
    try:
        from mst_dist.config import ConfigError

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
    ``methods`` (subset of :data:`ALL_METHODS`, default :data:`METHODS`),
    ``repeat`` (default 3), ``warmup`` (default 1), ``rustworkx: {chunk,
    build_repeat}``, ``targets`` (overrides of :data:`DEFAULT_TARGETS` and
    :data:`GPU_TARGETS`, and ``gpu_graph``: the name of the graph the
    circulant targets apply to).
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
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise _err(f"{source}: unknown method(s) {', '.join(map(str, bad))}; choose from "
                   f"{', '.join(ALL_METHODS)}", key="methods")
    out["methods"] = [m for m in ALL_METHODS if m in methods]
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
    allowed = [*DEFAULT_TARGETS, *GPU_TARGETS, "gpu_graph"]
    if not isinstance(tg, dict) or set(tg) - set(allowed):
        raise _err(f"{source}: 'targets' takes {', '.join(allowed)}", key="targets")
    tg = dict(tg)
    gpu_graph = tg.pop("gpu_graph", None)
    if gpu_graph is not None and str(gpu_graph) not in names:
        raise _err(f"{source}: targets.gpu_graph: no graph named {gpu_graph!r}; the config has "
                   f"{', '.join(g['name'] for g in out['graphs'])}", key="targets.gpu_graph")
    try:
        values = {k: float(v) for k, v in tg.items()}
    except (TypeError, ValueError) as exc:
        raise _err(f"{source}: target values must be numbers ({exc})", key="targets") from None
    out["targets"] = {**DEFAULT_TARGETS, **GPU_TARGETS, **values,
                      "gpu_graph": None if gpu_graph is None else str(gpu_graph)}
    return out


# ---------------------------------------------------------------------------
# the methods: each returns {"times": {...}, "total_weight", "forest_edges", ...}
# ---------------------------------------------------------------------------

def _engine_settings():
    try:
        import dask.config

        from mst_dist import config  # noqa: F401  (loads the packaged defaults)

        return (dask.config.get("mst.filter.light-factor", 1.5),
                dask.config.get("mst.filter.min-degree", 3.0))
    except Exception:  # pragma: no cover
        return 1.5, 3.0


def _crc(ids):
    return zlib.crc32(np.ascontiguousarray(ids, dtype=np.int64).tobytes())


def _engine_once(ctx, local_finish=None):
    from mst_dist.api import minimum_spanning_forest
    from mst_dist.graph import Graph

    src, dst, w, n = ctx["arrays"]
    t0 = time.perf_counter()
    g = Graph.from_arrays(src, dst, w, n_vertices=n)
    t1 = time.perf_counter()
    # backend="cpu": on a GPU machine this still measures the CPU workers
    res = minimum_spanning_forest(g, ctx["client"], local_finish=local_finish, backend="cpu")
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
    from mst_dist.kernels import cpu
    from mst_dist.result import exact_total

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
    best = min(runs, key=lambda r: r["times"]["total"])
    if "stats" in best:
        out["stats"] = _summarise_stats(best["stats"])
    for key in ("h2d_bytes", "d2h_bytes", "backend", "returned_rows"):  # the best run's
        if key in best:
            out[key] = best[key]
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


def _run_sequential(name, ctx, repeat, warmup, log, fn=None):
    runs, warm = [], []
    t0 = time.perf_counter()
    for i in range(warmup + repeat):
        rec = _run_once(fn or _ONCE[name], ctx)
        (warm if i < warmup else runs).append(rec)
        gc.collect()
    out = _finish_simple(runs, warm)
    out["wall_seconds"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------------------
# the GPU methods: engine-gpu and cugraph
# ---------------------------------------------------------------------------

def _cuda():
    """``(cupy, None)`` when CuPy is installed and sees a CUDA device, else ``(None, reason)``."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA library that fails to load
        return None, f"cupy is not installed ({type(exc).__name__}: {exc}); pip install 'mst-dist[gpu]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, or no device
        return None, f"no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return None, "no CUDA device visible"
    return cupy, None


def gpu_method_status(method):
    """Whether a GPU method can run in this process.

    Returns ``(array_module, None)`` when it can (CuPy), else ``(None, reason)``
    with a reason that says what is missing.  ``engine-gpu`` needs CuPy, a CUDA
    device and the engine's CuPy kernels (:func:`mst_dist.kernels.gpu.gpu_ready`);
    ``cugraph`` needs CuPy, a CUDA device and ``pylibcugraph`` with
    ``minimum_spanning_tree``.
    """
    if method not in GPU_METHODS:
        raise ValueError(f"{method!r} is not a GPU method; GPU methods: {', '.join(GPU_METHODS)}")
    xp, reason = _cuda()
    if xp is None:
        return None, reason
    if method == "engine-gpu":
        try:
            from mst_dist import config
            from mst_dist.kernels.gpu import gpu_ready
        except Exception as exc:
            return None, f"the engine's GPU kernels cannot be imported ({type(exc).__name__}: {exc})"
        module = config.get("gpu.array-module", None, "cupy")
        if module != "cupy":  # the NumPy stand-in: GPU code path, no GPU numbers
            return None, f"mst.gpu.array-module is {module!r}, not 'cupy'"
        try:
            ok, why = gpu_ready("cupy")
        except Exception as exc:
            return None, f"gpu_ready() failed ({type(exc).__name__}: {exc})"
        return (xp, None) if ok else (None, why or "gpu_ready() says no")
    try:
        import pylibcugraph
    except Exception as exc:
        return None, (f"pylibcugraph is not installed ({type(exc).__name__}: {exc}); "
                      "pip install pylibcugraph-cu13")
    if not hasattr(pylibcugraph, "minimum_spanning_tree"):
        return None, (f"pylibcugraph {getattr(pylibcugraph, '__version__', '?')} has no "
                      "minimum_spanning_tree (26.x has)")
    return xp, None


def _sync(xp):
    """Wait for every stream of the device (a no-op for NumPy)."""
    cuda = getattr(xp, "cuda", None)
    if cuda is not None:
        cuda.runtime.deviceSynchronize()


def _free_device_memory(xp):
    """Give CuPy's cached blocks back to the driver.

    Called between GPU methods: cuGraph allocates through RMM, not CuPy's
    pool, and must not find the device full of the engine's cached blocks.
    """
    pool = getattr(xp, "get_default_memory_pool", None)
    if pool is not None:
        pool().free_all_blocks()
        xp.get_default_pinned_memory_pool().free_all_blocks()


def _host(a):
    """A NumPy array from a NumPy or CuPy one."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _scalar(x):
    return x.item() if hasattr(x, "item") and not isinstance(x, (int, float)) else x


def _device_arrays(ctx):
    """The graph's edge arrays on the device: copied once per graph, not timed."""
    xp = ctx["xp"]
    dev = ctx.setdefault("device", {})
    if xp.__name__ not in dev:
        src, dst, w, n = ctx["arrays"]
        t0 = time.perf_counter()
        dev[xp.__name__] = (xp.asarray(src), xp.asarray(dst), xp.asarray(w), n)
        _sync(xp)
        ctx["device_copy_seconds"] = time.perf_counter() - t0
    return dev[xp.__name__]


def _engine_gpu_once(ctx):
    from mst_dist.api import minimum_spanning_forest
    from mst_dist.graph import Graph

    xp = ctx["xp"]
    src, dst, w, n = _device_arrays(ctx)
    t0 = time.perf_counter()
    g = Graph.from_arrays(src, dst, w, n_vertices=n)
    t1 = time.perf_counter()
    res = minimum_spanning_forest(g, ctx["gpu_client"], backend="gpu")
    _sync(xp)
    t2 = time.perf_counter()
    st = res.stats
    ids = _host(res.edge_ids)
    out = {"times": {"total": t2 - t0, "validate": t1 - t0, "msf": t2 - t1,
                     # kernel time: every round's phases, summed
                     "kernel": sum(sum(r.phase_seconds.values()) for r in st.rounds)},
           "total_weight": _scalar(res.total_weight), "forest_edges": int(ids.shape[0]),
           "components": int(res.n_components), "edge_ids_crc32": _crc(ids),
           "h2d_bytes": getattr(st, "h2d_bytes", None), "d2h_bytes": getattr(st, "d2h_bytes", None),
           "backend": getattr(st, "backend", None), "stats": st}
    del res, g
    return out


def _stable_argsort(xp, a):
    # CuPy's argsort is always stable (and takes no kind but None)
    return np.argsort(a, kind="stable") if xp is np else xp.argsort(a)


def simple_undirected(src, dst, w, n, xp=np):
    """cuGraph's input: one edge per vertex pair, the lightest, and no self-loops.

    Returns ``(lo, hi, weight, dropped)``: int32 ``lo < hi`` sorted by
    ``(lo, hi)``, float64 weights, and ``{"self_loops": k, "parallel": k}``
    (edges removed).  Neither removal changes the weight of a minimum
    spanning forest.  Works on NumPy or CuPy arrays (``xp``); ``n < 2**31``.
    """
    if n >= 2**31:
        raise ValueError(f"cuGraph's MST takes int32 vertex ids: n={n:,} >= 2**31")
    keep = src != dst
    s, d, ww = src[keep], dst[keep], w[keep]
    loops = int(src.shape[0] - s.shape[0])
    key = xp.minimum(s, d).astype(xp.int64) * n + xp.maximum(s, d).astype(xp.int64)
    del s, d, keep
    # by pair, then by weight: the first edge of each pair is its lightest
    order = _stable_argsort(xp, ww)
    order = order[_stable_argsort(xp, key[order])]
    key = key[order]
    ww = ww[order]
    del order
    first = xp.ones(key.shape[0], dtype=bool)
    first[1:] = key[1:] != key[:-1]
    key = key[first]
    ww = ww[first].astype(xp.float64)
    parallel = int(first.shape[0] - key.shape[0])
    return ((key // n).astype(xp.int32), (key % n).astype(xp.int32), ww,
            {"self_loops": loops, "parallel": parallel})


def _cugraph_input(ctx):
    """cuGraph's simple graph on the device (:func:`simple_undirected`), once per graph, not timed."""
    if "cugraph_input" not in ctx:
        xp = ctx["xp"]
        src, dst, w, n = _device_arrays(ctx)
        t0 = time.perf_counter()
        lo, hi, ww, dropped = simple_undirected(src, dst, w, n, xp)
        if 2 * lo.shape[0] >= 2**31:
            raise ValueError(f"cuGraph's MST needs int32 edge offsets: {2 * lo.shape[0]:,} stored "
                             "edges (both directions) >= 2**31")
        _sync(xp)
        ctx["cugraph_input"] = (lo, hi, ww, n)
        ctx["cugraph_prep"] = {"seconds": time.perf_counter() - t0, "edges": int(lo.shape[0]),
                               **dropped}
    return ctx["cugraph_input"]


def _cugraph_once(ctx):
    import pylibcugraph as plc

    xp = ctx["xp"]
    lo, hi, w, n = _cugraph_input(ctx)
    t0 = time.perf_counter()
    handle = plc.ResourceHandle()
    props = plc.GraphProperties(is_symmetric=True, is_multigraph=False)
    # an undirected graph is stored in both directions
    G = plc.SGGraph(handle, props, xp.concatenate((lo, hi)), xp.concatenate((hi, lo)),
                    weight_array=xp.concatenate((w, w)), store_transposed=False,
                    renumber=False, do_expensive_check=False)
    _sync(xp)
    t1 = time.perf_counter()
    s, d, ew, _offsets = plc.minimum_spanning_tree(handle, G, False)
    _sync(xp)
    t2 = time.perf_counter()
    # the forest comes back in both directions too: count each edge once
    one_way = s < d
    total = float(ew[one_way].sum())
    out = {"times": {"total": t2 - t0, "build": t1 - t0, "call": t2 - t1},
           "total_weight": _as_exact(total, ctx["arrays"][2]), "forest_edges": int(one_way.sum()),
           "returned_rows": int(s.shape[0])}
    del G, s, d, ew, _offsets, one_way
    return out


#: One run of each GPU method (device arrays and cuGraph's input made on first use).
_GPU_ONCE = {"engine-gpu": _engine_gpu_once, "cugraph": _cugraph_once}


def _run_gpu(name, ctx, repeat, warmup, log):
    """A GPU method's runs on one graph, one after the other, then its memory handed back."""
    xp = ctx["gpu_xp"][name]
    ctx["xp"] = xp
    try:
        # made before the runs, so that no run's CPU time holds them either
        _device_arrays(ctx)
        if name == "cugraph":
            _cugraph_input(ctx)
            # cuGraph, the last GPU method, needs only its own input: room on the device
            ctx.pop("device", None)
            gc.collect()
            _free_device_memory(xp)
            prep = ctx["cugraph_prep"]
            log(f"   cugraph input (not timed): {prep['edges']:,} edges, {prep['self_loops']:,} "
                f"self-loops and {prep['parallel']:,} parallel edges dropped, {prep['seconds']:.2f} s")
        out = _run_sequential(name, ctx, repeat, warmup, log, fn=_GPU_ONCE[name])
        out["device_copy_seconds"] = ctx.get("device_copy_seconds")
        if name == "cugraph":
            out["prep"] = ctx.get("cugraph_prep")
        return out
    finally:
        ctx.pop("cugraph_input", None)
        gc.collect()
        _free_device_memory(xp)


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


def _done(res):
    """A method's result holds timings (it ran; not failed, not unavailable)."""
    return bool(res) and "error" not in res and "unavailable" not in res


def _start_gpu_cluster(stack, report):
    """The one-GPU-worker cluster of engine-gpu, in this process; start and stop timed.

    One worker, one thread, ``resources={"GPU": 1}``: its tasks run the CuPy
    kernels on chunks made from device arrays, which are not copied.
    """
    from mst_dist.deploy.local import embedded

    t0 = time.perf_counter()
    cm = embedded(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                  resources={"GPU": 1})
    client = cm.__enter__()
    info = {"start_seconds": time.perf_counter() - t0, "stop_seconds": None,
            "workers": 1, "threads": 1, "resources": {"GPU": 1}}
    report["gpu_cluster"] = info

    def stop(*exc):
        t1 = time.perf_counter()
        cm.__exit__(*exc)
        info["stop_seconds"] = time.perf_counter() - t1

    stack.push(stop)
    return client


def _check_agreement(gres):
    """Compare the methods of one graph; returns a list of problems (empty: all agree)."""
    problems = []
    meths = gres["methods"]
    done = {k: v for k, v in meths.items() if _done(v)}
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
    from mst_dist.generators import generate

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
    gpu_methods = [m for m in cfg["methods"] if m in GPU_METHODS]
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(sys.argv),
        "machine": machine_info(),
        "versions": _versions(gpu=bool(gpu_methods)),
        "config": cfg,
        "engine_settings": dict(zip(("light_factor", "min_degree"), _engine_settings())),
        "cluster": None,
        "graphs": [],
    }
    uses_engine = any(m in ("engine", "engine-distributed") for m in cfg["methods"])
    # GPU methods that cannot run here are recorded with the reason, not run
    gpu_xp, unavailable = {}, {}
    for meth in gpu_methods:
        xp, reason = gpu_method_status(meth)
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
                gpu_client = _start_gpu_cluster(stack, report)
                log(f"one-GPU-worker cluster start {report['gpu_cluster']['start_seconds']:.2f} s")
            except Exception as exc:  # recorded; the other methods still run
                unavailable["engine-gpu"] = ("the one-GPU-worker cluster did not start "
                                             f"({type(exc).__name__}: {exc})")
                log(f"engine-gpu: unavailable: {unavailable['engine-gpu']}")
        ctx = {"client": client, "gpu_client": gpu_client, "gpu_xp": gpu_xp, "config": cfg,
               "engine_settings": _engine_settings()}
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
                    "loadavg_start": loadavg(), "methods": {}}
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
                if meth in unavailable:
                    results[meth] = {"unavailable": unavailable[meth]}
                elif meth not in results:
                    t0 = time.perf_counter()
                    try:
                        if meth == "rustworkx":
                            res = _rustworkx_method(ctx, cfg["repeat"], cfg["warmup"], log)
                        elif meth in GPU_METHODS:
                            res = _run_gpu(meth, ctx, cfg["repeat"], cfg["warmup"], log)
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
                if _done(res):
                    key = "call" if meth == "rustworkx" else "total"
                    log(f"   {meth:<19} min {res['min'][key]:8.3f} s  median "
                        f"{res['median'][key]:8.3f} s  weight {res.get('total_weight')}"
                        + (" (call only)" if key == "call" else ""))
            ctx.pop("arrays")
            ctx.pop("device", None)
            gc.collect()
            for xp in set(gpu_xp.values()):
                _free_device_memory(xp)
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
    if not _done(m):
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
        if any(m in GPU_METHODS for m in report["config"]["methods"]):
            gpu_rows = _gpu_rows(report, stat)
            out[stat]["gpu_rows"] = gpu_rows
            out[stat]["gpu_targets"] = _gpu_targets(report, gpu_rows)
    out["all_agree"] = all(g.get("agree") for g in report["graphs"])
    return out


def _gpu_rows(report, stat):
    rows = []
    for g in report["graphs"]:
        M = g["methods"]
        eg = _get(M, "engine-gpu", stat, "total")
        cg = _get(M, "cugraph", stat, "total")
        cpu = _get(M, "engine", stat, "total")
        rows.append({
            "graph": g["name"],
            "engine_gpu": eg,
            "kernel": _get(M, "engine-gpu", stat, "kernel"),
            "engine_cpu": cpu,
            "cugraph": cg,
            "cugraph_build": _get(M, "cugraph", stat, "build"),
            "cugraph_call": _get(M, "cugraph", stat, "call"),
            "speedup_cugraph": _ratio(cg, eg),
            "speedup_cpu": _ratio(cpu, eg),
        })
    return rows


def _why_missing(report, meth, graph=None):
    """Why a method has no time (on a graph): unavailable, failed, or not configured."""
    if meth not in report["config"]["methods"]:
        return f"{meth} is not among the config's methods"
    if meth in (report.get("unavailable") or {}):
        return f"{meth} unavailable here"  # the reason: listed above and in report["unavailable"]
    for g in report["graphs"]:
        if graph in (None, g["name"]) and "error" in g["methods"].get(meth, {}):
            return f"{meth} failed on {g['name']}"
    return f"no {meth} result"


def _gpu_targets(report, rows):
    """Verdicts of :data:`GPU_TARGETS`: ``pass`` is True, False or None (not measured, with ``note``)."""
    tg = report["config"]["targets"]
    out = []
    # engine-gpu >= cugraph_each x faster than cuGraph build+call on each graph
    t = tg["cugraph_each"]
    sp = {r["graph"]: r["speedup_cugraph"] for r in rows}
    measured = [v for v in sp.values() if v is not None]
    missing = [g for g, v in sp.items() if v is None]
    note = None
    if measured and min(measured) < t:
        ok = False
    elif missing or not rows:
        ok = None
        why = []
        for g in missing or [None]:
            for m in ("engine-gpu", "cugraph"):
                if g is None or not _done(_graph(report, g)["methods"].get(m)):
                    w = _why_missing(report, m, g)
                    if w not in why:
                        why.append(w)
        note = "; ".join(why) or "no graph run"
    else:
        ok = True
    out.append({"target": "cugraph_each", "pass": ok, "note": note,
                "description": f">= {t:g}x faster than cuGraph build+call on each graph: min "
                               f"{_fmt_x(min(measured, default=None))}"
                               + (f" (measured on {len(measured)} of {len(rows)} graphs)"
                                  if missing else "")})
    # end to end and kernel time on the circulant graph
    name = tg.get("gpu_graph")
    row = next((r for r in rows if r["graph"] == name), None)
    for key, col, what in (("circulant_total_s", "engine_gpu", "end to end from device-resident arrays"),
                           ("circulant_kernel_s", "kernel", "kernel time (phase seconds summed)")):
        t = tg[key]
        v = row[col] if row else None
        if name is None:
            note = "no targets.gpu_graph in the config"
        elif row is None:
            note = f"graph {name} was not run"
        elif v is None:
            note = _why_missing(report, "engine-gpu", name)
        else:
            note = None
        out.append({"target": key, "pass": None if v is None else v < t, "note": note,
                    "description": f"engine-gpu {what} on {name or 'the gpu_graph'} under {t:g} s: "
                                   f"{_fmt_s(v)} s"})
    return out


def _graph(report, name):
    return next((g for g in report["graphs"] if g["name"] == name), {"methods": {}})


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


#: Methods of the CPU table; a config with GPU methods and none of these shows the GPU table only.
_CPU_TABLE_METHODS = ("engine-distributed", "kernels-loop", "kernels-loop-dedupe", "scipy", "rustworkx")


def _md_header(lines, hdr):
    """A markdown table's header: first and last columns left-aligned, the numbers right."""
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 2) + ["---"]) + "|")


def _md_targets(lines, mins, medians, unknown):
    """One line per target: its verdict on min times, and on medians.

    ``unknown`` names a target that could not be judged (``pass`` is None):
    ``"n/a"`` for the CPU targets, ``"not measured"`` for GPU ones whose
    methods were unavailable (with the reason in ``note``).
    """
    med = {t["target"]: t for t in medians}
    for t in mins:
        if t["pass"] is None and t.get("note"):
            lines.append(f"- **{unknown.upper()}** {t['description']} ({t['note']})")
            continue
        verdict = {True: "PASS", False: "FAIL", None: unknown.upper()}[t["pass"]]
        mv = {True: "pass", False: "fail", None: unknown}[med[t["target"]]["pass"]]
        lines.append(f"- **{verdict}** {t['description']} (min times; with medians: {mv})")


def _md_agreement(report, s, lines):
    lines.append(f"- total weights agree on every graph: **{'yes' if s['all_agree'] else 'NO'}**")
    for g in report["graphs"]:
        for p in g.get("problems", []):
            lines.append(f"  - {g['name']}: {p}")


def _md_cpu(report, s, lines):
    """The CPU table (engine against the kernels, scipy and rustworkx) and its targets."""
    lines.append("")
    lines.append("Times in seconds, from int64 arrays in memory to the result in hand; min of the timed runs "
                 "(median in brackets for the engine).")
    lines.append("")
    hdr = ["graph", "m", "engine s", "kernels-loop s", "engine / kernels", "scipy build+call s",
           "vs scipy", "rustworkx call s", "vs rx call", "rustworkx build+call s",
           "engine-distributed s (Dask rounds, median Dask overhead / round)", "weights agree"]
    _md_header(lines, hdr)
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
    _md_targets(lines, s["min"]["targets"], s["median"]["targets"], "n/a")
    _md_agreement(report, s, lines)


def _md_gpu_header(report, lines):
    """The GPU, the one-GPU-worker cluster and the methods that could not run here."""
    gi = report["machine"].get("gpu") or {}
    devs = gi.get("devices") or []
    v = report["versions"]
    lines.append("")
    if devs:
        lines.append("GPU: " + ", ".join(f"{d['name']} ({d['memory_bytes'] / 2**30:.0f} GiB, "
                                         f"compute {d['compute_capability']})" for d in devs)
                     + f"; CUDA driver {gi.get('driver_version')}, runtime {gi.get('runtime_version')}; "
                     + ", ".join(f"{k} {v[k]}" for k in ("cupy", "pylibcugraph", "dask_cuda") if v.get(k))
                     + ".  ")
    else:
        lines.append("GPU: none visible to CuPy in this process.  ")
    gc_ = report.get("gpu_cluster")
    if gc_:
        stop = gc_.get("stop_seconds")
        lines.append(f"One-GPU-worker cluster (in process, 1 worker × 1 thread, resources GPU=1): start "
                     f"{gc_['start_seconds']:.2f} s, stop {'–' if stop is None else f'{stop:.2f} s'}, "
                     "not included in the engine-gpu times.  ")
    unavailable = report.get("unavailable") or {}
    if unavailable:
        lines.append("")
        lines.append("**Unavailable here** (not run; their targets are not measured):")
        lines.append("")
        for m, reason in unavailable.items():
            lines.append(f"- `{m}`: {reason}")


def _gpu_cell(M, meth, text):
    """``text`` when ``meth`` ran; else why not, in one word."""
    m = M.get(meth)
    if _done(m):
        return text
    if not m:
        return "–"
    return "unavailable" if "unavailable" in m else "failed"


def _md_gpu(report, s, lines, agreement):
    """The GPU table (engine-gpu, the engine on the CPU workers, cuGraph) and the GPU targets."""
    lines.append("")
    lines.append("## GPU: engine-gpu (one GPU worker) against the CPU workers and cuGraph")
    lines.append("")
    lines.append("Seconds, min of the timed runs (median in brackets).  engine-gpu: from edge arrays already "
                 "on the device (`Graph.from_arrays` + `minimum_spanning_forest(backend=\"gpu\")`); kernel: "
                 "its phase seconds summed over rounds; H2D / D2H: bytes the run copied host to device "
                 "and back.  engine: the CPU workers (embedded default, `backend=\"cpu\"`) from host "
                 "arrays.  "
                 "cuGraph: `pylibcugraph.minimum_spanning_tree`, build (both directions, `SGGraph`) and "
                 "call, on its simple input made beforehand (not timed).")
    lines.append("")
    hdr = ["graph", "m", "engine-gpu s", "kernel s", "H2D / D2H MB", "engine (CPU workers) s",
           "GPU vs CPU workers", "cuGraph build s", "cuGraph call s", "cuGraph build+call s",
           "vs cuGraph", "cuGraph input: edges (self-loops, parallel dropped)", "weights agree"]
    _md_header(lines, hdr)
    rows = {r["graph"]: r for r in s["min"]["gpu_rows"]}
    for g in report["graphs"]:
        r = rows[g["name"]]
        M = g["methods"]
        eg = M.get("engine-gpu") or {}
        med = _get(M, "engine-gpu", "median", "total")

        def mb(x):
            return "?" if x is None else f"{x / 1e6:.1f}"

        cg = M.get("cugraph") or {}
        prep = cg.get("prep") or {}
        lines.append("| " + " | ".join([
            g["name"], _fmt_m(g["m"]),
            _gpu_cell(M, "engine-gpu",
                      _fmt_s(r["engine_gpu"]) + (f" ({_fmt_s(med)})" if med is not None else "")),
            _gpu_cell(M, "engine-gpu", _fmt_s(r["kernel"])),
            _gpu_cell(M, "engine-gpu", f"{mb(eg.get('h2d_bytes'))} / {mb(eg.get('d2h_bytes'))}"),
            _gpu_cell(M, "engine", _fmt_s(r["engine_cpu"])), _fmt_x(r["speedup_cpu"]),
            _gpu_cell(M, "cugraph", _fmt_s(r["cugraph_build"])),
            _gpu_cell(M, "cugraph", _fmt_s(r["cugraph_call"])),
            _gpu_cell(M, "cugraph", _fmt_s(r["cugraph"])), _fmt_x(r["speedup_cugraph"]),
            _gpu_cell(M, "cugraph", f"{_fmt_m(prep.get('edges', 0))} ({prep.get('self_loops', 0):,}, "
                                    f"{prep.get('parallel', 0):,})"),
            "yes" if g.get("agree") else "**NO**",
        ]) + " |")
    lines.append("")
    lines.append("## GPU targets (engine-gpu on one GPU worker)")
    lines.append("")
    _md_targets(lines, s["min"]["gpu_targets"], s["median"]["gpu_targets"], "not measured")
    if agreement:
        _md_agreement(report, s, lines)


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
    methods = report["config"]["methods"]
    gpu = any(m in GPU_METHODS for m in methods)
    if gpu:
        _md_gpu_header(report, lines)
    cpu_table = not gpu or any(m in _CPU_TABLE_METHODS for m in methods)
    if cpu_table:
        _md_cpu(report, s, lines)
    if gpu:
        _md_gpu(report, s, lines, agreement=not cpu_table)
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
        description="Benchmark the engine against scipy, rustworkx and cuGraph on the graphs of a "
                    "config (GPU methods without a GPU: reported unavailable, with the reason).")
    p.add_argument("config", help="benchmark YAML (e.g. configs/bench-cpu.yaml)")
    p.add_argument("--out", default="bench-out", help="output folder for bench.json and bench.md")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per method (default: config)")
    p.add_argument("--only", default=None, help="comma-separated graph names to run")
    p.add_argument("--methods", default=None,
                   help=f"comma-separated subset of: {', '.join(ALL_METHODS)}")
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


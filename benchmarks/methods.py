"""The CPU methods: the engine, the engine's kernels in a plain loop, scipy and rustworkx.

Each is timed "from int64 edge arrays in memory to the result in hand"; a run
(``fn(ctx)``, see :mod:`benchmarks.timing`) returns its times and answers:

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
``kernels-loop-dedupe``
    The same, keeping only the lightest of parallel edges after each relabel
    (whether that filter-edges option pays; benchmarks/configs/bench-dedupe.yaml).
``scipy``
    CSR built with scipy's own linear ``coo_tocsr`` kernel *without* summing
    duplicate entries (``csr_matrix((w, (i, j)))`` would add up parallel edges
    and give a wrong forest), int32 indices, float64 data; then
    ``scipy.sparse.csgraph.minimum_spanning_tree``.  Build and call are timed
    apart and together.
``cold``
    The engine (embedded default, no client) and scipy, each in a fresh
    Python process per run, interleaved, timed from before the first import
    to the result (:func:`cold_method`): what a script pays every time.  And
    ``mst-dist run`` generating the same graph on its workers, a fresh
    process per run: the engine time the command reports.
``rustworkx``
    ``PyGraph(multigraph=True)``, ``add_nodes_from``, ``extend_from_weighted_edge_list``
    from Python lists of tuples in chunks; then ``minimum_spanning_edges``.  The
    build (slow: Python objects) is timed ``rustworkx.build_repeat`` times
    (default once); the call after a warm-up, ``repeat`` times
    (:func:`rustworkx_method`, which runs them all itself).

:data:`ONCE` holds one run of each method but rustworkx.
"""
from __future__ import annotations

import gc
import time

import numpy as np

from benchmarks.timing import as_exact, collect, cpu_seconds, crc

__all__ = ["ONCE", "COLD_METHODS", "engine_settings", "rustworkx_method", "cold_method"]


def engine_settings():
    """The engine's light-pass settings, which the kernel loop uses too: ``(light_factor, min_degree)``."""
    from mst_dist import config

    return config.get("filter.light-factor"), config.get("filter.min-degree")


def _engine_once(ctx, local_finish=None, with_client=True):
    """One engine run on the embedded cluster: validation, then the forest.

    ``with_client=False``: the call a script makes, without a client (the
    process's shared embedded cluster, started by the first such call: the
    warm-up run's).
    """
    from mst_dist.api import minimum_spanning_forest
    from mst_dist.graph import Graph

    src, dst, w, n = ctx["arrays"]
    t0 = time.perf_counter()
    g = Graph.from_arrays(src, dst, w, n_vertices=n)
    t1 = time.perf_counter()
    # backend="cpu": on a GPU machine this still measures the CPU workers
    res = minimum_spanning_forest(g, ctx["client"] if with_client else None, local_finish=local_finish,
                                  backend="cpu")
    t2 = time.perf_counter()
    out = {"times": {"total": t2 - t1 + (t1 - t0), "validate": t1 - t0, "msf": t2 - t1},
           "total_weight": res.total_weight, "forest_edges": res.n_forest_edges,
           "components": res.n_components, "edge_ids_crc32": crc(res.edge_ids),
           "stats": res.stats}
    del res, g
    return out


def _kernels_once(ctx, dedupe=0.0):
    """One run of the engine's CPU kernels chained without Dask."""
    from mst_dist.kernels import cpu
    from mst_dist.kernels.tuning import solve_local_dedupe
    from mst_dist.result import exact_total

    src, dst, w, n = ctx["arrays"]
    lf, md = ctx["engine_settings"]
    t0 = time.perf_counter()
    chunk = cpu.prepare_many([(src, dst, w)], [0], n)
    t1 = time.perf_counter()
    sol = solve_local_dedupe(cpu, chunk, n, light_factor=lf, min_degree=md, dedupe=dedupe)
    M, chosen = sol.M, sol.chosen
    del chunk, sol
    t2 = time.perf_counter()
    labels, n_comp = cpu.labels([M], n)
    ids = cpu.forest_ids([chosen])  # the same finishing helpers as the engine's
    rs, rd, rw = cpu.take_rows(src, dst, w, ids)
    total = exact_total(rw)
    t3 = time.perf_counter()
    out = {"times": {"total": t3 - t0, "prepare": t1 - t0, "solve": t2 - t1, "finish": t3 - t2},
           "total_weight": total, "forest_edges": int(ids.shape[0]), "components": int(n_comp),
           "edge_ids_crc32": crc(ids)}
    del M, chosen, labels, ids, rs, rd, rw
    return out


def _scipy_build(src, dst, w, n):
    """scipy's CSR matrix of the edges, parallel edges kept apart (int32 indices, float64 data)."""
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
    """One scipy run: CSR build, then ``minimum_spanning_tree``."""
    from scipy.sparse.csgraph import minimum_spanning_tree

    src, dst, w, n = ctx["arrays"]
    t0 = time.perf_counter()
    A = _scipy_build(src, dst, w, n)
    t1 = time.perf_counter()
    T = minimum_spanning_tree(A)
    t2 = time.perf_counter()
    total = T.sum()
    out = {"times": {"total": t2 - t0, "build": t1 - t0, "call": t2 - t1},
           "total_weight": as_exact(total, w), "forest_edges": int(T.nnz)}
    del A, T
    return out


def _rustworkx_build(src, dst, w, n, chunk):
    """rustworkx's multigraph of the edges, added ``chunk`` edges at a time."""
    import rustworkx as rx

    G = rx.PyGraph(multigraph=True)
    G.add_nodes_from(range(n))
    m = src.shape[0]
    for a in range(0, m, chunk):
        b = min(m, a + chunk)
        G.extend_from_weighted_edge_list(list(zip(src[a:b].tolist(), dst[a:b].tolist(),
                                                  w[a:b].tolist())))
    return G


def rustworkx_method(ctx, repeat, warmup, log):
    """rustworkx's runs on one graph: the build ``build_repeat`` times, then the call ``warmup + repeat`` times."""
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
        c0 = cpu_seconds()
        t0 = time.perf_counter()
        edges = rx.minimum_spanning_edges(G, weight_fn=float)
        dt = time.perf_counter() - t0
        cpu_dt = cpu_seconds() - c0
        total = sum(e[2] for e in edges)
        rec = {"times": {"total": build + dt, "build": build, "call": dt, "cpu": cpu_dt},
               "total_weight": as_exact(total, w) if isinstance(total, float) else total,
               "forest_edges": len(edges)}
        del edges
        (warm if i < warmup else runs).append(rec)
    del G
    gc.collect()
    out = collect(runs, warm)
    out["build_runs"] = builds
    return out


#: What a fresh process runs for the ``cold`` method: the clock starts before the
#: library is imported (the arrays are loaded first, untimed: "from arrays in
#: memory"); one JSON line with the times and the answers comes back on stdout.
_COLD_CHILD = r"""
import json, sys, time, zlib
import numpy as np
method, path = sys.argv[1], sys.argv[2]
if method == "floor":
    sys.path.insert(0, path)
else:
    with np.load(path) as f:
        src, dst, w, n = f["src"], f["dst"], f["w"], int(f["n"])
t0 = time.perf_counter()
if method == "floor":
    import numba
    t1 = time.perf_counter()
    import floor_kernel
    floor_kernel.total(np.arange(1000))
    t2 = time.perf_counter()
    from distributed import Client, LocalCluster
    # as the embedded default: one in-process worker, a thread per core (Dask's count), no dashboard
    cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    client = Client(cluster)
    t3 = time.perf_counter()
    client.close(); cluster.close()
    out = {}
    times = {"numba": t1 - t0, "kernel": t2 - t1, "dask": t3 - t2}
elif method == "engine":
    import mst_dist
    t1 = time.perf_counter()
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    t2 = time.perf_counter()
    r = mst_dist.minimum_spanning_forest(g, backend="cpu")
    t3 = time.perf_counter()
    out = {"total_weight": int(r.total_weight) if w.dtype.kind in "iub" else float(r.total_weight),
           "forest_edges": int(r.n_forest_edges), "components": int(r.n_components),
           "edge_ids_crc32": zlib.crc32(np.ascontiguousarray(r.edge_ids, dtype=np.int64).tobytes())}
    times = {"import": t1 - t0, "graph": t2 - t1, "solve": t3 - t2}
else:
    from scipy.sparse import csr_matrix
    from scipy.sparse import _sparsetools
    from scipy.sparse.csgraph import minimum_spanning_tree
    t1 = time.perf_counter()
    m = src.shape[0]
    indptr = np.empty(n + 1, np.int32); indices = np.empty(m, np.int32); data = np.empty(m, np.float64)
    _sparsetools.coo_tocsr(n, n, m, src.astype(np.int32), dst.astype(np.int32), w.astype(np.float64),
                           indptr, indices, data)
    A = csr_matrix((data, indices, indptr), shape=(n, n))
    t2 = time.perf_counter()
    T = minimum_spanning_tree(A)
    t3 = time.perf_counter()
    tw = float(T.sum())
    out = {"total_weight": int(round(tw)) if w.dtype.kind in "iub" else tw, "forest_edges": int(T.nnz)}
    times = {"import": t1 - t0, "build": t2 - t1, "call": t3 - t2}
times["total"] = t3 - t0
out["times"] = times
sys.stdout.write(json.dumps(out) + "\n")
"""

#: The methods the ``cold`` method runs, each in a fresh process per run
#: (``cli`` only for a graph the config generates).
COLD_METHODS = ("engine", "scipy", "cli", "floor")

#: The ``floor`` child's kernel: one cached parallel Numba function, in a module
#: of its own (a cache needs a file), so that what is timed is Numba's start
#: and one cached kernel's load, not mst-dist's.
_FLOOR_KERNEL = """import numba


@numba.njit(parallel=True, cache=True)
def total(a):
    s = 0
    for i in numba.prange(a.shape[0]):
        s += a[i]
    return s
"""


def _cli_record(report):
    """The answers and times of one ``mst-dist run --json`` report, as the other cold runs give them."""
    s, t = report["summary"], report["timings"]
    return {"total_weight": s["total_weight"], "forest_edges": s["forest_edges"],
            "components": s["components"],
            "times": {"setup": t["setup_seconds"], "solve": t["rounds_seconds"], "finish": t["finish_seconds"],
                      "total": t["engine_seconds"], "wall": t["wall_seconds"]}}


def _cold_run(method, path, env):
    """One fresh process of ``method``: its record (plus the process's wall time).

    ``path``: the graph's arrays (``.npz``) for ``engine`` and ``scipy``;
    for ``cli``, a run config that generates the graph; for ``floor``, the
    folder holding its kernel's module.
    """
    import json
    import subprocess
    import sys

    if method == "cli":
        cmd = [sys.executable, "-m", "mst_dist.cli", "run", path, "--json", "-q"]
    else:
        cmd = [sys.executable, "-c", _COLD_CHILD, method, path]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"cold {method} exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    if method == "cli":
        rec = _cli_record(json.loads(proc.stdout))
    else:
        rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["times"]["process"] = wall
    rec["stderr"] = proc.stderr
    return rec


def cold_method(ctx, repeat, log):
    """The ``cold`` method: the engine and scipy, each in a fresh Python process per run, interleaved.

    The graph's arrays are written once to an ``.npz`` file; every run starts
    a new interpreter that loads them (untimed), then times from before its
    first import of mst-dist (or scipy) to the result in hand: ``total`` =
    ``import`` + ``graph`` (``Graph.from_arrays``) + ``solve``
    (``minimum_spanning_forest(g)`` without a client: its embedded cluster
    started, and left to close at exit), or scipy's ``import`` + ``build`` +
    ``call``; ``process`` is the whole process, interpreter start and exit
    included.  For a graph the config generates, ``cli`` runs ``mst-dist
    run`` on a run config that generates it (on the embedded default's
    workers, CPU kernels, nothing written) and records the times its JSON
    report gives (``total``: its engine time).  ``floor`` is what any
    engine of Numba kernels on an in-process Dask cluster pays before it
    touches a graph, without mst-dist: ``import numba``, the first call of
    one cached parallel kernel (Numba's start and the kernel's load; its
    cache is filled by an untimed run first), and importing ``distributed``
    and starting a one-worker in-process ``LocalCluster`` with a client.
    Run i of every method goes before run i + 1 of any.  The result is the
    engine's (the method's answers) with ``scipy``, ``cli`` and ``floor``
    beside it.
    """
    import os
    import tempfile

    import yaml

    src, dst, w, n = ctx["arrays"]
    env = dict(os.environ)
    methods = [m for m in COLD_METHODS if m != "cli" or ctx.get("generate")]
    runs = {m: [] for m in methods}
    with tempfile.TemporaryDirectory(prefix="mst-bench-cold-") as tmp:
        paths = {"engine": os.path.join(tmp, "graph.npz")}
        np.savez(paths["engine"], src=src, dst=dst, w=w, n=np.int64(n))
        paths["scipy"] = paths["engine"]
        paths["floor"] = os.path.join(tmp, "floor")
        os.mkdir(paths["floor"])
        with open(os.path.join(paths["floor"], "floor_kernel.py"), "w", encoding="utf-8") as f:
            f.write(_FLOOR_KERNEL)
        _cold_run("floor", paths["floor"], env)  # compiles the kernel into its cache: untimed
        if "cli" in methods:
            paths["cli"] = os.path.join(tmp, "run.yaml")
            with open(paths["cli"], "w", encoding="utf-8") as f:
                yaml.safe_dump({"graph": {"generate": ctx["generate"]}, "backend": "cpu"}, f)
        for i in range(repeat):
            for m in methods:
                rec = _cold_run(m, paths[m], env)
                if rec.pop("stderr").strip():
                    rec["printed"] = True  # the library wrote to stderr: it should not
                runs[m].append(rec)
                log(f"   cold {m} run {i + 1}: {rec['times']['total']:.2f} s "
                    f"(process {rec['times']['process']:.2f} s)")
    out = collect(runs["engine"], [])
    out["scipy"] = collect(runs["scipy"], [])
    for m in ("cli", "floor"):
        if m in runs:
            out[m] = collect(runs[m], [])
    out["printed"] = any(r.get("printed") for r in runs["engine"])
    return out


#: One run of each method that needs nothing built beforehand (all but rustworkx).
ONCE = {
    "engine": lambda ctx: _engine_once(ctx),
    "engine-no-client": lambda ctx: _engine_once(ctx, with_client=False),
    "engine-distributed": lambda ctx: _engine_once(ctx, local_finish=0),
    "kernels-loop": _kernels_once,
    "kernels-loop-dedupe": lambda ctx: _kernels_once(ctx, dedupe=2.0),
    "scipy": _scipy_once,
}

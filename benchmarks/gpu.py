"""The GPU methods: engine-gpu (the engine on one GPU worker) and cuGraph.

They need CuPy and a CUDA device (:func:`gpu_method_status` says whether they
can run here, and if not why); they run after the CPU methods, one after the
other (not interleaved: each keeps its device memory pool warm over its
runs), through :func:`run_gpu`:

``engine-gpu``
    The engine on one GPU worker: an in-process ``LocalCluster`` (one worker,
    one thread, ``resources={"GPU": 1}``, :func:`start_gpu_cluster`) started
    once for the whole benchmark, its start and stop timed apart.  The edge
    arrays are copied to the device once per graph before timing
    (``cupy.asarray``); timed: ``Graph.from_arrays`` on the device arrays and
    ``minimum_spanning_forest(g, client, backend="gpu")``.  Also recorded:
    kernel time (the phase seconds of every round, summed) and the bytes the
    run copied host to device and back (``RunStats.h2d_bytes``/``d2h_bytes``).
    Same edge ids as ``engine``.
``cugraph``
    ``pylibcugraph.minimum_spanning_tree`` on an ``SGGraph``.  cuGraph wants
    a simple undirected graph stored in both directions with int32 edge
    offsets; made once per graph on the device before timing and not timed
    (:func:`simple_undirected`): self-loops dropped, parallel edges reduced
    to their lightest (neither changes the forest's weight; both only shrink
    cuGraph's input), int32 vertex ids, float64 weights.  Timed as build
    (both directions concatenated, ``SGGraph(..., renumber=False)``) and
    call, apart and together.  Total weight and forest size only: cuGraph
    cannot apply the engine's ``(weight, edge id)`` tie-break.

Everything here works on NumPy arrays as well (``xp``), so the harness is
tested without a GPU.
"""
from __future__ import annotations

import gc
import time

import numpy as np

from benchmarks.config import GPU_METHODS
from benchmarks.timing import as_exact, crc, run_sequential

__all__ = ["GPU_ONCE", "cupy_device", "gpu_method_status", "simple_undirected", "run_gpu",
           "start_gpu_cluster", "free_device_memory"]


def cupy_device():
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
    xp, reason = cupy_device()
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


def free_device_memory(xp):
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
    """A Python scalar from a NumPy or CuPy 0-d value."""
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
    """One engine-gpu run on the one-GPU-worker cluster, from device arrays."""
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
           "components": int(res.n_components), "edge_ids_crc32": crc(ids),
           "h2d_bytes": getattr(st, "h2d_bytes", None), "d2h_bytes": getattr(st, "d2h_bytes", None),
           "backend": getattr(st, "backend", None), "stats": st}
    del res, g
    return out


def _stable_argsort(xp, a):
    """A stable argsort on NumPy or CuPy."""
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
    """One cuGraph run: ``SGGraph`` build, then ``minimum_spanning_tree``."""
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
           "total_weight": as_exact(total, ctx["arrays"][2]), "forest_edges": int(one_way.sum()),
           "returned_rows": int(s.shape[0])}
    del G, s, d, ew, _offsets, one_way
    return out


#: One run of each GPU method (device arrays and cuGraph's input made on first use).
GPU_ONCE = {"engine-gpu": _engine_gpu_once, "cugraph": _cugraph_once}


def run_gpu(name, ctx, repeat, warmup, log):
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
            free_device_memory(xp)
            prep = ctx["cugraph_prep"]
            log(f"   cugraph input (not timed): {prep['edges']:,} edges, {prep['self_loops']:,} "
                f"self-loops and {prep['parallel']:,} parallel edges dropped, {prep['seconds']:.2f} s")
        out = run_sequential(GPU_ONCE[name], ctx, repeat, warmup)
        out["device_copy_seconds"] = ctx.get("device_copy_seconds")
        if name == "cugraph":
            out["prep"] = ctx.get("cugraph_prep")
        return out
    finally:
        ctx.pop("cugraph_input", None)
        gc.collect()
        free_device_memory(xp)


def start_gpu_cluster(stack, report):
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

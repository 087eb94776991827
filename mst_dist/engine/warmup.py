"""Worker preload: compile (or load from Numba's cache) the kernels when a worker starts.

``dask worker tcp://HOST:8786 --preload mst_dist.engine.warmup`` runs :func:`warm` as
the worker starts, so the first round of the first run does not pay for JIT
compilation (a few seconds per process on a fresh cache; well under a second
when the on-disk cache, ``__pycache__`` beside the kernels, is already filled).
The clusters mst-dist starts (``local-cuda``, ``slurm``, ``pbs``, ``mpi``)
add this preload themselves unless ``cluster.warmup: false``.

It runs the engine's own task functions on a tiny graph: prepare, a distributed
round (map, merge, contract), a second round with filter-edges fused into map,
the light/heavy split, the single-task solve both ways in, the labels and the
forest; for integer and float weights.  On a GPU worker (one that advertises
a ``GPU`` resource and can run CuPy) it also runs the GPU kernels once for
each packing (32-bit ints and floats, and the ranked 64-bit path), so CuPy
compiles (or loads from its cache) their kernels before the first run.  A
failure is logged, never fatal: the worker starts anyway and compiles on first
use.
"""
from __future__ import annotations

import logging
import time

import numpy as np

__all__ = ["warm", "dask_setup"]

logger = logging.getLogger("mst_dist.engine.warmup")


def _tiny(weight_dtype, n=48, m=192, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if np.dtype(weight_dtype).kind == "f":
        w = rng.random(m).astype(weight_dtype)
    else:
        w = rng.integers(1, 20, m).astype(weight_dtype)
    return n, src, dst, w


def _pipeline(weight_dtype):
    from mst_dist.engine import tasks as d

    n, src, dst, w = _tiny(weight_dtype)
    half = src.shape[0] // 2
    raws = [(src[:half], dst[:half], w[:half]), (src[half:], dst[half:], w[half:])]
    offsets = [0, half]
    d.check_edges(src, dst, w, n)
    chunks = [d.prepare(r, o, n) for r, o in zip(raws, offsets)]
    # round 0: map, merge, contract (filter-nodes fused in)
    outs = [d.map_round(c, None, n) for c in chunks]
    rmap, chosen0, st = d.contract(d.merge(*[o[1] for o in outs]), n, None)
    # round 1: filter-edges fused into map, relabelled by round 0's map
    n1 = rmap[1]
    if n1:
        outs1 = [d.map_round(o[0], rmap, n1) for o in outs]
        d.contract(d.merge(*[o[1] for o in outs1]), n1, st, False)
    # the light-edge pass's split, and its map composition
    keys, eids = chunks[0].key, chunks[0].eid
    if keys.shape[0]:
        d.split_light(chunks[0], rmap, keys[keys.shape[0] // 2], eids[keys.shape[0] // 2])
    d.compose_forward(rmap, rmap)
    # the single-task solve: from the raw chunks, and from relabelled chunks
    d.solve_local(raws, None, n, None, n, 1.5, 3.0, offsets)
    rmap2, chosen1, _ = d.solve_local([o[0] for o in outs], rmap, n1, st, n, 1.5, 3.0)
    d.labels(n, rmap, rmap2)
    d.forest_ids(chosen0, chosen1)


def _gpu_pipeline(weight_dtype, kern):
    n, src, dst, w = _tiny(weight_dtype)
    half = src.shape[0] // 2
    a = kern.prepare((src[:half], dst[:half], w[:half]), 0, n)
    b = kern.prepare((src[half:], dst[half:], w[half:]), half, n)
    kern.map(a, n)
    M, _ = kern.to_device((np.arange(n) // 2).astype(np.int64))
    kern.map(b, n // 2, M)
    key, eid = kern.sample(a, [0])
    kern.split_light(a, M, key[0], eid[0])
    kern.solve_local(kern.concat([a, b], n), n, 0, relabel=M[: n])
    kern.synchronize()


def warm(weight_dtypes=("int64", "float64"), gpu=False):
    """Run the kernels once on tiny graphs; returns the seconds it took.

    ``gpu``: also the GPU kernels (on this process's current device).
    """
    t0 = time.perf_counter()
    for dt in weight_dtypes:
        _pipeline(dt)
    if gpu:
        from mst_dist.engine.tasks import array_module_name
        from mst_dist.kernels import backend

        kern = backend("gpu", xp=array_module_name())
        for dt in ("int32", "float32", "float64"):
            _gpu_pipeline(dt, kern)
    return time.perf_counter() - t0


def _is_gpu_worker(worker):
    from mst_dist.engine.tasks import array_module_name, worker_resources

    if worker is None or not worker_resources(worker).get("GPU", 0):
        return False
    from mst_dist.kernels.gpu import gpu_ready

    ok, reason = gpu_ready(array_module_name())
    if not ok:
        logger.warning("this worker advertises a GPU but cannot run the GPU kernels: %s", reason)
    return ok


def dask_setup(worker=None):
    """``dask worker --preload mst_dist.engine.warmup``: warm the kernels as the worker starts."""
    # in a worker process only distributed's loggers have handlers: log with them there
    log = logger if logger.hasHandlers() else logging.getLogger("distributed.preloading")
    try:
        secs = warm(gpu=_is_gpu_worker(worker))
    except Exception:  # never keep a worker from starting
        log.warning("mst-dist kernel warm-up failed; kernels compile on first use", exc_info=True)
        return
    log.info("mst-dist kernels warmed up in %.2f s", secs)

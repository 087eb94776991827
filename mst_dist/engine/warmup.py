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

How the kernels compile (Numba's cache, the fingerprint, the groups of
kernels, the processes that compile them side by side) is the kernels'
compile policy, :mod:`mst_dist.kernels.compile`; this module decides when,
and adds the engine's own paths and the generators' kernels.
"""
from __future__ import annotations

import logging
import threading
import time

import numpy as np

from mst_dist.kernels import backend as kernel_backend
from mst_dist.kernels import compile as kernel_compile
from mst_dist.kernels import ready as kernels_ready
from mst_dist.phases import Phase

__all__ = ["warm", "dask_setup", "ensure_compiled", "kernels_cached", "cache_dir", "COMPILE_STEP"]

#: How the one-time compilation is named on a terminal and in the logs.
COMPILE_STEP = "compiling kernels \u2014 once after install"

logger = logging.getLogger("mst_dist.engine.warmup")


def _tiny(weight_dtype, n=48, m=192, seed=0):
    return kernel_compile.tiny_graph(weight_dtype, n, m, seed)


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
        # the map's ranked form: few edges among many components (kernels/cpu/phases.py)
        d.map_round(outs[0][0], rmap, 8 * src.shape[0])
    d.map_round(chunks[0], None, 8 * src.shape[0])
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
    # a streaming run's passes: the first (nothing relabelled) and a later one (relabelled, sliced)
    from mst_dist.engine import passes

    kept, _, _ = passes.pass_chunk(raws[0], 0, half, 0, n, False, None, None, None)
    if len(kept):
        lo = (int(kept.key[0]), int(kept.eid[0]))
        passes.pass_chunk(raws[1], half, src.shape[0], half, n, False, np.arange(n) // 2, lo, None)


def _local_pipeline(weight_dtype):
    """What a run that goes straight to the single-task solve calls (the embedded default's usual path)."""
    from mst_dist.engine import tasks as d

    n, src, dst, w = _tiny(weight_dtype)
    half = src.shape[0] // 2
    raws = [(src[:half], dst[:half], w[:half]), (src[half:], dst[half:], w[half:])]
    d.check_edges(src, dst, w, n)
    rmap, chosen, _ = d.solve_local(raws, None, n, None, n, 1.5, 3.0, [0, half])
    d.labels(n, rmap)
    ids = d.forest_ids(chosen)
    d.chosen_rows(raws[0], 0, ids)
    _big_labels()
    _generator_kernels()


#: The parts :func:`warm` can run: the single-task solve's path, and the distributed rounds' too.
PARTS = {"local": _local_pipeline, "rounds": _pipeline}


def _big_labels():
    """Labels of a graph large enough for the parallel numbering, where this process's threads use it."""
    kernel_compile.exercise("labels")


def _raw_group(weight_dtype):
    """The local path's kernels that read raw edges and finish a run (no solve kernel among them)."""
    kernel_compile.exercise("raw", weight_dtype)
    _generator_kernels()


def _generator_kernels():
    """The generators' own compiled kernels (their counter-based draws), so a generated graph compiles nothing in its run."""
    from mst_dist.generators import philox

    philox.exercise()


def _solve_group(weight_dtype):
    """The single-task solve's own kernels, on a chunk built without any other kernel."""
    kernel_compile.exercise("solve", weight_dtype)


#: What each part splits into for compiling in parallel processes: groups that share no kernel
#: (two processes compiling different forms of one kernel could leave Numba's cache index naming
#: one form's file for the other), so each kernel is compiled in one process only.
GROUPS = {"local": ("_raw_group", "_solve_group")}


def _compile_in_processes(jobs):
    """Compile the kernels of ``jobs`` (``(kind, part)``) into Numba's cache, the groups in parallel.

    The groups of :data:`GROUPS` go to
    :func:`mst_dist.kernels.compile.compile_in_processes`: up to one process
    per core, this one included, each kind of weights of a group in the
    same process.  The caller then runs the pipelines, which load what the
    other processes compiled (and compile whatever they missed).  Returns
    the number of processes started (0: none, on one core or with nothing
    to split).
    """
    groups = {}
    for kind, part in jobs:
        for g in GROUPS.get(part, ()):
            groups.setdefault(g, []).append(kind)

    def failed(code, err):
        logger.debug("a kernel compilation process failed (%s): %s", code, err)

    return kernel_compile.compile_in_processes([((__name__, g), kinds) for g, kinds in groups.items()],
                                               on_failure=failed)


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


def warm(weight_dtypes=("int64", "float64"), gpu=False, parts=("local", "rounds")):
    """Run the kernels once on tiny graphs; returns the seconds it took.

    ``parts``: which paths of the engine (:data:`PARTS`): ``"local"``, the
    single-task solve a one-worker run goes straight to; ``"rounds"``, the
    distributed rounds too.  ``gpu``: also the GPU kernels (on this process's
    current device).
    """
    t0 = time.perf_counter()
    for dt in weight_dtypes:
        for part in parts:
            PARTS[part](dt)
    if gpu:
        from mst_dist.engine.tasks import array_module_name

        kern = kernel_backend("gpu", xp=array_module_name())
        for dt in ("int32", "float32", "float64"):
            _gpu_pipeline(dt, kern)
    return time.perf_counter() - t0


_KINDS = {"int64": "i", "float64": "f"}
_warmed = set()
_lock = threading.Lock()


def _kind(weight_dtype):
    """The warm-up pipeline that covers a weight dtype: ``"float64"`` or ``"int64"`` (every other)."""
    return "float64" if np.dtype(weight_dtype).kind == "f" else "int64"


def _kernel_modules():
    """The modules whose Numba kernels a run compiles: the CPU backend's, and the generators' own."""
    from mst_dist.generators import philox

    return kernel_compile.kernel_modules(philox)


def _dispatchers():
    """The CPU kernels' Numba dispatchers that cache to disk, by qualified name."""
    return kernel_compile.dispatchers(_kernel_modules())


def cache_dir():
    """Where Numba keeps the CPU kernels' compiled code (in-tree ``__pycache__`` or a per-user directory)."""
    return kernel_compile.cache_dir(_kernel_modules())


def _stamp_path(kind, part):
    return kernel_compile.stamp_path(f"{part}-{kind}", _kernel_modules())


def _fingerprint():
    """What the compiled code depends on (:func:`mst_dist.kernels.compile.fingerprint` of :func:`_kernel_modules`)."""
    return kernel_compile.fingerprint(_kernel_modules())


def kernels_cached(weight_dtype="int64", part="local"):
    """Whether Numba's on-disk cache holds the CPU kernels of a path of the engine for these weights.

    True once :func:`ensure_compiled` (or ``mst-dist warmup``) compiled them
    for the same kernel sources, Numba, Python and CPU, and each of those
    kernels' cache index is still there and fresh.  ``part``: ``"local"``
    or ``"rounds"`` (:data:`PARTS`).
    """
    return kernel_compile.stamp_holds(_stamp_path(_kind(weight_dtype), part), _fingerprint(), _dispatchers())


def _write_stamp(kind, part):
    path = _stamp_path(kind, part)
    if not kernel_compile.write_stamp(path, _fingerprint(), _dispatchers()):
        logger.debug("could not write the compile stamp %s", path)


def ensure_compiled(weight_dtype=None, progress=None, parts=("local",), load=False):
    """Compile (or load) in this process the CPU kernels a run needs, as a visible step when it compiles.

    When Numba's cache lacks them (the first run after install, or after an
    upgrade), logs :data:`COMPILE_STEP` and calls ``progress`` with an event
    ``{"phase": "compile", "round": None, "elapsed": 0.0}``, runs :func:`warm`
    for the weights' kind (``weight_dtype``; ``None``: integer and float) and
    the engine's ``parts`` (default: the single-task solve's path, which a
    one-worker run takes; the distributed rounds' kernels compile on first
    use), then calls ``progress`` again with ``"done": True`` and the seconds
    it took.  Otherwise nothing is shown and the kernels load on first use,
    or now with ``load``: a cluster whose workers are threads of this
    process then starts with them loaded, and its first run does not pay for
    it.  Returns the seconds spent compiling, or ``None`` when nothing was
    to do.  Thread-safe; once per process, kind and part.
    """
    kinds = ["int64", "float64"] if weight_dtype is None else [_kind(weight_dtype)]
    jobs = [(k, p) for k in kinds for p in parts]
    with _lock:
        todo = [j for j in jobs if j not in _warmed and not kernels_cached(*j)]
        cached = [j for j in jobs if j not in todo and j not in _warmed]
        if load:
            for k, p in cached:
                warm((k,), parts=(p,))
        _warmed.update(cached)
        if not todo:
            return None
        # with a progress callback the caller shows the step: the log line is then a detail
        say = logger.debug if progress is not None else logger.info
        say("%s (%s)", COMPILE_STEP, ", ".join(f"{p}, {k} weights" for k, p in todo))
        t0 = time.perf_counter()
        if progress is not None:
            progress({"phase": Phase.COMPILE, "round": None, "elapsed": 0.0})
        _compile_in_processes(todo)
        for k, p in todo:
            warm((k,), parts=(p,))  # loads what the processes compiled, compiles what they left
            _write_stamp(k, p)
            _warmed.add((k, p))
        secs = time.perf_counter() - t0
        if progress is not None:
            progress({"phase": Phase.COMPILE, "round": None, "elapsed": secs, "done": True})
        say("kernels compiled in %.1f s; later runs load them from %s", secs, cache_dir())
        return secs


def _is_gpu_worker(worker):
    from mst_dist.engine.tasks import array_module_name, worker_resources

    if worker is None or not worker_resources(worker).get("GPU", 0):
        return False
    ok, reason = kernels_ready("gpu", array_module_name())
    if not ok:
        logger.warning("this worker advertises a GPU but cannot run the GPU kernels: %s", reason)
    return ok


def _prints(log):
    """Whether a record of ``log`` reaches a handler other than a ``NullHandler``."""
    while log is not None:
        if any(not isinstance(h, logging.NullHandler) for h in log.handlers):
            return True
        if not log.propagate:
            return False
        log = log.parent
    return False


def dask_setup(worker=None):
    """``dask worker --preload mst_dist.engine.warmup``: warm the kernels as the worker starts."""
    # in a worker process only distributed's loggers have handlers that print (mst_dist's own is a
    # NullHandler): log with them there
    log = logger if _prints(logger) else logging.getLogger("distributed.preloading")
    try:
        secs = warm(gpu=_is_gpu_worker(worker))
    except Exception:  # never keep a worker from starting
        log.warning("mst-dist kernel warm-up failed; kernels compile on first use", exc_info=True)
        return
    log.info("mst-dist kernels warmed up in %.2f s", secs)

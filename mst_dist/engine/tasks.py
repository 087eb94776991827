"""Worker-side task functions of the engine: one public function per phase.

Each runs on a worker, inside a Dask task built by a run (:mod:`mst_dist.engine.runs`).
Which kernels a task runs (the CPU's Numba kernels or the GPU's CuPy kernels)
is decided on the worker that runs it, so a task Dask moves to another kind of
worker still gives the same result.

Phases (names as in the stats, the dashboard and the docs):

- :func:`map_round` -- **map**, with the previous round's **filter-edges** fused in;
- :func:`merge` -- **merge**, the inner and root levels of the tree reduction;
- :func:`contract` -- **contract**, with **filter-nodes** (compaction) fused in;
- :func:`split_light` -- the light-edge pass's filter (light apart from heavy edges);
- :func:`solve_local` -- every remaining round in one task (the local finish).
"""
from __future__ import annotations

import itertools
import threading
import time
from dataclasses import replace

import numpy as np
from dask.sizeof import sizeof

from mst_dist import config
from mst_dist.engine.keys import EVENT_TOPIC, parse_key
from mst_dist.engine.records import ChunkStats, LocalRecord, RoundMap, RoundRecord
from mst_dist.graph import check_edges
from mst_dist.kernels import backend as kernel_backend
from mst_dist.kernels import ready as kernels_ready
from mst_dist.kernels.contract import Chunk
from mst_dist.phases import Phase


@sizeof.register(Chunk)
def _sizeof_chunk(chunk):
    # host memory only: a worker's memory manager must not spill device chunks
    # to disk for host bytes they do not use (device memory is dask-cuda's business)
    return chunk.nbytes if chunk.xp is np else 512



# ---------------------------------------------------------------------------
# task functions (run on workers)
# ---------------------------------------------------------------------------

def load(source, start, stop, offset, n_vertices, validate):
    src, dst, w = source.load(start, stop)
    if validate:
        check_edges(src, dst, w, n_vertices, offset=offset,
                    where=f" of {getattr(source, 'name', 'source')}")
    return src, dst, w


# -- which kernels a task runs: decided on the worker that runs it ----------

def worker_resources(worker=None):
    """The resources a worker advertises (this task's worker by default; ``{}`` outside one)."""
    if worker is None:
        try:
            from distributed import get_worker

            worker = get_worker()
        except (ImportError, ValueError):  # not inside a task
            return {}
    state = getattr(worker, "state", None)
    res = getattr(state, "total_resources", None)
    if res is None:
        res = getattr(worker, "total_resources", None) or {}
    return res


def array_module_name():
    """The GPU kernels' array module on this process: ``mst.gpu.array-module`` (``"cupy"``)."""
    return config.get("gpu.array-module", None, "cupy")


def kernels_for(backend):
    """The kernels this task runs: the GPU backend or the CPU one.

    GPU kernels run on a worker that advertises a ``GPU`` resource and can
    run them (CuPy and a device, or the NumPy stand-in), unless the run's
    backend is ``"cpu"``.  The choice is the worker's, not the driver's, so a
    task that Dask moves to another kind of worker (a lost worker, work
    stealing) still runs the right kernels: the result is the same either way.
    Either way the task calls the same functions (the kernel contract).
    """
    if backend != "cpu" and worker_resources().get("GPU", 0):
        name = array_module_name()
        if kernels_ready("gpu", name)[0]:
            return kernel_backend("gpu", xp=name)
    return kernel_backend("cpu")


def host_kernels():
    """The kernels of the records on the host (merge, contract, labels, forest), on any worker."""
    return kernel_backend("cpu")


def probe():
    """Run on a GPU worker: can it run the GPU kernels? ``(ok, reason, device bytes or None)``."""
    name = array_module_name()
    ok, reason = kernels_ready("gpu", name)
    mem = None
    if ok:
        try:
            mem = kernel_backend("gpu", xp=name).device_memory()
        except Exception:  # informative only
            mem = None
    return ok, reason, mem


def prepare(raw, offset, n_vertices, backend="cpu"):
    return kernels_for(backend).prepare(raw, offset, n_vertices)


_DEVICE_MAPS = {}
_DEVICE_MAPS_LOCK = threading.Lock()


def _device_map(M, kern):
    """A round map in the kernels' memory: ``(array, bytes copied)``; copied once per worker, not per chunk."""
    if M is None:
        return None, 0
    with _DEVICE_MAPS_LOCK:
        hit = _DEVICE_MAPS.get(id(M))
        if hit is not None and hit[0] is M:
            return hit[1], 0
    dev, nb = kern.to_device(M)
    if not nb:  # host kernels: nothing copied, nothing to keep
        return dev, 0
    with _DEVICE_MAPS_LOCK:
        if len(_DEVICE_MAPS) >= 2:  # a round's maps need the last map; the round submitted ahead, its own
            _DEVICE_MAPS.pop(next(iter(_DEVICE_MAPS)))
        _DEVICE_MAPS[id(M)] = (M, dev)
    return dev, nb


def forget_device_maps():
    """Run on GPU workers when a run ends: free the round maps kept on the device."""
    with _DEVICE_MAPS_LOCK:
        n = len(_DEVICE_MAPS)
        _DEVICE_MAPS.clear()
    return n


def map_round(chunk, rmap, n_comp, backend="cpu"):
    if n_comp is None:
        n_comp = rmap[1]
    kern = kernels_for(backend)
    t0 = time.perf_counter()
    ch = kern.adopt(chunk)
    m_in = len(ch)
    M, nb = _device_map(None if rmap is None else rmap[0], kern)
    new, cand = kern.map(ch, n_comp, M)
    h2d = new.h2d + nb
    if new.h2d:  # its upload is reported once
        new = replace(new, h2d=0)
    dt = time.perf_counter() - t0
    stats = ChunkStats(edges_in=m_in, edges=len(new), map=dt, cand_bytes=cand.nbytes, h2d=h2d,
                       d2h=cand.d2h, gpu_edges_in=m_in if kern.kind == "gpu" else 0)
    return new, (cand, stats)


def merge(*parts):
    t0 = time.perf_counter()
    cand = host_kernels().merge([p[0] for p in parts])
    dt = time.perf_counter() - t0
    return cand, ChunkStats.combine([p[1] for p in parts], cand.nbytes, dt)


def contract(merged, n_comp, prev, finish=True):
    if n_comp is None:
        n_comp = prev.n_next
    cand, st = merged
    fin_off = 0 if prev is None else prev.finished_total
    t0 = time.perf_counter()
    M, chosen, n_next, n_fin = host_kernels().contract(cand, n_comp, fin_off, finish)
    dt = time.perf_counter() - t0
    rec = RoundRecord(chunks=st, contract=dt, n_comp=n_comp, n_next=n_next, n_finished=n_fin,
                      finished_total=fin_off + n_fin, forest_edges=int(chosen.shape[0]),
                      map_bytes=int(M.nbytes))
    return RoundMap(M, n_next), chosen, rec


def round_reporter():
    """``on_round`` of the single-task solve: each round it ends, told to the run's client.

    The solve is one task, which may run for minutes; each of its rounds goes
    to the scheduler's event topic (:data:`~mst_dist.engine.keys.EVENT_TOPIC`)
    as a ``phase`` event of the run (``round``, ``phase="local"``, ``step``:
    ``light``, ``heavy`` or ``main``, ``components`` and ``edges`` left,
    ``source="task"``), where the driver's subscription hands it to the
    ``progress`` callback and the dashboard shows it.  ``None`` outside a
    task (nothing to tell).
    """
    try:
        from distributed import get_worker

        worker = get_worker()
        key = parse_key(worker.get_current_task())
    except (ImportError, ValueError, AttributeError, KeyError):
        return None
    if key is None:
        return None
    count = itertools.count()
    last = {"light": False}

    def report(rec):
        j = next(count)
        step = "light" if rec.light else ("heavy" if rec.filter_pass and last["light"] else "main")
        last["light"] = rec.light
        try:
            worker.log_event(EVENT_TOPIC, {
                "event": "phase", "run": key.token, "source": "task", "round": key.round + j,
                "phase": Phase.LOCAL.value, "step": step, "components": int(rec.components_after),
                "edges": int(rec.edges_after), "forest_edges": int(rec.forest_edges)})
        except Exception:  # a closing worker: the record still comes back with the result
            pass

    return report


def solve_local(chunks, rmap, n_comp, prev, n_vertices, light_factor, min_degree, raw_offsets=None,
                backend="cpu"):
    """Gather the edges left and finish on this worker with the single-task solver.

    On a GPU worker the chunks already on its device stay there.
    """
    kern = kernels_for(backend)
    t0 = time.perf_counter()
    if raw_offsets is not None and rmap is None and prev is None and kern.supports_raw_solve:
        # the CPU solves the raw chunks where they lie: no prepared copy of every edge
        sol, prep = kern.solve_raw(chunks, raw_offsets, n_vertices, light_factor=light_factor,
                              min_degree=min_degree, on_round=round_reporter())
        rec = LocalRecord(kind=kern.kind, prepare=prep, solve=time.perf_counter() - t0 - prep,
                          edges_in=int(sum(r[0].shape[0] for r in chunks)), finished_total=sol.n_finished,
                          forest_edges=int(sol.chosen.shape[0]), trace=list(sol.rounds), h2d=0, d2h=0)
        return (sol.M, 0), sol.chosen, rec
    if raw_offsets is not None:
        ch = kern.prepare_many(chunks, raw_offsets, n_vertices)
    else:
        ch = kern.concat(chunks, n_vertices)
    # the last distributed round's filter-edges runs inside the solve (in place on the CPU)
    relabel, nb = _device_map(None if rmap is None else rmap[0], kern)
    kern.synchronize()
    t1 = time.perf_counter()
    m_in = len(ch)
    fin_off = 0 if prev is None else prev.finished_total
    sol = kern.solve_local(ch, n_comp, fin_off, relabel=relabel, light_factor=light_factor,
                           min_degree=min_degree, on_round=round_reporter())
    rec = LocalRecord(kind=kern.kind, prepare=t1 - t0, solve=time.perf_counter() - t1, edges_in=m_in,
                      finished_total=fin_off + sol.n_finished, forest_edges=int(sol.chosen.shape[0]),
                      trace=list(sol.rounds), h2d=ch.h2d + nb, d2h=sol.d2h)
    return (sol.M, 0), sol.chosen, rec


def sample(chunk, rate, seed, backend="cpu"):
    """A uniform sample of a chunk's (key, eid) pairs (role: filter, for the light/heavy threshold)."""
    m = count_edges(chunk)
    k = min(m, int(np.ceil(m * rate)))
    if k == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    pos = np.random.default_rng(seed).choice(m, k, replace=False)
    kern = kernels_for(backend)
    return kern.sample(kern.adopt(chunk), pos)


def split_light(chunk, rmap, tk, te, backend="cpu"):
    """Pending relabel, then the chunk's light edges (<= threshold) apart from its heavy ones."""
    kern = kernels_for(backend)
    M, _ = _device_map(None if rmap is None else rmap[0], kern)
    return kern.split_light(kern.adopt(chunk), M, tk, te)


def compose_forward(*maps):
    """One map for a whole light pass: input comp -> comp after the pass."""
    return host_kernels().compose_maps([m[0] for m in maps]), maps[-1][1]


def count_edges(chunk):
    return len(chunk)


def labels(n_vertices, *maps):
    return host_kernels().labels([m[0] for m in maps], n_vertices)


def forest_ids(*chosen):
    return host_kernels().forest_ids(list(chosen))


def chosen_rows(raw, offset, edge_ids):
    """``(edge_id, src, dst, weight)`` of the forest edges (ascending ``edge_ids``) in this raw chunk."""
    lo = np.searchsorted(edge_ids, offset)
    hi = np.searchsorted(edge_ids, offset + raw[0].shape[0])
    return (edge_ids[lo:hi], *rows(raw, offset, edge_ids))


def rows(raw, offset, edge_ids):
    """``(src, dst, weight)`` of the forest edges (ascending ``edge_ids``) in this raw chunk."""
    lo = np.searchsorted(edge_ids, offset)
    hi = np.searchsorted(edge_ids, offset + raw[0].shape[0])
    return gather_rows(*raw[:3], edge_ids[lo:hi] - offset)


def gather_rows(src, dst, w, ids):
    """``(src[ids], dst[ids], w[ids])`` as host arrays (the host kernels' ``take_rows``).

    NumPy arrays of the kernels' dtypes are gathered in parallel; anything
    else is indexed (a device array on its device, then copied to the host).
    """
    return host_kernels().take_rows(src, dst, w, ids)


THROUGHPUT = {}  # (worker address, kind) -> measured edges/second, kept for later runs


def calibrate(backend, m, want_gpu, seed=0):
    """Edges/second of this worker's kernels on a random graph of ``m`` edges.

    One round's work per chunk (prepare, map, filter-edges fused into the
    next map), best of three runs (the first pays for any JIT compilation).
    """
    rng = np.random.default_rng(seed)
    n = max(2, m // 8)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    w = rng.integers(0, 1 << 20, m).astype(np.int32)
    M = (np.arange(n) // 2).astype(np.int64)
    best = float("inf")
    kern = kernels_for(backend if want_gpu else "cpu")
    for _ in range(3):
        t0 = time.perf_counter()
        ch = kern.prepare((src, dst, w), 0, n)
        new, _ = kern.map(ch, n)
        kern.map(new, n // 2, kern.to_device(M)[0])
        kern.synchronize()
        best = min(best, time.perf_counter() - t0)
    return m / max(best, 1e-9)

"""Worker-side task functions of the engine: one public function per phase.

Each runs on a worker, inside a Dask task built by :mod:`mst_dist.engine.driver`.
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

import threading
import time

import numpy as np
from dask.sizeof import sizeof

from mst_dist.engine.records import ChunkStats, LocalRecord, RoundRecord
from mst_dist.graph import check_edges
from mst_dist.kernels import cpu, gpu
from mst_dist.kernels.gpu import DeviceChunk

@sizeof.register(DeviceChunk)
def _sizeof_device_chunk(chunk):
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


def gpu_xp(backend):
    """The GPU kernels' array module if this task should run them, else ``None``.

    GPU kernels run on a worker that advertises a ``GPU`` resource and can
    run them (CuPy and a device, or the NumPy stand-in), unless the run's
    backend is ``"cpu"``.  The choice is the worker's, not the driver's, so a
    task that Dask moves to another kind of worker (a lost worker, work
    stealing) still runs the right kernels: the result is the same either way.
    """
    if backend == "cpu" or not worker_resources().get("GPU", 0):
        return None
    if not gpu.gpu_ready()[0]:
        return None
    return gpu.array_module()


def probe():
    """Run on a GPU worker: can it run the GPU kernels? ``(ok, reason, device bytes or None)``."""
    ok, reason = gpu.gpu_ready()
    mem = None
    if ok:
        try:
            mem = gpu.device_memory(gpu.array_module())
        except Exception:  # informative only
            mem = None
    return ok, reason, mem


def _as_cpu(chunk):
    return chunk.to_cpu() if isinstance(chunk, DeviceChunk) else chunk


def prepare(raw, offset, n_vertices, backend="cpu"):
    xp = gpu_xp(backend)
    if xp is not None:
        return gpu.prepare_chunk(raw[0], raw[1], raw[2], offset, n_vertices, xp)
    return cpu.prepare_chunk(gpu.to_host(raw[0]), gpu.to_host(raw[1]), gpu.to_host(raw[2]), offset, n_vertices)


def _nbytes(arrs):
    return int(sum(a.nbytes for a in arrs))


_DEVICE_MAPS = {}
_DEVICE_MAPS_LOCK = threading.Lock()


def _device_map(M, xp):
    """A round map on the device: ``(array, bytes copied)``; copied once per worker, not per chunk."""
    with _DEVICE_MAPS_LOCK:
        hit = _DEVICE_MAPS.get(id(M))
        if hit is not None and hit[0] is M:
            return hit[1], 0
    dev, nb = gpu.to_device(M, xp)
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


def map_round(chunk, rmap, n_comp, backend="cpu", packing="rank"):
    if n_comp is None:
        n_comp = rmap[1]
    xp = gpu_xp(backend)
    t0 = time.perf_counter()
    h2d = d2h = 0
    if xp is not None:
        ch = gpu.ensure_device(chunk, packing, xp)
        m_in = len(ch)
        h2d = ch.h2d
        if rmap is None:
            cand, d2h = gpu.map_chunk(ch, n_comp)
            new = ch.replace(ch.u, ch.v, ch.pk) if h2d else ch  # its upload reported once
        else:
            M, nb = _device_map(rmap[0], xp)
            h2d += nb
            new, cand, d2h = gpu.filter_map_chunk(ch, M, n_comp)
        m_out = len(new)
    else:
        chunk = _as_cpu(chunk)
        m_in = chunk[0].shape[0]
        if rmap is None:
            cand = cpu.map_chunk(*chunk, n_comp)
            new = chunk
        else:
            new, cand = cpu.filter_map_chunk(*chunk, rmap[0], n_comp)
        m_out = new[0].shape[0]
    dt = time.perf_counter() - t0
    stats = ChunkStats(edges_in=m_in, edges=m_out, map=dt, cand_bytes=_nbytes(cand), h2d=h2d, d2h=d2h,
                       gpu_edges_in=m_in if xp is not None else 0)
    return new, (cand, stats)


def merge(*parts):
    t0 = time.perf_counter()
    cand = cpu.merge_candidates([p[0] for p in parts])
    dt = time.perf_counter() - t0
    return cand, ChunkStats.combine([p[1] for p in parts], _nbytes(cand), dt)


def contract(merged, n_comp, prev, finish=True):
    if n_comp is None:
        n_comp = prev.n_next
    cand, st = merged
    fin_off = 0 if prev is None else prev.finished_total
    t0 = time.perf_counter()
    M, chosen, n_next, n_fin = cpu.contract(*cand, n_comp, fin_off, finish)
    dt = time.perf_counter() - t0
    rec = RoundRecord(chunks=st, contract=dt, n_comp=n_comp, n_next=n_next, n_finished=n_fin,
                      finished_total=fin_off + n_fin, forest_edges=int(chosen.shape[0]),
                      map_bytes=int(M.nbytes))
    return (M, n_next), chosen, rec


def solve_local(chunks, rmap, n_comp, prev, n_vertices, light_factor, min_degree, raw_offsets=None,
           backend="cpu", packing="rank"):
    """Gather the edges left and finish on this worker with the parallel solver."""
    xp = gpu_xp(backend)
    if xp is not None:
        return _solve_local_gpu(chunks, rmap, n_comp, prev, n_vertices, raw_offsets, packing, xp,
                          light_factor, min_degree)
    t0 = time.perf_counter()
    if raw_offsets is not None:
        raws = [tuple(gpu.to_host(a) for a in r) for r in chunks]
        u, v, k, e = cpu.prepare_many(raws, raw_offsets, n_vertices)
    else:
        u, v, k, e = cpu.concat_chunks([_as_cpu(c) for c in chunks], n_vertices)
    t1 = time.perf_counter()
    m_in = int(u.shape[0])
    fin_off = 0 if prev is None else prev.finished_total
    t2 = time.perf_counter()
    trace = []
    # the last distributed round's filter-edges runs inside the solve, in place
    M, chosen, n_fin = cpu.solve_local(u, v, k, e, n_comp, fin_off, light_factor=light_factor,
                                       min_degree=min_degree, trace=trace,
                                       relabel=None if rmap is None else rmap[0])
    rec = LocalRecord(kind="cpu", prepare=t1 - t0, solve=time.perf_counter() - t2, edges_in=m_in,
                      finished_total=fin_off + n_fin, forest_edges=int(chosen.shape[0]), trace=trace)
    return (M, 0), chosen, rec


def _solve_local_gpu(chunks, rmap, n_comp, prev, n_vertices, raw_offsets, packing, xp, light_factor, min_degree):
    """The single-task solve on this worker's device (the chunks already there stay there)."""
    t0 = time.perf_counter()
    if raw_offsets is not None:
        dev = [gpu.prepare_chunk(r[0], r[1], r[2], off, n_vertices, xp)
               for r, off in zip(chunks, raw_offsets)]
    else:
        dev = [gpu.ensure_device(c, packing, xp) for c in chunks]
    ch = gpu.concat(dev, xp)
    h2d = sum(c.h2d for c in dev)
    relabel = None
    if rmap is not None:
        relabel, nb = _device_map(rmap[0], xp)
        h2d += nb
    gpu.synchronize(xp)
    t1 = time.perf_counter()
    fin_off = 0 if prev is None else prev.finished_total
    trace = []
    M, chosen, n_fin = gpu.solve_local(ch, n_comp, fin_off, relabel=relabel, trace=trace,
                                       light_factor=light_factor, min_degree=min_degree)
    rec = LocalRecord(kind="gpu", prepare=t1 - t0, solve=time.perf_counter() - t1, edges_in=len(ch),
                      finished_total=fin_off + n_fin, forest_edges=int(chosen.shape[0]), trace=trace,
                      h2d=h2d, d2h=int(M.nbytes + chosen.nbytes))
    return (M, 0), chosen, rec


def sample(chunk, rate, seed):
    """A uniform sample of a chunk's (key, eid) pairs (role: filter, for the light/heavy threshold)."""
    m = count_edges(chunk)
    k = min(m, int(np.ceil(m * rate)))
    if k == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    pos = np.random.default_rng(seed).choice(m, k, replace=False)
    if isinstance(chunk, DeviceChunk):
        return gpu.sample(chunk, pos)
    return chunk[2][pos], chunk[3][pos]


def split_light(chunk, rmap, tk, te):
    """Pending relabel, then the chunk's light edges (<= threshold) apart from its heavy ones."""
    if isinstance(chunk, DeviceChunk):
        M = None if rmap is None else _device_map(rmap[0], chunk.xp)[0]
        return gpu.split_light(chunk, M, tk, te)
    return cpu.split_light(*chunk, None if rmap is None else rmap[0], tk, te)


def compose_forward(*maps):
    """One map for a whole light pass: input comp -> comp after the pass."""
    P = maps[0][0].copy()
    for M in maps[1:]:
        cpu._p_compose_forward(P, M[0])
    return P, maps[-1][1]


def count_edges(chunk):
    return len(chunk) if isinstance(chunk, DeviceChunk) else int(chunk[0].shape[0])


def labels(n_vertices, *maps):
    return cpu.compose_labels([m[0] for m in maps], n_vertices)


def forest_ids(*chosen):
    return cpu.sorted_ids(list(chosen))


def rows(raw, offset, edge_ids):
    lo = np.searchsorted(edge_ids, offset)
    hi = np.searchsorted(edge_ids, offset + raw[0].shape[0])
    loc = edge_ids[lo:hi] - offset
    return tuple(gpu.take_to_host(a, loc) for a in raw[:3])


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
    xp = gpu_xp(backend) if want_gpu else None
    bk = backend if xp is not None else "cpu"
    for _ in range(3):
        t0 = time.perf_counter()
        ch = prepare((src, dst, w), 0, n, bk)
        new, _ = map_round(ch, None, n, bk, "i32")
        map_round(new, (M, n // 2), n // 2, bk, "i32")
        if xp is not None:
            gpu.synchronize(xp)
        best = min(best, time.perf_counter() - t0)
    return m / max(best, 1e-9)


def transfer_log(dask_worker, since):
    out = []
    for ev in list(getattr(dask_worker, "transfer_incoming_log", [])):
        if ev.get("start", 0) < since:
            continue
        for k, nb in ev.get("keys", {}).items():
            k = k if isinstance(k, str) else str(k)
            if k.startswith("mst-"):
                out.append((k, int(nb)))
    return out

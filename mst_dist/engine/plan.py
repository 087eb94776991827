"""Sizing a run: how many chunks, and when one task finishes the forest on one worker."""
from __future__ import annotations

import math
from dataclasses import dataclass

from mst_dist.kernels import backend as kernel_backend

#: Host bytes of one edge in a working chunk: u, v (int32), key (uint64), eid (int64).
BYTES_PER_EDGE = 24
#: Worker bytes per edge of a run that keeps its chunks resident: the raw rows, the
#: working chunk, the light/heavy split and the round's copies (measured on R-MAT).
RESIDENT_BYTES_PER_EDGE = 70
#: Worker bytes per edge of a chunk in flight in a streaming pass: the raw rows as loaded,
#: the working chunk, the kept slice and its rows, and their temporaries.
PASS_BYTES_PER_EDGE = 120
#: Most edges in one chunk of a streaming pass: what is in flight stays small (a task more
#: per 4M edges costs milliseconds).
STREAM_CHUNK_EDGES = 1 << 22
#: Worker bytes per edge of a streaming pass's slice while it is solved: the compact chunk (24),
#: the kept rows (24), the single-task solve's copy and scratch.
SLICE_BYTES_PER_EDGE = 80
#: Worker bytes per edge of a slice solved by partitioned rounds (a spread streaming run): a
#: partitioned run's chunks, candidates and exchanges (about 148 measured on Erdős–Rényi graphs)
#: and the pass's kept rows.
SPREAD_SLICE_BYTES_PER_EDGE = 170
#: Bytes per vertex a streaming run holds on the worker that solves its slices, whatever its thread
#: count (ids int32 below 2**31 vertices).  While a slice is solved: the vertex map (4), the solve's
#: cheapest-edge slot shared by its threads (8: a packed key and position, kept by compare-and-swap),
#: parent (4) and flag (1), the round maps (4 the first, the later ones smaller) and the map they
#: compose to (4), the forest's ids (8 an edge); none of these outlives the solve but the map.  At
#: the end, on a worker that is also the client (the embedded default): the labels (8, numbered
#: through 4 more), and the forest's rows joined from the passes.  Measured on Erdős–Rényi graphs
#: of 2**23 to 2**26 vertices with half as many edges (``python -m benchmarks.vertex_bytes``).
STREAM_VERTEX_BYTES = 42
#: Bytes per edge of a streaming run's slice while it is solved: its chunks, their rows, the
#: solve's copy.
STREAM_SLICE_EDGE_BYTES = 56
#: Edges per chunk above which a CPU cluster gets more chunks than worker threads.
CPU_CHUNK_EDGES = 16_000_000
#: Edges per chunk above which a GPU worker gets more than one chunk.
GPU_CHUNK_EDGES = 2**30


@dataclass
class Plan:
    """How a run is cut and finished (decided before any chunk exists)."""

    partitions: int     #: number of edge chunks
    local_finish: int   #: at most this many edges left: one task finishes on one worker


def plan_run(n_edges, *, kinds, threads, min_memory, device_memory=None, partitions=None,
             local_finish="auto", throughput=None, streaming=False) -> Plan:
    """The :class:`Plan` of a run on workers of the given ``kinds`` (worker -> "cpu"/"gpu").

    ``partitions``: as asked, else one chunk per worker thread on CPU workers
    (one per GPU worker on GPU-only clusters), more for big graphs, and on a
    mixed cluster enough that the slowest worker (by ``throughput``) gets one.
    ``local_finish``: as asked, else on one worker everything that fits in a
    quarter of its memory, on more workers ``max(2M, m / (4 * workers))``.
    ``streaming``: chunks are also small enough that every thread of the
    smallest worker can hold one in flight (:data:`PASS_BYTES_PER_EDGE` an
    edge) within a quarter of its memory, and at most :data:`STREAM_CHUNK_EDGES`.
    """
    m = int(n_edges)
    n_workers = len(kinds)
    chosen = partitions is not None and partitions != "auto"
    if not chosen:
        if set(kinds.values()) == {"gpu"}:
            partitions = max(n_workers, math.ceil(m / GPU_CHUNK_EDGES))
        else:
            partitions = max(threads, math.ceil(m / CPU_CHUNK_EDGES))
        if throughput and set(kinds.values()) == {"cpu", "gpu"}:
            lo = min(throughput.values())
            want = math.ceil(sum(throughput.values()) / lo) + n_workers
            partitions = max(partitions, min(want, 64 * n_workers))
        if streaming:
            per_worker = max(1, math.ceil(threads / max(1, n_workers)))
            in_flight = max(1, min_memory // (4 * per_worker * PASS_BYTES_PER_EDGE))
            partitions = max(partitions, math.ceil(m / min(in_flight, STREAM_CHUNK_EDGES)))
    partitions = max(1, min(int(partitions), max(1, m)))
    fits = min_memory // (4 * BYTES_PER_EDGE)
    if "gpu" in kinds.values():
        # the single task may run on a GPU: its edges must fit the device and one chunk (the
        # limits are the backend's, the same on every array module: the stand-in tells them)
        gpu = kernel_backend("gpu", xp="numpy")
        fits = min(fits, gpu.max_chunk_edges)
        if device_memory:
            fits = min(fits, device_memory // gpu.device_bytes_per_edge)
    if local_finish == "auto":
        local_finish = fits if n_workers == 1 else min(fits, max(2_000_000, m // (4 * n_workers)))
    return Plan(partitions=partitions, local_finish=int(local_finish))


def should_stream(mode, graph, total_memory) -> bool:
    """Whether a run streams its edges from their source (see :mod:`mst_dist.engine.passes`).

    ``mode``: ``"always"``, ``"never"``, or ``"auto"``: when the graph's
    resident chunks (:data:`RESIDENT_BYTES_PER_EDGE` each edge) would take
    more than half the workers' memory (``total_memory`` bytes).  ``auto``
    never streams a graph whose edges are already in GPU memory: its
    chunks are views of those arrays, and the workers' host memory limits
    do not hold them.
    """
    if mode in ("always", True):
        return True
    if mode in ("never", False):
        return False
    if graph.on_device:
        return False
    return graph.n_edges * RESIDENT_BYTES_PER_EDGE > total_memory // 2


def slice_budget(total_memory, per_edge=SLICE_BYTES_PER_EDGE, share=4) -> int:
    """Most edges one slice of a streaming run may keep: ``1 / share`` of the workers' memory (a quarter) at
    ``per_edge`` bytes an edge."""
    return max(1, int(total_memory) // (share * per_edge))


def stream_memory(n_vertices, n_edges, threads, total_memory) -> int:
    """Bytes a streaming run needs on the worker that solves its slices: :data:`STREAM_VERTEX_BYTES` a
    vertex, and a slice of at most :func:`slice_budget` edges.  ``threads`` (that worker's) changes
    nothing: the solve's threads share one cheapest-edge slot per component."""
    slice_edges = min(slice_budget(total_memory), int(n_edges))
    return int(n_vertices) * STREAM_VERTEX_BYTES + slice_edges * STREAM_SLICE_EDGE_BYTES


@dataclass(frozen=True)
class MemoryBudget:
    """The memory a run plans against: what Dask's memory manager lets each worker use.

    A worker's memory manager pauses it when its *process* holds more than
    ``distributed.worker.memory.pause`` of the worker's limit (0.8 by
    default).  Workers that are threads of one process (an in-process
    ``LocalCluster``: ``processes=False``) therefore share one budget, the
    smallest of their limits: each is planned a share of it, not the whole
    limit Dask lists for it.  The *room* a refusal checks against is what the
    manager leaves a run: the pause threshold less what the process already
    holds (a Python process with the kernels, and in-process also the client
    and the scheduler).
    """

    per_worker: dict   #: worker -> bytes planned for it (its process's limit over the workers in it; 0: no limit)
    room: dict         #: worker -> bytes a run may add before its process is paused (its share)
    processes: int     #: worker processes (budgets) among the workers
    held: int = 0      #: the most any worker process holds now (0 when the manager does not pause)
    fraction: float | None = None  #: of a limit, where the manager pauses (None: it never does)

    @property
    def smallest(self) -> int:
        return min(self.per_worker.values(), default=0)

    @property
    def largest(self) -> int:
        return max(self.per_worker.values(), default=0)

    @property
    def total(self) -> int:
        return sum(self.per_worker.values())


def pause_fraction():
    """Of a worker's memory limit, the process memory at which Dask's memory manager stops it: the
    ``pause`` setting, else ``terminate`` (the nanny kills it), else ``None`` (neither is on)."""
    import dask.config

    for name in ("pause", "terminate"):
        value = dask.config.get(f"distributed.worker.memory.{name}", False)
        if value:
            return float(value)
    return None


def room_of(limit, held, fraction) -> int:
    """Bytes a run may add in a process of memory ``limit`` that holds ``held`` already (see
    :class:`MemoryBudget`): the limit itself where the manager never pauses (``fraction`` None)."""
    if fraction is None or not limit:
        return int(limit)
    return max(0, int(limit * fraction) - int(held))


def _process_of(address):
    """The process a worker runs in: ``(host, pid)`` of an in-process address (``inproc://host/pid/n``),
    else the worker's own address (a process of its own)."""
    if address.startswith("inproc://"):
        host, _, rest = address[len("inproc://"):].partition("/")
        return host, rest.partition("/")[0]
    return address


def memory_budget(workers, fraction="auto") -> MemoryBudget:
    """The :class:`MemoryBudget` of ``workers`` (``{address: info}`` as the scheduler lists them).

    Workers of one process (Dask's in-process addresses name the process)
    share the smallest of their ``memory_limit``: each gets that over their
    count, and as much of the room the process has left below ``fraction``
    (``"auto"``: :func:`pause_fraction`; ``None``: the whole limit) of it, by the memory the process holds
    now (the workers' ``metrics.memory``).  A worker without a limit (0 or
    ``None``) is planned 0 (unknown).
    """
    fraction = pause_fraction() if fraction == "auto" else fraction
    groups = {}
    for address in workers:
        groups.setdefault(_process_of(address), []).append(address)
    per_worker, room, most = {}, {}, 0
    for members in groups.values():
        limits = [int(workers[a].get("memory_limit") or 0) for a in members]
        limit = min(limits) if all(limits) else 0
        held = max(int((workers[a].get("metrics") or {}).get("memory") or 0) for a in members)
        most = max(most, held)
        per_worker.update(dict.fromkeys(members, limit // len(members)))
        room.update(dict.fromkeys(members, room_of(limit, held, fraction) // len(members)))
    return MemoryBudget(per_worker=per_worker, room=room, processes=len(groups),
                        held=most if fraction is not None else 0, fraction=fraction)

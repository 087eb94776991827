"""The first step of every run: the workers, the kernels each runs, and what they can hold.

:func:`connect` asks the scheduler once and returns a :class:`ClusterLayout`;
the kind of run and its plan are decided from it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from mst_dist.engine.cluster_info import scheduler_workers
from mst_dist.engine.placement import measure_throughput, worker_kinds
from mst_dist.engine.plan import memory_budget
from mst_dist.engine.accounting import TransferTally
from mst_dist.engine.scratch import ScratchPlugin
from mst_dist.errors import GraphTooLargeError
from mst_dist.graph import human_bytes, vertex_memory

logger = logging.getLogger("mst_dist")


@dataclass(frozen=True)
class ClusterLayout:
    """The workers a run uses, as the scheduler listed them when it started."""

    workers: tuple              #: worker addresses, sorted
    threads: int                #: worker threads in all
    kinds: dict                 #: worker -> "cpu" or "gpu": the kernels it runs
    device_memory: int | None   #: the smallest GPU worker's device memory (None: no GPU worker)
    min_memory: int             #: the smallest worker's memory limit (16 GiB when unknown)
    max_memory: int             #: the largest worker's memory limit (0 when unknown)
    total_memory: int           #: the workers' memory limits added up
    throughput: dict | None     #: worker -> relative edges/s, where chunks are dealt out by it
    measured: dict | None       #: the throughput measured (or given) on a mixed cluster
    #: the room (see :class:`~mst_dist.engine.plan.MemoryBudget`) of the roomiest worker and of all
    #: (None: their memory limits), what the largest worker process holds already, and the fraction of
    #: a limit at which Dask pauses a worker (None: never)
    max_room: int | None = None
    total_room: int | None = None
    held: int = 0
    pause: float | None = None

    @property
    def room(self) -> int:
        """Bytes the roomiest worker may take for a run before Dask's memory manager pauses it."""
        return self.max_memory if self.max_room is None else self.max_room

    @property
    def all_room(self) -> int:
        """Bytes all the workers may take for a run before their memory managers pause them."""
        return self.total_memory if self.total_room is None else self.total_room

    @property
    def n_workers(self) -> int:
        return len(self.workers)

    def backend_used(self) -> str:
        """``cpu``, ``gpu`` or ``mixed``: the kernels the chunks' workers run."""
        used = set(self.kinds.values()) if self.throughput is None else {self.kinds[w] for w in self.throughput}
        return used.pop() if len(used) == 1 else "mixed"


def _held(cluster):
    """``", below Dask's pause at 80% of its 600.0 MiB, its process holding 300.0 MiB already"``, where the
    memory manager pauses workers ("" where it does not)."""
    if cluster.pause is None or cluster.max_room is None:
        return ""
    return (f", below Dask's pause at {cluster.pause:.0%} of its {human_bytes(cluster.max_memory)} limit, the "
            f"process holding {human_bytes(cluster.held)} already")


def check_vertex_memory(graph, cluster):
    """Refuse a graph whose per-vertex state would not fit in the largest worker (its room; 0: unknown)."""
    need = vertex_memory(graph.n_vertices)
    memory = cluster.room
    if cluster.max_memory and need > memory:
        raise GraphTooLargeError(
            f"n_vertices = {graph.n_vertices} would need about {human_bytes(need)} of per-vertex arrays on one "
            f"worker, more than the largest worker has room for ({human_bytes(memory)}{_held(cluster)}): "
            f"relabel the vertex ids to "
            f"0..n-1 (e.g. numpy.unique(ids, return_inverse=True))",
            source=graph.name)


def check_stream_memory(graph, cluster):
    """Refuse a streaming run whose vertices would not fit the worker that solves its slices (see
    :func:`~mst_dist.engine.plan.stream_memory`; an unknown memory limit is not checked)."""
    from mst_dist.engine.plan import stream_memory

    memory = cluster.room
    threads = -(-cluster.threads // max(1, cluster.n_workers))
    need = stream_memory(graph.n_vertices, graph.n_edges, threads, cluster.total_memory)
    if cluster.max_memory and need > memory:
        raise GraphTooLargeError(
            f"n_vertices = {graph.n_vertices}, streamed, would need about {human_bytes(need)} on the worker that "
            f"solves each slice of the edges (its per-vertex arrays and the slice), more "
            f"than the largest worker has room for ({human_bytes(memory)}{_held(cluster)}); it is refused before "
            f"any work",
            source=graph.name)


def _workers(client):
    workers = scheduler_workers(client)
    if not workers:
        # a cluster that has just started may not have listed its workers yet
        try:
            client.wait_for_workers(1, timeout=60)
        except Exception as e:  # distributed raises TimeoutError
            raise RuntimeError("the Dask cluster has no workers (waited 60 s)") from e
        workers = scheduler_workers(client)
    return workers


def connect(client, graph, spec, token) -> ClusterLayout:
    """The :class:`ClusterLayout` of ``client``'s cluster for a run of ``graph`` under ``spec``.

    Registers the scratch plugin (the CPU kernels' scratch within each
    worker's memory limit, workers that join later too) and the transfer
    tally (bytes moved per round), probes which
    workers run the GPU kernels, and on a mixed cluster measures (or takes)
    their throughput.
    """
    workers = _workers(client)
    # the tally only where bytes can cross between workers
    for plugin in (ScratchPlugin(), TransferTally()) if len(workers) > 1 else (ScratchPlugin(),):
        try:
            client.register_plugin(plugin, name=plugin.name)
        except Exception:  # an old scheduler: default arenas, bytes moved stay estimates
            logger.debug("could not register the %s plugin", plugin.name, exc_info=True)
    # in-process workers share their process's limit: planned as Dask's memory manager measures them
    budget = memory_budget(workers)
    min_memory = budget.smallest or 2**34
    kinds, device_memory = worker_kinds(client, workers, spec.backend)
    present = set(kinds.values())
    throughput = measured = None
    if spec.backend == "gpu" and "cpu" in present:
        # chunks only on the GPU workers; the CPU workers help with merges
        throughput = {w: 1.0 for w, k in kinds.items() if k == "gpu"}
    elif present == {"cpu", "gpu"}:
        throughput = measured = measure_throughput(client, kinds, spec.backend, token, spec.throughput)
    return ClusterLayout(workers=tuple(sorted(workers)), threads=sum(w.get("nthreads", 1) for w in workers.values()),
                         kinds=kinds, device_memory=device_memory, min_memory=min_memory, max_memory=budget.largest,
                         total_memory=budget.total or min_memory * len(workers), throughput=throughput,
                         measured=measured, max_room=max(budget.room.values(), default=0),
                         total_room=sum(budget.room.values()), held=budget.held, pause=budget.fraction)

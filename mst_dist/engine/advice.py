"""Shapes of run in which a refused graph fits: the advice a :class:`~mst_dist.GraphTooLargeError` ends with.

A run is refused before any work when the graph's per-vertex state or a
streaming run's slices would not fit its workers' memory
(:func:`~mst_dist.engine.runs.choose_kind`).  :func:`advise` tries the
shapes a user can ask for -- one thread per worker, the per-vertex state
spread over more worker processes (``vertex_partition="always"``), more
memory per worker -- through the same checks that refused the run, and
keeps those that pass: advice is never a shape the engine would refuse in
turn.  Each advised worker process is counted as holding, before the run,
what the fullest worker process of the refused cluster holds (Dask's
memory manager counts it too).
"""
from __future__ import annotations

import dataclasses

from mst_dist.engine.plan import room_of
from mst_dist.errors import Advice, GraphTooLargeError

__all__ = ["advise", "MAX_ADVISED_WORKERS", "SMALLEST_ADVISED_WORKER"]

#: Most workers a spread is advised over.
MAX_ADVISED_WORKERS = 64
#: Least memory per worker process a split of the cluster's memory is advised at: a Python process
#: with the kernels loaded holds a few hundred MiB of its own, which the engine's checks do not
#: count.  Workers with less than this each are advised more of them at the memory they have.
SMALLEST_ADVISED_WORKER = 2 * 2**30


def _shape(cluster, n_workers, threads, memory):
    """``cluster`` as a layout of ``n_workers`` worker processes of ``threads`` threads and ``memory`` bytes
    each, each process holding as much before the run as the fullest one of ``cluster`` does."""
    names = tuple(f"advised-{i}" for i in range(n_workers))
    kind = "gpu" if set(cluster.kinds.values()) == {"gpu"} else "cpu"
    room = room_of(memory, cluster.held, cluster.pause)
    return dataclasses.replace(cluster, workers=names, threads=n_workers * threads, kinds=dict.fromkeys(names, kind),
                               min_memory=memory, max_memory=memory, total_memory=n_workers * memory,
                               throughput=None, measured=None, max_room=room, total_room=n_workers * room)


def _fits(choose, spec, cluster):
    try:
        choose(spec, cluster)
    except GraphTooLargeError:
        return False
    return True


def _fewer_threads(choose, spec, cluster, threads):
    if threads <= 1:
        return None
    shape = dataclasses.replace(cluster, threads=cluster.n_workers)
    if not _fits(choose, spec, shape):
        return None
    return Advice("one thread per worker", cluster=(("threads_per_worker", 1),))


def _spread(choose, spec, cluster, threads):
    """The fewest worker processes over which the per-vertex state fits: within the cluster's memory
    (split evenly, each at least :data:`SMALLEST_ADVISED_WORKER`) where it can, else each with the
    memory of the largest worker now."""
    spread = dataclasses.replace(spec, vertex_partition="always")
    total, largest = cluster.total_memory, cluster.max_memory
    floor = min(largest, SMALLEST_ADVISED_WORKER)
    for split in (True, False):
        for n in range(max(2, cluster.n_workers), MAX_ADVISED_WORKERS + 1):
            memory = total // n if split else largest
            if split and memory < floor:
                break
            per_worker = max(1, (threads * cluster.n_workers) // n)
            if _fits(choose, spread, _shape(cluster, n, per_worker, memory)):
                return Advice(f"spread the per-vertex state over {n} worker processes",
                              keywords=(("vertex_partition", "always"),),
                              cluster=(("n_workers", n), ("threads_per_worker", per_worker), ("processes", True),
                                       ("memory_limit", memory)))
    return None


def _more_memory(choose, spec, cluster, threads):
    """The least memory per worker (to a MiB) with which the run fits as it is shaped now."""
    lo, hi = max(1, cluster.max_memory >> 20), 1 << 30  # MiB
    if not _fits(choose, spec, _shape(cluster, cluster.n_workers, threads, hi << 20)):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if _fits(choose, spec, _shape(cluster, cluster.n_workers, threads, mid << 20)):
            hi = mid
        else:
            lo = mid + 1
    settings = (("processes", True),) if cluster.n_workers > 1 else ()
    return Advice("more memory per worker", cluster=(*settings, ("memory_limit", lo << 20)))


def advise(spec, cluster, choose):
    """The :class:`~mst_dist.errors.Advice` of a refused run: shapes in which ``choose(spec, cluster)`` passes.

    ``choose`` is the refusing check (it raises
    :class:`~mst_dist.GraphTooLargeError`); ``cluster`` the
    :class:`~mst_dist.engine.runs.connect.ClusterLayout` it refused.
    Tried in turn: one thread per worker, the per-vertex state spread over
    the fewest worker processes that hold it, more memory per worker.
    """
    threads = -(-cluster.threads // max(1, cluster.n_workers))
    found = (make(choose, spec, cluster, threads) for make in (_fewer_threads, _spread, _more_memory))
    return tuple(a for a in found if a is not None)

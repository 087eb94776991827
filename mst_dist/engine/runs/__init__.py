"""Kinds of run: one MSF computation is a spec plus a kind.

:func:`execute` runs one computation: it opens the checkpoint (if asked),
connects to the cluster (:mod:`~mst_dist.engine.runs.connect`), picks the
kind of run and executes its steps (:class:`~mst_dist.engine.runs.base.Run`:
plan, load, rounds, finish, write) under a watchdog.  The kinds:

``resident`` (:class:`~mst_dist.engine.runs.resident.ResidentRun`)
    the edge chunks stay on the workers for the whole run;
``streaming`` (:class:`~mst_dist.engine.runs.streaming.StreamingRun`)
    the edges are read from their source in passes, one slice of the strict
    order at a time, when they would not fit in the workers' memory;
``partitioned`` (:class:`~mst_dist.engine.runs.partitioned.PartitionedRun`)
    the chunks stay on the workers and the per-vertex state is cut into
    ranges of component ids, each owned by a task, when it would not fit on
    one worker;
``spread-streaming`` (:class:`~mst_dist.engine.runs.spread_streaming.SpreadStreamingRun`)
    both: the edges streamed in passes, the vertex map cut into ranges of
    vertices and each slice solved by partitioned rounds.

A new kind is a new module with a :class:`Run` subclass, listed in
:data:`KINDS` and chosen by :func:`choose_kind`.
"""
from __future__ import annotations

import dataclasses
import logging
import time

from distributed.scheduler import KilledWorker

from mst_dist import config
from mst_dist.engine.cluster_info import scheduler_workers
from mst_dist.errors import ExchangeLostError, GraphTooLargeError, MSTError
from mst_dist.graph import human_bytes, vertex_memory
from mst_dist.engine import interrupt
from mst_dist.engine.advice import advise
from mst_dist.engine.keys import new_token
from mst_dist.engine.plan import should_stream
from mst_dist.engine.runs.base import Run
from mst_dist.engine.runs.checkpointing import RunCheckpoint
from mst_dist.engine.runs.connect import ClusterLayout, check_stream_memory, check_vertex_memory, connect
from mst_dist.engine.runs.partitioned import PartitionedRun
from mst_dist.engine.runs.resident import ResidentRun
from mst_dist.engine.runs.spread_streaming import SpreadStreamingRun
from mst_dist.engine.runs.streaming import StreamingRun
from mst_dist.engine.watchdog import Watchdog, cancel_run, stalled_from_killed

logger = logging.getLogger(__name__)

__all__ = ["KINDS", "Run", "PartitionedRun", "ResidentRun", "SpreadStreamingRun", "StreamingRun", "choose_kind",
           "execute"]

#: Every kind of run, by name.
KINDS = {k.kind: k for k in (ResidentRun, StreamingRun, PartitionedRun, SpreadStreamingRun)}


def choose_kind(spec, graph, cluster: ClusterLayout, ckpt: RunCheckpoint | None) -> str:
    """The kind of run for ``graph`` under ``spec`` on ``cluster``.

    A graph the cluster cannot hold is a :class:`~mst_dist.GraphTooLargeError`
    ending with the shapes in which it fits, by these same checks
    (:func:`~mst_dist.engine.advice.advise`).
    """
    try:
        return _kind_of(spec, graph, cluster, ckpt)
    except GraphTooLargeError as e:
        if ckpt is not None and ckpt.mode is not None:
            raise  # a resumed run goes on in its saved shape
        raise e.with_advice(advise(spec, cluster, lambda s, c: _kind_of(s, graph, c, None))) from None


def _kind_of(spec, graph, cluster: ClusterLayout, ckpt: RunCheckpoint | None) -> str:
    """The kind of run for ``graph`` under ``spec`` on ``cluster``, without advice.

    A run resumed from a checkpoint goes on as the saved run went (``auto``
    may now decide otherwise).  Edges are streamed when asked to, or
    (``auto``) when they would not fit in the workers' memory.  The
    per-vertex state is cut into ranges (``partitioned``, or with streaming
    ``spread-streaming``) when asked to, or (``auto``, on a cluster of
    several workers) when it would not fit comfortably on one worker (a
    resident run) or not at all (a streaming run); otherwise a graph whose
    per-vertex state no worker can hold is refused here, before any work.
    """
    streams = should_stream(spec.stream, graph, cluster.total_memory)
    mode = spec.vertex_partition
    if ckpt is not None and ckpt.mode is not None:
        streams = ckpt.mode in ("stream", "spread-stream")
        mode = "always" if ckpt.mode in ("partitioned", "spread-stream") else "never"
    need = vertex_memory(graph.n_vertices)
    spread = mode == "always" or (mode == "auto" and cluster.n_workers > 1 and (
        # one worker holds every range of a partitioned run: nothing to spread
        (not streams and need > cluster.min_memory // 4) or (streams and not _streams_on_one(graph, cluster))))
    if spread:
        if cluster.max_memory and need > cluster.all_room // 2:  # no memory limit (0): nothing to check
            raise GraphTooLargeError(
                f"n_vertices = {graph.n_vertices} would need about {human_bytes(need)} of per-vertex arrays, "
                f"more than half the cluster's room ({human_bytes(cluster.all_room)}) even spread over "
                f"its workers: relabel the vertex ids to 0..n-1 (e.g. numpy.unique(ids, return_inverse=True))",
                source=graph.name)
        return SpreadStreamingRun.kind if streams else PartitionedRun.kind
    check_vertex_memory(graph, cluster)
    if streams:
        check_stream_memory(graph, cluster)
    return StreamingRun.kind if streams else ResidentRun.kind


def _streams_on_one(graph, cluster) -> bool:
    """Whether a streaming run's vertex map fits the worker that solves its slices."""
    try:
        check_vertex_memory(graph, cluster)
        check_stream_memory(graph, cluster)
    except GraphTooLargeError:
        return False
    return True


def execute(graph, client, spec):
    """Compute the forest of ``graph`` on ``client`` as ``spec`` says: an :class:`~mst_dist.result.MSFResult`.

    A run that lost parts of an exchange with a worker
    (:class:`~mst_dist.errors.ExchangeLostError`) is made again, from its
    checkpoint where it has one, up to ``mst.exchange-attempts`` times in all.
    """
    attempts = max(1, int(config.get("exchange-attempts", None, 3)))
    for attempt in range(1, attempts + 1):
        workers = _workers(client)
        try:
            return _execute_once(graph, client, spec)
        except Exception as e:
            # a refusal or a stall is raised as it is; a lost exchange, or any failure after a worker was lost
            lost = isinstance(e, ExchangeLostError) or (not isinstance(e, MSTError)
                                                        and not workers <= _workers(client))
            if not lost or attempt == attempts:
                if lost:
                    raise ExchangeLostError(f"a worker was lost with parts of an exchange in each of {attempts} "
                                            f"attempts (mst.exchange-attempts): {e}") from e
                raise
            logger.warning("a worker was lost with parts of an exchange; the run starts again%s (attempt %d of %d)",
                           " from its checkpoint" if spec.checkpoint else "", attempt + 1, attempts)
            if spec.checkpoint is not None:
                spec = dataclasses.replace(spec, resume=True)  # what this attempt saved is this run's


def _workers(client):
    """The addresses of the cluster's workers now (none where the scheduler cannot be asked)."""
    try:
        return set(scheduler_workers(client))
    except Exception:
        return set()


def _execute_once(graph, client, spec):
    """One attempt of :func:`execute`.

    Waits are bounded: a :class:`~mst_dist.engine.watchdog.Watchdog` stops
    the run with a :class:`~mst_dist.engine.watchdog.ClusterStalledError`
    once no worker has been able to make progress for ``mst.stall-timeout``
    seconds, and a task that killed its workers (Dask's ``KilledWorker``) is
    the same error at once.
    """
    token = new_token()
    t_start, wall_start = time.perf_counter(), time.time()
    with Watchdog(client, token, config.get("stall-timeout", None, 300)) as dog:
        try:
            ckpt = RunCheckpoint.open(client, graph, spec, token)
            cluster = connect(client, graph, spec, token)
            kind = KINDS[choose_kind(spec, graph, cluster, ckpt)]
            run = kind(graph, client, spec, cluster, token=token, checkpoint=ckpt, t_start=t_start,
                       wall_start=wall_start)
            return run.execute()
        except KeyboardInterrupt:
            interrupt.quiet_after_interrupt()  # the tasks left running make noise as the cluster closes
            _leave_nothing(client, token)
            raise
        except Exception as e:
            _leave_nothing(client, token)
            if dog.error is not None:
                raise dog.error from e
            if isinstance(e, KilledWorker):
                raise stalled_from_killed(e) from e
            raise


def _leave_nothing(client, token):
    """A failed or interrupted run: none of its tasks stay on the scheduler, its scratch is released."""
    from mst_dist.engine.scratch import release_scratch

    try:
        cancel_run(client, token, "mst-dist: the run failed")
        client.run(release_scratch, None)  # later, and only where no other run has taken scratch since
    except Exception:  # a client or scheduler gone: nothing is left there either
        pass

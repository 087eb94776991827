"""Kinds of run: one MSF computation is a spec plus a kind.

:func:`execute` runs one computation: it opens the checkpoint (if asked),
connects to the cluster (:mod:`~mst_dist.engine.runs.connect`), picks the
kind of run and executes its steps (:class:`~mst_dist.engine.runs.base.Run`:
plan, load, rounds, finish, write) under a watchdog.  The kinds:

``resident`` (:class:`~mst_dist.engine.runs.resident.ResidentRun`)
    the edge chunks stay on the workers for the whole run;
``streaming`` (:class:`~mst_dist.engine.runs.streaming.StreamingRun`)
    the edges are read from their source in passes, one slice of the strict
    order at a time, when they would not fit in the workers' memory.

A new kind is a new module with a :class:`Run` subclass, listed in
:data:`KINDS` and chosen by :func:`choose_kind`.
"""
from __future__ import annotations

import time

from distributed.scheduler import KilledWorker

from mst_dist import config
from mst_dist.engine import interrupt
from mst_dist.engine.keys import new_token
from mst_dist.engine.plan import should_stream
from mst_dist.engine.runs.base import Run
from mst_dist.engine.runs.checkpointing import RunCheckpoint
from mst_dist.engine.runs.connect import ClusterLayout, connect
from mst_dist.engine.runs.resident import ResidentRun
from mst_dist.engine.runs.streaming import StreamingRun
from mst_dist.engine.watchdog import Watchdog, stalled_from_killed

__all__ = ["KINDS", "Run", "ResidentRun", "StreamingRun", "choose_kind", "execute"]

#: Every kind of run, by name.
KINDS = {ResidentRun.kind: ResidentRun, StreamingRun.kind: StreamingRun}


def choose_kind(spec, graph, cluster: ClusterLayout, ckpt: RunCheckpoint | None) -> str:
    """The kind of run for ``graph`` under ``spec`` on ``cluster``.

    A run resumed from a checkpoint goes on as the saved run went (``auto``
    may now decide otherwise); else it streams when asked to, or (``auto``)
    when the graph would not fit in the workers' memory.
    """
    if ckpt is not None and ckpt.mode is not None:
        return StreamingRun.kind if ckpt.mode == "stream" else ResidentRun.kind
    return StreamingRun.kind if should_stream(spec.stream, graph, cluster.total_memory) else ResidentRun.kind


def execute(graph, client, spec):
    """Compute the forest of ``graph`` on ``client`` as ``spec`` says: an :class:`~mst_dist.result.MSFResult`.

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
            raise
        except Exception as e:
            if dog.error is not None:
                raise dog.error from e
            if isinstance(e, KilledWorker):
                raise stalled_from_killed(e) from e
            raise

"""Kinds of run: one MSF computation is a spec, an edge source and a vertex store.

:func:`execute` runs one computation: it opens the checkpoint (if asked),
connects to the cluster (:mod:`~mst_dist.engine.runs.connect`), picks the
run's parts and executes its steps (:class:`~mst_dist.engine.runs.base.Run`:
plan, load, rounds, finish, write) under a watchdog.  The kinds are the
pairs of parts (:mod:`~mst_dist.engine.runs.parts`):

``resident``          resident chunks, vertices on one worker: the edge chunks stay on the
                      workers for the whole run;
``streaming``         streamed slices, vertices on one worker: the edges are read from their
                      source in passes, one slice of the strict order at a time, when they
                      would not fit in the workers' memory;
``partitioned``       resident chunks, vertex ranges: the per-vertex state is cut into ranges
                      of component ids, each owned by a task, when it would not fit on one
                      worker;
``spread-streaming``  streamed slices, vertex ranges: both.

A new edge source or vertex store is a new module with a
:class:`~mst_dist.engine.runs.parts.EdgeSource` or
:class:`~mst_dist.engine.runs.parts.VertexStore` subclass, listed in
:data:`SOURCES` or :data:`STORES`; :func:`choose_kind` asks each whether it
is wanted and whether the graph fits.
"""
from __future__ import annotations

import dataclasses
import logging
import time

from distributed.scheduler import KilledWorker

from mst_dist import config
from mst_dist.engine.cluster_info import scheduler_workers
from mst_dist.errors import ExchangeLostError, GraphTooLargeError, MSTError
from mst_dist.engine import interrupt
from mst_dist.engine.advice import advise
from mst_dist.engine.keys import new_token
from mst_dist.engine.runs.base import Run
from mst_dist.engine.runs.checkpointing import RunCheckpoint
from mst_dist.engine.runs.connect import ClusterLayout, connect
from mst_dist.engine.runs.one_worker import OneWorker
from mst_dist.engine.runs.parts import KIND_NAMES, KIND_PARTS
from mst_dist.engine.runs.ranges import VertexRanges
from mst_dist.engine.runs.resident import ResidentChunks
from mst_dist.engine.runs.streaming import StreamedSlices
from mst_dist.engine.watchdog import Watchdog, cancel_run, stalled_from_killed

logger = logging.getLogger(__name__)

__all__ = ["KINDS", "SOURCES", "STORES", "Run", "choose_kind", "execute"]

#: The edge sources, by name, in the order :func:`choose_kind` asks them (the last is the default).
SOURCES = {s.name: s for s in (StreamedSlices, ResidentChunks)}
#: The vertex stores, by name, in the order :func:`choose_kind` asks them (the last is the default).
STORES = {s.name: s for s in (VertexRanges, OneWorker)}
#: Every kind of run, by name: its edge source and vertex store.
KINDS = {kind: (SOURCES[source], STORES[store]) for (source, store), kind in KIND_NAMES.items()}


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
    may now decide otherwise).  Otherwise the first edge source that is
    wanted (streamed when asked to, or with ``auto`` when the edges would
    not fit in the workers' memory), then the first vertex store that is
    wanted with it (ranges when asked to, or with ``auto`` on a cluster of
    several workers when the vertices would not fit one worker); the store
    then checks that the graph fits it, before any work.
    """
    if ckpt is not None and ckpt.mode is not None:
        source_name, store_name = KIND_PARTS[ckpt.mode]
        source, store = SOURCES[source_name], STORES[store_name]
    else:
        source = next(s for s in SOURCES.values() if s.wanted(spec, graph, cluster))
        store = next(s for s in STORES.values() if s.wanted(spec, graph, cluster, source))
    store.check(graph, cluster, source)
    return KIND_NAMES[source.name, store.name]


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
            source, store = KINDS[choose_kind(spec, graph, cluster, ckpt)]
            run = Run(graph, client, spec, cluster, source=source(), store=store(), token=token, checkpoint=ckpt,
                      t_start=t_start, wall_start=wall_start)
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

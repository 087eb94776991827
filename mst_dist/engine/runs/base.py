"""A run: its named steps, over an edge source and a vertex store composed.

A run is a graph, a client, a :class:`~mst_dist.engine.spec.RunSpec` (what
the caller decided) and the :class:`~mst_dist.engine.runs.connect.ClusterLayout`
it found.  :meth:`Run.execute` runs its steps::

    plan     how many chunks, where each goes, the task-graph builder, the stats
    load     the edges on the workers (or the sources to stream them from)
    rounds   the forest: the source hands its edges to the store, which runs the rounds
    finish   futures of the forest's edge ids and of the component labels
    write    the forest and labels gathered, or written by the workers: the result

What differs between kinds is in the two parts (:mod:`mst_dist.engine.runs.parts`),
each with its own typed state (:mod:`mst_dist.engine.runs.state`); the
kinds are listed in :data:`mst_dist.engine.runs.KINDS`.
"""
from __future__ import annotations

import logging
import time
from typing import NamedTuple

import numpy as np

from mst_dist.engine import accounting, tasks
from mst_dist.engine.placement import place, placement_stats
from mst_dist.engine.plan import plan_run
from mst_dist.engine.rounds import RoundBuilder
from mst_dist.engine.runs import outputs
from mst_dist.engine.runs.events import RunEvents
from mst_dist.engine.runs.kept import keep
from mst_dist.engine.runs.parts import KIND_NAMES
from mst_dist.engine.runs.state import RunState
from mst_dist.engine.scratch import release_scratch
from mst_dist.phases import Phase
from mst_dist.result import MSFResult, RunStats, exact_total

logger = logging.getLogger("mst_dist")


class ForestOut(NamedTuple):
    """The forest as the write step leaves it: rows on the client, or only counts when written by the workers."""

    n_edges: int
    total: object                   #: exact total weight
    edge_ids: np.ndarray | None = None
    src: np.ndarray | None = None
    dst: np.ndarray | None = None
    weight: np.ndarray | None = None

    @classmethod
    def gathered(cls, edge_ids, rows):
        src, dst, w = rows
        return cls(int(edge_ids.shape[0]), exact_total(w), edge_ids, src, dst, w)


class Run:
    """One MSF computation: an edge source and a vertex store, composed; the constructor only stores.

    ``source`` and ``store``: an :class:`~mst_dist.engine.runs.parts.EdgeSource`
    and a :class:`~mst_dist.engine.runs.parts.VertexStore`; the run's kind is
    their pair's name (:data:`~mst_dist.engine.runs.parts.KIND_NAMES`).
    """

    def __init__(self, graph, client, spec, cluster, *, source, store, token, checkpoint=None, t_start=None,
                 wall_start=None):
        self.g = graph
        self.client = client
        self.spec = spec
        self.cluster = cluster
        self.source = source
        self.store = store
        self.token = token
        self.ckpt = checkpoint
        self.t_start = time.perf_counter() if t_start is None else t_start
        self.wall_start = time.time() if wall_start is None else wall_start
        self.events = RunEvents(client, token, progress=spec.progress, publish=spec.publish, t_start=self.t_start)

    @property
    def kind(self) -> str:
        """The kind's name (``RunStats``, logs, checkpoints)."""
        return KIND_NAMES[self.source.name, self.store.name]

    @property
    def streams(self) -> bool:
        return self.source.streams

    def execute(self) -> MSFResult:
        """Plan, load, rounds, finish, write: the result."""
        self.plan()
        st = self.load()
        self.rounds(st)
        ids_f, lab_f = self.finish(st)
        result = self.write(st, ids_f, lab_f)
        if self.ckpt is not None:
            self.ckpt.discard()  # the run is done: a rerun starts over
        return result

    # -- the steps -----------------------------------------------------------------

    def plan(self):
        """The plan, the chunks' ranges and placement, the task-graph builder and the run's stats."""
        cl, spec = self.cluster, self.spec
        self.run_plan = plan_run(self.g.n_edges, kinds=cl.kinds, threads=cl.threads, min_memory=cl.min_memory,
                                 device_memory=cl.device_memory, partitions=spec.partitions,
                                 local_finish=spec.local_finish, throughput=cl.measured, streaming=self.streams)
        self.ranges = self.g.chunk_ranges(self.run_plan.partitions)
        self.places = place(self.ranges, cl.throughput)
        self.builder = RoundBuilder(self.client, self.token, n_vertices=self.g.n_vertices, backend=spec.backend,
                                    split_every=spec.split_every, places=self.places)
        self.stats = RunStats(partitions=len(self.ranges), workers=cl.n_workers, threads=cl.threads,
                              backend=cl.backend_used())
        self.stats.streamed, self.stats.kind = self.streams, self.kind
        if cl.throughput:
            self.stats.placement = placement_stats(self.ranges, self.places, cl.kinds, cl.throughput)
        self.source.plan(self)
        self.store.plan(self)

    def load(self) -> RunState:
        """The edges on the workers, or what to stream them from; the store's empty state."""
        self.publish_start()
        return RunState(n_comp=self.g.n_vertices, edges=self.source.load(), vertices=self.store.new_state())

    def rounds(self, st: RunState):
        """Compute the forest: the source hands its edges to the store until every component is finished."""
        self.source.solve(st)

    def finish(self, st: RunState):
        """Futures of the forest's edge ids and of the labels (the store's forms)."""
        stats = self.stats
        if not stats.setup_seconds:
            stats.setup_seconds = st.t_solve - self.t_start
        stats.solve_seconds = time.perf_counter() - st.t_solve
        self._t_finish = time.perf_counter()
        self.events.emit(round=st.rnd, phase=Phase.FINISH, components=0, edges=0)
        if st.final is not None:  # submitted with the last solve
            return st.final
        return self.store.finish(st)

    def write(self, st: RunState, ids_f, lab_f) -> MSFResult:
        """The forest and the labels: gathered, or written by the workers where the spec says."""
        spec, stats = self.spec, self.stats
        kept = None
        if spec.output is None and not spec.gather:  # the rows (and labels) stay on the workers
            kept, forest, kept_components = self.store.keep(st, ids_f, lab_f)
        else:
            forest = self.write_forest(st, ids_f)
        n_forest = forest.n_edges
        if kept is not None and spec.labels_output is None:
            labels, n_components = None, kept_components
        else:
            labels, n_components = self.store.write_labels(st, lab_f)
        stats.finish_seconds = time.perf_counter() - self._t_finish
        stats.total_seconds = time.perf_counter() - self.t_start
        tallies = self._clean_up()
        accounting.exact_bytes(self.client, stats.rounds, self.token, self.cluster.n_workers, tallies=tallies)
        accounting.settle_overlaps(stats.rounds)
        self.events.publish("run-end", total_seconds=stats.total_seconds, n_rounds=stats.n_rounds,
                            forest_edges=n_forest, n_components=int(n_components),
                            bytes_moved=stats.bytes_moved,
                            rounds=[r.to_dict() for r in stats.rounds])  # final: exact bytes moved
        return MSFResult(edge_ids=forest.edge_ids, src=forest.src, dst=forest.dst, weight=forest.weight,
                         total_weight=forest.total, n_components=int(n_components), labels=labels,
                         n_vertices=self.g.n_vertices, n_edges=self.g.n_edges, stats=stats,
                         output=spec.output, labels_output=spec.labels_output, forest_edges=n_forest,
                         kept=kept)

    def write_forest(self, st, ids_f) -> "ForestOut":
        """The forest gathered to the client, or (``output=``) written by the workers, one part per chunk."""
        if self.spec.output is not None:
            parts = [self.source.forest_parts(st, i, ids_f) for i in range(len(self.ranges))]
            n_forest, total = outputs.write_forest(self.client, self.builder, self.spec.output, parts, rnd=st.rnd,
                                                   storage_options=self.spec.storage_options)
            return ForestOut(n_edges=n_forest, total=total)
        edge_ids = self.store.gather_ids(ids_f)
        return ForestOut.gathered(edge_ids, self.source.forest_rows(st, ids_f, edge_ids))

    def keep_parts(self, st, ids_f, lab_f):
        """``gather=False`` with the vertices on one worker: the source's rows filtered by the forest ids
        ``ids_f`` (one future) kept as frames, the labels ``lab_f`` (one future) beside them."""
        parts = [self.source.forest_parts(st, i, ids_f) for i in range(len(self.ranges))]
        kept, n_forest, total, components = keep(
            self.client, self.builder, st.rnd, parts, ids_f, lab_f, id_dtype=np.int64,
            weight_dtype=np.dtype(self.g.weight_dtype), n_vertices=self.g.n_vertices,
            labels=self.spec.labels_output is None)
        return kept, ForestOut(n_edges=n_forest, total=total), components

    # -- shared helpers ------------------------------------------------------------------

    def publish_start(self):
        g = self.g
        self.events.publish("run-start", graph=g.name, n_vertices=g.n_vertices, n_edges=g.n_edges,
                            partitions=len(self.ranges), workers=list(self.cluster.workers), time=self.wall_start,
                            kind=self.kind)

    def release_scratch(self, delay=None, tally=False):
        """Release the CPU kernels' scratch on the workers (see :func:`~mst_dist.engine.scratch.release_scratch`);
        with ``tally``, in the same call to every worker, take the bytes each received for the run
        (:func:`~mst_dist.engine.accounting.take_tally`) and return them (``None`` where it failed)."""
        try:
            if tally:
                return self.client.run(_run_ended, delay, self.token)
            self.client.run(release_scratch, delay)
        except Exception:  # a worker gone since: its memory went with it
            logger.debug("could not release the workers' scratch memory", exc_info=True)
        return None

    def _clean_up(self):
        """A worker's memory after a run is back near where it began; the bytes each worker received for the
        run, taken in the same call (``None``: not taken)."""
        gpu_workers = [w for w, k in self.cluster.kinds.items() if k == "gpu"]
        if gpu_workers:
            try:
                self.client.run(tasks.forget_device_maps, workers=gpu_workers)
            except Exception:  # a worker gone since: its memory went with it
                logger.debug("could not free the round maps on the GPU workers", exc_info=True)
        return self.release_scratch(tally=self.cluster.n_workers >= 2)


def _run_ended(delay, token, dask_worker=None):
    """On each worker as a run ends: its scratch released (later), the bytes it received for the run
    handed over."""
    release_scratch(delay)
    return accounting.take_tally(dask_worker, token)

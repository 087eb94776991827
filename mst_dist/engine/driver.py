"""The driver: one MSF computation on a Dask client, as a few named steps.

The driver knows Dask and nothing of file formats.  Edge chunks live on the
workers as futures for the whole run; the client holds only small things
(one record per round, and at the end the forest).  :meth:`Driver.run`::

    connect      the workers, the kernels each runs (GPU probe), the plan
    load         raw chunks on the workers (scattered arrays or load tasks)
    light pass   (dense graphs) the ~light_factor * n lightest edges first
    rounds       distributed Borůvka rounds: map -> merge tree -> contract
    local finish once the edges left fit on one worker, one task finishes
    assemble     forest ids, their rows, component labels, exact bytes moved

The task graphs are built by :class:`~mst_dist.engine.rounds.RoundBuilder`;
the worker-side functions are :mod:`mst_dist.engine.tasks`.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
from distributed import wait

from mst_dist.engine import accounting, tasks
from mst_dist.engine.cluster_info import scheduler_workers
from mst_dist.engine.keys import EVENT_TOPIC, new_token
from mst_dist.engine.placement import measure_throughput, place, placement_stats, worker_kinds
from mst_dist.engine.plan import plan_run
from mst_dist.engine.rounds import RoundBuilder
from mst_dist.graph import Graph
from mst_dist.kernels import cpu
from mst_dist.kernels.contract import take_to_host
from mst_dist.result import MSFResult, RunStats, exact_total

logger = logging.getLogger("mst_dist")


@dataclass
class _RunState:
    """Where a run stands between steps (client side; futures and small numbers)."""

    raws: list                      #: raw chunks on the workers
    offsets: list                   #: edge id of each raw chunk's first edge
    n_comp: int                     #: components (not finished) left
    edges_left: int                 #: edges left
    chunks: list | None = None      #: working chunks (None: not prepared yet)
    rmap: object = None             #: future of the last round map (relabel pending)
    prev: object = None             #: the last round's record (future or value)
    rnd: int = 0
    maps: list = field(default_factory=list)     #: every round map, in order (labels)
    chosen: list = field(default_factory=list)   #: every round's forest ids (futures)
    heavy: list | None = None       #: during a light pass: the heavy chunks, for after it
    light_maps: list = field(default_factory=list)
    split_seconds: float = 0.0      #: the light split, charged to the first light round
    t_solve: float | None = None    #: when the rounds began (end of setup)

    @property
    def light(self):
        return self.heavy is not None


class Driver:
    """Runs one MSF computation on ``client``.

    The constructor only stores its arguments; :meth:`run` talks to the
    cluster.  Arguments are those of :func:`mst_dist.minimum_spanning_forest`.
    """

    def __init__(self, graph: Graph, client, *, partitions=None, local_finish="auto",
                 split_every=8, light_factor=1.5, min_degree=3.0, progress=None, publish=True,
                 backend="auto", throughput=None):
        self.g = graph
        self.client = client
        self.partitions_asked = partitions
        self.local_finish_asked = local_finish
        self.split_every = max(2, int(split_every))
        self.light_factor = light_factor
        self.min_degree = min_degree
        self.progress = progress
        self.publish = publish
        self.backend = backend
        self.throughput_asked = throughput
        self.token = new_token()

    # -- the run ------------------------------------------------------------------

    def run(self) -> MSFResult:
        """Compute the forest: connect, load, light pass, rounds, local finish, assemble."""
        self.t_start = time.perf_counter()
        self.wall_start = time.time()
        self.connect()
        st = self.load()
        while True:
            if self._finish_locally(st):
                self.finish_local(st)
                break
            self.light_pass(st)
            self.distributed_rounds(st)
            if st.light:
                self.end_light_pass(st)
            elif st.n_comp == 0:
                break
        return self.assemble(st)

    def connect(self):
        """The workers, the kernels each runs, the plan and the chunks' placement."""
        workers = scheduler_workers(self.client)
        if not workers:
            # a cluster that has just started may not have listed its workers yet
            try:
                self.client.wait_for_workers(1, timeout=60)
            except Exception as e:  # distributed raises TimeoutError
                raise RuntimeError("the Dask cluster has no workers (waited 60 s)") from e
            workers = scheduler_workers(self.client)
        self.workers = sorted(workers)
        self.n_workers = len(workers)
        self.threads = sum(w.get("nthreads", 1) for w in workers.values())
        min_memory = min((w.get("memory_limit") or 0) for w in workers.values()) or 2**34
        self.kinds, device_memory = worker_kinds(self.client, workers, self.backend)
        kinds = set(self.kinds.values())
        self.throughput = None
        measured = None
        if self.backend == "gpu" and "cpu" in kinds:
            # chunks only on the GPU workers; the CPU workers help with merges
            self.throughput = {w: 1.0 for w, k in self.kinds.items() if k == "gpu"}
        elif kinds == {"cpu", "gpu"}:
            self.throughput = measured = measure_throughput(self.client, self.kinds, self.backend, self.token,
                                                            self.throughput_asked)
        self.plan = plan_run(self.g.n_edges, kinds=self.kinds, threads=self.threads, min_memory=min_memory,
                             device_memory=device_memory, partitions=self.partitions_asked,
                             local_finish=self.local_finish_asked, throughput=measured)
        self.ranges = self.g.chunk_ranges(self.plan.partitions)
        self.places = place(self.ranges, self.throughput)
        self.builder = RoundBuilder(self.client, self.token, n_vertices=self.g.n_vertices, backend=self.backend,
                                    split_every=self.split_every, places=self.places)
        used = kinds if self.throughput is None else {self.kinds[w] for w in self.throughput}
        self.stats = RunStats(partitions=len(self.ranges), workers=self.n_workers, threads=self.threads,
                              backend=used.pop() if len(used) == 1 else "mixed")
        if self.throughput:
            self.stats.placement = placement_stats(self.ranges, self.places, self.kinds, self.throughput)

    def load(self) -> _RunState:
        """Raw chunks on the workers: the caller's arrays scattered, or load tasks (files, generators)."""
        g = self.g
        self._publish("run-start", graph=g.name, n_vertices=g.n_vertices, n_edges=g.n_edges,
                      partitions=len(self.ranges), workers=self.workers, time=self.wall_start)
        raws = self.builder.load(g.sources, self.ranges, validate=not g.validated)
        self._emit(round=0, phase="load", components=g.n_vertices, edges=g.n_edges)
        return _RunState(raws=raws, offsets=[r[3] for r in self.ranges], n_comp=g.n_vertices,
                         edges_left=g.n_edges)

    def _finish_locally(self, st) -> bool:
        return st.edges_left <= self.plan.local_finish or st.n_comp == 0

    def _prepared(self, st):
        if st.chunks is None:
            st.chunks = self.builder.prepare(st.raws, st.offsets)
        return st.chunks

    def light_pass(self, st):
        """Before round 0 on dense graphs: split the edges at a sampled threshold.

        The rounds then run on the ~``light_factor * n`` lightest edges;
        the heavy ones wait, relabelled once when the light ones are used up
        (:meth:`end_light_pass`).  Once rounds have contracted the graph the
        lightest edges are the ones chosen anyway, so only before round 0.
        """
        if not (st.rnd == 0 and self.light_factor > 0 and st.n_comp
                and st.edges_left > self.min_degree * st.n_comp):
            return
        tp = time.perf_counter()
        split = self.builder.light_split(self._prepared(st), st.n_comp, st.edges_left, self.light_factor)
        if split is None:
            return
        st.chunks, st.heavy = split
        st.light_maps = []
        ts = time.perf_counter()
        wait(st.chunks + st.heavy)
        self.stats.setup_seconds += ts - tp  # load + prepare ran until the samples came back
        st.split_seconds = time.perf_counter() - ts

    def distributed_rounds(self, st):
        """Borůvka rounds as Dask tasks, until the light edges are used up, no component is
        left, or the edges left fit the local finish.

        Each round is submitted before the last one's record comes back (the
        scheduler starts it the moment the last one ends); the round
        submitted ahead is dropped when it turns out not to be needed.
        """
        pending = None
        while True:
            t0 = time.perf_counter()
            if pending is None:
                pending = self.builder.round(st.rnd, self._prepared(st), st.rmap, st.prev, st.n_comp,
                                             finish=not st.light)
            self._emit(round=st.rnd, phase="map", components=st.n_comp, edges=st.edges_left)
            ahead = self.builder.round(st.rnd + 1, pending.edges, pending.rmap, pending.record, None,
                                       finish=not st.light)
            rec = pending.record.result()
            if st.t_solve is None:
                st.t_solve = t0 - st.split_seconds
            self.stats.rounds.append(accounting.distributed_round(
                st.rnd, rec, light=st.light, wall=time.perf_counter() - t0, split_seconds=st.split_seconds,
                n_chunks=len(st.chunks), n_workers=self.n_workers, tasks_in_graph=pending.tasks))
            st.split_seconds = 0.0
            logger.debug("round %d: %s", st.rnd, rec)
            self._publish("round", **self.stats.rounds[-1].to_dict())
            st.maps.append(pending.rmap)
            st.chosen.append(pending.chosen)
            st.chunks, st.rmap, st.prev = pending.edges, pending.rmap, rec
            st.n_comp, st.edges_left = rec.n_next, rec.chunks.edges
            st.rnd += 1
            if st.light:
                st.light_maps.append(st.rmap)
                if st.edges_left == 0:
                    return
            elif st.n_comp == 0 or self._finish_locally(st):
                return
            pending = ahead

    def end_light_pass(self, st):
        """The light edges are used up: the heavy ones, relabelled once, come next."""
        st.chunks, st.heavy = st.heavy, None
        st.rmap = self.builder.compose(st.rnd, st.light_maps)
        st.light_maps = []
        st.edges_left = self.builder.count(st.rnd, st.chunks)
        logger.debug("light pass done: %d heavy edges", st.edges_left)

    def finish_local(self, st):
        """One task gathers the edges left and finishes the forest on one worker."""
        t0 = time.perf_counter()
        self._emit(round=st.rnd, phase="local", components=st.n_comp, edges=st.edges_left)
        worker = None
        if self.backend != "cpu" and self.throughput:
            # the single task goes to the fastest worker (a GPU one on a mixed cluster)
            worker = max(self.throughput, key=lambda w: (self.throughput[w], w))
        if st.chunks is None:  # straight from the raw chunks: prepared inside the task
            args = (st.raws, None, st.n_comp, st.prev, st.offsets)
        else:
            args = (st.chunks, st.rmap, st.n_comp, st.prev, None)
        rmap, chosen, rec_f = self.builder.local(st.rnd, *args, self.light_factor, self.min_degree, worker)
        st.maps.append(rmap)
        st.chosen.append(chosen)
        rec = rec_f.result()
        wall = time.perf_counter() - t0
        if st.chunks is None:
            self.stats.setup_seconds += rec.prepare
            self.stats.backend = rec.kind  # the whole forest came from this one task
            st.t_solve = t0 + rec.prepare
        elif st.t_solve is None:
            st.t_solve = t0
        for r in accounting.local_rounds(st.rnd, rec, wall):
            self.stats.rounds.append(r)
            self._publish("round", **r.to_dict())
        st.n_comp = 0

    def assemble(self, st) -> MSFResult:
        """The forest's ids and rows, the component labels, exact bytes moved: the result."""
        stats = self.stats
        if not stats.setup_seconds:
            stats.setup_seconds = st.t_solve - self.t_start
        stats.solve_seconds = time.perf_counter() - st.t_solve
        t_fin = time.perf_counter()
        self._emit(round=st.rnd, phase="finish", components=0, edges=0)
        ids_f = self.builder.forest(st.rnd, st.chosen)
        lab_f = self.builder.labels(st.rnd, st.maps)
        edge_ids = ids_f.result()
        labels, n_components = lab_f.result()
        src, dst, w = self._rows(st, ids_f, edge_ids)
        stats.finish_seconds = time.perf_counter() - t_fin
        stats.total_seconds = time.perf_counter() - self.t_start
        gpu_workers = [w for w, k in self.kinds.items() if k == "gpu"]
        if gpu_workers:
            try:
                self.client.run(tasks.forget_device_maps, workers=gpu_workers)
            except Exception:  # a worker gone since: its memory went with it
                logger.debug("could not free the round maps on the GPU workers", exc_info=True)
        accounting.exact_bytes(self.client, stats.rounds, self.token, self.wall_start, self.n_workers)
        self._publish("run-end", total_seconds=stats.total_seconds, n_rounds=stats.n_rounds,
                      forest_edges=int(edge_ids.shape[0]), n_components=int(n_components),
                      bytes_moved=stats.bytes_moved,
                      rounds=[r.to_dict() for r in stats.rounds])  # final: exact bytes moved
        return MSFResult(edge_ids=edge_ids, src=src, dst=dst, weight=w,
                         total_weight=exact_total(w), n_components=int(n_components), labels=labels,
                         n_vertices=self.g.n_vertices, n_edges=self.g.n_edges, stats=stats)

    # -- helpers --------------------------------------------------------------------

    def _rows(self, st, ids_f, edge_ids):
        """``(src, dst, weight)`` of the forest: from the caller's arrays, or from the workers."""
        g = self.g
        if g.in_memory and len(g.sources) == 1:
            s = g.sources[0]
            if s.on_device:
                return tuple(take_to_host(a, edge_ids) for a in (s.src, s.dst, s.weight))
            src, dst, w = np.asarray(s.src), np.asarray(s.dst), np.asarray(s.weight)
            if src.dtype.kind in "iu" and dst.dtype.kind in "iu" and w.dtype.kind in "iuf" and w.dtype != np.float16:
                return cpu.take_rows(src, dst, w, edge_ids)
            return src[edge_ids], dst[edge_ids], w[edge_ids]
        parts = self.builder.rows(st.raws, st.offsets, ids_f)
        if not parts:
            z = np.zeros(0, np.int64)
            return z, z.copy(), np.zeros(0, np.dtype(g.weight_dtype))
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))

    def _publish(self, event, **payload):
        """Send a small record to the scheduler's event topic (dashboard, logs)."""
        if not self.publish:
            return
        try:
            self.client.log_event(EVENT_TOPIC, {"event": event, "run": self.token, **payload})
        except Exception:  # an old scheduler or a closing client must not break a run
            logger.debug("could not publish %s", event, exc_info=True)

    def _emit(self, **ev):
        ev["elapsed"] = time.perf_counter() - self.t_start
        self._publish("phase", **ev)
        if self.progress is not None:
            try:
                self.progress(ev)
            except Exception:  # a broken progress display must not break a run
                logger.exception("progress callback failed")

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

import contextlib
import logging
import operator
import os
import time
import weakref
from dataclasses import dataclass, field

import numpy as np
from distributed import as_completed, wait
from distributed.scheduler import KilledWorker

from mst_dist import config
from mst_dist.engine import accounting, checkpoint, interrupt, passes, tasks
from mst_dist.engine.cluster_info import scheduler_workers
from mst_dist.engine.keys import EVENT_TOPIC, new_token
from mst_dist.engine.placement import measure_throughput, pin, place, placement_stats, worker_kinds
from mst_dist.engine.plan import plan_run, should_stream, slice_budget
from mst_dist.engine.rounds import RoundBuilder
from mst_dist.engine.scratch import PLUGIN_NAME, ScratchPlugin, release_scratch
from mst_dist.engine.watchdog import Watchdog, stalled_from_killed
from mst_dist.graph import Graph, InvalidGraphError, human_bytes, vertex_memory
from mst_dist.io import writers
from mst_dist.kernels.contract import take_to_host
from mst_dist.result import MSFResult, PassStats, RunStats, exact_total

logger = logging.getLogger("mst_dist")

#: Edges sampled to set a streaming run's thresholds, from windows of rows spread over the graph.
SAMPLE_EDGES = 1 << 18
SAMPLE_WINDOWS = 4
SAMPLE_WINDOW_EDGES = 1 << 18
#: A checkpoint's tasks go before the round submitted ahead (the driver waits for them).
CHECKPOINT_PRIORITY = 10


@dataclass
class _Sample:
    """A streaming run's sample (original ids, keys, edge ids) and the graph's non-loop edges, estimated."""

    u: np.ndarray
    v: np.ndarray
    key: np.ndarray
    eid: np.ndarray
    m_est: float

    def ordered(self):
        """``(key, eid)`` of the sample in the strict order."""
        order = np.lexsort((self.eid, self.key))
        return self.key[order], self.eid[order]


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
    vmap: object = None             #: streaming: future of the vertex -> component array after the passes so far
    rows: dict = field(default_factory=dict)     #: streaming: chunk -> the chosen edges' rows, one per pass
    final: tuple | None = None      #: futures of the forest ids and labels, submitted with the last solve

    @property
    def light(self):
        return self.heavy is not None


def _check_vertex_memory(g, memory):
    """Refuse a graph whose per-vertex state would not fit in the largest worker (``memory`` 0: unknown)."""
    need = vertex_memory(g.n_vertices)
    if memory and need > memory:
        raise InvalidGraphError(
            f"n_vertices = {g.n_vertices} would need about {human_bytes(need)} of per-vertex arrays on one "
            f"worker, more than the largest worker has ({human_bytes(memory)}): relabel the vertex ids to "
            f"0..n-1 (e.g. numpy.unique(ids, return_inverse=True)) or use workers with more memory",
            source=g.name)


#: client -> {run token: hook}: the progress hooks of the runs on a client, behind one subscription.
_HOOKS = weakref.WeakKeyDictionary()


def _topic_hooks(client):
    """The progress hooks of ``client``'s runs (subscribes to the event topic on first use).

    The subscription stays for the client's life: unsubscribing at the end
    of a run would leave the events still on their way (the solve's last
    rounds, the run's own records) to a client with no handler, which
    distributed logs as an error; concurrent runs on one client each keep
    their own hook.
    """
    hooks = _HOOKS.get(client)
    if hooks is None:
        hooks = {}

        def dispatch(event):
            for hear in list(hooks.values()):
                hear(event)

        client.subscribe_topic(EVENT_TOPIC, dispatch)
        _HOOKS[client] = hooks
    return hooks


class Driver:
    """Runs one MSF computation on ``client``.

    The constructor only stores its arguments; :meth:`run` talks to the
    cluster.  Arguments are those of :func:`mst_dist.minimum_spanning_forest`.
    """

    def __init__(self, graph: Graph, client, *, partitions=None, local_finish="auto",
                 split_every=8, light_factor=1.5, min_degree=3.0, progress=None, publish=True,
                 backend="auto", throughput=None, stream="auto", output=None, labels_output=None,
                 checkpoint=None, resume=True):
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
        self.stream_asked = stream
        self.output = None if output is None else os.fspath(output)
        self.labels_output = None if labels_output is None else os.fspath(labels_output)
        self.checkpoint = checkpoint
        self.resume = resume
        self.token = new_token()

    # -- the run ------------------------------------------------------------------

    def run(self) -> MSFResult:
        """Compute the forest: connect, load (or stream), light pass, rounds, local finish, assemble.

        Waits are bounded: a :class:`~mst_dist.engine.watchdog.Watchdog`
        stops the run with a :class:`~mst_dist.engine.watchdog.ClusterStalledError`
        once no worker has been able to make progress for ``mst.stall-timeout``
        seconds, and a task that killed its workers (Dask's ``KilledWorker``)
        is the same error at once.
        """
        with Watchdog(self.client, self.token, config.get("stall-timeout", None, 300)) as dog:
            try:
                return self._run()
            except KeyboardInterrupt:
                interrupt.quiet_after_interrupt()  # the tasks left running make noise as the cluster closes
                raise
            except Exception as e:
                if dog.error is not None:
                    raise dog.error from e
                if isinstance(e, KilledWorker):
                    raise stalled_from_killed(e) from e
                raise

    def _run(self) -> MSFResult:
        self.t_start = time.perf_counter()
        self.wall_start = time.time()
        self.open_checkpoint()
        self.connect()
        if self.streaming:
            st = self.stream()
        else:
            st = self.load()
            if self.saved is not None:
                self.resume_rounds(st)
            if self.saved is None or not self.saved["complete"]:
                self.solve(st)
        result = self.assemble(st)
        if self.ckpt is not None:
            self.ckpt.discard()  # the run is done: a rerun starts over
        return result

    # -- checkpoints ----------------------------------------------------------------

    def open_checkpoint(self):
        """The checkpoint directory, and the state saved there to go on from (``None``: none)."""
        self.ckpt = self.saved = None
        self._ck_labels = self._ck_forest = None
        if self.checkpoint is None:
            return
        options = {"partitions": self.partitions_asked, "local_finish": self.local_finish_asked,
                   "split_every": self.split_every, "light_factor": self.light_factor,
                   "min_degree": self.min_degree, "backend": self.backend, "stream": self.stream_asked}
        self.ckpt = checkpoint.Checkpoint(self.checkpoint, self.g, options, resume=self.resume)
        self.saved = self.ckpt.open()
        if self.saved is not None:
            logger.info("resuming from checkpoint %s: %s %d done, %d components left", self.ckpt.path,
                        "pass" if self.saved["mode"] == "stream" else "round",
                        self.saved["passes"] if self.saved["mode"] == "stream" else self.saved["round"],
                        self.saved["components"])

    def _save(self, index, labels, forest, parts=(), **where):
        """Write one state (a worker writes the arrays), then the manifest naming it."""
        with self.ckpt.saving(**where) as tmp:
            self.client.submit(checkpoint.write_state, tmp, labels, forest, *parts,
                               key=self.builder.key("checkpoint", index, self.ckpt.saves), pure=False,
                               priority=CHECKPOINT_PRIORITY).result()

    def save_round(self, st, rmap, chosen, rec):
        """Checkpoint a resident run after a round or the local finish: labels and forest so far."""
        c, key = self.client, self.builder.key
        self._ck_labels = c.submit(checkpoint.compose_labels, self._ck_labels, rmap,
                                   key=key("checkpoint-labels", st.rnd), priority=CHECKPOINT_PRIORITY)
        self._ck_forest = c.submit(checkpoint.merge_forest, self._ck_forest, chosen,
                                   key=key("checkpoint-forest", st.rnd), priority=CHECKPOINT_PRIORITY)
        self._save(st.rnd, self._ck_labels, self._ck_forest, mode="resident", round=st.rnd,
                   components=st.n_comp, edges_left=st.edges_left, light=st.light,
                   record=checkpoint.record_dict(rec), complete=st.n_comp == 0 and not st.light)

    def resume_rounds(self, st):
        """Go on from a resident run's checkpoint: the loaded chunks, relabelled by the saved labels.

        The labels become the pending round map, so the next round's
        filter-edges (or the local finish) relabels every edge and drops the
        self-loops: what is left is the graph contracted along the forest
        edges saved.  Rounds are numbered on from the saved ones.
        """
        s, c, key = self.saved, self.client, self.builder.key
        d, rnd = self.ckpt.state_dir(s), s["round"]
        labels = c.submit(checkpoint.read_labels, d, s["components"], key=key("resume-labels", rnd), pure=False)
        forest = c.submit(checkpoint.read_forest, d, key=key("resume-forest", rnd), pure=False)
        self._ck_labels, self._ck_forest = labels, forest
        st.chunks = self._prepared(st)
        st.rmap, st.maps, st.chosen = labels, [labels], [forest]
        st.n_comp, st.rnd, st.prev = s["components"], rnd, checkpoint.record(s)
        if not s["light"]:  # during a light pass the saved count left out the heavy edges
            st.edges_left = s["edges_left"]
        if st.n_comp == 0:
            st.t_solve = time.perf_counter()
        self.stats.resumed_from = rnd

    def save_pass(self, st, k, hi, n_live, chosen):
        """Checkpoint a streaming run after pass ``k``: vertex map, forest and its rows so far."""
        self._ck_forest = self.client.submit(checkpoint.merge_forest, self._ck_forest, chosen,
                                             key=self.builder.key("checkpoint-forest", k),
                                             priority=CHECKPOINT_PRIORITY)
        rows = [r for rs in st.rows.values() for r in rs]
        self._save(k, st.vmap, self._ck_forest, rows, mode="stream", round=st.rnd, passes=k,
                   components=n_live, threshold=None if hi is None else list(hi), complete=hi is None,
                   rows=bool(rows), light=False, record=None)

    def resume_passes(self, st):
        """Go on from a streaming run's checkpoint: ``(lo, components, passes done, complete)``."""
        s, c, key = self.saved, self.client, self.builder.key
        d, k = self.ckpt.state_dir(s), s["passes"]
        st.vmap = c.submit(checkpoint.read_labels, d, key=key("resume-vmap", k), pure=False)
        self._ck_forest = c.submit(checkpoint.read_forest, d, key=key("resume-forest", k), pure=False)
        st.chosen = [self._ck_forest]
        if s["rows"]:
            for i, (_, a, b, off) in enumerate(self.ranges):
                st.rows[i] = [c.submit(checkpoint.read_rows, d, off, off + b - a, self.g.n_vertices,
                                       key=key("resume-rows", k, i), pure=False)]
        st.rnd = s["round"]
        self.stats.resumed_from = st.rnd
        lo = None if s["threshold"] is None else tuple(s["threshold"])
        return lo, s["components"], k, s["complete"]

    def solve(self, st, light=True):
        """Rounds until every component is finished: light pass, distributed rounds, local finish."""
        while True:
            if self._finish_locally(st):
                self.finish_local(st)
                break
            if light:
                self.light_pass(st)
            self.distributed_rounds(st)
            if st.light:
                self.end_light_pass(st)
            elif st.n_comp == 0:
                break

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
        try:  # the CPU kernels' scratch within each worker's memory limit (workers that join later too)
            self.client.register_plugin(ScratchPlugin(), name=PLUGIN_NAME)
        except Exception:  # an old scheduler: the arenas keep their default size
            logger.debug("could not register the scratch plugin", exc_info=True)
        self.threads = sum(w.get("nthreads", 1) for w in workers.values())
        min_memory = min((w.get("memory_limit") or 0) for w in workers.values()) or 2**34
        _check_vertex_memory(self.g, max((w.get("memory_limit") or 0) for w in workers.values()))
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
        self.total_memory = sum((w.get("memory_limit") or 0) for w in workers.values()) or \
            min_memory * self.n_workers
        self.streaming = should_stream(self.stream_asked, self.g, self.total_memory)
        if self.saved is not None:  # go on as the saved run went ("auto" may now decide otherwise)
            self.streaming = self.saved["mode"] == "stream"
        self.plan = plan_run(self.g.n_edges, kinds=self.kinds, threads=self.threads, min_memory=min_memory,
                             device_memory=device_memory, partitions=self.partitions_asked,
                             local_finish=self.local_finish_asked, throughput=measured,
                             streaming=self.streaming)
        self.ranges = self.g.chunk_ranges(self.plan.partitions)
        self.places = place(self.ranges, self.throughput)
        self.builder = RoundBuilder(self.client, self.token, n_vertices=self.g.n_vertices, backend=self.backend,
                                    split_every=self.split_every, places=self.places)
        used = kinds if self.throughput is None else {self.kinds[w] for w in self.throughput}
        self.stats = RunStats(partitions=len(self.ranges), workers=self.n_workers, threads=self.threads,
                              backend=used.pop() if len(used) == 1 else "mixed")
        self.stats.streamed = self.streaming
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

    def stream(self) -> _RunState:
        """The passes of a streaming run; the state they leave is assembled as any run's.

        A sample of some chunks gives the thresholds; each pass then streams
        every chunk from its source once, keeps the slice of the strict order
        up to the next threshold that still joins two components, and solves
        it (distributed rounds or the local finish, as any graph) starting
        from the components of the passes before (see
        :mod:`mst_dist.engine.passes`).  Only the vertex -> component map,
        the chosen edges' rows and one slice stay on the workers.
        """
        g = self.g
        st = _RunState(raws=[], offsets=[r[3] for r in self.ranges], n_comp=g.n_vertices, edges_left=g.n_edges)
        self._publish("run-start", graph=g.name, n_vertices=g.n_vertices, n_edges=g.n_edges,
                      partitions=len(self.ranges), workers=self.workers, time=self.wall_start)
        # the caller's arrays are scattered once; everything else is re-read from its source
        self.inputs = []
        scattered = self.builder.load(g.sources, self.ranges, validate=False) if g.in_memory else None
        for i, (si, a, b, off) in enumerate(self.ranges):
            self.inputs.append((scattered[i], a, b, off) if scattered else (g.sources[si], a, b, off))
        sample = self._stream_sample(st)
        self.stats.setup_seconds = time.perf_counter() - self.t_start
        st.t_solve = time.perf_counter()
        lo, n_live, k, done = None, g.n_vertices, 0, False
        if self.saved is not None:
            lo, n_live, k, done = self.resume_passes(st)
        while not done:
            k += 1
            hi = self._next_threshold(sample, st.vmap, lo, n_live, k)
            kept, rows = self._stream_pass(st, k, lo, hi)
            edges = self.stats.passes[-1].edges_kept
            sub = _RunState(raws=None, offsets=None, n_comp=n_live, edges_left=edges, chunks=kept,
                            rnd=st.rnd, t_solve=st.t_solve)
            self.solve(sub, light=False)
            st.rnd = sub.rnd
            st.chosen.extend(sub.chosen)
            chosen = self.client.submit(tasks.forest_ids, *sub.chosen, key=self.builder.key("pass-forest", k))
            for i, r in enumerate(rows):
                st.rows.setdefault(i, []).append(
                    self.client.submit(passes.trim_rows, r, chosen, key=self.builder.key("pass-trim", k, i)))
            composed = self.client.submit(passes.compose, st.vmap, *sub.maps,
                                          key=self.builder.key("pass-compose", k))
            st.vmap = self.client.submit(operator.getitem, composed, 0, key=self.builder.key("pass-vmap", k))
            n_live = self.client.submit(operator.getitem, composed, 1,
                                        key=self.builder.key("pass-components", k)).result()
            # the slice is solved: let the workers drop it (and its rows, once trimmed) before the next pass
            kept = rows = sub = composed = None
            if self.ckpt is not None:
                self.save_pass(st, k, hi, n_live, chosen)
            if hi is None:
                break
            lo = hi
        st.n_comp = 0
        return st

    def _stream_sample(self, st):
        """Sample some chunks: ``(u, v, key, eid)`` of the sample and the graph's non-loop edges, estimated."""
        windows = self._sample_windows()
        sampled = sum(hi - lo for _, (lo, hi) in windows)
        rate = min(1.0, SAMPLE_EDGES / max(1, sampled))
        validate = not self.g.validated
        futs = [self.client.submit(passes.sample_chunk, *self._input(i), self.g.n_vertices, validate, rate, j,
                                   (lo, hi), key=self.builder.key("pass-sample", 0, j), **pin(self.places[i]))
                for j, (i, (lo, hi)) in enumerate(windows)]
        t0 = time.perf_counter()
        parts = self._progress_pass("sample", futs, len(futs), lambda r: (r[6], r[5], 0))
        if parts:
            u, v, key, eid = (np.concatenate([p[j] for p in parts]) for j in range(4))
            nonloop, raw = sum(p[4] for p in parts), sum(p[5] for p in parts)
        else:
            u = v = eid = np.zeros(0, np.int64)
            key = np.zeros(0, np.uint64)
            nonloop = raw = 0
        self.stats.passes.append(PassStats("sample", len(futs), raw, sum(p[6] for p in parts), 0,
                                           time.perf_counter() - t0))
        m_est = nonloop * self.g.n_edges / raw if raw else 0
        return _Sample(u=u, v=v, key=key, eid=eid, m_est=m_est)

    def _sample_windows(self):
        """``[(chunk, (lo, hi)), ...]``: up to :data:`SAMPLE_WINDOWS` windows of rows spread over the graph."""
        m = self.g.n_edges
        if not m:
            return []
        width = max(1, min(SAMPLE_WINDOW_EDGES, m // SAMPLE_WINDOWS))
        out = {}
        # windows start at multiples of their width: a source read in blocks (a generator's
        # 2**20 edges) then makes each window from one block
        for pos in (np.linspace(0, m - 1, min(m, SAMPLE_WINDOWS)).astype(np.int64) // width) * width:
            i = next(j for j, r in enumerate(self.ranges) if r[3] <= pos < r[3] + r[2] - r[1])
            si, a, b, off = self.ranges[i]
            lo = a + int(pos - off)
            out.setdefault((i, lo), (i, (lo, min(b, lo + width))))
        return list(out.values())

    def _next_threshold(self, sample, vmap, lo, n_live, k):
        """The upper end of the next pass's slice (``None``: the rest of the order).

        The first slice is the ~``light_factor * n`` lightest edges (at most
        the budget); each later one as much as the budget allows, estimated
        by relabelling the sample with the components found so far.
        """
        budget = slice_budget(self.total_memory)
        n = sample.key.shape[0]
        if not n or not sample.m_est:
            return None
        scale = sample.m_est / n
        if k == 1:
            want = budget
            if self.light_factor > 0 and sample.m_est > self.min_degree * n_live:
                want = min(budget, self.light_factor * n_live)
            q = int(want / scale)
            if q >= n:
                return None
            key, eid = sample.ordered()
            return int(key[q]), int(eid[q])
        u, v, key, eid = sample.u, sample.v, sample.key, sample.eid
        k, e = self.client.submit(passes.survivors, vmap, u, v, key, eid, lo,
                                  key=self.builder.key("pass-estimate", k)).result()
        q = int(budget / scale)
        return None if q >= k.shape[0] else (int(k[q]), int(e[q]))

    def _input(self, i):
        return self.inputs[i][:4]

    def _stream_pass(self, st, k, lo, hi):
        """Stream every chunk once; keep the slice ``lo < (key, eid) <= hi`` that joins two components."""
        c = self.client
        vm = st.vmap
        validate = not self.g.validated
        outs = [c.submit(passes.pass_chunk, *self._input(i), self.g.n_vertices, validate, vm, lo, hi, self.backend,
                         key=self.builder.key("pass", k, i), **pin(self.places[i]))
                for i in range(len(self.inputs))]
        kept = [c.submit(operator.getitem, o, 0, key=self.builder.key("pass-kept", k, i)) for i, o in enumerate(outs)]
        rows = [c.submit(operator.getitem, o, 1, key=self.builder.key("pass-rows", k, i))
                for i, o in enumerate(outs)]
        stats = [c.submit(operator.getitem, o, 2, key=self.builder.key("pass-stats", k, i))
                 for i, o in enumerate(outs)]
        name = f"pass {k}"
        del outs
        t0 = time.perf_counter()
        recs = self._progress_pass(name, stats, len(stats), lambda r: (r.bytes_read, r.edges_in, r.edges_kept))
        self.stats.passes.append(PassStats(name, len(recs), sum(r.edges_in for r in recs),
                                           sum(r.bytes_read for r in recs), sum(r.edges_kept for r in recs),
                                           time.perf_counter() - t0))
        return kept, rows

    def _progress_pass(self, name, futs, total, measure):
        """Wait for a pass's tasks, telling progress as each chunk is done; their results, in order."""
        results = [None] * len(futs)
        index = {f.key: i for i, f in enumerate(futs)}
        done = read = kept = edges = 0
        last = 0.0
        for f in as_completed(futs):
            r = f.result()
            results[index[f.key]] = r
            nb, ne, nk = measure(r)
            done, read, edges, kept = done + 1, read + nb, edges + ne, kept + nk
            now = time.perf_counter()
            if now - last > 0.2 or done == len(futs):
                last = now
                self._emit(round=0, phase="pass", components=self.g.n_vertices, edges=kept, **{
                    "pass": name, "chunks_done": done, "chunks_total": total, "bytes_read": read,
                    "edges_read": edges})
        return results

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
            if self.ckpt is not None and not self.streaming:
                self.save_round(st, pending.rmap, pending.chosen, rec)
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
            wait(st.raws)  # loading the graph is setup, not the solve's first round
            if not self.stats.setup_seconds:
                self.stats.setup_seconds = time.perf_counter() - self.t_start
            t0 = time.perf_counter()
            args = (st.raws, None, st.n_comp, st.prev, st.offsets)
        else:
            args = (st.chunks, st.rmap, st.n_comp, st.prev, None)
        with self._task_progress():  # the task tells its rounds as it goes
            rmap, chosen, rec_f = self.builder.local(st.rnd, *args, self.light_factor, self.min_degree, worker)
            st.maps.append(rmap)
            st.chosen.append(chosen)
            if not self.streaming:
                # nothing comes after this solve: the forest ids and labels are computed as soon as
                # it ends, while its record comes back (a pass's solve is followed by the next pass)
                st.final = (self.builder.forest(st.rnd, st.chosen), self.builder.labels(st.rnd, st.maps))
            rec = rec_f.result()
        wall = time.perf_counter() - t0
        if st.chunks is None:
            self.stats.setup_seconds += rec.prepare
            self.stats.backend = rec.kind  # the whole forest came from this one task
            st.t_solve = t0 + rec.prepare
        elif st.t_solve is None:
            st.t_solve = t0
        local = accounting.local_rounds(st.rnd, rec, wall)
        for r in local:
            self.stats.rounds.append(r)
            self._publish("round", **r.to_dict())
        st.rnd += max(1, len(local))
        st.n_comp = 0
        if self.ckpt is not None and not self.streaming:
            self.save_round(st, rmap, chosen, None)

    def assemble(self, st) -> MSFResult:
        """The forest's ids and rows, the component labels, exact bytes moved: the result."""
        stats = self.stats
        if not stats.setup_seconds:
            stats.setup_seconds = st.t_solve - self.t_start
        stats.solve_seconds = time.perf_counter() - st.t_solve
        t_fin = time.perf_counter()
        self._emit(round=st.rnd, phase="finish", components=0, edges=0)
        if self.streaming:  # no solve follows: the scratch goes before the labels and rows are made
            self._release_scratch(0)
        if st.final is not None:  # submitted with the last solve
            ids_f, lab_f = st.final
        else:
            ids_f = self.builder.forest(st.rnd, st.chosen)
            lab_f = self.client.submit(passes.vertex_labels, st.vmap, self.g.n_vertices,
                                       key=self.builder.key("labels", st.rnd)) if self.streaming \
                else self.builder.labels(st.rnd, st.maps)
        if self.output is not None:  # the workers write the rows; the client gets counts
            edge_ids = src = dst = w = None
            n_forest, total = self._write_forest(st, ids_f)
        else:
            edge_ids = ids_f.result()
            src, dst, w = self._rows(st, ids_f, edge_ids)
            n_forest, total = int(edge_ids.shape[0]), exact_total(w)
        if self.labels_output is not None:
            labels, n_components = None, self._write_labels(lab_f)
        else:
            labels, n_components = lab_f.result()
        stats.finish_seconds = time.perf_counter() - t_fin
        stats.total_seconds = time.perf_counter() - self.t_start
        gpu_workers = [w for w, k in self.kinds.items() if k == "gpu"]
        if gpu_workers:
            try:
                self.client.run(tasks.forget_device_maps, workers=gpu_workers)
            except Exception:  # a worker gone since: its memory went with it
                logger.debug("could not free the round maps on the GPU workers", exc_info=True)
        self._release_scratch()  # a worker's memory after a run is back near where it began
        accounting.exact_bytes(self.client, stats.rounds, self.token, self.wall_start, self.n_workers)
        accounting.settle_overlaps(stats.rounds)
        self._publish("run-end", total_seconds=stats.total_seconds, n_rounds=stats.n_rounds,
                      forest_edges=n_forest, n_components=int(n_components),
                      bytes_moved=stats.bytes_moved,
                      rounds=[r.to_dict() for r in stats.rounds])  # final: exact bytes moved
        return MSFResult(edge_ids=edge_ids, src=src, dst=dst, weight=w,
                         total_weight=total, n_components=int(n_components), labels=labels,
                         n_vertices=self.g.n_vertices, n_edges=self.g.n_edges, stats=stats,
                         output=self.output, labels_output=self.labels_output, forest_edges=n_forest)

    def _release_scratch(self, delay=None):
        """Release the CPU kernels' scratch on the workers (see :func:`~mst_dist.engine.scratch.release_scratch`)."""
        try:
            self.client.run(release_scratch, delay)
        except Exception:  # a worker gone since: its memory went with it
            logger.debug("could not release the workers' scratch memory", exc_info=True)

    def _write_forest(self, st, ids_f):
        """The workers write the forest's rows as a Parquet dataset at ``output``, atomically.

        One part file per chunk (rows sorted by edge id; the parts in edge id
        order), in a hidden directory renamed onto ``output`` once every part
        is written: a failed run leaves no dataset.  Returns ``(forest
        edges, total weight)``.
        """
        c = self.client
        with writers.atomic_dir(self.output) as tmp:
            futs = []
            for i in range(len(self.ranges)):
                path = os.path.join(tmp, writers.DATASET_PART.format(i))
                if self.streaming:
                    parts = st.rows.get(i, [])
                else:
                    parts = [c.submit(tasks.chosen_rows, st.raws[i], st.offsets[i], ids_f,
                                      key=self.builder.key("rows", st.rnd, i))]
                futs.append(c.submit(writers.write_forest_part, path, *parts,
                                     key=self.builder.key("write-forest", st.rnd, i), pure=False))
            done = c.gather(futs)
        return sum(n for n, _ in done), sum(t for _, t in done) if done else 0

    def _write_labels(self, lab_f):
        """The component labels as a Parquet dataset at ``labels_output`` (parts of vertex ranges)."""
        c = self.client
        n = self.g.n_vertices
        labels = c.submit(operator.getitem, lab_f, 0, key=self.builder.key("labels-array", 0))
        step = max(1, min(n, 1 << 24))
        with writers.atomic_dir(self.labels_output) as tmp:
            c.gather([c.submit(writers.write_labels_part, os.path.join(tmp, writers.DATASET_PART.format(j)),
                               labels, a, min(n, a + step), key=self.builder.key("write-labels", 0, j),
                               pure=False)
                      for j, a in enumerate(range(0, max(n, 1), step))])
        return c.submit(operator.getitem, lab_f, 1, key=self.builder.key("labels-count", 0)).result()

    # -- helpers --------------------------------------------------------------------

    def _rows(self, st, ids_f, edge_ids):
        """``(src, dst, weight)`` of the forest: from the caller's arrays, or from the workers."""
        g = self.g
        if self.streaming and not g.in_memory:
            src, dst, w = self.client.submit(passes.forest_rows, ids_f, *(r for rs in st.rows.values() for r in rs),
                                             key=self.builder.key("rows", st.rnd)).result()
            return src, dst, w.astype(np.dtype(g.weight_dtype), copy=False)
        if g.in_memory and len(g.sources) == 1:
            s = g.sources[0]
            if s.on_device:
                return tuple(take_to_host(a, edge_ids) for a in (s.src, s.dst, s.weight))
            return tasks.gather_rows(np.asarray(s.src), np.asarray(s.dst), np.asarray(s.weight), edge_ids)
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

    @contextlib.contextmanager
    def _task_progress(self):
        """While inside: the ``phase`` events this run's tasks send (``source="task"``) go to ``progress``.

        The single-task solve tells each round it ends on the event topic
        (:func:`mst_dist.engine.tasks.round_reporter`); the client hears them
        through a topic subscription.
        """
        if self.progress is None:
            yield
            return

        def hear(event):
            msg = event[1] if isinstance(event, tuple) and len(event) == 2 else event
            if not (isinstance(msg, dict) and msg.get("run") == self.token and msg.get("source") == "task"):
                return
            ev = {k: v for k, v in msg.items() if k not in ("event", "run", "source")}
            ev["elapsed"] = time.perf_counter() - self.t_start
            try:
                self.progress(ev)
            except Exception:  # a broken progress display must not break a run
                logger.exception("progress callback failed")

        try:
            hooks = _topic_hooks(self.client)
        except Exception:  # an old scheduler: progress moves per task only
            logger.debug("no event subscription", exc_info=True)
            yield
            return
        hooks[self.token] = hear
        try:
            yield
        finally:
            hooks.pop(self.token, None)

    def _emit(self, **ev):
        ev["elapsed"] = time.perf_counter() - self.t_start
        self._publish("phase", **ev)
        if self.progress is not None:
            try:
                self.progress(ev)
            except Exception:  # a broken progress display must not break a run
                logger.exception("progress callback failed")

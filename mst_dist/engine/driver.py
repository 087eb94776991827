"""Distributed Borůvka: builds each round's task graph from the kernels.

The driver knows Dask and nothing of file formats.  Edge chunks live on the
workers as futures for the whole run; the client only holds small things
(per-round statistics, and at the end the forest).  Task keys are
``mst-<phase>-r<round>-<run token>-<i>`` so the dashboard and progress bars
group work by phase.

One round, for ``P`` chunks::

    map (P tasks; filter-edges of the previous round fused in)
      -> merge (tree of fan-in ``split_every``)
      -> contract (one task; filter-nodes fused in: compact ids, round map M)

The client waits for one small statistics record per round.  When the edges
left fit comfortably on one worker, one ``mst-local`` task gathers them and
finishes with the parallel single-process solver (:func:`kernels.cpu.solve_local`).
"""
from __future__ import annotations

import itertools
import logging
import math
import operator
import time
import uuid

import numpy as np
from distributed import wait

from mst_dist.graph import ArraySource, Graph
from mst_dist.kernels import cpu, gpu
from mst_dist.kernels.gpu import GPUUnavailableError
from mst_dist.engine import tasks
from mst_dist.result import MSFResult, RoundStats, RunStats, exact_total

logger = logging.getLogger("mst_dist")


# ---------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------

class Driver:
    """Runs one MSF computation on a client."""

    def __init__(self, graph: Graph, client, *, partitions=None, local_finish="auto",
                 split_every=8, light_factor=1.5, min_degree=3.0, progress=None, publish=True,
                 backend="auto", throughput=None):
        self.g = graph
        self.client = client
        self.split_every = max(2, int(split_every))
        self.light_factor = light_factor
        self.min_degree = min_degree
        self.progress = progress
        self.publish = publish
        self.token = uuid.uuid4().hex[:8]
        self._sub = None
        self._subs = itertools.count()
        info = client.scheduler_info(n_workers=-1) if _accepts_n_workers(client) else client.scheduler_info()
        workers = info.get("workers", {})
        if not workers:
            # a cluster that has just started may not have listed its workers yet
            try:
                client.wait_for_workers(1, timeout=60)
            except Exception as e:  # distributed raises TimeoutError
                raise RuntimeError("the Dask cluster has no workers (waited 60 s)") from e
            info = client.scheduler_info(n_workers=-1) if _accepts_n_workers(client) else client.scheduler_info()
            workers = info.get("workers", {})
        self.workers = sorted(workers)
        self.n_workers = len(workers)
        self.threads = sum(w.get("nthreads", 1) for w in workers.values())
        self.min_memory = min((w.get("memory_limit") or 0) for w in workers.values()) or 2**34
        self.backend = backend
        self.device_memory = None  # smallest GPU worker's device memory, when known
        self.packing = gpu.packing_for(graph.weight_dtype)
        self.kinds = self._worker_kinds(workers, backend)
        m = graph.n_edges
        chosen_partitions = partitions is not None and partitions != "auto"
        if not chosen_partitions:
            if set(self.kinds.values()) == {"gpu"}:
                # a GPU works on one big chunk best: one per GPU worker (packed keys allow 2**32 edges)
                partitions = max(self.n_workers, math.ceil(m / 2**30))
            else:
                partitions = max(self.threads, math.ceil(m / 16_000_000))
        self.partitions = max(1, min(int(partitions), max(1, m)))
        self.throughput = None
        kinds = set(self.kinds.values())
        if backend == "gpu" and "cpu" in kinds:
            # chunks only on the GPU workers; the CPU workers help with merges
            self.throughput = {w: 1.0 for w, k in self.kinds.items() if k == "gpu"}
        elif kinds == {"cpu", "gpu"}:
            self.throughput = self._measure(throughput)
            lo = min(self.throughput.values())
            if not chosen_partitions:
                # enough chunks that the slowest worker gets at least one
                want = math.ceil(sum(self.throughput.values()) / lo) + self.n_workers
                self.partitions = max(self.partitions, min(want, 64 * self.n_workers, max(1, m)))
        fits = self.min_memory // (4 * tasks.BYTES_PER_EDGE)
        if "gpu" in self.kinds.values():
            # the single task may run on a GPU: its edges must fit the device and one chunk
            fits = min(fits, gpu.MAX_CHUNK)
            if self.device_memory:
                fits = min(fits, self.device_memory // gpu.DEVICE_BYTES_PER_EDGE)
        if local_finish == "auto":
            if self.n_workers == 1:
                self.local_finish = fits
            else:
                self.local_finish = min(fits, max(2_000_000, m // (4 * self.n_workers)))
        else:
            self.local_finish = int(local_finish)

    def _key(self, phase, rnd, i=None):
        """``mst-<phase>-r<round>-<run token>[-s<submission>][-<i>]``: unique within the cluster.

        A round submitted ahead and then dropped must not share keys with the
        tasks that replace it, hence the submission number.
        """
        k = f"mst-{phase}-r{rnd}-{self.token}"
        if self._sub is not None:
            k = f"{k}-s{self._sub}"
        return k if i is None else f"{k}-{i}"

    def _worker_kinds(self, workers, backend):
        """``{worker: "gpu" | "cpu"}``: the kernels each worker runs; raises for ``backend="gpu"`` without GPUs."""
        kinds = {w: "cpu" for w in workers}
        if backend == "cpu":
            return kinds
        gpu_w = sorted(w for w, i in workers.items() if ((i.get("resources") or {}).get("GPU", 0) or 0) > 0)
        if not gpu_w:
            if backend == "gpu":
                raise GPUUnavailableError(
                    f"backend='gpu' needs GPU workers, and none of the cluster's {len(workers)} "
                    "worker(s) advertises resources={'GPU': 1}. Start GPU workers (cluster kind "
                    "'local-cuda', or workers/gpu-worker.yaml), or use backend='auto' or 'cpu'. "
                    f"A GPU worker needs CuPy: {gpu.GPU_INSTALL_HINT}")
            logger.info("no GPU workers in the cluster: the CPU (Numba) kernels run on all %d worker(s)",
                        len(workers))
            return kinds
        probe = self.client.run(tasks.probe, workers=gpu_w)
        bad = {w: r for w, (ok, r, _) in probe.items() if not ok}
        if bad and backend == "gpu":
            detail = "; ".join(f"{w}: {r}" for w, r in sorted(bad.items()))
            raise GPUUnavailableError(
                f"backend='gpu': {len(bad)} of {len(gpu_w)} GPU worker(s) cannot run the GPU kernels "
                f"({detail}). Install the GPU extra there ({gpu.GPU_INSTALL_HINT}) or use backend='auto'.")
        for w, r in sorted(bad.items()):
            logger.warning("worker %s advertises a GPU but cannot run the GPU kernels (%s): "
                           "it runs the CPU kernels", w, r)
        for w, (ok, r, mem) in probe.items():
            if ok:
                kinds[w] = "gpu"
                logger.info("GPU worker %s: %s", w, r)
                if mem:
                    self.device_memory = min(self.device_memory or mem, mem)
        return kinds

    def _measure(self, given):
        """Relative edges/second of each worker: given per kind, or measured (cached per worker)."""
        if given is None:
            from mst_dist import config

            given = config.get("placement.throughput", None, None)
        if given:
            try:
                per_kind = {str(k).lower(): float(v) for k, v in dict(given).items()}
            except (TypeError, ValueError) as e:
                raise ValueError(f"placement throughput must map worker kinds to numbers, got {given!r}") from e
            missing = {k for k in self.kinds.values()} - set(per_kind)
            if missing or any(v <= 0 for v in per_kind.values()):
                raise ValueError(f"placement throughput needs a positive number for each of "
                                 f"{sorted(set(self.kinds.values()))}, got {given!r}")
            return {w: per_kind[k] for w, k in self.kinds.items()}
        from mst_dist import config

        m = int(config.get("placement.calibration-edges", None, 1 << 20))
        todo = [w for w in self.workers if (w, self.kinds[w]) not in tasks.THROUGHPUT]
        if todo:
            futs = {w: self.client.submit(tasks.calibrate, self.backend, m, self.kinds[w] == "gpu",
                                          workers=[w], allow_other_workers=False, pure=False,
                                          key=f"mst-calibrate-{self.token}-{i}")
                    for i, w in enumerate(todo)}
            for w, f in futs.items():
                tasks.THROUGHPUT[(w, self.kinds[w])] = f.result()
        out = {w: tasks.THROUGHPUT[(w, self.kinds[w])] for w in self.workers}
        logger.info("measured throughput (edges/s): %s",
                    ", ".join(f"{w} ({self.kinds[w]}) {t:,.0f}" for w, t in out.items()))
        return out

    def _place(self, ranges):
        """Worker of each chunk (``None``: Dask decides): largest chunks first, to the worker
        that would finish them soonest at its measured throughput."""
        if not self.throughput:
            return [None] * len(ranges)
        load = {w: 0.0 for w in self.throughput}
        out = [None] * len(ranges)
        for i in sorted(range(len(ranges)), key=lambda i: -(ranges[i][2] - ranges[i][1])):
            size = ranges[i][2] - ranges[i][1]
            w = min(load, key=lambda w: ((load[w] + size) / self.throughput[w], w))
            load[w] += size
            out[i] = w
        return out

    def _pin(self, w):
        return {} if w is None else {"workers": [w], "allow_other_workers": True}

    def _publish(self, event, **payload):
        """Send a small record to the scheduler's ``mst-dist`` event topic (dashboard, logs)."""
        if not self.publish:
            return
        try:
            self.client.log_event(tasks.EVENT_TOPIC, {"event": event, "run": self.token, **payload})
        except Exception:  # an old scheduler or a closing client must not break a run
            logger.debug("could not publish %s", event, exc_info=True)

    def _emit(self, **ev):
        self._publish("phase", **ev)
        if self.progress is not None:
            try:
                self.progress(ev)
            except Exception:  # a broken progress display must not break a run
                logger.exception("progress callback failed")

    def run(self) -> MSFResult:
        c = self.client
        g = self.g
        t_start = time.perf_counter()
        wall_start = time.time()
        stats = RunStats(partitions=self.partitions, workers=self.n_workers, threads=self.threads)
        self._publish("run-start", graph=g.name, n_vertices=g.n_vertices, n_edges=g.n_edges,
                      partitions=self.partitions, workers=self.workers, time=wall_start)
        n = g.n_vertices
        ranges = g.chunk_ranges(self.partitions)
        stats.partitions = len(ranges)
        kinds = set(self.kinds.values()) if self.throughput is None else \
            {self.kinds[w] for w in self.throughput}
        stats.backend = kinds.pop() if len(kinds) == 1 else "mixed"
        self.place = self._place(ranges)
        # 1. raw chunks on the workers
        raws, offsets = [], []
        scatter = {}  # worker (or None) -> ([data], [chunk index])
        for i, (si, a, b, off) in enumerate(ranges):
            s = g.sources[si]
            offsets.append(off)
            if isinstance(s, ArraySource):
                d = scatter.setdefault(self.place[i], ([], []))
                d[0].append(s.load(a, b))
                d[1].append(i)
                raws.append(None)
            else:
                raws.append(c.submit(tasks.load, s, a, b, off, n, not g.validated,
                                     key=self._key("load", 0, i), pure=False, **self._pin(self.place[i])))
        for w, (data, idx) in scatter.items():
            futs = c.scatter(data, hash=False, **({} if w is None else {"workers": [w]}))
            for i, f in zip(idx, futs):
                raws[i] = f
        if self.throughput:
            stats.placement = self._placement_stats(ranges)
        self._emit(round=0, phase="load", components=n, edges=g.n_edges,
                   elapsed=time.perf_counter() - t_start)
        m_total = g.n_edges
        maps, chosen_f = [], []
        prev = None           # statistics of the last round: a future, or a dict once seen
        rnd = 0
        chunks = None
        rmap = None
        light, heavy, light_maps = False, None, []
        split_seconds = 0.0
        n_comp = n
        edges_left = m_total
        t_setup = time.perf_counter()
        pending = None        # a submitted round whose statistics we wait for
        # 2. rounds
        while True:
            if pending is None and not light and (edges_left <= self.local_finish or n_comp == 0):
                self._finish_local(stats, rnd, raws, offsets, chunks, rmap, n_comp, edges_left, prev,
                                   maps, chosen_f, t_start)
                if chunks is None:
                    t_setup += stats.setup_seconds
                break
            if pending is None and rnd == 0 and self.light_factor > 0 and n_comp \
                    and edges_left > self.min_degree * n_comp:
                # a light pass first (before round 0 only: once rounds have
                # contracted the graph, the lightest edges are the ones chosen)
                tp = time.perf_counter()
                if chunks is None:
                    chunks = self._prepare(raws, offsets)
                split = self._light_split(chunks, n_comp, edges_left)
                if split is not None:
                    chunks, heavy = split
                    light, light_maps = True, []
                    ts = time.perf_counter()
                    wait(chunks + heavy)
                    stats.setup_seconds += ts - tp  # load + prepare ran until the samples came back
                    split_seconds = time.perf_counter() - ts
            t0 = time.perf_counter()
            if pending is None:
                if chunks is None:
                    chunks = self._prepare(raws, offsets)
                pending = self._submit_round(rnd, chunks, rmap, prev, n_comp, light)
            self._emit(round=rnd, phase="map", components=n_comp, edges=edges_left, elapsed=t0 - t_start)
            # submit the next round before this one's statistics come back: the
            # scheduler starts it the moment this one ends (dropped if not needed)
            ahead = self._submit_round(rnd + 1, pending["edges"], pending["rmap"], pending["stats"],
                                       None, light)
            st = pending["stats"].result()
            wall = time.perf_counter() - t0
            if rnd == 0:
                t_setup = t0 - split_seconds
            phase_seconds = {"map": st["map"], "merge": st["merge"], "contract": st["contract"]}
            if split_seconds:
                # the light/heavy split is this round's filter-edges (timed here)
                phase_seconds["filter-edges"] = split_seconds
                wall += split_seconds
                split_seconds = 0.0
            stats.rounds.append(RoundStats(
                round=rnd, mode="distributed-light" if light else "distributed",
                components_before=n_comp, components_after=st["n_next"],
                edges_before=st["edges_in"], edges_after=st["edges"], forest_edges=st["forest_edges"],
                phase_seconds=phase_seconds, wall_seconds=wall,
                bytes_moved=st["cand_bytes"] + st["map_bytes"] * max(0, min(self.n_workers, len(chunks)) - 1),
                tasks=pending["tasks"], h2d_bytes=int(st.get("h2d", 0)), d2h_bytes=int(st.get("d2h", 0)),
                gpu_edges=int(st.get("gpu_edges_in", 0))))
            logger.debug("round %d: %s", rnd, st)
            self._publish("round", **stats.rounds[-1].to_dict())
            maps.append(pending["rmap"])
            chosen_f.append(pending["chosen"])
            chunks, rmap, prev = pending["edges"], pending["rmap"], st
            n_comp = st["n_next"]
            edges_left = st["edges"]
            rnd += 1
            pending = ahead
            if light:
                light_maps.append(rmap)
                if edges_left == 0:
                    # light edges used up: the heavy ones, relabelled once, come next
                    pending = None
                    chunks = heavy
                    rmap = c.submit(tasks.compose_forward, *light_maps, key=self._key("compose", rnd))
                    edges_left = sum(c.gather([c.submit(tasks.count_edges, h, key=self._key("count", rnd, i))
                                               for i, h in enumerate(heavy)]))
                    logger.debug("light pass done: %d heavy edges", edges_left)
                    light, heavy, light_maps = False, None, []
                continue
            if n_comp == 0 or edges_left <= self.local_finish:
                pending = None  # the round submitted ahead is not needed
                if n_comp == 0:
                    break
        if not stats.setup_seconds:
            stats.setup_seconds = t_setup - t_start
        pending = ahead = None  # release what was submitted ahead
        stats.solve_seconds = time.perf_counter() - t_setup
        # 3. the forest, its rows and the labels
        t_fin = time.perf_counter()
        self._emit(round=rnd, phase="finish", components=0, edges=0, elapsed=t_fin - t_start)
        ids_f = c.submit(tasks.forest_ids, *chosen_f, key=self._key("forest", rnd))
        lab_f = c.submit(tasks.labels, n, *maps, key=self._key("labels", rnd))
        edge_ids = ids_f.result()
        labels, n_components = lab_f.result()
        src, dst, w = self._rows(raws, offsets, ids_f, edge_ids)
        stats.finish_seconds = time.perf_counter() - t_fin
        stats.total_seconds = time.perf_counter() - t_start
        gpu_workers = [w for w, k in self.kinds.items() if k == "gpu"]
        if gpu_workers:
            try:
                c.run(tasks.forget_device_maps, workers=gpu_workers)
            except Exception:  # a worker gone since: its memory went with it
                logger.debug("could not free the round maps on the GPU workers", exc_info=True)
        self._exact_bytes(stats, wall_start)
        self._publish("run-end", total_seconds=stats.total_seconds, n_rounds=stats.n_rounds,
                      forest_edges=int(edge_ids.shape[0]), n_components=int(n_components),
                      bytes_moved=stats.bytes_moved,
                      rounds=[r.to_dict() for r in stats.rounds])  # final: exact bytes moved
        return MSFResult(edge_ids=edge_ids, src=src, dst=dst, weight=w,
                         total_weight=exact_total(w), n_components=int(n_components), labels=labels,
                         n_vertices=n, n_edges=m_total, stats=stats)

    def _prepare(self, raws, offsets):
        return [self.client.submit(tasks.prepare, r, off, self.g.n_vertices, self.backend,
                                   key=self._key("prepare", 0, i), **self._pin(self.place[i]))
                for i, (r, off) in enumerate(zip(raws, offsets))]

    def _placement_stats(self, ranges):
        out = {w: {"kind": self.kinds[w], "throughput": float(t), "chunks": 0, "edges": 0}
               for w, t in self.throughput.items()}
        for (si, a, b, off), w in zip(ranges, self.place):
            out[w]["chunks"] += 1
            out[w]["edges"] += b - a
        return out

    def _light_split(self, chunks, n_comp, edges_left):
        """Split every chunk at a sampled threshold: about ``light_factor * n`` light edges."""
        c = self.client
        rate = min(1.0, 8192 / max(1, edges_left))
        samples = c.gather([c.submit(tasks.sample, ch, rate, i, key=self._key("sample", 0, i))
                            for i, ch in enumerate(chunks)])
        ks = np.concatenate([x[0] for x in samples])
        es = np.concatenate([x[1] for x in samples])
        q = int(len(ks) * self.light_factor * n_comp / edges_left)
        if not 0 < q < len(ks):
            return None
        order = np.lexsort((es, ks))
        tk, te = ks[order[q]], es[order[q]]
        logger.debug("light pass: threshold key %d eid %d", tk, te)
        outs = [c.submit(tasks.split_light, ch, None, tk, te, key=self._key("filter", 0, i), **self._pin(self.place[i]))
                for i, ch in enumerate(chunks)]
        light = [c.submit(operator.getitem, o, 0, key=self._key("light", 0, i)) for i, o in enumerate(outs)]
        heavy = [c.submit(operator.getitem, o, 1, key=self._key("heavy", 0, i)) for i, o in enumerate(outs)]
        return light, heavy

    def _submit_round(self, rnd, chunks, rmap, prev, n_comp, light):
        """Submit one round's tasks; nothing is waited for.

        ``n_comp`` may be ``None``: the tasks then read the component count
        from ``rmap``/``prev`` on the workers, so a round can be submitted
        before the last one's statistics reached the client.
        """
        c = self.client
        self._sub = next(self._subs)
        pins = self.place if len(self.place) == len(chunks) else [None] * len(chunks)
        outs = [c.submit(tasks.map_round, ch, rmap, n_comp, self.backend, self.packing, key=self._key("map", rnd, i),
                         **self._pin(pins[i]))
                for i, ch in enumerate(chunks)]
        edges = [c.submit(operator.getitem, o, 0, key=self._key("edges", rnd, i)) for i, o in enumerate(outs)]
        level = [c.submit(operator.getitem, o, 1, key=self._key("cand", rnd, i)) for i, o in enumerate(outs)]
        depth = 0
        while len(level) > 1:
            level = [c.submit(tasks.merge, *level[j:j + self.split_every],
                              key=self._key("merge", rnd, f"{depth}.{j // self.split_every}"))
                     for j in range(0, len(level), self.split_every)]
            depth += 1
        merged = level[0] if depth else c.submit(tasks.merge, level[0], key=self._key("merge", rnd, "0.0"))
        out = c.submit(tasks.contract, merged, n_comp, prev, not light, key=self._key("contract", rnd))
        sub = {
            "edges": edges,
            "rmap": c.submit(operator.getitem, out, 0, key=self._key("rmap", rnd)),
            "chosen": c.submit(operator.getitem, out, 1, key=self._key("chosen", rnd)),
            "stats": c.submit(operator.getitem, out, 2, key=self._key("stats", rnd)),
            "tasks": 3 * len(chunks) + depth + (0 if depth else 1) + 4,
        }
        self._sub = None
        return sub

    def _finish_local(self, stats, rnd, raws, offsets, chunks, rmap, n_comp, edges_left, prev,
                      maps, chosen_f, t_start):
        """One task gathers the edges left and finishes the forest."""
        c = self.client
        t0 = time.perf_counter()
        self._emit(round=rnd, phase="local", components=n_comp, edges=edges_left, elapsed=t0 - t_start)
        if chunks is None:
            args = (raws, None, n_comp, prev, self.g.n_vertices, self.light_factor, self.min_degree, offsets)
        else:
            args = (chunks, rmap, n_comp, prev, self.g.n_vertices, self.light_factor, self.min_degree, None)
        pin = {}
        if self.backend != "cpu" and self.throughput:
            # the single task goes to the fastest worker (a GPU one on a mixed cluster)
            pin = {"workers": [max(self.throughput, key=lambda w: (self.throughput[w], w))],
                   "allow_other_workers": True}
        out = c.submit(tasks.solve_local, *args, self.backend, self.packing, key=self._key("local", rnd), pure=False,
                       **pin)
        maps.append(c.submit(operator.getitem, out, 0, key=self._key("rmap", rnd)))
        chosen_f.append(c.submit(operator.getitem, out, 1, key=self._key("chosen", rnd)))
        st = c.submit(operator.getitem, out, 2, key=self._key("stats", rnd)).result()
        wall = time.perf_counter() - t0
        if chunks is None:
            stats.setup_seconds += st["prepare"]
            stats.backend = st["kind"]  # the whole forest came from this one task
        n0 = len(stats.rounds)
        self._local_rounds(stats, st, rnd, wall)
        for r in stats.rounds[n0:]:
            self._publish("round", **r.to_dict())

    def _local_rounds(self, stats, st, rnd, wall):
        tr = st["trace"]
        kernel = sum(sum(t["phase_seconds"].values()) for t in tr) + st["filter-edges"]
        for j, t in enumerate(tr):
            ps = dict(t["phase_seconds"])
            if j == 0:
                ps["filter-edges"] = ps.get("filter-edges", 0.0) + st["filter-edges"]
            mode = "local-filter" if t.get("filter_pass") else ("local-light" if t.get("light") else "local")
            stats.rounds.append(RoundStats(
                round=rnd + j, mode=mode, components_before=t["components_before"],
                components_after=t["components_after"], edges_before=t["edges_before"],
                edges_after=t["edges_after"], forest_edges=t["forest_edges"], phase_seconds=ps,
                # the solve is one task: its overhead is charged to its first round
                wall_seconds=sum(ps.values()) + ((wall - kernel - st["prepare"]) if j == 0 else 0.0),
                bytes_moved=0, tasks=4 if j == 0 else 0,
                h2d_bytes=int(st.get("h2d", 0)) if j == 0 else 0,
                d2h_bytes=int(st.get("d2h", 0)) if j == 0 else 0,
                gpu_edges=t["edges_before"] if st.get("kind") == "gpu" else 0))

    def _rows(self, raws, offsets, ids_f, edge_ids):
        g = self.g
        dt = np.dtype(g.weight_dtype)
        if g.in_memory and len(g.sources) == 1:
            s = g.sources[0]
            if s.on_device:
                return tuple(gpu.take_to_host(a, edge_ids) for a in (s.src, s.dst, s.weight))
            src, dst, w = np.asarray(s.src), np.asarray(s.dst), np.asarray(s.weight)
            if src.dtype.kind in "iu" and dst.dtype.kind in "iu" and w.dtype.kind in "iuf" and w.dtype != np.float16:
                return cpu.take_rows(src, dst, w, edge_ids)
            return src[edge_ids], dst[edge_ids], w[edge_ids]
        parts = self.client.gather([self.client.submit(tasks.rows, r, off, ids_f, key=self._key("rows", 0, i))
                                    for i, (r, off) in enumerate(zip(raws, offsets))])
        if not parts:
            z = np.zeros(0, np.int64)
            return z, z.copy(), np.zeros(0, dt)
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))

    def _exact_bytes(self, stats, since):
        """Replace the estimate by the bytes the workers really received, where they logged it."""
        if self.n_workers < 2:
            for r in stats.rounds:
                r.bytes_moved = 0  # one worker: nothing crosses a worker boundary
            return
        try:
            logs = self.client.run(tasks.transfer_log, since=since)
        except Exception:  # pragma: no cover - an old distributed without the log
            return
        per_round = {}
        for entries in logs.values():
            for k, nb in entries:
                if self.token not in k:
                    continue
                try:
                    rnd = int(k.split("-r", 1)[1].split("-", 1)[0])
                except (IndexError, ValueError):
                    continue
                per_round[rnd] = per_round.get(rnd, 0) + nb
        for r in stats.rounds:
            if r.mode == "distributed" or r.tasks:
                r.bytes_moved = per_round.get(r.round, 0)


def _accepts_n_workers(client):
    import inspect

    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        return False

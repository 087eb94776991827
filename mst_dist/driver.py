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

from .graph import ArraySource, Graph, check_edges
from .kernels import cpu
from .result import MSFResult, RoundStats, RunStats, exact_total

logger = logging.getLogger("mst_dist")

BYTES_PER_EDGE = 24  # working chunk: u, v (int32), key (uint64), eid (int64)
EVENT_TOPIC = "mst-dist"  # scheduler event topic the driver publishes run/round records on


# ---------------------------------------------------------------------------
# task functions (run on workers)
# ---------------------------------------------------------------------------

def _load(source, start, stop, offset, n_vertices, validate):
    src, dst, w = source.load(start, stop)
    if validate:
        check_edges(src, dst, w, n_vertices, offset=offset,
                    where=f" of {getattr(source, 'name', 'source')}")
    return src, dst, w


def _prepare(raw, offset, n_vertices):
    return cpu.prepare_chunk(np.asarray(raw[0]), np.asarray(raw[1]), np.asarray(raw[2]), offset, n_vertices)


def _nbytes(arrs):
    return int(sum(a.nbytes for a in arrs))


def _map(chunk, rmap, n_comp):
    if n_comp is None:
        n_comp = rmap[1]
    t0 = time.perf_counter()
    m_in = chunk[0].shape[0]
    if rmap is None:
        cand = cpu.map_chunk(*chunk, n_comp)
        new = chunk
    else:
        new, cand = cpu.filter_map_chunk(*chunk, rmap[0], n_comp)
    dt = time.perf_counter() - t0
    stats = {"edges_in": m_in, "edges": new[0].shape[0], "map": dt,
             "cand_bytes": _nbytes(cand), "merge": 0.0}
    return new, (cand, stats)


def _merge(*parts):
    t0 = time.perf_counter()
    cand = cpu.merge_candidates([p[0] for p in parts])
    dt = time.perf_counter() - t0
    st = {"edges_in": sum(p[1]["edges_in"] for p in parts),
          "edges": sum(p[1]["edges"] for p in parts),
          "map": max(p[1]["map"] for p in parts),
          "cand_bytes": sum(p[1]["cand_bytes"] for p in parts) + _nbytes(cand),
          "merge": max(p[1]["merge"] for p in parts) + dt}
    return cand, st


def _contract(merged, n_comp, prev, finish=True):
    if n_comp is None:
        n_comp = prev["n_next"]
    cand, st = merged
    fin_off = 0 if prev is None else prev["finished_total"]
    t0 = time.perf_counter()
    M, chosen, n_next, n_fin = cpu.contract(*cand, n_comp, fin_off, finish)
    dt = time.perf_counter() - t0
    stats = dict(st)
    stats.update(contract=dt, n_comp=n_comp, n_next=n_next, n_finished=n_fin,
                 finished_total=fin_off + n_fin, forest_edges=int(chosen.shape[0]),
                 map_bytes=int(M.nbytes))
    return (M, n_next), chosen, stats


def _local(chunks, rmap, n_comp, prev, n_vertices, light_factor, min_degree, raw_offsets=None):
    """Gather the edges left and finish on this worker with the parallel solver."""
    t0 = time.perf_counter()
    if raw_offsets is not None:
        u, v, k, e = cpu.prepare_many(chunks, raw_offsets, n_vertices)
    else:
        u, v, k, e = cpu.concat_chunks(chunks, n_vertices)
    t1 = time.perf_counter()
    m_in = int(u.shape[0])
    fin_off = 0 if prev is None else prev["finished_total"]
    t2 = time.perf_counter()
    trace = []
    # the last distributed round's filter-edges runs inside the solve, in place
    M, chosen, n_fin = cpu.solve_local(u, v, k, e, n_comp, fin_off, light_factor=light_factor,
                                       min_degree=min_degree, trace=trace,
                                       relabel=None if rmap is None else rmap[0])
    stats = {"prepare": t1 - t0, "filter-edges": 0.0, "edges_in": m_in, "trace": trace,
             "finished_total": fin_off + n_fin, "forest_edges": int(chosen.shape[0]),
             "solve": time.perf_counter() - t2}
    return (M, 0), chosen, stats


def _sample(chunk, rate, seed):
    """A uniform sample of a chunk's (key, eid) pairs (role: filter, for the light/heavy threshold)."""
    m = chunk[0].shape[0]
    k = min(m, int(np.ceil(m * rate)))
    if k == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    pos = np.random.default_rng(seed).choice(m, k, replace=False)
    return chunk[2][pos], chunk[3][pos]


def _split(chunk, rmap, tk, te):
    """Pending relabel, then the chunk's light edges (<= threshold) apart from its heavy ones."""
    return cpu.split_light(*chunk, None if rmap is None else rmap[0], tk, te)


def _compose_forward(*maps):
    """One map for a whole light pass: input comp -> comp after the pass."""
    P = maps[0][0].copy()
    for M in maps[1:]:
        cpu._p_compose_forward(P, M[0])
    return P, maps[-1][1]


def _len(chunk):
    return int(chunk[0].shape[0])


def _labels(n_vertices, *maps):
    return cpu.compose_labels([m[0] for m in maps], n_vertices)


def _forest(*chosen):
    return cpu.sorted_ids(list(chosen))


def _rows(raw, offset, edge_ids):
    lo = np.searchsorted(edge_ids, offset)
    hi = np.searchsorted(edge_ids, offset + raw[0].shape[0])
    loc = edge_ids[lo:hi] - offset
    return np.asarray(raw[0])[loc], np.asarray(raw[1])[loc], np.asarray(raw[2])[loc]


def _transfer_log(dask_worker, since):
    out = []
    for ev in list(getattr(dask_worker, "transfer_incoming_log", [])):
        if ev.get("start", 0) < since:
            continue
        for k, nb in ev.get("keys", {}).items():
            k = k if isinstance(k, str) else str(k)
            if k.startswith("mst-"):
                out.append((k, int(nb)))
    return out


# ---------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------

class Driver:
    """Runs one MSF computation on a client."""

    def __init__(self, graph: Graph, client, *, partitions=None, local_finish="auto",
                 split_every=8, light_factor=1.5, min_degree=3.0, progress=None, publish=True):
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
        m = graph.n_edges
        if partitions is None:
            partitions = max(self.threads, math.ceil(m / 16_000_000))
        self.partitions = max(1, min(int(partitions), max(1, m)))
        fits = self.min_memory // (4 * BYTES_PER_EDGE)
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

    def _publish(self, event, **payload):
        """Send a small record to the scheduler's ``mst-dist`` event topic (dashboard, logs)."""
        if not self.publish:
            return
        try:
            self.client.log_event(EVENT_TOPIC, {"event": event, "run": self.token, **payload})
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
        # 1. raw chunks on the workers
        raws, offsets = [], []
        scatter_data, scatter_idx = [], []
        for i, (si, a, b, off) in enumerate(ranges):
            s = g.sources[si]
            offsets.append(off)
            if isinstance(s, ArraySource):
                scatter_data.append(s.load(a, b))
                scatter_idx.append(i)
                raws.append(None)
            else:
                raws.append(c.submit(_load, s, a, b, off, n, not g.validated,
                                     key=self._key("load", 0, i), pure=False))
        if scatter_data:
            futs = c.scatter(scatter_data, hash=False)
            for i, f in zip(scatter_idx, futs):
                raws[i] = f
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
                tasks=pending["tasks"]))
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
                    rmap = c.submit(_compose_forward, *light_maps, key=self._key("compose", rnd))
                    edges_left = sum(c.gather([c.submit(_len, h, key=self._key("count", rnd, i))
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
        ids_f = c.submit(_forest, *chosen_f, key=self._key("forest", rnd))
        lab_f = c.submit(_labels, n, *maps, key=self._key("labels", rnd))
        edge_ids = ids_f.result()
        labels, n_components = lab_f.result()
        src, dst, w = self._rows(raws, offsets, ids_f, edge_ids)
        stats.finish_seconds = time.perf_counter() - t_fin
        stats.total_seconds = time.perf_counter() - t_start
        self._exact_bytes(stats, wall_start)
        self._publish("run-end", total_seconds=stats.total_seconds, n_rounds=stats.n_rounds,
                      forest_edges=int(edge_ids.shape[0]), n_components=int(n_components),
                      bytes_moved=stats.bytes_moved,
                      rounds=[r.to_dict() for r in stats.rounds])  # final: exact bytes moved
        return MSFResult(edge_ids=edge_ids, src=src, dst=dst, weight=w,
                         total_weight=exact_total(w), n_components=int(n_components), labels=labels,
                         n_vertices=n, n_edges=m_total, stats=stats)

    def _prepare(self, raws, offsets):
        return [self.client.submit(_prepare, r, off, self.g.n_vertices, key=self._key("prepare", 0, i))
                for i, (r, off) in enumerate(zip(raws, offsets))]

    def _light_split(self, chunks, n_comp, edges_left):
        """Split every chunk at a sampled threshold: about ``light_factor * n`` light edges."""
        c = self.client
        rate = min(1.0, 8192 / max(1, edges_left))
        samples = c.gather([c.submit(_sample, ch, rate, i, key=self._key("sample", 0, i))
                            for i, ch in enumerate(chunks)])
        ks = np.concatenate([x[0] for x in samples])
        es = np.concatenate([x[1] for x in samples])
        q = int(len(ks) * self.light_factor * n_comp / edges_left)
        if not 0 < q < len(ks):
            return None
        order = np.lexsort((es, ks))
        tk, te = ks[order[q]], es[order[q]]
        logger.debug("light pass: threshold key %d eid %d", tk, te)
        outs = [c.submit(_split, ch, None, tk, te, key=self._key("filter", 0, i))
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
        outs = [c.submit(_map, ch, rmap, n_comp, key=self._key("map", rnd, i)) for i, ch in enumerate(chunks)]
        edges = [c.submit(operator.getitem, o, 0, key=self._key("edges", rnd, i)) for i, o in enumerate(outs)]
        level = [c.submit(operator.getitem, o, 1, key=self._key("cand", rnd, i)) for i, o in enumerate(outs)]
        depth = 0
        while len(level) > 1:
            level = [c.submit(_merge, *level[j:j + self.split_every],
                              key=self._key("merge", rnd, f"{depth}.{j // self.split_every}"))
                     for j in range(0, len(level), self.split_every)]
            depth += 1
        merged = level[0] if depth else c.submit(_merge, level[0], key=self._key("merge", rnd, "0.0"))
        out = c.submit(_contract, merged, n_comp, prev, not light, key=self._key("contract", rnd))
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
            args = (chunks, rmap, n_comp, prev, self.g.n_vertices, self.light_factor, self.min_degree)
        out = c.submit(_local, *args, key=self._key("local", rnd), pure=False)
        maps.append(c.submit(operator.getitem, out, 0, key=self._key("rmap", rnd)))
        chosen_f.append(c.submit(operator.getitem, out, 1, key=self._key("chosen", rnd)))
        st = c.submit(operator.getitem, out, 2, key=self._key("stats", rnd)).result()
        wall = time.perf_counter() - t0
        if chunks is None:
            stats.setup_seconds += st["prepare"]
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
                bytes_moved=0, tasks=4 if j == 0 else 0))

    def _rows(self, raws, offsets, ids_f, edge_ids):
        g = self.g
        dt = np.dtype(g.weight_dtype)
        if g.in_memory and len(g.sources) == 1:
            s = g.sources[0]
            src, dst, w = np.asarray(s.src), np.asarray(s.dst), np.asarray(s.weight)
            if src.dtype.kind in "iu" and dst.dtype.kind in "iu" and w.dtype.kind in "iuf" and w.dtype != np.float16:
                return cpu.take_rows(src, dst, w, edge_ids)
            return src[edge_ids], dst[edge_ids], w[edge_ids]
        parts = self.client.gather([self.client.submit(_rows, r, off, ids_f, key=self._key("rows", 0, i))
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
            logs = self.client.run(_transfer_log, since=since)
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

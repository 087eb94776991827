"""A streaming run: edges read from their source in passes, never all kept.

A sample of some windows of rows gives the thresholds; each pass then
streams every chunk from its source once, keeps the slice of the strict
``(weight, edge id)`` order up to the next threshold that still joins two
components, and solves it (distributed rounds or the local finish, as any
graph: the :class:`~mst_dist.engine.runs.solver.Solver`) starting from the
components of the passes before (see :mod:`mst_dist.engine.passes`).  Only
the vertex -> component map, the chosen edges' rows and one slice stay on
the workers.
"""
from __future__ import annotations

import operator
import time

import numpy as np
from distributed import Future, as_completed

from mst_dist.engine import passes, tasks
from mst_dist.engine.placement import pin
from mst_dist.engine.plan import SLICE_BYTES_PER_EDGE, slice_budget
from mst_dist.engine.runs.base import Run
from mst_dist.engine.runs.resident import rows_from_arrays
from mst_dist.engine.runs.solver import Solver
from mst_dist.engine.runs.state import SolveState, StreamState
from mst_dist.phases import Phase, Step
from mst_dist.result import PassStats

#: Edges sampled to set a streaming run's thresholds, from windows of rows spread over the graph.
SAMPLE_EDGES = 1 << 18
SAMPLE_WINDOWS = 4
SAMPLE_WINDOW_EDGES = 1 << 18


class Sample:
    """A streaming run's sample (original ids, keys, edge ids) and the graph's non-loop edges, estimated."""

    def __init__(self, u, v, key, eid, m_est):
        self.u, self.v, self.key, self.eid, self.m_est = u, v, key, eid, m_est

    def ordered(self):
        """``(key, eid)`` of the sample in the strict order."""
        order = np.lexsort((self.eid, self.key))
        return self.key[order], self.eid[order]


def _pass_measure(r):
    """What a pass tells of a chunk read: ``(bytes read, edges read, edges kept)``."""
    return r.bytes_read, r.edges_in, r.edges_kept


class SlicedPasses:
    """What every streaming kind shares: its inputs, the sample, the thresholds between passes, the
    passes over the source and their progress.  A kind gives :meth:`_survivors` (the sampled edges
    that still join two components) and :meth:`_pass_map` (the vertex map a pass relabels by)."""

    #: The kind's state (a :class:`StreamState`).
    State = StreamState

    def load(self) -> StreamState:
        """What each chunk is read from: the caller's arrays scattered once, else its source."""
        g = self.g
        self.publish_start()
        scattered = self.builder.load(g.sources, self.ranges, validate=False) if g.in_memory else None
        inputs = [((scattered[i] if scattered else g.sources[r.source]), r.start, r.stop, r.offset)
                  for i, r in enumerate(self.ranges)]
        return self.State(inputs=inputs, n_comp=g.n_vertices)

    # -- the sample and the thresholds ---------------------------------------------------

    def _sample(self, st) -> Sample:
        """Sample some windows of rows: the sample and the graph's non-loop edges, estimated."""
        windows = self._sample_windows()
        sampled = sum(hi - lo for _, (lo, hi) in windows)
        rate = min(1.0, SAMPLE_EDGES / max(1, sampled))
        validate = not self.g.validated
        futs = [self.client.submit(passes.sample_chunk, *st.inputs[i], self.g.n_vertices, validate, rate, j,
                                   (lo, hi), key=self.builder.key(Step.PASS_SAMPLE, 0, j), **pin(self.places[i]))
                for j, (i, (lo, hi)) in enumerate(windows)]
        t0 = time.perf_counter()
        parts = self._progress("sample", futs, lambda r: (r.bytes_read, r.rows, 0))
        if parts:
            u, v, key, eid = (np.concatenate([getattr(p, f) for p in parts]) for f in ("u", "v", "key", "eid"))
            nonloop, raw = sum(p.nonloop for p in parts), sum(p.rows for p in parts)
        else:
            u = v = eid = np.zeros(0, np.int64)
            key = np.zeros(0, np.uint64)
            nonloop = raw = 0
        self.stats.passes.append(PassStats("sample", len(futs), raw, sum(p.bytes_read for p in parts), 0,
                                           time.perf_counter() - t0))
        m_est = nonloop * self.g.n_edges / raw if raw else 0
        return Sample(u, v, key, eid, m_est)

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
            i = next(j for j, r in enumerate(self.ranges) if r.offset <= pos < r.offset + r.n_edges)
            r = self.ranges[i]
            lo = r.start + int(pos - r.offset)
            out.setdefault((i, lo), (i, (lo, min(r.stop, lo + width))))
        return list(out.values())

    #: Worker bytes an edge of a slice while it is solved, and the share of the workers' memory the automatic
    #: slice takes (``1 / slice_share``).
    slice_edge_bytes = SLICE_BYTES_PER_EDGE
    slice_share = 4

    def _slice_budget(self):
        """Most edges one pass keeps: ``mst.slice-edges``, else what its share of the workers' memory holds."""
        se = self.spec.slice_edges
        if se != "auto":
            return int(se)
        return slice_budget(self.cluster.total_memory, self.slice_edge_bytes, self.slice_share)

    def _next_threshold(self, sample, st, lo, n_live, k):
        """The upper end of the next pass's slice (``None``: the rest of the order).

        The first slice is the ~``light_factor * n`` lightest edges (at most
        the budget); each later one as much as the budget allows, estimated
        by relabelling the sample with the components found so far.
        """
        spec = self.spec
        budget = self._slice_budget()
        n = sample.key.shape[0]
        if not n or not sample.m_est:
            return None
        scale = sample.m_est / n
        if k == 1:
            want = budget
            if spec.light_factor > 0 and sample.m_est > spec.min_degree * n_live:
                want = min(budget, spec.light_factor * n_live)
            q = int(want / scale)
            if q >= n:
                return None
            key, eid = sample.ordered()
            return int(key[q]), int(eid[q])
        ks, es = self._survivors(st, sample, lo, k)
        q = int(budget / scale)
        return None if q >= ks.shape[0] else (int(ks[q]), int(es[q]))

    # -- one pass ------------------------------------------------------------------------

    def _pass(self, st, k, lo, hi):
        """Stream every chunk once; keep the slice ``lo < (key, eid) <= hi`` that joins two components."""
        kept, rows, stats = self._read(st, k, lo, hi, range(len(st.inputs)))
        t0 = time.perf_counter()
        self._pass_done(f"pass {k}", self._progress(f"pass {k}", stats, _pass_measure), t0)
        return kept, rows

    def _read(self, st, k, lo, hi, chunks):
        """The pass's reading of the chunks ``chunks`` (indices), submitted: futures ``(kept, rows, stats)``,
        a list of each, one per chunk."""
        c, key = self.client, self.builder.key
        validate, vmap = not self.g.validated, self._pass_map(st)
        outs = [c.submit(passes.pass_chunk, *st.inputs[i], self.g.n_vertices, validate, vmap, lo, hi,
                         self.spec.backend, key=key(Step.PASS, k, i), **pin(self.places[i]))
                for i in chunks]
        return tuple([c.submit(operator.getitem, o, j, key=key(part, k, i)) for i, o in zip(chunks, outs)]
                     for j, part in enumerate((Step.PASS_KEPT, Step.PASS_ROWS, Step.PASS_STATS)))

    def _pass_done(self, name, recs, t0, waves=1):
        self.stats.passes.append(PassStats(name, len(recs), sum(r.edges_in for r in recs),
                                           sum(r.bytes_read for r in recs), sum(r.edges_kept for r in recs),
                                           time.perf_counter() - t0, waves))

    def _progress(self, name, futs, measure, total=None, before=()):
        """Wait for a pass's tasks, telling progress as each chunk is done; their results, in order.
        ``total``: the pass's chunks, where ``futs`` are some of them, read after the results ``before``."""
        results = [None] * len(futs)
        index = {f.key: i for i, f in enumerate(futs)}
        done = len(before)
        measured = [measure(r) for r in before]
        read, edges, kept = (sum(m[j] for m in measured) for j in range(3))
        total = len(futs) if total is None else total
        last = 0.0
        for f in as_completed(futs, loop=self.client.loop):
            r = f.result()
            results[index[f.key]] = r
            nb, ne, nk = measure(r)
            done, read, edges, kept = done + 1, read + nb, edges + ne, kept + nk
            now = time.perf_counter()
            if now - last > 0.2 or done == total:
                last = now
                self.events.emit(round=0, phase=Phase.PASS, components=self.g.n_vertices, edges=kept, **{
                    "pass": name, "chunks_done": done, "chunks_total": total, "bytes_read": read,
                    "edges_read": edges})
        return results

    # -- the forest's rows: those each pass kept of the edges it chose -----------------------

    def forest_parts(self, st, i, ids_f):
        return st.rows.get(i, [])

    def forest_rows(self, st, ids_f, edge_ids):
        """From the rows each pass kept; from the caller's arrays where they are the graph.  ``ids_f``:
        a future of ``edge_ids``, else they are sent from here."""
        g = self.g
        if g.in_memory and len(g.sources) == 1:
            return rows_from_arrays(g.sources[0], edge_ids)
        rows = [r for rs in st.rows.values() for r in rs]
        if not edge_ids.shape[0] or not rows:
            z = np.zeros(0, np.int64)
            return z, z.copy(), np.zeros(0, np.dtype(g.weight_dtype))
        ids = ids_f if isinstance(ids_f, Future) else edge_ids
        src, dst, w = self.client.submit(passes.forest_rows, ids, *rows, key=self.builder.key(Step.ROWS, st.rnd)).result()
        return src, dst, w.astype(np.dtype(g.weight_dtype), copy=False)

    def _survivors(self, st, sample, lo, k):
        """``(key, eid)`` of the sampled edges above ``lo`` whose ends are in two components, in order."""
        raise NotImplementedError

    def _pass_map(self, st):
        """The vertex -> component map each chunk of a pass relabels by (``None``: none)."""
        raise NotImplementedError


class StreamingRun(SlicedPasses, Run):
    """Passes over the edge source, each solving one slice of the strict order."""

    kind = "streaming"
    streams = True

    def rounds(self, st: StreamState):
        """Sample, then pass after pass until the last slice (the rest of the order) is solved."""
        g, c, key = self.g, self.client, self.builder.key
        sample = self._sample(st)
        self.stats.setup_seconds = time.perf_counter() - self.t_start
        st.t_solve = time.perf_counter()
        lo, n_live, k, done = None, g.n_vertices, 0, False
        if self.ckpt is not None and self.ckpt.saved is not None:
            lo, n_live, k, done = self._resume(st)
        solver = Solver(self)
        while not done:
            k += 1
            hi = self._next_threshold(sample, st, lo, n_live, k)
            kept, rows = self._pass(st, k, lo, hi)
            sub = SolveState(n_comp=n_live, edges_left=self.stats.passes[-1].edges_kept, chunks=kept,
                             rnd=st.rnd, t_solve=st.t_solve)
            solver.solve(sub, light=False)
            st.rnd = sub.rnd
            st.chosen.extend(sub.chosen)
            chosen = c.submit(tasks.forest_ids, *sub.chosen, key=key(Step.PASS_FOREST, k))
            for i, r in enumerate(rows):
                st.rows.setdefault(i, []).append(c.submit(passes.trim_rows, r, chosen, key=key(Step.PASS_TRIM, k, i)))
            composed = c.submit(passes.compose, st.vmap, *sub.maps, key=key(Step.PASS_COMPOSE, k))
            st.vmap = c.submit(operator.getitem, composed, 0, key=key(Step.PASS_VMAP, k))
            n_live = c.submit(operator.getitem, composed, 1, key=key(Step.PASS_COMPONENTS, k)).result()
            # the slice is solved: let the workers drop it (and its rows, once trimmed) before the next pass
            kept = rows = sub = composed = None
            if self.ckpt is not None:
                self.ckpt.save_pass(st, k, hi, n_live, chosen)
            if hi is None:
                break
            lo = hi
        st.n_comp = 0

    def _resume(self, st):
        """Go on from a checkpoint: ``(lo, components, passes done, complete)``."""
        s = self.ckpt.saved
        st.vmap, forest, st.rows = self.ckpt.resume_pass(self.ranges, self.g.n_vertices)
        st.chosen = [forest]
        st.rnd = s.round
        self.stats.resumed_from = st.rnd
        lo = None if s.threshold is None else tuple(s.threshold)
        return lo, s.components, s.passes, s.complete

    def _survivors(self, st, sample, lo, k):
        return self.client.submit(passes.survivors, st.vmap, sample.u, sample.v, sample.key, sample.eid, lo,
                                  key=self.builder.key(Step.PASS_ESTIMATE, k)).result()

    def _pass_map(self, st):
        return st.vmap

    # -- finish and write ----------------------------------------------------------------

    def finish(self, st):
        self.release_scratch(0)  # no solve follows: the scratch goes before the labels and rows are made
        return super().finish(st)

    def labels(self, st):
        return self.client.submit(passes.vertex_labels, st.vmap, self.g.n_vertices,
                                  key=self.builder.key(Step.LABELS, st.rnd))

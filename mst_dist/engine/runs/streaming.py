"""Streamed slices: the edge source that reads the edges from their source in passes, never all kept.

A sample of some windows of rows gives the thresholds; each pass then
streams every chunk from its source once, keeps the slice of the strict
``(weight, edge id)`` order up to the next threshold that still joins two
components, and hands it to the run's vertex store, which relabels it by
the components of the passes before (on reading, or by asking the owners of
the vertex ranges), solves it and follows its labels (see
:mod:`mst_dist.engine.passes`).  Only the vertex state, the chosen edges'
rows and one slice stay on the workers.  A store that relabels a slice
after reading it (:attr:`~mst_dist.engine.runs.ranges.VertexRanges.relabels_slices`)
gets it in waves of chunks, each holding at most ``slice-edges`` edges of
the slice before its relabel drops those inside a component: a slice is
then bounded by the edges that still join two components.
"""
from __future__ import annotations

import operator
import time

import numpy as np
from distributed import Future, as_completed

from mst_dist.engine import passes
from mst_dist.engine.batch import Batch
from mst_dist.engine.placement import pin
from mst_dist.engine.plan import should_stream, slice_budget
from mst_dist.engine.runs.parts import EdgeSource
from mst_dist.engine.runs.resident import rows_from_arrays
from mst_dist.engine.runs.state import PassesState, Slice
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


class StreamedSlices(EdgeSource):
    """Passes over the edge source, each handing one slice of the strict order to the vertex store."""

    name = "streamed"
    streams = True
    spec_fields = ("stream", "slice_edges", "light_factor", "min_degree")

    @classmethod
    def wanted(cls, spec, graph, cluster) -> bool:
        return should_stream(spec.stream, graph, cluster.total_memory)

    def load(self) -> PassesState:
        """What each chunk is read from: the caller's arrays scattered once, else its source."""
        run, g = self.run, self.run.g
        scattered = run.builder.load(g.sources, run.ranges, validate=False) if g.in_memory else None
        inputs = [((scattered[i] if scattered else g.sources[r.source]), r.start, r.stop, r.offset)
                  for i, r in enumerate(run.ranges)]
        return PassesState(inputs=inputs)

    def solve(self, st):
        """Sample, then pass after pass until the last slice (the rest of the order) is solved."""
        run, store = self.run, self.run.store
        st.edges.sample = sample = self._sample(st)
        lo, n_live, k, done, rows = store.start_passes(st)
        if rows:
            st.edges.rows = rows
        run.stats.setup_seconds = time.perf_counter() - run.t_start
        st.t_solve = time.perf_counter()
        while not done:
            k += 1
            hi = self._next_threshold(sample, st, lo, n_live, k)
            piece = self._read_slice(st, k, lo, hi, n_live)
            n_live, forest, pins = store.solve_slice(st, k, n_live, piece)
            if forest is not None:  # the rows kept of the edges chosen, where their chunk's forest is
                c, key = run.client, run.builder.key
                with Batch(c) as b:
                    for i, (r, f) in enumerate(zip(piece.rows, forest)):
                        st.edges.rows.setdefault(i, []).append(
                            b.submit(passes.trim_rows, r, f, key=key(Step.PASS_TRIM, k, i), **pins[i]))
            piece = forest = None  # the slice is solved: the workers let it go before the next pass
            store.end_pass(st, k, hi, n_live)
            done, lo = hi is None, hi
        store.end_passes(st, k)
        st.n_comp = 0

    # -- the sample and the thresholds ---------------------------------------------------

    def _sample(self, st) -> Sample:
        """Sample some windows of rows: the sample and the graph's non-loop edges, estimated."""
        run = self.run
        windows = self._sample_windows()
        sampled = sum(hi - lo for _, (lo, hi) in windows)
        rate = min(1.0, SAMPLE_EDGES / max(1, sampled))
        validate = not run.g.validated
        futs = [run.client.submit(passes.sample_chunk, *st.edges.inputs[i], run.g.n_vertices, validate, rate, j,
                                  (lo, hi), key=run.builder.key(Step.PASS_SAMPLE, 0, j), **pin(run.places[i]))
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
        run.stats.passes.append(PassStats("sample", len(futs), raw, sum(p.bytes_read for p in parts), 0,
                                          time.perf_counter() - t0))
        m_est = nonloop * run.g.n_edges / raw if raw else 0
        return Sample(u, v, key, eid, m_est)

    def _sample_windows(self):
        """``[(chunk, (lo, hi)), ...]``: up to :data:`SAMPLE_WINDOWS` windows of rows spread over the graph."""
        m, ranges = self.run.g.n_edges, self.run.ranges
        if not m:
            return []
        width = max(1, min(SAMPLE_WINDOW_EDGES, m // SAMPLE_WINDOWS))
        out = {}
        # windows start at multiples of their width: a source read in blocks (a generator's
        # 2**20 edges) then makes each window from one block
        for pos in (np.linspace(0, m - 1, min(m, SAMPLE_WINDOWS)).astype(np.int64) // width) * width:
            i = next(j for j, r in enumerate(ranges) if r.offset <= pos < r.offset + r.n_edges)
            r = ranges[i]
            lo = r.start + int(pos - r.offset)
            out.setdefault((i, lo), (i, (lo, min(r.stop, lo + width))))
        return list(out.values())

    def slice_budget(self):
        """Most edges one pass keeps: ``mst.slice-edges``, else what the store's share of the workers' memory
        holds at the store's bytes an edge of a slice."""
        se, store = self.run.spec.slice_edges, self.run.store
        if se != "auto":
            return int(se)
        return slice_budget(self.run.cluster.total_memory, store.slice_edge_bytes, store.slice_share)

    def _next_threshold(self, sample, st, lo, n_live, k):
        """The upper end of the next pass's slice (``None``: the rest of the order).

        The first slice is the ~``light_factor * n`` lightest edges (at most
        the budget); each later one as much as the budget allows, estimated
        by relabelling the sample with the components found so far (the
        store's :meth:`survivors`).
        """
        spec = self.run.spec
        budget = self.slice_budget()
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
        ks, es = self.run.store.survivors(st, sample, lo, k)
        q = int(budget / scale)
        return None if q >= ks.shape[0] else (int(ks[q]), int(es[q]))

    # -- one pass ------------------------------------------------------------------------

    def _read_slice(self, st, k, lo, hi, n_live):
        """Stream every chunk once, in waves of chunks one after the other where the store relabels what is
        read (:meth:`_waves`), and keep the slice ``lo < (key, eid) <= hi`` that joins two components:
        a :class:`~mst_dist.engine.runs.state.Slice` of each chunk's edges as the store takes them, and rows."""
        store, n = self.run.store, len(st.edges.inputs)
        waves = self._waves(st.edges.sample, lo, hi) if store.relabels_slices else 1
        mapped, rows, recs = [None] * n, [None] * n, []
        name, t0, per = f"pass {k}", time.perf_counter(), max(1, -(-n // max(1, waves)))
        for first in range(0, n, per):
            chunks = range(first, min(n, first + per))
            kept, kept_rows, stats = self._read(st, k, lo, hi, chunks)
            out, joined = store.take_slice(st, k, chunks, kept, kept_rows, n_live)
            recs += self._progress(name, stats, _pass_measure, total=n, before=recs)
            store.settle(out + joined)  # a wave's raw slice is let go before the next wave is read
            for j, i in enumerate(chunks):
                mapped[i], rows[i] = out[j], joined[j]
            kept = kept_rows = out = joined = None
        self._pass_done(name, recs, t0, -(-n // per) if n else 1)
        return Slice(mapped=mapped, rows=rows)

    def _read(self, st, k, lo, hi, chunks):
        """The pass's reading of the chunks ``chunks`` (indices), submitted: futures ``(kept, rows, stats)``,
        a list of each, one per chunk."""
        run = self.run
        c, key = run.client, run.builder.key
        validate, vmap = not run.g.validated, run.store.pass_map(st)
        outs = [c.submit(passes.pass_chunk, *st.edges.inputs[i], run.g.n_vertices, validate, vmap, lo, hi,
                         run.spec.backend, key=key(Step.PASS, k, i), **pin(run.places[i]))
                for i in chunks]
        return tuple([c.submit(operator.getitem, o, j, key=key(part, k, i)) for i, o in zip(chunks, outs)]
                     for j, part in enumerate((Step.PASS_KEPT, Step.PASS_ROWS, Step.PASS_STATS)))

    def _waves(self, sample, lo, hi):
        """Groups of chunks a pass reads one after the other: each holds at most ``slice-edges`` edges of the
        slice (estimated from the sample) before its relabel drops those inside a component."""
        n = sample.key.shape[0]
        if not n or not sample.m_est:
            return 1
        key, eid = sample.ordered()
        raw = np.count_nonzero(passes.in_slice(key, eid, lo, hi)) * (sample.m_est / n)
        # a tenth over the budget is within the sample's error: a first pass cut at the budget reads in one wave
        return max(1, min(len(self.run.ranges), int(np.ceil(raw / (1.1 * max(1, self.slice_budget()))))))

    def _pass_done(self, name, recs, t0, waves=1):
        self.run.stats.passes.append(PassStats(name, len(recs), sum(r.edges_in for r in recs),
                                               sum(r.bytes_read for r in recs), sum(r.edges_kept for r in recs),
                                               time.perf_counter() - t0, waves))

    def _progress(self, name, futs, measure, total=None, before=()):
        """Wait for a pass's tasks, telling progress as each chunk is done; their results, in order.
        ``total``: the pass's chunks, where ``futs`` are some of them, read after the results ``before``."""
        run = self.run
        results = [None] * len(futs)
        index = {f.key: i for i, f in enumerate(futs)}
        done = len(before)
        measured = [measure(r) for r in before]
        read, edges, kept = (sum(m[j] for m in measured) for j in range(3))
        total = len(futs) if total is None else total
        last = 0.0
        for f in as_completed(futs, loop=run.client.loop):
            r = f.result()
            results[index[f.key]] = r
            nb, ne, nk = measure(r)
            done, read, edges, kept = done + 1, read + nb, edges + ne, kept + nk
            now = time.perf_counter()
            if now - last > 0.2 or done == total:
                last = now
                run.events.emit(round=0, phase=Phase.PASS, components=run.g.n_vertices, edges=kept, **{
                    "pass": name, "chunks_done": done, "chunks_total": total, "bytes_read": read,
                    "edges_read": edges})
        return results

    # -- the forest's rows: those each pass kept of the edges it chose -----------------------

    def forest_parts(self, st, i, ids_f):
        return st.edges.rows.get(i, [])

    def kept_rows(self, st, ids_f):
        """Each chunk's forest rows: those its passes kept, joined where the chunk is."""
        run = self.run
        with Batch(run.client) as b:
            return [b.submit(passes.joined_rows, *st.edges.rows.get(i, []),
                             key=run.builder.key(Step.KEPT_ROWS, st.rnd, i), **run.store.chunk_pin(i))
                    for i in range(len(run.ranges))]

    def forest_rows(self, st, ids_f, edge_ids):
        """From the rows each pass kept; from the caller's arrays where they are the graph.  ``ids_f``:
        a future of ``edge_ids``, else they are sent from here."""
        run, g = self.run, self.run.g
        if g.in_memory and len(g.sources) == 1:
            return rows_from_arrays(g.sources[0], edge_ids)
        rows = [r for rs in st.edges.rows.values() for r in rs]
        if not edge_ids.shape[0] or not rows:
            z = np.zeros(0, np.int64)
            return z, z.copy(), np.zeros(0, np.dtype(g.weight_dtype))
        ids = ids_f if isinstance(ids_f, Future) else edge_ids
        src, dst, w = run.client.submit(passes.forest_rows, ids, *rows,
                                        key=run.builder.key(Step.ROWS, st.rnd)).result()
        return src, dst, w.astype(np.dtype(g.weight_dtype), copy=False)

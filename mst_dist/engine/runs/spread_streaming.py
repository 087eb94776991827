"""A streaming run whose per-vertex state is cut into ranges: edges in passes, vertices spread.

The passes are a streaming run's (:class:`~mst_dist.engine.runs.streaming.SlicedPasses`:
a sample sets the thresholds, each pass streams every chunk from its source
and keeps one slice of the strict ``(weight, edge id)`` order); the vertex
map is a partitioned run's labels (:class:`~mst_dist.engine.runs.partitioned.PartitionedRun`):
one range of vertices per task, spread over the workers.  Each pass:

read and  each chunk keeps its slice's edges over the original vertex ids
relabel   and asks the owners of the ranges it touches for its ends'
          components (:func:`~mst_dist.engine.ranged.filter_block`: the
          edges inside a component go, with their rows; the rest are mapped
          for the first round).  The chunks are read in waves, each holding
          at most ``slice-edges`` edges of the slice before its relabel, so
          a slice is bounded by the edges that still join two components,
          not by all those of its span of the order
solve     partitioned rounds over the components, until they fit one
          worker; then the centralised base case
compose   the labels followed every round: each vertex's label is its
          component after the pass (finished as ``-(F + 1)``; ``F`` is its
          id in the next pass, :func:`~mst_dist.engine.ranged.flip`)

No task holds an array over all vertices or components.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from mst_dist.engine import passes, ranged, tasks
from mst_dist.engine.batch import Batch
from mst_dist.engine.plan import SPREAD_SLICE_BYTES_PER_EDGE
from mst_dist.engine.runs.base import ForestOut
from mst_dist.engine.runs.partitioned import PartitionedRun, chunk_pins, next_bounds
from mst_dist.engine.runs.state import SolveState, SpreadStreamState
from mst_dist.engine.runs.solver import wait_on
from mst_dist.engine.runs.streaming import SlicedPasses, _pass_measure
from mst_dist.kernels.vertex_ranges import distinct, even_bounds
from mst_dist.phases import Step


class SpreadStreamingRun(SlicedPasses, PartitionedRun):
    """Passes over the edge source; the vertex map in ranges owned by tasks; each slice solved by
    partitioned rounds."""

    kind = "spread-streaming"
    streams = True
    State = SpreadStreamState
    slice_edge_bytes = SPREAD_SLICE_BYTES_PER_EDGE
    #: a third of the workers' memory: a smaller slice takes more passes, a larger one a first round over
    #: more edges, and both make a run slower (docs/benchmarks.md)
    slice_share = 3
    #: an eighth: beside the base case a worker holds its share of the vertex map, the slice and the forest
    #: rows the passes kept; with a larger share those no longer fit a worker of 1 GiB at 2^27 vertices
    base_share = 8

    def rounds(self, st: SpreadStreamState):
        """Sample, then pass after pass until the last slice (the rest of the order) is solved."""
        self.workers = sorted(self.cluster.kinds)
        self.stats.vertex_partition["local_contraction"] = False  # a slice's edges are not cut by vertex range
        sample = self._sample(st)
        lo, n_live, k, done = self._start(st)
        self.stats.setup_seconds = time.perf_counter() - self.t_start
        st.t_solve = time.perf_counter()
        while not done:
            k += 1
            hi = self._next_threshold(sample, st, lo, n_live, k)
            st.slice_mapped, st.slice_rows = self._read_relabelled(st, k, lo, hi, n_live, self._waves(sample, lo, hi))
            n_live, live = self._solve_slice(st, k, n_live)
            if not live:  # the pass's components (finished as -(F + 1)) are the next pass's live ids F
                st.labels = self._each_range(ranged.flip, st.labels, Step.PASS_CLOSE, k)
            if self.ckpt is not None:
                self._save_pass(st, k, hi, n_live)
            done, lo = hi is None, hi
        # every component left is finished: the live ids F as -(F + 1), as the canonical labels take them
        self.labels_parts = st.labels = self._each_range(ranged.flip, st.labels, Step.PASS_END, k)
        st.n_comp = 0

    def _start(self, st):
        """The vertex map before the first pass, or as a checkpoint saved it: ``(lo, components, passes
        done, complete)``."""
        n, saved = self.g.n_vertices, self.ckpt.saved if self.ckpt is not None else None
        self.pins = [{}] * len(self.ranges)  # each pass pins its chunks where they were loaded
        self.vertex_bounds = vb = even_bounds(n, saved.vertex_ranges if saved is not None else self.n_ranges)
        if saved is None:
            lpins = self._range_pins(vb.shape[0] - 1)
            with Batch(self.client) as b:
                st.labels = [b.submit(ranged.first_labels, int(lo), int(hi), key=self.builder.key(Step.LABELS_INIT, 0, r),
                                      **lpins[r]) for r, (lo, hi) in enumerate(zip(vb[:-1], vb[1:]))]
            return None, n, 0, False
        st.labels, forest, rows = self.ckpt.resume_spread(vb, self.chunk_bounds, n)
        st.forest = {i: [f] for i, f in enumerate(forest)}
        st.rows = {i: [r] for i, r in enumerate(rows)}
        st.rnd = saved.round
        self.stats.resumed_from = st.rnd
        return None if saved.threshold is None else tuple(saved.threshold), saved.components, saved.passes, \
            saved.complete

    def _save_pass(self, st, k, hi, n_live):
        """The pass's state to the checkpoint; each chunk's forest ids so far joined into one part first."""
        with Batch(self.client) as b:
            for i in range(len(self.ranges)):
                st.forest[i] = [b.submit(tasks.forest_ids, *st.forest.get(i, []), key=self.builder.key(Step.PASS_IDS, k, i),
                                         **self.pins[i])]
        forest = [st.forest[i][0] for i in range(len(self.ranges))]
        self.ckpt.save_spread_pass(st, k, hi, n_live, labels=st.labels, forest=forest, pins=self.pins,
                                   chunk_bounds=self.chunk_bounds)

    def _each_range(self, fn, parts, step, k):
        """``fn`` on each range's part, where its owner is."""
        pins = self._range_pins(len(parts))
        with Batch(self.client) as b:
            return [b.submit(fn, p, key=self.builder.key(step, k, r), **pins[r]) for r, p in enumerate(parts)]

    def _read_relabelled(self, st, k, lo, hi, n_live, waves):
        """Stream every chunk once, in ``waves`` groups of chunks one after the other: each group's slice
        relabelled by the owners of the vertex map as soon as it is read, keeping only the edges (and their
        rows) that join two components.  ``(each chunk mapped for the first round, its rows)``."""
        c, key, n = self.client, self.builder.key, len(st.inputs)
        nxt = next_bounds(self, n_live)
        kwargs = {"n_next": n_live, "next_bounds": nxt}
        split = functools.partial(ranged.split_ends, bounds=self.vertex_bounds)
        mapped, rows, pins, recs = [None] * n, [None] * n, [None] * n, []
        name, t0, per = f"pass {k}", time.perf_counter(), max(1, -(-n // max(1, waves)))
        for first in range(0, n, per):
            chunks = range(first, min(n, first + per))
            kept, kept_rows, stats = self._read(st, k, lo, hi, chunks)
            wpins = chunk_pins(c, [self.places[i] for i in chunks], kept)
            with Batch(c) as b:
                blocks = [b.submit(ranged.slice_block, kc, backend=self.spec.backend,
                                   key=key(Step.PASS_BLOCK, k, i), **p)
                          for i, kc, p in zip(chunks, kept, wpins)]
            out = self._exchange(Step.PASS_RELABEL, k, blocks, st.labels, split=split, serve=ranged.serve_map,
                                 assemble=ranged.filter_block, pins=wpins, assemble_kwargs=[kwargs] * len(blocks),
                                 requester_ids=chunks)
            with Batch(c) as b:
                joining = [b.submit(ranged.joining_rows, r, m, key=key(Step.PASS_JOINING, k, i), **p)
                           for i, r, m, p in zip(chunks, kept_rows, out, wpins)]
            recs += self._progress(name, stats, _pass_measure, total=n, before=recs)
            wait_on(c, out + joining)  # the wave's raw slice is let go before the next wave is read
            for j, i in enumerate(chunks):
                mapped[i], rows[i], pins[i] = out[j], joining[j], wpins[j]
            kept = kept_rows = blocks = out = joining = None
        self._pass_done(name, recs, t0, -(-n // per) if n else 1)
        self.pins = pins
        return mapped, rows

    def _waves(self, sample, lo, hi):
        """Groups of chunks a pass reads one after the other: each holds at most ``slice-edges`` edges of the
        slice (estimated from the sample) before its relabel drops those inside a component."""
        n = sample.key.shape[0]
        if not n or not sample.m_est:
            return 1
        key, eid = sample.ordered()
        raw = np.count_nonzero(passes.in_slice(key, eid, lo, hi)) * (sample.m_est / n)
        # a tenth over the budget is within the sample's error: a first pass cut at the budget reads in one wave
        return max(1, min(len(self.ranges), int(np.ceil(raw / (1.1 * max(1, self._slice_budget()))))))

    def _solve_slice(self, st, k, n_live):
        """Solve a pass's slice (``st.slice_mapped`` and ``st.slice_rows``: relabelled by the owners of the
        vertex map): ``(components after it, whether the labels are still live ids)``; ``st`` gets the
        pass's forest, rows and labels.  The slice and the labels are taken out of ``st``: each round's
        are let go as the next round's are made."""
        c, key = self.client, self.builder.key
        nxt = next_bounds(self, n_live)
        mapped, rows, st.slice_mapped, st.slice_rows = st.slice_mapped, st.slice_rows, [], []
        sub = SolveState(n_comp=n_live, edges_left=self._count_edges(k, mapped, Step.PASS_COUNT), rnd=st.rnd,
                         t_solve=st.t_solve)
        self.stats.passes[-1].edges_kept = sub.edges_left  # the slice's edges that join two components
        if not sub.edges_left:
            return n_live, True
        labels, bounds, st.labels = st.labels, (nxt if nxt is not None else even_bounds(n_live, 1)), None
        n_comp, finished = n_live, 0
        while self.partitioned_more(n_comp, sub.edges_left):
            mapped, labels, bounds, n_comp, finished = self._round(sub, mapped, labels, bounds, n_comp, finished)
        sub.n_comp, self.labels_parts = n_comp, labels
        base = self._base_case(sub, mapped, finished) if n_comp > 0 else []
        st.rnd, st.labels = sub.rnd, self.labels_parts
        forest = self._forest(st.rnd, mapped, base)
        with Batch(c) as b:
            for i, (f, r) in enumerate(zip(forest, rows)):
                st.forest.setdefault(i, []).append(f)
                st.rows.setdefault(i, []).append(b.submit(passes.trim_rows, r, f, key=key(Step.PASS_TRIM, k, i),
                                                          **self.pins[i]))
            most = [b.submit(ranged.max_finished, vl, key=key(Step.PASS_COMPONENTS, k, r), **pin)
                    for r, (vl, pin) in enumerate(zip(st.labels, self._range_pins(len(st.labels))))]
        return max(c.gather(most), default=-1) + 1, False

    # -- the thresholds: the sample relabelled by the owners of the vertex map -------------

    def _survivors(self, st, sample, lo, k):
        ids = distinct(np.concatenate([sample.u, sample.v]))
        cuts = np.searchsorted(ids, self.vertex_bounds)
        pins = self._range_pins(len(st.labels))
        with Batch(self.client) as b:
            asked = [b.submit(ranged.labels_at, vl, ids[cuts[r]:cuts[r + 1]], key=self.builder.key(Step.PASS_ESTIMATE, k, r),
                              **pins[r]) for r, vl in enumerate(st.labels)]
        lab = np.concatenate(self.client.gather(asked))
        cu, cv = lab[np.searchsorted(ids, sample.u)], lab[np.searchsorted(ids, sample.v)]
        return passes.survivors_labelled(cu, cv, sample.key, sample.eid, lo)

    def _pass_map(self, st):
        return None  # each chunk keeps its slice over the original ids; the owners relabel it

    # -- finish and write --------------------------------------------------------------------

    def finish(self, st):
        c, key = self.client, self.builder.key
        with Batch(c) as b:
            self.forest_futs = [b.submit(tasks.forest_ids, *st.forest.get(i, []), key=key(Step.FOREST_IDS, st.rnd, i),
                                         **self.pins[i]) for i in range(len(self.ranges))]
        return super().finish(st)

    def write_forest(self, st, ids_f):
        """The forest's rows from those each pass kept: written per chunk, or gathered in chunk order."""
        if self.spec.output is not None:
            return self._write_forest_parts(st, [st.rows.get(i, []) for i in range(len(self.ranges))])
        parts = self.client.gather(ids_f)
        edge_ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return ForestOut.gathered(edge_ids, self.forest_rows(st, ids_f, edge_ids))

    def _kept_rows(self, st, ids_f):
        """Each chunk's forest rows: those its passes kept, joined where the chunk is."""
        with Batch(self.client) as b:
            return [b.submit(passes.joined_rows, *st.rows.get(i, []), key=self.builder.key(Step.KEPT_ROWS, st.rnd, i),
                             **self.pins[i]) for i in range(len(self.ranges))]

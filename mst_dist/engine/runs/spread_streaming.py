"""A streaming run whose per-vertex state is cut into ranges: edges in passes, vertices spread.

The passes are a streaming run's (:class:`~mst_dist.engine.runs.streaming.SlicedPasses`:
a sample sets the thresholds, each pass streams every chunk from its source
and keeps one slice of the strict ``(weight, edge id)`` order); the vertex
map is cut into ranges of vertices, one per task, spread over the workers,
and each slice is solved by a partitioned run's rounds
(:class:`~mst_dist.engine.runs.partitioned.PartitionedRun`).

The vertex map is a forest of pointers: every vertex points at a vertex of
its component, a root at itself, and a root is its component's smallest
vertex (as Sanders & Schimek, "Engineering Massively Parallel MST
Algorithms", IPDPS 2023, keep components as representative vertices).
Each pass:

read and  each chunk keeps its slice's edges over the original vertex ids and
find      follows its ends' pointers to their roots, asking the owners of the
          ranges they are in (:func:`~mst_dist.engine.ranged.chase`, a step
          per ask); the edges inside a component go, with their rows.  The
          chunks are read in waves, each holding at most ``slice-edges``
          edges of the slice before this, so a slice is bounded by the edges
          that still join two components, not by all those of its span
number    the roots the slice touches are numbered ``0..T-1`` range by range
          (a prefix sum of per-range counts) and each chunk asks for its
          roots' numbers: the slice is a graph of ``T`` vertices
solve     partitioned rounds over those ``T`` ids until they fit one worker;
          then the centralised base case
repoint   each touched root points at the smallest root of its component
          after the slice (the first range of ids to hold the component
          holds it, as in :func:`~mst_dist.engine.runs.partitioned.canonical_labels`)

A pass's work follows its slice: no pass works on every vertex.  At the end
every vertex's pointer is followed to its root by pointer doubling and each
component is numbered by its root.  No task holds an array over all vertices
or components.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from mst_dist.engine import passes, ranged, tasks
from mst_dist.engine.batch import Batch
from mst_dist.engine.exchange import by_worker
from mst_dist.engine.plan import SPREAD_SLICE_BYTES_PER_EDGE
from mst_dist.engine.runs.base import ForestOut
from mst_dist.engine.runs.partitioned import PartitionedRun, chunk_pins, keep_pushed, next_bounds
from mst_dist.engine.runs.state import SolveState, SpreadStreamState
from mst_dist.engine.runs.solver import wait_on
from mst_dist.engine.runs.streaming import SlicedPasses, _pass_measure
from mst_dist.kernels.vertex_ranges import distinct, even_bounds


class SpreadStreamingRun(SlicedPasses, PartitionedRun):
    """Passes over the edge source; the vertex map in ranges owned by tasks; each slice solved by
    partitioned rounds."""

    kind = "spread-streaming"
    streams = True
    State = SpreadStreamState
    slice_edge_bytes = SPREAD_SLICE_BYTES_PER_EDGE
    #: an eighth: beside the base case a worker holds its share of the vertex map, the slice and the forest
    #: rows the passes kept (2^27 vertices, 2^28 edges on 8 workers of 1 GiB: with a quarter a worker went
    #: over its memory limit in the third to fifth pass; with an eighth the largest peaked at 921 MiB)
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
            roots = self._read_numbered(st, k, lo, hi, self._waves(sample, lo, hi))
            n_live -= self._solve_slice(st, k, roots)
            if self.ckpt is not None:
                self._save_pass(st, k, hi, n_live)
            done, lo = hi is None, hi
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
                st.labels = [b.submit(ranged.first_labels, int(lo), int(hi), key=self.builder.key("labels-init", 0, r),
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
                st.forest[i] = [b.submit(tasks.forest_ids, *st.forest.get(i, []), key=self.builder.key("pass-ids", k, i),
                                         **self.pins[i])]
        forest = [st.forest[i][0] for i in range(len(self.ranges))]
        self.ckpt.save_spread_pass(st, k, hi, n_live, labels=st.labels, forest=forest, pins=self.pins,
                                   chunk_bounds=self.chunk_bounds)

    def _read_numbered(self, st, k, lo, hi, waves):
        """Stream every chunk once, in ``waves`` groups of chunks one after the other: each group's slice
        found (its ends followed to their roots) as soon as it is read, keeping only the edges (and their
        rows) between two roots; then the roots touched numbered ``0..T-1`` and each chunk mapped over those
        numbers for the first round (``st.slice_mapped``, ``st.slice_rows``).  Futures of each range's
        touched roots (sorted)."""
        c, key, n = self.client, self.builder.key, len(st.inputs)
        vb = self.vertex_bounds
        joins, rows, pins, recs = [None] * n, [None] * n, [None] * n, []
        name, t0, per = f"pass {k}", time.perf_counter(), max(1, -(-n // max(1, waves)))
        for first in range(0, n, per):
            chunks = range(first, min(n, first + per))
            kept, kept_rows, stats = self._read(st, k, lo, hi, chunks)
            wpins = chunk_pins(c, [self.places[i] for i in chunks], kept)
            with Batch(c) as b:
                found = [b.submit(ranged.slice_chase, kc, vb, key=key("pass-block", k, i), **p)
                         for i, kc, p in zip(chunks, kept, wpins)]
            found = self._chase("pass-find", k, found, lambda _: st.labels, wpins, chunks)
            with Batch(c) as b:
                wjoins = [b.submit(ranged.joining, f, vb, key=key("pass-join", k, i), **p)
                          for i, f, p in zip(chunks, found, wpins)]
                wrows = [b.submit(ranged.joining_rows, r, j, key=key("pass-joining", k, i), **p)
                         for i, r, j, p in zip(chunks, kept_rows, wjoins, wpins)]
            recs += self._progress(name, stats, _pass_measure, total=n, before=recs)
            wait_on(c, wjoins + wrows)  # the wave's raw slice is let go before the next wave is read
            for j, i in enumerate(chunks):
                joins[i], rows[i], pins[i] = wjoins[j], wrows[j], wpins[j]
            kept = kept_rows = found = wjoins = wrows = None
        self._pass_done(name, recs, t0, -(-n // per) if n else 1)
        self.pins = pins
        # number the roots the slice touches: per range, those of each worker's chunks, then all
        R, rpins = vb.shape[0] - 1, self._range_pins(vb.shape[0] - 1)
        with Batch(c) as b:
            roots = [b.submit(ranged.touched, *[b.submit(ranged.touched_part, r, *[joins[i] for i in js],
                                                         key=key("pass-touched", k, f"{g}.{r}"), **pins[js[0]])
                                                for g, js in enumerate(by_worker(pins))],
                              key=key("pass-roots", k, r), **rpins[r])
                     for r in range(R)]
            counted = [b.submit(len, rt, key=key("pass-roots-count", k, r), **rpins[r]) for r, rt in enumerate(roots)]
        counts = np.array(c.gather(counted), np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        T = int(offsets[-1])
        with Batch(c) as b:
            ids = [b.submit(ranged.pass_ids, rt, int(vb[r]), int(vb[r + 1]), int(offsets[r]),
                            key=key("pass-numbers", k, r), **rpins[r]) for r, rt in enumerate(roots)]
            # the slice's first labels: each pass id its own, the ids of range r where range r is
            st.slice_labels = [b.submit(ranged.first_labels, int(offsets[r]), int(offsets[r + 1]),
                                        key=key("pass-labels", k, r), **rpins[r]) for r in range(R)]
        kwargs = [{"n_next": T, "next_bounds": next_bounds(self, T)}] * n
        st.slice_mapped = self._exchange("pass-relabel", k, joins, ids, split=ranged.joining_split,
                                         serve=ranged.serve_map, assemble=ranged.pass_block, pins=pins,
                                         assemble_kwargs=kwargs, requester_ids=range(n))
        st.slice_rows, st.slice_ids = rows, T
        return roots

    def _chase(self, phase, k, chases, owners, pins, requester_ids=None):
        """Follow the pointers of ``chases`` (:class:`~mst_dist.engine.ranged.Chase`) to their roots, asking
        ``owners(chases)`` (the ranges of vertices) a step at a time, until none is pending."""
        c, key, step = self.client, self.builder.key, 0
        split = functools.partial(ranged.split_chase, bounds=self.vertex_bounds)
        pins = pins if pins is not None else self._range_pins(len(chases))
        ids = list(requester_ids) if requester_ids is not None else list(range(len(chases)))
        while True:
            chases = self._exchange(phase, k, chases, owners(chases), split=split, serve=ranged.serve_map,
                                    assemble=ranged.chase, pins=pins, requester_ids=ids)
            with Batch(c) as b:
                left = [b.submit(ranged.chasing, ch, key=key(f"{phase}-left", k, f"{step}.{i}"), **p)
                        for i, ch, p in zip(ids, chases, pins)]
            step += 1
            if not sum(c.gather(left)):
                return chases

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

    def _solve_slice(self, st, k, roots):
        """Solve a pass's slice (``st.slice_mapped``, ``st.slice_rows``, ``st.slice_labels``: over the pass's
        ids of the roots it touches, ``roots`` per range of vertices), then point every root it merged at the
        smallest root of its component.  ``st`` gets the pass's forest, rows and vertex map; the slice is
        taken out of it (each round's is let go as the next round's is made).  How many components fewer."""
        c, key = self.client, self.builder.key
        T, mapped, rows, labels = st.slice_ids, st.slice_mapped, st.slice_rows, st.slice_labels
        st.slice_mapped, st.slice_rows, st.slice_labels = [], [], []
        sub = SolveState(n_comp=T, edges_left=self._count_edges(k, mapped, "pass-count"), rnd=st.rnd,
                         t_solve=st.t_solve)
        self.stats.passes[-1].edges_kept = sub.edges_left  # the slice's edges that join two components
        if not sub.edges_left:
            return 0
        nxt = next_bounds(self, T)
        bounds, n_comp, finished = (nxt if nxt is not None else even_bounds(T, 1)), T, 0
        while self.partitioned_more(n_comp, sub.edges_left):
            mapped, labels, bounds, n_comp, finished = self._round(sub, mapped, labels, bounds, n_comp, finished)
        sub.n_comp, self.labels_parts = n_comp, labels
        base = self._base_case(sub, mapped, finished) if n_comp > 0 else []
        st.rnd, labels = sub.rnd, self.labels_parts  # each pass id's component, finished as -(F + 1)
        forest = self._forest(st.rnd, mapped, base)
        rpins = self._range_pins(len(labels))
        with Batch(c) as b:
            for i, (f, r) in enumerate(zip(forest, rows)):
                st.forest.setdefault(i, []).append(f)
                st.rows.setdefault(i, []).append(b.submit(passes.trim_rows, r, f, key=key("pass-trim", k, i),
                                                          **self.pins[i]))
            most = [b.submit(ranged.max_finished, vl, key=key("pass-components", k, r), **rpins[r])
                    for r, vl in enumerate(labels)]
        n_after = max(c.gather(most), default=-1) + 1
        st.labels = self._repoint(st, k, labels, roots, n_after)
        return T - n_after

    def _repoint(self, st, k, labels, roots, n_comp):
        """The vertex map after a pass: each root the pass touched points at the smallest root of its
        component (``labels``: each pass id's component ``-(F + 1)``, ``F < n_comp``).  The first range of
        pass ids to hold a component (the smallest roots) tells its owner the component's smallest root;
        every range asks for its own."""
        fb = even_bounds(n_comp, self.ranges_for(n_comp))
        split = functools.partial(ranged.split_finished, bounds=fb)
        firsts = self._exchange("pass-first", k, labels, [None] * (fb.shape[0] - 1), split=split,
                                serve=ranged.serve_firsts, assemble=ranged.first_roots,
                                assemble_kwargs=[{"roots": rt} for rt in roots])
        rpins = self._range_pins(len(firsts))
        with Batch(self.client) as b:
            pushed = [b.submit(ranged.smallest_parts, f, fb, key=self.builder.key("pass-smallest", k, j), **rpins[j])
                      for j, f in enumerate(firsts)]
        kept = keep_pushed(self, "pass-smallest", k, pushed, fb)
        return self._exchange("pass-repoint", k, labels, kept, split=split, serve=ranged.serve_map,
                              assemble=ranged.repoint,
                              assemble_kwargs=[{"vertex_labels": vl, "roots": rt} for vl, rt in zip(st.labels, roots)])

    # -- the thresholds: the sample's ends followed to their roots -------------------------

    def _survivors(self, st, sample, lo, k):
        ids = distinct(np.concatenate([sample.u, sample.v]))
        root, pending, pins = ids.astype(np.int64), np.arange(ids.shape[0]), self._range_pins(len(st.labels))
        step = 0
        while pending.shape[0]:  # a step along every pointer not yet at a root
            asked = distinct(root[pending])
            cuts = np.searchsorted(asked, self.vertex_bounds)
            with Batch(self.client) as b:
                parts = [b.submit(ranged.labels_at, vl, asked[cuts[r]:cuts[r + 1]],
                                  key=self.builder.key("pass-estimate", k, f"{step}.{r}"), **pins[r])
                         for r, vl in enumerate(st.labels)]
            got = np.concatenate(self.client.gather(parts))
            nxt = got[np.searchsorted(asked, root[pending])]
            moved = nxt != root[pending]
            root[pending] = nxt
            pending, step = pending[moved], step + 1
        cu, cv = root[np.searchsorted(ids, sample.u)], root[np.searchsorted(ids, sample.v)]
        return passes.survivors_labelled(cu, cv, sample.key, sample.eid, lo)

    def _pass_map(self, st):
        return None  # each chunk keeps its slice over the original ids; the owners relabel it

    # -- finish and write --------------------------------------------------------------------

    def finish(self, st):
        c, key = self.client, self.builder.key
        with Batch(c) as b:
            self.forest_futs = [b.submit(tasks.forest_ids, *st.forest.get(i, []), key=key("forest-ids", st.rnd, i),
                                         **self.pins[i]) for i in range(len(self.ranges))]
        return super().finish(st)

    def final_labels(self, st):
        """Every vertex's pointer followed to its root by pointer doubling (each range asks the ranges'
        pointers as they are after the same number of steps), then each component numbered by its root
        (its smallest vertex), in vertex order: a prefix sum of per-range counts of roots."""
        c, key, rnd = self.client, self.builder.key, st.rnd
        rpins = self._range_pins(len(st.labels))
        with Batch(c) as b:
            chases = [b.submit(ranged.vertex_chase, vl, key=key("labels-chase", rnd, r), **rpins[r])
                      for r, vl in enumerate(st.labels)]
        st.labels = None
        chases = self._chase("labels-root", rnd, chases, lambda now: now, None)
        with Batch(c) as b:
            counted = [b.submit(ranged.roots_count, ch, key=key("labels-roots", rnd, r), **rpins[r])
                       for r, ch in enumerate(chases)]
        counts = np.array(c.gather(counted), np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        with Batch(c) as b:
            numbers = [b.submit(ranged.root_numbers, ch, int(offsets[r]), key=key("labels-numbers", rnd, r),
                                **rpins[r]) for r, ch in enumerate(chases)]
        labels = self._exchange("canonical", rnd, chases, numbers,
                                split=functools.partial(ranged.split_roots_of, bounds=self.vertex_bounds),
                                serve=ranged.serve_map, assemble=ranged.numbered_labels)
        return labels, int(counts.sum())

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
            return [b.submit(passes.joined_rows, *st.rows.get(i, []), key=self.builder.key("kept-rows", st.rnd, i),
                             **self.pins[i]) for i in range(len(self.ranges))]

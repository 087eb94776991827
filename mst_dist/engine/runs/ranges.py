"""Vertex ranges: the vertex store whose per-vertex state is cut into ranges, spread over the workers.

The component ids of each round are cut into ranges, each owned by a task:
candidates are merged per range, hooking, pointer jumping and renumbering
happen per range with batched requests to the owners of the ids asked
about (:mod:`mst_dist.engine.exchange`, the worker side in
:mod:`mst_dist.engine.ranged`), and each chunk asks only for the ids it
touches (:mod:`~mst_dist.engine.runs.ranged_rounds`).  No task holds an
array over all components, and nothing per-vertex reaches the client unless
the labels are asked for.  Once the components left fit comfortably on one
worker (``vertex_base``), the one-worker solver finishes (the centralised
base case).

The labels of the original vertices are kept as ranges of vertices too and
follow each round's map; at the end every component is numbered by its
smallest vertex, as in every other kind of run.  With a streamed source,
each pass's slice is read over the original vertex ids and relabelled by
asking the owners of those ranges; after the pass each vertex's label is
its component (finished as ``-(F + 1)``; ``F`` is its id in the next pass,
:func:`~mst_dist.engine.ranged.flip`).
"""
from __future__ import annotations

import functools
import itertools
import time

import numpy as np

from mst_dist.engine import ranged, tasks
from mst_dist.engine.batch import Batch
from mst_dist.engine.exchange import by_requester, exchange
from mst_dist.engine.placement import pin
from mst_dist.engine.plan import SPREAD_SLICE_BYTES_PER_EDGE
from mst_dist.engine.runs.base import ForestOut
from mst_dist.engine.runs.kept import KeptForest, keep_frames
from mst_dist.engine.runs.local_first import contract_locally
from mst_dist.engine.runs.outputs import written
from mst_dist.engine.runs.ranged_rounds import (canonical_labels, chunk_pins, count_edges, finish_rounds,
                                                first_round, resumed_round, round_ranges, settle_labels,
                                                solve_rounds, survivors_of)
from mst_dist.engine.runs.parts import VertexStore
from mst_dist.engine.runs.solver import wait_on
from mst_dist.engine.runs.state import RangedRound, RangesState, SolveState
from mst_dist.errors import GraphTooLargeError
from mst_dist.graph import VERTEX_BYTES, human_bytes, vertex_memory
from mst_dist.io import urls, writers
from mst_dist.kernels.vertex_ranges import even_bounds
from mst_dist.phases import Step


class VertexRanges(VertexStore):
    """Component ids cut into ranges owned by tasks; the centralised base case at the end."""

    name = "ranges"
    spec_fields = ("vertex_partition", "vertex_ranges", "vertex_base", "local_contraction")
    #: a streamed slice is read over the original ids and relabelled by the ranges' owners after
    relabels_slices = True
    #: worker bytes an edge of a streamed slice while its partitioned rounds solve it, and the share of the
    #: workers' memory a slice takes: a smaller slice takes more passes, a larger one a first round over
    #: more edges, and both make a run slower
    slice_edge_bytes = SPREAD_SLICE_BYTES_PER_EDGE
    slice_share = 3

    @classmethod
    def wanted(cls, spec, graph, cluster, source) -> bool:
        """Asked (``always``), or (``auto``, on a cluster of several workers) where the vertices would not fit
        comfortably on one worker (resident chunks) or not at all (streamed slices)."""
        from mst_dist.engine.runs.one_worker import OneWorker

        mode = spec.vertex_partition
        if mode != "auto":
            return mode == "always"
        if cluster.n_workers <= 1:
            return False
        if not source.streams:  # one worker holds every range of a partitioned run: nothing to spread
            return vertex_memory(graph.n_vertices) > cluster.min_memory // 4
        try:
            OneWorker.check(graph, cluster, source)
        except GraphTooLargeError:
            return True
        return False

    @classmethod
    def check(cls, graph, cluster, source):
        need = vertex_memory(graph.n_vertices)
        if cluster.max_memory and need > cluster.all_room // 2:  # no memory limit (0): nothing to check
            raise GraphTooLargeError(
                f"n_vertices = {graph.n_vertices} would need about {human_bytes(need)} of per-vertex arrays, "
                f"more than half the cluster's room ({human_bytes(cluster.all_room)}) even spread over "
                f"its workers: relabel the vertex ids to 0..n-1 (e.g. numpy.unique(ids, return_inverse=True))",
                source=graph.name)

    def plan(self, run):
        super().plan(run)
        spec, cl = run.spec, run.cluster
        # how many ranges a round's components are cut into (each range is a handful of tasks in every exchange)
        self.ranges_for = functools.partial(round_ranges, spec.vertex_ranges, cl.threads, cl.min_memory,
                                            len(run.ranges))
        self.n_ranges = self.ranges_for(run.g.n_vertices)  # the vertices' (and the first round's) ranges
        # what one worker holds comfortably: a share of the smallest one's memory; beside a streamed run's base
        # case a worker holds its share of the vertex map, the slice and the forest rows the passes kept
        base_share = 8 if run.streams else 4
        self.vertex_fits = cl.min_memory // base_share // VERTEX_BYTES
        self.vertex_base = self.vertex_fits if spec.vertex_base == "auto" else int(spec.vertex_base)
        if not cl.min_memory:  # memory not known: the setting alone decides
            self.vertex_fits = self.vertex_base
        self.chunk_bounds = np.array([r.offset for r in run.ranges] + [run.g.n_edges], np.int64)
        run.stats.vertex_partition = {"ranges": self.n_ranges, "base_components": self.vertex_base}
        if run.streams:
            run.stats.vertex_partition["local_contraction"] = False  # a slice's edges are not cut by vertex range
        self.workers = sorted(cl.kinds)
        self.pins = [{}] * len(run.ranges)  # each chunk's worker, once known
        self._sub = itertools.count()

    def new_state(self) -> RangesState:
        return RangesState()

    # -- what the rounds ask ---------------------------------------------------------------

    def key(self, step, rnd):
        """A key maker for one exchange (``key(stage, index)``), unique within the round."""
        sub = next(self._sub)
        return lambda stage, index=None: self.run.builder.key(step, rnd, index, sub, stage)

    def exchange(self, phase, rnd, requests, owners, *, split, serve, assemble, pins=None, requester_ids=None, **kw):
        """One exchange; requesters and owners not given pins are ranges, pinned as :meth:`range_pins`.
        ``requester_ids``: the chunk (or range) each requester is, where they are not ``0, 1, ...``."""
        pins = pins if pins is not None else self.range_pins(len(requests))
        kw.setdefault("owner_pins", self.range_pins(len(owners)))
        key = self.key(phase, rnd) if requester_ids is None else by_requester(self.key(phase, rnd), requester_ids)
        return exchange(self.run.client, key, requests, owners, serve=serve, assemble=assemble, split=split,
                        pins=pins, **kw)

    def range_pins(self, count):
        """Range ``r`` of ``count`` on worker ``r mod P`` (its tasks there while it lives): the exchanges
        bundle what goes between two workers into one task each way."""
        workers = self.workers
        return [pin(workers[r % len(workers)]) if workers else {} for r in range(count)]

    def chunk_pin(self, i):
        return self.pins[i]

    def more(self, n_comp, edges_left) -> bool:
        """Whether the next round is partitioned: more components than ``vertex_base``, and edges beyond the
        local finish or more components than one worker holds comfortably (the base case holds arrays over
        every component left, however few the edges)."""
        return n_comp > self.vertex_base and (edges_left > self.run.run_plan.local_finish or n_comp > self.vertex_fits)

    def next_bounds(self, n):
        """The ranges ``n`` components are cut into for a partitioned round; ``None`` where they are few
        enough (``mst.vertex-base``) for the centralised rounds."""
        return even_bounds(n, self.ranges_for(n)) if n > self.vertex_base else None

    # -- a resident graph -------------------------------------------------------------------

    def solve_resident(self, st):
        """The whole graph: partitioned rounds (after local contraction where it pays), a checkpoint after
        each where asked, then the base case."""
        run, e = self.run, st.edges
        n = run.g.n_vertices
        self.pins = chunk_pins(run.client, run.places, e.raws)
        sub = SolveState(n_comp=n, edges_left=0, rnd=st.rnd)
        saved = run.ckpt.saved if run.ckpt is not None else None
        spec = run.spec
        if saved is not None:
            rr = resumed_round(self, sub, saved, e)
            sub.edges_left = count_edges(self, sub.rnd, rr.mapped)
        elif spec.local_contraction == "always" or (spec.local_contraction == "auto" and n > self.vertex_base):
            rr = contract_locally(self, sub, e.raws, e.offsets)  # counts the edges as it goes (sub.edges_left)
            if sub.rnd and run.ckpt is not None:
                self._save(sub, rr)
        else:
            rr = first_round(self, e)
            sub.edges_left = count_edges(self, sub.rnd, rr.mapped)
        run.stats.setup_seconds = time.perf_counter() - run.t_start
        sub.t_solve = time.perf_counter()
        solve_rounds(self, sub, rr, after=None if run.ckpt is None else self._save)
        v = st.vertices
        v.forest_ids, v.labels, v.numbered = finish_rounds(self, sub, rr, canonical=True)
        st.rnd, st.t_solve, st.n_comp = sub.rnd, sub.t_solve, 0

    def _save(self, sub, rr):
        settle_labels(self, sub.rnd, rr)  # a checkpoint holds the labels after the round
        self.run.ckpt.save_parts(sub.rnd, rr.n_comp, sub.edges_left, labels=rr.labels, mapped=rr.mapped,
                                 pins=self.pins, chunk_bounds=self.chunk_bounds, finished=rr.finished)

    # -- a streamed source's passes ------------------------------------------------------------

    def start_passes(self, st):
        """The vertex map before the first pass, or as a checkpoint saved it: ``(lo, components, passes
        done, complete, rows)``."""
        run, v = self.run, st.vertices
        n, saved = run.g.n_vertices, run.ckpt.saved if run.ckpt is not None else None
        self.vertex_bounds = vb = even_bounds(n, saved.vertex_ranges if saved is not None else self.n_ranges)
        if saved is None:
            lpins = self.range_pins(vb.shape[0] - 1)
            with Batch(run.client) as b:
                v.labels = [b.submit(ranged.first_labels, int(lo), int(hi), key=run.builder.key(Step.LABELS_INIT, 0, r),
                                     **lpins[r]) for r, (lo, hi) in enumerate(zip(vb[:-1], vb[1:]))]
            return None, n, 0, False, None
        v.labels, forest, rows = run.ckpt.resume_spread(vb, self.chunk_bounds, n)
        v.forest = {i: [f] for i, f in enumerate(forest)}
        st.rnd = saved.round
        run.stats.resumed_from = st.rnd
        lo = None if saved.threshold is None else tuple(saved.threshold)
        return lo, saved.components, saved.passes, saved.complete, {i: [r] for i, r in enumerate(rows)}

    def pass_map(self, st):
        return None  # each chunk keeps its slice over the original ids; the owners relabel it

    def take_slice(self, st, k, chunks, kept, rows, n_live):
        """A wave's slice relabelled by the owners of the vertex map as soon as it is read, keeping only the
        edges (and their rows) that join two components: ``(each chunk mapped for the first round, its
        rows)``, where the chunk was read."""
        run = self.run
        c, key = run.client, run.builder.key
        kwargs = {"n_next": n_live, "next_bounds": self.next_bounds(n_live)}
        wpins = chunk_pins(c, [run.places[i] for i in chunks], kept)
        with Batch(c) as b:
            blocks = [b.submit(ranged.slice_block, kc, backend=run.spec.backend, key=key(Step.PASS_BLOCK, k, i), **p)
                      for i, kc, p in zip(chunks, kept, wpins)]
        out = self.exchange(Step.PASS_RELABEL, k, blocks, st.vertices.labels,
                            split=functools.partial(ranged.split_ends, bounds=self.vertex_bounds),
                            serve=ranged.serve_map, assemble=ranged.filter_block, pins=wpins,
                            assemble_kwargs=[kwargs] * len(blocks), requester_ids=chunks)
        with Batch(c) as b:
            joining = [b.submit(ranged.joining_rows, r, m, key=key(Step.PASS_JOINING, k, i), **p)
                       for i, r, m, p in zip(chunks, rows, out, wpins)]
        self.pins = list(self.pins)
        for i, p in zip(chunks, wpins):
            self.pins[i] = p
        return out, joining

    def settle(self, futures):
        """Wait for a wave's relabelled slice: its raw slice is let go before the next wave is read."""
        wait_on(self.run.client, futures)

    def solve_slice(self, st, k, n_live, piece):
        """Partitioned rounds over the pass's slice, then the base case: ``(components after it, each chunk's
        forest ids (``None``: none found), where each chunk is)``.  The labels are taken out of ``st``:
        each round's are let go as the next round's are made."""
        run, v = self.run, st.vertices
        nxt = self.next_bounds(n_live)
        sub = SolveState(n_comp=n_live, edges_left=count_edges(self, k, piece.mapped, Step.PASS_COUNT), rnd=st.rnd,
                         t_solve=st.t_solve)
        run.stats.passes[-1].edges_kept = sub.edges_left  # the slice's edges that join two components
        if not sub.edges_left:
            self._live = True
            return n_live, None, self.pins
        rr = RangedRound(mapped=piece.mapped, labels=v.labels,
                         bounds=nxt if nxt is not None else even_bounds(n_live, 1), n_comp=n_live)
        v.labels = piece.mapped = None  # the rounds' now: each round's are let go as the next round's are made
        solve_rounds(self, sub, rr)
        forest, v.labels, _ = finish_rounds(self, sub, rr)
        st.rnd = sub.rnd
        for i, f in enumerate(forest):
            v.forest.setdefault(i, []).append(f)
        with Batch(run.client) as b:
            most = [b.submit(ranged.max_finished, vl, key=run.builder.key(Step.PASS_COMPONENTS, k, r), **p)
                    for r, (vl, p) in enumerate(zip(v.labels, self.range_pins(len(v.labels))))]
        self._live = False
        return max(run.client.gather(most), default=-1) + 1, forest, self.pins

    def end_pass(self, st, k, hi, n_live):
        """The pass's components (finished as ``-(F + 1)``) become the next pass's live ids ``F``; its state
        to the checkpoint, each chunk's forest ids so far joined into one part first."""
        run, v = self.run, st.vertices
        if not self._live:
            v.labels = self._each_range(ranged.flip, v.labels, Step.PASS_CLOSE, k)
        if run.ckpt is None:
            return
        with Batch(run.client) as b:
            for i in range(len(run.ranges)):
                v.forest[i] = [b.submit(tasks.forest_ids, *v.forest.get(i, []),
                                        key=run.builder.key(Step.PASS_IDS, k, i), **self.pins[i])]
        run.ckpt.save_spread_pass(st.rnd, k, hi, n_live, labels=v.labels,
                                  forest=[v.forest[i][0] for i in range(len(run.ranges))], rows=st.edges.rows,
                                  pins=self.pins, chunk_bounds=self.chunk_bounds)

    def end_passes(self, st, k):
        """Every component left is finished: the live ids ``F`` as ``-(F + 1)``, as the canonical labels take
        them; each chunk's forest ids joined."""
        run, v = self.run, st.vertices
        v.labels = self._each_range(ranged.flip, v.labels, Step.PASS_END, k)
        with Batch(run.client) as b:
            v.forest_ids = [b.submit(tasks.forest_ids, *v.forest.get(i, []),
                                     key=run.builder.key(Step.FOREST_IDS, st.rnd, i), **self.pins[i])
                            for i in range(len(run.ranges))]

    def _each_range(self, fn, parts, step, k):
        """``fn`` on each range's part, where its owner is."""
        pins = self.range_pins(len(parts))
        with Batch(self.run.client) as b:
            return [b.submit(fn, p, key=self.run.builder.key(step, k, r), **pins[r]) for r, p in enumerate(parts)]

    def survivors(self, st, sample, lo, k):
        return survivors_of(self, st.vertices.labels, sample, lo, k)

    # -- finish and write --------------------------------------------------------------------

    def finish(self, st):
        """Each chunk's forest ids, and the labels numbered by each component's smallest vertex."""
        v = st.vertices
        if v.numbered is not None:  # the base case numbered them
            v.n_components = int(v.numbered.result())
            return v.forest_ids, v.labels
        labels, v.n_components = canonical_labels(self, st.rnd, v.labels)
        return v.forest_ids, labels

    def chunk_ids(self, ids_f, i):
        return ids_f[i]

    def gather_ids(self, ids_f):
        parts = self.run.client.gather(ids_f)
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def keep(self, st, ids_f, lab_f):
        """``gather=False``: each chunk's forest rows kept as a frame where the chunk is, each range's labels
        where its owner is; only counts come here."""
        run = self.run
        c, key = run.client, run.builder.key
        frames, n_forest, total = keep_frames(c, run.builder, st.rnd, run.source.kept_rows(st, ids_f),
                                              id_dtype=np.int64, weight_dtype=np.dtype(run.g.weight_dtype))
        labels, sizes = None, None
        if run.spec.labels_output is None:
            labels = [c.submit(ranged.labels_array, vl, key=key(Step.KEPT_LABELS, 0, j)) for j, vl in enumerate(lab_f)]
            sizes = c.gather([c.submit(len, p, key=key(Step.KEPT_LABELS_SIZE, 0, j)) for j, p in enumerate(labels)])
        kept = KeptForest(c, frames, labels, n_vertices=run.g.n_vertices, id_dtype=np.int64,
                          weight_dtype=np.dtype(run.g.weight_dtype), forest_edges=n_forest, label_sizes=sizes)
        return kept, ForestOut(n_edges=n_forest, total=total), st.vertices.n_components

    def write_labels(self, st, lab_f):
        """The labels gathered in vertex order, or each range written as a part by its owner."""
        run = self.run
        c = run.client
        if run.spec.labels_output is not None:
            with writers.dataset_dir(run.spec.labels_output, run.spec.storage_options) as tmp:
                written(c, [c.submit(ranged.write_labels_range, urls.join(tmp, writers.DATASET_PART.format(j)), vl,
                                     key=run.builder.key(Step.WRITE_LABELS, 0, j), pure=False)
                            for j, vl in enumerate(lab_f)])
            return None, st.vertices.n_components
        parts = [vl.labels for vl in c.gather(lab_f)]
        labels = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return labels, st.vertices.n_components

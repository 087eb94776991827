"""A partitioned run: the per-vertex state cut into ranges of component ids, spread over the workers.

The edge chunks stay on the workers as in a resident run; what differs is
where the per-vertex state lives.  The component ids of each round are cut
into ranges, each owned by a task: candidates are merged per range,
hooking, pointer jumping and renumbering happen per range with batched
requests to the owners of the ids asked about
(:mod:`mst_dist.engine.exchange`, the worker side in
:mod:`mst_dist.engine.ranged`), and each chunk asks only for the ids it
touches.  No task holds an array over all components, and nothing
per-vertex reaches the client unless the labels are asked for.  Once the
components left fit comfortably on one worker (``vertex_base``), the
chunks go to the same :class:`~mst_dist.engine.runs.solver.Solver` as a
resident run's, the centralised base case (Sanders & Schimek, "Engineering
Massively Parallel MST Algorithms", IPDPS 2023, do the same).

The labels of the original vertices are kept as ranges of vertices too and
follow each round's map; at the end every component is numbered by its
smallest vertex, as in every other kind of run.
"""
from __future__ import annotations

import functools
import itertools
import operator
import time

import numpy as np
from distributed import Future

from mst_dist.engine import ranged, tasks
from mst_dist.engine.batch import Batch
from mst_dist.engine.exchange import by_requester, by_worker, exchange, pull_all
from mst_dist.engine.placement import pin
from mst_dist.engine.records import ChunkStats, RoundRecord
from mst_dist.engine.runs.base import ForestOut
from mst_dist.engine.runs.kept import KeptForest, keep_frames
from mst_dist.engine.runs.local_first import contract_locally
from mst_dist.engine.runs.outputs import written
from mst_dist.engine.runs.round_end import end_round
from mst_dist.engine.runs.resident import ResidentRun, rows_from_arrays
from mst_dist.engine.runs.solver import Solver, wait_on
from mst_dist.engine.runs.state import SolveState
from mst_dist.graph import VERTEX_BYTES
from mst_dist.io import urls, writers
from mst_dist.kernels.vertex_ranges import even_bounds
from mst_dist.phases import Phase, Step


#: Pointer jumping halves every chain of parents: no chain of fewer than 2**64 components takes more jumps.
MAX_JUMPS = 64


class PartitionedRun(ResidentRun):
    """Chunks resident; component ids cut into ranges owned by tasks; the centralised base case at the end."""

    kind = "partitioned"
    streams = False
    #: the base case holds what fits this share of the smallest worker's memory
    base_share = 4

    def plan(self):
        super().plan()
        spec, cl = self.spec, self.cluster
        # how many ranges a round's components are cut into (each range is a handful of tasks in every exchange)
        self.ranges_for = functools.partial(round_ranges, spec.vertex_ranges, cl.threads, cl.min_memory,
                                            len(self.ranges))
        self.n_ranges = self.ranges_for(self.g.n_vertices)  # the vertices' (and the first round's) ranges
        # what one worker holds comfortably: a share of the smallest one's memory
        self.vertex_fits = cl.min_memory // self.base_share // VERTEX_BYTES
        self.vertex_base = self.vertex_fits if spec.vertex_base == "auto" else int(spec.vertex_base)
        if not cl.min_memory:  # memory not known: the setting alone decides
            self.vertex_fits = self.vertex_base
        self.chunk_bounds = np.array([r.offset for r in self.ranges] + [self.g.n_edges], np.int64)
        self.stats.vertex_partition = {"ranges": self.n_ranges, "base_components": self.vertex_base}
        self._sub = itertools.count()

    def _key(self, step, rnd):
        sub = next(self._sub)
        return lambda stage, index=None: self.builder.key(step, rnd, index, sub, stage)

    def _exchange(self, phase, rnd, requests, owners, *, split, serve, assemble, pins=None, requester_ids=None,
                  **kw):
        """One exchange; requesters and owners not given pins are ranges, pinned as :meth:`_range_pins`.
        ``requester_ids``: the chunk (or range) each requester is, where they are not ``0, 1, ...``."""
        pins = pins if pins is not None else self._range_pins(len(requests))
        kw.setdefault("owner_pins", self._range_pins(len(owners)))
        key = self._key(phase, rnd) if requester_ids is None else by_requester(self._key(phase, rnd), requester_ids)
        return exchange(self.client, key, requests, owners, serve=serve, assemble=assemble, split=split, pins=pins,
                        **kw)

    def _range_pins(self, count):
        """Range ``r`` of ``count`` on worker ``r mod P`` (its tasks there while it lives): the exchanges
        bundle what goes between two workers into one task each way."""
        workers = self.workers
        return [pin(workers[r % len(workers)]) if workers else {} for r in range(count)]

    # -- the rounds ------------------------------------------------------------------------

    def rounds(self, st: SolveState):
        g, c = self.g, self.client
        n = g.n_vertices
        self.workers = sorted(self.cluster.kinds)
        self.pins = chunk_pins(self.client, self.places, st.raws)
        saved = self.ckpt.saved if self.ckpt is not None else None
        if saved is not None:
            mapped, labels, bounds, n_comp, finished = self._resume(st, saved)
        elif self.spec.local_contraction == "always" or (self.spec.local_contraction == "auto"
                                                         and n > self.vertex_base):
            mapped, labels, bounds, n_comp, finished = contract_locally(self, st)
            if st.rnd and self.ckpt is not None:
                self._save(st, labels, mapped, n_comp, finished)
        else:
            bounds = even_bounds(n, self.n_ranges)
            lpins = self._range_pins(bounds.shape[0] - 1)
            with Batch(c) as b:
                mapped = [b.submit(ranged.prepare, raw, off, n, bounds, backend=self.spec.backend,
                                   key=self.builder.key(Step.PREPARE, 0, i), **self.pins[i])
                          for i, (raw, off) in enumerate(zip(st.raws, st.offsets))]
                labels = [b.submit(ranged.first_labels, int(lo), int(hi), key=self.builder.key(Step.LABELS_INIT, 0, r),
                                   **lpins[r]) for r, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
            n_comp, finished = n, 0
        st.edges_left = self._count_edges(st.rnd, mapped)
        self.stats.setup_seconds = time.perf_counter() - self.t_start
        st.t_solve = time.perf_counter()
        while self.partitioned_more(n_comp, st.edges_left):
            mapped, labels, bounds, n_comp, finished = self._round(st, mapped, labels, bounds, n_comp, finished)
            if self.ckpt is not None:
                self._save(st, labels, mapped, n_comp, finished)
        st.n_comp = n_comp
        self.mapped, self.labels_parts = mapped, labels
        base = []
        if n_comp > 0:
            base = self._base_case(st, mapped, finished)
        self.forest_futs = self._forest(st.rnd, mapped, base)

    def partitioned_more(self, n_comp, edges_left) -> bool:
        """Whether the next round is partitioned: more components than ``vertex_base``, and edges beyond the
        local finish or more components than one worker holds comfortably (the base case holds arrays over
        every component left, however few the edges)."""
        return n_comp > self.vertex_base and (edges_left > self.run_plan.local_finish or n_comp > self.vertex_fits)

    def _save(self, st, labels, mapped, n_comp, finished):
        st.n_comp = n_comp
        self.ckpt.save_parts(st, labels=labels, mapped=mapped, pins=self.pins, chunk_bounds=self.chunk_bounds,
                             finished=finished)

    def _count_edges(self, rnd, mapped, step=Step.COUNT):
        with Batch(self.client) as b:
            counts = [b.submit(ranged.edges_in, m, key=self.builder.key(step, rnd, i), **self.pins[i])
                      for i, m in enumerate(mapped)]
        return sum(self.client.gather(counts))

    def _resume(self, st, saved):
        """Go on from a saved partitioned round: each chunk loaded again and relabelled by asking the
        owners of the saved labels (every edge inside a component is dropped), with its saved forest ids.

        Why the forest is the same: see :mod:`mst_dist.engine.checkpoint`.
        """
        c, n, key = self.client, self.g.n_vertices, self.builder.key
        vertex_bounds = even_bounds(n, saved.vertex_ranges)
        labels, forest = self.ckpt.resume_parts(vertex_bounds, self.chunk_bounds)
        n_comp = saved.components
        nxt = next_bounds(self, n_comp)
        loaded = [c.submit(ranged.prepare_resumed, raw, off, n, forest[i], backend=self.spec.backend,
                           key=key(Step.RESUME_PREPARE, saved.round, i), **self.pins[i])
                  for i, (raw, off) in enumerate(zip(st.raws, st.offsets))]
        kwargs = [{"n_next": n_comp, "next_bounds": nxt}] * len(loaded)
        mapped = self._exchange(Step.RESUME, saved.round, loaded, labels,
                                split=functools.partial(ranged.split_ends, bounds=vertex_bounds),
                                serve=ranged.serve_map, assemble=ranged.filter_block, pins=self.pins,
                                assemble_kwargs=kwargs)
        st.rnd = saved.round
        self.stats.resumed_from = saved.round
        bounds = nxt if nxt is not None else even_bounds(n_comp, 1)
        return mapped, labels, bounds, n_comp, saved.finished

    def _round(self, st, mapped, labels, bounds, n_comp, finished):
        """One partitioned round: map (done with the last filter) -> merge -> contract -> filter-edges."""
        c, rnd, key = self.client, st.rnd, self.builder.key
        t0 = time.perf_counter()
        self.events.emit(round=rnd, phase=Phase.MAP, components=n_comp, edges=st.edges_left)
        R = bounds.shape[0] - 1
        rpins = self._range_pins(R)  # a range's tasks run where its owner is: only what is asked moves
        cands = merge_candidates(self, rnd, mapped, bounds)  # merge: per range, a tree of the chunks' candidates
        # contract: hook (mutual pairs found by asking the partner's owner), jump, number, relabel
        hooked = self._exchange(Step.HOOK, rnd, cands, cands, split=functools.partial(ranged.split_others, bounds=bounds),
                                serve=ranged.serve_edge_ids, assemble=ranged.hook)
        with Batch(c) as b:
            parents = [b.submit(ranged.parents_of, h, key=key(Step.PARENTS, rnd, r), **rpins[r])
                       for r, h in enumerate(hooked)]
            chosen = [b.submit(ranged.chosen_of, h, key=key(Step.CHOSEN, rnd, r), **rpins[r])
                      for r, h in enumerate(hooked)]
        cands = hooked = None  # let go once used: arrays over a range (Dask counts parents, chosen twice while held)
        jumps, pending = 0, 1  # after hooking, some component points at a non-root unless all are roots
        while pending:
            parents = self._exchange(Step.JUMP, rnd, parents, parents,
                                     split=functools.partial(ranged.split_parents, bounds=bounds),
                                     serve=ranged.serve_parents, assemble=ranged.jump)
            jumps += 1
            with Batch(c) as b:
                left = [b.submit(ranged.pending, p, key=key(Step.JUMPED, rnd, f"{jumps}.{r}"), **rpins[r])
                        for r, p in enumerate(parents)]
            pending = sum(c.gather(left))
            if pending and jumps > MAX_JUMPS:  # each jump halves every chain: a hooking with a cycle never ends
                raise RuntimeError(f"round {rnd}: {pending} component(s) still point at a non-root after {jumps} "
                                   f"pointer jumps; the hooking made a cycle (a bug: please report it)")
        rmaps, n_next, finished = self._renumber(rnd, parents, bounds, finished)
        parents = None
        t_contract = time.perf_counter()
        # filter-edges: each chunk asks for its ids' new ids, takes the forest edges of its own edge ids,
        # and maps the next round
        with Batch(c) as b:
            routes = [b.submit(ranged.route_chosen, ch, self.chunk_bounds, key=key(Step.ROUTE, rnd, r), **rpins[r])
                      for r, ch in enumerate(chosen)]
            found = [b.submit(len, ch, key=key(Step.FOREST_COUNT, rnd, r), **rpins[r]) for r, ch in enumerate(chosen)]
        mapped, labels, nxt = self._filter(rnd, mapped, labels, rmaps, bounds, n_next, routes)
        end_round(self, st, "partitioned", (t0, t_contract), (n_comp, n_next), mapped, found, ranges=R)
        return mapped, labels, nxt, n_next, finished

    def _renumber(self, rnd, parents, bounds, finished):
        """filter-nodes: roots and finished components numbered (a prefix sum of per-range counts), every
        component's new id asked of its root's owner. ``(round maps per range, n_next, finished)``."""
        c, key = self.client, self.builder.key
        rpins = self._range_pins(len(parents))
        with Batch(c) as b:
            counted = [b.submit(ranged.counts, p, key=key(Step.COUNTS, rnd, r), **rpins[r]) for r, p in enumerate(parents)]
        counts = c.gather(counted)
        roots = np.array([a for a, _ in counts], np.int64)
        fins = np.array([b for _, b in counts], np.int64)
        root_off = np.concatenate([[0], np.cumsum(roots)[:-1]])
        fin_off = finished + np.concatenate([[0], np.cumsum(fins)[:-1]])
        with Batch(c) as b:
            numbered = [b.submit(ranged.number, p, int(root_off[r]), int(fin_off[r]), key=key(Step.NUMBER, rnd, r),
                                 **rpins[r])
                        for r, p in enumerate(parents)]
        rmaps = self._exchange(Step.RELABEL, rnd, parents, numbered,
                               split=functools.partial(ranged.split_roots, bounds=bounds),
                               serve=ranged.serve_new_ids, assemble=ranged.relabel,
                               assemble_kwargs=[{"numbered": m} for m in numbered])
        return rmaps, int(roots.sum()), finished + int(fins.sum())

    def _filter(self, rnd, mapped, labels, rmaps, bounds, n_next, routes=None):
        """filter-edges: each chunk relabelled by the round maps (with its forest edges, which it takes from
        each range's ``routes`` in the same exchange) and mapped for the next round; the labels follow.
        ``(chunks, labels, next bounds)``."""
        nxt = next_bounds(self, n_next)
        kwargs = [{"n_next": n_next, "next_bounds": nxt}] * len(mapped)
        mapped = self._exchange(Step.FILTER, rnd, mapped, rmaps, split=functools.partial(ranged.split_ends, bounds=bounds),
                                serve=ranged.serve_map, assemble=ranged.filter_block, pins=self.pins,
                                assemble_kwargs=kwargs, items=routes,
                                item_pins=None if routes is None else self._range_pins(len(routes)))
        labels = self._exchange(Step.LABELS, rnd, labels, rmaps, split=functools.partial(ranged.split_live, bounds=bounds),
                                serve=ranged.serve_map, assemble=ranged.follow)
        return mapped, labels, (nxt if nxt is not None else even_bounds(n_next, 1))

    def _base_case(self, st, mapped, finished):
        """The components left fit one worker: the resident run's solver finishes, its maps end the labels."""
        c, key = self.client, self.builder.key
        chunks = [c.submit(ranged.chunk_of, m, key=key(Step.BASE_CHUNK, st.rnd, i), **self.pins[i])
                  for i, m in enumerate(mapped)]
        prev = RoundRecord(chunks=ChunkStats(), contract=0.0, n_comp=st.n_comp, n_next=st.n_comp, n_finished=0,
                           finished_total=finished, forest_edges=0, map_bytes=0)
        sub = SolveState(n_comp=st.n_comp, edges_left=st.edges_left, chunks=chunks, rnd=st.rnd, prev=prev,
                         t_solve=st.t_solve)
        Solver(self).solve(sub, light=False)
        n_base = st.n_comp
        st.rnd, st.n_comp = sub.rnd, 0
        base = c.submit(ranged.base_map, n_base, *sub.maps, key=key(Step.BASE_MAP, st.rnd))
        self.labels_parts = self._exchange(
            Step.LABELS, st.rnd, self.labels_parts, [base],
            split=functools.partial(ranged.split_live, bounds=np.array([0, n_base], np.int64)),
            serve=ranged.serve_map, assemble=ranged.follow)
        ids = c.submit(tasks.forest_ids, *sub.chosen, key=key(Step.BASE_FOREST, st.rnd))
        routes = c.submit(ranged.route_chosen, ids, self.chunk_bounds, key=key(Step.BASE_ROUTE, st.rnd))
        return [c.submit(operator.getitem, routes, j, key=key(Step.BASE_ROUTED, st.rnd, j)) for j in range(len(mapped))]

    def _forest(self, rnd, mapped, base):
        """Each chunk's forest edge ids (with the base case's, ``base``), ascending."""
        with Batch(self.client) as b:
            return [b.submit(ranged.forest_of, m, *([base[j]] if base else []), key=self.builder.key(Step.FOREST, rnd, j),
                             **self.pins[j])
                    for j, m in enumerate(mapped)]

    # -- finish and write --------------------------------------------------------------------

    def finish(self, st):
        stats = self.stats
        stats.solve_seconds = time.perf_counter() - st.t_solve
        self._t_finish = time.perf_counter()
        self.events.emit(round=st.rnd, phase=Phase.FINISH, components=0, edges=0)
        labels, self.n_components = canonical_labels(self, st.rnd, self.labels_parts)
        return self.forest_futs, labels

    def write_forest(self, st, ids_f):
        """The forest's ids per chunk: gathered in chunk order (ascending), or the rows written per chunk."""
        c = self.client
        if self.spec.output is not None:
            return self._write_forest_parts(st, [[c.submit(tasks.chosen_rows, st.raws[i], st.offsets[i], f,
                                                           key=self.builder.key(Step.ROWS, st.rnd, i))]
                                                 for i, f in enumerate(ids_f)])
        parts = c.gather(ids_f)
        edge_ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        g = self.g
        if g.in_memory and len(g.sources) == 1:
            return ForestOut.gathered(edge_ids, rows_from_arrays(g.sources[0], edge_ids))
        rows = c.gather([c.submit(tasks.rows, raw, off, f, key=self.builder.key(Step.ROWS, st.rnd, i))
                         for i, (raw, off, f) in enumerate(zip(st.raws, st.offsets, ids_f))])
        if not rows:
            z = np.zeros(0, np.int64)
            rows = [(z, z.copy(), np.zeros(0, np.dtype(g.weight_dtype)))]
        return ForestOut.gathered(edge_ids, tuple(np.concatenate([r[k] for r in rows]) for k in range(3)))

    def keep(self, st, ids_f, lab_f):
        """``gather=False``: each chunk's forest rows kept as a frame where the chunk is, each range's labels
        where its owner is; only counts come here."""
        c, key = self.client, self.builder.key
        rows = self._kept_rows(st, ids_f)
        frames, n_forest, total = keep_frames(c, self.builder, st.rnd, rows, id_dtype=np.int64,
                                              weight_dtype=np.dtype(self.g.weight_dtype))
        labels, sizes = None, None
        if self.spec.labels_output is None:
            labels = [c.submit(ranged.labels_array, vl, key=key(Step.KEPT_LABELS, 0, j)) for j, vl in enumerate(lab_f)]
            sizes = c.gather([c.submit(len, p, key=key(Step.KEPT_LABELS_SIZE, 0, j)) for j, p in enumerate(labels)])
        kept = KeptForest(c, frames, labels, n_vertices=self.g.n_vertices, id_dtype=np.int64,
                          weight_dtype=np.dtype(self.g.weight_dtype), forest_edges=n_forest, label_sizes=sizes)
        return kept, ForestOut(n_edges=n_forest, total=total), self.n_components

    def _kept_rows(self, st, ids_f):
        """Futures of each chunk's forest rows ``(edge_id, src, dst, weight)``, where the chunk is."""
        c = self.client
        return [c.submit(tasks.chosen_rows, st.raws[i], st.offsets[i], f, key=self.builder.key(Step.KEPT_ROWS, st.rnd, i))
                for i, f in enumerate(ids_f)]

    def write_labels(self, st, lab_f):
        """The labels gathered in vertex order, or each range written as a part by its owner."""
        c = self.client
        if self.spec.labels_output is not None:
            with writers.dataset_dir(self.spec.labels_output, self.spec.storage_options) as tmp:
                written(c, [c.submit(ranged.write_labels_range, urls.join(tmp, writers.DATASET_PART.format(j)), vl,
                                     key=self.builder.key(Step.WRITE_LABELS, 0, j), pure=False)
                            for j, vl in enumerate(lab_f)])
            return None, self.n_components
        parts = c.gather([c.submit(ranged.labels_array, vl, key=self.builder.key(Step.LABELS_ARRAY, 0, j))
                          for j, vl in enumerate(lab_f)])
        labels = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return labels, self.n_components


#: By default one range's per-vertex state (``VERTEX_BYTES`` a component) is at most this share of the
#: smallest worker's memory: 64 ranges for 2^27 vertices on workers of 1 GiB, 16 for 2^25
RANGE_SHARE = 16


def default_ranges(n, threads, min_memory, chunks):
    """How many ranges the component ids are cut into when ``mst.vertex-ranges`` is not set: one per worker
    thread at least (each contracts one at a time), and enough that a range's state is at most
    ``1 / RANGE_SHARE`` of the smallest worker; one per chunk where the workers' memory is not known.
    Each range is a handful of tasks in every exchange, so no more than that: ranges beyond what memory
    asks for add tasks and make a run slower.

    >>> default_ranges(2**27, 8, 2**30, 128), default_ranges(2**25, 8, 2**30, 128), default_ranges(1000, 8, 2**30, 4)
    (64, 16, 8)
    """
    if not min_memory:
        return max(2, chunks, threads)
    return max(2, threads, -(-VERTEX_BYTES * RANGE_SHARE * int(n) // int(min_memory)))


def round_ranges(fixed, threads, min_memory, chunks, count):
    """How many ranges ``count`` component ids are cut into: ``fixed`` (``mst.vertex-ranges``) where set,
    else :func:`default_ranges` of ``count``, so that the rounds' ranges follow their components down."""
    return fixed or default_ranges(count, threads, min_memory, chunks)


def next_bounds(run, n):
    """The ranges ``n`` components are cut into for a partitioned round (:func:`round_ranges`);
    ``None`` where they are few enough (``mst.vertex-base``) for the centralised rounds."""
    return even_bounds(n, run.ranges_for(n)) if n > run.vertex_base else None


def chunk_pins(client, places, raws):
    """Each chunk's worker: its place (the placement's), else the one holding its edges now (``raws``)."""
    if all(p is not None for p in places):
        return [pin(p) for p in places]
    futures = [f for f in raws if isinstance(f, Future)]
    wait_on(client, futures)
    held = client.who_has(futures) if futures else {}
    return [pin(p if p is not None else min(held.get(getattr(f, "key", None), ()), default=None))
            for p, f in zip(places, raws)]


def merge_candidates(run, rnd, mapped, bounds):
    """merge: the candidates of each worker's chunks combined there, range by range, then each range's
    owner takes its share from every worker (:func:`~mst_dist.engine.exchange.pull_all`) and combines
    them; futures of each range's merged candidates, on its owner."""
    key, R, groups = run._key(Step.CAND, rnd), bounds.shape[0] - 1, by_worker(run.pins)
    with Batch(run.client) as b:
        tables = [b.submit(ranged.merge_ranges_of, bounds, *[mapped[i] for i in js], key=key("split", g),
                           **run.pins[js[0]])
                  for g, js in enumerate(groups)]
        return pull_all(b, key, tables, [run.pins[js[0]] for js in groups], ranged.merged_range,
                        [(int(bounds[r]), int(bounds[r + 1])) for r in range(R)], run._range_pins(R),
                        how="item", stages=("ready", "asked", "serve"))


def canonical_labels(run, rnd, parts):
    """Every component numbered by its smallest vertex, range by range: ``(labels per range of
    vertices, n_components)``.

    ``parts``: each range of vertices' labels (``-(F + 1)``: finished as
    ``F``).  Each range tells the owners of its finished ids which it holds;
    the first range (smallest vertices) to hold an id numbers it, in order of
    first appearance, from a prefix sum of the ranges' counts; the owners
    keep the numbers and every range asks them for its own.
    """
    c, key = run.client, run.builder.key
    n_fin = max(c.gather([c.submit(ranged.max_finished, vl, key=key(Step.LABELS_MAX, rnd, r))
                          for r, vl in enumerate(parts)]), default=-1) + 1
    fb = even_bounds(n_fin, run.ranges_for(n_fin))
    firsts = run._exchange(Step.FIRST, rnd, parts, [None] * (fb.shape[0] - 1),
                           split=functools.partial(ranged.split_finished, bounds=fb),
                           serve=ranged.serve_firsts, assemble=ranged.firsts)
    counts = c.gather([c.submit(ranged.count_firsts, f, key=key(Step.FIRST_COUNT, rnd, j)) for j, f in enumerate(firsts)])
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    fpins = run._range_pins(len(firsts))  # where the exchange left each range's firsts
    R = fb.shape[0] - 1
    with Batch(c) as b:
        pushed = [b.submit(ranged.numbered_parts, f, int(offsets[j]), fb, key=key(Step.NUMBERED, rnd, j), **fpins[j])
                  for j, f in enumerate(firsts)]
        # each owner takes its part of every range's numbers, worker to worker
        kept = pull_all(b, run._key(Step.NUMBERED_PART, rnd), pushed, fpins, ranged.keep_labels,
                        [(int(fb[r]), int(fb[r + 1])) for r in range(R)], run._range_pins(R),
                        how="part", stages=("ready", "asked", "serve"))
    labels = run._exchange(Step.CANONICAL, rnd, firsts, kept, split=functools.partial(ranged.split_fids, bounds=fb),
                           serve=ranged.serve_map, assemble=ranged.final_labels)
    return labels, int(sum(counts))

"""Partitioned rounds: the round loop of the vertex ranges, and its steps.

Each round over chunks whose component ids are cut into ranges, each range
owned by a task (:class:`~mst_dist.engine.runs.ranges.VertexRanges`):

merge          the candidates of each worker's chunks combined there, range
               by range, each range's owner taking its share from every worker
contract       hooking (mutual pairs found by asking the partner's owner),
               pointer jumping (each jump an exchange), the roots numbered
               (filter-nodes: a prefix sum of per-range counts)
filter-edges   each chunk asks for its ids' new ids, drops the edges inside a
               component and takes the forest edges of its own edge ids; the
               labels of the original vertices follow

The same loop solves a resident graph and each streamed slice; once the
components left fit one worker, :func:`base_case` hands the chunks to the
one-worker :class:`~mst_dist.engine.runs.solver.Solver` (Sanders & Schimek,
"Engineering Massively Parallel MST Algorithms", IPDPS 2023, do the same).
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import time

import numpy as np
from distributed import Future

from mst_dist.engine import passes, ranged, tasks
from mst_dist.engine.batch import Batch
from mst_dist.engine.exchange import by_worker, pull_all
from mst_dist.engine.placement import pin
from mst_dist.engine.records import ChunkStats, RoundRecord
from mst_dist.engine.runs.round_end import end_round
from mst_dist.engine.runs.solver import Solver, wait_on
from mst_dist.engine.runs.state import RangedRound, SolveState
from mst_dist.graph import VERTEX_BYTES
from mst_dist.kernels.vertex_ranges import distinct, even_bounds
from mst_dist.phases import Phase, Step

#: Pointer jumping halves every chain of parents: no chain of fewer than 2**64 components takes more jumps.
MAX_JUMPS = 64
#: By default a range holds at least this many components where memory does not ask for more ranges: its
#: dozen tasks a round cost the scheduler some 30 ms, about what contracting 2**16 components takes
RANGE_COMPONENTS = 2**16
#: By default one range's per-vertex state (``VERTEX_BYTES`` a component) is at most this share of the
#: smallest worker's memory: 64 ranges for 2^27 vertices on workers of 1 GiB, 16 for 2^25
RANGE_SHARE = 16


def first_round(store, e) -> RangedRound:
    """The chunks loaded for the first round (mapped by :func:`solve_rounds` if a partitioned round comes),
    each vertex its own component."""
    run, n = store.run, store.run.g.n_vertices
    bounds = even_bounds(n, store.n_ranges)
    lpins = store.range_pins(bounds.shape[0] - 1)
    with Batch(run.client) as b:
        loaded = [b.submit(ranged.prepare_local, raw, off, n, backend=run.spec.backend,
                           key=run.builder.key(Step.LOAD_BLOCK, 0, i), **store.pins[i])
                  for i, (raw, off) in enumerate(zip(e.raws, e.offsets))]
        labels = [b.submit(ranged.first_labels, int(lo), int(hi), key=run.builder.key(Step.LABELS_INIT, 0, r),
                           **lpins[r]) for r, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
    return RangedRound(mapped=loaded, labels=labels, bounds=bounds, n_comp=n, loaded=True)


def map_chunks(store, rnd, rr: RangedRound):
    """The chunks of ``rr`` as loaded, mapped for its first round (their candidates cut by its ranges)."""
    with Batch(store.run.client) as b:
        rr.mapped = [b.submit(ranged.map_loaded, m, rr.bounds, key=store.run.builder.key(Step.PREPARE, rnd, i),
                              **store.pins[i])
                     for i, m in enumerate(rr.mapped)]


def resumed_round(store, sub, saved, e) -> RangedRound:
    """Go on from a saved partitioned round: each chunk loaded again and relabelled by asking the
    owners of the saved labels (every edge inside a component is dropped), with its saved forest ids.

    Why the forest is the same: see :mod:`mst_dist.engine.checkpoint`.
    """
    run = store.run
    c, n, key = run.client, run.g.n_vertices, run.builder.key
    vertex_bounds = even_bounds(n, saved.vertex_ranges)
    labels, forest = run.ckpt.resume_parts(vertex_bounds, store.chunk_bounds)
    n_comp = saved.components
    nxt = store.next_bounds(n_comp)
    loaded = [c.submit(ranged.prepare_resumed, raw, off, n, forest[i], backend=run.spec.backend,
                       key=key(Step.RESUME_PREPARE, saved.round, i), **store.pins[i])
              for i, (raw, off) in enumerate(zip(e.raws, e.offsets))]
    kwargs = [{"n_next": n_comp, "next_bounds": nxt}] * len(loaded)
    mapped = store.exchange(Step.RESUME, saved.round, loaded, labels,
                            split=functools.partial(ranged.split_ends, bounds=vertex_bounds),
                            serve=ranged.serve_map, assemble=ranged.filter_block, pins=store.pins,
                            assemble_kwargs=kwargs)
    sub.rnd = saved.round
    run.stats.resumed_from = saved.round
    return RangedRound(mapped=mapped, labels=labels, bounds=nxt if nxt is not None else even_bounds(n_comp, 1),
                       n_comp=n_comp, finished=saved.finished)


def solve_rounds(store, sub: SolveState, rr: RangedRound, after=None):
    """Partitioned rounds while the store says so (:meth:`~mst_dist.engine.runs.ranges.VertexRanges.more`);
    ``after(sub, rr)`` after each (a checkpoint).  ``rr`` moves on in place: what a round replaces is let
    go as soon as the round is made, by the caller too."""
    while store.more(rr.n_comp, sub.edges_left):
        if rr.loaded:
            map_chunks(store, sub.rnd, rr)  # the round replaces rr: loaded is False after it
        nxt = ranged_round(store, sub, rr)
        for f in dataclasses.fields(rr):
            setattr(rr, f.name, getattr(nxt, f.name))
        nxt = None
        if after is not None:
            after(sub, rr)


def ranged_round(store, sub: SolveState, rr: RangedRound) -> RangedRound:
    """One partitioned round: map (done with the last filter) -> merge -> contract -> filter-edges."""
    run = store.run
    c, rnd, key = run.client, sub.rnd, run.builder.key
    t0 = time.perf_counter()
    run.events.emit(round=rnd, phase=Phase.MAP, components=rr.n_comp, edges=sub.edges_left)
    bounds = rr.bounds
    R = bounds.shape[0] - 1
    rpins = store.range_pins(R)  # a range's tasks run where its owner is: only what is asked moves
    cands = merge_candidates(store, rnd, rr.mapped, bounds)  # merge: per range, a tree of the chunks' candidates
    # contract: hook (mutual pairs found by asking the partner's owner), jump, number, relabel
    # each range's candidates carry what its hooking asks (no split stage); its parents carry the first
    # jump's asks and its forest edges cut by chunk, which filter-edges takes
    parents = store.exchange(Step.HOOK, rnd, cands, cands, split=None, serve=ranged.serve_edge_ids,
                             assemble=functools.partial(ranged.hook, bounds=bounds, chunk_bounds=store.chunk_bounds))
    cands = None  # let go once used: arrays over a range
    parents, status = _jump(store, rnd, parents, bounds, rpins)
    rmaps, n_next, finished = renumber(store, rnd, parents, bounds, rr.finished,
                                       counted=[(roots, fins) for _, roots, fins, _ in status])
    found = [forest for *_, forest in status]
    t_contract = time.perf_counter()
    # filter-edges: each chunk asks for its ids' new ids, takes the forest edges of its own edge ids,
    # and maps the next round
    nxt = filter_edges(store, rnd, rr.mapped, rr.labels, rmaps, bounds, n_next, parents, pending=rr.pending)
    parents = None
    end_round(store, sub, "partitioned", (t0, t_contract), (rr.n_comp, n_next), nxt.mapped, found, ranges=R)
    nxt.finished = finished
    return nxt


def _jump(store, rnd, parents, bounds, rpins):
    """Pointer jumping until every component points at its root (each jump an exchange of ``2R`` tasks:
    each range's parents are the next jump's split); the parents, and each range's
    :func:`~mst_dist.engine.ranged.status` after the last jump, which one task pulls from every range."""
    c = store.run.client
    jumps, pending = 0, 1  # after hooking, some component points at a non-root unless all are roots
    while pending:
        parents = store.exchange(Step.JUMP, rnd, parents, parents, split=None, serve=ranged.serve_parents,
                                 assemble=functools.partial(ranged.jump, bounds=bounds))
        jumps += 1
        with Batch(c) as b:
            left = pull_all(b, store.key(Step.JUMPED, rnd), parents, rpins, ranged.summaries, [()], rpins[:1],
                            how="summary", stage="assemble")
        status = left[0].result()
        pending = sum(s[0] for s in status)
        if pending and jumps > MAX_JUMPS:  # each jump halves every chain: a hooking with a cycle never ends
            raise RuntimeError(f"round {rnd}: {pending} component(s) still point at a non-root after {jumps} "
                               f"pointer jumps; the hooking made a cycle (a bug: please report it)")
    return parents, status


def renumber(store, rnd, parents, bounds, finished, counted=None):
    """filter-nodes: roots and finished components numbered (a prefix sum of per-range counts,
    ``counted`` where known: :func:`~mst_dist.engine.ranged.counts` of each range), every
    component's new id asked of its root's owner. ``(round maps per range, n_next, finished)``."""
    c, key = store.run.client, store.run.builder.key
    rpins = store.range_pins(len(parents))
    if counted is None:
        with Batch(c) as b:
            counted = [b.submit(ranged.counts, p, key=key(Step.COUNTS, rnd, r), **rpins[r])
                       for r, p in enumerate(parents)]
    counts = c.gather(counted)
    roots = np.array([a for a, _ in counts], np.int64)
    fins = np.array([b for _, b in counts], np.int64)
    root_off = np.concatenate([[0], np.cumsum(roots)[:-1]])
    fin_off = finished + np.concatenate([[0], np.cumsum(fins)[:-1]])
    # each range numbers its roots and cuts what it asks of the other roots' owners in one task, the
    # relabel exchange's split and owner both
    with Batch(c) as b:
        numbered = [b.submit(ranged.number_and_ask, p, int(root_off[r]), int(fin_off[r]), bounds,
                             key=key(Step.NUMBER, rnd, r), **rpins[r])
                    for r, p in enumerate(parents)]
    rmaps = store.exchange(Step.RELABEL, rnd, numbered, numbered, split=None, serve=ranged.serve_numbered,
                           assemble=ranged.relabel_numbered, assemble_kwargs=[{"parents": p} for p in parents])
    return rmaps, int(roots.sum()), finished + int(fins.sum())


def filter_edges(store, rnd, mapped, labels, rmaps, bounds, n_next, hooked=None, pending=()) -> RangedRound:
    """filter-edges: each chunk relabelled by the round maps (with its forest edges, which it takes from
    each range's parents ``hooked`` in the same exchange) and mapped for the next round.  The labels do not
    follow each round: the round maps wait in ``pending`` until :func:`settle_labels` (the next round
    does not need the labels).  The next round's :class:`RangedRound` (``finished`` left for the caller)."""
    nxt = store.next_bounds(n_next)
    kwargs = [{"n_next": n_next, "next_bounds": nxt}] * len(mapped)
    mapped = store.exchange(Step.FILTER, rnd, mapped, rmaps, split=functools.partial(ranged.split_ends, bounds=bounds),
                            serve=ranged.serve_map, assemble=ranged.filter_block, pins=store.pins,
                            assemble_kwargs=kwargs, items=hooked, item_how="routed",
                            item_pins=None if hooked is None else store.range_pins(len(hooked)))
    rr = RangedRound(mapped=mapped, labels=labels, bounds=nxt if nxt is not None else even_bounds(n_next, 1),
                     n_comp=n_next, pending=[*pending, (rmaps, bounds)])
    if sum(int(b[-1]) for _, b in rr.pending) > store.run.g.n_vertices:
        settle_labels(store, rnd, rr)  # the maps waiting would outgrow the labels: follow them now
    return rr


def settle_labels(store, rnd, rr: RangedRound):
    """The labels follow the round maps waiting in ``rr.pending`` (``rr`` changed in place).

    The maps are composed first, from the last back (each composition an
    exchange over the earlier round's components, fewer each round), then
    the labels follow the composition once: about ``n + sum(n_r)`` ids
    asked instead of ``n`` for every round.
    """
    if not rr.pending:
        return
    maps = rr.pending
    composed = maps[-1][0]
    for (rmaps, _), (_, later) in zip(reversed(maps[:-1]), reversed(maps[1:])):
        composed = store.exchange(Step.LABELS_COMPOSE, rnd, rmaps, composed,
                                  split=functools.partial(ranged.split_live, bounds=later),
                                  serve=ranged.serve_map, assemble=ranged.follow)
    rr.labels = store.exchange(Step.LABELS, rnd, rr.labels, composed,
                               split=functools.partial(ranged.split_live, bounds=maps[0][1]),
                               serve=ranged.serve_map, assemble=ranged.follow)
    rr.pending = []


def count_edges(store, rnd, mapped, step=Step.COUNT):
    """The edges of the chunks ``mapped``, counted where each is."""
    c = store.run.client
    with Batch(c) as b:
        counts = [b.submit(ranged.edges_in, m, key=store.run.builder.key(step, rnd, i), **store.pins[i])
                  for i, m in enumerate(mapped)]
    return sum(c.gather(counts))


def finish_rounds(store, sub: SolveState, rr: RangedRound, canonical=False):
    """After the partitioned rounds: the base case where components are left, each chunk's forest ids.
    ``(forest ids per chunk, labels per range of vertices, count)``; ``sub.rnd`` moves on.

    ``canonical``: the labels are wanted numbered by each component's
    smallest vertex.  Where the base case takes the original vertex ids
    (``rr.loaded``), it numbers them so itself and ``count`` is a future of
    the components' count; else ``count`` is ``None`` and the labels hold
    finished ids (:func:`canonical_labels` numbers them).
    """
    settle_labels(store, sub.rnd, rr)
    labels, base, count = rr.labels, [], None
    if rr.n_comp > 0:
        sub.n_comp = rr.n_comp
        labels, base, count = base_case(store, sub, rr, canonical=canonical and rr.loaded)
    with Batch(store.run.client) as b:
        forest = [b.submit(ranged.forest_of, m, *([base[j]] if base else []),
                           key=store.run.builder.key(Step.FOREST, sub.rnd, j), **store.pins[j])
                  for j, m in enumerate(rr.mapped)]
    return forest, labels, count


def base_case(store, sub: SolveState, rr: RangedRound, canonical=False):
    """The components left fit one worker: the one-worker solver finishes, its maps end the labels.
    ``(labels per range of vertices, each chunk's forest ids of the base case, count)``: with ``canonical``
    (the base case's ids are the original vertices') the labels numbered by each component's smallest
    vertex and a future of their count, else the finished ids and ``None``."""
    run = store.run
    c, key = run.client, run.builder.key
    chunks = [c.submit(ranged.chunk_of, m, key=key(Step.BASE_CHUNK, sub.rnd, i), **store.pins[i])
              for i, m in enumerate(rr.mapped)]
    prev = RoundRecord(chunks=ChunkStats(), contract=0.0, n_comp=sub.n_comp, n_next=sub.n_comp, n_finished=0,
                       finished_total=rr.finished, forest_edges=0, map_bytes=0)
    base = SolveState(n_comp=sub.n_comp, edges_left=sub.edges_left, chunks=chunks, rnd=sub.rnd, prev=prev,
                      t_solve=sub.t_solve)
    Solver(run).solve(base, light=False)
    n_base = sub.n_comp
    sub.rnd, sub.n_comp = base.rnd, 0
    count = None
    if canonical:
        # each range's owner takes its part of the numbered labels, worker to worker
        R = len(rr.labels)
        whole = c.submit(ranged.canonical_base, n_base, even_bounds(n_base, R), *base.maps,
                         key=key(Step.BASE_MAP, sub.rnd))
        count = c.submit(ranged.canonical_count, whole, key=key(Step.LABELS_COUNT, sub.rnd))
        with Batch(c) as b:
            labels = pull_all(b, store.key(Step.LABELS, sub.rnd), [whole], [{}], ranged.taken, [()] * R,
                              store.range_pins(R), how="part", stage="serve")
    else:
        bmap = c.submit(ranged.base_map, n_base, *base.maps, key=key(Step.BASE_MAP, sub.rnd))
        labels = store.exchange(Step.LABELS, sub.rnd, rr.labels, [bmap],
                                split=functools.partial(ranged.split_live, bounds=np.array([0, n_base], np.int64)),
                                serve=ranged.serve_map, assemble=ranged.follow)
    ids = c.submit(tasks.forest_ids, *base.chosen, key=key(Step.BASE_FOREST, sub.rnd))
    routes = c.submit(ranged.route_chosen, ids, store.chunk_bounds, key=key(Step.BASE_ROUTE, sub.rnd))
    return labels, [c.submit(operator.getitem, routes, j, key=key(Step.BASE_ROUTED, sub.rnd, j))
                    for j in range(len(rr.mapped))], count


def merge_candidates(store, rnd, mapped, bounds):
    """merge: the candidates of each worker's chunks combined there, range by range, then each range's
    owner takes its share from every worker (:func:`~mst_dist.engine.exchange.pull_all`) and combines
    them; futures of each range's merged candidates, on its owner."""
    key, R, groups = store.key(Step.CAND, rnd), bounds.shape[0] - 1, by_worker(store.pins)
    with Batch(store.run.client) as b:
        tables = [b.submit(ranged.merge_ranges_of, bounds, *[mapped[i] for i in js], key=key("split", g),
                           **store.pins[js[0]])
                  for g, js in enumerate(groups)]
        return pull_all(b, key, tables, [store.pins[js[0]] for js in groups],
                        functools.partial(ranged.merged_range, bounds=bounds),
                        [(int(bounds[r]), int(bounds[r + 1])) for r in range(R)], store.range_pins(R),
                        how="item", stage="serve")


def canonical_labels(store, rnd, parts):
    """Every component numbered by its smallest vertex, range by range: ``(labels per range of
    vertices, n_components)``.

    ``parts``: each range of vertices' labels (``-(F + 1)``: finished as
    ``F``).  Each range tells the owners of its finished ids which it holds;
    the first range (smallest vertices) to hold an id numbers it, in order of
    first appearance, from a prefix sum of the ranges' counts; the owners
    keep the numbers and every range asks them for its own.
    """
    c, key = store.run.client, store.run.builder.key
    n_fin = max(c.gather([c.submit(ranged.max_finished, vl, key=key(Step.LABELS_MAX, rnd, r))
                          for r, vl in enumerate(parts)]), default=-1) + 1
    fb = even_bounds(n_fin, store.ranges_for(n_fin))
    firsts = store.exchange(Step.FIRST, rnd, parts, [None] * (fb.shape[0] - 1),
                            split=functools.partial(ranged.split_finished, bounds=fb),
                            serve=ranged.serve_firsts, assemble=ranged.firsts)
    counts = c.gather([c.submit(ranged.count_firsts, f, key=key(Step.FIRST_COUNT, rnd, j)) for j, f in enumerate(firsts)])
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    fpins = store.range_pins(len(firsts))  # where the exchange left each range's firsts
    R = fb.shape[0] - 1
    with Batch(c) as b:
        pushed = [b.submit(ranged.numbered_parts, f, int(offsets[j]), fb, key=key(Step.NUMBERED, rnd, j), **fpins[j])
                  for j, f in enumerate(firsts)]
        # each owner takes its part of every range's numbers, worker to worker
        kept = pull_all(b, store.key(Step.NUMBERED_PART, rnd), pushed, fpins, ranged.keep_labels,
                        [(int(fb[r]), int(fb[r + 1])) for r in range(R)], store.range_pins(R),
                        how="part", stage="serve")
    labels = store.exchange(Step.CANONICAL, rnd, firsts, kept, split=functools.partial(ranged.split_fids, bounds=fb),
                            serve=ranged.serve_map, assemble=ranged.final_labels)
    return labels, int(sum(counts))


def survivors_of(store, labels, sample, lo, k):
    """A streamed run's sample relabelled by the owners of the vertex map (``labels``, cut by the store's
    ``vertex_bounds``): ``(key, eid)`` above ``lo`` joining two components, in order."""
    ids = distinct(np.concatenate([sample.u, sample.v]))
    cuts = np.searchsorted(ids, store.vertex_bounds)
    pins = store.range_pins(len(labels))
    with Batch(store.run.client) as b:
        asked = [b.submit(ranged.labels_at, vl, ids[cuts[r]:cuts[r + 1]],
                          key=store.run.builder.key(Step.PASS_ESTIMATE, k, r), **pins[r])
                 for r, vl in enumerate(labels)]
    lab = np.concatenate(store.run.client.gather(asked))
    cu, cv = lab[np.searchsorted(ids, sample.u)], lab[np.searchsorted(ids, sample.v)]
    return passes.survivors_labelled(cu, cv, sample.key, sample.eid, lo)


def default_ranges(n, threads, min_memory, chunks):
    """How many ranges the component ids are cut into when ``mst.vertex-ranges`` is not set: enough that a
    range's state is at most ``1 / RANGE_SHARE`` of the smallest worker, and one per worker thread (each
    contracts one at a time; one per chunk where the workers' memory is not known) as long as a range
    keeps ``RANGE_COMPONENTS`` components.  Each range is a dozen tasks a round, so no more than that:
    ranges beyond what memory asks for add tasks, and a range of fewer components costs the scheduler
    more than its contraction saves.

    >>> default_ranges(2**27, 8, 2**30, 128), default_ranges(2**25, 8, 2**30, 128), default_ranges(2**18, 8, 2**30, 4)
    (64, 16, 4)
    """
    by_work = -(-int(n) // RANGE_COMPONENTS)
    if not min_memory:
        return max(2, min(max(chunks, threads), by_work))
    return max(2, min(threads, by_work), -(-VERTEX_BYTES * RANGE_SHARE * int(n) // int(min_memory)))


def round_ranges(fixed, threads, min_memory, chunks, count):
    """How many ranges ``count`` component ids are cut into: ``fixed`` (``mst.vertex-ranges``) where set,
    else :func:`default_ranges` of ``count``, so that the rounds' ranges follow their components down."""
    return fixed or default_ranges(count, threads, min_memory, chunks)


def chunk_pins(client, places, raws):
    """Each chunk's worker: its place (the placement's), else the one holding its edges now (``raws``)."""
    if all(p is not None for p in places):
        return [pin(p) for p in places]
    futures = [f for f in raws if isinstance(f, Future)]
    wait_on(client, futures)
    held = client.who_has(futures) if futures else {}
    return [pin(p if p is not None else min(held.get(getattr(f, "key", None), ()), default=None))
            for p, f in zip(places, raws)]

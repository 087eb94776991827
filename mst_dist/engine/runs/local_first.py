"""Local contraction first: what each chunk decides alone, before a partitioned run's rounds.

A vertex that no other chunk touches has every edge at it in one chunk.
Each chunk asks the owners of its vertices' ranges which of them only it
touches (the owner counts the chunks asking for each vertex), then contracts
them by Kruskal's rule where a union needs one side made only of such
interior vertices (``contract_interior`` of the CPU kernels): every edge
leaving that side is in the chunk, so the first met is its cheapest and a
forest edge.  What is left are the cut edges between the vertices other
chunks touch, under their own ids: no other chunk changes.  The vertices
contracted are told to the owners of their ranges, numbered away like a
round's (filter-nodes) and the chunks and labels follow; the rounds then
start on the cut edges alone.

Chunks cut along ranges of vertices (files sorted by source, grids, road
networks, locality-ordered ids) have most of their vertices interior, and
the rounds start with a fraction of them; a random graph has almost none
(``local_contraction="auto"`` estimates that first from a sample of the
vertices, and contracts only where at least :data:`AUTO_SHARE` of them are
interior).  Sanders &
Schimek, "Engineering Massively Parallel MST Algorithms" (IPDPS 2023),
contract the local edges of each processing element the same way.
"""
from __future__ import annotations

import functools
import time

from mst_dist.engine import ranged
from mst_dist.engine.batch import Batch
from mst_dist.engine.exchange import by_worker, pull_all
from mst_dist.engine.runs.ranged_rounds import filter_edges, renumber
from mst_dist.engine.runs.round_end import end_round
from mst_dist.engine.runs.state import RangedRound
from mst_dist.kernels.vertex_ranges import even_bounds
from mst_dist.phases import Phase, Step

#: ``local_contraction="auto"`` contracts when at least this share of the vertices is interior to a chunk.
AUTO_SHARE = 1 / 8
#: ``"auto"`` estimates that share from the vertices that are multiples of this.
PROBE_STEP = 64


def contract_locally(store, st, raws, offsets):
    """The chunks ``raws`` prepared for the first partitioned round, after local contraction where it is on.

    ``store``: the run's :class:`~mst_dist.engine.runs.ranges.VertexRanges`
    (its chunks pinned); ``st``: the solve's state, its ``edges_left`` set
    to the edges the first round starts with.  Returns the first
    round's :class:`~mst_dist.engine.runs.state.RangedRound`.  The
    contraction, when made, is round ``st.rnd`` (mode
    ``"local-contraction"`` in the stats).
    """
    run = store.run
    c, key, n, rnd = run.client, run.builder.key, run.g.n_vertices, st.rnd
    t0 = time.perf_counter()
    bounds = even_bounds(n, store.n_ranges)
    rpins = store.range_pins(bounds.shape[0] - 1)
    with Batch(c) as b:
        labels = [b.submit(ranged.first_labels, int(lo), int(hi), key=key(Step.LABELS_INIT, rnd, r), **rpins[r])
                  for r, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
        loaded = [b.submit(ranged.prepare_local, raw, off, n, backend=run.spec.backend,
                           key=key(Step.LOCAL_PREPARE, rnd, i), **store.pins[i])
                  for i, (raw, off) in enumerate(zip(raws, offsets))]
    split = functools.partial(ranged.split_ends, bounds=bounds)
    if run.spec.local_contraction == "auto":
        # a sample of the vertices first: a random graph, with hardly any interior vertex, pays for 1/64 of
        # the full count
        probe = store.exchange(Step.PROBE, rnd, loaded, labels, serve=ranged.serve_touch,
                              assemble=ranged.count_sampled_interior,
                              split=functools.partial(ranged.split_sampled, bounds=bounds, step=PROBE_STEP),
                              pins=store.pins)
        probed = c.gather(probe)
        estimate = sum(i for i, _ in probed) * PROBE_STEP
        run.stats.vertex_partition.update(interior_estimate=int(estimate), local_contraction=False)
        if estimate < AUTO_SHARE * n:
            st.edges_left = sum(e for _, e in probed)
            return _uncontracted(store, loaded, labels, bounds)
    touched = store.exchange(Step.TOUCH, rnd, loaded, labels, split=split, serve=ranged.serve_touch,
                            assemble=ranged.interior_of, pins=store.pins)
    J = len(touched)
    with Batch(c) as b:
        counts = ([b.submit(ranged.interior_vertices, t, key=key(Step.INTERIOR, rnd, i), **store.pins[i])
                   for i, t in enumerate(touched)]
                  + [b.submit(ranged.edges_in, t, key=key(Step.LOCAL_EDGES, rnd, i), **store.pins[i])
                     for i, t in enumerate(touched)])
    counted = c.gather(counts)
    interior, edges_before = sum(counted[:J]), sum(counted[J:])
    run.stats.vertex_partition.update(interior_vertices=int(interior), local_contraction=False)
    if not interior:
        st.edges_left = edges_before
        return _uncontracted(store, touched, labels, bounds)
    run.events.emit(round=rnd, phase=Phase.LOCAL_CONTRACTION, components=n, edges=edges_before)
    groups = by_worker(store.pins)
    with Batch(c) as b:
        contracted = [b.submit(ranged.contract_block, t, n, bounds, key=key(Step.LOCAL_CONTRACT, rnd, i), **store.pins[i])
                      for i, t in enumerate(touched)]
        # the contracted vertices of each worker's chunks cut by range there, each range's owner takes its own
        R = bounds.shape[0] - 1
        pkey = store.key(Step.LOCAL_PAIRS, rnd)
        pairs = [b.submit(ranged.local_pairs_all, R, *[contracted[j] for j in js], key=pkey("split", g),
                          **store.pins[js[0]])
                 for g, js in enumerate(groups)]
        parents = pull_all(b, pkey, pairs, [store.pins[js[0]] for js in groups], ranged.local_parents,
                           [(int(bounds[r]), int(bounds[r + 1])) for r in range(R)], rpins,
                           how="item", stage="serve")
    rmaps, n_next, finished = renumber(store, rnd, parents, bounds, 0)
    t_contract = time.perf_counter()
    nxt = filter_edges(store, rnd, contracted, labels, rmaps, bounds, n_next)
    run.stats.vertex_partition["local_contraction"] = True
    with Batch(c) as b:
        found = [b.submit(ranged.forest_count, m, key=key(Step.FOREST_COUNT, rnd, i), **store.pins[i])
                 for i, m in enumerate(contracted)]
    end_round(store, st, "local-contraction", (t0, t_contract), (n, n_next), nxt.mapped, found,
              edges_before=edges_before, ranges=bounds.shape[0] - 1)
    nxt.finished = finished
    return nxt


def _uncontracted(store, loaded, labels, bounds):
    """No contraction: the chunks as loaded, mapped for the first round only if one comes
    (:func:`~mst_dist.engine.runs.ranged_rounds.solve_rounds`)."""
    return RangedRound(mapped=list(loaded), labels=labels, bounds=bounds, n_comp=store.run.g.n_vertices,
                       loaded=True)

"""The end of a partitioned run's round (or of its local contraction): counts, statistics, the next round."""
from __future__ import annotations

import time

from mst_dist.engine import ranged
from mst_dist.engine.batch import Batch
from mst_dist.phases import Phase, Step
from mst_dist.result import RoundStats


def end_round(store, st, mode, times, components, mapped, found, edges_before=None, ranges=0):
    """The edges left and the forest edges found (futures of counts, ``found``) in one gather, the
    round's :class:`~mst_dist.result.RoundStats` (``times``: its start and the contract's end), the next
    round.  ``store``: the run's :class:`~mst_dist.engine.runs.ranges.VertexRanges`.  ``edges_before``: the round's edges at its start, when not ``st.edges_left`` (the local
    contraction counts them after dropping self-loops); ``ranges``: those its component ids were cut into."""
    run = store.run
    c, key, rnd = run.client, run.builder.key, st.rnd
    with Batch(c) as b:
        edges = [b.submit(ranged.edges_in, m, key=key(Step.COUNT, rnd, i), **store.pins[i]) for i, m in enumerate(mapped)]
    counted = c.gather(edges + found)
    edges_before = st.edges_left if edges_before is None else edges_before
    st.edges_left, n_forest = sum(counted[:len(edges)]), sum(counted[len(edges):])
    t0, t_contract = times
    t_end = time.perf_counter()
    run.stats.rounds.append(RoundStats(
        round=rnd, mode=mode, components_before=components[0], components_after=components[1],
        edges_before=edges_before, edges_after=st.edges_left, forest_edges=n_forest,
        phase_seconds={Phase.CONTRACT: t_contract - t0, Phase.FILTER_EDGES: t_end - t_contract},
        wall_seconds=t_end - t0, tasks=0, ranges=ranges))
    run.events.publish("round", **run.stats.rounds[-1].to_dict())
    st.rnd += 1

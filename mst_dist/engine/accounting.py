"""From the workers' records to :class:`~mst_dist.result.RoundStats`, and bytes moved.

During a run, a distributed round's bytes moved are an estimate (candidates
plus one round map per extra worker); when the run ends, :func:`exact_bytes`
replaces them by what the workers received from other workers for each
round's tasks (counted by :class:`TransferTally`, a worker plugin on Dask's
own transition hook: a key that goes from ``flight`` to ``memory`` came over
the network), and :func:`settle_overlaps` gives each distributed round the
wall time its own tasks ran in (a round submitted ahead starts before the
driver hears that the round before it ended).
"""
from __future__ import annotations

import logging

from distributed.diagnostics.plugin import WorkerPlugin

from mst_dist.engine.keys import parse_key
from mst_dist.phases import Phase
from mst_dist.result import RoundStats

logger = logging.getLogger("mst_dist")


def distributed_round(rnd, rec, *, light, wall, split_seconds, n_chunks, n_workers, tasks_in_graph):
    """The :class:`RoundStats` of a distributed round from its contract task's record."""
    ch = rec.chunks
    phase_seconds = {Phase.MAP: ch.map, Phase.MERGE: ch.merge, Phase.CONTRACT: rec.contract}
    if split_seconds:
        # the light/heavy split is this round's filter-edges (timed by the driver)
        phase_seconds[Phase.FILTER_EDGES] = split_seconds
        wall += split_seconds
    return RoundStats(
        round=rnd, mode="distributed-light" if light else "distributed",
        components_before=rec.n_comp, components_after=rec.n_next,
        edges_before=ch.edges_in, edges_after=ch.edges, forest_edges=rec.forest_edges,
        phase_seconds=phase_seconds, wall_seconds=wall,
        bytes_moved=ch.cand_bytes + rec.map_bytes * max(0, min(n_workers, n_chunks) - 1),
        tasks=tasks_in_graph, h2d_bytes=ch.h2d, d2h_bytes=ch.d2h, gpu_edges=ch.gpu_edges_in)


def local_rounds(rnd, rec, wall):
    """One :class:`RoundStats` per round of a single-task solve (:class:`LocalRecord` ``rec``).

    The solve is one task: its scheduling overhead (wall time less kernel
    time less preparation) and its host/device copies are charged to its
    first round.
    """
    kernel = sum(sum(t.phase_seconds.values()) for t in rec.trace)
    out = []
    for j, t in enumerate(rec.trace):
        ps = {Phase(p): s for p, s in t.phase_seconds.items()}
        mode = "local-filter" if t.filter_pass else ("local-light" if t.light else "local")
        first = j == 0
        out.append(RoundStats(
            round=rnd + j, mode=mode, components_before=t.components_before,
            components_after=t.components_after, edges_before=t.edges_before,
            edges_after=t.edges_after, forest_edges=t.forest_edges, phase_seconds=ps,
            wall_seconds=sum(ps.values()) + ((wall - kernel - rec.prepare) if first else 0.0),
            bytes_moved=0, tasks=4 if first else 0,
            h2d_bytes=rec.h2d if first else 0, d2h_bytes=rec.d2h if first else 0,
            gpu_edges=t.edges_before if rec.kind == "gpu" else 0))
    return out


def _kernel(r):
    return sum(r.phase_seconds.values())


def settle_overlaps(rounds):
    """Give each distributed round at least its kernel seconds of wall time (in place).

    A round's wall time is the driver's: from the previous round's record
    to its own.  Round ``r + 1`` is submitted ahead, so its tasks start the
    moment round ``r``'s contract ends on its worker, while ``r``'s record is
    still on its way to the driver: part of ``r + 1``'s work falls in ``r``'s
    window, and ``wall - kernel`` (the overhead) of ``r + 1`` would read
    negative.  That part moves from ``r``'s window to ``r + 1``'s, last round
    first (so the sum of the rounds' wall times stays the time they took);
    the first round of a run of distributed rounds, which overlapped what came
    before it (loading, the light split), keeps at least its kernel seconds.
    """
    for i in range(len(rounds) - 1, -1, -1):
        r = rounds[i]
        if not r.mode.startswith("distributed"):
            continue
        deficit = _kernel(r) - r.wall_seconds
        if deficit <= 0:
            continue
        r.wall_seconds += deficit
        if i and rounds[i - 1].mode.startswith("distributed"):
            rounds[i - 1].wall_seconds -= deficit


#: Name the transfer tally is registered under.
TALLY_NAME = "mst-transfers"


class TransferTally(WorkerPlugin):
    """Bytes a worker received from other workers, per run and round, for the engine's tasks.

    Every key fetched from another worker goes ``flight -> memory`` in the
    worker's state machine; the tally adds its size under the (token, round)
    its key names, by the task's :class:`~mst_dist.phases.Phase`.  Unlike the worker's transfer log (a deque of the last
    ``distributed.admin.low-level-log-length`` transfers) it loses nothing on a
    run of thousands of transfers.  :func:`take_tally` hands a run's counts
    over and forgets them.
    """

    name = TALLY_NAME
    idempotent = True  # registered by every run; the first one installed keeps counting

    def setup(self, worker):
        self.worker = worker
        self.received = {}

    def transition(self, key, start, finish, **kwargs):
        if start != "flight" or finish != "memory" or not isinstance(key, str) or not key.startswith("mst-"):
            return
        k = parse_key(key)
        ts = self.worker.state.tasks.get(key)
        if k is None or ts is None:
            return
        at = (k.token, k.round, k.phase)
        self.received[at] = self.received.get(at, 0) + ts.get_nbytes()


def take_tally(dask_worker, token):
    """This worker's received bytes per ``(round, phase)`` of run ``token`` (``None`` without the
    tally), forgotten here."""
    tally = dask_worker.plugins.get(TALLY_NAME)
    if tally is None or not hasattr(tally, "received"):
        return None
    return {at[1:]: tally.received.pop(at) for at in [a for a in tally.received if a[0] == token]}


def exact_bytes(client, rounds, token, n_workers, tallies=None):
    """Replace the rounds' estimated bytes moved by what the workers received for each round (in place),
    and give each round those bytes per phase of the tasks that received them (``phase_bytes``).
    ``tallies``: each worker's :func:`take_tally`, where already taken (``None``: taken here)."""
    if n_workers < 2:
        for r in rounds:
            r.bytes_moved = 0  # one worker: nothing crosses a worker boundary
        return
    try:
        tallies = client.run(take_tally, token=token) if tallies is None else tallies
    except Exception:  # pragma: no cover - a worker gone as the run ended
        logger.debug("no transfer tallies: bytes moved stay estimates", exc_info=True)
        return
    if not tallies or any(t is None for t in tallies.values()):
        return  # a worker without the tally (registration refused): the estimates stay
    per_round = {}
    for counts in tallies.values():
        for (rnd, phase), nb in counts.items():
            phases = per_round.setdefault(rnd, {})
            phases[phase] = phases.get(phase, 0) + nb
    for r in rounds:
        if r.mode in ("distributed", "partitioned") or r.tasks:
            r.phase_bytes = dict(sorted(per_round.get(r.round, {}).items()))
            r.bytes_moved = sum(r.phase_bytes.values())

"""Borůvka rounds on a set of chunks until every component is finished.

:class:`Solver` is shared by every kind of run: a resident run solves its
whole graph with it, a streaming run one slice per pass.  ``solve`` runs,
in order and as the plan says:

light pass    (dense graphs, before round 0) the ~light_factor * n lightest edges first
rounds        distributed Borůvka rounds: map -> merge tree -> contract
local finish  once the edges left fit on one worker, one task finishes

What a kind of run does after each round (a checkpoint) and with the last
solve (submitting the forest and labels at once) it passes in as hooks.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

from distributed.client import _wait

from mst_dist.engine import accounting
from mst_dist.engine.runs.state import SolveState
from mst_dist.phases import Phase

logger = logging.getLogger("mst_dist")


def wait_on(client, futures):
    """Wait for ``futures`` on ``client`` (``distributed.wait`` would look for the default client)."""
    futures = [f for f in futures if hasattr(f, "key")]
    if futures:
        client.sync(_wait, futures)


class Solver:
    """Solves :class:`SolveState` s of one run.

    ``after_round(st, rmap, chosen, record)`` is called after every
    distributed round and after the local finish (``record`` ``None``);
    ``finalize(st)``, when given, returns the futures of the forest ids and
    labels, submitted with the local finish (nothing follows that solve).
    """

    def __init__(self, run, *, after_round: Callable | None = None, finalize: Callable | None = None):
        self.run = run
        self.after_round = after_round
        self.finalize = finalize

    def solve(self, st: SolveState, light=True):
        """Rounds until every component is finished: light pass, distributed rounds, local finish."""
        while True:
            if self.finish_locally(st):
                self.local_finish(st)
                break
            if light:
                self.light_pass(st)
            self.distributed_rounds(st)
            if st.light:
                self.end_light_pass(st)
            elif st.n_comp == 0:
                break

    def finish_locally(self, st) -> bool:
        return st.edges_left <= self.run.run_plan.local_finish or st.n_comp == 0

    def prepared(self, st):
        if st.chunks is None:
            st.chunks = self.run.builder.prepare(st.raws, st.offsets)
        return st.chunks

    def light_pass(self, st):
        """Before round 0 on dense graphs: split the edges at a sampled threshold.

        The rounds then run on the ~``light_factor * n`` lightest edges;
        the heavy ones wait, relabelled once when the light ones are used up
        (:meth:`end_light_pass`).  Once rounds have contracted the graph the
        lightest edges are the ones chosen anyway, so only before round 0.
        """
        spec = self.run.spec
        if not (st.rnd == 0 and spec.light_factor > 0 and st.n_comp
                and st.edges_left > spec.min_degree * st.n_comp):
            return
        tp = time.perf_counter()
        split = self.run.builder.light_split(self.prepared(st), st.n_comp, st.edges_left, spec.light_factor)
        if split is None:
            return
        st.chunks, st.heavy = split
        st.light_maps = []
        ts = time.perf_counter()
        wait_on(self.run.client, st.chunks + st.heavy)
        self.run.stats.setup_seconds += ts - tp  # load + prepare ran until the samples came back
        st.split_seconds = time.perf_counter() - ts

    def distributed_rounds(self, st):
        """Borůvka rounds as Dask tasks, until the light edges are used up, no component is
        left, or the edges left fit the local finish.

        Each round is submitted before the last one's record comes back (the
        scheduler starts it the moment the last one ends); the round
        submitted ahead is dropped when it turns out not to be needed.
        """
        run, builder = self.run, self.run.builder
        pending = None
        while True:
            t0 = time.perf_counter()
            if pending is None:
                pending = builder.round(st.rnd, self.prepared(st), st.rmap, st.prev, st.n_comp,
                                        finish=not st.light)
            run.events.emit(round=st.rnd, phase=Phase.MAP, components=st.n_comp, edges=st.edges_left)
            ahead = builder.round(st.rnd + 1, pending.edges, pending.rmap, pending.record, None,
                                  finish=not st.light)
            rec = pending.record.result()
            if st.t_solve is None:
                st.t_solve = t0 - st.split_seconds
            run.stats.rounds.append(accounting.distributed_round(
                st.rnd, rec, light=st.light, wall=time.perf_counter() - t0, split_seconds=st.split_seconds,
                n_chunks=len(st.chunks), n_workers=run.cluster.n_workers, tasks_in_graph=pending.tasks))
            st.split_seconds = 0.0
            logger.debug("round %d: %s", st.rnd, rec)
            run.events.publish("round", **run.stats.rounds[-1].to_dict())
            st.maps.append(pending.rmap)
            st.chosen.append(pending.chosen)
            st.chunks, st.rmap, st.prev = pending.edges, pending.rmap, rec
            st.n_comp, st.edges_left = rec.n_next, rec.chunks.edges
            st.rnd += 1
            if self.after_round is not None:
                self.after_round(st, pending.rmap, pending.chosen, rec)
            if st.light:
                st.light_maps.append(st.rmap)
                if st.edges_left == 0:
                    return
            elif st.n_comp == 0 or self.finish_locally(st):
                return
            pending = ahead

    def end_light_pass(self, st):
        """The light edges are used up: the heavy ones, relabelled once, come next."""
        builder = self.run.builder
        st.chunks, st.heavy = st.heavy, None
        st.rmap = builder.compose(st.rnd, st.light_maps)
        st.light_maps = []
        st.edges_left = builder.count(st.rnd, st.chunks)
        logger.debug("light pass done: %d heavy edges", st.edges_left)

    def _local_worker(self):
        """The worker of the single task: the fastest one (a GPU one on a mixed cluster), or any."""
        tp = self.run.cluster.throughput
        if self.run.spec.backend != "cpu" and tp:
            return max(tp, key=lambda w: (tp[w], w))
        return None

    def local_finish(self, st):
        """One task gathers the edges left and finishes the forest on one worker."""
        run = self.run
        stats = run.stats
        t0 = time.perf_counter()
        run.events.emit(round=st.rnd, phase=Phase.LOCAL, components=st.n_comp, edges=st.edges_left)
        if st.chunks is None:  # straight from the raw chunks: prepared inside the task
            wait_on(run.client, st.raws)  # loading the graph is setup, not the solve's first round
            if not stats.setup_seconds:
                stats.setup_seconds = time.perf_counter() - run.t_start
            t0 = time.perf_counter()
            args = (st.raws, None, st.n_comp, st.prev, st.offsets)
        else:
            args = (st.chunks, st.rmap, st.n_comp, st.prev, None)
        with run.events.task_progress():  # the task tells its rounds as it goes
            rmap, chosen, rec_f = run.builder.local(st.rnd, *args, run.spec.light_factor, run.spec.min_degree,
                                                    self._local_worker())
            st.maps.append(rmap)
            st.chosen.append(chosen)
            if self.finalize is not None:
                # nothing comes after this solve: the forest ids and labels are computed as soon as
                # it ends, while its record comes back
                st.final = self.finalize(st)
            rec = rec_f.result()
        wall = time.perf_counter() - t0
        if st.chunks is None:
            stats.setup_seconds += rec.prepare
            stats.backend = rec.kind  # the whole forest came from this one task
            st.t_solve = t0 + rec.prepare
        elif st.t_solve is None:
            st.t_solve = t0
        local = accounting.local_rounds(st.rnd, rec, wall)
        for r in local:
            stats.rounds.append(r)
            run.events.publish("round", **r.to_dict())
        st.rnd += max(1, len(local))
        st.n_comp = 0
        if self.after_round is not None:
            self.after_round(st, rmap, chosen, None)

"""A resident run: every edge chunk stays on its worker for the whole run.

``load`` puts the raw chunks on the workers (the caller's arrays scattered,
or load tasks for files and generators); ``rounds`` solves them with the
:class:`~mst_dist.engine.runs.solver.Solver` (light pass, distributed
rounds, local finish), checkpointing after each round when asked; the
forest's rows come from the caller's arrays or from the raw chunks.
"""
from __future__ import annotations

import time

import numpy as np

from mst_dist.engine import tasks
from mst_dist.engine.runs.base import Run
from mst_dist.engine.runs.solver import Solver
from mst_dist.engine.runs.state import SolveState
from mst_dist.kernels.contract import take_to_host
from mst_dist.phases import Phase, Step


class ResidentRun(Run):
    """The edges loaded once and kept on the workers; rounds until every component is finished."""

    kind = "resident"
    streams = False

    def load(self) -> SolveState:
        """Raw chunks on the workers: the caller's arrays scattered, or load tasks (files, generators)."""
        g = self.g
        self.publish_start()
        raws = self.builder.load(g.sources, self.ranges, validate=not g.validated)
        self.events.emit(round=0, phase=Phase.LOAD, components=g.n_vertices, edges=g.n_edges)
        return SolveState(raws=raws, offsets=[r.offset for r in self.ranges], n_comp=g.n_vertices,
                          edges_left=g.n_edges)

    def rounds(self, st: SolveState):
        solver = Solver(self, after_round=None if self.ckpt is None else self.ckpt.save_round,
                        finalize=self._final)
        if self.ckpt is not None and self.ckpt.saved is not None:
            self._resume(st, solver)
            if self.ckpt.saved.complete:
                return
        solver.solve(st)

    def _final(self, st):
        """The forest ids and labels, submitted with the local finish (nothing follows it)."""
        return self.builder.forest(st.rnd, st.chosen), self.builder.labels(st.rnd, st.maps)

    def _resume(self, st, solver):
        """Go on from a checkpoint: the loaded chunks, relabelled by the saved labels.

        The labels become the pending round map, so the next round's
        filter-edges (or the local finish) relabels every edge and drops the
        self-loops: what is left is the graph contracted along the forest
        edges saved.  Rounds are numbered on from the saved ones.
        """
        s = self.ckpt.saved
        labels, forest = self.ckpt.resume_round()
        solver.prepared(st)
        st.rmap, st.maps, st.chosen = labels, [labels], [forest]
        st.n_comp, st.rnd, st.prev = s.components, s.round, s.round_record()
        if not s.light:  # during a light pass the saved count left out the heavy edges
            st.edges_left = s.edges_left
        if st.n_comp == 0:
            st.t_solve = time.perf_counter()
        self.stats.resumed_from = s.round

    # -- finish and write ----------------------------------------------------------------

    def labels(self, st):
        return self.builder.labels(st.rnd, st.maps)

    def forest_parts(self, st, i, ids_f):
        return [self.client.submit(tasks.chosen_rows, st.raws[i], st.offsets[i], ids_f,
                                   key=self.builder.key(Step.ROWS, st.rnd, i))]

    def forest_rows(self, st, ids_f, edge_ids):
        """From the caller's arrays where the graph is one set of them, else from the raw chunks."""
        g = self.g
        if g.in_memory and len(g.sources) == 1:
            return rows_from_arrays(g.sources[0], edge_ids)
        parts = self.builder.rows(st.raws, st.offsets, ids_f)
        if not parts:
            z = np.zeros(0, np.int64)
            return z, z.copy(), np.zeros(0, np.dtype(g.weight_dtype))
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def rows_from_arrays(source, edge_ids):
    """``(src, dst, weight)`` of ``edge_ids`` taken from the caller's arrays (an ``ArraySource``)."""
    if source.on_device:
        return tuple(take_to_host(a, edge_ids) for a in (source.src, source.dst, source.weight))
    return tasks.gather_rows(np.asarray(source.src), np.asarray(source.dst), np.asarray(source.weight), edge_ids)

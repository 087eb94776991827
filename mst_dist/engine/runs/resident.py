"""Resident chunks: the edge source that loads every chunk once and keeps it on its worker.

``load`` puts the raw chunks on the workers (the caller's arrays scattered,
or load tasks for files and generators); ``solve`` hands them, the whole
graph at once, to the run's vertex store; the forest's rows come from the
caller's arrays or from the raw chunks.
"""
from __future__ import annotations

import numpy as np

from mst_dist.engine import tasks
from mst_dist.engine.plan import should_stream
from mst_dist.engine.runs.parts import EdgeSource
from mst_dist.engine.runs.state import ChunksState
from mst_dist.kernels.contract import take_to_host
from mst_dist.phases import Phase, Step


class ResidentChunks(EdgeSource):
    """The edges loaded once and kept on the workers for the whole run."""

    name = "resident"
    streams = False
    spec_fields = ("stream",)

    @classmethod
    def wanted(cls, spec, graph, cluster) -> bool:
        return not should_stream(spec.stream, graph, cluster.total_memory)

    def load(self) -> ChunksState:
        """Raw chunks on the workers: the caller's arrays scattered, or load tasks (files, generators)."""
        run, g = self.run, self.run.g
        raws = run.builder.load(g.sources, run.ranges, validate=not g.validated)
        run.events.emit(round=0, phase=Phase.LOAD, components=g.n_vertices, edges=g.n_edges)
        return ChunksState(raws=raws, offsets=[r.offset for r in run.ranges])

    def solve(self, st):
        self.run.store.solve_resident(st)

    # -- the forest's rows ------------------------------------------------------------------

    def forest_parts(self, st, i, ids_f):
        ids = self.run.store.chunk_ids(ids_f, i)
        return [self.run.client.submit(tasks.chosen_rows, st.edges.raws[i], st.edges.offsets[i], ids,
                                       key=self.run.builder.key(Step.ROWS, st.rnd, i))]

    def kept_rows(self, st, ids_f):
        run, e = self.run, st.edges
        return [run.client.submit(tasks.chosen_rows, e.raws[i], e.offsets[i], run.store.chunk_ids(ids_f, i),
                                  key=run.builder.key(Step.KEPT_ROWS, st.rnd, i))
                for i in range(len(e.raws))]

    def forest_rows(self, st, ids_f, edge_ids):
        """From the caller's arrays where the graph is one set of them, else from the raw chunks."""
        run, g, e = self.run, self.run.g, st.edges
        if g.in_memory and len(g.sources) == 1:
            return rows_from_arrays(g.sources[0], edge_ids)
        c = run.client
        parts = c.gather([c.submit(tasks.rows, raw, off, run.store.chunk_ids(ids_f, i),
                                   key=run.builder.key(Step.ROWS, st.rnd, i))
                          for i, (raw, off) in enumerate(zip(e.raws, e.offsets))])
        if not parts:
            z = np.zeros(0, np.int64)
            return z, z.copy(), np.zeros(0, np.dtype(g.weight_dtype))
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))


def rows_from_arrays(source, edge_ids):
    """``(src, dst, weight)`` of ``edge_ids`` taken from the caller's arrays (an ``ArraySource``)."""
    if source.on_device:
        return tuple(take_to_host(a, edge_ids) for a in (source.src, source.dst, source.weight))
    return tasks.gather_rows(np.asarray(source.src), np.asarray(source.dst), np.asarray(source.weight), edge_ids)

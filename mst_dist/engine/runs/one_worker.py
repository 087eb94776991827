"""One worker: the vertex store whose per-vertex state is arrays over every component.

Each round's map and contraction run over arrays of all the components left
(:class:`~mst_dist.engine.rounds.RoundBuilder`: the merge tree's root
contracts them), solved by the :class:`~mst_dist.engine.runs.solver.Solver`
(light pass, distributed rounds, local finish).  A resident source's graph
is solved once, with a checkpoint after each round where asked; a streamed
source's slices one per pass, each relabelled on reading by the vertex ->
component map the passes before left (``vmap``), which each pass's round
maps then extend.
"""
from __future__ import annotations

import operator
import time

from mst_dist.engine import passes, tasks
from mst_dist.engine.plan import SLICE_BYTES_PER_EDGE
from mst_dist.engine.runs import outputs
from mst_dist.engine.runs.connect import check_stream_memory, check_vertex_memory
from mst_dist.engine.runs.parts import VertexStore
from mst_dist.engine.runs.solver import Solver
from mst_dist.engine.runs.state import OneState, SolveState
from mst_dist.phases import Step


class OneWorker(VertexStore):
    """Arrays over every component, on the worker that contracts each round."""

    name = "one"
    spec_fields = ("light_factor", "min_degree")  # the Solver's light pass
    #: a streamed slice is relabelled as it is read (by ``vmap``), not after
    relabels_slices = False
    #: worker bytes an edge of a streamed slice while it is solved, and the share of the workers' memory a slice
    #: takes (``1 / slice_share``)
    slice_edge_bytes = SLICE_BYTES_PER_EDGE
    slice_share = 4

    @classmethod
    def wanted(cls, spec, graph, cluster, source) -> bool:
        return True  # the store of every run not spread over ranges

    @classmethod
    def check(cls, graph, cluster, source):
        check_vertex_memory(graph, cluster)
        if source.streams:
            check_stream_memory(graph, cluster)

    def new_state(self) -> OneState:
        return OneState()

    # -- a resident graph -----------------------------------------------------------------

    def solve_resident(self, st):
        """The whole graph: light pass, rounds, local finish, a checkpoint after each round where asked."""
        run, v = self.run, st.vertices
        sub = SolveState(raws=st.edges.raws, offsets=st.edges.offsets, n_comp=run.g.n_vertices,
                         edges_left=run.g.n_edges)
        solver = Solver(run, after_round=None if run.ckpt is None else run.ckpt.save_round, finalize=self._final)
        resumed_complete = False
        if run.ckpt is not None and run.ckpt.saved is not None:
            self._resume(sub, solver)
            resumed_complete = run.ckpt.saved.complete
        if not resumed_complete:
            solver.solve(sub)
        st.rnd, st.t_solve, st.final, st.n_comp = sub.rnd, sub.t_solve, sub.final, 0
        v.chosen, v.maps = sub.chosen, sub.maps

    def _final(self, sub):
        """The forest ids and labels, submitted with the local finish (nothing follows it)."""
        return self.run.builder.forest(sub.rnd, sub.chosen), self.run.builder.labels(sub.rnd, sub.maps)

    def _resume(self, sub, solver):
        """Go on from a checkpoint: the loaded chunks, relabelled by the saved labels.

        The labels become the pending round map, so the next round's
        filter-edges (or the local finish) relabels every edge and drops the
        self-loops: what is left is the graph contracted along the forest
        edges saved.  Rounds are numbered on from the saved ones.
        """
        run = self.run
        s = run.ckpt.saved
        labels, forest = run.ckpt.resume_round()
        solver.prepared(sub)
        sub.rmap, sub.maps, sub.chosen = labels, [labels], [forest]
        sub.n_comp, sub.rnd, sub.prev = s.components, s.round, s.round_record()
        if not s.light:  # during a light pass the saved count left out the heavy edges
            sub.edges_left = s.edges_left
        if sub.n_comp == 0:
            sub.t_solve = time.perf_counter()
        run.stats.resumed_from = s.round

    # -- a streamed source's passes ------------------------------------------------------------

    def start_passes(self, st):
        """``(lo, components, passes done, complete, rows)``: from the start, or as a checkpoint saved them."""
        run = self.run
        if run.ckpt is None or run.ckpt.saved is None:
            return None, run.g.n_vertices, 0, False, None
        s = run.ckpt.saved
        st.vertices.vmap, forest, rows = run.ckpt.resume_pass(run.ranges, run.g.n_vertices)
        st.vertices.chosen = [forest]
        st.rnd = s.round
        run.stats.resumed_from = st.rnd
        return None if s.threshold is None else tuple(s.threshold), s.components, s.passes, s.complete, rows

    def pass_map(self, st):
        """The vertex -> component map each chunk of a pass relabels by as it reads (``None``: none yet)."""
        return st.vertices.vmap

    def take_slice(self, st, k, chunks, kept, rows, n_live):
        """A wave's slice as read: relabelled already."""
        return kept, rows

    def settle(self, futures):
        """Nothing to wait for: the solve takes the slice as it comes."""

    def chunk_pin(self, i):
        return {}

    def solve_slice(self, st, k, n_live, piece):
        """The pass's slice solved from the components so far: ``(components after it, forest ids for each
        chunk's rows, where to trim them)``; the vertex map extended by the pass's round maps."""
        run, v = self.run, st.vertices
        c, key = run.client, run.builder.key
        n_chunks = len(piece.mapped)
        sub = SolveState(n_comp=n_live, edges_left=run.stats.passes[-1].edges_kept, chunks=piece.mapped, rnd=st.rnd,
                         t_solve=st.t_solve)
        piece.mapped = None  # the solve's now: its first round replaces it
        Solver(run).solve(sub, light=False)
        st.rnd = sub.rnd
        v.chosen.extend(sub.chosen)
        chosen = c.submit(tasks.forest_ids, *sub.chosen, key=key(Step.PASS_FOREST, k))
        composed = c.submit(passes.compose, v.vmap, *sub.maps, key=key(Step.PASS_COMPOSE, k))
        v.vmap = c.submit(operator.getitem, composed, 0, key=key(Step.PASS_VMAP, k))
        n_live = c.submit(operator.getitem, composed, 1, key=key(Step.PASS_COMPONENTS, k)).result()
        self._pass_forest = chosen
        return n_live, [chosen] * n_chunks, [{}] * n_chunks

    def end_pass(self, st, k, hi, n_live):
        """The pass's state to the checkpoint, where one is kept."""
        if self.run.ckpt is not None:
            rows = [r for rs in st.edges.rows.values() for r in rs]
            self.run.ckpt.save_pass(st.rnd, k, hi, n_live, vmap=st.vertices.vmap, chosen=self._pass_forest, rows=rows)
        self._pass_forest = None

    def end_passes(self, st, k):
        """The vertex map is the labels; no solve follows, so the kernels' scratch goes before they are made."""
        self.run.release_scratch(0)

    def survivors(self, st, sample, lo, k):
        """``(key, eid)`` of the sampled edges above ``lo`` whose ends are in two components, in order."""
        run = self.run
        return run.client.submit(passes.survivors, st.vertices.vmap, sample.u, sample.v, sample.key, sample.eid, lo,
                                 key=run.builder.key(Step.PASS_ESTIMATE, k)).result()

    # -- finish and write ----------------------------------------------------------------

    def finish(self, st):
        run, v = self.run, st.vertices
        if v.vmap is not None:  # the passes' vertex map
            labels = run.client.submit(passes.vertex_labels, v.vmap, run.g.n_vertices,
                                       key=run.builder.key(Step.LABELS, st.rnd))
        else:  # the rounds' maps
            labels = run.builder.labels(st.rnd, v.maps)
        return run.builder.forest(st.rnd, v.chosen), labels

    def chunk_ids(self, ids_f, i):
        return ids_f

    def gather_ids(self, ids_f):
        return ids_f.result()

    def keep(self, st, ids_f, lab_f):
        return self.run.keep_parts(st, ids_f, lab_f)

    def write_labels(self, st, lab_f):
        run = self.run
        if run.spec.labels_output is not None:
            return None, outputs.write_labels(run.client, run.builder, run.spec.labels_output, lab_f,
                                              run.g.n_vertices, storage_options=run.spec.storage_options)
        return lab_f.result()

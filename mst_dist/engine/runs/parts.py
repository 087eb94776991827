"""The two parts every run is made of: an edge source and a vertex store.

A run (:class:`~mst_dist.engine.runs.base.Run`) is one of each, composed:

edge source   where the edges are while the forest is computed:
              :class:`~mst_dist.engine.runs.resident.ResidentChunks` (loaded
              once, kept on the workers) or
              :class:`~mst_dist.engine.runs.streaming.StreamedSlices` (read
              from their source in passes, one slice of the strict order each)
vertex store  where the per-vertex state lives:
              :class:`~mst_dist.engine.runs.one_worker.OneWorker` (arrays over
              every component, on one worker at a time) or
              :class:`~mst_dist.engine.runs.ranges.VertexRanges` (component
              ids cut into ranges, each owned by a task)

The source drives: it hands the store the edges to solve (the whole graph,
or each pass's slice) and keeps the forest's rows; the store runs the
rounds over them (hooking, jumping, relabelling) and keeps the labels.  The
kind's name (``resident``, ``streaming``, ``partitioned``,
``spread-streaming``) is the pair's (:data:`KIND_NAMES`): the same name in
the stats, the logs and a checkpoint's manifest.  Each part says whether it
is wanted and whether the graph fits it (:func:`~mst_dist.engine.runs.choose_kind`
asks them), reads its own fields of the spec (:attr:`Part.spec_fields`) and
saves and reads back its own state in a checkpoint.
"""
from __future__ import annotations

from typing import ClassVar


class Part:
    """What the edge sources and vertex stores share: a name and the spec fields they read."""

    #: The part's name, one word.
    name: ClassVar[str] = ""
    #: The fields of :class:`~mst_dist.engine.spec.RunSpec` this part reads (beside the shared ones).
    spec_fields: ClassVar[tuple] = ()

    def plan(self, run):
        """Called once the run's plan is made (``run.ranges``, ``run.builder``, ``run.stats`` are set)."""
        self.run = run


class EdgeSource(Part):
    """Where a run's edges are: loaded once, or read in passes."""

    #: Whether the edges are streamed (the plan sizes chunks for passes).
    streams: ClassVar[bool] = False

    @classmethod
    def wanted(cls, spec, graph, cluster) -> bool:
        """Whether a run of ``graph`` under ``spec`` on ``cluster`` takes its edges from this source."""
        raise NotImplementedError

    def load(self):
        """The edges on the workers, or what to read them from: this source's state."""
        raise NotImplementedError

    def solve(self, st):
        """Every component finished: the store solves the edges this source gives it."""
        raise NotImplementedError

    def forest_parts(self, st, i, ids_f) -> list:
        """Futures of rows chunk ``i`` holds, a superset of its forest edges ``(edge_id, src, dst, weight)``."""
        raise NotImplementedError

    def kept_rows(self, st, ids_f) -> list:
        """Futures of each chunk's forest rows, one per chunk, where the chunk is."""
        raise NotImplementedError

    def forest_rows(self, st, ids_f, edge_ids):
        """``(src, dst, weight)`` of the forest's edges ``edge_ids``, on the client."""
        raise NotImplementedError


class VertexStore(Part):
    """Where a run's per-vertex state is: on one worker, or in ranges over the workers."""

    @classmethod
    def wanted(cls, spec, graph, cluster, source) -> bool:
        """Whether a run of ``graph`` whose edges come from ``source`` keeps its vertices this way."""
        raise NotImplementedError

    @classmethod
    def check(cls, graph, cluster, source):
        """A :class:`~mst_dist.errors.GraphTooLargeError` where the vertices do not fit this store."""
        raise NotImplementedError

    def finish(self, st):
        """Futures of the forest's edge ids (the store's form: see :meth:`chunk_ids`) and of the labels."""
        raise NotImplementedError

    def chunk_ids(self, ids_f, i):
        """What of ``ids_f`` (as :meth:`finish` gave it) chunk ``i`` takes its forest rows by."""
        raise NotImplementedError

    def gather_ids(self, ids_f):
        """The forest's edge ids, ascending, on the client."""
        raise NotImplementedError

    def keep(self, st, ids_f, lab_f):
        """``gather=False``: ``(KeptForest, ForestOut of counts, components or None)``."""
        raise NotImplementedError

    def write_labels(self, st, lab_f):
        """``(labels, components)`` gathered, or with ``labels_output=`` ``(None, components)``."""
        raise NotImplementedError


#: Each kind of run by its parts' names; the kind's name is the one users see and checkpoints record.
KIND_NAMES = {
    ("resident", "one"): "resident",
    ("streamed", "one"): "streaming",
    ("resident", "ranges"): "partitioned",
    ("streamed", "ranges"): "spread-streaming",
}
#: The parts' names of each kind.
KIND_PARTS = {kind: parts for parts, kind in KIND_NAMES.items()}

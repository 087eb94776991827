"""The phases of a run: one vocabulary for task keys, statistics, progress and the dashboard.

- :class:`Phase` -- what a run is doing: the five phases of a Borůvka round
  (:data:`ROUND_PHASES`) and the stages around them.  A round's
  ``phase_seconds`` and ``phase_bytes``, the ``phase`` of the progress and
  dashboard events and the dashboard's per-worker time groups are all keyed
  by it.
- :class:`Step` -- each kind of task the engine submits: the ``<step>`` of a
  task key ``mst-<step>-r<round>-...`` (see :mod:`mst_dist.engine.keys`),
  with the :class:`Phase` it belongs to (``Step.HOOK.phase is Phase.CONTRACT``).
- :class:`ExchangeStage` -- the tasks of one exchange between the owners of
  vertex ranges and the tasks that ask them; an exchange's task is named
  ``<step>-<stage>`` (``hook-serve``) and belongs to its step's phase.

All three are ``str`` enums: a member equals its name (``Phase.MAP == "map"``),
formats as it (``f"{Phase.MAP}"`` is ``"map"``) and serializes as it, so
statistics read and written as plain strings keep their values.  Where a
record leaves the process (Dask's event log takes exact ``str`` keys and
values only), :func:`plain` turns the members back into plain strings.
"""
from __future__ import annotations

from enum import Enum

__all__ = ["Phase", "ROUND_PHASES", "Step", "ExchangeStage", "plain"]


class _Name(str, Enum):
    """A ``str`` enum that prints and formats as its value on every Python (3.10 has no ``StrEnum``)."""

    __str__ = str.__str__
    __format__ = str.__format__


class Phase(_Name):
    """What a run is doing: a round's five phases, then the stages around the rounds."""

    MAP = "map"                              #: each chunk's cheapest edge per component
    MERGE = "merge"                          #: the candidates combined, one per component
    CONTRACT = "contract"                    #: forest edges chosen, components hooked and jumped to roots
    FILTER_EDGES = "filter-edges"            #: edges relabelled, self-loops dropped
    FILTER_NODES = "filter-nodes"            #: component ids compacted (and the vertex labels following them)
    COMPILE = "compile"                      #: kernels compiled, once after install
    LOAD = "load"                            #: chunks read or generated and prepared
    PASS = "pass"                            #: a streaming run's pass over the edge source
    LOCAL_CONTRACTION = "local-contraction"  #: each chunk contracting the vertices only it touches
    LOCAL = "local"                          #: the single-task solve (and a partitioned run's base case)
    CHECKPOINT = "checkpoint"                #: a round's state saved
    RESUME = "resume"                        #: a run going on from a saved round
    FINISH = "finish"                        #: the forest, the labels and the outputs


#: The five phases of a Borůvka round, in order.
ROUND_PHASES = (Phase.MAP, Phase.MERGE, Phase.CONTRACT, Phase.FILTER_EDGES, Phase.FILTER_NODES)


class Step(_Name):
    """A kind of task the engine submits (a task key's ``<step>``), with the :class:`Phase` it belongs to."""

    def __new__(cls, value, phase):
        member = str.__new__(cls, value)
        member._value_ = value
        member.phase = phase
        return member

    # loading and placement
    CALIBRATE = "calibrate", Phase.LOAD
    LOAD = "load", Phase.LOAD
    PREPARE = "prepare", Phase.LOAD
    LOAD_BLOCK = "load-block", Phase.LOAD
    LABELS_INIT = "labels-init", Phase.LOAD
    # a round: map
    MAP = "map", Phase.MAP
    EDGES = "edges", Phase.MAP
    # merge
    CAND = "cand", Phase.MERGE
    MERGE = "merge", Phase.MERGE
    MERGED = "merged", Phase.MERGE
    # contract
    CONTRACT = "contract", Phase.CONTRACT
    CHOSEN = "chosen", Phase.CONTRACT
    STATS = "stats", Phase.CONTRACT
    HOOK = "hook", Phase.CONTRACT
    JUMP = "jump", Phase.CONTRACT
    JUMPED = "jumped", Phase.CONTRACT
    FOREST_COUNT = "forest-count", Phase.CONTRACT
    # filter-nodes
    RMAP = "rmap", Phase.FILTER_NODES
    COUNTS = "counts", Phase.FILTER_NODES
    NUMBER = "number", Phase.FILTER_NODES
    RELABEL = "relabel", Phase.FILTER_NODES
    LABELS = "labels", Phase.FILTER_NODES
    LABELS_COMPOSE = "labels-compose", Phase.FILTER_NODES
    COMPOSE = "compose", Phase.FILTER_NODES
    # filter-edges (the light/heavy split of a resident run's first round included)
    FILTER = "filter", Phase.FILTER_EDGES
    SAMPLE = "sample", Phase.FILTER_EDGES
    LIGHT = "light", Phase.FILTER_EDGES
    HEAVY = "heavy", Phase.FILTER_EDGES
    COUNT = "count", Phase.FILTER_EDGES
    # local contraction (a partitioned run's first step)
    LOCAL_PREPARE = "local-prepare", Phase.LOCAL_CONTRACTION
    PROBE = "probe", Phase.LOCAL_CONTRACTION
    TOUCH = "touch", Phase.LOCAL_CONTRACTION
    INTERIOR = "interior", Phase.LOCAL_CONTRACTION
    LOCAL_EDGES = "local-edges", Phase.LOCAL_CONTRACTION
    LOCAL_CONTRACT = "local-contract", Phase.LOCAL_CONTRACTION
    LOCAL_PAIRS = "local-pairs", Phase.LOCAL_CONTRACTION
    LOCAL_PARENTS = "local-parents", Phase.LOCAL_CONTRACTION
    # the single-task solve, and a partitioned run's base case
    LOCAL = "local", Phase.LOCAL
    BASE_CHUNK = "base-chunk", Phase.LOCAL
    BASE_MAP = "base-map", Phase.LOCAL
    BASE_FOREST = "base-forest", Phase.LOCAL
    BASE_ROUTE = "base-route", Phase.LOCAL
    BASE_ROUTED = "base-routed", Phase.LOCAL
    # a streaming run's passes
    PASS = "pass", Phase.PASS
    PASS_SAMPLE = "pass-sample", Phase.PASS
    PASS_KEPT = "pass-kept", Phase.PASS
    PASS_ROWS = "pass-rows", Phase.PASS
    PASS_STATS = "pass-stats", Phase.PASS
    PASS_FOREST = "pass-forest", Phase.PASS
    PASS_TRIM = "pass-trim", Phase.PASS
    PASS_COMPOSE = "pass-compose", Phase.PASS
    PASS_VMAP = "pass-vmap", Phase.PASS
    PASS_COMPONENTS = "pass-components", Phase.PASS
    PASS_ESTIMATE = "pass-estimate", Phase.PASS
    PASS_IDS = "pass-ids", Phase.PASS
    PASS_BLOCK = "pass-block", Phase.PASS
    PASS_RELABEL = "pass-relabel", Phase.PASS
    PASS_JOINING = "pass-joining", Phase.PASS
    PASS_COUNT = "pass-count", Phase.PASS
    PASS_CLOSE = "pass-close", Phase.PASS
    PASS_END = "pass-end", Phase.PASS
    # checkpoints and resuming
    CHECKPOINT = "checkpoint", Phase.CHECKPOINT
    CHECKPOINT_LABELS = "checkpoint-labels", Phase.CHECKPOINT
    CHECKPOINT_FOREST = "checkpoint-forest", Phase.CHECKPOINT
    CHECKPOINT_CHUNK = "checkpoint-chunk", Phase.CHECKPOINT
    RESUME = "resume", Phase.RESUME
    RESUME_LABELS = "resume-labels", Phase.RESUME
    RESUME_FOREST = "resume-forest", Phase.RESUME
    RESUME_VMAP = "resume-vmap", Phase.RESUME
    RESUME_ROWS = "resume-rows", Phase.RESUME
    RESUME_PREPARE = "resume-prepare", Phase.RESUME
    # the finish: forest, canonical labels, outputs
    FOREST = "forest", Phase.FINISH
    FOREST_IDS = "forest-ids", Phase.FINISH
    ROWS = "rows", Phase.FINISH
    LABELS_MAX = "labels-max", Phase.FINISH
    FIRST = "first", Phase.FINISH
    FIRST_COUNT = "first-count", Phase.FINISH
    NUMBERED = "numbered", Phase.FINISH
    NUMBERED_PART = "numbered-part", Phase.FINISH
    NUMBERED_KEPT = "numbered-kept", Phase.FINISH
    CANONICAL = "canonical", Phase.FINISH
    LABELS_ARRAY = "labels-array", Phase.FINISH
    LABELS_COUNT = "labels-count", Phase.FINISH
    WRITE_FOREST = "write-forest", Phase.FINISH
    WRITE_LABELS = "write-labels", Phase.FINISH
    KEPT_FOREST = "kept-forest", Phase.FINISH
    KEPT_COUNT = "kept-count", Phase.FINISH
    KEPT_LABELS = "kept-labels", Phase.FINISH
    KEPT_LABELS_SIZE = "kept-labels-size", Phase.FINISH
    KEPT_COMPONENTS = "kept-components", Phase.FINISH
    KEPT_ROWS = "kept-rows", Phase.FINISH


class ExchangeStage(_Name):
    """A task of one exchange between the tasks asking for ids and the owners of their ranges."""

    SPLIT = "split"            #: a requester's ids, sorted and cut by owner
    SERVE = "serve"            #: an owner answers what it was asked
    ASSEMBLE = "assemble"      #: a requester puts its answers back in its ids' order


def plain(value):
    """``value`` with every enum member, in nested dicts, lists and tuples too, as its plain ``str``."""
    if isinstance(value, Enum):
        return str.__str__(value) if isinstance(value, str) else value
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value

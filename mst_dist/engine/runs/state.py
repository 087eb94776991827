"""The typed state of a run between its steps (client side: futures and small numbers).

A run's :class:`RunState` holds what every kind shares and one state for
each of its parts: the edge source's (:class:`ChunksState` or
:class:`PassesState`) and the vertex store's (:class:`OneState` or
:class:`RangesState`).  :class:`SolveState` is one solve of a set of chunks
on one worker's vertex state; :class:`RangedRound` one partitioned round's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(kw_only=True)
class ChunksState:
    """A resident source: the raw chunks on the workers."""

    raws: list                      #: raw chunks on the workers (futures or the caller's arrays scattered)
    offsets: list                   #: edge id of each raw chunk's first edge


@dataclass(kw_only=True)
class PassesState:
    """A streamed source: what each chunk is read from, and the forest's rows each pass kept."""

    inputs: list                    #: per chunk: (source or scattered rows, start, stop, offset)
    rows: dict = field(default_factory=dict)     #: chunk -> the chosen edges' rows, one future per pass
    sample: object = None           #: the sample the thresholds come from


@dataclass(kw_only=True)
class Slice:
    """A pass's slice as the vertex store takes it: each chunk's edges (taken out by the solve, so that the
    workers let them go as its first round replaces them) and rows."""

    mapped: list | None             #: per chunk: its slice's edges, as the store's :meth:`take_slice` left them
    rows: list                      #: per chunk: the rows of those edges


@dataclass(kw_only=True)
class OneState:
    """Vertices on one worker: the forest ids found and what the labels are made from."""

    chosen: list = field(default_factory=list)   #: every round's forest ids (futures)
    maps: list = field(default_factory=list)     #: every round map, in order (a resident run's labels)
    vmap: object = None             #: future of the vertex -> component array after the passes so far (streamed)


@dataclass(kw_only=True)
class RangesState:
    """Vertices in ranges: each range's labels, each chunk's forest ids, the components' count at the end."""

    labels: list = field(default_factory=list)   #: per range of vertices: future of its labels
    forest: dict = field(default_factory=dict)   #: chunk -> its forest ids, one future per pass (streamed)
    forest_ids: list = field(default_factory=list)   #: per chunk: future of its forest ids, once found
    n_components: int = 0           #: components of the whole graph (set by the store's finish)
    #: future of the components' count where the base case numbered the labels canonically itself
    numbered: object = None


@dataclass(kw_only=True)
class RunState:
    """What every kind of run hands from step to step."""

    rnd: int = 0                    #: rounds done so far
    n_comp: int = 0                 #: components (not finished) left
    t_solve: float | None = None    #: when the rounds began (end of setup)
    final: tuple | None = None      #: futures of the forest ids and labels, submitted with the last solve
    edges: ChunksState | PassesState | None = None     #: the edge source's state
    vertices: OneState | RangesState | None = None     #: the vertex store's state


@dataclass(kw_only=True)
class SolveState:
    """Borůvka rounds on one set of chunks (a resident graph, or one streaming pass's slice)."""

    n_comp: int                     #: components (not finished) left
    edges_left: int                 #: edges left
    rnd: int = 0                    #: rounds done so far
    chosen: list = field(default_factory=list)   #: every round's forest ids (futures)
    t_solve: float | None = None    #: when the rounds began (end of setup)
    final: tuple | None = None      #: futures of the forest ids and labels, submitted with the local finish
    raws: list | None = None        #: raw chunks on the workers (resident runs)
    offsets: list | None = None     #: edge id of each raw chunk's first edge
    chunks: list | None = None      #: working chunks (None: not prepared yet)
    rmap: object = None             #: future of the last round map (relabel pending)
    prev: object = None             #: the last round's record (future or value)
    maps: list = field(default_factory=list)     #: every round map, in order (labels)
    heavy: list | None = None       #: during a light pass: the heavy chunks, for after it
    light_maps: list = field(default_factory=list)   #: the round maps of the light pass so far
    split_seconds: float = 0.0      #: the light split, charged to the first light round

    @property
    def light(self) -> bool:
        """Whether a light pass is under way (the heavy edges wait)."""
        return self.heavy is not None


@dataclass(kw_only=True)
class RangedRound:
    """Between two partitioned rounds: each chunk's edges, each range's labels and the next round's ranges."""

    mapped: list                    #: per chunk: its edges mapped for the next round (futures)
    labels: list                    #: per range of vertices: future of its labels
    bounds: np.ndarray              #: the next round's ranges of component ids
    n_comp: int                     #: components (not finished) left
    finished: int = 0               #: components finished so far
    #: the round maps the labels have not followed yet, ``(per range: future of the map, the round's bounds)``
    #: each, in round order (:func:`~mst_dist.engine.runs.ranged_rounds.settle_labels`)
    pending: list = field(default_factory=list)
    #: ``mapped`` holds the chunks as loaded: no round or contraction has run, every vertex is its own
    #: component under its own id.  The chunks are mapped for a round only when one comes (a run that goes
    #: straight to the base case never maps them), and the base case then numbers the labels itself
    loaded: bool = False

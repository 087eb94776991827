"""The typed state of a run between its steps (client side: futures and small numbers)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(kw_only=True)
class RunState:
    """What every kind of run hands to its finish: rounds done, forest ids chosen, timing."""

    rnd: int = 0                    #: rounds done so far
    chosen: list = field(default_factory=list)   #: every round's forest ids (futures)
    t_solve: float | None = None    #: when the rounds began (end of setup)
    final: tuple | None = None      #: futures of the forest ids and labels, submitted with the last solve


@dataclass(kw_only=True)
class SolveState(RunState):
    """Borůvka rounds on one set of chunks (a resident graph, or one streaming pass's slice)."""

    n_comp: int                     #: components (not finished) left
    edges_left: int                 #: edges left
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
class StreamState(RunState):
    """A streaming run: its inputs, the components found by the passes so far, the forest's rows."""

    inputs: list = field(default_factory=list)   #: per chunk: (source or scattered rows, start, stop, offset)
    vmap: object = None             #: future of the vertex -> component array after the passes so far
    rows: dict = field(default_factory=dict)     #: chunk -> the chosen edges' rows, one future per pass
    n_comp: int = 0


@dataclass(kw_only=True)
class SpreadStreamState(StreamState):
    """A streaming run whose vertex map is cut into ranges of vertices, each held by its owner."""

    labels: list = field(default_factory=list)   #: per range of vertices: future of its labels
    forest: dict = field(default_factory=dict)   #: chunk -> its forest ids, one future per pass
    #: the pass's slice, each chunk's mapped for the first round and its rows; the solve takes them (and the
    #: labels) out of the state, so that what a round replaces is let go during the pass, not after it
    slice_mapped: list = field(default_factory=list)
    slice_rows: list = field(default_factory=list)

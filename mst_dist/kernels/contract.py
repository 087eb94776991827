"""The kernel contract: the data every backend takes and gives, and its phase functions.

Three backends implement it: :mod:`mst_dist.kernels.reference` (plain NumPy,
or any array module ``xp`` with NumPy's calls: the oracle),
:mod:`mst_dist.kernels.cpu` (Numba) and :mod:`mst_dist.kernels.gpu` (CuPy, or
its NumPy stand-in).  :func:`mst_dist.kernels.backend` picks one by name.
Each exposes the functions of :class:`Backend` under the same names, with the
same signatures and return types, and the conformance test holds every one of
them equal to the reference.

Data
----

:class:`Chunk`
    An edge chunk: the edges of one part of the graph, endpoints relabelled
    to the current component ids.  It has a *plain* form (the CPU's and the
    reference's: one weight key and one edge id per edge) and a *packed* form
    (the GPU's: one packed 64-bit key per edge, indexing the chunk's table of
    weight keys and edge ids), each on the host or on a device.  ``adopt``
    turns any chunk into a backend's own form.
:class:`Candidates`
    For each component a chunk touches, its cheapest leaving edge: the
    record the map phase emits and the merge phase combines.  Always on the
    host (it crosses workers).
round map ``M``
    An ``int64`` host array over a round's component ids: the id in the next
    round (``>= 0``) or, for a component that is finished (no edge left),
    ``-(F + 1)`` with ``F`` its final component number.
:class:`SolveRound`, :class:`Solution`
    What the single-task solve did, round by round, and what it found.

Edges are ordered strictly by ``(key, eid)``: ``key`` is the order-preserving
``uint64`` image of the weight (:func:`mst_dist.kernels.reference.weight_keys`)
and ``eid`` the global ``int64`` edge id.  Self-loops never enter a chunk.
Results that leave a kernel as records (candidates, round maps, chosen edge
ids, labels) are NumPy arrays on the host, whatever the backend.

Ranged kernels
--------------

The rounds of a partitioned or spread run cut the component ids into ranges
owned by tasks (:mod:`mst_dist.kernels.vertex_ranges`); their kernels
(:data:`RANGED_FUNCTIONS`: a chunk's strict order, local ids, cheapest and
lightest parallel edges; a range's merge and lookups) are part of the
contract too.  They take host or backend arrays and give host arrays: what
they make crosses workers or indexes host records.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = [
    "BACKENDS",
    "PHASE_FUNCTIONS",
    "RANGED_FUNCTIONS",
    "ATTRIBUTES",
    "OPTIONAL_FUNCTIONS",
    "CAPABILITIES",
    "Backend",
    "Scratch",
    "Candidates",
    "Chunk",
    "SolveRound",
    "Solution",
    "RoundTrace",
    "LOW32",
    "packing_for",
    "slice_by_phases",
    "to_host",
    "take_to_host",
    "xp_of",
]

#: The backends, by the names :func:`mst_dist.kernels.backend` takes.
BACKENDS = ("reference", "cpu", "gpu")

#: The functions of rounds whose per-vertex state is cut into ranges (the partitioned and spread runs), every
#: backend's too: a chunk's edges in the strict order, its local ids, its cheapest edges and lightest parallel
#: edges; a range's merge of candidates and its lookups (see :mod:`mst_dist.kernels.vertex_ranges`, their glue).
RANGED_FUNCTIONS = (
    "sort_edges", "rank", "local_ids", "first_touch", "cheapest_sorted", "lightest_parallel", "cheapest_rows",
    "positions", "sparse_values",
)

#: The functions every backend exposes, the ranged ones included (see :class:`Backend` for each one's contract).
PHASE_FUNCTIONS = (
    "adopt", "prepare", "prepare_many", "concat", "map", "merge", "contract", "filter_nodes",
    "filter_edges", "split_light", "slice_edges", "sample", "solve_local", "compose_maps", "labels", "forest_ids",
    "to_device", "synchronize", "first_invalid_edge", "take_rows", "device_memory", "contract_interior",
) + RANGED_FUNCTIONS

#: The attributes every backend has: what it is and what it can do (see :class:`Backend`).
ATTRIBUTES = ("name", "xp", "kind", "supports_raw_solve", "scratch", "max_chunk_edges", "device_bytes_per_edge")

#: Functions a backend may lack, each with the attribute that says whether it has it.  A caller
#: tests the flag, never the function's presence.
OPTIONAL_FUNCTIONS = {"solve_raw": "supports_raw_solve"}

#: Every name of the contract: what a caller of a backend may use, and nothing else.
CAPABILITIES = frozenset(PHASE_FUNCTIONS) | frozenset(ATTRIBUTES) | frozenset(OPTIONAL_FUNCTIONS)

#: Low half of a packed key: the edge's row in its chunk's table.
LOW32 = np.uint64(0xFFFFFFFF)


# ---------------------------------------------------------------------------
# arrays on the host and on a device
# ---------------------------------------------------------------------------

def xp_of(a):
    """The array module of ``a``: numpy for host arrays, cupy for device ones."""
    if isinstance(a, np.ndarray):
        return np
    import cupy

    return cupy.get_array_module(a)


def to_host(a):
    """``a`` as a NumPy array: device arrays are copied, host arrays returned as they are."""
    if a is None or isinstance(a, np.ndarray):
        return a
    if hasattr(a, "get"):
        return a.get()
    return np.asarray(a)


def take_to_host(a, idx):
    """``a[idx]`` as a host array; a device array is gathered on its device first."""
    if isinstance(a, np.ndarray):
        return a[idx]
    if hasattr(a, "__cuda_array_interface__"):
        xp = xp_of(a)
        return to_host(a[xp.asarray(idx)])
    return np.asarray(a)[idx]


def packing_for(dtype):
    """How weights of ``dtype`` become the high 32 bits of a packed key.

    ``"f32"`` (float16/32: IEEE bits, sign-flipped), ``"i32"`` (int8..int32:
    two's complement, sign bit flipped), ``"u32"`` (uint8..uint32, bool: the
    value), ``"rank"`` (64-bit weights, which do not fit: the dense rank of
    the weight in its chunk).  Every chunk records it, so any backend can
    pack a chunk another one prepared.
    """
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return "f32" if dt.itemsize <= 4 else "rank"
    if dt.kind == "i":
        return "i32" if dt.itemsize <= 4 else "rank"
    if dt.kind in "ub":
        return "u32" if dt.itemsize <= 4 else "rank"
    raise TypeError(f"weights of dtype {dt} have no order-preserving key")


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------

@dataclass(eq=False)
class Chunk:
    """An edge chunk, in its plain or its packed form, on the host or a device.

    ``u, v``: the current component ids of the chunk's live edges (int32 while
    the graph's ids fit, else int64); never equal (no self-loops).

    *Plain form* (``pk is None``): ``key[i]`` and ``eid[i]`` are edge ``i``'s
    weight key (``uint64``) and global id (``int64``).

    *Packed form*: ``pk[i] = (hi << 32) | row`` with ``hi`` a 32-bit
    order-preserving image of the weight (see :func:`packing_for`) and
    ``row`` the edge's row in the chunk's table ``key``, ``eid`` (as the
    chunk was prepared, ids ascending, so ``pk`` alone orders the chunk's
    edges strictly).  Filtering compacts ``u, v, pk`` and leaves the table.

    ``packing``: how this chunk's weights pack (set by ``prepare`` in every
    backend).  ``h2d``: bytes copied to a device to make this chunk and not
    yet reported by a round.  Pickled (sent to another worker, spilled), a
    chunk travels as host arrays.
    """

    u: Any
    v: Any
    key: Any
    eid: Any
    pk: Any = None
    packing: str = "rank"
    h2d: int = 0

    @property
    def xp(self):
        """The array module the chunk's arrays live in."""
        return xp_of(self.u)

    @property
    def packed(self):
        """Whether the chunk is in the packed form."""
        return self.pk is not None

    def __len__(self):
        return int(self.u.shape[0])

    @property
    def nbytes(self):
        """Bytes of the chunk's arrays."""
        return int(sum(a.nbytes for a in (self.u, self.v, self.key, self.eid, self.pk) if a is not None))

    def edges(self):
        """``(u, v, key, eid)`` of the live edges, on the chunk's own device (gathered when packed)."""
        if self.pk is None:
            return self.u, self.v, self.key, self.eid
        row = (self.pk & LOW32).astype(self.xp.int64)
        return self.u, self.v, self.key[row], self.eid[row]

    def to_host(self):
        """The same chunk (same form) with host arrays."""
        if self.xp is np:
            return self
        return Chunk(*(to_host(a) for a in (self.u, self.v, self.key, self.eid, self.pk)),
                     packing=self.packing, h2d=0)

    def __reduce__(self):
        return (Chunk, (*(to_host(a) for a in (self.u, self.v, self.key, self.eid, self.pk)),
                        self.packing, 0))

    def __repr__(self):
        form = "packed" if self.packed else "plain"
        return f"Chunk({len(self)} edges, {form}, packing={self.packing!r}, on {self.xp.__name__})"


@dataclass(eq=False)
class Candidates:
    """Cheapest leaving edge of each component (role: map's output, merge's input and output).

    Four host arrays of one length, sorted by ``comp`` with unique ``comp``:
    the component (int64), its cheapest leaving edge's key (uint64) and id
    (int64), and the component at that edge's other end (int64).  ``d2h``:
    bytes copied from a device to make the record (0 on the host).
    """

    comp: np.ndarray
    key: np.ndarray
    eid: np.ndarray
    other: np.ndarray
    d2h: int = 0

    def __len__(self):
        return int(self.comp.shape[0])

    @property
    def nbytes(self):
        return int(self.comp.nbytes + self.key.nbytes + self.eid.nbytes + self.other.nbytes)

    def arrays(self):
        """``(comp, key, eid, other)``."""
        return self.comp, self.key, self.eid, self.other

    @classmethod
    def empty(cls):
        z = np.zeros(0, np.int64)
        return cls(z, np.zeros(0, np.uint64), z.copy(), z.copy())


@dataclass
class SolveRound:
    """One round (or one filter pass) of the single-task solve.

    ``light``: a round of a light-edge pass (components without an edge
    stay live); ``filter_pass``: not a round but the relabelling of edges
    between passes (only ``filter-edges`` time, no forest edges).
    ``phase_seconds`` maps phases (:class:`mst_dist.phases.Phase`: ``map``,
    ``contract``, ``filter-edges``, ``filter-nodes``) to kernel seconds.
    """

    components_before: int
    components_after: int
    edges_before: int
    edges_after: int
    forest_edges: int
    phase_seconds: dict = field(default_factory=dict)
    light: bool = False
    filter_pass: bool = False


class RoundTrace(list):
    """The :class:`SolveRound` records of a single-task solve, as the solve appends them.

    ``on_round(record)``, when given, hears of each record the moment it is
    appended (a caller's live progress); the records themselves are the
    same either way.  It pickles as a plain list.
    """

    def __init__(self, on_round=None):
        super().__init__()
        self.on_round = on_round

    def append(self, record):
        super().append(record)
        if self.on_round is not None:
            self.on_round(record)

    def __reduce__(self):
        return list, (list(self),)


@dataclass(eq=False)
class Solution:
    """What the single-task solve found.

    ``M`` maps every input component to ``-(F + 1)`` (all finish),
    ``F >= finished_offset`` (int32 where every ``F`` fits, else int64: a
    backend may give either); ``chosen``: the forest's edge ids (any order);
    ``n_finished``: how many final components; ``rounds``: the trace;
    ``d2h``: bytes copied from a device to return ``M`` and ``chosen``.
    """

    M: np.ndarray
    chosen: np.ndarray
    n_finished: int
    rounds: list = field(default_factory=list)
    d2h: int = 0


# ---------------------------------------------------------------------------
# the phase functions
# ---------------------------------------------------------------------------

class Scratch(Protocol):
    """A backend's reusable scratch memory (the CPU's arena), as the engine sizes and frees it.

    The kernels take buffers from it; the engine, which knows each worker's
    memory limit, caps what it may keep between calls and releases it after
    a run.
    """

    #: How many buffers it has handed out so far (a caller compares two counts: used in between?).
    takes: int

    def default_limit(self) -> int:
        """Bytes it keeps by default (without :meth:`set_limit`)."""

    def set_limit(self, limit) -> None:
        """Keep at most ``limit`` bytes between calls (``None``: the default)."""

    def release(self) -> int:
        """Forget every kept buffer; returns the bytes released."""


class Backend(Protocol):
    """The functions every backend exposes (a module or an object with these attributes).

    ``name`` is the backend's name, ``xp`` the array module its chunks live
    in.  Arrays given to a function may be host arrays or arrays of ``xp``;
    records come back on the host (see the module doc).

    Besides the functions, every backend has the attributes of
    :data:`ATTRIBUTES`: what it is (``name``, ``xp``, ``kind``), what it can
    do (``supports_raw_solve``, which says whether :meth:`solve_raw` is
    there) and what it needs (``scratch``, ``max_chunk_edges``,
    ``device_bytes_per_edge``).  Callers use these names and no others
    (:data:`CAPABILITIES`).
    """

    name: str
    xp: Any
    #: The kind of worker that runs these kernels, as the engine's placement and records name
    #: workers: ``"gpu"`` for the GPU backend (its NumPy stand-in too: it runs the GPU's code),
    #: ``"cpu"`` for the host kernels.
    kind: str
    #: Whether :meth:`solve_raw` is there (the single-task solve straight over raw chunks).
    supports_raw_solve: bool
    #: The backend's :class:`Scratch` memory, or ``None`` where it keeps none.
    scratch: Any
    #: The most edges one chunk may hold (``None``: no limit of the backend's own).
    max_chunk_edges: Any
    #: Device bytes the single-task solve needs per edge (0: the backend works in host memory).
    device_bytes_per_edge: int

    def adopt(self, chunk: Chunk) -> Chunk:
        """Any chunk in this backend's form and memory (copies to a device added to ``h2d``)."""

    def prepare(self, raw, offset: int, n_vertices: int) -> Chunk:
        """A raw chunk ``(src, dst, weight)`` as working edges, self-loops dropped (role: prepare).

        Edge ``i`` of ``raw`` gets the global id ``offset + i``.
        """

    def prepare_many(self, raws, offsets, n_vertices: int) -> Chunk:
        """Several raw chunks prepared into one chunk (the single-task solve's input)."""

    def concat(self, chunks, n_vertices: int) -> Chunk:
        """One chunk holding the edges of several (any form; order of edges unspecified)."""

    def map(self, chunk: Chunk, n_comp: int, M=None) -> tuple[Chunk, Candidates]:
        """Cheapest edge leaving each component the chunk touches (role: map).

        With a round map ``M``, the previous round's filter-edges is fused in:
        endpoints are relabelled by ``M`` and self-loops dropped first.
        Returns the (filtered) chunk and its candidates over ``0..n_comp-1``.
        """

    def merge(self, parts) -> Candidates:
        """Candidate records combined into one cheapest edge per component (role: merge).

        Associative, commutative and idempotent: any tree of merges gives the
        same answer.
        """

    def contract(self, cand: Candidates, n_comp: int, finished_offset: int, finish: bool = True):
        """Hook components along their cheapest edges, pointer-jump to roots, compact (role: contract).

        A mutual pair (both chose the same edge) keeps the smaller id as root,
        so each chosen edge counts once.  Ends with :meth:`filter_nodes`.
        Returns ``(M, chosen_eids, n_next, n_finished)``; ``chosen_eids`` in
        any order.
        """

    def filter_nodes(self, root, has, finished_offset: int, finish: bool = True):
        """Compact the component ids of a contracted round (role: filter-nodes).

        ``root[c]``: the root of component ``c`` after hooking and pointer
        jumping (``root[r] == r`` for a root); ``has[c]``: whether ``c`` had a
        candidate.  Live roots are numbered ``0..n_next-1`` in id order; with
        ``finish``, a root without a candidate is finished: ``-(F + 1)``,
        ``F = finished_offset, ...`` in id order (without ``finish``, a light
        pass that sees more edges later, it stays live).  Every component
        takes its root's number.  Returns ``(M, n_next, n_finished)``.
        """

    def filter_edges(self, chunk: Chunk, M) -> Chunk:
        """Relabel the chunk's endpoints by the round map and drop self-loops (role: filter-edges)."""

    def split_light(self, chunk: Chunk, M, tk, te) -> tuple[Chunk, Chunk]:
        """A pending relabel by ``M`` (or None), then the light edges ``(key, eid) <= (tk, te)``
        apart from the heavy ones (role: filter-edges of a light-edge pass): ``(light, heavy)``."""

    def slice_edges(self, raw, offset: int, n_vertices: int, vmap=None, lo=None, hi=None) -> Chunk:
        """One pass over a raw chunk: its edges in the slice ``lo < (key, eid) <= hi`` of the
        strict order, relabelled by the vertex map ``vmap`` (``None``: the identity), self-loops
        dropped (role: filter-edges of a streaming pass).  A threshold is ``(key, eid)`` or
        ``None`` (no bound).  Edge ``i`` of ``raw`` has the global id ``offset + i``."""

    def sample(self, chunk: Chunk, pos) -> tuple[np.ndarray, np.ndarray]:
        """``(key, eid)`` of the chunk's live edges at host positions ``pos``, on the host."""

    def solve_local(self, chunk: Chunk, n_comp: int, finished_offset: int = 0, *, relabel=None,
                    light_factor: float = 1.5, min_degree: float = 3.0, seed: int = 0,
                    on_round=None) -> Solution:
        """The whole forest of one chunk in this process: rounds until no edge is left.

        ``relabel``: a pending round map applied first (the filter-edges of the
        distributed round before).  ``light_factor``, ``min_degree`` and
        ``seed`` tune how (a light-edge pass on dense graphs), never what:
        the result is the same for any values.  The chunk's arrays may be
        overwritten.  ``on_round``: called with each :class:`SolveRound` as
        the solve records it (see :class:`RoundTrace`).
        """

    def solve_raw(self, raws, offsets, n_vertices: int, *, light_factor: float = 1.5,
                  min_degree: float = 3.0, seed: int = 0, on_round=None) -> tuple[Solution, float]:
        """Optional (``supports_raw_solve``): :meth:`solve_local` straight over raw chunks.

        ``raws``: ``(src, dst, weight)`` chunks, edge ``i`` of chunk ``j``
        having the id ``offsets[j] + i``; no prepared copy of every edge is
        made.  The same forest as :meth:`solve_local` on the prepared chunks.
        Returns ``(solution, prepare_seconds)``.
        """

    def compose_maps(self, maps) -> np.ndarray:
        """One round map for several rounds in a row: ``maps[-1][...maps[0][c]]``, finished ids kept."""

    def labels(self, maps, n_vertices: int) -> tuple[np.ndarray, int]:
        """Final component of every vertex from all the rounds' maps, canonically numbered.

        Components are numbered by their smallest vertex, so labels do not
        depend on how the run went.  Returns ``(labels, n_components)``.
        """

    def forest_ids(self, parts) -> np.ndarray:
        """The chosen edge ids of all rounds, as one ascending int64 array (ids are unique)."""

    def contract_interior(self, lu, lv, interior) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Contract what one chunk decides alone: the forest edges of the vertices no other chunk touches.

        The chunk's edges are in the strict ``(key, eid)`` order; ``lu``/``lv``
        index each end into the chunk's sorted distinct ids, ``interior[x]``
        says whether id ``x`` is touched by no other chunk.  Kruskal over the
        edges, where a union needs one side made only of interior vertices
        (every edge leaving it is in the chunk, so the first met is its
        cheapest: the cut property).  Sets holding a vertex other chunks touch
        never join, so each holds at most one, its representative; a set of
        interior vertices only is represented by its smallest id.  Host
        arrays in and out (role: the local contraction before partitioned
        rounds).  Returns ``(keep, chosen, rep)``: the positions (ascending)
        of the edges left to decide (between two sets of the first kind), of
        the forest edges found, and each local id's representative.
        """

    def to_device(self, a) -> tuple[Any, int]:
        """``a`` in this backend's memory: ``(array, bytes copied)``.

        The host backends copy nothing (0 bytes); the GPU backend's NumPy
        stand-in counts the bytes a device would have had copied.
        """

    def synchronize(self) -> None:
        """Wait for queued device work (for timing); nothing on the host."""

    def device_memory(self) -> Any:
        """Bytes of memory of the device the kernels run on; ``None`` on the host (no device)."""

    def first_invalid_edge(self, src, dst, w, n_vertices) -> tuple[int, str, int]:
        """The first edge with a bad endpoint or weight (role: validation).

        Bad: a negative id, an id ``>= n_vertices`` (when ``n_vertices >= 0``;
        ``None`` checks no bound), a NaN or infinite weight.  ``w`` may be
        ``None``.  Returns ``(index, reason, max_id)``: ``index`` -1 when every
        edge is valid, and then ``max_id`` the largest id (-1 for no edges);
        else ``reason`` says what is wrong (``"negative vertex id"``,
        ``"vertex id out of range"``, ``"weight is NaN"``, ``"weight is
        infinite"``) and ``max_id`` is -1.
        """

    def take_rows(self, src, dst, w, ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(src[ids], dst[ids], w[ids])`` as host arrays (the forest's rows, gathered).

        Any arrays: host or device, any dtypes (a device array is indexed on
        its device, then copied).
        """

    # -- the ranged kernels (RANGED_FUNCTIONS): host or backend arrays in, host arrays out ---------------

    def sort_edges(self, u, v, key, eid) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The edges in the strict ``(key, eid)`` order: every later step that drops edges keeps it, so the
        first edge of a component (or of a pair of components) in this order is its cheapest."""

    def rank(self, values) -> tuple[np.ndarray, np.ndarray]:
        """``(distinct, inverse)``: the sorted distinct integers of ``values`` (their dtype) and each
        value's index among them (int64): ``np.unique(values, return_inverse=True)``."""

    def local_ids(self, u, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, lu, lv)``: the sorted distinct ids (int64) the edges touch, and each end's index into them."""

    def first_touch(self, lu, lv, k) -> np.ndarray:
        """The first edge (position) at each of ``k`` local ids, ``len(lu)`` where none is (int64)."""

    def cheapest_sorted(self, ids, lu, lv, u, v, key, eid) -> tuple[np.ndarray, ...]:
        """The cheapest edge leaving each component the edges touch: ``(comp, key, eid, other)``, rows by
        ``comp`` (``comp`` in ``ids``' dtype, ``other`` int64).

        The edges are in the ``(key, eid)`` order (:meth:`sort_edges`) with
        no self-loop; ``lu``/``lv`` index each end into ``ids`` (sorted,
        distinct), so scratch is sized by the ids touched: a component's
        cheapest edge is the first one touching it.
        """

    def lightest_parallel(self, lu, lv, k) -> np.ndarray:
        """Positions (ascending) of the lightest edge of each unordered pair of ``k`` local ids, edges in the
        ``(key, eid)`` order: the others are the heaviest edge of a cycle of two, in no spanning forest."""

    def cheapest_rows(self, c, key, eid, span) -> np.ndarray:
        """For each of ``span`` slots, the row with the least ``(key, eid)`` among those at it (``c``: each
        row's slot; the first such row on a tie): the rows (int64), in slot order, slots with no row left out
        (role: a range's merge of candidate tables)."""

    def positions(self, table, ids) -> np.ndarray:
        """Where each of ``ids`` goes in ``table`` (both sorted ascending): ``np.searchsorted(table, ids)``."""

    def sparse_values(self, ids, values, lo, fin, asked) -> np.ndarray:
        """The values (int64) of the ids ``asked`` (sorted, distinct, in ``[lo, ...)``) in a map kept over the
        ids present only (``ids`` sorted, ``values`` beside them); an absent id ``x`` is finished, numbered
        ``-(F + 1)`` with ``F = fin +`` its rank among the absent ids from ``lo``."""


def slice_by_phases(kern, raw, offset, n_vertices, vmap=None, lo=None, hi=None):
    """:meth:`Backend.slice_edges` composed of a backend's prepare, light split and filter-edges.

    The reference and GPU backends use it; the CPU backend has it fused
    (:mod:`mst_dist.kernels.cpu.slicing`).
    """
    ch = kern.prepare(raw, offset, n_vertices)
    if hi is not None:
        ch, _ = kern.split_light(ch, None, hi[0], hi[1])
    if lo is not None:
        _, ch = kern.split_light(ch, None, lo[0], lo[1])
    if vmap is not None:
        M, _ = kern.to_device(vmap)
        ch = kern.filter_edges(ch, M)
    return ch

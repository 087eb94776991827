"""Worker-side functions of rounds whose per-vertex state is cut into ranges.

The component ids ``[0, n)`` of a round are cut into ranges
(:func:`~mst_dist.kernels.vertex_ranges.even_bounds`), each owned by one
task; no task holds an array of ``n`` entries.  One round, as the
:class:`~mst_dist.engine.runs.ranges.VertexRanges` store submits it:

map           each chunk: the cheapest edge of each component it touches,
              grouped by the range that owns the component
merge         per range, a tree reduction of the chunks' candidates
contract      per range: hook every component to its cheapest edge's other
              end (mutual pairs found by asking the other end's owner),
              jump pointers by asking the owners of the parents until every
              parent is a root, number the roots (a prefix sum of per-range
              counts) and the finished components, ask the roots' owners for
              every component's new id
filter-edges  each chunk asks the owners of the ids it touches for their new
              ids, relabels, drops self-loops, takes the forest edges of its
              own edge ids, and maps the next round (fused)

Every ask goes through :func:`mst_dist.engine.exchange.exchange`.  The
vertex labels of the original vertices are kept the same way, one range of
vertices per task, and follow each round's map.

The kernels are the contract's ranged functions, reached through the
registry as in every other round: a chunk's work (prepare, its strict
order, local ids, cheapest and lightest parallel edges, its ends' split)
runs the kernels of the run's backend on the worker that holds it
(:func:`~mst_dist.engine.tasks.kernels_for`: a GPU worker runs the GPU's),
the backend travelling with the chunk (:attr:`Block.backend`); a range's
records (merge, lookups, the requests it cuts) are host records, on the
host kernels (:func:`~mst_dist.engine.tasks.host_kernels`), as the merge and
contract of a resident round are.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mst_dist.engine.passes import trim_rows
from mst_dist.engine.tasks import host_kernels, kernels_for
from mst_dist.kernels import vertex_ranges as vr
from mst_dist.kernels.contract import Chunk, to_host

_I32 = np.iinfo(np.int32).max


class Block(NamedTuple):
    """An edge chunk of a partitioned run, with the forest edges of its own edge ids found so far."""

    chunk: Chunk            #: the live edges, ids of the current round's components
    forest: list            #: sorted arrays of forest edge ids in this chunk's edge id range
    backend: str = "cpu"    #: the run's backend: whose kernels the chunk's work runs (:func:`kernels_for`)

    def kernels(self):
        """The kernels this chunk's work runs on this worker: the run's backend's, as the worker decides."""
        return kernels_for(self.backend)


class RangeCandidates(NamedTuple):
    """The merged candidates of one range ``[lo, hi)`` of component ids (sorted by component), and what
    the hooking asks of the other ranges (``asks``, :func:`split_others`), the exchange's split."""

    lo: int
    hi: int
    comp: np.ndarray
    key: np.ndarray
    eid: np.ndarray
    other: np.ndarray
    asks: vr.ValuesSplit | None = None


class RangeParents(NamedTuple):
    """One range's parent pointers: ``parent[c - lo]`` (``-1``: finished, no edge left).

    Sparse where a round's candidates touch few of the range's components (``ids``: those present,
    sorted, each with an edge; ``parent``, ``done`` over them; every other component of ``[lo, hi)`` is
    finished): a streaming pass's first round touches at most two components an edge of its slice,
    however many are live, and no array over the whole range is then made.

    Each jump's output carries the next jump's split (``asks``: the parents not at a root yet, cut by
    range), its forest edges are the chunks' to take (:meth:`routed`) and its counts the client's
    (:meth:`summary`): pieces other tasks pull, no task of their own.
    """

    lo: int
    hi: int
    parent: np.ndarray
    done: np.ndarray | None = None  #: whether ``parent[c - lo]`` is a root (or ``c`` finished)
    ids: np.ndarray | None = None   #: the components present (sparse), else ``None``: all of ``[lo, hi)``
    chosen: np.ndarray | None = None  #: the forest edge ids the range's hooking chose, ascending
    chunk_cuts: np.ndarray | None = None  #: where each chunk's edge ids start in ``chosen``
    asks: vr.ValuesSplit | None = None  #: the next jump's split (:func:`split_parents`)

    def routed(self, j):
        """The forest edge ids of chunk ``j`` the range's hooking chose."""
        return self.chosen[self.chunk_cuts[j]:self.chunk_cuts[j + 1]]

    def summary(self):
        return status(self)

    def pending(self):
        """How many pointers are not at a root yet."""
        return 0 if self.done is None else int(self.done.shape[0] - np.count_nonzero(self.done))

    def comps(self):
        """The component of each pointer: ``ids``, or ``[lo, hi)``."""
        return np.arange(self.lo, self.hi) if self.ids is None else self.ids

    def index(self, p):
        """Where the components ``p`` (sorted, present) are in ``parent``."""
        return p - self.lo if self.ids is None else host_kernels().positions(self.ids, p)


class RangeMap(NamedTuple):
    """One range's round map: ``labels[c - lo]`` the next round's id, or ``-(F + 1)`` finished as ``F``.

    Sparse (``ids``, as :class:`RangeParents`): ``labels`` over ``ids``, and each component not present
    is finished, numbered after ``fin`` in component order among those not present."""

    lo: int
    hi: int
    labels: np.ndarray
    ids: np.ndarray | None = None
    fin: int = 0

    def at(self, p):
        """The next id of each of the components ``p`` (sorted, distinct)."""
        if self.ids is None:
            return self.labels[p - self.lo]
        return host_kernels().sparse_values(self.ids, self.labels, self.lo, self.fin, p)


class VertexLabels(NamedTuple):
    """The labels of the original vertices ``[lo, hi)``: a live component id, or ``-(F + 1)``."""

    lo: int
    hi: int
    labels: np.ndarray


# -- load, map, merge -------------------------------------------------------------------


def _compact(ids, n):
    return ids.astype(np.int32 if n <= _I32 else np.int64, copy=False)


def _sorted_chunk(raw, offset, n_vertices, kern):
    """A raw chunk in plain form on the host, self-loops dropped, edges in the ``(key, eid)`` order
    (prepared and sorted by the kernels ``kern``)."""
    ch = kern.prepare(tuple(to_host(a) for a in raw[:3]), offset, n_vertices)
    u, v, key, eid = kern.sort_edges(*ch.edges())
    return Chunk(_compact(u, n_vertices), _compact(v, n_vertices), key, eid, packing=ch.packing)


def _block(raw, offset, n_vertices, forest, backend):
    return Block(_sorted_chunk(raw, offset, n_vertices, kernels_for(backend)), forest, backend)


def prepare(raw, offset, n_vertices, bounds, backend="cpu"):
    """A raw chunk as a :class:`Block` and its candidates for the ranges of ``bounds`` (``backend``: the
    run's, whose kernels the chunk's work runs from now on)."""
    return map_loaded((_block(raw, offset, n_vertices, [], backend), None), bounds)


def map_loaded(mapped, bounds):
    """A prepared :class:`Block` (first of ``mapped``) and its candidates for the ranges of ``bounds``."""
    block = mapped[0]
    kern = block.kernels()
    u, v, key, eid = block.chunk.edges()
    ids, lu, lv = kern.local_ids(u, v)
    return block, vr.split_candidates(kern.cheapest_sorted(ids, lu, lv, u, v, key, eid), bounds)


def prepare_resumed(raw, offset, n_vertices, forest, backend="cpu"):
    """(a resumed run) A raw chunk as a :class:`Block` over the original vertex ids, holding the forest
    ids saved for it; :func:`filter_block`, given the saved labels, relabels it."""
    return _block(raw, offset, n_vertices, [forest] if forest.shape[0] else [], backend), None


def merge_range_of(r, lo, hi, *mapped):
    """Range ``r`` (``[lo, hi)``)'s candidates of some chunks (``mapped = (block, parts)``, one worker's
    chunks), combined: the first level of the range's merge."""
    return merge(lo, hi, *[m[1][r] for m in mapped])


def merge_ranges_of(bounds, *mapped):
    """Every range's candidates of some chunks (one worker's) combined, range by range: the first level of
    each range's merge, which the range's owner takes its own entry of."""
    return [merge_range_of(r, int(bounds[r]), int(bounds[r + 1]), *mapped) for r in range(bounds.shape[0] - 1)]


def merged_range(lo, hi, *tables, bounds):
    """A range's candidates from every worker's chunks combined: the cheapest edge of each component, with
    what its hooking asks of the ranges of ``bounds``."""
    cand = range_candidates(merge(lo, hi, *tables), lo, hi)
    return cand._replace(asks=split_others(cand, bounds))


def merge(lo, hi, *tables):
    """Candidate tables of the range ``[lo, hi)`` combined: the cheapest edge of each component (role: merge)."""
    return vr.merge_cheapest(host_kernels(), lo, hi, *tables)


def range_candidates(table, lo, hi):
    return RangeCandidates(lo, hi, *table)


# -- contract: hook ---------------------------------------------------------------------


def split_others(cand: RangeCandidates, bounds):
    """Ask for the candidate edge of each component's partner (the other end of its cheapest edge); each
    candidate's index among the ids asked comes with them (``at``)."""
    return vr.cut_values(host_kernels(), cand.other, bounds)


def serve_edge_ids(cand: RangeCandidates, *parts):
    """The candidate edge id of each component asked (every one asked has a candidate)."""
    kern = host_kernels()
    return [cand.eid[kern.positions(cand.comp, p)] for p in parts]


def hook(cand: RangeCandidates, split_out, *answers, bounds, chunk_bounds):
    """Parents and forest edges of one range.

    Component ``c`` hooks to ``other``; a mutual pair (both chose the same
    edge) is one forest edge and its smaller id becomes the root.  A
    component with no candidate has no edge left: finished (``-1``).
    Returns the :class:`RangeParents`, the chosen edge ids with them (cut by
    the chunks' edge id ranges ``chunk_bounds``) and the first jump's split
    (by the ranges of ``bounds``).
    """
    lo, hi = cand.lo, cand.hi
    partner_eid = vr.answers_of(split_out, answers)[split_out.at]
    mutual = partner_eid == cand.eid
    roots = mutual & (cand.comp < cand.other)
    chosen = np.sort(cand.eid[~(mutual & (cand.comp > cand.other))])
    # a root's pointer (to itself) and a finished component's are done; the others are known to point at a
    # root only once its owner says so
    cuts = np.searchsorted(chosen, chunk_bounds)
    if vr.few(cand.comp.shape[0], hi - lo):  # pointers over the components present alone
        parent = np.asarray(cand.other, np.int64).copy()
        parent[roots] = cand.comp[roots]
        rp = RangeParents(lo, hi, parent, roots.copy(), np.asarray(cand.comp, np.int64), chosen, cuts)
    else:
        parent = np.full(hi - lo, -1, np.int64)
        parent[cand.comp - lo] = cand.other
        parent[cand.comp[roots] - lo] = cand.comp[roots]
        done = (parent < 0) | (parent == np.arange(lo, hi))
        rp = RangeParents(lo, hi, parent, done, chosen=chosen, chunk_cuts=cuts)
    return rp._replace(asks=split_parents(rp, bounds))


# -- contract: pointer jumping ------------------------------------------------------------


def split_parents(rp: RangeParents, bounds):
    """Ask for the parent of each parent not known to be a root (``at``: each pointer's index among them)."""
    return vr.cut_values(host_kernels(), rp.parent[~rp.done], bounds)


def serve_parents(rp: RangeParents, *parts):
    """Each asked component's parent, and whether that parent is a root, in one int64: ``2 parent + done``."""
    out = []
    for p in parts:
        i = rp.index(p)
        out.append(2 * rp.parent[i] + rp.done[i])
    return out


def jump(rp: RangeParents, split_out, *answers, bounds):
    """``parent <- parent[parent]`` over the pointers not at a root yet; a pointer is then at a root where
    the parent's was.  Pointer jumping ends when every pointer is: no last exchange that moves nothing.
    The next jump's split (by the ranges of ``bounds``) comes with the new parents."""
    got = vr.answers_of(split_out, answers)
    todo = np.flatnonzero(~rp.done)
    at = got[split_out.at]
    new, done = rp.parent.copy(), rp.done.copy()
    new[todo] = at >> 1
    done[todo] = (at & 1).astype(bool)
    out = rp._replace(parent=new, done=done)
    return out._replace(asks=split_parents(out, bounds))


def status(rp: RangeParents):
    """``(pending, roots, finished, forest edges)`` of one range after a jump; the counts of
    :func:`counts` and the forest edges its hooking chose once no pointer of the range is pending
    (zeros before: they are read only after the last jump)."""
    pending = rp.pending()
    if pending:
        return pending, 0, 0, 0
    return (0, *counts(rp), 0 if rp.chosen is None else int(rp.chosen.shape[0]))


def summaries(*each):
    """Every range's :func:`status`, pulled by one task for the client."""
    return list(each)


# -- contract: numbering (filter-nodes) ---------------------------------------------------


def counts(rp: RangeParents):
    """``(roots, finished)`` of one range."""
    absent = 0 if rp.ids is None else rp.hi - rp.lo - rp.ids.shape[0]
    return int(np.count_nonzero(rp.parent == rp.comps())), int(np.count_nonzero(rp.parent < 0)) + absent


def number(rp: RangeParents, root_offset, finished_offset):
    """Roots numbered from ``root_offset``, finished components from ``finished_offset`` (as ``-(F + 1)``).

    Other components keep their root (``>= 0``) for :func:`relabel` to ask.
    Returns the :class:`RangeMap` of the roots and finished ones (the parents
    stay a task output of their own: each output holds one array of the range).
    """
    is_root = rp.parent == rp.comps()
    lab = np.zeros(rp.parent.shape[0], np.int64)
    lab[is_root] = root_offset + np.arange(np.count_nonzero(is_root))
    if rp.ids is not None:  # sparse: every component present has an edge, the absent ones are the finished
        return RangeMap(rp.lo, rp.hi, lab, rp.ids, finished_offset)
    fin = rp.parent < 0
    lab[fin] = -(finished_offset + np.arange(np.count_nonzero(fin)) + 1)
    return RangeMap(rp.lo, rp.hi, lab)


def split_roots(rp: RangeParents, bounds):
    """Ask the owners of the roots of the components that are not roots for the roots' new ids (``at``:
    each such component's root's index among them, in component order)."""
    return vr.cut_values(host_kernels(), rp.parent[(rp.parent >= 0) & (rp.parent != rp.comps())], bounds)


def relabel(rp: RangeParents, split_out, *answers, numbered: RangeMap):
    """The range's round map: every component's new id (its root's), or ``-(F + 1)`` finished."""
    m = numbered
    new = vr.answers_of(split_out, answers)
    lab = m.labels.copy()
    other = (rp.parent >= 0) & (rp.parent != rp.comps())
    lab[other] = new[split_out.at]
    return m._replace(labels=lab)


class RootsNumbered(NamedTuple):
    """A range's roots and finished components numbered (:func:`number`), with what the range asks the
    owners of its other components' roots (:func:`split_roots`): the relabel exchange's split, whose
    owners these are too."""

    map: RangeMap
    asks: vr.ValuesSplit


def number_and_ask(rp: RangeParents, root_offset, finished_offset, bounds):
    """:func:`number` and :func:`split_roots` of one range, in one task."""
    return RootsNumbered(number(rp, root_offset, finished_offset), split_roots(rp, bounds))


def serve_numbered(nb: RootsNumbered, *parts):
    """The new id of each root asked (:func:`serve_new_ids` of the numbered map)."""
    return serve_new_ids(nb.map, *parts)


def relabel_numbered(nb: RootsNumbered, split_out, *answers, parents: RangeParents):
    """:func:`relabel` of a range from its :class:`RootsNumbered` and the roots' new ids."""
    return relabel(parents, split_out, *answers, numbered=nb.map)


# -- filter-edges (and the next round's map, fused) ---------------------------------------


def split_ends(mapped, bounds):
    """A chunk asks for the new ids of every component it touches (an
    :class:`~mst_dist.kernels.vertex_ranges.EndsSplit`: with each end's index, for the answers)."""
    block = mapped[0]
    u, v, _, _ = block.chunk.edges()
    return vr.cut_ends(block.kernels(), u, v, bounds)


def serve_map(m, *parts):
    """The value of each id asked of a :class:`RangeMap` or :class:`VertexLabels`."""
    if isinstance(m, RangeMap):
        return [m.at(p) for p in parts]
    return [m.labels[p - m.lo] for p in parts]


#: the roots' new ids, asked of their owners' numbered maps
serve_new_ids = serve_map


def filter_block(mapped, split_out, *answers, n_next, next_bounds, items=()):
    """Relabel a chunk by the round map, drop self-loops and all but the lightest of parallel edges, keep
    its forest edges, map the next round.

    ``items``: this chunk's forest edge ids of the round, one array per
    range (each range's :meth:`RangeParents.routed`, taken by the exchange).  The
    edges stay in the ``(key, eid)`` order.  Returns ``(Block, candidate
    parts for next_bounds)``, as :func:`prepare` does.
    """
    chosen_parts = list(items)
    block = mapped[0]
    kern = block.kernels()
    new = vr.answers_of(split_out, answers)  # the new id of each of the split's ids
    _, _, key, eid = block.chunk.edges()
    pu, pv = split_out.lu, split_out.lv  # each end's index into the split's ids, from its one sort
    # the next round's ids touched here, sorted, and each old id's index among them
    nids, at = kern.rank(new)
    lu, lv = at[pu], at[pv]
    keep = np.flatnonzero(lu != lv)  # a finished component has no edge: every id here is live
    lu, lv = lu[keep], lv[keep]
    if keep.shape[0] > 2 * nids.shape[0]:  # many edges per component: parallel ones are likely
        lightest = kern.lightest_parallel(lu, lv, nids.shape[0])
        keep, lu, lv = keep[lightest], lu[lightest], lv[lightest]
    nu, nv, key, eid = nids[lu], nids[lv], key[keep], eid[keep]
    chunk = Chunk(_compact(nu, n_next), _compact(nv, n_next), key, eid, packing=block.chunk.packing)
    forest = list(block.forest) + [p for p in chosen_parts if p.shape[0]]
    parts = None
    if next_bounds is not None:
        parts = vr.split_candidates(kern.cheapest_sorted(nids, lu, lv, nu, nv, key, eid), next_bounds)
    return Block(chunk, forest, block.backend), parts


def route_chosen(chosen, chunk_bounds):
    """A range's forest edge ids cut by the chunks' edge id ranges."""
    return vr.split_by_owner(chosen, chunk_bounds)[1]


def edges_in(mapped):
    return len(mapped[0].chunk)


def chunk_of(mapped):
    return mapped[0].chunk


def forest_of(mapped, *more):
    """A chunk's forest edge ids so far (and ``more`` of them), ascending."""
    parts = [p for p in (*mapped[0].forest, *more) if p.shape[0]]
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


# -- local contraction first: what a chunk decides alone, before any round --------------------


class LocalPairs(NamedTuple):
    """The vertices a chunk contracted into another, sorted, cut by the ranges of vertices owning them."""

    vertex: np.ndarray
    rep: np.ndarray
    cuts: np.ndarray

    def part(self, r):
        a, b = self.cuts[r], self.cuts[r + 1]
        return self.vertex[a:b], self.rep[a:b]


def prepare_local(raw, offset, n_vertices, backend="cpu"):
    """A raw chunk as a :class:`Block` over the original vertex ids (the requester of the touch exchange)."""
    return _block(raw, offset, n_vertices, [], backend), None


def serve_touch(vl: VertexLabels, *parts):
    """For each vertex asked, whether the chunk asking is the only one touching it (each asks an id once)."""
    count = np.zeros(vl.hi - vl.lo, np.int32)
    for p in parts:
        count[p - vl.lo] += 1
    return [count[p - vl.lo] == 1 for p in parts]


def split_sampled(mapped, bounds, step):
    """A chunk's vertices that are multiples of ``step`` (a sample, to estimate how many are interior)."""
    u, v, _, _ = mapped[0].chunk.edges()
    ids = vr.distinct(np.concatenate([u, v]))
    return vr.cut_sorted(ids[ids % step == 0], bounds)


def count_sampled_interior(mapped, split_out, *answers):
    """``(interior, edges)``: how many of the sampled vertices asked about (:func:`split_sampled`) only this
    chunk touches, and its edges (the round's count, taken with the probe)."""
    return int(np.count_nonzero(vr.answers_of(split_out, answers, dtype=bool))), len(mapped[0].chunk)


def interior_of(mapped, split_out, *answers):
    """``(Block, split, interior)``: a chunk, its sorted distinct ids with each end's index into them (the
    :class:`~mst_dist.kernels.vertex_ranges.EndsSplit`), and which of the ids no other chunk touches."""
    return mapped[0], split_out, vr.answers_of(split_out, answers, dtype=bool)


def interior_vertices(touched):
    """How many of a chunk's vertices only it touches (of :func:`interior_of`'s answer)."""
    return int(np.count_nonzero(touched[2]))


def contract_block(touched, n_vertices, bounds):
    """Contract a chunk's interior vertices (see the CPU kernels' ``contract_interior``).

    The forest edges found join the block's forest; the edges left are the
    cut edges, their ends replaced by their representatives (vertices other
    chunks touch, so no other chunk changes); the vertices contracted into
    another are returned with their representatives, cut by the ranges of
    vertices of ``bounds``.  Returns ``(Block, LocalPairs)``.
    """
    block, ends, interior = touched
    ids, lu, lv = ends.ids, ends.lu, ends.lv
    _, _, key, eid = block.chunk.edges()
    keep, chosen, rep = host_kernels().contract_interior(lu, lv, interior)
    nu, nv = ids[rep[lu[keep]]], ids[rep[lv[keep]]]
    chunk = Chunk(_compact(nu, n_vertices), _compact(nv, n_vertices), key[keep], eid[keep],
                  packing=block.chunk.packing)
    forest = [np.sort(eid[chosen])] if chosen.shape[0] else []
    moved = np.flatnonzero(rep != np.arange(ids.shape[0]))
    vertex = ids[moved]
    return Block(chunk, forest, block.backend), LocalPairs(vertex, ids[rep[moved]], np.searchsorted(vertex, bounds))


def local_pairs_of(r, *contracted):
    """Range ``r``'s contracted vertices of some chunks (one worker's), with their representatives."""
    parts = [m[1].part(r) for m in contracted]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def local_pairs_all(R, *contracted):
    """Each of the ``R`` ranges' contracted vertices of some chunks (one worker's), with their representatives."""
    return [local_pairs_of(r, *contracted) for r in range(R)]


def local_parents(lo, hi, *pairs):
    """The parents of the vertices ``[lo, hi)`` after local contraction: a contracted vertex's is its
    representative (a root: it was contracted into nothing), every other vertex is a root."""
    parent = np.arange(lo, hi, dtype=np.int64)
    for vertex, rep in pairs:
        parent[vertex - lo] = rep
    return RangeParents(lo, hi, parent)


def forest_count(mapped):
    return sum(int(p.shape[0]) for p in mapped[0].forest)


# -- the labels of the original vertices ---------------------------------------------------


def first_labels(lo, hi):
    return VertexLabels(lo, hi, np.arange(lo, hi, dtype=np.int64))


def split_live(vl: VertexLabels | RangeMap, bounds):
    """Ask the owners of the live components for their next ids (of a range's labels, or of a round map's
    values)."""
    return vr.cut_values(host_kernels(), vl.labels[vl.labels >= 0], bounds)


def follow(vl: VertexLabels | RangeMap, split_out, *answers):
    """The labels after one more round (finished ones stay); of a round map, the map composed with the
    next round's."""
    new = vr.answers_of(split_out, answers)
    lab = vl.labels.copy()
    lab[lab >= 0] = new[split_out.at]
    return vl._replace(labels=lab)


def base_map(n_vertices, *maps):
    """The base case's round maps composed: one :class:`RangeMap` over its ``[0, n)``."""
    final = host_kernels().compose_maps([m[0] for m in maps]) if maps else np.zeros(0, np.int64)
    return RangeMap(0, int(final.shape[0]), final)


# -- a partitioned streaming run: each pass relabelled by the owners of the vertex map ----------


def slice_block(kept, backend="cpu"):
    """A pass's kept chunk (the slice's edges over the original vertex ids, self-loops dropped) as a
    :class:`Block` in the ``(key, eid)`` order: :func:`filter_block`, given the owners' labels of its
    ends, relabels it and drops the edges inside a component."""
    u, v, key, eid = kernels_for(backend).sort_edges(*kept.edges())
    return Block(Chunk(u, v, key, eid, packing=kept.packing), [], backend), None


def joining_rows(rows, mapped):
    """A pass's kept rows of only the edges its relabel (``mapped``, of :func:`filter_block`) kept: those
    that join two components (the forest's edges are among them)."""
    return trim_rows(rows, np.sort(mapped[0].chunk.eid))


def flip(vl: VertexLabels):
    """Each ``c`` as ``-(c + 1)`` and back: the components a pass finished (``-(F + 1)``) are the next
    pass's live ids ``F``."""
    return VertexLabels(vl.lo, vl.hi, vr.narrow(-vl.labels - 1))


def max_finished(vl: VertexLabels):
    """The largest finished id ``F`` of a range of vertices whose labels are all ``-(F + 1)`` (``-1``: none)."""
    return int((-vl.labels.astype(np.int64) - 1).max()) if vl.labels.shape[0] else -1


def labels_at(vl: VertexLabels, ids):
    """The labels of the vertices ``ids`` (sorted, in ``[lo, hi)``), as int64."""
    return vl.labels[ids - vl.lo].astype(np.int64)


# -- canonical numbering: a component is numbered by its smallest vertex --------------------


def split_finished(vl: VertexLabels, bounds):
    """Tell the owners of the finished ids which of them this range of vertices holds."""
    return vr.cut_values(host_kernels(), -vl.labels - 1, bounds)


def serve_firsts(_owner, *parts):
    """For each id sent, whether its sender is the first range (smallest vertices) that sent it."""
    if not parts:
        return []
    ids = np.concatenate(parts)
    sender = np.repeat(np.arange(len(parts)), [p.shape[0] for p in parts])
    pos = np.arange(ids.shape[0])
    order = np.lexsort((sender, ids))
    first = np.zeros(ids.shape[0], bool)
    if ids.shape[0]:
        head = np.ones(ids.shape[0], bool)
        head[1:] = ids[order][1:] != ids[order][:-1]
        first[pos[order][head]] = True
    cuts = np.cumsum([0] + [p.shape[0] for p in parts])
    return [first[cuts[j]:cuts[j + 1]] for j in range(len(parts))]


def firsts(vl: VertexLabels, split_out, *answers):
    """``(labels, finished ids first seen here in vertex order)``: those this range numbers."""
    first = vr.answers_of(split_out, answers, dtype=bool)
    # where each id is first seen, over this range's vertices
    at = host_kernels().first_touch(split_out.at, split_out.at, split_out.ids.shape[0])[first]
    mine = split_out.ids[first].astype(np.int64)
    return vl, mine[np.argsort(at, kind="stable")]


def count_firsts(f):
    return int(f[1].shape[0])


class Numbered(NamedTuple):
    """The labels a range of vertices gives its first-seen finished ids, sorted by id and cut by owner."""

    ids: np.ndarray
    labels: np.ndarray
    cuts: np.ndarray

    def part(self, r):
        """Owner ``r``'s ``(ids, labels)``."""
        return self.ids[self.cuts[r]:self.cuts[r + 1]], self.labels[self.cuts[r]:self.cuts[r + 1]]


def numbered_parts(f, offset, bounds):
    """The labels this range gives its first-seen finished ids, cut by the owners of the ids.

    One record of whole arrays (not a list of parts): what Dask measures
    of it is what it holds.
    """
    mine = f[1]
    lab = offset + np.arange(mine.shape[0], dtype=np.int64)
    order = np.argsort(mine, kind="stable")
    mine, lab = mine[order], lab[order]
    return Numbered(mine, lab, np.searchsorted(mine, bounds))


def keep_labels(lo, hi, *parts):
    """An owner of finished ids ``[lo, hi)`` keeps the label each got (from exactly one range)."""
    table = np.full(hi - lo, -1, np.int64)
    for ids, labs in parts:
        table[ids - lo] = labs
    return RangeMap(lo, hi, table)


def split_fids(f, bounds):
    return split_finished(f[0], bounds)


def final_labels(f, split_out, *answers):
    """The canonical labels of this range of vertices."""
    vl = f[0]
    lab = vr.answers_of(split_out, answers)
    return VertexLabels(vl.lo, vl.hi, lab[split_out.at])


def labels_array(vl: VertexLabels):
    return vl.labels


class CanonicalLabels(NamedTuple):
    """Every vertex's canonical label, made by the base case where it took the original vertex ids, and the
    ranges of vertices whose owners take their part (:meth:`part`)."""

    labels: np.ndarray
    bounds: np.ndarray
    count: int

    def part(self, r):
        lo, hi = int(self.bounds[r]), int(self.bounds[r + 1])
        return VertexLabels(lo, hi, self.labels[lo:hi])


def canonical_base(n_vertices, bounds, *maps):
    """(a base case over the original vertex ids, no round before it) The labels numbered by each component's
    smallest vertex straight from the base case's round maps, as a one-worker run numbers them: no
    exchange of finished ids is needed."""
    if maps:
        labels, count = host_kernels().labels([m[0] for m in maps], n_vertices)
    else:  # no edge: every vertex alone
        labels, count = np.arange(n_vertices, dtype=np.int64), n_vertices
    return CanonicalLabels(labels, np.asarray(bounds, np.int64), int(count))


def canonical_count(whole: CanonicalLabels):
    return whole.count


def taken(piece):
    """A piece pulled from another worker, as it came."""
    return piece


def write_labels_range(path, vl: VertexLabels):
    """Write one range of vertices' labels as a part file (``vertex``, ``component``); ``path`` may be a URL."""
    import pyarrow as pa

    from mst_dist.io.writers import _write_table

    _write_table(pa.table({"vertex": np.arange(vl.lo, vl.hi, dtype=np.int64),
                           "component": np.asarray(vl.labels, np.int64)}), path)
    return vl.hi - vl.lo

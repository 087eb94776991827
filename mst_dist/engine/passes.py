"""Worker-side functions of a streaming run: passes over the edge source.

A streaming run never keeps every edge: each pass loads every chunk from its
source (a generator's seeded blocks, a file's byte range or row group, or the
caller's arrays), keeps the edges of one slice of the strict ``(weight, edge
id)`` order that still join two components, and drops the chunk.  The kept
edges of a pass are solved as a graph of their own; all edges of earlier
slices come before them in the order, so the forest of the whole graph is
the union of the passes' forests (Kruskal's argument, pass by pass), and a
vertex's component after the last pass is its component in the graph.

- :func:`sample_chunk` -- a uniform sample of a chunk's edges (the
  thresholds between passes are read off it);
- :func:`survivors` -- which sampled edges of a slice still join two
  components (how big the next slice may be);
- :func:`pass_chunk` -- one chunk of one pass: load, keep the slice, relabel,
  drop self-loops (one fused kernel: ``slice_edges``); with the kept edges' rows for the output;
- :func:`compose` -- the vertex -> component map after a pass's solve;
- :func:`trim_rows`, :func:`forest_rows`, :func:`vertex_labels` -- the end.

A threshold is ``(key, eid)`` or ``None`` (below everything for the lower
end, above everything for the upper end); a slice is ``lo < (key, eid) <= hi``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dask.sizeof import sizeof

from mst_dist.engine.records import SampleChunk
from mst_dist.engine.tasks import host_kernels, kernels_for, load
from mst_dist.kernels.contract import take_to_host, to_host


@dataclass
class PassChunkStats:
    """What one chunk of a pass read and kept."""

    bytes_read: int     #: bytes of the raw rows loaded
    edges_in: int       #: raw rows
    edges_kept: int     #: edges of the slice that still join two components
    seconds: float


class KeptRows:
    """The rows ``(edge_id, src, dst, weight)`` of a pass's kept edges, ids ascending.

    Vertex ids are held as int32 while they fit and given back in the
    source's dtype: indexing (``rows[1]``) and iterating read like the
    tuple ``(edge_id, src, dst, weight)`` the writers take.

    Built by :meth:`from_keys`, the rows hold no weights: a weight is given
    back from its order-preserving key (exactly; the few ``-0.0`` weights,
    whose key is that of ``+0.0``, are remembered by edge id), and the
    arrays may be the kept chunk's own (a first pass keeps the source's ids),
    so the rows of a pass cost at most 8 bytes an edge beyond its chunk.
    """

    def __init__(self, eid, src, dst, weight, n_vertices):
        self.id_dtype = src.dtype
        if n_vertices <= np.iinfo(np.int32).max:
            src, dst = src.astype(np.int32), dst.astype(np.int32)
        self.eid, self.src, self.dst = eid, src, dst
        self._weight, self.key, self.wdtype, self.negzero = weight, None, weight.dtype, None

    @classmethod
    def from_keys(cls, eid, src, dst, key, wdtype, id_dtype, negzero=None):
        """Rows whose weights are given back from ``key`` (dtype ``wdtype``); ``negzero``: ids of ``-0.0``."""
        out = cls.__new__(cls)
        out.id_dtype, out.eid, out.src, out.dst = np.dtype(id_dtype), eid, src, dst
        out._weight, out.key, out.wdtype = None, key, np.dtype(wdtype)
        out.negzero = negzero if negzero is not None and negzero.shape[0] else None
        return out

    @property
    def weight(self):
        """The weights, in the source's dtype."""
        if self._weight is not None:
            return self._weight
        w = weights_from_keys(self.key, self.wdtype)
        if self.negzero is not None:
            w[np.isin(self.eid, self.negzero)] = -0.0
        return w

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return (self.eid, self.src.astype(self.id_dtype, copy=False),
                self.dst.astype(self.id_dtype, copy=False), self.weight)[i]

    def take(self, pos):
        """The rows at positions ``pos``."""
        out = KeptRows.__new__(KeptRows)
        out.id_dtype, out.wdtype, out.negzero = self.id_dtype, self.wdtype, self.negzero
        out.eid, out.src, out.dst = (a[pos] for a in (self.eid, self.src, self.dst))
        out._weight = None if self._weight is None else self._weight[pos]
        out.key = None if self.key is None else self.key[pos]
        return out

    @property
    def nbytes(self):
        held = (self.eid, self.src, self.dst, self._weight, self.key, self.negzero)
        return int(sum(a.nbytes for a in held if a is not None))


@sizeof.register(KeptRows)
def _sizeof_rows(rows):  # the memory manager counts what they hold
    return rows.nbytes


def _raw(source, start, stop, offset, n_vertices, validate):
    """The chunk's raw rows: from the source (lineage), or the rows themselves (scattered)."""
    if isinstance(source, tuple):
        return source
    return load(source, start, stop, offset, n_vertices, validate)


def _nbytes(raw):
    return int(sum(getattr(a, "nbytes", 0) for a in raw[:3]))


def sample_chunk(source, start, stop, offset, n_vertices, validate, rate, seed, window):
    """A sample of a window of a chunk: a :class:`~mst_dist.engine.records.SampleChunk`.

    ``window = (lo, hi)``: the rows of the chunk ``[start, stop)`` to read
    (a streaming run samples a few windows, not whole chunks).  ``u, v`` are
    the original vertex ids, so the sample can be relabelled by any later
    vertex map.
    """
    lo, hi = window
    if isinstance(source, tuple):  # the caller's rows, scattered: slice them
        raw = tuple(a[lo - start:hi - start] for a in source[:3])
    else:
        raw = load(source, lo, hi, offset + lo - start, n_vertices, validate)
    offset += lo - start
    kern = host_kernels()
    ch = kern.prepare(tuple(to_host(a) for a in raw[:3]), offset, n_vertices)
    m = len(ch)
    k = min(m, int(np.ceil(m * rate)))
    pos = np.sort(np.random.default_rng(seed).choice(m, k, replace=False)) if k else np.zeros(0, np.int64)
    u, v, key, eid = ch.edges()
    return SampleChunk(u[pos].astype(np.int64), v[pos].astype(np.int64), key[pos], eid[pos], m,
                       int(raw[0].shape[0]), _nbytes(raw))


def in_slice(key, eid, lo, hi):
    """Which edges lie in the slice ``lo < (key, eid) <= hi`` of the strict order."""
    keep = np.ones(key.shape[0], bool)
    if lo is not None:
        tk, te = np.uint64(lo[0]), np.int64(lo[1])
        keep &= (key > tk) | ((key == tk) & (eid > te))
    if hi is not None:
        tk, te = np.uint64(hi[0]), np.int64(hi[1])
        keep &= (key < tk) | ((key == tk) & (eid <= te))
    return keep


def survivors(vmap, u, v, key, eid, lo):
    """``(key, eid)`` of the sampled edges above ``lo`` whose ends are in two components, in order."""
    return survivors_labelled(None if vmap is None else vmap[u], None if vmap is None else vmap[v], key, eid, lo)


def survivors_labelled(cu, cv, key, eid, lo):
    """As :func:`survivors`, given each sampled edge's ends' components ``cu, cv`` (``None``: not joined yet)."""
    keep = in_slice(key, eid, lo, None)
    if cu is not None:
        keep &= cu != cv
    k, e = key[keep], eid[keep]
    order = np.lexsort((e, k))
    return k[order], e[order]


def pass_chunk(source, start, stop, offset, n_vertices, validate, vmap, lo, hi, backend="cpu"):
    """One chunk of a pass: ``(kept chunk, kept rows, PassChunkStats)``.

    The chunk's edges in the slice ``lo < (key, eid) <= hi``, relabelled by
    the vertex map ``vmap`` (vertex -> component; ``None``: the identity),
    self-loops dropped, compact (int32 ids while they fit).  ``kept rows`` are
    ``(eid, src, dst, weight)`` of those edges as the source gave them: the
    forest's rows are looked up there at the end, not in the source again.
    """
    t0 = time.perf_counter()
    raw = _raw(source, start, stop, offset, n_vertices, validate)
    ch = kernels_for(backend).slice_edges(raw, offset, n_vertices, vmap, lo, hi)
    rows = _kept_rows(ch, raw, offset, n_vertices, vmap is None)
    st = PassChunkStats(bytes_read=_nbytes(raw), edges_in=int(raw[0].shape[0]), edges_kept=len(ch),
                        seconds=time.perf_counter() - t0)
    return ch, rows, st


def _kept_rows(ch, raw, offset, n_vertices, original_ids):
    """The rows of a pass's kept chunk ``ch`` (see :class:`KeptRows`), sharing its arrays where it can."""
    u, v, key, eid = (to_host(a) for a in ch.edges())
    if eid.shape[0] > 1 and not (eid[1:] > eid[:-1]).all():  # the CPU kernel keeps raw order; others need not
        order = np.argsort(eid)
        u, v, key, eid = (a[order] for a in (u, v, key, eid))
    id_dtype = np.result_type(raw[0].dtype, raw[1].dtype)
    small = n_vertices <= np.iinfo(np.int32).max
    loc = None
    if original_ids and (u.dtype == np.int32 or not small):
        src, dst = u, v  # a first pass relabels nothing: the kept ids are the source's
    else:
        loc = eid - offset
        src, dst = (take_to_host(a, loc) for a in raw[:2])
        if small:
            src, dst = src.astype(np.int32), dst.astype(np.int32)
    w = raw[2]
    negzero = None
    if w.dtype.kind == "f":
        wk = take_to_host(w, eid - offset if loc is None else loc)
        negzero = eid[(wk == 0) & np.signbit(wk)]
    return KeptRows.from_keys(eid, src, dst, key, w.dtype, id_dtype, negzero)


def weights_from_keys(key, dtype):
    """The weights of dtype ``dtype`` whose order-preserving keys are ``key`` (``-0.0`` comes back as ``+0.0``)."""
    dtype = np.dtype(dtype)
    key = np.asarray(key, np.uint64)
    sign = np.uint64(1 << 63)
    if dtype.kind == "f":
        bits = np.where(key & sign, key ^ sign, ~key)
        return bits.view(np.float64).astype(dtype)
    if dtype.kind == "i":
        return (key ^ sign).view(np.int64).astype(dtype)
    if dtype.kind == "b":
        return key != 0
    return key.astype(dtype)


def compose(vmap, *maps):
    """The vertex -> component map after a pass: ``(vmap', components)``.

    ``maps`` are the round maps of the pass's solve (each ``(M, n)``), which
    finished every component: component ``c`` of the pass ends as
    ``-(F + 1)``; ``F`` becomes its id for the next pass.
    """
    if maps:
        final = host_kernels().compose_maps([m[0] for m in maps])
        live = -(final + 1)
    else:  # a pass with no component: nothing changes
        live = None
    if vmap is None:
        out = live
    elif live is None:
        out = vmap
    else:
        out = live[vmap]
    n = int(out.max()) + 1 if out is not None and out.shape[0] else 0
    if out is not None and n <= np.iinfo(np.int32).max:
        out = out.astype(np.int32, copy=False)  # half the memory, and a pass's relabelling reads less
    return out, n


def trim_rows(rows, chosen):
    """Only the rows of the edges the pass's solve chose (``chosen``: their ids, ascending)."""
    eid = rows.eid
    if not eid.shape[0]:
        return rows
    c = chosen[np.searchsorted(chosen, eid[0]):np.searchsorted(chosen, eid[-1], side="right")]
    pos = np.searchsorted(eid, c)
    pos = pos[eid[np.minimum(pos, eid.shape[0] - 1)] == c]
    return rows.take(pos)


def joined_rows(*parts):
    """The rows ``(edge_id, src, dst, weight)`` of the passes' :class:`KeptRows` ``parts`` as one, ids ascending."""
    if not parts:
        z = np.zeros(0, np.int64)
        return z, z.copy(), z.copy(), np.zeros(0)
    eid = np.concatenate([p[0] for p in parts])
    order = np.argsort(eid, kind="stable")
    return (eid[order], *(np.concatenate([p[i] for p in parts])[order] for i in (1, 2, 3)))


def forest_rows(edge_ids, *parts):
    """``(src, dst, weight)`` of the forest (ascending ``edge_ids``) from the passes' :class:`KeptRows`."""
    eid, src, dst, w = joined_rows(*parts)
    pos = np.searchsorted(eid, edge_ids)
    return src[pos], dst[pos], w[pos]


def vertex_labels(vmap, n_vertices):
    """Canonical component labels (numbered by smallest vertex) and their count."""
    if vmap is None:
        vmap = np.arange(n_vertices, dtype=np.int64)
    return host_kernels().labels([-(vmap + 1)], n_vertices)  # in the map's dtype: int32 while ids fit

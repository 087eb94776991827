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
    """

    def __init__(self, eid, src, dst, weight, n_vertices):
        self.id_dtype = src.dtype
        if n_vertices <= np.iinfo(np.int32).max:
            src, dst = src.astype(np.int32), dst.astype(np.int32)
        self.eid, self.src, self.dst, self.weight = eid, src, dst, weight

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return (self.eid, self.src.astype(self.id_dtype, copy=False),
                self.dst.astype(self.id_dtype, copy=False), self.weight)[i]

    def take(self, pos):
        """The rows at positions ``pos``."""
        out = KeptRows.__new__(KeptRows)
        out.id_dtype = self.id_dtype
        out.eid, out.src, out.dst, out.weight = (a[pos] for a in (self.eid, self.src, self.dst, self.weight))
        return out

    @property
    def nbytes(self):
        return int(sum(a.nbytes for a in (self.eid, self.src, self.dst, self.weight)))


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
    """A sample of a window of a chunk: ``(u, v, key, eid, non-loop edges, raw rows, bytes read)``.

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
    return (u[pos].astype(np.int64), v[pos].astype(np.int64), key[pos], eid[pos], m,
            int(raw[0].shape[0]), _nbytes(raw))


def _in_slice(key, eid, lo, hi):
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
    keep = _in_slice(key, eid, lo, None)
    if vmap is not None:
        keep &= vmap[u] != vmap[v]
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
    eid = to_host(ch.edges()[3])
    eid = np.sort(eid)
    loc = eid - offset
    src, dst, w = (take_to_host(a, loc) for a in raw[:3])
    rows = KeptRows(eid, src, dst, w, n_vertices)
    st = PassChunkStats(bytes_read=_nbytes(raw), edges_in=int(raw[0].shape[0]), edges_kept=len(ch),
                        seconds=time.perf_counter() - t0)
    return ch, rows, st


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


def forest_rows(edge_ids, *parts):
    """``(src, dst, weight)`` of the forest (ascending ``edge_ids``) from the passes' :class:`KeptRows`."""
    eid = np.concatenate([p[0] for p in parts])
    order = np.argsort(eid, kind="stable")
    eid = eid[order]
    pos = np.searchsorted(eid, edge_ids)
    return tuple(np.concatenate([p[i] for p in parts])[order][pos] for i in (1, 2, 3))


def vertex_labels(vmap, n_vertices):
    """Canonical component labels (numbered by smallest vertex) and their count."""
    if vmap is None:
        vmap = np.arange(n_vertices, dtype=np.int64)
    return host_kernels().labels([-(vmap + 1)], n_vertices)

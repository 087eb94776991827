"""The input graph: where its edges come from, validated.

A :class:`Graph` does not have to hold its edges.  It is a list of *sources*,
each able to produce any contiguous range of its rows on a worker; the driver
cuts the sources into edge chunks and has the workers load them.  Arrays
already in the caller's memory are one kind of source (sliced, then scattered);
generators are another (each worker generates its own rows).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import numpy as np

from mst_dist.errors import InvalidGraphError  # defined with the package's other errors

__all__ = ["Graph", "InvalidGraphError", "ArraySource", "FunctionSource", "check_edges",
           "CONVERTERS", "as_graph", "VERTEX_BYTES", "vertex_memory"]

#: Bytes of state one vertex costs on a single worker, whatever the edges: the
#: contract task's round map and the labels of the end of a run, each int64,
#: with their working copies.  ``n_vertices`` times this must fit in a worker.
VERTEX_BYTES = 32


def vertex_memory(n_vertices):
    """Bytes the per-vertex state of a graph of ``n_vertices`` needs on one worker."""
    return int(n_vertices) * VERTEX_BYTES


def human_bytes(n):
    """``n`` bytes for a message: ``"16.0 TiB"``."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            break
        n /= 1024
    return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"


def _check_dtype(name, a, kinds, what):
    if a.dtype.kind not in kinds:
        raise InvalidGraphError(
            f"{name} has dtype {a.dtype}; {what}"
        )


def check_edges(src, dst, w, n_vertices, offset=0, where=""):
    """Raise :class:`InvalidGraphError` naming the first bad edge of a chunk.

    ``offset`` is the global id of the chunk's first edge; ``n_vertices < 0``
    skips the upper-bound check.  Host arrays are checked by one parallel
    Numba pass; CuPy arrays on their device (only the bad edge's values are
    copied back).  Returns ``(max_id, n_edges)``.
    """
    device = _on_device(src)
    if not device:
        src = np.asarray(src)
        dst = np.asarray(dst)
        w = None if w is None else np.asarray(w)
    _check_dtype("src", src, "iu", "vertex ids must be integers")
    _check_dtype("dst", dst, "iu", "vertex ids must be integers")
    if w is not None:
        _check_dtype("weight", w, "iuf", "weights must be integers or floats")
    if src.ndim != 1 or dst.ndim != 1 or (w is not None and w.ndim != 1):
        raise InvalidGraphError("src, dst and weight must be one-dimensional arrays")
    m = int(src.shape[0])
    lens = [("src", m), ("dst", dst.shape[0])] + ([("weight", w.shape[0])] if w is not None else [])
    if len({n for _, n in lens}) != 1:
        short = min(n for _, n in lens)
        desc = ", ".join(f"{k} has {n}" for k, n in lens)
        raise InvalidGraphError(
            f"arrays of different lengths ({desc}): edge {offset + short}{where} is incomplete",
            edge=offset + short,
        )
    if device:
        i, reason, maxid = _first_invalid_on_device(src, dst, w, n_vertices)
    else:
        from mst_dist.kernels import backend

        i, reason, maxid = backend("cpu").first_invalid_edge(src, dst, w, n_vertices)
    if i >= 0:
        wv = "" if w is None else f", weight={w[i].item()!r}"
        raise InvalidGraphError(
            f"edge {offset + i}{where} (src={src[i].item()}, dst={dst[i].item()}{wv}): {reason}"
            + (f" (n_vertices={n_vertices})" if "range" in reason else ""),
            edge=offset + i,
        )
    return int(maxid), m


def _on_device(a):
    """A GPU array (CuPy or any ``__cuda_array_interface__`` exporter), not a host one."""
    return a is not None and not isinstance(a, np.ndarray) and hasattr(a, "__cuda_array_interface__")


def _first_invalid_on_device(src, dst, w, n_vertices):
    """The kernels' validation of CuPy arrays, on their device: ``(index, reason, max_id)``."""
    from mst_dist.kernels import backend

    return backend("reference", xp="cupy").first_invalid_edge(src, dst, w, n_vertices)


class ChunkRange(NamedTuple):
    """One edge chunk of a graph: rows ``[start, stop)`` of source ``source``.

    ``offset`` is the edge id of the chunk's first row (the edge ids of a
    graph run over its sources in order).
    """

    source: int         #: index of the source in :attr:`Graph.sources`
    start: int          #: first row, within the source
    stop: int           #: one past the last row, within the source
    offset: int         #: edge id of row ``start``

    @property
    def n_edges(self) -> int:
        return self.stop - self.start


@dataclass
class ArraySource:
    """Rows held in memory by the caller (never copied, never modified)."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray

    @property
    def n_edges(self):
        return int(self.src.shape[0])

    @property
    def on_device(self):
        return _on_device(self.src)

    def load(self, start, stop):
        return self.src[start:stop], self.dst[start:stop], self.weight[start:stop]


@dataclass
class FunctionSource:
    """Rows produced on a worker by ``func(start, stop, **params)``.

    ``func`` must be importable (a module-level function) and must give the
    same rows for the same range however the rows are split.  A source that
    cannot be entered in the middle cheaply (a compressed file) sets
    ``splittable=False``: :meth:`Graph.chunk_ranges` then keeps it whole.
    """

    func: Callable
    params: dict
    n_edges: int
    name: str = "source"
    splittable: bool = True

    def load(self, start, stop):
        return self.func(start, stop, **self.params)


#: The builders behind ``Graph.from_<name>``, by name: filled by :mod:`mst_dist.io.interop`
#: when it is imported (``import mst_dist`` imports it).  The conversions live in the I/O
#: layer, which imports this module; this module never imports them.
CONVERTERS: dict = {}


def _converter(name):
    try:
        return CONVERTERS[name]
    except KeyError:
        raise ImportError(f"Graph.from_{name} is registered by mst_dist.io.interop: import it "
                          f"(import mst_dist does)") from None


def as_graph(obj):
    """The :class:`Graph` for what a caller passed as one: a ``Graph``, or a graph object to convert.

    A networkx graph goes through :meth:`Graph.from_networkx` (its node labels
    kept in ``meta["nodes"]``), a SciPy sparse array or matrix through
    :meth:`Graph.from_scipy`, a pandas DataFrame through
    :meth:`Graph.from_pandas`, all with their defaults.  Those libraries are
    looked up among the modules already imported (an object of theirs cannot
    exist otherwise), so this imports none of them.  Anything else is a
    ``TypeError`` saying what is accepted.
    """
    if isinstance(obj, Graph):
        return obj
    nx = sys.modules.get("networkx")
    if nx is not None and isinstance(obj, nx.Graph):
        return _converter("networkx")(obj)
    sparse = sys.modules.get("scipy.sparse")
    if sparse is not None and sparse.issparse(obj):
        return _converter("scipy")(obj)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return _converter("pandas")(obj)
    raise TypeError(f"graph must be a mst_dist.Graph, a networkx graph, a SciPy sparse adjacency "
                    f"matrix or a pandas DataFrame of edges, got {type(obj).__name__}; for edge "
                    f"arrays use Graph.from_arrays(src, dst, weight)")


@dataclass
class Graph:
    """An undirected weighted multigraph given as edge sources.

    Edge ids are positions: source order, then row order.  Build one with
    :meth:`from_arrays`, :func:`mst_dist.generate` or a reader.
    """

    n_vertices: int
    sources: Sequence
    weight_dtype: np.dtype
    validated: bool = False
    name: str = "graph"
    meta: dict = field(default_factory=dict)

    @property
    def n_edges(self) -> int:
        return int(sum(s.n_edges for s in self.sources))

    @property
    def in_memory(self) -> bool:
        return all(isinstance(s, ArraySource) for s in self.sources)

    @property
    def on_device(self) -> bool:
        """Whether every edge is held in GPU memory (a graph made from CuPy arrays)."""
        return self.in_memory and bool(self.sources) and all(s.on_device for s in self.sources)

    def __repr__(self):
        return (f"Graph(name={self.name!r}, n_vertices={self.n_vertices:,}, "
                f"n_edges={self.n_edges:,}, weight_dtype={np.dtype(self.weight_dtype).name})")

    @classmethod
    def from_arrays(cls, src, dst, weight=None, n_vertices=None, *, name="arrays"):
        """A graph from edge arrays in memory, validated.

        Parameters
        ----------
        src, dst : array_like of int
            Endpoints of each edge; vertex ids in ``[0, n_vertices)``.
        weight : array_like of int or float, optional
            Edge weights (default: all ``1``).  NaN and infinities are errors.
        n_vertices : int, optional
            Number of vertices (default ``max id + 1``); vertices without edges
            are isolated components.

        The arrays are neither copied nor modified.  A bad edge raises
        :class:`InvalidGraphError` (a ``ValueError``) naming it.  CuPy arrays
        (all three on one GPU) are validated there and stay there: a run with
        GPU workers on that device starts from device-resident chunks.

        Examples
        --------
        >>> import numpy as np, mst_dist
        >>> g = mst_dist.Graph.from_arrays([0, 1, 2], [1, 2, 0], [3, 1, 2])
        >>> g.n_vertices, g.n_edges
        (3, 3)
        """
        if n_vertices is not None:
            if int(n_vertices) != n_vertices or n_vertices < 0:
                raise InvalidGraphError(f"n_vertices must be a non-negative integer, got {n_vertices!r}")
            n_vertices = int(n_vertices)
        if _on_device(src) or _on_device(dst) or _on_device(weight):
            return cls._from_device(src, dst, weight, n_vertices, name)
        src = np.asarray(src)
        dst = np.asarray(dst)
        if src.dtype.kind not in "iu" and src.size == 0:
            src = src.astype(np.int64)
        if dst.dtype.kind not in "iu" and dst.size == 0:
            dst = dst.astype(np.int64)
        if weight is None:
            weight = np.ones(src.shape[0], dtype=np.int64)
        weight = np.asarray(weight)
        if weight.dtype.kind not in "iuf" and weight.size == 0:
            weight = weight.astype(np.float64)
        maxid, m = check_edges(src, dst, weight, -1 if n_vertices is None else n_vertices)
        if n_vertices is None:
            n_vertices = maxid + 1 if m else 0
        if weight.dtype.kind == "b":
            weight = weight.astype(np.int64)
        return cls(n_vertices=n_vertices, sources=[ArraySource(src, dst, weight)],
                   weight_dtype=weight.dtype, validated=True, name=name)

    @classmethod
    def _from_device(cls, src, dst, weight, n_vertices, name):
        import cupy

        if weight is None:
            weight = cupy.ones(src.shape[0], dtype=cupy.int64)
        arrs = []
        for what, a in (("src", src), ("dst", dst), ("weight", weight)):
            if not _on_device(a):
                raise InvalidGraphError(f"{what} is on the host while another array is on a GPU: "
                                        "give all three as CuPy arrays, or all as host arrays")
            arrs.append(cupy.asarray(a))
        src, dst, weight = arrs
        if weight.dtype.kind == "b":
            weight = weight.astype(cupy.int64)
        maxid, m = check_edges(src, dst, weight, -1 if n_vertices is None else n_vertices)
        if n_vertices is None:
            n_vertices = maxid + 1 if m else 0
        return cls(n_vertices=n_vertices, sources=[ArraySource(src, dst, weight)],
                   weight_dtype=np.dtype(weight.dtype), validated=True, name=name)

    @classmethod
    def from_networkx(cls, G, weight="weight", default=1, *, nodelist=None, name=None):
        """A graph from a networkx graph; see :func:`mst_dist.io.interop.from_networkx`."""
        return _converter("networkx")(G, weight, default, nodelist=nodelist, name=name)

    @classmethod
    def from_scipy(cls, A, *, keep_zeros=False, symmetric="auto", name=None):
        """A graph from a SciPy sparse matrix; see :func:`mst_dist.io.interop.from_scipy`."""
        return _converter("scipy")(A, keep_zeros=keep_zeros, symmetric=symmetric, name=name)

    @classmethod
    def from_pandas(cls, df, *args, **kw):
        """A graph from a pandas DataFrame; see :func:`mst_dist.io.interop.from_pandas`."""
        return _converter("pandas")(df, *args, **kw)

    @classmethod
    def from_dask_dataframe(cls, ddf, *args, **kw):
        """A lazy graph from a Dask DataFrame; see :func:`mst_dist.io.interop.from_dask_dataframe`."""
        return _converter("dask_dataframe")(ddf, *args, **kw)

    def to_arrays(self):
        """All edges as ``(src, dst, weight)`` arrays in this process (small graphs, tests)."""
        from mst_dist.kernels.contract import to_host

        parts = [tuple(to_host(a) for a in s.load(0, s.n_edges)) for s in self.sources]
        if not parts:
            z = np.zeros(0, np.int64)
            return z, z.copy(), np.zeros(0, self.weight_dtype)
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))

    def chunk_ranges(self, partitions):
        """Cut the edge id range into ``partitions`` contiguous chunks.

        Returns ``[ChunkRange(source, start, stop, offset), ...]``; a chunk
        never spans two sources (so a source boundary adds a chunk), and a
        source with ``splittable=False`` is one chunk.
        """
        m = self.n_edges
        partitions = max(1, int(partitions))
        bounds = [round(i * m / partitions) for i in range(partitions + 1)]
        out = []
        offset = 0
        for si, s in enumerate(self.sources):
            lo, hi = offset, offset + s.n_edges
            inner = [b for b in bounds if lo < b < hi] if getattr(s, "splittable", True) else []
            cuts = sorted({lo, hi, *inner})
            for a, b in zip(cuts[:-1], cuts[1:]):
                out.append(ChunkRange(si, a - lo, b - lo, a))
            offset = hi
        return out

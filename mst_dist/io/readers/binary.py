"""Binary graph files: ``.npz``, a directory of ``.npy`` columns, ECL ``.egr``; and their shared checks.

:func:`read_npz`, :func:`read_npy` and :func:`read_egr` turn a list of files
into sources (:class:`~mst_dist.graph.FunctionSource` over a module-level row
function run on the workers).  :func:`as_ids`, :func:`as_weights`,
:func:`check_rows` and :func:`column_names` are the validation every binary
load shares (Parquet's too).  No reader here ever unpickles.

ECL ``.egr``
------------
Little-endian int32: ``nodes``, ``edges`` (arcs), ``nindex[nodes + 1]``,
``nlist[edges]``, then optionally ``eweight[edges]`` (weight 1 when absent).
It is the CSR that ECL-MST reads; an undirected graph is stored with both
directions.  ``dedupe_directions`` defaults to ``True`` here: the arcs with
``u < v`` are kept (self-loops dropped), in CSR order, so the graph has
``edges / 2`` edges; ``False`` reads every arc as an edge.

Binary ``.npz`` / ``.npy``
--------------------------
Columns ``src``, ``dst`` and ``weight`` (rename with ``src=``, ``dst=``,
``weight=``; ``weight=None`` for weight 1; a missing default ``weight``
column also means weight 1).  Ids of any integer dtype, weights of any
integer or float dtype (read as int64 or float64).  ``.npy`` files are
memory-mapped and ``.npz`` members read in place when stored (``np.savez``);
a compressed ``.npz`` is read by one task.  Without ``n_vertices``, one scan
task per file finds the largest id.
"""
from __future__ import annotations

import os
import struct
import zipfile
import zlib

import numpy as np

from mst_dist.graph import FunctionSource
from mst_dist.io.formats import GraphFormatError
from mst_dist.io.tasks import map_tasks

__all__ = ["read_npz", "read_npy", "read_egr", "as_ids", "as_weights", "check_rows", "max_id",
           "column_names", "OPTIONS"]

#: What :mod:`zipfile` raises for a damaged or unsupported ``.npz``: besides ``BadZipFile``, a member
#: flagged as encrypted is a ``RuntimeError``, a "version needed" or compression method it lacks a
#: ``NotImplementedError``, damaged deflate data a ``zlib.error``.
_ZIP_ERRORS = (zipfile.BadZipFile, RuntimeError, NotImplementedError, zlib.error, EOFError, OSError)

#: Options each binary format takes (besides ``client``, ``n_vertices``, ``name``).
OPTIONS = {
    "npz": {"src", "dst", "weight"},
    "npy": {"src", "dst", "weight"},
    "egr": {"dedupe_directions"},
}

_I64_MAX = (1 << 63) - 1


# ---------------------------------------------------------------------------
# binary: validation shared by npz, npy, egr and parquet loads
# ---------------------------------------------------------------------------

def as_ids(a, path, column, row0, row_group=None):
    """Vertex ids as int64, refusing non-integers and uint64 ids past int64 (naming the row)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise GraphFormatError(f"column {column!r} has dtype {a.dtype}; vertex ids must be integers",
                               path=path, row_group=row_group)
    if a.dtype == np.uint64 and a.size and a.max() > np.uint64(_I64_MAX):
        k = int(np.argmax(a > np.uint64(_I64_MAX)))
        raise GraphFormatError(f"vertex id {int(a[k])} in column {column!r} does not fit in int64",
                               path=path, row_group=row_group, row=row0 + k)
    return a.astype(np.int64, copy=False)


def as_weights(a, path, column, row_group=None):
    """Weights as int64 (integers, booleans) or float64, refusing other dtypes."""
    a = np.asarray(a)
    if a.dtype.kind == "b":
        return a.astype(np.int64)
    if a.dtype.kind in "iu":
        if a.dtype == np.uint64 and a.size and a.max() > np.uint64(_I64_MAX):
            raise GraphFormatError(f"weights in column {column!r} do not fit in int64",
                                   path=path, row_group=row_group)
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f":
        return a.astype(np.float64, copy=False)
    raise GraphFormatError(f"column {column!r} has dtype {a.dtype}; weights must be integers or "
                           f"floats", path=path, row_group=row_group)


def _weight_dtype_of(dtype, path, column):
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        return np.dtype(np.int64)
    if dtype.kind == "f":
        return np.dtype(np.float64)
    raise GraphFormatError(f"column {column!r} has dtype {dtype}; weights must be integers or "
                           f"floats", path=path)


def check_rows(src, dst, w, n, path, row0, row_group=None, base=0):
    """Raise naming the first bad row (``row0`` = the file/row-group row of ``src[0]``)."""
    from mst_dist.kernels import backend

    i, reason, _ = backend("cpu").first_invalid_edge(src, dst, w, n)
    if i >= 0:
        wv = f", weight={w[i].item()!r}" if w is not None else ""
        raise GraphFormatError(
            f"{reason} (src={int(src[i]) + base}, dst={int(dst[i]) + base}{wv}"
            + (f"; n_vertices={n})" if "range" in reason else ")"),
            path=path, row_group=row_group, row=row0 + i)


def max_id(src, dst):
    """The largest id of a chunk (-1 when empty)."""
    m = -1
    if src.size:
        m = max(int(src.max()), int(dst.max()))
    return m


# ---------------------------------------------------------------------------
# npz
# ---------------------------------------------------------------------------

def _npy_header(f):
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream ``f``, left at its data."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(f)
    raise ValueError(f"unsupported .npy format version {version}")


def _npz_member(path, zf, name):
    """``(info, dtype, shape, data_offset or None)`` of a ``.npy`` member of a zip."""
    info = zf.getinfo(name)
    with zf.open(info) as f:
        shape, fortran, dtype = _npy_header(f)
        header_len = f.tell()
    if dtype.hasobject:
        raise GraphFormatError(f"member {name!r} holds Python objects; refusing to unpickle",
                               path=path)
    if len(shape) != 1:
        raise GraphFormatError(f"member {name!r} has shape {shape}; expected a 1-D array",
                               path=path)
    offset = None
    if info.compress_type == zipfile.ZIP_STORED:
        with open(path, "rb") as raw:
            raw.seek(info.header_offset)
            local = raw.read(30)
            if local[:4] != b"PK\x03\x04":
                raise GraphFormatError(f"member {name!r}: bad local header", path=path)
            nlen, elen = struct.unpack("<HH", local[26:30])
        offset = info.header_offset + 30 + nlen + elen + header_len
    return info, dtype, shape[0], offset


def _npz_rows(start, stop, *, path, members, n, weight_float):
    """Rows ``[start, stop)`` of an ``.npz`` graph (a source's row function)."""
    cols = []
    with zipfile.ZipFile(path) as zf:
        for key, (name, dtype, offset) in members.items():
            if name is None:
                cols.append(np.ones(stop - start, np.int64))
                continue
            if offset is not None:
                a = np.memmap(path, dtype=dtype, mode="r", offset=offset + start * dtype.itemsize,
                              shape=(stop - start,))
                cols.append(np.array(a))
                del a
            else:
                with zf.open(name) as f:
                    _npy_header(f)
                    f.seek(f.tell() + start * dtype.itemsize)
                    buf = f.read((stop - start) * dtype.itemsize)
                if len(buf) != (stop - start) * dtype.itemsize:
                    raise GraphFormatError(f"member {name!r} is truncated", path=path)
                cols.append(np.frombuffer(buf, dtype=dtype).copy())
    src = as_ids(cols[0], path, members["src"][0], start)
    dst = as_ids(cols[1], path, members["dst"][0], start)
    w = as_weights(cols[2], path, members["weight"][0] or "weight")
    if weight_float:
        w = w.astype(np.float64, copy=False)
    check_rows(src, dst, w, n, path, start)
    return src, dst, w


def column_names(opts):
    """Pop ``src``, ``dst``, ``weight`` column names from ``opts``; also whether ``weight`` was given."""
    names = {"src": opts.pop("src", "src"), "dst": opts.pop("dst", "dst")}
    explicit = "weight" in opts
    names["weight"] = opts.pop("weight", "weight")
    return names, explicit


def read_npz(paths, client, n_vertices, opts):
    """Sources of ``.npz`` graph files: ``(sources, n_vertices, weight dtype, meta)``."""
    names, explicit = column_names(opts)
    metas = []
    for path in paths:
        try:
            zf = zipfile.ZipFile(path)
        except _ZIP_ERRORS as e:
            raise GraphFormatError(f"not a readable .npz (zip) file: {e}", path=path) from None
        with zf:
            have = {n[:-4] for n in zf.namelist() if n.endswith(".npy")}
            extra = sorted(have - {c for c in names.values() if c is not None})
            if extra:
                raise GraphFormatError(
                    f"unexpected array(s) {', '.join(map(repr, extra))}; an .npz graph holds "
                    f"{names['src']!r}, {names['dst']!r} and optionally {names['weight']!r} (name "
                    f"the columns with src=, dst=, weight=)", path=path)
            members = {}
            length = None
            for key in ("src", "dst", "weight"):
                col = names[key]
                if col is None or (key == "weight" and col not in have and not explicit):
                    members[key] = (None, np.dtype(np.int64), None)
                    continue
                if col not in have:
                    raise GraphFormatError(
                        f"no array {col!r}; the file holds {', '.join(sorted(have)) or 'nothing'}"
                        f" (name the columns with src=, dst=, weight=)", path=path)
                try:
                    info, dtype, ln, off = _npz_member(path, zf, col + ".npy")
                except (ValueError, *_ZIP_ERRORS) as e:
                    if isinstance(e, GraphFormatError):
                        raise
                    raise GraphFormatError(f"array {col!r}: {e}", path=path) from None
                if length is not None and ln != length:
                    raise GraphFormatError(
                        f"arrays of different lengths: {names['src']!r} has {length}, {col!r} has {ln}",
                        path=path)
                length = ln
                if key != "weight" and dtype.kind not in "iu":
                    raise GraphFormatError(f"array {col!r} has dtype {dtype}; vertex ids must be "
                                           f"integers", path=path)
                members[key] = (col + ".npy", dtype, off)
            splittable = all(m[0] is None or m[2] is not None for m in members.values())
            metas.append((path, members, length or 0, splittable))
    wfloat = any(m["weight"][0] is not None and _weight_dtype_of(m["weight"][1], p, "weight").kind == "f"
                 for p, m, _, _ in metas)
    return _binary_sources(metas, client, n_vertices, wfloat, _npz_rows,
                           lambda p, m, n: {"path": p, "members": m, "n": n, "weight_float": wfloat})


def _binary_sources(metas, client, n_vertices, wfloat, func, params_of):
    """Sources of binary files; a max-id scan (one task per file) when n_vertices is unknown."""
    if n_vertices is None:
        scans = map_tasks(_scan_binary, [(func, params_of(p, m, -1), length)
                                          for p, m, length, _ in metas], client, "read-scan")
        n_vertices = max([s + 1 for s in scans] + [0])
    sources = [FunctionSource(func, params_of(p, m, n_vertices), length,
                              name=os.path.basename(p), splittable=split)
               for p, m, length, split in metas]
    return sources, int(n_vertices), np.dtype(np.float64 if wfloat else np.int64), {}


def _scan_binary(func, params, length, step=1 << 22):
    """Largest id of a binary file, reading and validating it in steps (a scan task)."""
    mx = -1
    for a in range(0, length, step):
        s, d, _ = func(a, min(length, a + step), **params)
        mx = max(mx, max_id(s, d))
    return mx


# ---------------------------------------------------------------------------
# npy (a directory of column files)
# ---------------------------------------------------------------------------

def _npy_rows(start, stop, *, files, n, weight_float):
    """Rows ``[start, stop)`` of a directory of ``.npy`` column files."""
    cols = []
    for key in ("src", "dst", "weight"):
        f = files[key]
        if f is None:
            cols.append(np.ones(stop - start, np.int64))
            continue
        a = np.load(f, mmap_mode="r", allow_pickle=False)
        cols.append(np.array(a[start:stop]))
        del a
    path = files["src"]
    src = as_ids(cols[0], path, "src", start)
    dst = as_ids(cols[1], files["dst"], "dst", start)
    w = as_weights(cols[2], files["weight"] or path, "weight")
    if weight_float:
        w = w.astype(np.float64, copy=False)
    check_rows(src, dst, w, n, os.path.dirname(path), start)
    return src, dst, w


def read_npy(paths, client, n_vertices, opts):
    """Sources of directories of ``.npy`` columns: ``(sources, n_vertices, weight dtype, meta)``."""
    names, explicit = column_names(opts)
    metas = []
    wfloat = False
    for d in paths:
        files = {}
        length = None
        for key in ("src", "dst", "weight"):
            col = names[key]
            f = None if col is None else os.path.join(d, col + ".npy")
            if f is None or (key == "weight" and not os.path.exists(f) and not explicit):
                files[key] = None
                continue
            if not os.path.exists(f):
                raise GraphFormatError(f"no column file {col + '.npy'!r} in the directory", path=d)
            try:
                a = np.load(f, mmap_mode="r", allow_pickle=False)
            except ValueError as e:
                raise GraphFormatError(f"cannot read: {e} (object arrays are refused)", path=f) from None
            if a.ndim != 1:
                raise GraphFormatError(f"shape {a.shape}; expected a 1-D array", path=f)
            if length is not None and a.shape[0] != length:
                raise GraphFormatError(f"{a.shape[0]} rows, {files['src']} has {length}", path=f)
            length = a.shape[0]
            if key != "weight" and a.dtype.kind not in "iu":
                raise GraphFormatError(f"dtype {a.dtype}; vertex ids must be integers", path=f)
            if key == "weight":
                wfloat |= _weight_dtype_of(a.dtype, f, col).kind == "f"
            files[key] = f
            del a
        metas.append((d, files, length or 0, True))
    return _binary_sources(metas, client, n_vertices, wfloat, _npy_rows,
                           lambda p, m, n: {"files": m, "n": n, "weight_float": wfloat})


# ---------------------------------------------------------------------------
# egr (ECL-MST's binary CSR)
# ---------------------------------------------------------------------------

def _egr_header(path):
    size = os.path.getsize(path)
    if size < 8:
        raise GraphFormatError(f"truncated: {size} bytes, expected at least 8 (nodes, edges)",
                               path=path)
    with open(path, "rb") as f:
        nodes, edges = struct.unpack("<ii", f.read(8))
    if nodes < 0 or edges < 0:
        raise GraphFormatError(f"negative node or edge count ({nodes}, {edges})", path=path)
    base = 8 + 4 * (nodes + 1) + 4 * edges
    if size == base:
        weighted = False
    elif size == base + 4 * edges:
        weighted = True
    else:
        raise GraphFormatError(
            f"{size} bytes; nodes={nodes}, edges={edges} need {base} bytes (no weights) or "
            f"{base + 4 * edges} (with weights): the file is "
            + ("truncated" if size < base + 4 * edges else "longer than declared"), path=path)
    nindex = np.memmap(path, np.int32, "r", offset=8, shape=(nodes + 1,))
    first, last = int(nindex[0]), int(nindex[-1])
    del nindex
    if first != 0 or last != edges:
        raise GraphFormatError(f"nindex runs from {first} to {last}; expected 0 to edges={edges}",
                               path=path)
    return nodes, edges, weighted


def _egr_arcs(path, nodes, edges, weighted, a, b):
    """Arcs ``[a, b)`` of an ``.egr`` file: ``(u, v, w)`` arrays, validated."""
    nindex = np.memmap(path, np.int32, "r", offset=8, shape=(nodes + 1,))
    u0 = int(np.searchsorted(nindex, a, "right")) - 1
    u1 = int(np.searchsorted(nindex, b - 1, "right")) - 1 if b > a else u0
    idx = np.array(nindex[u0:u1 + 2], np.int64)
    del nindex
    if idx.size > 1 and np.any(np.diff(idx) < 0):
        k = int(np.argmax(np.diff(idx) < 0))
        raise GraphFormatError(f"nindex decreases at vertex {u0 + k + 1} (not a CSR)", path=path)
    counts = np.diff(np.clip(idx, a, b))
    u = np.repeat(np.arange(u0, u0 + counts.size, dtype=np.int64), counts)
    off = 8 + 4 * (nodes + 1)
    nlist = np.memmap(path, np.int32, "r", offset=off + 4 * a, shape=(b - a,)) if b > a else np.zeros(0, np.int32)
    v = np.array(nlist, np.int64)
    del nlist
    if weighted and b > a:
        ew = np.memmap(path, np.int32, "r", offset=off + 4 * edges + 4 * a, shape=(b - a,))
        w = np.array(ew, np.int64)
        del ew
    else:
        w = np.ones(b - a, np.int64)
    if u.size != v.size:
        raise GraphFormatError("nindex is inconsistent with the arc count", path=path)
    bad = (v < 0) | (v >= nodes)
    if bad.any():
        k = int(np.argmax(bad))
        raise GraphFormatError(f"neighbour {int(v[k])} of vertex {int(u[k])} is out of range "
                               f"(nodes={nodes})", path=path, row=a + k)
    return u, v, w


def _egr_rows(start, stop, *, path, nodes, edges, weighted, dedupe, ck):
    """Rows ``[start, stop)`` of an ``.egr`` file (a source's row function).

    Without dedupe, rows are arcs.  With it, rows are the arcs with ``u < v``;
    ``ck`` holds ``(arc offset, kept rows before)`` every few million arcs.
    """
    if not dedupe:
        return _egr_arcs(path, nodes, edges, weighted, start, stop)
    i = int(np.searchsorted(ck[:, 1], start, "right")) - 1
    j = int(np.searchsorted(ck[:, 1], stop, "left"))
    a, b = int(ck[i, 0]), int(ck[j, 0])
    u, v, w = _egr_arcs(path, nodes, edges, weighted, a, b)
    keep = u < v
    u, v, w = u[keep], v[keep], w[keep]
    lo = start - int(ck[i, 1])
    if u.size < lo + (stop - start):
        raise GraphFormatError("fewer arcs with u < v than when the file was scanned", path=path)
    return u[lo:lo + stop - start], v[lo:lo + stop - start], w[lo:lo + stop - start]


def _egr_count(path, nodes, edges, weighted, a, b):
    u, v, _ = _egr_arcs(path, nodes, edges, weighted, a, b)
    return int(np.count_nonzero(u < v))


_EGR_STEP = 1 << 22


def read_egr(paths, client, n_vertices, opts):
    """Sources of ECL ``.egr`` files: ``(sources, n_vertices, weight dtype, meta)``."""
    dedupe = opts.pop("dedupe_directions", None)
    dedupe = True if dedupe is None else bool(dedupe)
    sources = []
    n_max = 0
    for path in paths:
        nodes, edges, weighted = _egr_header(path)
        n_max = max(n_max, nodes)
        if n_vertices is not None and n_vertices < nodes:
            raise ValueError(f"n_vertices={n_vertices} is smaller than nodes={nodes} of {path}")
        ck = None
        rows = edges
        if dedupe:
            bounds = list(range(0, edges, _EGR_STEP)) + [edges]
            counts = map_tasks(_egr_count, [(path, nodes, edges, weighted, a, b)
                                             for a, b in zip(bounds[:-1], bounds[1:])], client, "read-scan")
            ck = np.array([bounds, [0] + list(np.cumsum(counts, dtype=np.int64))], np.int64).T.copy()
            rows = int(ck[-1, 1])
        params = {"path": path, "nodes": nodes, "edges": edges, "weighted": weighted,
                  "dedupe": dedupe, "ck": ck}
        sources.append(FunctionSource(_egr_rows, params, rows, name=os.path.basename(path)))
    n = n_max if n_vertices is None else n_vertices
    return sources, int(n), np.dtype(np.int64), {}

"""Graph readers: files in the formats of the field, read in chunks on the workers.

:func:`read` returns a :class:`~mst_dist.graph.Graph` whose sources are file
loaders (:class:`~mst_dist.graph.FunctionSource` with a module-level row
function): the driver's ``mst-load-*`` tasks read and parse their own rows on
the workers, so the client never holds the edge list.  Edge ids follow
DESIGN.md: file order, then row order, however the edges are chunked.

Formats
-------
=============  ==========================================  ========================
format         files                                       notes
=============  ==========================================  ========================
``edgelist``   ``.txt .edges .edgelist .el .tsv .csv       SNAP style; see below
               .snap`` (also ``.gz``/``.bz2``/``.xz``)
``gr``         ``.gr`` (DIMACS 9th challenge)              1-based; arcs as edges
``mtx``        ``.mtx .mm`` (Matrix Market coordinate)     1-based
``npz``        ``.npz`` holding ``src``, ``dst``,          never unpickles
               optional ``weight``
``npy``        a directory of ``src.npy``, ``dst.npy``,    never unpickles
               optional ``weight.npy``
``egr``        ``.egr`` (ECL binary CSR)                   both directions stored
``parquet``    ``.parquet .pq``, a directory or a glob     row groups
=============  ==========================================  ========================

A glob (``"parts/*.txt"``), a directory or a list of paths gives one source
per file, in natural name order (``part.2`` before ``part.10``) or list order.

Text formats: one scan, then loads
----------------------------------
Text rows cannot be found by seeking, and ``n_vertices`` (``max id + 1``) and
the weight dtype (int64 unless some weight is not an integer) are needed
before the run.  So :func:`read` runs one *scan* pass as tasks on the cluster
(``mst-read-scan-*``; on the current ``distributed`` client, else on local
threads): each task parses one byte block (``blocksize``: by default about
four per worker thread, 4 to 64 MiB) with the same Numba kernel the loads
use, validates every line and returns small things -- rows, lines, the
largest id, whether a weight is fractional, and a *checkpoint table*:
``(byte offset, rows before, lines before)`` at line starts about every
``max(1 MiB, size / 4096)`` bytes.  A load of rows
``[start, stop)`` reads only the bytes between the checkpoints that bracket
them.  The scan parses the file fully (not just counting newlines) because it
must find ``max id``, the weight dtype and every bad line anyway, so a bad
file fails in :func:`read` with its line number, before any run or output.
The price is parsing twice; both passes run at the kernel's speed (see
docs/io.md).  Compressed files (gzip, bz2, xz; recognised by their magic
bytes) cannot be entered in the middle: each is scanned by one task and
loaded as one chunk (its source is not splittable); split big inputs into
several files to read them in parallel.

Edge list grammar (``edgelist``)
--------------------------------
- Lines end with ``\\n`` (``\\r\\n`` too: ``\\r`` counts as whitespace).
- Blank lines and comment lines (first non-blank character ``#`` or ``%``)
  are skipped anywhere; inline comments are not supported.
- ``header="auto"``: the first non-blank, non-comment line is a header (and
  skipped) when its first field does not start with a digit, ``+``, ``-`` or
  ``.``; ``header=True`` always skips it, ``header=False`` never.
- Fields are separated by spaces/tabs, or by one comma with optional spaces
  around it (``1,2,3``, ``1, 2, 3``); an empty field is an error.
- Two fields (``src dst``, weight 1) or three (``src dst weight``), fixed by
  the file's first data line.
- Ids: integers ``[+-]?[0-9]+``, ``>= 0``.  Weights: integers or decimals
  ``[+-]?([0-9]+(.[0-9]*)?|.[0-9]+)([eE][+-]?[0-9]+)?``; int64 when every
  weight of every file is an integer that fits, else float64 (correctly
  rounded, via Arrow's parser).  NaN and infinities are errors.

DIMACS ``.gr``
--------------
``c`` comment lines, one problem line ``p sp N M`` before any arc, then
``a U V W`` arc lines, ``1 <= U, V <= N``; exactly ``M`` arcs.  Vertex ``U``
becomes id ``U - 1``.  Each arc is one edge, in file order: the road networks
list every road in both directions, so they read as ``M`` edges, two parallel
ones per road (harmless for the forest, which takes one of them).
``dedupe_directions=True`` keeps only the arcs with ``U < V``: ``M / 2`` edges
for a symmetric file (the usual road graph), ids numbered among kept arcs.
It assumes the file is symmetric (each road listed both ways with the same
weight), as the challenge files are: an arc whose reverse is missing is lost.

Matrix Market ``.mtx``
----------------------
Banner ``%%MatrixMarket matrix coordinate <field> <symmetry>`` with field
``integer``, ``real`` or ``pattern`` (weight 1) and symmetry ``general`` or
``symmetric``; ``%`` comments, then ``M N NNZ``, then exactly ``NNZ`` entries
``I J [V]``, ``1 <= I <= M``, ``1 <= J <= N``.  Entry ``(I, J)`` is edge
``(I-1, J-1)``; ``n_vertices = max(M, N)``.  A symmetric file stores each
off-diagonal edge once (its lower triangle): each stored entry is one edge.
A general file lists both ``(I, J)`` and ``(J, I)`` for an undirected graph:
both become edges unless ``dedupe_directions=True`` (keeps ``I < J``; no
effect on symmetric files).  Complex, Hermitian, skew-symmetric and ``array``
files are refused.

ECL ``.egr``
------------
Little-endian int32: ``nodes``, ``edges`` (arcs), ``nindex[nodes + 1]``,
``nlist[edges]``, then optionally ``eweight[edges]`` (weight 1 when absent).
It is the CSR that ECL-MST reads; an undirected graph is stored with both
directions.  ``dedupe_directions`` defaults to ``True`` here: the arcs with
``u < v`` are kept (self-loops dropped), in CSR order, so the graph has
``edges / 2`` edges; ``False`` reads every arc as an edge.

Binary ``.npz`` / ``.npy`` and Parquet
--------------------------------------
Columns ``src``, ``dst`` and ``weight`` (rename with ``src=``, ``dst=``,
``weight=``; ``weight=None`` for weight 1; a missing default ``weight``
column also means weight 1).  Ids of any integer dtype, weights of any
integer or float dtype (read as int64 or float64).  ``.npy`` files are
memory-mapped and ``.npz`` members read in place when stored (``np.savez``);
a compressed ``.npz`` is read by one task.  Parquet files are read by row
groups.  ``n_vertices`` comes from Parquet statistics when every row group
has them; otherwise one scan task per file finds the largest id.

Errors
------
Every bad input -- unknown format, truncated file, non-numeric token, wrong or
missing header, declared counts that disagree with the body, an id below the
base or above ``n``, a NaN or infinite weight -- raises
:class:`GraphFormatError` (an :class:`~mst_dist.graph.InvalidGraphError`, so a
``ValueError``) naming the file and the line (text), or the row group and row
(Parquet), or the row (binary), and what was expected.
"""
from __future__ import annotations

import bz2
import glob as _glob
import gzip
import logging
import lzma
import os
import re
import struct
import uuid
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from mst_dist.graph import FunctionSource, Graph, InvalidGraphError

__all__ = ["read", "GraphFormatError", "FORMATS", "detect_format", "format_of_path"]

logger = logging.getLogger("mst_dist")

#: Formats :func:`read` knows.
FORMATS = ("edgelist", "gr", "mtx", "npz", "npy", "egr", "parquet")

_EXTENSIONS = {
    ".txt": "edgelist", ".edges": "edgelist", ".edgelist": "edgelist", ".el": "edgelist",
    ".tsv": "edgelist", ".csv": "edgelist", ".snap": "edgelist",
    ".gr": "gr",
    ".mtx": "mtx", ".mm": "mtx",
    ".npz": "npz",
    ".npy": "npy",
    ".egr": "egr",
    ".parquet": "parquet", ".pq": "parquet",
}
_COMPRESSED_EXT = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}

_MIB = 1 << 20
_PIECE = 16 * _MIB          # bytes parsed per kernel call
_DEFAULT_BLOCK = 64 * _MIB  # bytes per scan task
_MAX_CHECKPOINTS = 4096     # per file: the checkpoint spacing is max(1 MiB, size / this)
_I64_MAX = (1 << 63) - 1


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

def _rebuild_format_error(reason, path, line, row_group, row, edge):
    return GraphFormatError(reason, path=path, line=line, row_group=row_group, row=row, edge=edge)


class GraphFormatError(InvalidGraphError):
    """A graph file that cannot be read: names the file, the line or row, and what was expected.

    Attributes ``path``, ``line`` (1-based, text formats), ``row_group`` and
    ``row`` (0-based, Parquet and binary formats; ``row`` counts within the
    row group when there is one) and ``reason`` (the message without the
    location).  Pickles with its attributes, so an error raised in a task on a
    worker reaches the caller intact.
    """

    def __init__(self, reason, path=None, line=None, row_group=None, row=None, edge=None):
        self.reason = reason
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.row_group = row_group
        self.row = row
        where = []
        if line is not None:
            where.append(f"line {line}")
        if row_group is not None:
            where.append(f"row group {row_group}")
        if row is not None:
            where.append(f"row {row}")
        loc = ", ".join(where)
        head = self.path or ""
        if loc:
            head = f"{head}, {loc}" if head else loc
        super().__init__(f"{head}: {reason}" if head else reason, edge=edge, source=self.path)

    def __reduce__(self):
        return (_rebuild_format_error,
                (self.reason, self.path, self.line, self.row_group, self.row, self.edge))


# ---------------------------------------------------------------------------
# the text kernel's codes (the kernel itself: mst_dist/_textkernel.py)
# ---------------------------------------------------------------------------

# kernel modes
_M_EDGELIST, _M_GR, _M_MTX = 0, 1, 2
# weight kinds: none (weight 1), integer only, real (int tokens widened), auto
_W_NONE, _W_INT, _W_REAL, _W_AUTO = 0, 1, 2, 3

# status codes
_OK = 0
_E_TOKEN = 1      # not a number
_E_FEW = 2        # too few fields
_E_MANY = 3       # too many fields
_E_EMPTY = 4      # empty field (comma)
_E_LOW = 5        # id below the base
_E_HIGH = 6       # id above the declared size
_E_OVERFLOW = 7   # integer id out of int64
_E_LINE = 8       # unexpected line type (gr)
_E_PLINE = 9      # a second problem line (gr)
_E_WINT = 10      # fractional weight where integers are required

# stats slots
(_S_STATUS, _S_ROWS, _S_RAW, _S_LINES, _S_NF, _S_FB, _S_NCK, _S_ELINE, _S_EPOS, _S_EEND,
 _S_ECOL, _S_MAXID, _S_NEXTCK, _S_ELS) = range(14)
_NSTATS = 14


# ---------------------------------------------------------------------------
# text: specs, pieces, one kernel call
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _TextSpec:
    """How one text file's body is parsed (the kernel's parameters)."""

    fmt: str
    mode: int
    ncols: int
    wkind: int
    base: int
    lim0: int
    lim1: int
    dedupe: bool


@dataclass(frozen=True)
class _TextFile:
    """One text file, as the client's sniff of its head found it."""

    path: str
    compression: object
    size: int
    data_start: int       # byte offset (decompressed) of the first body line
    lines_before: int     # lines before data_start
    spec: _TextSpec
    declared: object = None   # gr: M arcs, mtx: NNZ entries
    declared_line: int = 0    # the line that declared it
    n: object = None          # declared number of vertices


def check_options(fmt, opts, allowed):
    """Refuse keyword options that format *fmt* does not take (readers and writers)."""
    unknown = sorted(set(opts) - set(allowed))
    if unknown:
        raise ValueError(f"{fmt}: unknown option(s) {', '.join(unknown)}; "
                         f"{fmt} takes {', '.join(sorted(allowed)) or 'none'}")


_BZ2_LEVELS = {bytes([c]) for c in b"123456789"}


def _compression(path):
    """``"gzip"``, ``"bz2"``, ``"xz"`` or ``None``, from the file's magic bytes."""
    with open(path, "rb") as f:
        head = f.read(10)
    # The whole fixed header, not just its first bytes, so that a text file which
    # merely starts with "BZh" (a vertex named BZh...) is still read as text:
    # gzip is 1f 8b then method 8 (deflate); bz2 is "BZh", a block size 1-9 and
    # then a block magic (pi) or, for an empty stream, the end magic (sqrt pi).
    if head[:3] == b"\x1f\x8b\x08":
        return "gzip"
    if (head[:3] == b"BZh" and head[3:4] in _BZ2_LEVELS
            and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90")):
        return "bz2"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    return None


def _open(path, compression):
    if compression == "gzip":
        return gzip.open(path, "rb")
    if compression == "bz2":
        return bz2.open(path, "rb")
    if compression == "xz":
        return lzma.open(path, "rb")
    return open(path, "rb")


_STREAM_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)


def _read_or_fail(f, size, path, compression):
    try:
        return f.read(size)
    except _STREAM_ERRORS as e:
        if compression is None:
            raise
        raise GraphFormatError(f"cannot decompress ({compression}): {e}; the file is truncated "
                               f"or corrupt", path=path) from None


def _pieces(path, compression, start, stop, piece=_PIECE):
    """Yield ``(pos, bytes)``: consecutive pieces of whole lines covering ``[start, stop)``.

    ``start`` must be a line start; ``stop`` a line start or ``None`` (end of
    file).  Offsets are in decompressed bytes.
    """
    with _open(path, compression) as f:
        if compression is None:
            f.seek(start)
        else:
            left = start
            while left:
                got = _read_or_fail(f, min(left, _PIECE), path, compression)
                if not got:
                    raise GraphFormatError("file is shorter than when it was scanned", path=path)
                left -= len(got)
        pos = start
        carry = b""
        while stop is None or pos + len(carry) < stop:
            want = piece if stop is None else min(piece, stop - pos - len(carry))
            got = _read_or_fail(f, want, path, compression)
            if not got:
                break
            data = carry + got if carry else got
            end_reached = stop is not None and pos + len(data) >= stop
            if end_reached:
                carry = b""
                yield pos, data
                pos += len(data)
                break
            k = data.rfind(b"\n")
            if k < 0:
                carry = data
                continue
            carry = data[k + 1:]
            yield pos, data[:k + 1]
            pos += k + 1
        if carry:
            yield pos, carry
            pos += len(carry)
        if stop is not None and pos < stop:
            raise GraphFormatError(f"file ended at byte {pos}, before byte {stop} where it "
                                   f"ended when it was scanned", path=path)


def _line_start_at_or_after(path, pos):
    """The first line start ``>= pos`` of an uncompressed file (its size if none)."""
    if pos <= 0:
        return 0
    with open(path, "rb") as f:
        f.seek(pos - 1)
        at = pos - 1
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                return at
            k = chunk.find(b"\n")
            if k >= 0:
                return at + k + 1
            at += len(chunk)


class _Parsed:
    """The outcome of one kernel call on one piece."""

    __slots__ = ("st", "src", "dst", "wint", "fbuf", "foff", "frow", "fline", "ck", "buf")


def _parse_piece(buf, pos0, spec, store, gran, maxid, nextck, out=None, skip=0):
    """One kernel call on a piece of whole lines.

    With ``store``, rows ``skip, skip + 1, ...`` of the piece go to ``out``
    (three int64 arrays, filled from index 0 as far as they reach), or to new
    arrays of every row when ``out`` is ``None``.
    """
    from mst_dist.io.readers.textkernel import _count_lines, _parse_text

    lines_cap = _count_lines(buf)
    p = _Parsed()
    p.buf = buf
    if store and out is not None:
        p.src, p.dst, p.wint = out
    else:
        cap = lines_cap if store else 0
        p.src = np.empty(cap, np.int64)
        p.dst = np.empty(cap, np.int64)
        p.wint = np.empty(cap, np.int64)
    fcap = buf.shape[0] if spec.wkind in (_W_REAL, _W_AUTO) else 0
    p.fbuf = np.empty(fcap, np.uint8)
    p.foff = np.empty(lines_cap + 1, np.int64)
    p.frow = np.empty(lines_cap if fcap else 0, np.int64)
    p.fline = np.empty(lines_cap if fcap else 0, np.int64)
    p.ck = np.empty(((buf.shape[0] // gran + 2) if gran > 0 else 0, 3), np.int64)
    st = np.zeros(_NSTATS, np.int64)
    st[_S_MAXID] = maxid
    st[_S_NEXTCK] = nextck
    _parse_text(buf, pos0, spec.mode, spec.ncols, spec.wkind, spec.base, spec.lim0, spec.lim1,
                spec.dedupe, store, skip, gran, p.src, p.dst, p.wint, p.fbuf, p.foff, p.frow,
                p.fline, p.ck, st)
    p.st = st
    return p


def _float_values(p):
    """The fractional weight tokens of a piece as float64 (Arrow's correctly rounded parser)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    nf = int(p.st[_S_NF])
    if nf == 0:
        return np.zeros(0, np.float64)
    fb = int(p.st[_S_FB])
    offs = pa.py_buffer(np.ascontiguousarray(p.foff[:nf + 1]))
    data = pa.py_buffer(np.ascontiguousarray(p.fbuf[:fb]))
    arr = pa.LargeStringArray.from_buffers(nf, offs, data)
    try:
        return pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:  # pragma: no cover - grammar checked by the kernel; be safe
        return np.array([float(x) for x in arr.to_pylist()], np.float64)


def _line_text(buf, ls):
    end = ls
    n = buf.shape[0]
    while end < n and buf[end] != 10:
        end += 1
    text = bytes(buf[ls:end]).decode("utf-8", "replace").rstrip("\r")
    return text if len(text) <= 80 else text[:77] + "..."


def _token_text(buf, a, b):
    t = bytes(buf[a:b]).decode("utf-8", "replace")
    return t if len(t) <= 40 else t[:37] + "..."


_COLUMN_NAMES = ("source id", "target id", "weight")


def _error_reason(p, spec):
    """The message of a kernel error (without the file and line)."""
    st = p.st
    code = int(st[_S_STATUS])
    buf = p.buf
    tok = _token_text(buf, int(st[_S_EPOS]), int(st[_S_EEND]))
    col = int(st[_S_ECOL])
    line = _line_text(buf, int(st[_S_ELS]))
    ncols = spec.ncols + (1 if spec.mode == _M_GR else 0)
    colname = _COLUMN_NAMES[col] if 0 <= col < 3 else "field"
    shown = f" (line: {line!r})"
    if code == _E_TOKEN:
        if col == 2:
            low = tok.lower().lstrip("+-")
            if low in ("nan", "inf", "infinity"):
                return f"weight {tok!r} is {'NaN' if low == 'nan' else 'infinite'}{shown}"
            what = "an integer or decimal number"
        else:
            what = "an integer"
        return f"expected {what} as the {colname}, found {tok!r}{shown}"
    if code == _E_OVERFLOW:
        return f"integer {tok!r} ({colname}) does not fit in int64{shown}"
    if code == _E_FEW:
        if spec.mode == _M_EDGELIST:
            return (f"expected {spec.ncols} fields (src dst{' weight' if spec.ncols == 3 else ''}, "
                    f"as on the file's first data line), found {col}{shown}")
        if spec.mode == _M_GR:
            return f"expected an arc 'a U V W', found {col} of its 3 numbers{shown}"
        return f"expected {spec.ncols} fields (I J{' V' if spec.ncols == 3 else ''}), found {col}{shown}"
    if code == _E_MANY:
        if spec.mode == _M_EDGELIST:
            return (f"expected {spec.ncols} fields (as on the file's first data line), found "
                    f"more: {tok!r}{shown}")
        return f"expected {ncols} fields, found more: {tok!r}{shown}"
    if code == _E_EMPTY:
        return f"empty field (a comma with nothing before or after it){shown}"
    if code == _E_LOW:
        if spec.base == 1:
            return f"vertex id {tok} ({colname}) must be >= 1 in this 1-based format{shown}"
        return f"vertex id {tok} ({colname}) is negative{shown}"
    if code == _E_HIGH:
        lim = spec.lim0 if col == 0 else spec.lim1
        if spec.mode == _M_EDGELIST:
            return f"vertex id {tok} ({colname}) is out of range: n_vertices={lim}{shown}"
        if spec.mode == _M_GR:
            return f"vertex id {tok} ({colname}) exceeds N={lim} of the problem line{shown}"
        return (f"{'row' if col == 0 else 'column'} index {tok} exceeds "
                f"{'M' if col == 0 else 'N'}={lim} of the size line{shown}")
    if code == _E_LINE:
        return f"expected a 'c' comment or an 'a U V W' arc line{shown}"
    if code == _E_PLINE:
        return f"a second problem line; expected one 'p sp N M' before the arcs{shown}"
    if code == _E_WINT:
        return f"expected an integer weight (field 'integer'), found {tok!r}{shown}"
    return f"unreadable line (kernel status {code}){shown}"  # pragma: no cover


def _nonfinite_error(p, vals=None):
    """``(local line, reason)`` of the first fractional weight that is not finite, or ``None``."""
    if vals is None:
        vals = _float_values(p)
    bad = ~np.isfinite(vals)
    if not bad.any():
        return None
    k = int(np.argmax(bad))
    tok = bytes(p.fbuf[p.foff[k]:p.foff[k + 1]]).decode("ascii", "replace")
    what = "NaN" if np.isnan(vals[k]) else "infinite"
    return int(p.fline[k]), f"weight {tok!r} is {what} as a float64"


# ---------------------------------------------------------------------------
# text: the scan (runs on the workers) and the loads
# ---------------------------------------------------------------------------

def _scan_text_block(tf, a, b, gran, piece=_PIECE):
    """Scan the lines of ``tf`` that start in byte range ``[a, b)`` (``b=None``: to the end).

    Returns a small dict: ``rows`` (kept), ``raw`` (all data lines), ``lines``,
    ``maxid``, ``float`` (a fractional weight seen), ``ck`` (checkpoints with
    block-local rows and lines; the first is the block's start), ``start`` and
    ``stop`` (the aligned byte range) and ``error``: ``None`` or
    ``(local line index, reason)``.
    """
    if tf.compression is None:
        s = max(a, tf.data_start)
        s = tf.data_start if s == tf.data_start else _line_start_at_or_after(tf.path, s)
        e = tf.size if b is None or b >= tf.size else _line_start_at_or_after(tf.path, b)
    else:
        s, e = tf.data_start, None
    out = {"rows": 0, "raw": 0, "lines": 0, "maxid": -1, "float": False, "error": None,
           "start": s, "stop": e}
    cks = [np.array([[s, 0, 0]], np.int64)]
    if e is not None and s >= e:
        out["ck"] = cks[0]
        out["stop"] = s
        return out
    rows = raw = lines = 0
    maxid = -1
    nextck = s + gran
    pos = s
    for pos, data in _pieces(tf.path, tf.compression, s, e, piece):
        buf = np.frombuffer(data, np.uint8)
        p = _parse_piece(buf, pos, tf.spec, False, gran, maxid, nextck)
        st = p.st
        if st[_S_NF]:  # fractional weights come before any kernel error: check them first
            out["float"] = True
            bad = _nonfinite_error(p)
            if bad is not None:
                out["error"] = (lines + bad[0], bad[1])
                break
        if st[_S_STATUS] != _OK:
            out["error"] = (lines + int(st[_S_ELINE]), _error_reason(p, tf.spec))
            break
        nck = int(st[_S_NCK])
        if nck:
            c = p.ck[:nck].copy()
            c[:, 1] += rows
            c[:, 2] += lines
            cks.append(c)
        rows += int(st[_S_ROWS])
        raw += int(st[_S_RAW])
        lines += int(st[_S_LINES])
        maxid = int(st[_S_MAXID])
        nextck = int(st[_S_NEXTCK])
        pos += len(data)
    out.update(rows=rows, raw=raw, lines=lines, maxid=maxid)
    ck = np.concatenate(cks)
    # drop checkpoints that repeat the block start
    keep = np.ones(len(ck), bool)
    keep[1:] = ck[1:, 0] > ck[0, 0]
    out["ck"] = ck[keep]
    if e is None:
        out["stop"] = pos
    return out


def _text_rows(start, stop, *, path, compression, spec, ck, weight_float):
    """Rows ``[start, stop)`` of a text file (a source's row function; runs on a worker).

    ``ck`` is the file's checkpoint table ``(byte offset, rows before, lines
    before)``, its last entry the end of the body.
    """
    start, stop = int(start), int(stop)
    m = int(ck[-1, 1])
    if not 0 <= start <= stop <= m:
        raise ValueError(f"row range [{start}, {stop}) is outside [0, {m})")
    wdt = np.float64 if weight_float else np.int64
    if start == stop:
        z = np.zeros(0, np.int64)
        return z, z.copy(), np.zeros(0, wdt)
    rows_col = ck[:, 1]
    i = int(np.searchsorted(rows_col, start, "right")) - 1
    j = int(np.searchsorted(rows_col, stop, "left"))
    s_pos, e_pos = int(ck[i, 0]), int(ck[j, 0])
    base_row, base_line = int(ck[i, 1]), int(ck[i, 2])
    need = stop - start
    out_s = np.empty(need, np.int64)
    out_d = np.empty(need, np.int64)
    out_wi = np.empty(need, np.int64)
    fpos, fval = [], []
    got = 0          # rows written to the outputs
    seen = 0         # rows parsed since the checkpoint
    lines = 0
    skip = start - base_row
    for pos, data in _pieces(path, compression, s_pos, e_pos):
        buf = np.frombuffer(data, np.uint8)
        lskip = max(0, skip - seen)
        p = _parse_piece(buf, pos, spec, True, 0, -1, 0,
                         out=(out_s[got:], out_d[got:], out_wi[got:]), skip=lskip)
        st = p.st
        vals = None
        if st[_S_NF]:
            vals = _float_values(p)
            bad = _nonfinite_error(p, vals)
            if bad is not None:
                raise GraphFormatError(bad[1], path=path, line=base_line + lines + bad[0] + 1)
        if st[_S_STATUS] != _OK:
            raise GraphFormatError(_error_reason(p, spec), path=path,
                                   line=base_line + lines + int(st[_S_ELINE]) + 1)
        r = int(st[_S_ROWS])
        if vals is not None:
            if not weight_float:
                raise GraphFormatError(
                    "fractional weight in a file scanned as integer-weighted: the file changed "
                    "since read() scanned it", path=path, line=base_line + lines + int(p.fline[0]) + 1)
            fpos.append(got + p.frow[:int(st[_S_NF])])
            fval.append(vals)
        got += min(max(0, r - lskip), need - got)
        seen += r
        lines += int(st[_S_LINES])
    out_w = out_wi
    if weight_float:
        out_w = out_wi.astype(np.float64)
        for a, v in zip(fpos, fval):
            out_w[a] = v
    if seen != int(ck[j, 1]) - base_row or got != need:
        raise GraphFormatError(
            f"found {seen} rows between lines {base_line + 1} and {base_line + lines}, expected "
            f"{int(ck[j, 1]) - base_row}: the file changed since read() scanned it", path=path)
    return out_s, out_d, out_w


# ---------------------------------------------------------------------------
# text: the client's sniff of each file's head
# ---------------------------------------------------------------------------

_WS = " \t\r\v\f"
_SPLIT = re.compile(r"[ \t\r\v\f]*,[ \t\r\v\f]*|[ \t\r\v\f]+")
_INT = re.compile(r"[+-]?[0-9]+")


def _words(text):
    """Whitespace-separated words (the kernel's whitespace: space, tab, CR, VT, FF)."""
    text = text.strip(_WS)
    return re.split(r"[ \t\r\v\f]+", text) if text else []


def _int_word(word):
    """The integer a header word spells (``[+-]?[0-9]+``), else ``ValueError``."""
    if not _INT.fullmatch(word):
        raise ValueError(word)
    return int(word)


def _head_lines(path, compression):
    """Yield ``(offset, line bytes without the newline, has_newline)`` from the file's start."""
    with _open(path, compression) as f:
        pos = 0
        carry = b""
        while True:
            got = _read_or_fail(f, 1 << 16, path, compression)
            data = carry + got
            if not got:
                if data:
                    yield pos, data, False
                return
            start = 0
            while True:
                k = data.find(b"\n", start)
                if k < 0:
                    break
                yield pos + start, data[start:k], True
                start = k + 1
            carry = data[start:]
            pos += start


def _decode_head(path, line, lineno):
    try:
        return line.decode("ascii")
    except UnicodeDecodeError:
        raise GraphFormatError("non-ASCII bytes where a header or data line was expected",
                               path=path, line=lineno) from None


def _sniff_edgelist(path, compression, size, header, weights, dedupe, n_vertices):
    if header not in ("auto", True, False):
        raise ValueError(f"header must be 'auto', True or False, got {header!r}")
    data_start = None
    lines_before = 0
    ncols = None
    header_done = header is False
    lineno = 0
    for off, raw, _ in _head_lines(path, compression):
        lineno += 1
        s = raw.strip(b" \t\r\v\f")
        if not s or s[:1] in (b"#", b"%"):
            continue
        if not header_done:
            header_done = True
            first = s[:1]
            is_header = header is True or not (first.isdigit() or first in (b"+", b"-", b"."))
            if is_header:
                continue
        data_start = off
        lines_before = lineno - 1
        text = s.decode("ascii", "replace")
        ncols = len(_SPLIT.split(text))
        if ncols not in (2, 3):
            raise GraphFormatError(
                f"expected 2 or 3 fields (src dst [weight]) on the first data line, found {ncols} "
                f"(line: {text[:80]!r})", path=path, line=lineno)
        break
    if data_start is None:  # no data line at all
        data_start, lines_before, ncols = 0, 0, 2
        data_start = _file_end(path, compression, size)
        lines_before = lineno
    wk = _W_NONE if ncols == 2 else {"auto": _W_AUTO, "float": _W_REAL, "int": _W_INT}[weights]
    lim = -1 if n_vertices is None else int(n_vertices)
    spec = _TextSpec("edgelist", _M_EDGELIST, ncols, wk, 0, lim, lim, False)
    return _TextFile(path, compression, size, data_start, lines_before, spec)


def _file_end(path, compression, size):
    if compression is None:
        return size
    n = 0
    with _open(path, compression) as f:
        while True:
            got = _read_or_fail(f, _PIECE, path, compression)
            if not got:
                return n
            n += len(got)


def _sniff_gr(path, compression, size, weights, dedupe, n_vertices):
    lineno = 0
    for off, raw, nl in _head_lines(path, compression):
        lineno += 1
        s = raw.strip(b" \t\r\v\f")
        if not s:
            continue
        t = s[:1]
        if t == b"c" and (len(s) == 1 or s[1:2] in b" \t\r\v\f"):
            continue
        text = _decode_head(path, s, lineno)
        if t == b"p" and (len(s) == 1 or s[1:2] in b" \t\r\v\f"):
            parts = _words(text)
            if len(parts) != 4 or parts[1] != "sp":
                raise GraphFormatError(f"expected the problem line 'p sp N M', found {text[:80]!r}",
                                       path=path, line=lineno)
            try:
                n, m = _int_word(parts[2]), _int_word(parts[3])
            except ValueError:
                raise GraphFormatError(f"expected integers N and M in the problem line, found "
                                       f"{text[:80]!r}", path=path, line=lineno) from None
            if n < 0 or m < 0:
                raise GraphFormatError(f"negative N or M in the problem line {text[:80]!r}",
                                       path=path, line=lineno)
            data_start = off + len(raw) + (1 if nl else 0)
            if n_vertices is not None and n_vertices < n:
                raise ValueError(f"n_vertices={n_vertices} is smaller than N={n} declared by {path}")
            wk = {"auto": _W_AUTO, "float": _W_REAL, "int": _W_INT}[weights]
            spec = _TextSpec("gr", _M_GR, 3, wk, 1, n, n, bool(dedupe))
            return _TextFile(path, compression, size, data_start, lineno, spec, declared=m,
                             declared_line=lineno, n=n)
        if t == b"a":
            raise GraphFormatError("arc line before the problem line 'p sp N M'",
                                   path=path, line=lineno)
        raise GraphFormatError(f"expected a 'c' comment or the problem line 'p sp N M', found "
                               f"{text[:80]!r}", path=path, line=lineno)
    raise GraphFormatError("no problem line 'p sp N M' (empty or truncated file)", path=path,
                           line=lineno or None)


_MTX_FIELDS = {"integer": _W_INT, "real": _W_REAL, "pattern": _W_NONE}


def _sniff_mtx(path, compression, size, weights, dedupe, n_vertices):
    lineno = 0
    field = symmetry = None
    for off, raw, nl in _head_lines(path, compression):
        lineno += 1
        if lineno == 1:
            text = _decode_head(path, raw.strip(b" \t\r\v\f"), 1)
            parts = _words(text)
            if not parts or parts[0].lower() != "%%matrixmarket":
                raise GraphFormatError(
                    f"expected the banner '%%MatrixMarket matrix coordinate <field> <symmetry>', "
                    f"found {text[:80]!r}", path=path, line=1)
            if len(parts) != 5:
                raise GraphFormatError(f"expected 5 words in the banner, found {len(parts)}: "
                                       f"{text[:80]!r}", path=path, line=1)
            obj, fmt, field, symmetry = (x.lower() for x in parts[1:])
            if obj != "matrix" or fmt != "coordinate":
                raise GraphFormatError(
                    f"only 'matrix coordinate' files hold graphs, found '{obj} {fmt}'",
                    path=path, line=1)
            if field not in _MTX_FIELDS:
                raise GraphFormatError(f"unsupported field {field!r}; expected integer, real or "
                                       f"pattern", path=path, line=1)
            if symmetry not in ("general", "symmetric"):
                raise GraphFormatError(f"unsupported symmetry {symmetry!r}; expected general or "
                                       f"symmetric", path=path, line=1)
            continue
        s = raw.strip(b" \t\r\v\f")
        if not s or s[:1] == b"%":
            continue
        text = _decode_head(path, s, lineno)
        parts = _words(text)
        try:
            if len(parts) != 3:
                raise ValueError
            rows, cols, nnz = (_int_word(x) for x in parts)
            if min(rows, cols, nnz) < 0:
                raise ValueError
        except ValueError:
            raise GraphFormatError(f"expected the size line 'M N NNZ' (non-negative integers), "
                                   f"found {text[:80]!r}", path=path, line=lineno) from None
        n = max(rows, cols)
        if n_vertices is not None and n_vertices < n:
            raise ValueError(f"n_vertices={n_vertices} is smaller than max(M, N)={n} declared by {path}")
        wk = _MTX_FIELDS[field]
        if weights != "auto" and wk != _W_NONE:
            wk = {"int": _W_INT, "float": _W_REAL}[weights]
        ded = bool(dedupe) and symmetry == "general"
        spec = _TextSpec("mtx", _M_MTX, 2 if field == "pattern" else 3, wk, 1, rows, cols, ded)
        return _TextFile(path, compression, size, off + len(raw) + (1 if nl else 0), lineno, spec,
                         declared=nnz, declared_line=lineno, n=n)
    if lineno == 0:
        raise GraphFormatError("empty file; expected the banner '%%MatrixMarket ...'", path=path)
    raise GraphFormatError("no size line 'M N NNZ' (truncated file?)", path=path, line=lineno)


# ---------------------------------------------------------------------------
# running small tasks (the scans) on the cluster
# ---------------------------------------------------------------------------

def _client_of(client):
    if client is False:
        return None
    if client is not None:
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _map_tasks(func, arglist, client, prefix):
    """``[func(*args) for args in arglist]`` as tasks ``mst-<prefix>-*``: on the client's cluster
    (``client``, else the current one), else on local threads (also with ``client=False``)."""
    if not arglist:
        return []
    client = _client_of(client)
    if client is None:
        if len(arglist) == 1:
            return [func(*arglist[0])]
        with ThreadPoolExecutor(max_workers=min(len(arglist), os.cpu_count() or 1)) as ex:
            return list(ex.map(lambda a: func(*a), arglist))
    token = uuid.uuid4().hex[:8]
    futs = [client.submit(func, *a, key=f"mst-{prefix}-{token}-{i}", pure=False)
            for i, a in enumerate(arglist)]
    try:
        return client.gather(futs)
    finally:
        for f in futs:
            f.release()


# ---------------------------------------------------------------------------
# text: building the graph
# ---------------------------------------------------------------------------

def _auto_blocksize(paths, client):
    """About four scan blocks per thread, each between 4 and 64 MiB (balance without tiny tasks)."""
    c = _client_of(client)
    threads = None
    if c is not None:
        try:
            threads = sum(c.nthreads().values())
        except Exception:  # pragma: no cover - a client without workers yet
            threads = None
    threads = threads or os.cpu_count() or 1
    total = sum(os.path.getsize(p) for p in paths)
    return int(min(_DEFAULT_BLOCK, max(4 * _MIB, -(-total // (4 * threads)))))


def _checkpoint_spacing(size):
    return max(_MIB, -(-size // _MAX_CHECKPOINTS))


def _read_text(paths, fmt, client, n_vertices, blocksize, opts):
    header = opts.pop("header", "auto")
    weights = opts.pop("weights", "auto")
    if weights not in ("auto", "int", "float"):
        raise ValueError(f"weights must be 'auto', 'int' or 'float', got {weights!r}")
    dedupe = opts.pop("dedupe_directions", None)
    if fmt == "edgelist" and dedupe is not None:
        raise ValueError("dedupe_directions applies to gr, mtx and egr files, not edge lists")
    if blocksize is None:
        blocksize = _auto_blocksize(paths, client)
    blocksize = int(blocksize)
    if blocksize < 1:
        raise ValueError(f"blocksize must be positive, got {blocksize}")
    files = []
    for path in paths:
        comp = _compression(path)
        size = os.path.getsize(path)
        if fmt == "edgelist":
            files.append(_sniff_edgelist(path, comp, size, header, weights, dedupe, n_vertices))
        elif fmt == "gr":
            files.append(_sniff_gr(path, comp, size, weights, dedupe, n_vertices))
        else:
            files.append(_sniff_mtx(path, comp, size, weights, dedupe, n_vertices))
    tasks, owners = [], []
    for fi, tf in enumerate(files):
        gran = _checkpoint_spacing(tf.size)
        if tf.compression is None:
            body = tf.size - tf.data_start
            nblocks = max(1, -(-body // blocksize))
            for b in range(nblocks):
                a = tf.data_start + b * blocksize
                e = None if b == nblocks - 1 else tf.data_start + (b + 1) * blocksize
                tasks.append((tf, a, e, gran))
                owners.append(fi)
        else:
            tasks.append((tf, tf.data_start, None, 1 << 62))
            owners.append(fi)
    results = _map_tasks(_scan_text_block, tasks, client, "read-scan")
    per_file = [[] for _ in files]
    for fi, r in zip(owners, results):
        per_file[fi].append(r)
    sources = []
    maxid = -1
    any_float = False
    total = 0
    for tf, blocks in zip(files, per_file):
        rows = raw = 0
        lines = tf.lines_before
        cks = []
        for r in blocks:
            if r["error"] is not None:
                local, reason = r["error"]
                raise GraphFormatError(reason, path=tf.path, line=lines + local + 1)
            c = r["ck"].copy()
            c[:, 1] += rows
            c[:, 2] += lines
            cks.append(c)
            rows += r["rows"]
            raw += r["raw"]
            lines += r["lines"]
            maxid = max(maxid, r["maxid"])
            any_float |= r["float"]
        end = blocks[-1]["stop"]
        cks.append(np.array([[end, rows, lines]], np.int64))
        ck = np.concatenate(cks)
        # keep one checkpoint per position (empty blocks repeat their neighbours')
        keep = np.ones(len(ck), bool)
        keep[1:] = ck[1:, 0] > ck[:-1, 0]
        keep[-1] = True
        ck = ck[keep]
        if tf.declared is not None and raw != tf.declared:
            what = "arcs" if tf.spec.fmt == "gr" else "entries"
            decl = "problem line" if tf.spec.fmt == "gr" else "size line"
            raise GraphFormatError(
                f"the {decl} declares {tf.declared} {what}, the file has {raw}"
                + (" (truncated?)" if raw < tf.declared else ""),
                path=tf.path, line=tf.declared_line)
        if tf.n is not None:
            maxid = max(maxid, tf.n - 1)
        sources.append((tf, ck, rows))
        total += rows
    if fmt == "mtx":
        wk = {f.spec.wkind for f in files}
        weight_float = _W_REAL in wk
    else:
        weight_float = any_float or (weights == "float" and any(f.spec.ncols == 3 for f in files))
    if n_vertices is None:
        n_vertices = maxid + 1
    out = []
    for tf, ck, rows in sources:
        params = {"path": tf.path, "compression": tf.compression, "spec": tf.spec, "ck": ck,
                  "weight_float": weight_float}
        out.append(FunctionSource(_text_rows, params, rows, name=os.path.basename(tf.path),
                                  splittable=tf.compression is None))
    return out, int(n_vertices), np.dtype(np.float64 if weight_float else np.int64), {}


# ---------------------------------------------------------------------------
# binary: validation shared by npz, npy, egr and parquet loads
# ---------------------------------------------------------------------------

def _as_ids(a, path, column, row0, row_group=None):
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise GraphFormatError(f"column {column!r} has dtype {a.dtype}; vertex ids must be integers",
                               path=path, row_group=row_group)
    if a.dtype == np.uint64 and a.size and a.max() > np.uint64(_I64_MAX):
        k = int(np.argmax(a > np.uint64(_I64_MAX)))
        raise GraphFormatError(f"vertex id {int(a[k])} in column {column!r} does not fit in int64",
                               path=path, row_group=row_group, row=row0 + k)
    return a.astype(np.int64, copy=False)


def _as_weights(a, path, column, row_group=None):
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


def _check_rows(src, dst, w, n, path, row0, row_group=None, base=0):
    """Raise naming the first bad row (``row0`` = the file/row-group row of ``src[0]``)."""
    from mst_dist.kernels import cpu

    i, reason, _ = cpu.first_invalid_edge(src, dst, w, n)
    if i >= 0:
        wv = f", weight={w[i].item()!r}" if w is not None else ""
        raise GraphFormatError(
            f"{reason} (src={int(src[i]) + base}, dst={int(dst[i]) + base}{wv}"
            + (f"; n_vertices={n})" if "range" in reason else ")"),
            path=path, row_group=row_group, row=row0 + i)


def _max_id(src, dst):
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
    src = _as_ids(cols[0], path, members["src"][0], start)
    dst = _as_ids(cols[1], path, members["dst"][0], start)
    w = _as_weights(cols[2], path, members["weight"][0] or "weight")
    if weight_float:
        w = w.astype(np.float64, copy=False)
    _check_rows(src, dst, w, n, path, start)
    return src, dst, w


def _column_names(opts):
    names = {"src": opts.pop("src", "src"), "dst": opts.pop("dst", "dst")}
    explicit = "weight" in opts
    names["weight"] = opts.pop("weight", "weight")
    return names, explicit


def _read_npz(paths, client, n_vertices, opts):
    names, explicit = _column_names(opts)
    metas = []
    for path in paths:
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as e:
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
                except (ValueError, zipfile.BadZipFile, EOFError, OSError) as e:
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
        scans = _map_tasks(_scan_binary, [(func, params_of(p, m, -1), length)
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
        mx = max(mx, _max_id(s, d))
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
    src = _as_ids(cols[0], path, "src", start)
    dst = _as_ids(cols[1], files["dst"], "dst", start)
    w = _as_weights(cols[2], files["weight"] or path, "weight")
    if weight_float:
        w = w.astype(np.float64, copy=False)
    _check_rows(src, dst, w, n, os.path.dirname(path), start)
    return src, dst, w


def _read_npy(paths, client, n_vertices, opts):
    names, explicit = _column_names(opts)
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


def _read_egr(paths, client, n_vertices, opts):
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
            counts = _map_tasks(_egr_count, [(path, nodes, edges, weighted, a, b)
                                             for a, b in zip(bounds[:-1], bounds[1:])], client, "read-scan")
            ck = np.array([bounds, [0] + list(np.cumsum(counts, dtype=np.int64))], np.int64).T.copy()
            rows = int(ck[-1, 1])
        params = {"path": path, "nodes": nodes, "edges": edges, "weighted": weighted,
                  "dedupe": dedupe, "ck": ck}
        sources.append(FunctionSource(_egr_rows, params, rows, name=os.path.basename(path)))
    n = n_max if n_vertices is None else n_vertices
    return sources, int(n), np.dtype(np.int64), {}


# ---------------------------------------------------------------------------
# parquet
# ---------------------------------------------------------------------------

def _parquet_rows(start, stop, *, path, columns, groups, n, weight_float):
    """Rows ``[start, stop)`` of a Parquet file, read by row groups (a source's row function).

    ``groups`` holds each row group's first row, then the file's row count.
    """
    import pyarrow.parquet as pq

    g0 = int(np.searchsorted(groups, start, "right")) - 1
    g1 = int(np.searchsorted(groups, stop, "left"))
    want = [c for c in columns.values() if c is not None]
    out = {k: [] for k in columns}
    pf = pq.ParquetFile(path)
    for g in range(g0, g1):
        lo = max(start, int(groups[g])) - int(groups[g])
        hi = min(stop, int(groups[g + 1])) - int(groups[g])
        t = pf.read_row_group(g, columns=want)
        for key, col in columns.items():
            if col is None:
                out[key].append(np.ones(hi - lo, np.int64))
                continue
            c = t.column(col).slice(lo, hi - lo)
            if c.null_count:
                k = int(np.argmax(np.asarray(c.is_null().to_numpy(zero_copy_only=False))))
                raise GraphFormatError(f"null in column {col!r}", path=path, row_group=g, row=lo + k)
            import pyarrow as pa

            if pa.types.is_dictionary(c.type):
                c = c.cast(c.type.value_type)
            a = c.to_numpy()
            if key == "weight":
                a = _as_weights(a, path, col, row_group=g)
            else:
                a = _as_ids(a, path, col, lo, row_group=g)
            out[key].append(a)
        s, d, w = out["src"][-1], out["dst"][-1], out["weight"][-1]
        if weight_float:
            w = out["weight"][-1] = w.astype(np.float64, copy=False)
        _check_rows(s, d, w, n, path, lo, row_group=g)
    cat = [np.concatenate(out[k]) if out[k] else np.zeros(0, np.int64) for k in ("src", "dst", "weight")]
    if weight_float:
        cat[2] = cat[2].astype(np.float64, copy=False)
    return cat[0], cat[1], cat[2]


def _parquet_scan(path, columns, groups):
    """Largest id of a Parquet file (a scan task), validating every row group."""
    mx = -1
    for g in range(len(groups) - 1):
        s, d, _ = _parquet_rows(int(groups[g]), int(groups[g + 1]), path=path, columns=columns,
                                groups=groups, n=-1, weight_float=False)
        mx = max(mx, _max_id(s, d))
    return mx


def _read_parquet(paths, client, n_vertices, opts):
    import pyarrow as pa
    import pyarrow.parquet as pq

    names, explicit = _column_names(opts)
    metas = []
    wfloat = False
    stats_max = -1
    stats_ok = True
    for path in paths:
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise GraphFormatError(f"not a readable Parquet file: {e}", path=path) from None
        schema = pf.schema_arrow
        have = schema.names
        columns = {}
        for key in ("src", "dst", "weight"):
            col = names[key]
            if col is None or (key == "weight" and col not in have and not explicit):
                columns[key] = None
                continue
            if col not in have:
                raise GraphFormatError(f"no column {col!r}; the file has {', '.join(have)} (name "
                                       f"the columns with src=, dst=, weight=)", path=path)
            t = schema.field(col).type
            if pa.types.is_dictionary(t):
                t = t.value_type
            if key == "weight":
                if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
                    raise GraphFormatError(f"column {col!r} has type {t}; weights must be integers "
                                           f"or floats", path=path)
                wfloat |= pa.types.is_floating(t)
            elif not pa.types.is_integer(t):
                raise GraphFormatError(f"column {col!r} has type {t}; vertex ids must be integers",
                                       path=path)
            columns[key] = col
        md = pf.metadata
        sizes = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
        groups = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            if columns["weight"] is not None:
                st = rg.column(have.index(columns["weight"])).statistics
                if st is not None and st.has_null_count and st.null_count:
                    stats_ok = False  # let the scan name the row
            for key in ("src", "dst"):
                idx = have.index(columns[key])
                st = rg.column(idx).statistics
                if st is not None and st.has_null_count and st.null_count:
                    stats_ok = False
                if st is None or not st.has_min_max or sizes[g] == 0:
                    stats_ok = stats_ok and (sizes[g] == 0)
                    continue
                try:
                    stats_max = max(stats_max, int(st.max))
                    if int(st.min) < 0:
                        stats_ok = False  # let the scan find the row
                except (TypeError, ValueError):
                    stats_ok = False
        metas.append((path, columns, groups))
    if n_vertices is None:
        if stats_ok:
            n_vertices = stats_max + 1
        else:
            scans = _map_tasks(_parquet_scan, [(p, c, g) for p, c, g in metas], client, "read-scan")
            n_vertices = max([s + 1 for s in scans] + [0])
    sources = [FunctionSource(_parquet_rows, {"path": p, "columns": c, "groups": g,
                                              "n": int(n_vertices), "weight_float": wfloat},
                              int(g[-1]), name=os.path.basename(p))
               for p, c, g in metas]
    return sources, int(n_vertices), np.dtype(np.float64 if wfloat else np.int64), {}


# ---------------------------------------------------------------------------
# paths and formats
# ---------------------------------------------------------------------------

def _natural_key(path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", os.fspath(path))]


def format_of_path(path):
    """The format a file or directory name asks for, or ``None`` when it does not tell.

    >>> format_of_path("roads/USA-road-d.NY.gr.gz"), format_of_path("g.parquet")
    ('gr', 'parquet')
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "src.npy")):
            return "npy"
        return "parquet"
    base = os.path.basename(path).lower()
    stem, ext = os.path.splitext(base)
    if ext in _COMPRESSED_EXT:
        ext = os.path.splitext(stem)[1]
    return _EXTENSIONS.get(ext)


def detect_format(path):
    """The format of ``path`` (see :data:`FORMATS`), or a :class:`GraphFormatError` listing them."""
    fmt = format_of_path(path)
    if fmt is None:
        known = ", ".join(sorted(_EXTENSIONS))
        raise GraphFormatError(
            f"cannot tell the graph format from the name; give format= (one of "
            f"{', '.join(FORMATS)}) or use a known extension ({known}, optionally with .gz/.bz2/.xz)",
            path=path)
    return fmt


def _expand(path_or_glob, fmt):
    """The list of files (or npy directories) to read, in edge id order."""
    if isinstance(path_or_glob, (list, tuple)):
        paths = [os.fspath(p) for p in path_or_glob]
        if not paths:
            raise ValueError("an empty list of paths")
        for p in paths:
            if not os.path.exists(p):
                raise FileNotFoundError(f"no such file: {p!r}")
        return paths
    p = os.fspath(path_or_glob)
    if any(ch in p for ch in "*?["):
        paths = sorted((q for q in _glob.glob(p) if not os.path.isdir(q) or fmt == "npy"),
                       key=_natural_key)
        if not paths:
            raise FileNotFoundError(f"no file matches {p!r}")
        return paths
    if not os.path.exists(p):
        raise FileNotFoundError(f"no such file or directory: {p!r}")
    if os.path.isdir(p) and fmt != "npy":
        paths = []
        for root, dirs, names in os.walk(p):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            for name in names:
                if name.startswith((".", "_")) or name.endswith((".crc", ".json")):
                    continue
                paths.append(os.path.join(root, name))
        paths.sort(key=_natural_key)
        if not paths:
            raise FileNotFoundError(f"no data files in directory {p!r}")
        return paths
    return [p]


_READERS = {"npz": _read_npz, "npy": _read_npy, "egr": _read_egr, "parquet": _read_parquet}

#: Options each format takes (besides ``client``, ``n_vertices``, ``name``).
_OPTIONS = {
    "edgelist": {"header", "weights", "blocksize"},
    "gr": {"weights", "dedupe_directions", "blocksize"},
    "mtx": {"weights", "dedupe_directions", "blocksize"},
    "npz": {"src", "dst", "weight"},
    "npy": {"src", "dst", "weight"},
    "egr": {"dedupe_directions"},
    "parquet": {"src", "dst", "weight"},
}


def read(path_or_glob, format=None, *, client=None, n_vertices=None, name=None, **opts) -> Graph:
    """Read a graph from files, in chunks on the workers.

    Parameters
    ----------
    path_or_glob : str, os.PathLike or list of them
        A file, a glob (``"edges/part-*.txt.gz"``), a directory (Parquet files,
        or ``src.npy``/``dst.npy``/``weight.npy`` column files) or a list of
        paths.  Several files are one graph: edge ids run through them in
        natural name order (list order for a list).
    format : str, optional
        One of :data:`FORMATS`; default from the extension (a ``.gz``,
        ``.bz2`` or ``.xz`` suffix is looked through).
    client : distributed.Client or False, optional
        Where the scan tasks run (text formats; binary ones without
        ``n_vertices`` when they have no statistics): default the current
        ``distributed`` client, else threads of this process; ``False``:
        threads of this process.  The loads run wherever the graph is
        computed.
    n_vertices : int, optional
        Number of vertices (default: ``max id + 1``, or the size the file
        declares); larger values add isolated vertices, smaller ones are an
        error.
    name : str, optional
        The graph's name (default: the file name).
    **opts
        Format options: ``header`` (edge list: ``"auto"``, ``True``,
        ``False``); ``weights`` (text: ``"auto"``, ``"int"``, ``"float"``);
        ``dedupe_directions`` (gr, mtx, egr: keep only ``u < v``);
        ``blocksize`` (text: bytes per scan task; default about four blocks
        per worker thread, between 4 and 64 MiB); ``src``,
        ``dst``, ``weight`` (npz, npy, parquet: column names;
        ``weight=None`` for weight 1).  An option the format does not take is
        an error.

    Returns
    -------
    Graph
        Its sources load rows on demand; ``graph.meta`` records the format
        and the files.

    Raises
    ------
    GraphFormatError
        Unknown format or bad content, naming the file and line or row.
    FileNotFoundError
        No such file, or a glob that matches nothing.

    Examples
    --------
    >>> import os, tempfile, mst_dist
    >>> p = os.path.join(tempfile.mkdtemp(), "g.txt")
    >>> _ = open(p, "w").write("# a triangle\\n0 1 4\\n1 2 1\\n2 0 2\\n")
    >>> g = mst_dist.read(p)
    >>> g.n_vertices, g.n_edges, g.weight_dtype.name
    (3, 3, 'int64')
    >>> mst_dist.minimum_spanning_forest(g).edge_ids.tolist()
    [1, 2]
    """
    if format is None:
        first = path_or_glob[0] if isinstance(path_or_glob, (list, tuple)) and path_or_glob \
            else path_or_glob
        fmt = detect_format(first) if not any(ch in os.fspath(first) for ch in "*?[") else None
        if fmt is None:  # a glob: the format of its first match
            matches = sorted(_glob.glob(os.fspath(first)), key=_natural_key)
            if not matches:
                raise FileNotFoundError(f"no file matches {os.fspath(first)!r}")
            fmt = detect_format(matches[0])
    else:
        fmt = format
    if fmt not in FORMATS:
        raise GraphFormatError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    check_options(fmt, opts, _OPTIONS[fmt])
    if n_vertices is not None:
        if isinstance(n_vertices, bool) or int(n_vertices) != n_vertices or n_vertices < 0:
            raise ValueError(f"n_vertices must be a non-negative integer, got {n_vertices!r}")
        n_vertices = int(n_vertices)
    paths = _expand(path_or_glob, fmt)
    opts = dict(opts)
    if fmt in ("edgelist", "gr", "mtx"):
        blocksize = opts.pop("blocksize", None)
        sources, n, wdt, meta = _read_text(paths, fmt, client, n_vertices, blocksize, opts)
    else:
        sources, n, wdt, meta = _READERS[fmt](paths, client, n_vertices, opts)
    if name is None:
        if isinstance(path_or_glob, (list, tuple)):
            name = os.path.basename(os.fspath(paths[0])) + (
                f" (+{len(paths) - 1} files)" if len(paths) > 1 else "")
        else:
            name = os.path.basename(os.fspath(path_or_glob).rstrip("/" + os.sep))
    meta = {"format": fmt, "files": [os.fspath(p) for p in paths], **meta}
    g = Graph(n_vertices=n, sources=sources, weight_dtype=wdt, validated=True, name=name, meta=meta)
    logger.debug("read %s: %s", fmt, g)
    return g

"""Text graph files (SNAP edge lists, DIMACS ``.gr``, Matrix Market ``.mtx``): sniff, scan, load.

:func:`read_edgelist`, :func:`read_gr` and :func:`read_mtx` turn a list of
files into sources (:class:`~mst_dist.graph.FunctionSource` over
:func:`text_rows`); the parsing itself is the Numba kernel of
:mod:`mst_dist.io.readers.textkernel`, imported on first use.

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
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import zlib
from dataclasses import dataclass, replace

import numpy as np

from mst_dist.graph import FunctionSource
from mst_dist.io.formats import GraphFormatError
from mst_dist.io.readers.textcodes import (
    E_EMPTY, E_FEW, E_HIGH, E_LINE, E_LOW, E_MANY, E_OVERFLOW, E_PLINE, E_TOKEN, E_WINT,
    M_EDGELIST, M_GR, M_MTX, NSTATS, OK, S_ECOL, S_EEND, S_ELINE, S_ELS, S_EPOS, S_FB,
    S_LINES, S_MAXID, S_NCK, S_NEXTCK, S_NF, S_RAW, S_ROWS, S_STATUS, W_AUTO, W_INT, W_NONE,
    W_REAL, ParseJob, ParseSpec,
)
from mst_dist.io import urls
from mst_dist.io.tasks import current_client, map_tasks

__all__ = ["read_edgelist", "read_gr", "read_mtx", "text_rows", "OPTIONS"]

#: Options each text format takes (besides ``client``, ``n_vertices``, ``name``).
OPTIONS = {
    "edgelist": {"header", "weights", "blocksize"},
    "gr": {"weights", "dedupe_directions", "blocksize"},
    "mtx": {"weights", "dedupe_directions", "blocksize"},
}

_MIB = 1 << 20
_PIECE = 16 * _MIB          # bytes parsed per kernel call
_DEFAULT_BLOCK = 64 * _MIB  # bytes per scan task
_MAX_CHECKPOINTS = 4096     # per file: the checkpoint spacing is max(1 MiB, size / this)


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

    def parse_spec(self):
        """The kernel's record of these fields (a named tuple Numba takes)."""
        return ParseSpec(int(self.mode), int(self.ncols), int(self.wkind), int(self.base),
                         int(self.lim0), int(self.lim1), bool(self.dedupe))


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


@dataclass(frozen=True)
class TextOptions:
    """A text format's options, from the caller's keywords, checked once when built.

    Parameters
    ----------
    fmt : {"edgelist", "gr", "mtx"}
        The format.
    header : {"auto", True, False}
        Edge lists: whether the first data-like line is a header.
    weights : {"auto", "int", "float"}
        The weight dtype: from the file (``"auto"``) or forced.
    dedupe_directions : bool, optional
        ``.gr`` and ``.mtx``: keep only the rows with ``u < v``; edge lists
        refuse it.
    blocksize : int, optional
        Bytes per scan task (default: chosen from the files and the cluster).
    n_vertices : int, optional
        The caller's vertex count: a bound on the ids.

    Raises
    ------
    ValueError
        An option outside its choices, a ``blocksize`` below 1, or
        ``dedupe_directions`` for an edge list.
    """

    fmt: str
    header: object = "auto"
    weights: str = "auto"
    dedupe_directions: object = None
    blocksize: object = None
    n_vertices: object = None

    def __post_init__(self):
        if self.weights not in ("auto", "int", "float"):
            raise ValueError(f"weights must be 'auto', 'int' or 'float', got {self.weights!r}")
        if self.fmt == "edgelist" and self.dedupe_directions is not None:
            raise ValueError("dedupe_directions applies to gr, mtx and egr files, not edge lists")
        if self.blocksize is not None:
            object.__setattr__(self, "blocksize", int(self.blocksize))
            if self.blocksize < 1:
                raise ValueError(f"blocksize must be positive, got {self.blocksize}")
        if self.header not in ("auto", True, False):
            raise ValueError(f"header must be 'auto', True or False, got {self.header!r}")

    @classmethod
    def from_keywords(cls, fmt, n_vertices, opts):
        """The options of ``fmt`` from a reader's ``n_vertices`` and format keywords ``opts``."""
        return cls(fmt, header=opts.get("header", "auto"), weights=opts.get("weights", "auto"),
                   dedupe_directions=opts.get("dedupe_directions"),
                   blocksize=opts.get("blocksize"), n_vertices=n_vertices)

    @property
    def dedupe(self):
        """Whether to keep only ``u < v`` rows."""
        return bool(self.dedupe_directions)

    @property
    def weight_kind(self):
        """The kernel's weight kind for a file with a weight column (``W_*``)."""
        return {"auto": W_AUTO, "float": W_REAL, "int": W_INT}[self.weights]


_BZ2_LEVELS = {bytes([c]) for c in b"123456789"}


def _compression(path):
    """``"gzip"``, ``"bz2"``, ``"xz"`` or ``None``, from the file's magic bytes."""
    with urls.open_binary(path) as f:
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
    if urls.is_url(path):  # an object store or web server: fsspec, byte ranges as a local file
        return urls.open_binary(path) if compression is None else \
            {"gzip": gzip, "bz2": bz2, "xz": lzma}[compression].open(urls.open_binary(path), "rb")
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
    with urls.open_binary(path) as f:
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
    from mst_dist.io.readers.textkernel import count_lines, parse_text

    lines_cap = count_lines(buf)
    p = _Parsed()
    p.buf = buf
    if store and out is not None:
        p.src, p.dst, p.wint = out
    else:
        cap = lines_cap if store else 0
        p.src = np.empty(cap, np.int64)
        p.dst = np.empty(cap, np.int64)
        p.wint = np.empty(cap, np.int64)
    fcap = buf.shape[0] if spec.wkind in (W_REAL, W_AUTO) else 0
    p.fbuf = np.empty(fcap, np.uint8)
    p.foff = np.empty(lines_cap + 1, np.int64)
    p.frow = np.empty(lines_cap if fcap else 0, np.int64)
    p.fline = np.empty(lines_cap if fcap else 0, np.int64)
    p.ck = np.empty(((buf.shape[0] // gran + 2) if gran > 0 else 0, 3), np.int64)
    st = np.zeros(NSTATS, np.int64)
    st[S_MAXID] = maxid
    st[S_NEXTCK] = nextck
    parse_text(buf, pos0, spec.parse_spec(), ParseJob(bool(store), int(skip), int(gran)),
               (p.src, p.dst, p.wint), (p.fbuf, p.foff, p.frow, p.fline), p.ck, st)
    p.st = st
    return p


def _float_values(p):
    """The fractional weight tokens of a piece as float64 (Arrow's correctly rounded parser)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    nf = int(p.st[S_NF])
    if nf == 0:
        return np.zeros(0, np.float64)
    fb = int(p.st[S_FB])
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
    code = int(st[S_STATUS])
    buf = p.buf
    tok = _token_text(buf, int(st[S_EPOS]), int(st[S_EEND]))
    col = int(st[S_ECOL])
    line = _line_text(buf, int(st[S_ELS]))
    ncols = spec.ncols + (1 if spec.mode == M_GR else 0)
    colname = _COLUMN_NAMES[col] if 0 <= col < 3 else "field"
    shown = f" (line: {line!r})"
    if code == E_TOKEN:
        if col == 2:
            low = tok.lower().lstrip("+-")
            if low in ("nan", "inf", "infinity"):
                return f"weight {tok!r} is {'NaN' if low == 'nan' else 'infinite'}{shown}"
            what = "an integer or decimal number"
        else:
            what = "an integer"
        return f"expected {what} as the {colname}, found {tok!r}{shown}"
    if code == E_OVERFLOW:
        return f"integer {tok!r} ({colname}) does not fit in int64{shown}"
    if code == E_FEW:
        if spec.mode == M_EDGELIST:
            return (f"expected {spec.ncols} fields (src dst{' weight' if spec.ncols == 3 else ''}, "
                    f"as on the file's first data line), found {col}{shown}")
        if spec.mode == M_GR:
            return f"expected an arc 'a U V W', found {col} of its 3 numbers{shown}"
        return f"expected {spec.ncols} fields (I J{' V' if spec.ncols == 3 else ''}), found {col}{shown}"
    if code == E_MANY:
        if spec.mode == M_EDGELIST:
            return (f"expected {spec.ncols} fields (as on the file's first data line), found "
                    f"more: {tok!r}{shown}")
        return f"expected {ncols} fields, found more: {tok!r}{shown}"
    if code == E_EMPTY:
        return f"empty field (a comma with nothing before or after it){shown}"
    if code == E_LOW:
        if spec.base == 1:
            return f"vertex id {tok} ({colname}) must be >= 1 in this 1-based format{shown}"
        return f"vertex id {tok} ({colname}) is negative{shown}"
    if code == E_HIGH:
        lim = spec.lim0 if col == 0 else spec.lim1
        if spec.mode == M_EDGELIST:
            return f"vertex id {tok} ({colname}) is out of range: n_vertices={lim}{shown}"
        if spec.mode == M_GR:
            return f"vertex id {tok} ({colname}) exceeds N={lim} of the problem line{shown}"
        return (f"{'row' if col == 0 else 'column'} index {tok} exceeds "
                f"{'M' if col == 0 else 'N'}={lim} of the size line{shown}")
    if code == E_LINE:
        return f"expected a 'c' comment or an 'a U V W' arc line{shown}"
    if code == E_PLINE:
        return f"a second problem line; expected one 'p sp N M' before the arcs{shown}"
    if code == E_WINT:
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
        if st[S_NF]:  # fractional weights come before any kernel error: check them first
            out["float"] = True
            bad = _nonfinite_error(p)
            if bad is not None:
                out["error"] = (lines + bad[0], bad[1])
                break
        if st[S_STATUS] != OK:
            out["error"] = (lines + int(st[S_ELINE]), _error_reason(p, tf.spec))
            break
        nck = int(st[S_NCK])
        if nck:
            c = p.ck[:nck].copy()
            c[:, 1] += rows
            c[:, 2] += lines
            cks.append(c)
        rows += int(st[S_ROWS])
        raw += int(st[S_RAW])
        lines += int(st[S_LINES])
        maxid = int(st[S_MAXID])
        nextck = int(st[S_NEXTCK])
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


def text_rows(start, stop, *, path, compression, spec, ck, weight_float):
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
        if st[S_NF]:
            vals = _float_values(p)
            bad = _nonfinite_error(p, vals)
            if bad is not None:
                raise GraphFormatError(bad[1], path=path, line=base_line + lines + bad[0] + 1)
        if st[S_STATUS] != OK:
            raise GraphFormatError(_error_reason(p, spec), path=path,
                                   line=base_line + lines + int(st[S_ELINE]) + 1)
        r = int(st[S_ROWS])
        if vals is not None:
            if not weight_float:
                raise GraphFormatError(
                    "fractional weight in a file scanned as integer-weighted: the file changed "
                    "since read() scanned it", path=path, line=base_line + lines + int(p.fline[0]) + 1)
            fpos.append(got + p.frow[:int(st[S_NF])])
            fval.append(vals)
        got += min(max(0, r - lskip), need - got)
        seen += r
        lines += int(st[S_LINES])
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


def find_id_at_least(source, limit, step=1 << 22):
    """Where a text source first names a vertex id ``>= limit``: ``(line, reason)``, or ``None``.

    Edge lists are parsed again with ``limit`` as their id bound, so the
    kernel stops at the first such id and names its line; in ``.gr`` and
    ``.mtx`` files every id is bounded by the declared size, so a large id
    means a large declaration: the line that declares it.
    """
    params = source.params
    spec = params["spec"]
    if spec.mode == M_EDGELIST:
        bounded = dict(params, spec=replace(spec, lim0=int(limit), lim1=int(limit)))
        for a in range(0, source.n_edges, step):
            try:
                text_rows(a, min(source.n_edges, a + step), **bounded)
            except GraphFormatError as e:
                return e.line, e.reason.replace(f" is out of range: n_vertices={int(limit)}", "")
        return None
    if max(spec.lim0, spec.lim1) < limit:
        return None
    path = params["path"]
    size = urls.getsize(path)
    sniff = _sniff_gr if spec.mode == M_GR else _sniff_mtx
    tf = sniff(path, params["compression"], size, TextOptions(spec.fmt))
    what = "the problem line" if spec.mode == M_GR else "the size line"
    return tf.declared_line, f"{what} declares {max(spec.lim0, spec.lim1)} vertices"


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


def _sniff_edgelist(path, compression, size, opts):
    """An edge list's head: where its body starts and its number of fields."""
    header = opts.header
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
    wk = W_NONE if ncols == 2 else opts.weight_kind
    lim = -1 if opts.n_vertices is None else int(opts.n_vertices)
    spec = _TextSpec("edgelist", M_EDGELIST, ncols, wk, 0, lim, lim, False)
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


def _sniff_gr(path, compression, size, opts):
    """A ``.gr`` file's head: its problem line."""
    n_vertices = opts.n_vertices
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
            spec = _TextSpec("gr", M_GR, 3, opts.weight_kind, 1, n, n, opts.dedupe)
            return _TextFile(path, compression, size, data_start, lineno, spec, declared=m,
                             declared_line=lineno, n=n)
        if t == b"a":
            raise GraphFormatError("arc line before the problem line 'p sp N M'",
                                   path=path, line=lineno)
        raise GraphFormatError(f"expected a 'c' comment or the problem line 'p sp N M', found "
                               f"{text[:80]!r}", path=path, line=lineno)
    raise GraphFormatError("no problem line 'p sp N M' (empty or truncated file)", path=path,
                           line=lineno or None)


_MTX_FIELDS = {"integer": W_INT, "real": W_REAL, "pattern": W_NONE}


def _sniff_mtx(path, compression, size, opts):
    """A Matrix Market file's head: its banner and size line."""
    n_vertices = opts.n_vertices
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
        if opts.weights != "auto" and wk != W_NONE:
            wk = opts.weight_kind
        ded = opts.dedupe and symmetry == "general"
        spec = _TextSpec("mtx", M_MTX, 2 if field == "pattern" else 3, wk, 1, rows, cols, ded)
        return _TextFile(path, compression, size, off + len(raw) + (1 if nl else 0), lineno, spec,
                         declared=nnz, declared_line=lineno, n=n)
    if lineno == 0:
        raise GraphFormatError("empty file; expected the banner '%%MatrixMarket ...'", path=path)
    raise GraphFormatError("no size line 'M N NNZ' (truncated file?)", path=path, line=lineno)



# ---------------------------------------------------------------------------
# text: building the graph
# ---------------------------------------------------------------------------

def _auto_blocksize(paths, client):
    """About four scan blocks per thread, each between 4 and 64 MiB (balance without tiny tasks)."""
    c = current_client(client)
    threads = None
    if c is not None:
        try:
            threads = sum(c.nthreads().values())
        except Exception:  # pragma: no cover - a client without workers yet
            threads = None
    threads = threads or os.cpu_count() or 1
    total = sum(urls.getsize(p) for p in paths)
    return int(min(_DEFAULT_BLOCK, max(4 * _MIB, -(-total // (4 * threads)))))


def _checkpoint_spacing(size):
    return max(_MIB, -(-size // _MAX_CHECKPOINTS))


def read_edgelist(paths, client, n_vertices, opts):
    """Sources of SNAP-style edge list files: ``(sources, n_vertices, weight dtype, meta)``."""
    return _read_text(paths, "edgelist", client, n_vertices, opts)


def read_gr(paths, client, n_vertices, opts):
    """Sources of DIMACS ``.gr`` files: ``(sources, n_vertices, weight dtype, meta)``."""
    return _read_text(paths, "gr", client, n_vertices, opts)


def read_mtx(paths, client, n_vertices, opts):
    """Sources of Matrix Market ``.mtx`` files: ``(sources, n_vertices, weight dtype, meta)``."""
    return _read_text(paths, "mtx", client, n_vertices, opts)


_SNIFF = {"edgelist": _sniff_edgelist, "gr": _sniff_gr, "mtx": _sniff_mtx}


def _read_text(paths, fmt, client, n_vertices, opts):
    """Sniff each file's head, scan the bodies as tasks, and make one source per file."""
    options = TextOptions.from_keywords(fmt, n_vertices, opts)
    blocksize = options.blocksize
    if blocksize is None:
        blocksize = _auto_blocksize(paths, client)
    files = [_SNIFF[fmt](path, _compression(path), urls.getsize(path), options) for path in paths]
    tasks, owners = _scan_tasks(files, blocksize)
    results = map_tasks(_scan_text_block, tasks, client, "read-scan")
    per_file = [[] for _ in files]
    for fi, r in zip(owners, results):
        per_file[fi].append(r)
    sources = []
    maxid = -1
    any_float = False
    for tf, blocks in zip(files, per_file):
        ck, rows, raw, file_maxid, file_float = _file_checkpoints(tf, blocks)
        _check_declared(tf, raw)
        maxid = max(maxid, file_maxid, -1 if tf.n is None else tf.n - 1)
        any_float |= file_float
        sources.append((tf, ck, rows))
    if fmt == "mtx":
        weight_float = any(f.spec.wkind == W_REAL for f in files)
    else:
        weight_float = any_float or (options.weights == "float" and any(f.spec.ncols == 3 for f in files))
    if n_vertices is None:
        n_vertices = maxid + 1
    out = []
    for tf, ck, rows in sources:
        params = {"path": tf.path, "compression": tf.compression, "spec": tf.spec, "ck": ck,
                  "weight_float": weight_float}
        out.append(FunctionSource(text_rows, params, rows, name=os.path.basename(tf.path),
                                  splittable=tf.compression is None))
    return out, int(n_vertices), np.dtype(np.float64 if weight_float else np.int64), {}


def _scan_tasks(files, blocksize):
    """The scan tasks ``(file, start, stop, checkpoint spacing)`` and the file index of each.

    An uncompressed body is cut into blocks of ``blocksize`` bytes; a
    compressed one is one task.
    """
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
    return tasks, owners


def _file_checkpoints(tf, blocks):
    """Join a file's scanned blocks: ``(checkpoint table, rows, raw rows, largest id, any fractional)``.

    Raises the first block's error, with its line in the file.
    """
    rows = raw = 0
    lines = tf.lines_before
    maxid = -1
    any_float = False
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
    return ck[keep], rows, raw, maxid, any_float


def _check_declared(tf, raw):
    """Refuse a ``.gr``/``.mtx`` body whose count of arcs or entries is not the declared one."""
    if tf.declared is not None and raw != tf.declared:
        what = "arcs" if tf.spec.fmt == "gr" else "entries"
        decl = "problem line" if tf.spec.fmt == "gr" else "size line"
        raise GraphFormatError(
            f"the {decl} declares {tf.declared} {what}, the file has {raw}"
            + (" (truncated?)" if raw < tf.declared else ""),
            path=tf.path, line=tf.declared_line)

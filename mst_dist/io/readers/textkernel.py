"""The text kernel of the readers: whole lines of bytes in, edge arrays out.

Pure Numba functions (no I/O, no Dask), imported on first use so that
importing the readers stays light.  One kernel serves the three text formats
(edge list, DIMACS ``.gr`` body, Matrix Market body); see
:func:`parse_text`.
"""
import numpy as np
from numba import njit

from mst_dist.io.readers.textcodes import (
    E_EMPTY, E_FEW, E_HIGH, E_LINE, E_LOW, E_MANY, E_OVERFLOW, E_PLINE, E_TOKEN, E_WINT,
    M_EDGELIST, M_MTX, OK, S_ECOL, S_EEND, S_ELINE, S_ELS, S_EPOS, S_FB,
    S_LINES, S_MAXID, S_NCK, S_NEXTCK, S_NF, S_RAW, S_ROWS, S_STATUS, W_INT, W_NONE,
)


@njit(cache=True, nogil=True)
def count_lines(buf):
    """Number of lines in ``buf`` (a last line without a newline counts)."""
    n = 0
    for i in range(buf.shape[0]):
        if buf[i] == 10:
            n += 1
    if buf.shape[0] and buf[buf.shape[0] - 1] != 10:
        n += 1
    return n


_WS_TABLE = np.zeros(256, np.bool_)
_WS_TABLE[[9, 11, 12, 13, 32]] = True
# bytes that end a token: whitespace and newline, plus the comma in edge lists
_END_GR_MTX = _WS_TABLE.copy()
_END_GR_MTX[10] = True
_END_EDGELIST = _END_GR_MTX.copy()
_END_EDGELIST[44] = True


@njit(cache=True, nogil=True, inline="always")
def _is_ws(c):
    return _WS_TABLE[c]


@njit(cache=True, nogil=True)
def _parse_int(buf, ts, te):
    """``(ok, value, overflow)`` for ``[+-]?[0-9]+`` in ``buf[ts:te]``."""
    j = ts
    neg = False
    c = buf[j]
    if c == 43 or c == 45:
        neg = c == 45
        j += 1
    if j == te:
        return False, 0, False
    val = np.int64(0)
    ovf = False
    while j < te:
        d = np.int64(buf[j]) - 48
        if d < 0 or d > 9:
            return False, 0, False
        if not ovf:
            if val > (9223372036854775807 - d) // 10:
                ovf = True
            else:
                val = val * 10 + d
        j += 1
    if ovf:
        return False, 0, True
    return True, -val if neg else val, False


@njit(cache=True, nogil=True)
def _parse_overflows(buf, ts, te):
    """Whether ``buf[ts:te]`` is ``[+-]?[0-9]+`` (a valid integer, then, too big for int64)."""
    ok, _, ovf = _parse_int(buf, ts, te)
    return ovf


@njit(cache=True, nogil=True)
def _is_float(buf, ts, te):
    """Whether ``buf[ts:te]`` is ``[+-]?([0-9]+(.[0-9]*)?|.[0-9]+)([eE][+-]?[0-9]+)?``."""
    j = ts
    c = buf[j]
    if c == 43 or c == 45:
        j += 1
    nd = 0
    while j < te and 48 <= buf[j] <= 57:
        j += 1
        nd += 1
    if j < te and buf[j] == 46:
        j += 1
        while j < te and 48 <= buf[j] <= 57:
            j += 1
            nd += 1
    if nd == 0:
        return False
    if j < te and (buf[j] == 101 or buf[j] == 69):
        j += 1
        if j < te and (buf[j] == 43 or buf[j] == 45):
            j += 1
        ne = 0
        while j < te and 48 <= buf[j] <= 57:
            j += 1
            ne += 1
        if ne == 0:
            return False
    return j == te


# What a line's first non-blank byte makes it, besides data (``OK``) and errors.
_COMMENT = -2


@njit(cache=True, nogil=True)
def _gr_line(buf, i):
    """What the ``.gr`` line whose first non-blank byte is at ``i`` is: ``(i, kind)``.

    ``kind`` is ``OK`` for an arc line (``i`` moved past its ``a`` and the
    blanks after it), ``_COMMENT`` for a ``c`` line, else the error status
    (``E_PLINE`` for a second problem line, ``E_LINE`` for anything else).
    """
    n = buf.shape[0]
    c = buf[i]
    nxt = buf[i + 1] if i + 1 < n else np.uint8(10)
    sep = _is_ws(nxt) or nxt == 10
    if c == 99 and sep:
        return i, _COMMENT
    if c == 97 and sep:
        i += 1
        while i < n and _is_ws(buf[i]):
            i += 1
        return i, OK
    return i, (E_PLINE if c == 112 and sep else E_LINE)


@njit(cache=True, nogil=True)
def _checkpoint(ck, k, at, rows, lines, gran):
    """Write checkpoint ``k`` (byte ``at``, rows and lines before it); the next one's byte."""
    ck[k, 0] = at
    ck[k, 1] = rows
    ck[k, 2] = lines
    return (at // gran + 1) * gran


@njit(cache=True, nogil=True)
def _int_weight_error(buf, ts, te, ovf):
    """The status of a weight token that is not an integer where only integers are allowed."""
    if ovf:
        return E_OVERFLOW
    return E_WINT if _is_float(buf, ts, te) else E_TOKEN


@njit(cache=True, nogil=True)
def _store_float(buf, fts, fte, floats_out, nf, fb, row, line):
    """Record fractional weight number ``nf`` (bytes ``buf[fts:fte]``, its output row and line).

    Returns the new fill of ``fbuf``.
    """
    fbuf, foff, frow, fline = floats_out
    for j in range(fts, fte):
        fbuf[fb] = buf[j]
        fb += 1
    frow[nf] = row
    fline[nf] = line
    foff[nf + 1] = fb
    return fb


@njit(cache=True, nogil=True)
def _fail(st, status, line, epos, eend, col, line_start):
    """Record the first error (or, with ``OK``, none yet) in ``st``."""
    st[S_STATUS] = status
    st[S_ELINE] = line
    st[S_EPOS] = epos
    st[S_EEND] = eend
    st[S_ECOL] = col
    st[S_ELS] = line_start


@njit(cache=True, nogil=True)
def _counts(st, rows, raw, lines, nf, fb, nck, maxid, nextck):
    """Record a call's counters in ``st``."""
    st[S_ROWS] = rows
    st[S_RAW] = raw
    st[S_LINES] = lines
    st[S_NF] = nf
    st[S_FB] = fb
    st[S_NCK] = nck
    st[S_MAXID] = maxid
    st[S_NEXTCK] = nextck


@njit(cache=True, nogil=True)
def parse_text(buf, pos0, spec, job, rows_out, floats_out, ck, st):
    """Parse whole lines of ``buf`` (an edge list, ``.gr`` or ``.mtx`` body).

    Parameters
    ----------
    buf : uint8 array
        Whole lines; its byte 0 is byte ``pos0`` of the file.
    pos0 : int
        Where ``buf`` starts in the file.
    spec : ParseSpec
        The file's grammar and bounds (see
        :class:`~mst_dist.io.readers.textcodes.ParseSpec`).
    job : ParseJob
        ``store``, ``skip`` and ``gran`` (see
        :class:`~mst_dist.io.readers.textcodes.ParseJob`).
    rows_out : tuple of three int64 arrays
        ``src, dst, wint``: with ``job.store``, the kept rows ``skip, skip +
        1, ...`` are written there, as many as they hold, from index 0.
    floats_out : tuple of four arrays
        ``fbuf, foff, frow, fline``: the bytes of the fractional weight
        tokens of those rows (of every row without ``store``), their offsets
        in ``fbuf``, output rows and local lines.
    ck : (k, 3) int64 array
        Checkpoints ``(pos0 + offset, rows, lines)`` at the first line start
        past each multiple of ``job.gran`` (none when ``gran`` is 0).
    st : int64 array
        In: the largest id and the next checkpoint so far; out: counters and
        the first error (the ``S_*`` slots of
        :mod:`~mst_dist.io.readers.textcodes`).  Stops at the first error.
    """
    mode, ncols, wkind, base, lim0, lim1, dedupe = spec
    store, skip, gran = job
    src, dst, wint = rows_out
    n = buf.shape[0]
    i = 0
    rows = 0
    raw = 0
    lines = 0
    nf = 0
    fb = 0
    nck = 0
    maxid = st[S_MAXID]
    nextck = st[S_NEXTCK]
    status = OK
    epos = eend = col = ls = -1
    floats_out[1][0] = 0
    while i < n:
        ls = i
        if gran > 0 and pos0 + i >= nextck:
            nextck = _checkpoint(ck, nck, pos0 + i, rows, lines, gran)
            nck += 1
        c = buf[i]
        while _is_ws(c):
            i += 1
            if i >= n:
                break
            c = buf[i]
        if i >= n or c == 10:
            i += 1
            lines += 1
            continue
        kind = OK
        if mode == M_EDGELIST:
            if c == 35 or c == 37:
                kind = _COMMENT
        elif mode == M_MTX:
            if c == 37:
                kind = _COMMENT
        else:
            i, kind = _gr_line(buf, i)
            if kind != OK and kind != _COMMENT:
                status, epos, eend, col = kind, i, i + 1, 0
                break
        if kind == _COMMENT:
            while i < n and buf[i] != 10:
                i += 1
            i += 1
            lines += 1
            continue
        col = 0
        u = np.int64(0)
        v = np.int64(0)
        wv = np.int64(1)
        isf = False
        fts = 0
        fte = 0
        us = 0
        ue = 0
        vs = 0
        ve = 0
        while True:
            if i >= n or buf[i] == 10:
                break
            c = buf[i]
            if c == 44 and mode == M_EDGELIST:
                status, epos, eend = E_EMPTY, i, i + 1
                break
            # one pass: find the token's end and read it as [+-]?[0-9]+ on the way
            ts = i
            neg = False
            if c == 43 or c == 45:
                neg = c == 45
                i += 1
            val = np.int64(0)
            nd = 0
            ok = True
            ovf = False
            while i < n:
                c = buf[i]
                d = np.int64(c) - 48
                if 0 <= d <= 9:
                    if nd < 18:  # below 10**18: no overflow possible
                        val = val * 10 + d
                    elif val > (9223372036854775807 - d) // 10:
                        ovf = True
                    else:
                        val = val * 10 + d
                    nd += 1
                elif (_END_EDGELIST[c] if mode == M_EDGELIST else _END_GR_MTX[c]):
                    break
                else:
                    ok = False
                i += 1
            te = i
            if nd == 0:
                ok = False
            if ovf:
                ok = False
                ovf = nd > 0 and _parse_overflows(buf, ts, te)
            if neg:
                val = -val
            if col >= ncols:
                status, epos, eend = E_MANY, ts, te
                break
            if col < 2:
                if not ok:
                    status, epos, eend = (E_OVERFLOW if ovf else E_TOKEN), ts, te
                    break
                if col == 0:
                    u, us, ue = val, ts, te
                else:
                    v, vs, ve = val, ts, te
            elif wkind != W_NONE:
                if ok:
                    wv = val
                elif wkind == W_INT:
                    status, epos, eend = _int_weight_error(buf, ts, te, ovf), ts, te
                    break
                elif ovf or _is_float(buf, ts, te):
                    isf, fts, fte, wv = True, ts, te, 0
                else:
                    status, epos, eend = E_TOKEN, ts, te
                    break
            col += 1
            while i < n and _is_ws(buf[i]):
                i += 1
            if mode == M_EDGELIST and i < n and buf[i] == 44:
                i += 1
                while i < n and _is_ws(buf[i]):
                    i += 1
                if i >= n or buf[i] == 10 or buf[i] == 44:
                    status, epos, eend = E_EMPTY, i, (i + 1 if i < n else i)
                    break
        if status == OK and col < ncols:
            status, epos, eend = E_FEW, i, i
        if status == OK:
            u -= base
            v -= base
            if u < 0 or (lim0 >= 0 and u >= lim0):
                status, epos, eend, col = (E_LOW if u < 0 else E_HIGH), us, ue, 0
            elif v < 0 or (lim1 >= 0 and v >= lim1):
                status, epos, eend, col = (E_LOW if v < 0 else E_HIGH), vs, ve, 1
        if status != OK:
            break
        raw += 1
        if u > maxid:
            maxid = u
        if v > maxid:
            maxid = v
        if not dedupe or u < v:
            keep = True
            k = rows
            if store:
                k = rows - skip
                keep = 0 <= k < src.shape[0]
                if keep:
                    src[k] = u
                    dst[k] = v
                    wint[k] = wv
            if isf and keep:
                fb = _store_float(buf, fts, fte, floats_out, nf, fb, k, lines)
                nf += 1
            rows += 1
        while i < n and buf[i] != 10:
            i += 1
        i += 1
        lines += 1
    if status == OK:
        _fail(st, OK, -1, -1, -1, -1, -1)
    else:
        _fail(st, status, lines, epos, eend, col, ls)
    _counts(st, rows, raw, lines, nf, fb, nck, maxid, nextck)

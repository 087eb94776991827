"""Counter-based random numbers (Philox4x32-10) and the compiled kernels of the random families.

Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel Random Numbers: As
Easy as 1, 2, 3", SC 2011) maps a 128-bit counter and a 64-bit key to 128
random bits through ten rounds of 32 x 32 -> 64-bit multiplies; it passes
TestU01's BigCrush for any counter pattern.  Here the key comes from the
graph's seed and family (:func:`key_of`) and the counter names the draw:

- words 0, 1: the edge index ``e`` (low, high 32 bits);
- word 2: the draw of that edge (an R-MAT group of four levels, or the
  attempt of a bounded integer);
- word 3: the stream (:data:`STRUCTURE` or :data:`WEIGHT`).

So every value is a pure function of ``(seed, family, e, draw, stream)``:
edge ``i`` of block ``b`` (``e = b * BLOCK + i``) is the same on any worker,
process or thread count, and any row range is generated directly, with no
block regenerated in full.  Each kernel is a serial loop over tiles of
:data:`TILE` edges that releases the GIL; :func:`run` cuts a range into one
part per Numba thread and runs the parts on threads at once.  The inner loops
of a tile run over its edges (level by level for R-MAT) so they vectorise:
32 x 32 -> 64-bit multiplies are one SIMD instruction on x86.

Bounded integers use Lemire's multiply-shift with rejection ("Fast Random
Integer Generation in an Interval", ACM TOMACS 2019) on a 32-bit word where
the span is at most ``2**32``, on a 64-bit one otherwise: exactly uniform; a
rejected draw (probability below ``span / 2**32``, resp. ``span / 2**64``) is
drawn again from the next attempt's counter.

Arrays in, arrays out: no Dask, no I/O.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numba
import numpy as np
from numba import njit

__all__ = ["STRUCTURE", "WEIGHT", "TILE", "MIN_PART", "KEY_STREAM", "key_of", "run", "philox4x32", "span_of", "rmat_thresholds",
           "rmat_edges", "uniform_pairs", "int_weights", "float_weights", "weights_into", "exercise"]

#: Counter word 3: the stream of a draw.
STRUCTURE = 0
WEIGHT = 1

#: Edges per tile of a kernel's loop.
TILE = 1024
#: Fewest edges per thread of :func:`run`.
MIN_PART = 1 << 16

#: The key of a graph's draws is ``SeedSequence([seed, family tag, KEY_STREAM])``'s first 64 bits
#: (streams 0 to 2 are the NumPy streams of :mod:`.blocks`).
KEY_STREAM = 3

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_MAX_ATTEMPTS = 64


@lru_cache(maxsize=64)
def key_of(seed, tag):
    """The Philox key ``(k0, k1)`` (uint32) of a graph: from its seed and family tag."""
    k = np.random.SeedSequence([seed, tag, KEY_STREAM]).generate_state(2, np.uint32)
    return np.uint32(k[0]), np.uint32(k[1])


def run(kernel, e0, *args, outs):
    """``kernel(e0, *args, *outs)`` for edges ``e0, e0 + 1, ...``, on up to one thread per Numba thread.

    The range is cut into contiguous parts of whole tiles (at least
    :data:`MIN_PART` edges each), each written into its slices of ``outs``;
    every value is a function of its edge alone, so the rows are the same
    however many parts there are.
    """
    count = outs[0].shape[0]
    parts = max(1, min(numba.get_num_threads(), count // MIN_PART))
    if parts == 1:
        kernel(np.int64(e0), *args, *outs)
        return
    step = -(-count // parts // TILE) * TILE
    cuts = list(range(0, count, step)) + [count]
    with ThreadPoolExecutor(len(cuts) - 1, thread_name_prefix="mst-generate") as pool:
        jobs = [pool.submit(kernel, np.int64(e0 + a), *args, *(x[a:b] for x in outs))
                for a, b in zip(cuts[:-1], cuts[1:])]
        for job in jobs:
            job.result()


@njit(inline="always")
def _philox(c0, c1, c2, c3, k0, k1):
    """The four uint32 outputs of Philox4x32-10 for counter ``(c0..c3)`` and key ``(k0, k1)``."""
    for _ in range(10):
        p0 = np.uint64(c0) * _M0
        p1 = np.uint64(c2) * _M1
        c0, c1, c2, c3 = (np.uint32(np.uint32(p1 >> _S32) ^ c1 ^ k0), np.uint32(p1 & _LO32),
                          np.uint32(np.uint32(p0 >> _S32) ^ c3 ^ k1), np.uint32(p0 & _LO32))
        k0 = np.uint32(k0 + _W0)
        k1 = np.uint32(k1 + _W1)
    return c0, c1, c2, c3


@njit(nogil=True, cache=True)
def philox4x32(counters, k0, k1):
    """Philox4x32-10 of each row of ``counters`` (``(n, 4)`` uint32) under key ``(k0, k1)``."""
    out = np.empty_like(counters)
    for i in range(counters.shape[0]):
        r = _philox(counters[i, 0], counters[i, 1], counters[i, 2], counters[i, 3], k0, k1)
        for j in range(4):
            out[i, j] = r[j]
    return out


@njit(inline="always")
def _mulhi(a, b):
    """High 64 bits of the 128-bit product of two uint64."""
    a0, a1 = a & _LO32, a >> _S32
    b0, b1 = b & _LO32, b >> _S32
    ll, lh, hl, hh = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (ll >> _S32) + (lh & _LO32) + (hl & _LO32)
    return hh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)


@njit(inline="always")
def _bounded(x, span, reject_below):
    """Lemire's map of a uniform uint64 ``x`` to ``[0, span)`` (``span == 0``: all of 2**64).

    Returns ``(value, accepted)``; a draw is refused when the low product is
    below ``reject_below = 2**64 mod span``, which makes the accepted values
    exactly uniform.
    """
    if span == 0:
        return x, True
    return _mulhi(x, span), x * span >= reject_below


@njit(inline="always")
def _bounded32(x, span, reject_below):
    """:func:`_bounded` of a uniform uint32 ``x`` to ``[0, span)``, ``1 <= span <= 2**32``."""
    p = np.uint64(x) * span
    return p >> _S32, np.uint32(p & _LO32) >= reject_below


def span_of(lo, hi):
    """``(span, reject_below)`` (uint64) of a uniform draw on the integers ``[lo, hi]``.

    ``span = hi - lo + 1`` mod 2**64 (0: all of 2**64); ``reject_below`` is
    ``2**32 mod span`` where ``span <= 2**32`` (a 32-bit draw serves),
    else ``2**64 mod span``.
    """
    span = (int(hi) - int(lo) + 1) % (1 << 64)
    if span == 0:
        return np.uint64(0), np.uint64(0)
    return np.uint64(span), np.uint64((1 << (32 if span <= 1 << 32 else 64)) % span)


@njit(inline="always")
def _word64(e, draw, stream, k0, k1):
    """A uint64 of edge ``e``'s ``draw`` in ``stream``: the first two Philox words."""
    r = _philox(np.uint32(e & _LO32), np.uint32(e >> _S32), np.uint32(draw), np.uint32(stream), k0, k1)
    return np.uint64(r[0]) | (np.uint64(r[1]) << _S32)


@njit(inline="always")
def _weight_draw(e, attempt, span, reject_below, k0, k1):
    """``(value, accepted)``: edge ``e``'s bounded weight draw on ``[0, span)``, attempt ``attempt``.

    Philox counter ``(e, attempt, WEIGHT)``: word 0 where ``span <= 2**32``,
    words 0-1 otherwise.
    """
    r = _philox(np.uint32(e & _LO32), np.uint32(e >> _S32), np.uint32(attempt), np.uint32(WEIGHT), k0, k1)
    if span != 0 and span <= np.uint64(4294967296):
        return _bounded32(r[0], span, np.uint32(reject_below))
    return _bounded(np.uint64(r[0]) | (np.uint64(r[1]) << _S32), span, reject_below)


@njit(inline="always")
def _level(uu, vv, x, ta, tab, tabc):
    """One R-MAT level appended to the bits ``uu``, ``vv`` (uint32) from the uniform uint32 ``x``.

    The quadrant is ``q = [x >= ta] + [x >= tab] + [x >= tabc]``; ``uu``
    gets ``q >= 2`` and ``vv`` gets ``q`` odd.
    """
    h = x >= tab
    return (np.uint32(uu << np.uint32(1)) | np.uint32(h),
            np.uint32(vv << np.uint32(1)) | np.uint32((x >= ta) ^ (x >= tabc) ^ h))


@njit(inline="always")
def _level_masked(uu, vv, x, ta, tab, tabc, la, lab, labc):
    """:func:`_level` where a threshold not live (``2**32``) is never reached."""
    h = (x >= tab) & lab
    return (np.uint32(uu << np.uint32(1)) | np.uint32(h),
            np.uint32(vv << np.uint32(1)) | np.uint32(((x >= ta) & la) ^ ((x >= tabc) & labc) ^ h))


def rmat_thresholds(a, b, c):
    """The uint32 thresholds of ``a, a + b, a + b + c`` on a uniform uint32, and whether each is reachable.

    ``t`` becomes ``round(t * 2**32)``: a quadrant's probability is exact
    to within ``2**-33``.  A threshold of ``2**32`` is never reached (its
    flag is False).
    """
    out = []
    for t in (a, a + b, a + b + c):
        t32 = min(int(round(float(t) * 4294967296.0)), 1 << 32)
        out.append((np.uint32(min(t32, (1 << 32) - 1)), t32 < (1 << 32)))
    (ta, la), (tab, lab), (tabc, labc) = out
    return ta, tab, tabc, la, lab, labc


@njit(inline="always")
def _rmat_levels(u32, v32, m, e, lev0, nl, k0, k1, ta, tab, tabc, live):
    """Levels ``lev0 .. lev0 + nl - 1`` (``nl <= 32``) of a tile's ``m`` edges from edge ``e``, into ``u32``, ``v32``.

    Level ``L`` of edge ``e`` reads word ``L % 4`` of Philox counter ``(e,
    L // 4, STRUCTURE)``.  A group of four levels runs as one loop over
    the edges (it vectorises); the last group of a range that is not a
    multiple of four levels keeps only its first words.  ``live``: which of
    the thresholds can be reached (one of ``2**32`` cannot: it stands at
    ``2**32 - 1`` and its comparisons are masked off).
    """
    u32[:m] = 0
    v32[:m] = 0
    la, lab, labc = live
    masked = not (la and lab and labc)
    for g in range(lev0 // 4, (lev0 + nl + 3) // 4):
        left = min(4, lev0 + nl - 4 * g)
        if not masked:
            for j in range(m):
                x = e + np.uint64(j)
                r0, r1, r2, r3 = _philox(np.uint32(x & _LO32), np.uint32(x >> _S32),
                                         np.uint32(g), np.uint32(STRUCTURE), k0, k1)
                uu, vv = _level(u32[j], v32[j], r0, ta, tab, tabc)
                if left > 1:
                    uu, vv = _level(uu, vv, r1, ta, tab, tabc)
                if left > 2:
                    uu, vv = _level(uu, vv, r2, ta, tab, tabc)
                if left > 3:
                    uu, vv = _level(uu, vv, r3, ta, tab, tabc)
                u32[j], v32[j] = uu, vv
        else:
            _rmat_group_masked(u32, v32, m, e, g, left, k0, k1, ta, tab, tabc, la, lab, labc)


@njit(nogil=True, cache=True)
def _rmat_group_masked(u32, v32, m, e, g, left, k0, k1, ta, tab, tabc, la, lab, labc):
    """The ``left`` levels of group ``g`` where a threshold is unreachable (a rare case: compiled apart)."""
    for j in range(m):
        x = e + np.uint64(j)
        r = _philox(np.uint32(x & _LO32), np.uint32(x >> _S32), np.uint32(g), np.uint32(STRUCTURE), k0, k1)
        uu, vv = u32[j], v32[j]
        for q in range(left):
            uu, vv = _level_masked(uu, vv, r[q], ta, tab, tabc, la, lab, labc)
        u32[j], v32[j] = uu, vv


@njit(nogil=True, cache=True)
def rmat_edges(e0, k0, k1, scale, ta, tab, tabc, la, lab, labc, mults, adds, shift, out_s, out_d):
    """R-MAT edges ``e0, e0 + 1, ...`` into ``out_s``, ``out_d``: ``scale`` levels, then the id scramble.

    Level ``L`` (most significant first) of edge ``e`` reads word ``L % 4``
    of Philox counter ``(e, L // 4, STRUCTURE)`` (:func:`_rmat_levels`,
    32 levels at a time into uint32 accumulators); then the ids are
    scrambled: rounds of ``x = (x * odd + c) mod 2**scale`` and
    ``x ^= x >> shift``, in uint32 arithmetic up to scale 32.
    """
    count = out_s.shape[0]
    for t in range((count + TILE - 1) // TILE):
        a = t * TILE
        m = min(TILE, count - a)
        e = np.uint64(e0 + a)
        u32 = np.empty(TILE, np.uint32)
        v32 = np.empty(TILE, np.uint32)
        if scale <= 32:
            _rmat_levels(u32, v32, m, e, 0, scale, k0, k1, ta, tab, tabc, (la, lab, labc))
            mask = np.uint32((np.uint64(1) << np.uint64(scale)) - np.uint64(1))
            sh = np.uint32(shift)
            for r in range(mults.shape[0]):
                mul, add = np.uint32(mults[r] & _LO32), np.uint32(adds[r] & _LO32)
                for j in range(m):
                    y = np.uint32(u32[j] * mul + add) & mask   # wraps mod 2**32: the low bits are exact
                    u32[j] = y ^ (y >> sh)
                    y = np.uint32(v32[j] * mul + add) & mask
                    v32[j] = y ^ (y >> sh)
            for j in range(m):
                out_s[a + j] = np.int64(u32[j])
                out_d[a + j] = np.int64(v32[j])
            continue
        u64 = np.zeros(TILE, np.uint64)
        v64 = np.zeros(TILE, np.uint64)
        for lev0 in range(0, scale, 32):
            nl = min(32, scale - lev0)
            _rmat_levels(u32, v32, m, e, lev0, nl, k0, k1, ta, tab, tabc, (la, lab, labc))
            for j in range(m):
                u64[j] = (u64[j] << np.uint64(nl)) | np.uint64(u32[j])
                v64[j] = (v64[j] << np.uint64(nl)) | np.uint64(v32[j])
        mask = (np.uint64(1) << np.uint64(scale)) - np.uint64(1)
        sh = np.uint64(shift)
        for r in range(mults.shape[0]):
            mul, add = mults[r], adds[r]
            for j in range(m):
                y = (u64[j] * mul + add) & mask
                u64[j] = y ^ (y >> sh)
                y = (v64[j] * mul + add) & mask
                v64[j] = y ^ (y >> sh)
        for j in range(m):
            out_s[a + j] = np.int64(u64[j])
            out_d[a + j] = np.int64(v64[j])


@njit(inline="always")
def _pair_draws(e, attempt, nu, nv, rej_n, rej_n1, narrow, k0, k1):
    """``(u, r, accepted)`` of edge ``e``'s attempt: ``u`` on ``[0, nu)``, ``r`` on ``[0, nv)``.

    ``narrow`` (``nu <= 2**32``): from Philox words 0 and 1 of counter
    ``(e, attempt, STRUCTURE)``; else from words 0-1 and 2-3.
    """
    r0, r1, r2, r3 = _philox(np.uint32(e & _LO32), np.uint32(e >> _S32),
                             np.uint32(attempt), np.uint32(STRUCTURE), k0, k1)
    if narrow:
        u, oku = _bounded32(r0, nu, np.uint32(rej_n))
        r, okv = _bounded32(r1, nv, np.uint32(rej_n1))
    else:
        u, oku = _bounded(np.uint64(r0) | (np.uint64(r1) << _S32), nu, rej_n)
        r, okv = _bounded(np.uint64(r2) | (np.uint64(r3) << _S32), nv, rej_n1)
    return u, r, oku & okv


@njit(nogil=True, cache=True)
def _pairs_redraw(e0, nu, nv, rej_n, rej_n1, narrow, k0, k1, out_u, out_r):
    """Redraw the refused pairs of edges ``e0, e0 + 1, ...``: attempts 1, 2, ... (a rare case: compiled apart)."""
    for j in range(out_u.shape[0]):
        e = e0 + np.uint64(j)
        attempt = 0
        u, r, ok = _pair_draws(e, 0, nu, nv, rej_n, rej_n1, narrow, k0, k1)
        if ok:
            continue
        while not ok and attempt < _MAX_ATTEMPTS:
            attempt += 1
            u, r, ok = _pair_draws(e, attempt, nu, nv, rej_n, rej_n1, narrow, k0, k1)
        out_u[j] = np.int64(u)
        out_r[j] = np.int64(r)


@njit(nogil=True, cache=True)
def uniform_pairs(e0, k0, k1, n, rej_n, rej_n1, ordered, out_s, out_d):
    """Uniform pairs ``u != v`` of ``[0, n)`` for edges ``e0, e0 + 1, ...`` into ``out_s``, ``out_d``.

    ``u`` uniform on ``[0, n)``, ``v = (u + 1 + r) mod n`` with ``r``
    uniform on ``[0, n - 1)`` (:func:`_pair_draws`, attempt 0; a rejected
    bounded draw takes both from the next attempt's counter).
    ``ordered``: listed as ``(min, max)``.  ``rej_n``, ``rej_n1``: the
    rejection bounds of ``n`` and ``n - 1`` (:func:`span_of`).
    """
    count = out_s.shape[0]
    nu = np.uint64(n)
    nv = np.uint64(n - 1)
    narrow = n <= 4294967296
    for t in range((count + TILE - 1) // TILE):
        a = t * TILE
        m = min(TILE, count - a)
        nbad = 0
        if narrow:   # the same loop twice, so that each vectorises on its own
            for j in range(m):
                u, r, ok = _pair_draws(np.uint64(e0 + a + j), 0, nu, nv, rej_n, rej_n1, True, k0, k1)
                nbad += np.int64(not ok)
                out_s[a + j] = np.int64(u)
                out_d[a + j] = np.int64(r)
        else:
            for j in range(m):
                u, r, ok = _pair_draws(np.uint64(e0 + a + j), 0, nu, nv, rej_n, rej_n1, False, k0, k1)
                nbad += np.int64(not ok)
                out_s[a + j] = np.int64(u)
                out_d[a + j] = np.int64(r)
        if nbad:   # rare: find the rejected draws again and redraw them
            _pairs_redraw(np.uint64(e0 + a), nu, nv, rej_n, rej_n1, narrow, k0, k1,
                          out_s[a:a + m], out_d[a:a + m])
        for j in range(m):
            v = out_s[a + j] + 1 + out_d[a + j]
            out_d[a + j] = v - n if v >= n else v
        if ordered:
            for j in range(m):
                u, v = out_s[a + j], out_d[a + j]
                out_s[a + j] = min(u, v)
                out_d[a + j] = max(u, v)


@njit(nogil=True, cache=True)
def int_weights(e0, k0, k1, span, reject_below, wmin_bits, out):
    """Integer weights of edges ``e0, e0 + 1, ...``: ``wmin`` plus a uniform draw on ``[0, span)``.

    :func:`_weight_draw`, attempt 0, then 1, 2, ... for a rejected draw;
    ``wmin_bits`` is ``wmin`` mod 2**64 (the sum wraps back into int64).
    """
    count = out.shape[0]
    for t in range((count + TILE - 1) // TILE):
        a = t * TILE
        m = min(TILE, count - a)
        nbad = 0
        for j in range(m):
            v, ok = _weight_draw(np.uint64(e0 + a + j), 0, span, reject_below, k0, k1)
            nbad += np.int64(not ok)
            out[a + j] = np.int64(v + wmin_bits)
        if nbad:   # rare: find the rejected draws again and redraw them
            _weights_redraw(np.uint64(e0 + a), span, reject_below, wmin_bits, k0, k1, out[a:a + m])


@njit(nogil=True, cache=True)
def _weights_redraw(e0, span, reject_below, wmin_bits, k0, k1, out):
    """Redraw the refused weights of edges ``e0, e0 + 1, ...``: attempts 1, 2, ... (a rare case: compiled apart)."""
    for j in range(out.shape[0]):
        e = e0 + np.uint64(j)
        attempt = 0
        v, ok = _weight_draw(e, 0, span, reject_below, k0, k1)
        if ok:
            continue
        while not ok and attempt < _MAX_ATTEMPTS:
            attempt += 1
            v, ok = _weight_draw(e, attempt, span, reject_below, k0, k1)
        out[j] = np.int64(v + wmin_bits)


@njit(nogil=True, cache=True)
def float_weights(e0, k0, k1, wmin, wmax, top, out):
    """Float weights of edges ``e0, e0 + 1, ...``: uniform on ``[wmin, wmax)``.

    ``u`` is the top 53 bits of Philox words 0-1 of counter ``(e, 0,
    WEIGHT)`` times ``2**-53``; the weight ``wmin + u (wmax - wmin)``, at
    most ``top`` (the float below ``wmax``, where rounding would reach it).
    """
    count = out.shape[0]
    width = wmax - wmin
    scale = 1.0 / 9007199254740992.0
    for t in range((count + TILE - 1) // TILE):
        a = t * TILE
        m = min(TILE, count - a)
        for j in range(m):
            e = np.uint64(e0 + a + j)
            u = np.float64(_word64(e, 0, WEIGHT, k0, k1) >> np.uint64(11)) * scale
            out[a + j] = min(u * width + wmin, top)


def weights_into(out, start, seed, tag, weights, wmin, wmax):
    """Fill ``out`` with the weights of edges ``start, start + 1, ...`` of graph ``(seed, tag)``.

    ``weights="int"``: int64 uniform on ``[wmin, wmax]``; ``"float"``:
    float64 uniform on ``[wmin, wmax)``.
    """
    if out.shape[0] == 0:
        return out
    k0, k1 = key_of(seed, tag)
    if weights == "int":
        span, reject_below = span_of(wmin, wmax)
        run(int_weights, start, k0, k1, span, reject_below, np.uint64(int(wmin) % (1 << 64)), outs=(out,))
    else:
        wmin, wmax = float(wmin), float(wmax)
        top = float(np.nextafter(wmax, wmin)) if wmax > wmin else wmax
        run(float_weights, start, k0, k1, wmin, wmax, top, outs=(out,))
    return out


def exercise():
    """Run every kernel of this module once on a few edges, with the argument types the generators pass.

    So that a warm-up compiles (or loads from Numba's cache) all of them
    before a generated graph's first rows are asked for.
    """
    k0, k1 = key_of(0, 0)
    s, d = np.empty(3, np.int64), np.empty(3, np.int64)
    rmat_edges(np.int64(0), k0, k1, np.int64(4), *rmat_thresholds(0.57, 0.19, 0.19),
               np.ones(1, np.uint64), np.zeros(1, np.uint64), np.int64(2), s, d)
    _, rej_n = span_of(0, 4)
    _, rej_n1 = span_of(0, 3)
    uniform_pairs(np.int64(0), k0, k1, np.int64(5), rej_n, rej_n1, False, s, d)
    weights_into(np.empty(3, np.int64), 0, 0, 0, "int", 1, 10)
    weights_into(np.empty(3, np.float64), 0, 0, 0, "float", 0.0, 1.0)

"""Seeded synthetic graphs generated on the workers, chunk by chunk.

Each generator returns a :class:`~mst_dist.graph.Graph` whose single source is
a :class:`~mst_dist.graph.FunctionSource`: the edges are never built on the
client.  A worker asked for rows ``[start, stop)`` calls the family's
module-level ``_*_rows(start, stop, **params)`` function, which returns
``(src, dst, weight)``.

Chunk independence
------------------
The rows of a range do not depend on how the edge list is split.  The edge
index space is cut into fixed blocks of :data:`BLOCK` edges; block ``b`` draws
all its randomness (structure first, then weights) from
``np.random.default_rng([seed, family_tag, 0, b])`` and a range is the slice
of the blocks it overlaps.  Families with a deterministic structure (circulant,
grid, hypercube, caveman) compute each edge's endpoints arithmetically from its
index; only their weights come from the block streams.  No generator builds a
table whose size grows with the number of vertices.

Weights
-------
``weights="int"``: int64 uniform on ``[wmin, wmax]`` inclusive (ties on
purpose, the strict ``(weight, edge id)`` order resolves them).
``weights="float"``: float64 uniform on ``[wmin, wmax)``.

Families
--------
``erdos_renyi(n, m)``, ``gnp(n, p)``, ``circulant(n, d)``, ``grid(rows, cols)``,
``hypercube(d)``, ``caveman(g, k)``, ``connected_caveman(g, k)``,
``rmat(scale, edge_factor=16, a=0.57, b=0.19, c=0.19)``,
``random_geometric(n, radius)``, ``ssca2(n, max_clique=None, inter=1)``; see
each builder.  ``random_geometric``'s edge count depends on its points, so
building it runs one counting pass as tasks (on the current ``distributed``
client, else local threads); every other family knows its size up front.
"""
from __future__ import annotations

import inspect
import math
import numbers

import numpy as np

from mst_dist.graph import FunctionSource, Graph
from mst_dist.io.tasks import map_tasks

__all__ = [
    "BLOCK",
    "GENERATORS",
    "generate",
    "erdos_renyi",
    "gnp",
    "circulant",
    "grid",
    "hypercube",
    "caveman",
    "connected_caveman",
    "rmat",
    "random_geometric",
    "ssca2",
]

#: Edges per random block.  Part of the definition of every generated graph:
#: changing it changes the graphs of the random families.
BLOCK = 1 << 20

# Fixed per-family stream tags (never renumber: they define the graphs).
_TAGS = {
    "erdos_renyi": 1,
    "gnp": 2,
    "circulant": 3,
    "grid": 4,
    "hypercube": 5,
    "caveman": 6,
    "connected_caveman": 7,
    "rmat": 8,
    "random_geometric": 9,
    "ssca2": 10,
}
_STREAM_BLOCK = 0   # per-block streams: [seed, tag, 0, block]
_STREAM_GLOBAL = 1  # graph-wide draws (gnp's edge count, rmat's scramble): [seed, tag, 1, i]
_STREAM_SHAPE = 2   # per-block shape draws (geometric points of a row, ssca2 clique sizes)

_MAX_ID = 1 << 62   # vertex and edge counts must stay well inside int64


# --------------------------------------------------------------------------
# parameter validation
# --------------------------------------------------------------------------

def _as_int(name, value, lo=None, hi=None):
    """Validate an integer parameter (integral floats accepted), naming it on error."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        v = int(value)
    else:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


def _as_float(name, value, lo=None, hi=None):
    """Validate a finite real parameter, naming it on error."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


def _weight_spec(seed, weights, wmin, wmax):
    """Validate seed and weight options; return ``(params, dtype)``."""
    seed = _as_int("seed", seed, lo=0)
    if weights == "int":
        wmin = _as_int("wmin", wmin, lo=-(1 << 63))
        wmax = _as_int("wmax", wmax, hi=(1 << 63) - 1)
        dtype = np.dtype(np.int64)
    elif weights == "float":
        wmin = _as_float("wmin", wmin)
        wmax = _as_float("wmax", wmax)
        dtype = np.dtype(np.float64)
    else:
        raise ValueError(f"weights must be 'int' or 'float', got {weights!r}")
    if wmin > wmax:
        raise ValueError(f"wmin must be <= wmax, got wmin={wmin!r}, wmax={wmax!r}")
    return {"seed": seed, "weights": weights, "wmin": wmin, "wmax": wmax}, dtype


def _check_size(kind, what, value):
    if value >= _MAX_ID:
        raise ValueError(f"{kind}: {what}={value} is too large (limit 2**62)")


# --------------------------------------------------------------------------
# block machinery (runs on the workers)
# --------------------------------------------------------------------------

def _block_rng(seed, tag, block):
    """The random stream of one block of :data:`BLOCK` edges."""
    return np.random.default_rng([seed, tag, _STREAM_BLOCK, block])


def _global_rng(seed, tag, index=0):
    """A graph-wide random stream (same on every worker)."""
    return np.random.default_rng([seed, tag, _STREAM_GLOBAL, index])


def _draw_weights(rng, size, weights, wmin, wmax):
    """Weights of one block: int64 on [wmin, wmax] or float64 on [wmin, wmax)."""
    if weights == "int":
        return rng.integers(wmin, wmax, size=size, dtype=np.int64, endpoint=True)
    w = rng.random(size)
    w *= wmax - wmin
    w += wmin
    if wmax > wmin:
        # rounding of wmin + (wmax - wmin) * u can reach wmax; keep the interval half-open
        np.minimum(w, np.nextafter(wmax, wmin), out=w)
    return w


def _empty(weights):
    z = np.zeros(0, np.int64)
    return z, z.copy(), np.zeros(0, np.int64 if weights == "int" else np.float64)


def _check_range(start, stop, m):
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= m:
        raise ValueError(f"row range [{start}, {stop}) is outside [0, {m})")
    return start, stop


def _blocks(start, stop, m):
    """Yield ``(block, block_start, block_len, lo, hi)`` for blocks overlapping [start, stop).

    ``lo:hi`` is the overlap, relative to the block start.
    """
    for b in range(start // BLOCK, (stop - 1) // BLOCK + 1):
        b0 = b * BLOCK
        blen = min(BLOCK, m - b0)
        yield b, b0, blen, max(start, b0) - b0, min(stop, b0 + blen) - b0


def _random_rows(start, stop, m, seed, tag, weights, wmin, wmax, draw, **kw):
    """Rows [start, stop) of a random family whose block structure comes from ``draw``.

    ``draw(rng, size, **kw) -> (src, dst)`` draws a whole block's endpoints;
    the block's weights are drawn after them from the same stream.
    """
    start, stop = _check_range(start, stop, m)
    if start == stop:
        return _empty(weights)
    out_s = np.empty(stop - start, np.int64)
    out_d = np.empty(stop - start, np.int64)
    out_w = np.empty(stop - start, np.int64 if weights == "int" else np.float64)
    for b, b0, blen, lo, hi in _blocks(start, stop, m):
        rng = _block_rng(seed, tag, b)
        s, d = draw(rng, blen, **kw)
        w = _draw_weights(rng, blen, weights, wmin, wmax)
        o = b0 + lo - start
        out_s[o:o + hi - lo] = s[lo:hi]
        out_d[o:o + hi - lo] = d[lo:hi]
        out_w[o:o + hi - lo] = w[lo:hi]
    return out_s, out_d, out_w


def _range_weights(start, stop, m, seed, tag, weights, wmin, wmax):
    """Weights of rows [start, stop) of a family with deterministic structure."""
    out = np.empty(stop - start, np.int64 if weights == "int" else np.float64)
    for b, b0, blen, lo, hi in _blocks(start, stop, m):
        w = _draw_weights(_block_rng(seed, tag, b), blen, weights, wmin, wmax)
        o = b0 + lo - start
        out[o:o + hi - lo] = w[lo:hi]
    return out


def _fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax, structure, **kw):
    """Rows [start, stop) of a family whose endpoints are a function of the edge index."""
    start, stop = _check_range(start, stop, m)
    if start == stop:
        return _empty(weights)
    e = np.arange(start, stop, dtype=np.int64)
    s, d = structure(e, **kw)
    return s, d, _range_weights(start, stop, m, seed, tag, weights, wmin, wmax)


# --------------------------------------------------------------------------
# per-family structure (pure array functions)
# --------------------------------------------------------------------------

def _draw_uniform_pairs(rng, size, n, ordered=False):
    """Uniform pairs ``u != v``: u uniform, v = u + 1 + uniform[0, n-1) mod n."""
    u = rng.integers(0, n, size=size, dtype=np.int64)
    v = rng.integers(0, n - 1, size=size, dtype=np.int64)
    v += u + 1
    v %= n
    if ordered:
        return np.minimum(u, v), np.maximum(u, v)
    return u, v


def _circulant_structure(e, n, d):
    """Edge e of the circulant graph: (i, i + j mod n) with i = e // d, j = e % d + 1."""
    i = e // d
    return i, (i + e % d + 1) % n


def _grid_structure(e, rows, cols):
    """Edge e of the rows x cols lattice: horizontal edges row-major, then vertical."""
    nh = rows * (cols - 1)
    horizontal = e < nh
    s = np.empty_like(e)
    if cols > 1:
        eh = e[horizontal]
        s[horizontal] = (eh // (cols - 1)) * cols + eh % (cols - 1)
    s[~horizontal] = e[~horizontal] - nh
    d = s + np.where(horizontal, 1, cols)
    return s, d


def _hypercube_structure(e, dim):
    """Edge e of the d-cube: dimension j = e // 2**(d-1); x gets a 0 bit inserted at j."""
    half = 1 << (dim - 1)
    j = e // half
    x = e % half
    low = x & ((np.int64(1) << j) - 1)
    u = ((x >> j) << (j + 1)) | low
    return u, u | (np.int64(1) << j)


def _colex_pair(p):
    """Inverse of the colex rank ``p = b*(b-1)/2 + a`` of a pair ``a < b``."""
    b = np.floor((1.0 + np.sqrt(1.0 + 8.0 * p.astype(np.float64))) / 2.0).astype(np.int64)
    # exact integer correction of the float estimate
    b -= (b * (b - 1) // 2 > p)
    b += ((b + 1) * b // 2 <= p)
    return p - b * (b - 1) // 2, b


def _caveman_structure(e, g, k, connected):
    """Edge e of the (connected) caveman graph; see :func:`caveman`, :func:`connected_caveman`."""
    n = g * k
    pairs = k * (k - 1) // 2
    if connected:
        # networkx drops clique pair (0, 1) and adds (start, start - 1 mod n); with g == 1
        # and k >= 3 that edge already exists, so the clique just loses pair (0, 1)
        skip = 1 if (g == 1 and k >= 3) else 0
        per = pairs - skip
        c = e // per
        a, b = _colex_pair(e % per + skip)
        start = c * k
        s = start + a
        d = start + b
        if not skip:
            rewired = (a == 0) & (b == 1)   # colex rank 0
            d = np.where(rewired, (start - 1) % n, d)
        return s, d
    nclique = g * pairs
    in_clique = e < nclique
    s = np.empty_like(e)
    d = np.empty_like(e)
    if pairs:
        ec = e[in_clique]
        c = ec // pairs
        a, b = _colex_pair(ec % pairs)
        s[in_clique] = c * k + a
        d[in_clique] = c * k + b
    i = e[~in_clique] - nclique
    s[~in_clique] = i * k + (k - 1)
    d[~in_clique] = ((i + 1) % g) * k
    return s, d


def _scramble_keys(seed, scale):
    """Odd multipliers, additive constants and shifts of the R-MAT id scramble."""
    seq = np.random.SeedSequence([seed, _TAGS["rmat"], _STREAM_GLOBAL, 0])
    state = seq.generate_state(6, np.uint64)
    mask = (1 << scale) - 1
    mults = [(int(x) | 1) & mask for x in state[:3]]
    adds = [int(x) & mask for x in state[3:6]]
    shift = max(1, (scale + 1) // 2)
    return mults, adds, shift


def _scramble(x, scale, mults, adds, shift):
    """A bijection of [0, 2**scale): rounds of (x * odd + c) mod 2**scale and x ^= x >> shift."""
    mask = np.uint64((1 << scale) - 1)
    y = x.astype(np.uint64)
    for mul, add in zip(mults, adds):
        y *= np.uint64(mul)   # wraps mod 2**64: the low `scale` bits are the product mod 2**scale
        y += np.uint64(add)
        y &= mask
        y ^= y >> np.uint64(shift)
    return y.view(np.int64)


_RMAT_SUB = 1 << 16   # edges per cache-sized sub-block of an R-MAT block


def _draw_rmat(rng, size, scale, a, b, c, mults, adds, shift):
    """One block of R-MAT draws: per level one float32 uniform picks the quadrant.

    Sub-block by sub-block (:data:`_RMAT_SUB` edges, so the temporaries stay
    in cache), level by level from the top bit down, ``size`` uniforms ``r``
    are drawn; quadrant 0 ``[0, a)``, 1 ``[a, a+b)``, 2 ``[a+b, a+b+c)``, 3 the
    rest.  ``u`` gets the bit for quadrants 2, 3 (``r >= a+b``) and ``v`` for
    quadrants 1, 3, which is ``(r >= a) ^ (r >= a+b) ^ (r >= a+b+c)``.
    """
    fa, fab, fabc = np.float32(a), np.float32(a + b), np.float32(a + b + c)
    acc = np.uint32 if scale <= 32 else np.uint64   # narrow accumulators: less traffic
    u = np.empty(size, acc)
    v = np.empty(size, acc)
    sub = min(_RMAT_SUB, size)
    r = np.empty(sub, np.float32)
    hi, lo, top = np.empty(sub, bool), np.empty(sub, bool), np.empty(sub, bool)
    for s0 in range(0, size, sub):
        k = min(sub, size - s0)
        uu, vv, rr, bh, bl, bt = u[s0:s0 + k], v[s0:s0 + k], r[:k], hi[:k], lo[:k], top[:k]
        uu[:] = 0
        vv[:] = 0
        for _ in range(scale):
            rng.random(k, dtype=np.float32, out=rr)
            np.greater_equal(rr, fab, out=bh)
            np.greater_equal(rr, fa, out=bl)
            np.greater_equal(rr, fabc, out=bt)
            np.bitwise_xor(bl, bt, out=bl)
            np.bitwise_xor(bl, bh, out=bl)
            np.left_shift(uu, 1, out=uu)
            np.bitwise_or(uu, bh, out=uu)
            np.left_shift(vv, 1, out=vv)
            np.bitwise_or(vv, bl, out=vv)
    return _scramble(u, scale, mults, adds, shift), _scramble(v, scale, mults, adds, shift)


# --------------------------------------------------------------------------
# row functions (module level: pickled into the workers' tasks)
# --------------------------------------------------------------------------

def _erdos_renyi_rows(start, stop, *, n, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of G(n, m) with replacement."""
    return _random_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                        _draw_uniform_pairs, n=n)


def _gnp_rows(start, stop, *, n, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of G(n, p) given its drawn edge count m (pairs as u < v)."""
    return _random_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                        _draw_uniform_pairs, n=n, ordered=True)


def _rmat_rows(start, stop, *, m, scale, a, b, c, mults, adds, shift, seed, tag,
               weights, wmin, wmax):
    """Rows [start, stop) of the R-MAT graph."""
    return _random_rows(start, stop, m, seed, tag, weights, wmin, wmax, _draw_rmat,
                        scale=scale, a=a, b=b, c=c, mults=mults, adds=adds, shift=shift)


def _circulant_rows(start, stop, *, n, d, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the circulant graph."""
    return _fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _circulant_structure, n=n, d=d)


def _grid_rows(start, stop, *, rows, cols, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the 4-neighbour lattice."""
    return _fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _grid_structure, rows=rows, cols=cols)


def _hypercube_rows(start, stop, *, d, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the hypercube."""
    return _fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _hypercube_structure, dim=d)


def _caveman_rows(start, stop, *, g, k, connected, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the caveman / connected caveman graph."""
    return _fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _caveman_structure, g=g, k=k, connected=connected)


# --------------------------------------------------------------------------
# builders (client side: validate, size, describe)
# --------------------------------------------------------------------------

def _make(kind, func, n, m, wspec, dtype, shape, extra=None, describe=None):
    """Assemble the :class:`Graph` of one generated family.

    ``shape`` and ``extra`` are the row function's parameters; ``describe``
    (default ``shape``) the user's parameters shown in the name and meta.
    """
    _check_size(kind, "n", n)
    _check_size(kind, "m", m)
    params = {**(extra or {}), **shape, "m": m, "tag": _TAGS[kind], **wspec}
    describe = shape if describe is None else describe
    args = ", ".join(f"{k}={v!r}" for k, v in {**describe, "seed": wspec["seed"]}.items())
    meta = {"kind": kind, **describe, "n": n, "m": m, **wspec}
    return Graph(n_vertices=n, sources=[FunctionSource(func, params, m, name=kind)],
                 weight_dtype=dtype, validated=True, name=f"{kind}({args})", meta=meta)


def erdos_renyi(n, m, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build G(n, m) with replacement: m uniform edges between distinct vertices.

    Edge i has ``u`` uniform on ``[0, n)`` and ``v = (u + 1 + r) % n`` with ``r``
    uniform on ``[0, n - 1)``: no self-loops, exactly ``m`` edges, parallel
    edges possible.

    Parameters
    ----------
    n : int
        Number of vertices (``>= 2`` when ``m > 0``).
    m : int
        Number of edges (``>= 0``).
    seed : int, optional
        Non-negative seed; the same seed gives the same graph.
    weights : {"int", "float"}, optional
        Int64 uniform on ``[wmin, wmax]`` or float64 uniform on ``[wmin, wmax)``.
    wmin, wmax : int or float, optional
        Weight range.

    Returns
    -------
    Graph
        One :class:`~mst_dist.graph.FunctionSource`, generated on the workers.
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    n = _as_int("n", n, lo=1)
    m = _as_int("m", m, lo=0)
    if m > 0 and n < 2:
        raise ValueError(
            f"erdos_renyi: n must be >= 2 to place edges without self-loops, got n={n}")
    return _make("erdos_renyi", _erdos_renyi_rows, n, m, wspec, dtype, {"n": n},
                 describe={"n": n, "m": m})


def gnp(n, p, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build G(n, p): each pair ``u < v`` an edge with probability p (G(n, m)-conditioned).

    The standard construction: the edge count ``m ~ Binomial(n(n-1)/2, p)`` is
    drawn once from the seed (on the client, a single number), then ``m`` pairs
    are drawn uniformly, as in :func:`erdos_renyi`, and listed as ``(u, v)``
    with ``u < v``.  Conditioned on ``m`` the pairs are uniform, which is the
    law of G(n, p) up to repeated pairs: duplicates are *not* removed (dropping
    them would need a global pass), so for dense ``p`` the multigraph has a few
    parallel edges, about ``m**2 / (n (n-1))`` of them.

    Parameters
    ----------
    n : int
        Number of vertices (``>= 1``; ``n (n - 1) / 2 < 2**63``).
    p : float
        Edge probability in ``[0, 1]``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    n = _as_int("n", n, lo=1)
    p = _as_float("p", p, lo=0.0, hi=1.0)
    pairs = n * (n - 1) // 2
    if pairs >= 1 << 63:
        raise ValueError(f"gnp: n={n} is too large (n*(n-1)/2 must be < 2**63)")
    m = int(_global_rng(wspec["seed"], _TAGS["gnp"]).binomial(pairs, p)) if pairs else 0
    return _make("gnp", _gnp_rows, n, m, wspec, dtype, {"n": n}, describe={"n": n, "p": p})


def circulant(n, d, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build the circulant graph: vertex i joined to i+1, ..., i+d (mod n).

    Edge ``e`` is ``(i, (i + j) % n)`` with ``i = e // d`` and ``j = e % d + 1``;
    ``m = n * d`` and every vertex has degree ``2 d``.

    Parameters
    ----------
    n : int
        Number of vertices, ``n > 2 d`` (so no edge is listed twice).
    d : int
        Neighbours on each side, ``>= 1``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    d = _as_int("d", d, lo=1)
    n = _as_int("n", n, lo=1)
    if n <= 2 * d:
        raise ValueError(f"circulant: n must be > 2*d, got n={n}, d={d}")
    return _make("circulant", _circulant_rows, n, n * d, wspec, dtype, {"n": n, "d": d})


def grid(rows, cols, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build the rows x cols 4-neighbour lattice (a road-network-like graph).

    Vertex ``(r, c)`` is ``r * cols + c``.  Horizontal edges come first in
    row-major order, then vertical ones: ``m = rows (cols-1) + (rows-1) cols``.

    Parameters
    ----------
    rows, cols : int
        Lattice shape, each ``>= 1``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    rows = _as_int("rows", rows, lo=1)
    cols = _as_int("cols", cols, lo=1)
    m = rows * (cols - 1) + (rows - 1) * cols
    return _make("grid", _grid_rows, rows * cols, m, wspec, dtype, {"rows": rows, "cols": cols})


def hypercube(d, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build the d-dimensional hypercube: ``2**d`` vertices, ``d 2**(d-1)`` edges.

    Edge ``e`` flips bit ``j = e // 2**(d-1)``: ``u`` is ``x = e % 2**(d-1)``
    with a 0 bit inserted at position ``j``, and ``v = u | (1 << j)``.

    Parameters
    ----------
    d : int
        Dimension, ``1 <= d <= 56``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    d = _as_int("d", d, lo=1, hi=56)
    return _make("hypercube", _hypercube_rows, 1 << d, d << (d - 1), wspec, dtype, {"d": d})


def caveman(g, k, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build g cliques of k vertices joined in a ring (the "cliques in a ring" family).

    Clique ``c`` holds vertices ``c k .. c k + k - 1``; its ``k (k-1) / 2`` edges
    come clique by clique.  Then the ring: one edge from the last vertex of
    clique ``i`` to the first vertex of clique ``(i + 1) % g``, for ``g`` ring
    edges when ``g > 2``, one when ``g == 2`` and none when ``g == 1``.
    ``caveman(20_000, 40)`` has 800,000 vertices and 15,620,000 edges.

    Parameters
    ----------
    g : int
        Number of cliques, ``>= 1``.
    k : int
        Clique size, ``>= 1``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    g = _as_int("g", g, lo=1)
    k = _as_int("k", k, lo=1)
    ring = g if g > 2 else g - 1
    m = g * (k * (k - 1) // 2) + ring
    return _make("caveman", _caveman_rows, g * k, m, wspec, dtype, {"g": g, "k": k},
                 {"connected": False})


def connected_caveman(g, k, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build the connected caveman graph with networkx's edge set.

    As ``networkx.connected_caveman_graph(g, k)``: g cliques of k vertices; in
    each clique starting at vertex ``s`` the edge ``(s, s+1)`` is replaced by
    ``(s, (s-1) mod g k)``, linking it to the previous clique.  So
    ``m = g k (k-1) / 2``, except for ``g == 1, k >= 3`` where the new edge
    already exists and networkx's graph (here too) has one edge fewer.

    Parameters
    ----------
    g : int
        Number of cliques, ``>= 1``.
    k : int
        Clique size, ``>= 2``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    g = _as_int("g", g, lo=1)
    k = _as_int("k", k, lo=2)
    m = g * (k * (k - 1) // 2) - (1 if (g == 1 and k >= 3) else 0)
    return _make("connected_caveman", _caveman_rows, g * k, m, wspec, dtype,
                 {"g": g, "k": k}, {"connected": True})


def rmat(scale, edge_factor=16, a=0.57, b=0.19, c=0.19, *, seed=0, weights="int",
         wmin=1, wmax=1000):
    """Build a Graph500-style R-MAT graph: ``2**scale`` vertices, ``edge_factor 2**scale`` edges.

    For each of ``scale`` levels one float32 uniform picks a quadrant with
    probabilities ``a, b, c, 1 - a - b - c`` and sets that level's bit of the
    endpoints.  Vertex ids are then scrambled by a seeded bijection of
    ``[0, 2**scale)`` computed arithmetically (rounds of multiply by an odd
    constant plus a constant, mod ``2**scale``, and an xorshift), so high
    degree vertices are spread over the id space without an n-sized table.

    Self-loops are kept (a draw is one with probability ``(a + d)**scale``,
    ``d = 1 - a - b - c``): the engine never chooses them, and dropping them
    would make ``m`` depend on the draws.  Parallel edges are kept too.

    Parameters
    ----------
    scale : int
        ``log2`` of the number of vertices, ``1 <= scale <= 56``.
    edge_factor : int, optional
        Edges per vertex, ``>= 1``.
    a, b, c : float, optional
        Quadrant probabilities, each in ``[0, 1]`` with ``a + b + c <= 1``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    scale = _as_int("scale", scale, lo=1, hi=56)
    edge_factor = _as_int("edge_factor", edge_factor, lo=1)
    a = _as_float("a", a, lo=0.0, hi=1.0)
    b = _as_float("b", b, lo=0.0, hi=1.0)
    c = _as_float("c", c, lo=0.0, hi=1.0)
    if a + b + c > 1.0 + 1e-12:
        raise ValueError(f"rmat: a + b + c must be <= 1, got a={a}, b={b}, c={c}")
    mults, adds, shift = _scramble_keys(wspec["seed"], scale)
    n = 1 << scale
    shape = {"scale": scale, "a": a, "b": b, "c": c}
    return _make("rmat", _rmat_rows, n, edge_factor * n, wspec, dtype, shape,
                 {"mults": mults, "adds": adds, "shift": shift},
                 describe={"scale": scale, "edge_factor": edge_factor, "a": a, "b": b, "c": c})


# --------------------------------------------------------------------------
# random geometric graph
# --------------------------------------------------------------------------

_RGG_PAIRS = 1 << 22   # candidate pairs examined at once (bounds the temporaries)


def _rgg_points(seed, tag, row, k, nrows):
    """The ``k`` points of strip ``row``, sorted by x (their vertex order)."""
    rng = np.random.default_rng([seed, tag, _STREAM_SHAPE, row])
    x = rng.random(k)
    y = rng.random(k)
    y += row
    y /= nrows
    order = np.argsort(x, kind="stable")
    return x[order], y[order]


def _rgg_pairs(xa, ya, xb, yb, radius, same):
    """Pairs ``(i, j)`` within ``radius`` between point sets a and b (b = a when ``same``: j > i).

    Ordered by i, then j; yielded in pieces of at most about :data:`_RGG_PAIRS`
    candidates.
    """
    if same:
        lo = np.arange(1, xa.size + 1, dtype=np.int64)
    else:
        lo = np.searchsorted(xb, xa - radius, "left").astype(np.int64)
    hi = np.searchsorted(xb, xa + radius, "right").astype(np.int64)
    cnt = np.maximum(hi - lo, 0)
    r2 = radius * radius
    i0 = 0
    csum = np.cumsum(cnt)
    while i0 < xa.size:
        base = csum[i0 - 1] if i0 else 0
        i1 = int(np.searchsorted(csum, base + _RGG_PAIRS, "right"))
        i1 = max(i1, i0 + 1)
        c = cnt[i0:i1]
        tot = int(c.sum())
        if tot:
            ii = np.repeat(np.arange(i0, i1, dtype=np.int64), c)
            starts = np.repeat(np.cumsum(c) - c, c)
            jj = np.repeat(lo[i0:i1], c) + (np.arange(tot, dtype=np.int64) - starts)
            dx = xb[jj] - xa[ii]
            dy = yb[jj] - ya[ii]
            keep = dx * dx + dy * dy <= r2
            yield ii[keep], jj[keep]
        i0 = i1


def _rgg_row_edges(row, *, seed, tag, nrows, radius, counts, offsets):
    """Edges of strip ``row``: pairs inside it, then pairs with strip ``row + 1``.

    ``counts[row]``/``offsets[row]`` are the strip's point count and first
    vertex id (arrays indexed from the caller's first row).
    """
    xa, ya = _rgg_points(seed, tag, row + offsets["row0"], int(counts[row]), nrows)
    parts_s, parts_d = [], []
    oa = int(offsets["vid"][row])
    for i, j in _rgg_pairs(xa, ya, xa, ya, radius, True):
        parts_s.append(i + oa)
        parts_d.append(j + oa)
    if row + offsets["row0"] + 1 < nrows:
        xb, yb = _rgg_points(seed, tag, row + offsets["row0"] + 1, int(counts[row + 1]), nrows)
        ob = int(offsets["vid"][row + 1])
        for i, j in _rgg_pairs(xa, ya, xb, yb, radius, False):
            parts_s.append(i + oa)
            parts_d.append(j + ob)
    if not parts_s:
        z = np.zeros(0, np.int64)
        return z, z.copy()
    return np.concatenate(parts_s), np.concatenate(parts_d)


def _rgg_rows(start, stop, *, row0, counts, vids, row_edges, nrows, radius, seed, tag, weights,
              wmin, wmax):
    """Rows [start, stop) of one band of strips of the random geometric graph.

    ``row_edges`` holds the band's first edge of each strip (then its total).
    """
    m = int(row_edges[-1])
    start, stop = _check_range(start, stop, m)
    if start == stop:
        return _empty(weights)
    out = [np.empty(stop - start, np.int64), np.empty(stop - start, np.int64),
           np.empty(stop - start, np.int64 if weights == "int" else np.float64)]
    r0 = int(np.searchsorted(row_edges, start, "right")) - 1
    r1 = int(np.searchsorted(row_edges, stop, "left"))
    offs = {"row0": row0, "vid": vids}
    for r in range(r0, r1):
        e0, e1 = int(row_edges[r]), int(row_edges[r + 1])
        if e1 == e0:
            continue
        s, d = _rgg_row_edges(r, seed=seed, tag=tag, nrows=nrows, radius=radius, counts=counts,
                              offsets=offs)
        w = _draw_weights(np.random.default_rng([seed, tag, _STREAM_BLOCK, row0 + r]), e1 - e0,
                          weights, wmin, wmax)
        lo, hi = max(start, e0) - e0, min(stop, e1) - e0
        o = e0 + lo - start
        out[0][o:o + hi - lo] = s[lo:hi]
        out[1][o:o + hi - lo] = d[lo:hi]
        out[2][o:o + hi - lo] = w[lo:hi]
    return tuple(out)


def random_geometric(n, radius, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build a random geometric graph: n uniform points of the unit square, edges within ``radius``.

    Chunk-stable construction.  The square is cut into ``S = floor(1 / radius)``
    horizontal strips of height ``1/S >= radius`` (at least one); strip counts
    are one multinomial draw of ``n`` (seeded, on the client).  Strip ``r``'s
    points come from its own stream, x and y uniform within the strip, and are
    numbered by x after the points of strips ``0..r-1``.  An edge joins every
    pair at Euclidean distance ``<= radius``; since strips are at least
    ``radius`` high, a pair lies in one strip or in two neighbouring ones.
    Edges are listed strip by strip: pairs inside strip ``r`` (by first, then
    second vertex), then pairs from strip ``r`` to ``r + 1``; each edge is
    ``(u, v)`` with ``u < v``.  Weights are drawn per strip (not distances).

    The number of edges (about ``pi r^2 n^2 / 2``) depends on the points, so
    building the graph runs one counting pass as tasks: on the current
    ``distributed`` client if there is one, else on threads here.  The
    strips are grouped into sources of about a million edges.

    Parameters
    ----------
    n : int
        Number of points (vertices), ``>= 0``.
    radius : float
        Connection radius, ``0 < radius <= 1.5``.
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    n = _as_int("n", n, lo=0)
    radius = _as_float("radius", radius)
    if not 0.0 < radius <= 1.5:
        raise ValueError(f"random_geometric: radius must be in (0, 1.5], got {radius}")
    _check_size("random_geometric", "n", n)
    nrows = max(1, int(1.0 / radius))
    if nrows > 1 << 24:
        raise ValueError(f"random_geometric: radius={radius} is too small (more than 2**24 strips)")
    tag = _TAGS["random_geometric"]
    counts = _global_rng(wspec["seed"], tag).multinomial(n, np.full(nrows, 1.0 / nrows)) \
        if n else np.zeros(nrows, np.int64)
    counts = counts.astype(np.int64)
    vids = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    # counting tasks of ~BLOCK expected candidates each
    per_row = max(1.0, (n / nrows) * (2 * radius * n / nrows + 1.0) * 2)
    step = max(1, int(BLOCK // per_row))
    tasks = []
    for r0 in range(0, nrows, step):
        r1 = min(nrows, r0 + step)
        hi = min(nrows, r1 + 1)
        tasks.append((_rgg_count_band, r0, r1, wspec["seed"], tag, nrows, radius,
                      counts[r0:hi], vids[r0:hi]))
    res = map_tasks(_call, tasks, None, "generate-count")
    row_edges = np.concatenate(res) if res else np.zeros(0, np.int64)
    m = int(row_edges.sum())
    _check_size("random_geometric", "m", m)
    sources = []
    for (_, r0, r1, *_rest) in tasks:
        e = row_edges[r0:r1]
        band = np.concatenate([[0], np.cumsum(e)]).astype(np.int64)
        if band[-1] == 0:
            continue
        hi = min(nrows, r1 + 1)
        params = {"row0": r0, "counts": counts[r0:hi], "vids": vids[r0:hi], "row_edges": band,
                  "nrows": nrows, "radius": radius, "tag": tag, **wspec}
        sources.append(FunctionSource(_rgg_rows, params, int(band[-1]), name="random_geometric"))
    describe = {"n": n, "radius": radius}
    args = ", ".join(f"{k}={v!r}" for k, v in {**describe, "seed": wspec["seed"]}.items())
    meta = {"kind": "random_geometric", **describe, "m": m, "strips": nrows, **wspec}
    return Graph(n_vertices=n, sources=sources, weight_dtype=dtype, validated=True,
                 name=f"random_geometric({args})", meta=meta)


def _rgg_count_band(r0, r1, seed, tag, nrows, radius, counts, vids):
    """Edges of each strip in ``[r0, r1)`` (a counting task)."""
    offs = {"row0": r0, "vid": vids}
    return np.array([_rgg_row_edges(r, seed=seed, tag=tag, nrows=nrows, radius=radius,
                                    counts=counts, offsets=offs)[0].size
                     for r in range(r1 - r0)], np.int64)


def _call(func, *args):
    return func(*args)


# --------------------------------------------------------------------------
# SSCA#2-like clustered graphs
# --------------------------------------------------------------------------

_SSCA_CLIQUES = 4096   # cliques per block (part of the graph's definition)


def _ssca_sizes(seed, tag, block, max_clique, n, voff, last_block):
    """Clique sizes of one block (the last block's last clique truncated to reach n)."""
    sizes = np.random.default_rng([seed, tag, _STREAM_SHAPE, block]).integers(
        1, max_clique, size=_SSCA_CLIQUES, dtype=np.int64, endpoint=True)
    if block == last_block:
        c = np.cumsum(sizes)
        k = int(np.searchsorted(c, n - voff, "left"))
        sizes = sizes[:k + 1].copy()
        sizes[-1] -= int(c[k]) - (n - voff)
    return sizes


def _ssca_block_edges(b, *, n, max_clique, inter, levels, n_cliques, block_voff, block_coff,
                      seed, tag, weights, wmin, wmax):
    """All edges of clique block ``b``: its cliques' pairs, then its vertices' inter-clique edges."""
    last = block_voff.size - 2
    sizes = _ssca_sizes(seed, tag, b, max_clique, n, int(block_voff[b]), last)
    starts = int(block_voff[b]) + np.cumsum(sizes) - sizes
    pairs = sizes * (sizes - 1) // 2
    tot = int(pairs.sum())
    e = np.arange(tot, dtype=np.int64) - np.repeat(np.cumsum(pairs) - pairs, pairs)
    a, bb = _colex_pair(e)
    cs = np.repeat(starts, pairs)
    src = [cs + a]
    dst = [cs + bb]
    rng = _block_rng(seed, tag, b)
    nv = int(sizes.sum())
    if inter and n_cliques > 1 and nv:
        k = nv * inter
        own_clique = np.repeat(int(block_coff[b]) + np.arange(sizes.size, dtype=np.int64), sizes)
        own = np.arange(int(block_voff[b]), int(block_voff[b]) + nv, dtype=np.int64)
        u = np.repeat(own, inter)
        cu = np.repeat(own_clique, inter)
        lev = np.minimum(np.floor(-np.log2(1.0 - rng.random(k))).astype(np.int64), levels - 1)
        sign = np.where(rng.random(k) < 0.5, -1, 1)
        frac = rng.random(k)
        ct = (cu + sign * (np.int64(1) << lev)) % n_cliques
        # sizes and first vertices of the target cliques (their blocks regenerated)
        tb = ct // _SSCA_CLIQUES
        tstart = np.empty(k, np.int64)
        tsize = np.empty(k, np.int64)
        for blk in np.unique(tb):
            blk = int(blk)
            sz = sizes if blk == b else _ssca_sizes(seed, tag, blk, max_clique, n,
                                                    int(block_voff[blk]), last)
            st = int(block_voff[blk]) + np.cumsum(sz) - sz
            sel = tb == blk
            loc = ct[sel] - blk * _SSCA_CLIQUES
            tstart[sel] = st[loc]
            tsize[sel] = sz[loc]
        v = tstart + np.minimum((frac * tsize).astype(np.int64), tsize - 1)
        src.append(u)
        dst.append(v)
    s = np.concatenate(src)
    d = np.concatenate(dst)
    w = _draw_weights(rng, s.size, weights, wmin, wmax)
    return s, d, w


def _ssca_rows(start, stop, *, block_eoff, **kw):
    """Rows [start, stop) of the SSCA#2-like graph (blocks generated whole, then sliced)."""
    m = int(block_eoff[-1])
    start, stop = _check_range(start, stop, m)
    if start == stop:
        return _empty(kw["weights"])
    out = [np.empty(stop - start, np.int64), np.empty(stop - start, np.int64),
           np.empty(stop - start, np.int64 if kw["weights"] == "int" else np.float64)]
    b0 = int(np.searchsorted(block_eoff, start, "right")) - 1
    b1 = int(np.searchsorted(block_eoff, stop, "left"))
    for b in range(b0, b1):
        e0, e1 = int(block_eoff[b]), int(block_eoff[b + 1])
        if e1 == e0:
            continue
        cols = _ssca_block_edges(b, **kw)
        lo, hi = max(start, e0) - e0, min(stop, e1) - e0
        o = e0 + lo - start
        for x, y in zip(out, cols):
            x[o:o + hi - lo] = y[lo:hi]
    return tuple(out)


def ssca2(n, max_clique=None, inter=1, *, seed=0, weights="int", wmin=1, wmax=1000):
    """Build an SSCA#2-like clustered graph: random-sized cliques plus hierarchical inter-clique edges.

    After the SSCA#2 benchmark's generator (Bader and Madduri, GTgraph), as
    used in seed 004: vertices ``0..n-1`` are cut into consecutive cliques of
    sizes uniform on ``1..max_clique`` (drawn in blocks of 4096 cliques, each
    block from its own stream; the last clique is cut to reach ``n``); every
    clique is complete.  Then each vertex gets ``inter`` edges to other
    cliques: the target clique is at distance ``+-2**k`` (ring order,
    ``k = 0, 1, ...`` with probability halving at each level, at most
    ``log2(#cliques)``), the target vertex uniform in it.  Unlike the original
    (a random count of directed, possibly parallel inter-clique edges), the
    count is fixed, so ``m = sum s(s-1)/2 + inter * n`` is known without a
    pass.

    Edges are listed block by block: the clique pairs of the block (clique by
    clique, pairs in colexicographic order), then its vertices' inter-clique
    edges; weights are drawn per block.

    Parameters
    ----------
    n : int
        Number of vertices, ``>= 1``.
    max_clique : int, optional
        Largest clique (default ``max(1, round(n ** (1/3)))``, SSCA#2's
        ``2**(SCALE/3)``).
    inter : int, optional
        Inter-clique edges per vertex (default 1; none when there is one clique).
    seed, weights, wmin, wmax
        As in :func:`erdos_renyi`.

    Returns
    -------
    Graph
    """
    wspec, dtype = _weight_spec(seed, weights, wmin, wmax)
    n = _as_int("n", n, lo=1)
    if max_clique is None:
        max_clique = max(1, round(n ** (1.0 / 3.0)))
    max_clique = _as_int("max_clique", max_clique, lo=1, hi=1 << 20)
    inter = _as_int("inter", inter, lo=0, hi=1 << 20)
    _check_size("ssca2", "n", n)
    tag = _TAGS["ssca2"]
    voffs, coffs, eintra = [0], [0], []
    b = 0
    while voffs[-1] < n:
        sizes = _ssca_sizes(wspec["seed"], tag, b, max_clique, n, voffs[-1], -1)
        total = int(sizes.sum())
        if voffs[-1] + total >= n:  # the last block: cut it
            sizes = _ssca_sizes(wspec["seed"], tag, b, max_clique, n, voffs[-1], b)
            total = int(sizes.sum())
        voffs.append(voffs[-1] + total)
        coffs.append(coffs[-1] + sizes.size)
        eintra.append(int((sizes * (sizes - 1) // 2).sum()))
        b += 1
    n_cliques = coffs[-1]
    inter_eff = inter if n_cliques > 1 else 0
    block_voff = np.array(voffs, np.int64)
    block_coff = np.array(coffs, np.int64)
    per_block = np.array(eintra, np.int64) + inter_eff * np.diff(block_voff)
    block_eoff = np.concatenate([[0], np.cumsum(per_block)]).astype(np.int64)
    m = int(block_eoff[-1])
    _check_size("ssca2", "m", m)
    levels = max(1, int(np.floor(np.log2(n_cliques)))) if n_cliques > 1 else 1
    params = {"block_eoff": block_eoff, "n": n, "max_clique": max_clique, "inter": inter_eff,
              "levels": levels, "n_cliques": n_cliques, "block_voff": block_voff,
              "block_coff": block_coff, "tag": tag, **wspec}
    describe = {"n": n, "max_clique": max_clique, "inter": inter}
    args = ", ".join(f"{k}={v!r}" for k, v in {**describe, "seed": wspec["seed"]}.items())
    meta = {"kind": "ssca2", **describe, "m": m, "cliques": n_cliques, **wspec}
    return Graph(n_vertices=n, sources=[FunctionSource(_ssca_rows, params, m, name="ssca2")],
                 weight_dtype=dtype, validated=True, name=f"ssca2({args})", meta=meta)


GENERATORS = {
    "erdos_renyi": erdos_renyi,
    "gnp": gnp,
    "circulant": circulant,
    "grid": grid,
    "hypercube": hypercube,
    "caveman": caveman,
    "connected_caveman": connected_caveman,
    "rmat": rmat,
    "random_geometric": random_geometric,
    "ssca2": ssca2,
}


def generate(kind: str, *, seed: int = 0, weights: str = "int", wmin=1, wmax=1000,
             **params) -> Graph:
    """Build a seeded synthetic graph of a named family, generated on the workers.

    Parameters
    ----------
    kind : str
        A key of :data:`GENERATORS`: ``"erdos_renyi"`` (n, m), ``"gnp"`` (n, p),
        ``"circulant"`` (n, d), ``"grid"`` (rows, cols), ``"hypercube"`` (d),
        ``"caveman"`` (g, k), ``"connected_caveman"`` (g, k), ``"rmat"``
        (scale, edge_factor=16, a=0.57, b=0.19, c=0.19),
        ``"random_geometric"`` (n, radius), ``"ssca2"`` (n, max_clique=None,
        inter=1).
    seed : int, optional
        Non-negative seed; the same seed and parameters give the same graph,
        however it is chunked.
    weights : {"int", "float"}, optional
        ``"int"``: int64 uniform on ``[wmin, wmax]`` (ties on purpose);
        ``"float"``: float64 uniform on ``[wmin, wmax)``.
    wmin, wmax : int or float, optional
        Weight range (default ``1 .. 1000``); ``wmin == wmax`` gives constant
        weights.
    **params
        The family's parameters, by name.

    Returns
    -------
    Graph
        A validated graph whose one source generates rows on demand.

    Raises
    ------
    ValueError
        Unknown family (the message lists the choices), missing or unknown
        parameter, or a parameter out of range (named in the message).

    Examples
    --------
    >>> from mst_dist.generators import generate
    >>> g = generate("grid", rows=3, cols=4, seed=1)
    >>> g.n_vertices, g.n_edges
    (12, 17)
    >>> src, dst, w = g.to_arrays()
    >>> src[:3].tolist(), dst[:3].tolist()
    ([0, 1, 2], [1, 2, 3])
    """
    try:
        builder = GENERATORS[kind]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown graph kind {kind!r}; choose one of: {', '.join(sorted(GENERATORS))}"
        ) from None
    sig = inspect.signature(builder)
    accepted = [p for p, v in sig.parameters.items()
                if v.kind == v.POSITIONAL_OR_KEYWORD]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{kind}: unknown parameter(s) {', '.join(unknown)}; expected {', '.join(accepted)}"
        )
    missing = [p for p in accepted
               if sig.parameters[p].default is inspect.Parameter.empty and p not in params]
    if missing:
        raise ValueError(f"{kind}: missing parameter(s) {', '.join(missing)}")
    return builder(seed=seed, weights=weights, wmin=wmin, wmax=wmax, **params)

"""The families with a known size: structure, row functions (run on the workers) and builders.

``erdos_renyi``, ``gnp`` and ``rmat`` draw each edge's endpoints from the
counter-based stream, edge by edge, in the compiled kernels of
:mod:`~mst_dist.generators.philox`; ``circulant``, ``grid``, ``hypercube``,
``caveman`` and ``connected_caveman`` compute each edge's endpoints from its
index (:func:`~mst_dist.generators.blocks.fixed_rows`).  Every family's
weights come from the same counter-based stream.
No family builds a table whose size grows with the number of vertices.  Each
builder validates its parameters, sizes the graph and returns a
:class:`~mst_dist.graph.Graph` with one
:class:`~mst_dist.graph.FunctionSource` over the family's row function.
"""
from __future__ import annotations

import numpy as np

from mst_dist.generators.blocks import (
    STREAM_GLOBAL, TAGS, check_range, counter_weights, fixed_rows, global_rng,
)
from mst_dist.generators.philox import key_of, rmat_edges, rmat_thresholds, run, span_of, uniform_pairs
from mst_dist.generators.checks import Number, Weights, as_float, as_int, check_size, weight_spec
from mst_dist.graph import FunctionSource, Graph

__all__ = ["erdos_renyi", "gnp", "circulant", "grid", "hypercube", "caveman", "connected_caveman",
           "rmat", "colex_pair"]


# --------------------------------------------------------------------------
# per-family structure (pure array functions)
# --------------------------------------------------------------------------

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


def colex_pair(p):
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
        a, b = colex_pair(e % per + skip)
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
        a, b = colex_pair(ec % pairs)
        s[in_clique] = c * k + a
        d[in_clique] = c * k + b
    i = e[~in_clique] - nclique
    s[~in_clique] = i * k + (k - 1)
    d[~in_clique] = ((i + 1) % g) * k
    return s, d


def _scramble_keys(seed, scale):
    """Odd multipliers, additive constants and shifts of the R-MAT id scramble."""
    seq = np.random.SeedSequence([seed, TAGS["rmat"], STREAM_GLOBAL, 0])
    state = seq.generate_state(6, np.uint64)
    mask = (1 << scale) - 1
    mults = [(int(x) | 1) & mask for x in state[:3]]
    adds = [int(x) & mask for x in state[3:6]]
    shift = max(1, (scale + 1) // 2)
    return mults, adds, shift


def _scramble(x, scale, mults, adds, shift):
    """R-MAT's id scramble as defined, in NumPy: a bijection of [0, 2**scale).

    Rounds of ``x = (x * odd + c) mod 2**scale`` and ``x ^= x >> shift``.
    The generator computes it inside
    :func:`~mst_dist.generators.philox.rmat_edges`; this statement of it is
    what the tests hold the kernel to.
    """
    mask = np.uint64((1 << scale) - 1)
    y = x.astype(np.uint64)
    for mul, add in zip(mults, adds):
        y *= np.uint64(mul)   # wraps mod 2**64: the low `scale` bits are the product mod 2**scale
        y += np.uint64(add)
        y &= mask
        y ^= y >> np.uint64(shift)
    return y.view(np.int64)


# --------------------------------------------------------------------------
# row functions (module level: pickled into the workers' tasks)
# --------------------------------------------------------------------------

def _pairs_rows(start, stop, *, n, m, seed, tag, weights, wmin, wmax, ordered):
    """Rows [start, stop) of uniform pairs of distinct vertices, drawn edge by edge (:mod:`.philox`)."""
    start, stop = check_range(start, stop, m)
    s, d = np.empty(stop - start, np.int64), np.empty(stop - start, np.int64)
    if stop > start:
        k0, k1 = key_of(seed, tag)
        _, rej_n = span_of(0, n - 1)
        _, rej_n1 = span_of(0, n - 2)
        run(uniform_pairs, start, k0, k1, np.int64(n), rej_n, rej_n1, ordered, outs=(s, d))
    return s, d, counter_weights(start, stop, seed, tag, weights, wmin, wmax)


def _erdos_renyi_rows(start, stop, *, n, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of G(n, m) with replacement."""
    return _pairs_rows(start, stop, n=n, m=m, seed=seed, tag=tag, weights=weights, wmin=wmin,
                       wmax=wmax, ordered=False)


def _gnp_rows(start, stop, *, n, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of G(n, p) given its drawn edge count m (pairs as u < v)."""
    return _pairs_rows(start, stop, n=n, m=m, seed=seed, tag=tag, weights=weights, wmin=wmin,
                       wmax=wmax, ordered=True)


def _rmat_rows(start, stop, *, m, scale, a, b, c, mults, adds, shift, seed, tag,
               weights, wmin, wmax):
    """Rows [start, stop) of the R-MAT graph, drawn edge by edge on the process's Numba threads."""
    start, stop = check_range(start, stop, m)
    s, d = np.empty(stop - start, np.int64), np.empty(stop - start, np.int64)
    if stop > start:
        k0, k1 = key_of(seed, tag)
        run(rmat_edges, start, k0, k1, np.int64(scale), *rmat_thresholds(a, b, c),
            np.array(mults, np.uint64), np.array(adds, np.uint64), np.int64(shift), outs=(s, d))
    return s, d, counter_weights(start, stop, seed, tag, weights, wmin, wmax)


def _circulant_rows(start, stop, *, n, d, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the circulant graph."""
    return fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _circulant_structure, n=n, d=d)


def _grid_rows(start, stop, *, rows, cols, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the 4-neighbour lattice."""
    return fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _grid_structure, rows=rows, cols=cols)


def _hypercube_rows(start, stop, *, d, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the hypercube."""
    return fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _hypercube_structure, dim=d)


def _caveman_rows(start, stop, *, g, k, connected, m, seed, tag, weights, wmin, wmax):
    """Rows [start, stop) of the caveman / connected caveman graph."""
    return fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax,
                       _caveman_structure, g=g, k=k, connected=connected)


# --------------------------------------------------------------------------
# builders (client side: validate, size, describe)
# --------------------------------------------------------------------------

def _make(kind, func, n, m, wspec, dtype, shape, extra=None, describe=None):
    """Assemble the :class:`Graph` of one generated family.

    ``shape`` and ``extra`` are the row function's parameters; ``describe``
    (default ``shape``) the user's parameters shown in the name and meta.
    """
    check_size(kind, "n", n)
    check_size(kind, "m", m)
    params = {**(extra or {}), **shape, "m": m, "tag": TAGS[kind], **wspec}
    describe = shape if describe is None else describe
    args = ", ".join(f"{k}={v!r}" for k, v in {**describe, "seed": wspec["seed"]}.items())
    meta = {"kind": kind, **describe, "n": n, "m": m, **wspec}
    return Graph(n_vertices=n, sources=[FunctionSource(func, params, m, name=kind)],
                 weight_dtype=dtype, validated=True, name=f"{kind}({args})", meta=meta)


def erdos_renyi(n: int, m: int, *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
                wmax: Number = 1000) -> Graph:
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
        ``int``: int64 uniform on ``[wmin, wmax]``; ``float``: float64 uniform
        on ``[wmin, wmax)``.
    wmin, wmax : int or float, optional
        Weight range.

    Returns
    -------
    Graph
        One :class:`~mst_dist.graph.FunctionSource`, generated on the workers.
    """
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    n = as_int("n", n, lo=1)
    m = as_int("m", m, lo=0)
    if m > 0 and n < 2:
        raise ValueError(
            f"erdos_renyi: n must be >= 2 to place edges without self-loops, got n={n}")
    return _make("erdos_renyi", _erdos_renyi_rows, n, m, wspec, dtype, {"n": n},
                 describe={"n": n, "m": m})


def gnp(n: int, p: float, *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
        wmax: Number = 1000) -> Graph:
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    n = as_int("n", n, lo=1)
    p = as_float("p", p, lo=0.0, hi=1.0)
    pairs = n * (n - 1) // 2
    if pairs >= 1 << 63:
        raise ValueError(f"gnp: n={n} is too large (n*(n-1)/2 must be < 2**63)")
    m = int(global_rng(wspec["seed"], TAGS["gnp"]).binomial(pairs, p)) if pairs else 0
    return _make("gnp", _gnp_rows, n, m, wspec, dtype, {"n": n}, describe={"n": n, "p": p})


def circulant(n: int, d: int, *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
              wmax: Number = 1000) -> Graph:
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    d = as_int("d", d, lo=1)
    n = as_int("n", n, lo=1)
    if n <= 2 * d:
        raise ValueError(f"circulant: n must be > 2*d, got n={n}, d={d}")
    return _make("circulant", _circulant_rows, n, n * d, wspec, dtype, {"n": n, "d": d})


def grid(rows: int, cols: int, *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
         wmax: Number = 1000) -> Graph:
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    rows = as_int("rows", rows, lo=1)
    cols = as_int("cols", cols, lo=1)
    m = rows * (cols - 1) + (rows - 1) * cols
    return _make("grid", _grid_rows, rows * cols, m, wspec, dtype, {"rows": rows, "cols": cols})


def hypercube(d: int, *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
              wmax: Number = 1000) -> Graph:
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    d = as_int("d", d, lo=1, hi=56)
    return _make("hypercube", _hypercube_rows, 1 << d, d << (d - 1), wspec, dtype, {"d": d})


def caveman(g: int, k: int, *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
            wmax: Number = 1000) -> Graph:
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    g = as_int("g", g, lo=1)
    k = as_int("k", k, lo=1)
    ring = g if g > 2 else g - 1
    m = g * (k * (k - 1) // 2) + ring
    return _make("caveman", _caveman_rows, g * k, m, wspec, dtype, {"g": g, "k": k},
                 {"connected": False})


def connected_caveman(g: int, k: int, *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
                      wmax: Number = 1000) -> Graph:
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    g = as_int("g", g, lo=1)
    k = as_int("k", k, lo=2)
    m = g * (k * (k - 1) // 2) - (1 if (g == 1 and k >= 3) else 0)
    return _make("connected_caveman", _caveman_rows, g * k, m, wspec, dtype,
                 {"g": g, "k": k}, {"connected": True})


def rmat(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
         *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
         wmax: Number = 1000) -> Graph:
    """Build a Graph500-style R-MAT graph: ``2**scale`` vertices, ``edge_factor 2**scale`` edges.

    For each of ``scale`` levels one uniform 32-bit draw picks a quadrant
    with probabilities ``a, b, c, 1 - a - b - c`` (each exact to within
    ``2**-33``) and sets that level's bit of the endpoints; the draws are
    Philox4x32-10 outputs of counter (edge, level // 4), so any edge is
    generated alone, on any worker.  Vertex ids are then scrambled by a seeded bijection of
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    scale = as_int("scale", scale, lo=1, hi=56)
    edge_factor = as_int("edge_factor", edge_factor, lo=1)
    a = as_float("a", a, lo=0.0, hi=1.0)
    b = as_float("b", b, lo=0.0, hi=1.0)
    c = as_float("c", c, lo=0.0, hi=1.0)
    if a + b + c > 1.0 + 1e-12:
        raise ValueError(f"rmat: a + b + c must be <= 1, got a={a}, b={b}, c={c}")
    mults, adds, shift = _scramble_keys(wspec["seed"], scale)
    n = 1 << scale
    shape = {"scale": scale, "a": a, "b": b, "c": c}
    return _make("rmat", _rmat_rows, n, edge_factor * n, wspec, dtype, shape,
                 {"mults": mults, "adds": adds, "shift": shift},
                 describe={"scale": scale, "edge_factor": edge_factor, "a": a, "b": b, "c": c})

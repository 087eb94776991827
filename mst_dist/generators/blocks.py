"""The block machinery of the generators (runs on the workers): stream tags, seeded streams, row ranges.

Every family's weights, and the endpoints of ``erdos_renyi``, ``gnp`` and
``rmat``, come from the counter-based draws of :mod:`.philox`, edge by edge
(:func:`counter_weights`).  The families whose shapes are drawn per group of
edges (``ssca2``'s clique sizes, ``random_geometric``'s points) use NumPy
streams instead: block ``b`` of such a family draws from :func:`block_rng`
(``np.random.default_rng([seed, family_tag, 0, b])``) and a row range is the
slice of the blocks it overlaps, so the rows of a range do not depend on how
the edge list is split.  :func:`fixed_rows` serves the families whose
endpoints are a function of the edge index.
"""
from __future__ import annotations

import numpy as np

from mst_dist.generators.philox import weights_into

__all__ = ["BLOCK", "TAGS", "STREAM_BLOCK", "STREAM_GLOBAL", "STREAM_SHAPE", "block_rng",
           "global_rng", "draw_weights", "empty_rows", "check_range", "fixed_rows",
           "counter_weights"]

#: Edges per block: the size of the counting tasks of ``random_geometric``; the counter-based
#: draws do not depend on it (edge ``i`` of block ``b`` is edge ``b * BLOCK + i``).
BLOCK = 1 << 20

#: Fixed per-family stream tags (never renumber: they define the graphs).
TAGS = {
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
STREAM_BLOCK = 0   # per-block streams: [seed, tag, 0, block]
STREAM_GLOBAL = 1  # graph-wide draws (gnp's edge count, rmat's scramble): [seed, tag, 1, i]
STREAM_SHAPE = 2   # per-block shape draws (geometric points of a row, ssca2 clique sizes)
# [seed, tag, 3] keys the counter-based draws (philox.KEY_STREAM)


def block_rng(seed, tag, block):
    """The random stream of one block of :data:`BLOCK` edges."""
    return np.random.default_rng([seed, tag, STREAM_BLOCK, block])


def global_rng(seed, tag, index=0):
    """A graph-wide random stream (same on every worker)."""
    return np.random.default_rng([seed, tag, STREAM_GLOBAL, index])


def draw_weights(rng, size, weights, wmin, wmax):
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


def empty_rows(weights):
    """No rows: empty ``(src, dst, weight)`` of the weight kind's dtype."""
    z = np.zeros(0, np.int64)
    return z, z.copy(), np.zeros(0, np.int64 if weights == "int" else np.float64)


def check_range(start, stop, m):
    """``(start, stop)`` as ints, refusing a range outside ``[0, m)``."""
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= m:
        raise ValueError(f"row range [{start}, {stop}) is outside [0, {m})")
    return start, stop


def fixed_rows(start, stop, m, seed, tag, weights, wmin, wmax, structure, **kw):
    """Rows [start, stop) of a family whose endpoints are a function of the edge index."""
    start, stop = check_range(start, stop, m)
    if start == stop:
        return empty_rows(weights)
    e = np.arange(start, stop, dtype=np.int64)
    s, d = structure(e, **kw)
    return s, d, counter_weights(start, stop, seed, tag, weights, wmin, wmax)


def counter_weights(start, stop, seed, tag, weights, wmin, wmax):
    """Weights of edges [start, stop) from the counter-based stream (:mod:`.philox`), edge by edge."""
    out = np.empty(stop - start, np.int64 if weights == "int" else np.float64)
    return weights_into(out, start, seed, tag, weights, wmin, wmax)

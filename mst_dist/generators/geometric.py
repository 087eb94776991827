"""The random geometric graph: strips of the unit square, counted by one pass of tasks, then generated.

Its edge count depends on the points, so :func:`random_geometric` runs one
counting pass (:func:`~mst_dist.io.tasks.map_tasks`, tasks
``mst-generate-count-*``) before it returns the graph.
"""
from __future__ import annotations

import numpy as np

from mst_dist.generators.blocks import (
    BLOCK, STREAM_BLOCK, STREAM_SHAPE, TAGS, check_range, draw_weights, empty_rows, global_rng,
)
from mst_dist.generators.checks import Number, Weights, as_float, as_int, check_size, weight_spec
from mst_dist.graph import FunctionSource, Graph
from mst_dist.io.tasks import map_tasks

__all__ = ["random_geometric"]



_RGG_PAIRS = 1 << 22   # candidate pairs examined at once (bounds the temporaries)


def _rgg_points(seed, tag, row, k, nrows):
    """The ``k`` points of strip ``row``, sorted by x (their vertex order)."""
    rng = np.random.default_rng([seed, tag, STREAM_SHAPE, row])
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
    start, stop = check_range(start, stop, m)
    if start == stop:
        return empty_rows(weights)
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
        w = draw_weights(np.random.default_rng([seed, tag, STREAM_BLOCK, row0 + r]), e1 - e0,
                          weights, wmin, wmax)
        lo, hi = max(start, e0) - e0, min(stop, e1) - e0
        o = e0 + lo - start
        out[0][o:o + hi - lo] = s[lo:hi]
        out[1][o:o + hi - lo] = d[lo:hi]
        out[2][o:o + hi - lo] = w[lo:hi]
    return tuple(out)


def random_geometric(n: int, radius: float, *, seed: int = 0, weights: Weights = "int",
                     wmin: Number = 1, wmax: Number = 1000) -> Graph:
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    n = as_int("n", n, lo=0)
    radius = as_float("radius", radius)
    if not 0.0 < radius <= 1.5:
        raise ValueError(f"random_geometric: radius must be in (0, 1.5], got {radius}")
    check_size("random_geometric", "n", n)
    nrows = max(1, int(1.0 / radius))
    if nrows > 1 << 24:
        raise ValueError(f"random_geometric: radius={radius} is too small (more than 2**24 strips)")
    tag = TAGS["random_geometric"]
    counts = global_rng(wspec["seed"], tag).multinomial(n, np.full(nrows, 1.0 / nrows)) \
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
    check_size("random_geometric", "m", m)
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

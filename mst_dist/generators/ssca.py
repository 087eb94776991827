"""SSCA#2-like clustered graphs: random-sized cliques plus hierarchical inter-clique edges.

Cliques come in blocks of :data:`_SSCA_CLIQUES`, each block's sizes from its
own stream; a row range regenerates the blocks it overlaps (and the blocks of
the cliques its inter-clique edges land in) and slices them.
"""
from __future__ import annotations

import numpy as np

from mst_dist.generators.blocks import (
    STREAM_SHAPE, TAGS, block_rng, check_range, draw_weights, empty_rows,
)
from mst_dist.generators.checks import Number, Weights, as_int, check_size, weight_spec
from mst_dist.generators.families import colex_pair
from mst_dist.graph import FunctionSource, Graph

__all__ = ["ssca2"]


_SSCA_CLIQUES = 4096   # cliques per block (part of the graph's definition)


def _ssca_sizes(seed, tag, block, max_clique, n, voff, last_block):
    """Clique sizes of one block (the last block's last clique truncated to reach n)."""
    sizes = np.random.default_rng([seed, tag, STREAM_SHAPE, block]).integers(
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
    a, bb = colex_pair(e)
    cs = np.repeat(starts, pairs)
    src = [cs + a]
    dst = [cs + bb]
    rng = block_rng(seed, tag, b)
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
    w = draw_weights(rng, s.size, weights, wmin, wmax)
    return s, d, w


def _ssca_rows(start, stop, *, block_eoff, **kw):
    """Rows [start, stop) of the SSCA#2-like graph (blocks generated whole, then sliced)."""
    m = int(block_eoff[-1])
    start, stop = check_range(start, stop, m)
    if start == stop:
        return empty_rows(kw["weights"])
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


def ssca2(n: int, max_clique: int | None = None, inter: int = 1,
          *, seed: int = 0, weights: Weights = "int", wmin: Number = 1,
          wmax: Number = 1000) -> Graph:
    """Build an SSCA#2-like clustered graph: random-sized cliques plus hierarchical inter-clique edges.

    After the SSCA#2 benchmark's generator (Bader and Madduri, GTgraph), as
    used by Vineet et al. (HPG 2009): vertices ``0..n-1`` are cut into consecutive cliques of
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
    wspec, dtype = weight_spec(seed, weights, wmin, wmax)
    n = as_int("n", n, lo=1)
    if max_clique is None:
        max_clique = max(1, round(n ** (1.0 / 3.0)))
    max_clique = as_int("max_clique", max_clique, lo=1, hi=1 << 20)
    inter = as_int("inter", inter, lo=0, hi=1 << 20)
    check_size("ssca2", "n", n)
    tag = TAGS["ssca2"]
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
    check_size("ssca2", "m", m)
    levels = max(1, int(np.floor(np.log2(n_cliques)))) if n_cliques > 1 else 1
    params = {"block_eoff": block_eoff, "n": n, "max_clique": max_clique, "inter": inter_eff,
              "levels": levels, "n_cliques": n_cliques, "block_voff": block_voff,
              "block_coff": block_coff, "tag": tag, **wspec}
    describe = {"n": n, "max_clique": max_clique, "inter": inter}
    args = ", ".join(f"{k}={v!r}" for k, v in {**describe, "seed": wspec["seed"]}.items())
    meta = {"kind": "ssca2", **describe, "m": m, "cliques": n_cliques, **wspec}
    return Graph(n_vertices=n, sources=[FunctionSource(_ssca_rows, params, m, name="ssca2")],
                 weight_dtype=dtype, validated=True, name=f"ssca2({args})", meta=meta)

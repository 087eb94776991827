"""The approximate kNN graph of points on the Dask workers: NN-descent over overlapping parts.

No worker holds all the points.  Each point goes to the parts of its two
nearest centres (k-means of a sample), each part runs NN-descent over its
points on one worker, and each point's two lists are merged into one -- the
scheme with which cuML's HDBSCAN builds graphs too large for one GPU by
NN-descent ("batched" NN-descent).  A point's neighbours on the far side of
both its parts' boundaries are missed; the recall, measured by
:func:`mst_dist.clustering.knn_recall`, is a little below one part's.

Tasks ``mst-knn-<stage>-<token>-<i>``, in stages:

1. ``block``: each chunk of rows validated and prepared (as the exact
   search); ``sample``: a few of its rows.
2. Here: ``P`` centres, k-means (scikit-learn's) of the sample.
3. ``near``: each row's two nearest centres (``sizes``: how many a part
   gets); ``piece``: a chunk's rows of a part; ``part``: NN-descent over a part's points, each point's list as
   rows ``(point, neighbour, reduced distance)``, cut by point id modulo
   ``P``; ``cut``: one of those cuts.
4. ``lists``: a cut's rows from every part merged into each point's ``k``
   nearest, as pairs ``(smaller id, larger id, distance)`` cut by the smaller
   id modulo ``P``.
   Beside them, ``sampled``/``brute``: the true ``k``-th distance of a
   sample of the points, for the recall the graph reports
   (``meta["knn"]["recall"]``), from the lists' entries (``hits``).
5. ``edges``: each pair once (``"union"``), or where both ends listed it
   (``"mutual"``): the graph's rows, left on the workers as the exact
   search's are.
"""
from __future__ import annotations

import operator

import numpy as np

from mst_dist.clustering import _distributed_knn as dk
from mst_dist.clustering._nndescent import recall_rows
from mst_dist.clustering.knn import finished, metric_of

#: sample rows per part the centres are found from
SAMPLE_PER_PART = 256


# ---------------------------------------------------------------------------
# task functions (run on workers)
# ---------------------------------------------------------------------------

def nearest_two(block, centres):
    """Each row's two nearest centres, grouped: ``(part, row)`` ascending, each row twice.

    Euclidean (the search's points are prepared for their metric; the parts
    only need near points together).
    """
    m = block.shape[0]
    if centres.shape[0] == 1:
        return np.zeros(m, np.int64), np.arange(m, dtype=np.int64)
    d = (block * block).sum(axis=1)[:, None] - 2.0 * block @ centres.T + (centres * centres).sum(axis=1)[None, :]
    two = np.argpartition(d, 1, axis=1)[:, :2].astype(np.int64)
    part = two.T.ravel()
    row = np.tile(np.arange(m, dtype=np.int64), 2)
    order = np.lexsort((row, part))
    return part[order], row[order]


def _cut(P, first, *rest):
    """Rows ``(first, *rest)`` in ``P`` cuts by ``first`` modulo ``P``, each in its rows' order."""
    cut = first % P
    order = np.argsort(cut, kind="stable")
    bounds = np.searchsorted(cut[order], np.arange(P + 1))
    columns = [first[order]] + [c[order] for c in rest]
    return [tuple(c[a:z] for c in columns) for a, z in zip(bounds[:-1], bounds[1:])]


def part_sizes(near, P):
    """Rows of a chunk in each part."""
    return np.bincount(near[0], minlength=P)


def part_lists(k, metric, p, seed, P, *pieces):
    """NN-descent over one part's points: each point's list as ``(point, neighbour, reduced)``, cut by point id mod ``P``."""
    from mst_dist.clustering._neighbours_kernels import NO_ID
    from mst_dist.clustering._nndescent import nndescent_neighbours

    points = np.concatenate([x for x, _ in pieces])
    ids = np.concatenate([i for _, i in pieces])
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    if points.shape[0] < 2:
        return [empty] * P
    dist, nbr, _ = nndescent_neighbours(np.ascontiguousarray(points), min(k, points.shape[0] - 1),
                                        metric=metric, p=p, random_state=seed)
    real = nbr != NO_ID
    src = np.repeat(ids, real.sum(axis=1))
    dst = ids[nbr[real]]
    red = dist[real]
    return _cut(P, src, dst, red)


def sampled_rows(block, offset, rows):
    """The rows of a chunk among the global ids ``rows``."""
    at = rows[(rows >= offset) & (rows < offset + block.shape[0])] - offset
    return block[at]


def sampled_nearest(block, offset, Q, rows, k, code, p):
    """The ``k`` least reduced distances of each point of ``Q`` (global ids ``rows``) to a chunk's rows."""
    from mst_dist.clustering._nndescent_kernels import nearest_in_block

    return nearest_in_block(block, block.shape[0], rows, offset, k, code, p, np.ascontiguousarray(Q))


def merged_lists(k, P, rows, kth, *cuts):
    """Each point's lists from its parts merged into its ``k`` nearest (by distance, then id), as pairs cut by the smaller id mod ``P``.

    The same pair measured in two parts has one distance (the same float64
    points, the same sum), so it is one entry.  Element ``P``: how many of
    the lists' entries of the points ``rows`` are as near as their true
    ``k``-th neighbour (``kth``): the recall's hits.
    """
    src = np.concatenate([c[0] for c in cuts])
    dst = np.concatenate([c[1] for c in cuts])
    red = np.concatenate([c[2] for c in cuts])
    order = np.lexsort((dst, red, src))
    src, dst, red = src[order], dst[order], red[order]
    again = np.zeros(src.shape[0], np.bool_)
    again[1:] = (src[1:] == src[:-1]) & (dst[1:] == dst[:-1])
    src, dst, red = src[~again], dst[~again], red[~again]
    first = np.flatnonzero(np.r_[True, src[1:] != src[:-1]]) if src.shape[0] else np.zeros(0, np.int64)
    rank = np.arange(src.shape[0]) - np.repeat(first, np.diff(np.r_[first, src.shape[0]]))
    keep = rank < k
    slot = np.searchsorted(rows, src)
    sampled = keep & (slot < rows.shape[0]) & (rows[np.minimum(slot, rows.shape[0] - 1)] == src)
    hits = int(np.count_nonzero(red[sampled] <= kth[slot[sampled]]))
    lo = np.minimum(src[keep], dst[keep])
    hi = np.maximum(src[keep], dst[keep])
    red = red[keep]
    return _cut(P, lo, hi, red) + [hits]


def pair_edges(mutual, metric, code, p, *cuts):
    """The graph's edges of one cut: each pair once, or (``mutual``) where both ends listed it; by ascending pair."""
    lo = np.concatenate([c[0] for c in cuts])
    hi = np.concatenate([c[1] for c in cuts])
    red = np.concatenate([c[2] for c in cuts])
    order = np.lexsort((hi, lo))
    lo, hi, red = lo[order], hi[order], red[order]
    start = np.r_[True, (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])] if lo.shape[0] else np.zeros(0, np.bool_)
    keep = start
    if mutual:  # listed by both ends: the pair twice
        count = np.diff(np.r_[np.flatnonzero(start), lo.shape[0]])
        keep = np.zeros(lo.shape[0], np.bool_)
        keep[np.flatnonzero(start)[count == 2]] = True
    return lo[keep], hi[keep], finished(red[keep], metric, code, p)


# ---------------------------------------------------------------------------
# here: the centres and the task graph
# ---------------------------------------------------------------------------

def centres_of(sample, P, seed):
    """``P`` centres (fewer where the sample has fewer distinct rows): k-means of the sample."""
    from sklearn.cluster import KMeans

    distinct = np.unique(sample, axis=0).shape[0]
    P = max(1, min(P, distinct))
    if P == 1:
        return sample.mean(axis=0, keepdims=True)
    return KMeans(n_clusters=P, n_init=1, random_state=seed % (2 ** 32)).fit(sample).cluster_centers_


def partitioned_nndescent_graph(X, k, metric, p, symmetrize, client, seed, partitions):
    """The approximate kNN graph of a Dask array of points in ``partitions`` overlapping parts (see the module)."""
    metric = metric.lower()
    code, p = metric_of(metric, p)
    search, blocks = dk.prepared_chunks(X, k, metric, client)
    n, k, tok, offsets, key = search.n, search.k, search.tok, search.offsets, search.key
    sample = search.sample(client, blocks, SAMPLE_PER_PART * partitions)
    centres = centres_of(sample, partitions, seed)
    P = centres.shape[0]
    near = [client.submit(nearest_two, b, centres, key=key("near", i))
            for i, b in enumerate(blocks)]
    sizes = np.sum(client.gather([client.submit(part_sizes, asg, P, key=key("sizes", i))
                                  for i, asg in enumerate(near)]), axis=0)
    parts = []
    for b in range(P):
        pieces = [client.submit(dk.piece, blk, int(offsets[i]), asg, b, key=key("piece", b, i))
                  for i, (blk, asg) in enumerate(zip(blocks, near))]
        parts.append(client.submit(part_lists, k, metric, p, seed, P, *pieces, key=key("part", b)))
    del near
    # the recall: a sample's true k-th distances by brute force, chunk by chunk
    rows = recall_rows(n, seed)
    Q = np.concatenate(client.gather([client.submit(sampled_rows, b, int(offsets[i]), rows, key=key("sampled", i))
                                      for i, b in enumerate(blocks)]))
    nearest = client.gather([client.submit(sampled_nearest, b, int(offsets[i]), Q, rows, k, code, p,
                                           key=key("brute", i)) for i, b in enumerate(blocks)])
    kth = np.sort(np.concatenate(nearest, axis=1), axis=1)[:, k - 1]
    del blocks
    lists = []
    for c in range(P):
        cuts = [client.submit(operator.getitem, part, c, key=key("cut", b, c)) for b, part in enumerate(parts)]
        lists.append(client.submit(merged_lists, k, P, rows, kth, *cuts, key=key("lists", c)))
    del parts
    hits = sum(client.gather([client.submit(operator.getitem, li, P, key=key("hits", c))
                              for c, li in enumerate(lists)]))
    edges = []
    for c in range(P):
        cuts = [client.submit(operator.getitem, li, c, key=key("pairs", b, c)) for b, li in enumerate(lists)]
        edges.append(client.submit(pair_edges, symmetrize == "mutual", metric, code, p, *cuts, key=key("edges", c)))
    del lists
    info = {"method": "nn-descent", "random_state": seed, "on": f"{P} parts", "parts": P,
            "parts_per_point": min(2, P), "part_points": [int(x) for x in sizes],
            "recall": float(hits / (k * rows.shape[0])), "recall_points": int(rows.shape[0])}
    return dk.held_graph(client, edges, tok, n, name=f"knn-{k}", source="knn-part", meta={"knn": info})

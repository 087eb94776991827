"""The exact kNN graph of points on the Dask workers; the edges stay there.

Tasks ``mst-knn-<stage>-<token>-<i>``, in stages:

1. ``block``: each chunk of rows validated (a NaN names its row) and
   prepared (cosine: normalised), on its worker; ``sample``: a few of its rows.
2. Here: boxes from the sample, split at medians of the widest coordinate
   (``P`` boxes; a k-d tree of boxes).
3. ``assign``/``piece``: each chunk cut by box; ``part``: each box's points
   gathered, its k-d tree built and its points answered within it.
4. Here: each box's bounding box and largest ``k``-th distance (small);
   box ``a`` asks box ``b`` when their boxes are closer than that distance.
5. ``cross``: ``a``'s points closer to ``b``'s box than their own ``k``-th
   neighbour searched in ``b``'s tree; ``final``: the lists merged;
   ``kth``: each point's ``k``-th neighbour; ``edges``: each box's edges
   (the union or mutual rule needs the ``k``-th neighbour of the boxes it
   asked, nothing more).
6. The graph: one source per box, its rows read from the ``edges`` result
   where it is held (published as a dataset under its key until the graph
   is dropped).
"""
from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass

import numpy as np

from mst_dist.clustering.knn import (check_points, empty_lists, finished, metric_of, prepare_points,
                                     search_tree, knn_edges)

__all__ = ["distributed_knn_graph", "held_rows"]

#: rows each chunk gives to the sample the boxes are split from
SAMPLE_ROWS = 2000

#: client of each run, by token, in this process: where :func:`held_rows` reads outside a worker
_CLIENTS: dict = {}


@dataclass
class Part:
    """One box's points in tree order with their tree and neighbour lists (rows in tree order)."""

    points: np.ndarray
    transposed: np.ndarray
    ids: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    depth: int
    dist: np.ndarray
    nbr: np.ndarray


# ---------------------------------------------------------------------------
# task functions (run on workers)
# ---------------------------------------------------------------------------

def prepared_block(block, offset, n, metric):
    """A chunk of points validated (errors name the global row) and prepared for ``metric``."""
    X = check_points(block, None, where="X", offset=offset, n=n)
    return prepare_points(X, metric, offset)


def sample_rows(block, rows, seed):
    """Up to ``rows`` rows of a chunk drawn without replacement."""
    if block.shape[0] <= rows:
        return block
    pick = np.random.default_rng(seed).choice(block.shape[0], rows, replace=False)
    return block[np.sort(pick)]


def assign(block, offset, dims, values, lefts, rights):
    """Each row's box: the split tree walked (``x < value``: left); ``(box, ids)`` grouped by box."""
    m = block.shape[0]
    node = np.zeros(m, np.int64)
    box = np.full(m, -1, np.int64)
    active = np.arange(m)
    while active.shape[0]:
        v = node[active]
        go_left = block[active, dims[v]] < values[v]
        nxt = np.where(go_left, lefts[v], rights[v])
        leaf = nxt < 0
        box[active[leaf]] = -nxt[leaf] - 1
        node[active] = np.maximum(nxt, 0)
        active = active[~leaf]
    order = np.argsort(box, kind="stable")
    return box[order], order


def piece(block, offset, assigned, b):
    """Rows of a chunk in box ``b``: ``(points, global ids)``."""
    box, order = assigned
    a, z = np.searchsorted(box, [b, b + 1])
    rows = order[a:z]
    return block[rows], (offset + rows).astype(np.int64)


def build_part(k, code, p, *pieces):
    """A box's points gathered, its tree built, its points' neighbours within it."""
    from mst_dist.clustering._neighbours_kernels import query_tree

    d = pieces[0][0].shape[1]
    points = np.concatenate([x for x, _ in pieces]) if pieces else np.zeros((0, d))
    ids = np.concatenate([i for _, i in pieces]) if pieces else np.zeros(0, np.int64)
    Xs, XT, sid, lo, hi, depth = search_tree(np.ascontiguousarray(points), ids)
    dist, nbr = empty_lists(Xs.shape[0], k)
    query_tree(XT, sid, lo, hi, depth, Xs, sid, np.arange(Xs.shape[0], dtype=np.int64), dist, nbr, code, p)
    return Part(Xs, XT, sid, lo, hi, depth, dist, nbr)


def summary(part):
    """``(count, box lo, box hi, largest k-th reduced distance)`` of a box: small."""
    if part.points.shape[0] == 0:
        return 0, None, None, np.inf
    return part.points.shape[0], part.lo[0].copy(), part.hi[0].copy(), float(part.dist[:, -1].max())


def cross(part_a, part_b, code, p):
    """``a``'s points whose ``k``-th neighbour is farther than ``b``'s box, searched in ``b``'s tree.

    Returns ``(rows of a, dist, nbr)``: ``b``'s points among them, the rest of
    each list placeholders ``(a's k-th distance, no id)`` (never chosen over
    ``a``'s own).
    """
    from mst_dist.clustering._neighbours_kernels import NO_ID, box_gaps, query_tree

    kth = part_a.dist[:, -1]
    gaps = box_gaps(part_a.points, part_b.lo[0], part_b.hi[0], code, p)
    rows = np.flatnonzero(gaps <= kth)
    k = part_a.dist.shape[1]
    dist = np.repeat(kth[rows][:, None], k, axis=1)
    nbr = np.full((rows.shape[0], k), NO_ID, np.int64)
    Q = np.ascontiguousarray(part_a.points[rows])
    query_tree(part_b.transposed, part_b.ids, part_b.lo, part_b.hi, part_b.depth, Q, part_a.ids[rows],
               np.arange(rows.shape[0], dtype=np.int64), dist, nbr, code, p)
    return rows, dist, nbr


def final_lists(part, *crosses):
    """A box's lists with the other boxes' answers merged in: ``(ids, dist, nbr)`` by ascending id."""
    from mst_dist.clustering._neighbours_kernels import merge_lists

    dist, nbr = part.dist.copy(), part.nbr.copy()
    for rows, d, nb in crosses:
        if rows.shape[0]:
            sub_d, sub_n = dist[rows], nbr[rows]
            merge_lists(sub_d, sub_n, d, nb)
            dist[rows], nbr[rows] = sub_d, sub_n
    order = np.argsort(part.ids, kind="stable")
    return part.ids[order], dist[order], nbr[order]


def kth_table(final):
    """``(ids ascending, k-th reduced distance, k-th id)`` of a box's points."""
    ids, dist, nbr = final
    return ids, dist[:, -1].copy(), nbr[:, -1].copy()


def box_edges(final, symmetrize, metric, code, p, *tables):
    """A box's edges of the kNN graph: ``(src, dst, distance)``, rows by ascending id."""
    from mst_dist.clustering._neighbours_kernels import NO_ID

    ids, dist, nbr = final
    all_ids = np.concatenate([t[0] for t in tables])
    all_d = np.concatenate([t[1] for t in tables])
    all_i = np.concatenate([t[2] for t in tables])
    order = np.argsort(all_ids, kind="stable")
    all_ids, all_d, all_i = all_ids[order], all_d[order], all_i[order]
    flat = nbr.ravel()
    real = flat != NO_ID
    at = np.zeros(flat.shape[0], np.int64)
    at[real] = np.searchsorted(all_ids, flat[real])
    kd = np.where(real, all_d[np.minimum(at, all_d.shape[0] - 1)], np.inf).reshape(nbr.shape)
    ki = np.where(real, all_i[np.minimum(at, all_i.shape[0] - 1)], NO_ID).reshape(nbr.shape)
    src, dst, w = knn_edges(ids, dist, nbr, kd, ki, symmetrize)
    return src, dst, finished(w, metric, code, p)


def edge_count(edges):
    return int(edges[0].shape[0])


def held_rows(start, stop, *, key, token):
    """Rows ``start:stop`` of the edges a task left on the cluster (a graph source's row function).

    Read from the memory of this worker, or of another worker of this process,
    where the task's result is there, else through the dataset of that name the
    run published (on a worker, the task seceded while it waits).
    """
    edges = None
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        worker = None
    if worker is not None:
        from distributed import Worker

        # this worker's memory, else a worker of this process's (an in-process cluster)
        for holder in [worker] + [w for w in list(Worker._instances) if w is not worker]:
            if key in holder.data:
                edges = holder.data[key]
                break
        if edges is None:
            from distributed import worker_client

            with worker_client() as c:
                edges = c.gather(c.get_dataset(key))
    else:
        from distributed import get_client

        client = _CLIENTS.get(token) or get_client()
        edges = client.get_dataset(key).result()
    s, d, w = edges[:3]  # an approximate search's task holds how it searched after them
    return s[start:stop], d[start:stop], w[start:stop]


def dask_points(X, client):
    """``X`` as a 2-D Dask array of numbers whose row blocks have known sizes, else a ``ValueError``."""
    X = _as_dask_array(X, client)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (points x coordinates), got shape {X.shape}")
    if X.dtype.kind not in "iufb":
        raise ValueError(f"X: coordinates must be numbers, got dtype {X.dtype}")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    return X


def _release(client, names, token):
    """The published edges of a graph no longer referenced: unpublished (their data released).

    Called by the graph's finalizer, so from whatever thread the garbage
    collector runs in -- the client's event loop, or a thread the scheduler
    of an in-process cluster is waiting on.  It must not wait there: the
    unpublishing is handed to the client's event loop and this returns at
    once (a client already closed has nothing left to release).
    """
    _CLIENTS.pop(token, None)
    if getattr(client, "status", None) != "running":
        return

    async def unpublish():
        try:
            await client._unpublish_dataset(list(names))  # the coroutine under Client.unpublish_dataset
        except Exception:  # pragma: no cover - the cluster went away meanwhile, and its data with it
            pass

    try:
        client.loop.add_callback(unpublish)
    except Exception:  # pragma: no cover - the loop is closed: so is the cluster
        pass


# ---------------------------------------------------------------------------
# here: the boxes and the task graph
# ---------------------------------------------------------------------------

def split_tree(sample, P):
    """Boxes from a sample: ``(dims, values, lefts, rights)`` of the split nodes (children ``< 0``: box ``-c - 1``).

    A node of ``P`` boxes splits its sample points on their widest
    coordinate at the quantile ``floor(P / 2) / P``, into nodes of
    ``floor(P / 2)`` and ``P - floor(P / 2)`` boxes.
    """
    dims, values, lefts, rights = [], [], [], []
    counter = [0]

    def node(pts, boxes):
        if boxes == 1 or pts.shape[0] < 2:
            b = counter[0]
            counter[0] += boxes  # a node of too few sample points keeps its boxes' numbers, empty
            return -b - 1
        spread = pts.max(axis=0) - pts.min(axis=0)
        c = int(np.argmax(spread))
        left_boxes = boxes // 2
        col = np.sort(pts[:, c])
        value = col[int(round(pts.shape[0] * left_boxes / boxes))]
        at = len(dims)
        dims.append(c)
        values.append(value)
        lefts.append(0)
        rights.append(0)
        go = pts[:, c] < value
        lefts[at] = node(pts[go], left_boxes)
        rights[at] = node(pts[~go], boxes - left_boxes)
        return at

    root = node(sample, P)
    if root < 0:  # one box: a split that sends every point left
        return (np.zeros(1, np.int64), np.array([np.inf]), np.array([root], np.int64),
                np.array([root], np.int64)), counter[0]
    return (np.asarray(dims, np.int64), np.asarray(values, np.float64), np.asarray(lefts, np.int64),
            np.asarray(rights, np.int64)), counter[0]


def _box_gap(lo_a, hi_a, lo_b, hi_b, code, p):
    gap = np.maximum(np.maximum(lo_b - hi_a, lo_a - hi_b), 0.0)
    if code == 2:
        return float(gap.max())
    if code == 1:
        return float(gap.sum())
    if code == 3:
        return float((gap ** p).sum())
    return float((gap * gap).sum())


def _as_dask_array(X, client):
    import dask.array as da

    if type(X).__module__.startswith("dask.array"):
        return X
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (points x coordinates), got shape {X.shape}")
    threads = sum(client.nthreads().values()) or 1
    return da.from_array(X, chunks=(max(1, -(-X.shape[0] // (2 * threads))), X.shape[1]))


def distributed_knn_graph(X, k, *, metric="euclidean", p=2, symmetrize="union", client=None, partitions=None):
    """The kNN graph of points on a cluster: see :func:`mst_dist.clustering.knn_graph`."""
    from mst_dist.deploy.current import choose, using

    with using(choose(client)) as c:
        return _run(X, k, metric, p, symmetrize, c, partitions)


def checked_k(k, n):
    """``k`` as an int if ``1 <= k < n``, else a ``ValueError``."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < n:
        raise ValueError(f"k must be an integer in [1, {n - 1}] (fewer than the {n} points), got {k!r}")
    return int(k)


@dataclass
class Search:
    """A search of ``n`` points: its ``k``, its token, and where each chunk's rows start (``offsets``)."""

    n: int
    k: int
    tok: str
    offsets: np.ndarray

    def key(self, stage, *idx):
        """The key of a task of this search: ``mst-knn-<stage>-<token>-<i>...``."""
        return f"mst-knn-{stage}-{self.tok}-" + "-".join(str(i) for i in idx)

    def sample(self, client, blocks, rows):
        """About ``rows`` rows drawn from all the chunks ``blocks``, here."""
        per_chunk = max(1, min(SAMPLE_ROWS, rows // max(1, len(blocks)) + 1))
        return np.concatenate(client.gather([client.submit(sample_rows, b, per_chunk, i, key=self.key("sample", i))
                                             for i, b in enumerate(blocks)]))


def prepared_chunks(X, k, metric, client):
    """``(search, blocks)``: the :class:`Search` of a Dask array of points (or an array, chunked for the
    cluster) and the futures of its chunks, validated and prepared on the workers."""
    X = dask_points(X, client).rechunk({1: -1})
    n = int(X.shape[0])
    search = Search(n, checked_k(k, n), uuid.uuid4().hex[:12],
                    np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64))
    raw = client.compute(list(X.to_delayed().ravel()))
    return search, [client.submit(prepared_block, r, int(search.offsets[i]), n, metric, key=search.key("block", i))
                    for i, r in enumerate(raw)]


def _run(X, k, metric, p, symmetrize, client, partitions):
    metric = metric.lower()
    code, p = metric_of(metric, p)
    search, blocks = prepared_chunks(X, k, metric, client)
    n, k, tok, offsets, key = search.n, search.k, search.tok, search.offsets, search.key
    threads = sum(client.nthreads().values()) or 1
    P = int(partitions or 2 * threads)
    splits, P = split_tree(search.sample(client, blocks, 64 * P), P)
    assigned = [client.submit(assign, b, int(offsets[i]), *splits, key=key("assign", i))
                for i, b in enumerate(blocks)]
    parts = []
    for b in range(P):
        pieces = [client.submit(piece, blk, int(offsets[i]), asg, b, key=key("piece", b, i))
                  for i, (blk, asg) in enumerate(zip(blocks, assigned))]
        parts.append(client.submit(build_part, k, code, p, *pieces, key=key("part", b)))
    del blocks, assigned
    sums = client.gather([client.submit(summary, part, key=key("summary", b)) for b, part in enumerate(parts)])
    finals, partners = [], []
    for a in range(P):
        if sums[a][0] == 0:
            finals.append(None)
            partners.append([])
            continue
        near = [b for b in range(P) if b != a and sums[b][0] > 0
                and _box_gap(sums[a][1], sums[a][2], sums[b][1], sums[b][2], code, p) <= sums[a][3]]
        crosses = [client.submit(cross, parts[a], parts[b], code, p, key=key("cross", a, b)) for b in near]
        finals.append(client.submit(final_lists, parts[a], *crosses, key=key("final", a)))
        partners.append(near)
    del parts
    tables = [None if f is None else client.submit(kth_table, f, key=key("kth", a)) for a, f in enumerate(finals)]
    edges = []
    for a, f in enumerate(finals):
        if f is not None:
            refs = [tables[a]] + [tables[b] for b in partners[a]]
            edges.append(client.submit(box_edges, f, symmetrize, metric, code, p, *refs, key=key("edges", a)))
    return held_graph(client, edges, tok, n, name=f"knn-{k}", source="knn-box", meta={"boxes": P})


def held_graph(client, edges, tok, n, *, name, source, meta):
    """A graph of the edges tasks ``edges`` left on the workers: one source per task, read where it is held.

    The results are published as datasets under their keys (so they stay
    while the graph lives) and unpublished when the graph is dropped.
    """
    from mst_dist.graph import FunctionSource, Graph

    counts = client.gather([client.submit(edge_count, e, key=f"mst-knn-count-{tok}-{i}")
                            for i, e in enumerate(edges)])
    _CLIENTS[tok] = client
    names = [e.key for e in edges]
    client.publish_dataset(**dict(zip(names, edges)))
    sources = [FunctionSource(held_rows, {"key": e.key, "token": tok}, m, name=f"{source}-{i}")
               for i, (e, m) in enumerate(zip(edges, counts))]
    graph = Graph(n_vertices=n, sources=sources, weight_dtype=np.dtype(np.float64), validated=True,
                  name=name, meta=meta)
    weakref.finalize(graph, _release, client, names, tok)
    return graph

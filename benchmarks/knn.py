"""kNN graphs of points: ``mst_dist.clustering.knn_graph`` beside scikit-learn's ``kneighbors_graph``.

Run from the repository root::

    python -m benchmarks.knn --points 1000000 --dims 2 10 --k 10 --sklearn-points 1000000 200000 \
        --out knn-bench.json

For each dimension: ``make_blobs(points, dims, random_state=0)`` (3 blobs),
then, in one process, one after the other: our graph (points in memory, the
k-d tree kernels on all cores; compiled before the clock starts), and
scikit-learn's ``kneighbors_graph(X, k, mode="distance", n_jobs=-1)``
turned into the same undirected graph (``from_kneighbors_graph``) on
``--sklearn-points`` of the points (its own count per dimension, as it can
take long at 10-D); the ratio is of the two times per point.
``--cluster`` also times the search on the embedded cluster from a Dask
array.  ``--check`` compares the edge sets where both ran on the same points.
``--approximate`` also times ``knn_graph(X, k, approximate=True)``
(NN-descent, compiled before the clock starts) and its recall by
``knn_recall`` (exact neighbours of 1,000 sampled points by brute force);
``--no-exact`` leaves the exact search out (it takes minutes at 10-D);
``--parts-workers N`` also times NN-descent of a Dask array on a
``LocalCluster`` of ``N`` worker processes (no worker holds all the points:
each is searched in the parts of its two nearest centres), with the recall
it reports and ``knn_recall``'s, e.g.::

    python -m benchmarks.knn --points 200000 --dims 10 --approximate --sklearn-points 0
    python -m benchmarks.knn --points 1000000 --dims 10 --approximate --no-exact --sklearn-points 0
    python -m benchmarks.knn --points 1000000 --dims 10 --k 22 --approximate --no-exact --sklearn-points 0 \
        --parts-workers 2

Prints one JSON object per measurement and writes them all to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def blobs(n, d):
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n, n_features=d, random_state=0)
    return X


def ours(X, k):
    from mst_dist.clustering import knn_graph

    knn_graph(X[:2000], k)  # compiled (or loaded from Numba's cache) before the clock starts
    t, c = time.perf_counter(), time.process_time()
    g = knn_graph(X, k)
    return g, time.perf_counter() - t, time.process_time() - c


def ours_approximate(X, k):
    from mst_dist.clustering import knn_graph
    from mst_dist.clustering.neighbours import knn_recall

    knn_graph(X[:2000], k, approximate=True)  # compiled (or loaded from Numba's cache) before the clock starts
    t, c = time.perf_counter(), time.process_time()
    g = knn_graph(X, k, approximate=True)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    t = time.perf_counter()
    recall = knn_recall(X, g, k, sample=1000)
    return g, wall, cpu, recall, time.perf_counter() - t


def ours_on_cluster(X, k):
    import dask.array as da

    from mst_dist.clustering import knn_graph

    D = da.from_array(X, chunks=(max(1, X.shape[0] // 8), X.shape[1]))
    knn_graph(da.from_array(X[:2000], chunks=(500, X.shape[1])), k, client="embedded")
    t = time.perf_counter()
    g = knn_graph(D, k, client="embedded")
    return g, time.perf_counter() - t


def ours_approximate_in_parts(X, k, workers):
    """NN-descent of a Dask array on a ``LocalCluster`` of ``workers`` processes: points in overlapping parts."""
    import dask.array as da
    from distributed import Client, LocalCluster

    from mst_dist.clustering import knn_graph
    from mst_dist.clustering.neighbours import knn_recall

    threads = max(1, (os.cpu_count() or 1) // workers)  # each worker's Numba threads: the cores shared out
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      env={"NUMBA_NUM_THREADS": str(threads)}) as cluster, Client(cluster) as client:
        small = X[:4000]
        knn_graph(da.from_array(small, chunks=(1000, X.shape[1])), k, approximate=True, client=client).n_edges
        D = da.from_array(X, chunks=(max(1, X.shape[0] // (4 * workers)), X.shape[1]))
        t = time.perf_counter()
        g = knn_graph(D, k, approximate=True, client=client)
        wall = time.perf_counter() - t
        info = g.meta["knn"]
        recall = knn_recall(X, g, k, sample=1000)
        return {"parts_workers": workers, "parts": info["parts"], "part_points": info["part_points"],
                "parts_s": wall, "parts_recall_reported": info["recall"], "parts_recall": recall,
                "parts_edges": g.n_edges}


def sklearn(X, k):
    from sklearn.neighbors import kneighbors_graph

    from mst_dist.clustering import from_kneighbors_graph

    t, c = time.perf_counter(), time.process_time()
    A = kneighbors_graph(X, k, mode="distance", n_jobs=-1)
    g = from_kneighbors_graph(A)
    return g, time.perf_counter() - t, time.process_time() - c


def edge_set(g):
    s, d, w = g.to_arrays()
    o = np.lexsort((d, s))
    return s[o], d[o], w[o]


def run(n, d, k, sk_n, cluster, check, approximate=False, exact=True, parts_workers=0):
    X = blobs(n, d)
    out = {"points": n, "dims": d, "k": k, "threads": os.cpu_count()}
    if approximate:
        ga, wall, cpu, recall, rtime = ours_approximate(X, k)
        out.update(approx_edges=ga.n_edges, approx_s=wall, approx_cpu_s=cpu, approx_recall=recall,
                   recall_sample=min(1000, n), recall_s=rtime, approx_rounds=ga.meta["knn"]["rounds"])
    if parts_workers:
        out.update(ours_approximate_in_parts(X, k, parts_workers))
        if approximate:
            out["parts_over_approx"] = out["parts_s"] / out["approx_s"]
    if not exact:
        return out
    g, wall, cpu = ours(X, k)
    out.update(edges=g.n_edges, ours_s=wall, ours_cpu_s=cpu)
    if approximate:
        out["exact_over_approx"] = wall / out["approx_s"]
    if cluster:
        gc, out["ours_cluster_s"] = ours_on_cluster(X, k)
        if check:
            a, b = edge_set(g), edge_set(gc)
            out["cluster_same_edges"] = all(np.array_equal(x, y) for x, y in zip(a, b))
    if sk_n:
        Xs = X[:sk_n]
        gs, swall, scpu = sklearn(Xs, k)
        out.update(sklearn_points=sk_n, sklearn_s=swall, sklearn_cpu_s=scpu)
        if sk_n != n:
            g, out["ours_same_points_s"], _ = ours(Xs, k)
            mine = out["ours_same_points_s"]
        else:
            mine = wall
        out["sklearn_over_ours"] = swall / mine
        if check:
            a, b = edge_set(g), edge_set(gs)
            out["same_edges"] = bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
                                     and np.allclose(a[2], b[2], rtol=1e-12))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 10])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--sklearn-points", type=int, nargs="+", default=None,
                    help="points scikit-learn searches, one per --dims (0: skip it); default --points")
    ap.add_argument("--cluster", action="store_true", help="also on the embedded cluster from a Dask array")
    ap.add_argument("--check", action="store_true", help="compare the edge sets")
    ap.add_argument("--approximate", action="store_true",
                    help="also NN-descent (knn_graph(..., approximate=True)): time, CPU and recall")
    ap.add_argument("--no-exact", action="store_true", help="leave the exact search out (with --approximate)")
    ap.add_argument("--parts-workers", type=int, default=0,
                    help="also NN-descent of a Dask array on a LocalCluster of this many worker processes "
                         "(the points searched in overlapping parts): time and recall")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    sk = a.sklearn_points or [a.points] * len(a.dims)
    if len(sk) != len(a.dims):
        ap.error("--sklearn-points takes one count per --dims")
    rows = []
    for d, s in zip(a.dims, sk):
        row = run(a.points, d, a.k, min(s, a.points), a.cluster, a.check, a.approximate, not a.no_exact,
                  a.parts_workers)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()

"""Clustering from the forest: linkage, flat clusters, levels and HDBSCAN, timed beside SciPy, scikit-learn and hdbscan.

Run from the repository root (each measurement in a fresh process, so that
its peak memory is its own)::

    python benchmarks/clustering.py --vertices 10000000 --points 1000000 --scipy-n 20000 \
        --sklearn-n 20000 --package-n 200000 --out clustering-bench.json

Sections:

``forest``
    The forest of an Erdős–Rényi graph of ``--vertices`` vertices and
    ``4 x`` as many edges, float weights: the engine's time (embedded
    default), then ``linkage()``, ``clusters(threshold=...)`` and
    ``levels()`` on it, each as a share of the forest's time (wall and
    process CPU seconds both: CPU time is the steadier on a shared machine).
``knn``
    The kNN graph (``k = 10``, scikit-learn's exact search) of ``--points``
    points (8 Gaussian blobs in 3-D): building it, then the forest and
    its linkage, with the process's peak memory; SciPy's
    ``linkage(pdist(X), "single")`` on ``--scipy-n`` of the points beside it.
``hdbscan``
    ``mst_dist.hdbscan`` on that kNN graph (``min_cluster_size=25``,
    ``min_samples=10``) beside the ``hdbscan`` package (``boruvka_kdtree``)
    on the points, and scikit-learn's ``HDBSCAN`` on ``--sklearn-n`` points,
    where the agreement (adjusted Rand index) is measured too.

Prints one JSON object per measurement and writes them all to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def peak_rss():
    """This process's peak resident memory, bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def points(n, seed=0):
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n, n_features=3, centers=8, cluster_std=1.0, center_box=(-20, 20), random_state=seed)
    return X


def knn_graph(X, k=10):
    """The kNN graph of ``X``, kept in the temporary folder for the next measurement of the same points."""
    import tempfile

    import mst_dist
    from mst_dist.clustering import from_points

    path = os.path.join(tempfile.gettempdir(), f"mst-dist-knn-{len(X)}-{k}.npz")
    if os.path.exists(path):
        f = np.load(path)
        return mst_dist.Graph.from_arrays(f["src"], f["dst"], f["weight"], n_vertices=len(X))
    g = from_points(X, k, n_jobs=-1)
    src, dst, w = g.to_arrays()
    np.savez(path, src=src, dst=dst, weight=w)
    return g


def m_forest(n):
    import mst_dist

    g = mst_dist.generate("erdos_renyi", n=n, m=4 * n, seed=1, weights="float")
    mst_dist.minimum_spanning_forest(mst_dist.generate("erdos_renyi", n=1000, m=4000, weights="float"))
    t, c = time.perf_counter(), time.process_time()
    res = mst_dist.minimum_spanning_forest(g)
    msf, msf_cpu = time.perf_counter() - t, time.process_time() - c
    out = {"vertices": n, "edges": g.n_edges, "msf_s": msf, "msf_cpu_s": msf_cpu}
    res.linkage()  # compiles the kernels once: the times below are warm
    res.levels()
    for name, call in (("linkage", lambda: res.linkage()),
                       ("clusters", lambda: res.clusters(threshold=float(np.median(res.weight)))),
                       ("levels", lambda: res.levels())):
        t, c = time.perf_counter(), time.process_time()
        call()
        out[f"{name}_s"], out[f"{name}_cpu_s"] = time.perf_counter() - t, time.process_time() - c
        out[f"{name}_share"] = out[f"{name}_s"] / msf
    return out


def m_knn(n):
    import mst_dist

    X = points(n)
    t = time.perf_counter()
    g = knn_graph(X)
    knn = time.perf_counter() - t
    mst_dist.minimum_spanning_forest(mst_dist.generate("erdos_renyi", n=1000, m=4000, weights="float")).linkage()
    t = time.perf_counter()
    res = mst_dist.minimum_spanning_forest(g)
    msf = time.perf_counter() - t
    t = time.perf_counter()
    res.linkage()
    link = time.perf_counter() - t
    return {"points": n, "edges": g.n_edges, "knn_s": knn, "msf_s": msf, "linkage_s": link,
            "components": res.n_components}


def m_scipy(n):
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import pdist

    X = points(n)
    t = time.perf_counter()
    linkage(pdist(X), "single")
    return {"points": n, "scipy_linkage_s": time.perf_counter() - t}


def m_hdbscan_ours(n):
    import mst_dist

    X = points(n)
    t = time.perf_counter()
    g = knn_graph(X)
    knn = time.perf_counter() - t
    mst_dist.hdbscan(mst_dist.clustering.from_points(points(2000), 10), min_cluster_size=25, min_samples=10)
    t = time.perf_counter()
    r = mst_dist.hdbscan(g, min_cluster_size=25, min_samples=10)
    return {"points": n, "knn_or_load_s": knn, "hdbscan_s": time.perf_counter() - t, "clusters": r.n_clusters_,
            "noise": int((r.labels_ < 0).sum())}


def m_hdbscan_pkg(n):
    import hdbscan

    X = points(n)
    t = time.perf_counter()
    lab = hdbscan.HDBSCAN(min_cluster_size=25, min_samples=9, algorithm="boruvka_kdtree",
                          core_dist_n_jobs=2).fit(X).labels_
    return {"points": n, "hdbscan_pkg_s": time.perf_counter() - t, "clusters": int(lab.max()) + 1,
            "noise": int((lab < 0).sum())}


def m_hdbscan_sklearn(n):
    from sklearn.cluster import HDBSCAN
    from sklearn.metrics import adjusted_rand_score

    import mst_dist

    X = points(n)
    t = time.perf_counter()
    lab = HDBSCAN(min_cluster_size=25, min_samples=10, n_jobs=2).fit(X).labels_
    sk = time.perf_counter() - t
    ours = mst_dist.hdbscan(knn_graph(X), min_cluster_size=25, min_samples=10).labels_
    return {"points": n, "sklearn_s": sk, "clusters": int(lab.max()) + 1, "noise": int((lab < 0).sum()),
            "ours_clusters": int(ours.max()) + 1, "ari_vs_ours": adjusted_rand_score(lab, ours)}


METHODS = {"forest": m_forest, "knn": m_knn, "scipy": m_scipy, "hdbscan-ours": m_hdbscan_ours,
           "hdbscan-pkg": m_hdbscan_pkg, "hdbscan-sklearn": m_hdbscan_sklearn}


def one(name, n):
    out = METHODS[name](n)
    out.update(method=name, peak_rss_bytes=peak_rss())
    print(json.dumps(out), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vertices", type=int, default=10_000_000)
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--scipy-n", type=int, default=20_000)
    p.add_argument("--sklearn-n", type=int, default=50_000)
    p.add_argument("--package-n", type=int, default=None, help="points for the hdbscan package (default: --points)")
    p.add_argument("--only", nargs="*", choices=list(METHODS), help="these measurements only")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per measurement")
    p.add_argument("--out", default="clustering-bench.json")
    p.add_argument("--one", nargs=2, metavar=("METHOD", "N"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return one(args.one[0], int(args.one[1]))
    sizes = {"forest": args.vertices, "knn": args.points, "scipy": args.scipy_n,
             "hdbscan-ours": args.points, "hdbscan-pkg": args.package_n or args.points, "hdbscan-sklearn": args.sklearn_n}
    results = []
    for name in args.only or METHODS:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", name, str(sizes[name])]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            results.append({"method": name, "n": sizes[name], "error": f"over {args.timeout:.0f} s"})
            print(json.dumps(results[-1]), flush=True)
            continue
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        results.append(json.loads(lines[-1]) if proc.returncode == 0 and lines else
                       {"method": name, "n": sizes[name], "error": proc.stderr.strip().splitlines()[-1:]})
        print(json.dumps(results[-1]), flush=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

"""HDBSCAN from points, end to end: ``mst_dist.HDBSCAN`` beside fast_hdbscan, the hdbscan package and scikit-learn.

Run from the repository root (each method in a fresh process, so that its
peak memory is its own)::

    python -m benchmarks.hdbscan_points --points 200000,1000000 --dims 2,10 --sklearn-n 50000 \
        --out hdbscan-points.json
    python -m benchmarks.hdbscan_points --points 1000000 --dims 2 --dask --workers 2

Points: ``sklearn.datasets.make_blobs`` (``--centers`` centres in a box of
side 200, standard deviation ``--std``, ``--seed``), generated in each
process before its clock starts.  Every method clusters with
``min_cluster_size=50`` and a core point of 10 neighbours besides itself:
``min_samples=10`` for fast_hdbscan and the ``hdbscan`` package, whose
``min_samples`` leaves the point itself out, and ``min_samples=11`` for
``mst_dist.HDBSCAN`` and scikit-learn's ``HDBSCAN``, which count it.

Methods (``--methods``): ``mst_dist`` (``mst_dist.HDBSCAN`` default: the kNN
graph, ``k = 2 * min_samples``, joined where it falls apart), ``mst_dist_approx``
(``approximate_knn=True``: the kNN graph by NN-descent), ``mst_dist_exact``
(``exact=True``), ``fast_hdbscan``, ``hdbscan`` (the package, its default
algorithm), ``sklearn`` (only for ``n <= --sklearn-n``).  ``--dask`` adds
``mst_dist_dask``: a ``LocalCluster`` of ``--workers`` one-thread worker
processes, the points a Dask array of ``--chunks`` blocks, the kNN graph
searched and the forest computed on the workers (there ``fit_cpu_s`` and
``peak_rss_bytes`` are the client process's; ``workers_cpu_s`` sums the
workers' CPU over the fit, ``workers_peak_rss_bytes`` is the largest
worker's peak).

Each process first fits ``--warmup`` points (2,000) of the same kind
(Numba compiles then), then times the fit: ``fit_s`` (wall), ``fit_cpu_s`` (this process's
CPU), ``peak_rss_bytes`` (the process's peak, ``ru_maxrss``), and for
``mst_dist`` the phases ``knn_s`` (the kNN graph), ``joins_s`` (joining its
parts, or the exact tree's: core distances, then ``join_rounds_s`` of
Borůvka's rounds) and ``hdbscan_s`` (the forest, the condensed tree and the
flat clusters: ``fit_s`` minus the two).  The parent
adds ``ari_vs_fast_hdbscan`` (adjusted Rand index of the labels, noise a
label of its own) and ``time_vs_fast_hdbscan`` (``fit_s`` over
fast_hdbscan's), and prints one JSON line per method.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

MIN_CLUSTER_SIZE = 50
#: Neighbours of a core point besides itself (the hdbscan package's ``min_samples``).
NEIGHBOURS = 10
METHODS = ("fast_hdbscan", "mst_dist", "mst_dist_approx", "mst_dist_exact", "hdbscan", "sklearn")
REFERENCE = "fast_hdbscan"


def peak_rss():
    """This process's peak resident memory, bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def blobs(n, d, centers=10, std=1.0, seed=0):
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n, n_features=d, centers=centers, cluster_std=std, center_box=(-100, 100), random_state=seed)
    return X


class _Phases:
    """Wall seconds of the estimator's two point phases, by wrapping the functions it calls."""

    def __init__(self):
        import mst_dist.clustering as clustering

        joins = sys.modules["mst_dist.clustering.joins"] if "mst_dist.clustering.joins" in sys.modules else None
        if joins is None:
            import importlib

            joins = importlib.import_module("mst_dist.clustering.joins")
        self.seconds = {"knn_s": 0.0, "joins_s": 0.0, "join_rounds_s": 0.0}
        clustering.from_points = self._timed(clustering.from_points, "knn_s")
        joins.with_joins = self._timed(joins.with_joins, "joins_s")
        joins.join_components = self._timed(joins.join_components, "join_rounds_s")
        joins.exact_tree = self._timed(joins.exact_tree, "join_rounds_s")

    def _timed(self, fn, key):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[key] += time.perf_counter() - t

        return wrapper


def _fitter(method, client=None, chunks=None):
    """A function of points returning labels, for ``method``."""
    ms = NEIGHBOURS + 1  # counting the point itself
    if method in ("mst_dist", "mst_dist_approx", "mst_dist_exact", "mst_dist_dask"):
        import mst_dist

        def fit(X):
            if method == "mst_dist_dask":
                import dask.array as da

                X = da.from_array(X, chunks=(max(1, -(-len(X) // chunks)), X.shape[1]))
            model = mst_dist.HDBSCAN(min_cluster_size=MIN_CLUSTER_SIZE, min_samples=ms,
                                     exact=method == "mst_dist_exact", approximate_knn=method == "mst_dist_approx",
                                     client=client)
            return model.fit(X).labels_
        return fit
    if method == "fast_hdbscan":
        import fast_hdbscan

        return lambda X: fast_hdbscan.HDBSCAN(min_cluster_size=MIN_CLUSTER_SIZE, min_samples=NEIGHBOURS).fit(X).labels_
    if method == "hdbscan":
        import hdbscan

        return lambda X: hdbscan.HDBSCAN(min_cluster_size=MIN_CLUSTER_SIZE, min_samples=NEIGHBOURS,
                                         core_dist_n_jobs=-1).fit(X).labels_
    if method == "sklearn":
        from sklearn.cluster import HDBSCAN

        return lambda X: HDBSCAN(min_cluster_size=MIN_CLUSTER_SIZE, min_samples=ms).fit(X).labels_
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS + ('mst_dist_dask',))}")


def one(method, n, d, args, labels_path):
    """Measure one method in this process; its labels go to ``labels_path``."""
    client = cluster = None
    if method == "mst_dist_dask":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    phases = _Phases() if method.startswith("mst_dist") else None
    fit = _fitter(method, client=client, chunks=args.chunks)
    t = time.perf_counter()
    if args.warmup:
        fit(blobs(args.warmup, d, args.centers, args.std, args.seed + 1))  # Numba compiles here
    warm = time.perf_counter() - t
    X = blobs(n, d, args.centers, args.std, args.seed)
    if phases is not None:
        phases.seconds = dict.fromkeys(phases.seconds, 0.0)
    workers_cpu = client.run(time.process_time) if client is not None else {}
    t, c = time.perf_counter(), time.process_time()
    labels = np.asarray(fit(X))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    np.save(labels_path, labels.astype(np.int64))
    out = {"method": method, "n": n, "dims": d, "fit_s": round(wall, 3), "fit_cpu_s": round(cpu, 3),
           "warmup_s": round(warm, 3), "peak_rss_bytes": peak_rss(),
           "n_clusters": int(labels.max()) + 1, "noise_fraction": round(float(np.mean(labels < 0)), 5)}
    if phases is not None:
        out.update({k: round(v, 3) for k, v in phases.seconds.items()})
        out["hdbscan_s"] = round(wall - phases.seconds["knn_s"] - phases.seconds["joins_s"], 3)
    if method == "mst_dist_dask":
        out["workers"] = args.workers
        out["chunks"] = args.chunks
        after = client.run(time.process_time)
        out["workers_cpu_s"] = round(sum(after[w] - workers_cpu.get(w, 0.0) for w in after), 3)
        out["workers_peak_rss_bytes"] = max(client.run(peak_rss).values())
        client.close()
        cluster.close()
    return out


def _ints(text):
    return [int(float(v)) for v in text.split(",") if v]


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=_ints, default=[200000], help="sizes, comma-separated")
    p.add_argument("--dims", type=_ints, default=[2], help="dimensions, comma-separated")
    p.add_argument("--methods", default="fast_hdbscan,mst_dist,mst_dist_exact,hdbscan",
                   help=f"comma-separated, of {', '.join(METHODS)} (sklearn also needs --sklearn-n)")
    p.add_argument("--sklearn-n", type=int, default=0, help="largest n for scikit-learn's HDBSCAN")
    p.add_argument("--hdbscan-n", type=int, default=None, help="largest n for the hdbscan package (default: all)")
    p.add_argument("--exact-n", type=int, default=None, help="largest n for exact=True (default: all)")
    p.add_argument("--dask", action="store_true", help="add mst_dist_dask (a LocalCluster of worker processes)")
    p.add_argument("--dask-only", action="store_true", help="mst_dist_dask and the reference only")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--chunks", type=int, default=4, help="blocks of the Dask array")
    p.add_argument("--centers", type=int, default=10)
    p.add_argument("--std", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=2000, help="points of the untimed first fit (0: none)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per method")
    p.add_argument("--out", help="also write the JSON lines here")
    p.add_argument("--one", nargs=4, metavar=("METHOD", "N", "D", "LABELS"), help=argparse.SUPPRESS)
    return p


def _methods(args, n):
    names = [m for m in args.methods.split(",") if m]
    if args.dask_only:
        names = [REFERENCE]
    if args.dask or args.dask_only:
        names.append("mst_dist_dask")
    keep = []
    for m in names:
        if m == "sklearn" and n > args.sklearn_n:
            continue
        if m == "hdbscan" and args.hdbscan_n is not None and n > args.hdbscan_n:
            continue
        if m == "mst_dist_exact" and args.exact_n is not None and n > args.exact_n:
            continue
        keep.append(m)
    if REFERENCE in keep:  # first, so the others are compared as they finish
        keep.insert(0, keep.pop(keep.index(REFERENCE)))
    return keep


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.one:
        method, n, d, path = args.one
        print(json.dumps(one(method, int(n), int(d), args, path)), flush=True)
        return 0
    from sklearn.metrics import adjusted_rand_score

    passed = [a for a in (argv if argv is not None else sys.argv[1:])]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hdbscan-points-") as tmp:
        for d in args.dims:
            for n in args.points:
                ref = None
                ref_s = None
                for method in _methods(args, n):
                    path = os.path.join(tmp, f"{method}-{n}-{d}.npy")
                    cmd = [sys.executable, "-m", "benchmarks.hdbscan_points", *passed, "--one", method, str(n),
                           str(d), path]
                    try:
                        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                    except subprocess.TimeoutExpired:
                        row = {"method": method, "n": n, "dims": d, "error": f"timeout after {args.timeout:g} s"}
                    else:
                        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                        if proc.returncode or not lines:
                            row = {"method": method, "n": n, "dims": d,
                                   "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
                        else:
                            row = json.loads(lines[-1])
                    if "error" not in row:
                        labels = np.load(path)
                        if method == REFERENCE:
                            ref, ref_s = labels, row["fit_s"]
                        if ref is not None:
                            row["ari_vs_fast_hdbscan"] = round(float(adjusted_rand_score(ref, labels)), 5)
                            row["time_vs_fast_hdbscan"] = round(row["fit_s"] / ref_s, 3) if ref_s else None
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

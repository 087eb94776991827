"""Bytes per vertex of a streaming run on one box, and the plan's estimate beside the peak measured.

A streaming run holds, on the worker that solves its slices, per-vertex
state (the vertex map, the solve's slots, parents and round maps, the
forest's ids) beside the slice of edges it solves.  On a graph with many
vertices and few edges the slice is small, so the peak is mostly the
per-vertex state.  Each size runs in a fresh process on the embedded
default (``stream="always"``), after a tiny warm-up run that starts the
cluster and loads the kernels; the process tree's RSS is sampled every
20 ms.  From the repository's root::

    python -m benchmarks.vertex_bytes --scales 23,24,25,26 --out vertex-bytes.json
    # beside an earlier version (a checkout: git worktree add /tmp/mst-before <commit>), taking turns
    python -m benchmarks.vertex_bytes --scales 24,25 --before /tmp/mst-before --out vertex-bytes.json

For each size ``n = 2**scale`` (Erdős–Rényi, ``m = edge_factor * n``):

- *own*: peak RSS less the RSS before the run (Python, the cluster, the kernels);
- *bytes per vertex*: (own - the slice) / n, the slice being the edges the
  largest pass kept times the plan's bytes an edge of a slice
  (``STREAM_SLICE_EDGE_BYTES`` of the version measured);
- *model*: :func:`mst_dist.engine.plan.stream_memory` for that graph on that
  cluster, and its error against *own* (``model / own - 1``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import gc, json, sys, time
import numpy as np
import mst_dist
from benchmarks.memory import TreeSampler

n, m = int(sys.argv[1]), int(sys.argv[2])
small = mst_dist.generate("erdos_renyi", n=1 << 12, m=1 << 12, seed=1)
mst_dist.minimum_spanning_forest(small, stream="always")  # the cluster started, the kernels loaded
g = mst_dist.generate("erdos_renyi", n=n, m=m, seed=1)
gc.collect()
time.sleep(0.5)
with TreeSampler(interval=0.02) as s:
    t0 = time.perf_counter()
    res = mst_dist.minimum_spanning_forest(g, stream="always")
    seconds = time.perf_counter() - t0
from mst_dist.deploy.local import shared_client
from mst_dist.engine import plan
from mst_dist.engine.plan import memory_budget
workers = shared_client().scheduler_info()["workers"]  # the embedded default the runs used
threads = max(w.get("nthreads", 1) for w in workers.values())
total = memory_budget(workers).total
kept = max([p.edges_kept for p in res.stats.passes if p.name.startswith("pass")] or [0])
model = plan.stream_memory(n, m, threads, total)
print("RESULT " + json.dumps({
    "n": n, "m": m, "seconds": seconds, "start": s.start_bytes, "peak": s.peak, "kept": kept,
    "slice_edge_bytes": plan.STREAM_SLICE_EDGE_BYTES, "model": model, "threads": threads, "total": total,
    "forest": int(res.forest_edges), "components": int(res.n_components), "module": mst_dist.__file__}))
"""


def _child(tree, n, m):
    env = dict(os.environ, PYTHONPATH=tree)
    p = subprocess.run([sys.executable, "-c", _CHILD, str(n), str(m)], env=env, cwd=tree, capture_output=True,
                       text=True)
    if p.returncode or "RESULT " not in p.stdout:
        raise RuntimeError(f"{tree}: n={n} failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    r = json.loads(p.stdout.split("RESULT ", 1)[1])
    assert r["module"].startswith(tree), f"imported {r['module']}, not from {tree}"
    own = r["peak"] - r["start"]
    r["own"] = own
    r["bytes_per_vertex"] = (own - r["kept"] * r["slice_edge_bytes"]) / n
    r["model_error"] = r["model"] / own - 1 if own > 0 else None
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.vertex_bytes", description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="23,24,25,26", help="log2 of the vertex counts (comma-separated)")
    ap.add_argument("--edge-factor", type=float, default=0.5, help="edges per vertex (few: the slice stays small)")
    ap.add_argument("--before", default=None, help="an earlier checkout to measure beside this one, in turns")
    ap.add_argument("--out", default=None, help="JSON file for the raw figures")
    args = ap.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"now": here}
    if args.before:
        trees = {"before": os.path.abspath(args.before), "now": here}
    rows = []
    print(f"{'version':<7} {'n':>11} {'m':>11} {'s':>7} {'own GiB':>8} {'kept':>10} {'B/vertex':>9} "
          f"{'model GiB':>9} {'model/own-1':>11}", flush=True)
    for scale in (int(x) for x in args.scales.split(",")):
        n = 1 << scale
        m = int(args.edge_factor * n)
        for name, tree in trees.items():
            r = _child(tree, n, m)
            r["version"] = name
            rows.append(r)
            print(f"{name:<7} {n:>11} {m:>11} {r['seconds']:>7.1f} {r['own'] / 2**30:>8.2f} {r['kept']:>10} "
                  f"{r['bytes_per_vertex']:>9.1f} {r['model'] / 2**30:>9.2f} {r['model_error']:>+11.1%}", flush=True)
        if args.before:
            same = {(r["forest"], r["components"]) for r in rows[-2:]}
            assert len(same) == 1, f"n={n}: the forests differ: {same}"
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()

"""Partitioned rounds as the cluster grows: the tasks the scheduler runs and the wall time of one solve.

The same graph (Erdős–Rényi, ``n`` vertices, ``m`` edges, ``--chunks`` edge
chunks) is solved with its vertices spread over the workers
(``vertex_partition="always"``, ``mst.vertex-base: 0``: no round is left to
one worker for having few components) on ``P`` in-process workers of one
thread each, for each ``P`` of ``--workers``.  With the default
``local_finish`` the edges (2^19) fit one worker, so after the first look at
the chunks the base case solves them there and the labels are spread back
over the ranges; ``--local-finish 0`` makes every round a partitioned one.  Printed per ``P``: the tasks that reached memory
on the scheduler during the solve (every key, the exchanges' own included),
the wall time, and the ratios to the smallest ``P``.  Every forest is
compared with the first one's (edge ids).  The components are cut into the
default ranges (one per worker while each keeps 2^16 components: two here,
whatever ``P``), or with ``--range-per-worker`` into one range per worker,
the cut of a graph large enough for every worker to own a range.  From the
repository's root::

    python -m benchmarks.cluster_growth --workers 4,16,64 --out growth.json

With ``--dask-baseline`` each ``P`` also times Dask alone on the same
cluster shape: 2,000 trivial tasks, one per worker in turn, in 20 waves
of 100 (``--baseline-waves``; ``dask_s``): how Dask's own cost per task grows with the workers.

With ``--tree DIR`` the solves run on the mst-dist of another checkout
(``git worktree add DIR <commit>``): run it once for each version, in turns,
to set the two side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

_CHILD = r"""
import json, sys, time
import dask, numpy as np
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin
import mst_dist

class Count(SchedulerPlugin):
    name = "growth-count"
    def __init__(self):
        self.n = 0
    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "memory":
            self.n += 1

def _count(dask_scheduler):
    return dask_scheduler.plugins["growth-count"].n

def _trivial(x, i):
    return i

P, n, m, chunks, seed, baseline = (int(a) for a in sys.argv[1:7])
local_finish = sys.argv[7] if sys.argv[7] == "auto" else int(sys.argv[7])
waves, per_worker = int(sys.argv[8]), bool(int(sys.argv[9]))
settings = {"mst.vertex-base": 0, **({"mst.vertex-ranges": P} if per_worker else {})}
g = mst_dist.generate("erdos_renyi", seed=seed, n=n, m=m)
with LocalCluster(n_workers=P, threads_per_worker=1, processes=False, memory_limit=0,
                  dashboard_address=None) as cluster, Client(cluster) as client:
    client.register_plugin(Count())
    with dask.config.set(settings):
        mst_dist.minimum_spanning_forest(mst_dist.generate("erdos_renyi", seed=seed, n=64, m=256), client,
                                         vertex_partition="always", partitions=4)  # kernels compiled, plugins in
        before = client.run_on_scheduler(_count)
        t = time.perf_counter()
        res = mst_dist.minimum_spanning_forest(g, client, vertex_partition="always", partitions=chunks,
                                               local_finish=local_finish)
        wall = time.perf_counter() - t
    tasks = client.run_on_scheduler(_count) - before
    dask_s = None
    if baseline:
        workers = sorted(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))
        t = time.perf_counter()
        for wave in range(waves):
            client.gather([client.submit(_trivial, wave, i, workers=[workers[i % P]], pure=False)
                           for i in range(100)])
        dask_s = time.perf_counter() - t
ids = np.asarray(res.edge_ids)
print(json.dumps({"workers": P, "ranges": res.stats.vertex_partition["ranges"], "tasks": tasks, "wall_s": wall, "dask_s": dask_s, "rounds": len(res.stats.rounds),
                  "partitioned_rounds": sum(r.mode == "partitioned" for r in res.stats.rounds),
                  "forest_edges": int(ids.size), "total_weight": float(res.total_weight),
                  "ids_hash": int(np.bitwise_xor.reduce(ids * 2654435761 % 2**61)) if ids.size else 0}))
"""


def run(P, args, tree=None):
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.path.abspath(tree) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(P), str(args.n), str(args.m), str(args.chunks),
                          str(args.seed), str(int(args.dask_baseline)), str(args.local_finish), str(args.baseline_waves),
                          str(int(args.range_per_worker))],
                         env=env, cwd=tree or None, capture_output=True, text=True,
                         timeout=args.timeout)
    if out.returncode:
        raise RuntimeError(f"P={P} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.cluster_growth", description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=lambda v: [int(x) for x in v.split(",")], default=[4, 16, 64])
    p.add_argument("--n", type=int, default=2**17)
    p.add_argument("--m", type=int, default=2**19)
    p.add_argument("--chunks", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--local-finish", default="auto",
                   help="the run's local_finish: 0 makes every round a partitioned one (by default the edges "
                        "left after the first look fit one worker and the base case solves them there)")
    p.add_argument("--range-per-worker", action="store_true",
                   help="cut the components into one range per worker (mst.vertex-ranges: P) instead of the "
                        "default, which keeps 2^16 components a range")
    p.add_argument("--dask-baseline", action="store_true", help="also time 2,000 trivial tasks per cluster size")
    p.add_argument("--baseline-waves", type=int, default=20, help="waves of 100 trivial tasks (--dask-baseline)")
    p.add_argument("--tree", default=None, help="run another checkout's mst-dist (a directory)")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    rows = []
    for P in args.workers:
        rows.append(run(P, args, args.tree))
        r = rows[-1]
        print(f"P={P:4d}  tasks {r['tasks']:8d} ({r['tasks'] / rows[0]['tasks']:5.2f}x)  "
              f"wall {r['wall_s']:8.2f} s ({r['wall_s'] / rows[0]['wall_s']:5.2f}x)  ranges {r.get('ranges', '?')}  rounds {r['rounds']} ({r.get('partitioned_rounds', '?')} partitioned)"
              + (f"  dask alone {r['dask_s']:6.2f} s ({r['dask_s'] / rows[0]['dask_s']:5.2f}x)" if r["dask_s"] else ""),
              flush=True)
    if len({(r["forest_edges"], r["ids_hash"]) for r in rows}) != 1:
        raise SystemExit("the forests differ between cluster sizes")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"n": args.n, "m": args.m, "chunks": args.chunks, "local_finish": args.local_finish, "tree": args.tree,
                       "range_per_worker": args.range_per_worker,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

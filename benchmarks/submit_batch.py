"""What sending tasks one by one costs against one graph (:class:`mst_dist.engine.batch.Batch`).

From the repository's root::

    python -m benchmarks.submit_batch --tasks 1000 --repeat 3

Two in-process workers (1 thread each); ``tasks`` trivial tasks pinned to the workers in turn (as a
partitioned round pins its range and chunk tasks, ``allow_other_workers=True``), then as many
again, each reading one of the first on its own worker.  Both ways run on the same cluster, taking
turns; the time per task is the best of ``repeat`` from submitting to every result gathered.
"""
from __future__ import annotations

import argparse
import json
import time


def _one(*_):
    return 1


def _submit_each(c, tag, n, workers):
    first = [c.submit(_one, i, key=f"bench-each-{tag}-a{i}", workers=[workers[i % 2]], allow_other_workers=True)
             for i in range(n)]
    return [c.submit(_one, first[i], key=f"bench-each-{tag}-b{i}", workers=[workers[i % 2]],
                     allow_other_workers=True) for i in range(n)]


def _batched(c, tag, n, workers):
    from mst_dist.engine.batch import Batch

    with Batch(c) as b:
        first = [b.submit(_one, i, key=f"bench-batch-{tag}-a{i}", workers=[workers[i % 2]], allow_other_workers=True)
                 for i in range(n)]
        return [b.submit(_one, first[i], key=f"bench-batch-{tag}-b{i}", workers=[workers[i % 2]],
                         allow_other_workers=True) for i in range(n)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from distributed import Client, LocalCluster

    best = {"submit": float("inf"), "batch": float("inf")}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster, set_as_default=False) as c:
        workers = sorted(c.scheduler_info()["workers"])
        for rep in range(args.repeat + 1):  # the first pair warms up
            for name, how in (("submit", _submit_each), ("batch", _batched)):
                t = time.perf_counter()
                done = sum(c.gather(how(c, rep, args.tasks, workers)))
                dt = time.perf_counter() - t
                assert done == args.tasks
                if rep:
                    best[name] = min(best[name], dt)
    per_task = {k: v / (2 * args.tasks) * 1e3 for k, v in best.items()}
    for k in best:
        print(f"{k:>7}: {best[k]:.2f} s for {2 * args.tasks} tasks, {per_task[k]:.2f} ms a task")
    print(f"one by one / one graph: {best['submit'] / best['batch']:.2f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"tasks": 2 * args.tasks, "seconds": best, "ms_per_task": per_task}, f, indent=1)


if __name__ == "__main__":
    main()

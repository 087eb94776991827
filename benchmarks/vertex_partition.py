"""Partitioned per-vertex state: bytes moved as workers are added, and graphs whose vertices exceed a worker.

The measurements, each on real worker processes (1 thread each) unless said, from the repository's root::

    # bytes moved between workers on 4 and on 8 workers, centralised and partitioned rounds
    python -m benchmarks.vertex_partition bytes --n 4194304 --m 16777216 --chunks 16 --out vp-bytes.json

    # a graph whose per-vertex arrays exceed one worker's memory limit, partitioned, with the forest
    # and labels written by the workers; beside it the same graph in one process (centralised)
    python -m benchmarks.vertex_partition ceiling --n 134217728 --m 268435456 --workers 8 \\
        --memory 1GiB --chunks 512 --ranges 256 --out vp-ceiling.json

    # the same with the edges streamed in passes as well (the vertex map spread over the workers)
    python -m benchmarks.vertex_partition ceiling --stream --n 8388608 --m 16777216 --workers 4 \\
        --memory 1GiB --chunks 64 --ranges 16 --out vp-ceiling-stream.json

    # local contraction first: a lattice sorted by source, a random geometric graph (strips of the plane,
    # numbered along them) and a random graph (no locality), partitioned with and without it
    python -m benchmarks.vertex_partition local --n 2097152 --chunks 16 --out vp-local.json

    # graphs that fit one worker, on the embedded default: this version against an earlier one (a
    # checkout, e.g. `git worktree add /tmp/mst-before <commit>`), each in fresh processes, taking turns
    python -m benchmarks.vertex_partition cpu --before /tmp/mst-before --out vp-cpu.json

    # one partitioned round's worker functions in one process (no Dask): the CPU a round costs, by step,
    # this version against an earlier one, in turns
    python -m benchmarks.vertex_partition round --before /tmp/mst-before --n 33554432 --m 12582912 \
        --chunks 32 --ranges 16 --out vp-round.json

    # many edge chunks on the centralised rounds (4 worker processes): the map's scratch, this version
    # against an earlier one, each in fresh processes, taking turns
    python -m benchmarks.vertex_partition chunks --before /tmp/mst-before --n 8388608 --m 16777216 \
        --chunks 128 --out vp-chunks.json

    # Dask's own CPU for moving arrays between 8 worker processes (an all-to-all), per GiB and per task
    python -m benchmarks.vertex_partition transport --sizes 256KiB,1MiB,8MiB --rounds 10 --out vp-transport.json

The ceiling command also prints where the run's CPU went (the worker processes, the tasks' functions
by Dask's own meters, the scheduler, the client) beside the one-process run's.
Every run's forest is compared with the centralised run's (edge ids, components); the JSON written
holds the raw figures, and the tables printed go into docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
import time

import dask
import numpy as np
from distributed.diagnostics.plugin import SchedulerPlugin


def _cluster(workers, memory, apart=False):
    """``(cluster, client)``: a ``LocalCluster`` of worker processes (1 thread each); with ``apart`` the
    scheduler in a process of its own too (``dask scheduler`` and ``dask worker``), so that this process
    is the client alone."""
    from distributed import Client, LocalCluster

    if apart:
        cluster = ApartCluster(workers, memory)
        return cluster, cluster.client()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, memory_limit=memory,
                           dashboard_address=None)
    return cluster, Client(cluster)


class ApartCluster:
    """A scheduler and ``workers`` worker processes started by Dask's command line, stopped by ``close``;
    the workers' log in ``workers.log`` of the cluster's folder."""

    def __init__(self, workers, memory):
        import subprocess

        self.workers = workers
        self.dir = tempfile.mkdtemp(prefix="mst-apart-")
        self.file = os.path.join(self.dir, "scheduler.json")
        self.scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0",
                                           "--no-dashboard", "--scheduler-file", self.file],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.log = open(os.path.join(self.dir, "workers.log"), "w")
        self.worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                        self.file, "--nworkers", str(workers), "--nthreads", "1", "--memory-limit",
                                        memory, "--no-dashboard", "--local-directory", self.dir],
                                       stdout=subprocess.DEVNULL, stderr=self.log)

    def client(self):
        from distributed import Client

        for _ in range(600):
            if os.path.exists(self.file):
                break
            time.sleep(0.1)
        c = Client(scheduler_file=self.file)
        c.wait_for_workers(self.workers, timeout=300)
        return c

    def scheduler_rss(self):
        import psutil

        return psutil.Process(self.scheduler.pid).memory_info().rss

    def close(self):
        for p in (self.worker, self.scheduler):
            p.terminate()
        for p in (self.worker, self.scheduler):
            try:
                p.wait(60)
            except Exception:
                p.kill()
        self.log.close()


class LargestOutput(SchedulerPlugin):
    """A scheduler plugin: the largest output (Dask's ``nbytes``) of any ``mst-*`` task, its key, and how
    many ``mst-*`` outputs it saw."""

    name = "mst-largest-output"

    def __init__(self):
        self.largest, self.seen = (0, None), 0

    def start(self, scheduler):
        self.scheduler = scheduler

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "memory" and isinstance(key, str) and key.startswith("mst-"):
            ts = self.scheduler.tasks.get(key)
            if ts is not None and ts.nbytes is not None:
                self.seen += 1
                if ts.nbytes > self.largest[0]:
                    self.largest = (ts.nbytes, key)


def largest_output(dask_scheduler):
    """``(bytes, key, outputs seen)`` of the installed :class:`LargestOutput` (for ``run_on_scheduler``)."""
    p = dask_scheduler.plugins[LargestOutput.name]
    return (*p.largest, p.seen)


class WorkerPeaks:
    """The largest resident set each process under this one reached (a worker, a nanny), sampled every
    0.1 s from a thread: ``peak()`` is the largest of them, ``idle`` what the largest was at the start."""

    def __init__(self, interval=0.1):
        import threading

        import psutil

        self._me, self._interval, self._stop = psutil.Process(), interval, threading.Event()
        self.peaks = {}
        self.idle = max(self._sample().values(), default=0)
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self):
        import psutil

        out = {}
        for p in self._me.children(recursive=True):
            try:
                out[p.pid] = p.memory_info().rss
            except psutil.Error:
                pass
        return out

    def _loop(self):
        while not self._stop.wait(self._interval):
            for pid, rss in self._sample().items():
                self.peaks[pid] = max(self.peaks.get(pid, 0), rss)

    def __enter__(self):
        self.peaks = {}
        self._stop.clear()
        self._thread = type(self._thread)(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def peak(self):
        return max(self.peaks.values(), default=0)


def _task_cpu(dask_scheduler):
    """Dask's own meter of the CPU each task prefix's function used on its worker thread (seconds)."""
    return {k[1]: v for k, v in dask_scheduler.cumulative_worker_metrics.items()
            if len(k) == 4 and k[0] == "execute" and k[2:] == ("thread-cpu", "seconds")}


async def _heartbeat(dask_worker):
    await dask_worker.heartbeat()


def _faults(pid):
    """Minor page faults of a process so far (Linux's ``/proc``; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except (OSError, IndexError, ValueError):
        return 0


class CpuUse:
    """Where a run's CPU goes: user and system seconds and minor page faults of this process and of every
    process under it (the workers, their nannies, a scheduler started apart) between ``__enter__`` and
    ``__exit__``, and the CPU the tasks' functions used on the workers' threads (Dask's fine performance
    metrics), the rest of the workers' being Dask's own (transfers, serialisation, the event loop)."""

    def __init__(self, client=None, scheduler_pid=None):
        import psutil

        self._me, self.client, self.scheduler_pid = psutil.Process(), client, scheduler_pid

    def _snapshot(self):
        import psutil

        out = {}
        for p in [self._me, *self._me.children(recursive=True)]:
            try:
                t = p.cpu_times()
                out[p.pid] = (t.user, t.system, _faults(p.pid))
            except psutil.Error:
                pass
        return out

    def __enter__(self):
        self._tasks0 = self.client.run_on_scheduler(_task_cpu) if self.client is not None else {}
        self._t0, self._s0 = time.perf_counter(), self._snapshot()
        return self

    def __exit__(self, *exc):
        self.wall, s1 = time.perf_counter() - self._t0, self._snapshot()
        tasks = {}
        if self.client is not None:
            self.client.run(_heartbeat)  # the workers' meters reach the scheduler with their heartbeats
            tasks = self.client.run_on_scheduler(_task_cpu)
        self.tasks = {k: v - self._tasks0.get(k, 0.0) for k, v in tasks.items() if k.startswith("mst-")}
        self.parts = {}
        for pid, (u, s, f) in s1.items():
            u0, s0, f0 = self._s0.get(pid, (0.0, 0.0, 0))
            who = "this process" if pid == self._me.pid else "scheduler" if pid == self.scheduler_pid else "workers"
            part = self.parts.setdefault(who, {"user": 0.0, "system": 0.0, "minor_faults": 0})
            part["user"] += u - u0
            part["system"] += s - s0
            part["minor_faults"] += f - f0

    def summary(self):
        """The figures as a dict: seconds per part, the tasks' CPU in all and its largest prefixes."""
        total = sum(p["user"] + p["system"] for p in self.parts.values())
        top = sorted(self.tasks.items(), key=lambda kv: -kv[1])[:12]
        return {"wall": self.wall, "cpu": total, "parts": self.parts, "tasks_cpu": sum(self.tasks.values()),
                "tasks_by_prefix": dict(top)}

    def line(self):
        s = self.summary()
        parts = "; ".join(f"{k} {v['user'] + v['system']:.1f} (user {v['user']:.1f}, system {v['system']:.1f}, "
                          f"{v['minor_faults'] / 1e6:.1f}M minor page faults)" for k, v in s["parts"].items())
        tasks = f"; the tasks' functions on the workers {s['tasks_cpu']:.1f}" if self.client is not None else ""
        return f"CPU {s['cpu']:.1f} core-s in {s['wall']:.1f} s: {parts}{tasks}"


def _run(graph, client, mode, chunks, ranges, contract="auto", base=0, **kw):
    import mst_dist

    settings = {"mst.vertex-base": base, "mst.vertex-ranges": ranges} if mode == "always" else {}
    settings["mst.local-contraction"] = contract
    t0 = time.perf_counter()
    with dask.config.set(settings):
        res = mst_dist.minimum_spanning_forest(graph, client, partitions=chunks, local_finish=0,
                                               vertex_partition=mode, **kw)
    return res, time.perf_counter() - t0


def _rounds(res):
    return [{"round": r.round, "mode": r.mode, "components": r.components_before, "edges": r.edges_before,
             "ranges": r.ranges,
             "bytes_moved": r.bytes_moved, "bytes_by_phase": dict(r.phase_bytes), "seconds": r.wall_seconds}
            for r in res.stats.rounds]


def print_rounds(rounds):
    """Bytes per round and phase, MiB."""
    groups = sorted({g for r in rounds for g in r["bytes_by_phase"]})
    print("  round  mode         components  " + "  ".join(f"{g:>12}" for g in groups) + "         all")
    for r in rounds:
        if r["bytes_moved"]:
            print(f"  {r['round']:>5}  {r['mode']:<11}  {r['components']:>10}  "
                  + "  ".join(f"{r['bytes_by_phase'].get(g, 0) / 2**20:>12.1f}" for g in groups)
                  + f"  {r['bytes_moved'] / 2**20:>10.1f}")


def bytes_moved(args):
    """Bytes moved between workers, per round and in all, on 4 and 8 workers, both modes."""
    import mst_dist

    g = mst_dist.generate("erdos_renyi", seed=args.seed, n=args.n, m=args.m)
    out, ref = [], None
    for workers in args.workers:
        for mode in args.modes:
            cluster, client = _cluster(workers, args.memory)  # a fresh cluster: each run's peak its own
            try:
                client.run(lambda: __import__("mst_dist.kernels.cpu"))  # the kernels loaded before the idle size
                with WorkerPeaks() as peaks:
                    res, seconds = _run(g, client, mode, args.chunks, args.ranges or 2 * workers)
            finally:
                client.close()
                cluster.close()
            if ref is None:
                ref = res.edge_ids
            assert np.array_equal(res.edge_ids, ref), "forests differ"
            out.append({"workers": workers, "mode": mode, "seconds": seconds,
                        "bytes_moved": res.stats.bytes_moved, "rounds": _rounds(res),
                        "worker_peak_bytes": peaks.peak(),
            "pass_stats": [dataclasses.asdict(p) for p in res.stats.passes], "worker_idle_bytes": peaks.idle})
            print(f"{workers} workers, vertex_partition={mode}: {seconds:.1f} s, "
                  f"{res.stats.bytes_moved / 2**20:.0f} MiB moved, largest worker {peaks.peak() / 2**20:.0f} MiB "
                  f"(idle {peaks.idle / 2**20:.0f} MiB)", flush=True)
            print_rounds(out[-1]["rounds"])
    for mode in args.modes:
        if {4, 8} <= set(args.workers):
            a, b = (next(r for r in out if r["workers"] == w and r["mode"] == mode) for w in (4, 8))
            print(f"{mode}: bytes moved 8 / 4 workers = {b['bytes_moved'] / max(1, a['bytes_moved']):.2f}x")
    return {"graph": {"n": args.n, "m": args.m, "chunks": args.chunks}, "runs": out}


def ceiling(args):
    """A graph whose per-vertex arrays exceed each worker's memory: partitioned, written by the workers."""
    import mst_dist
    from mst_dist.io.writers import read_forest_dataset

    g = mst_dist.generate("erdos_renyi", seed=args.seed, n=args.n, m=args.m)
    tmp = tempfile.mkdtemp(prefix="mst-vp-")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    stream = "always" if args.stream else "never"
    cluster, client = _cluster(args.workers, args.memory, apart=args.scheduler_apart)
    refused, scheduler = None, {}
    try:
        try:  # the same run with the vertex map whole on one worker
            mst_dist.minimum_spanning_forest(g, client, partitions=args.chunks, stream=stream,
                                             vertex_partition="never")
        except mst_dist.InvalidGraphError as e:
            refused = str(e)
            print(f"vertex_partition='never': refused before work: {refused}", flush=True)
        client.register_plugin(LargestOutput())
        spid = cluster.scheduler.pid if args.scheduler_apart else None
        with WorkerPeaks() as peaks, dask.config.set({"mst.slice-edges": args.slice_edges or "auto"}), \
                CpuUse(client, spid) as cpu:
            res, seconds = _run(g, client, "always", args.chunks, args.ranges, output=os.path.join(tmp, "forest"),
                                labels_output=os.path.join(tmp, "labels"), stream=stream, base=args.base)
        lost = len(client.scheduler_info()["workers"]) < args.workers
        largest, largest_key, tasks = client.run_on_scheduler(largest_output)
        if args.scheduler_apart:
            scheduler = {"pid": cluster.scheduler.pid, "rss_end": cluster.scheduler_rss(),
                         "peak": peaks.peaks.pop(cluster.scheduler.pid, 0)}  # the workers' peaks apart
    finally:
        client.close()
        cluster.close()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    passes = len(res.stats.passes) - 1 if res.stats.passes else 0
    print(f"partitioned{' streaming' if args.stream else ''} on {args.workers} x {args.memory}: {seconds:.1f} s, "
          f"{passes} passes, {res.stats.n_rounds} rounds, largest worker process {peaks.peak() / 2**20:.0f} MiB, "
          f"client grew {(rss1 - rss0) / 2**20:.0f} MiB, workers lost: {lost}", flush=True)
    print(f"largest task output {largest / 2**20:.1f} MiB ({largest / args.n:.3f} n bytes): {largest_key}", flush=True)
    if scheduler:
        print(f"the scheduler's process (apart): peak {scheduler['peak'] / 2**20:.0f} MiB", flush=True)
    print(f"{cpu.line()}; {tasks} tasks", flush=True)
    single = {}
    if not args.no_single:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=1, threads_per_worker=os.cpu_count(), processes=False,
                          dashboard_address=None) as lc, Client(lc) as c1:
            with CpuUse() as cpu1:
                ref = mst_dist.minimum_spanning_forest(g, c1, vertex_partition="never")
            single = {"seconds": cpu1.wall, "cpu": cpu1.summary()}
        import pyarrow.parquet as pq

        ids = read_forest_dataset(os.path.join(tmp, "forest"))[0]
        assert np.array_equal(ids, ref.edge_ids), "forests differ"
        assert res.n_components == ref.n_components
        labels = pq.read_table(os.path.join(tmp, "labels")).sort_by("vertex").column("component").to_numpy()
        assert np.array_equal(labels, ref.labels), "labels differ"
        print(f"single process: {single['seconds']:.1f} s; same forest, components and labels; ratio "
              f"{seconds / single['seconds']:.2f}x", flush=True)
        print(f"single process: {cpu1.line()}; CPU ratio {cpu.summary()['cpu'] / cpu1.summary()['cpu']:.2f}x",
              flush=True)
    return {"graph": {"n": args.n, "m": args.m}, "workers": args.workers, "memory": args.memory,
            "streamed": bool(args.stream), "passes": passes, "refused_unspread": refused,
            "worker_peak_bytes": peaks.peak(),
            "pass_stats": [dataclasses.asdict(p) for p in res.stats.passes],
            "largest_output_bytes": largest, "largest_output_key": largest_key,
            "seconds": seconds, "client_growth_bytes": rss1 - rss0, "workers_lost": lost, "scheduler": scheduler,
            "components": res.n_components, "forest_edges": res.forest_edges, "single": single,
            "cpu": cpu.summary(), "tasks": tasks,
            "rounds": _rounds(res)}


def _local_graphs(n, seed, which=("grid", "random_geometric", "erdos_renyi")):
    """The graphs of the local-contraction benchmark: ``(name, Graph)``, those of ``which``."""
    import mst_dist

    side = int(round(n ** 0.5)) if "grid" in which else 0
    idx = np.arange(side * side, dtype=np.int64).reshape(side, side)
    src = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    dst = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    order = np.lexsort((dst, src))  # as a road network's file lists its arcs: by source
    w = np.random.default_rng(seed).integers(1, 1000, src.shape[0])
    grid = mst_dist.Graph.from_arrays(src[order], dst[order], w, n_vertices=side * side)
    radius = (6 / (np.pi * n)) ** 0.5  # about 6 neighbours a point
    graphs = {"grid": lambda: (f"grid {side}x{side} by source", grid),
              "random_geometric": lambda: ("random_geometric",
                                           mst_dist.generate("random_geometric", seed=seed, n=n, radius=radius)),
              "erdos_renyi": lambda: ("erdos_renyi m=4n", mst_dist.generate("erdos_renyi", seed=seed, n=n, m=4 * n))}
    return [graphs[w]() for w in which]


def local(args):
    """Partitioned runs with and without local contraction first, beside the centralised rounds."""
    out = []
    cluster, client = _cluster(args.workers, args.memory)
    try:
        for name, g in _local_graphs(args.n, args.seed, args.graphs.split(",")):
            ref = None
            # every round partitioned (vertex-base 0), and the centralised base case once 1/16 of the
            # vertices are left (as where one worker holds a sixteenth of the per-vertex state)
            runs = [("centralised", "never", "never", 0)] + [
                (f"partitioned, base {base}{', contracted first' if contract == 'auto' else ''}", "always",
                 contract, base) for base in (0, g.n_vertices // 16) for contract in ("never", "auto")]
            for label, mode, contract, base in runs:
                res, seconds = _run(g, client, mode, args.chunks, args.ranges or 2 * args.workers, contract, base)
                if ref is None:
                    ref = res.edge_ids
                assert np.array_equal(res.edge_ids, ref), f"{name}: forests differ"
                first = res.stats.rounds[0] if res.stats.rounds else None
                vp = res.stats.vertex_partition or {}
                out.append({"graph": name, "n": g.n_vertices, "m": g.n_edges, "run": label, "seconds": seconds,
                            "bytes_moved": res.stats.bytes_moved, "rounds": _rounds(res),
                            "interior_vertices": vp.get("interior_vertices"),
                            "interior_estimate": vp.get("interior_estimate"),
                            "contracted": bool(vp.get("local_contraction")),
                            "after_first": None if first is None else [first.components_after, first.edges_after]})
                print(f"{name} (n={g.n_vertices}, m={g.n_edges}) {label}: {seconds:.1f} s, "
                      f"{res.stats.bytes_moved / 2**20:.0f} MiB moved, {len(res.stats.rounds)} rounds, interior "
                      f"{vp.get('interior_vertices')} (estimate {vp.get('interior_estimate')}), first round left "
                      f"{out[-1]['after_first']}", flush=True)
    finally:
        client.close()
        cluster.close()
    return {"workers": args.workers, "chunks": args.chunks, "runs": out}


_CHILD = r"""
import hashlib, json, sys, time
import mst_dist
spec, repeat = json.loads(sys.argv[1]), int(sys.argv[2])
g = mst_dist.generate(spec.pop("kind"), **spec)
s, d, w = g.to_arrays()
times = []
for i in range(repeat + 1):  # the first run warms the embedded cluster and the kernels: not timed
    t0 = time.perf_counter()
    res = mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays(s, d, w, n_vertices=g.n_vertices))
    if i:
        times.append(time.perf_counter() - t0)
print("RESULT " + json.dumps({"times": times, "ids": hashlib.sha1(res.edge_ids.tobytes()).hexdigest(),
                              "module": mst_dist.__file__}))
"""


_CHUNKS_CHILD = r"""
import hashlib, json, sys, time
if __name__ == "__main__":
    import mst_dist
    from distributed import Client, LocalCluster
    n, m, workers, chunks, repeat = (int(x) for x in sys.argv[1:6])
    g = mst_dist.generate("erdos_renyi", n=n, m=m, seed=1)
    times = []
    lc = LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit="4GiB", dashboard_address=None)
    with lc, Client(lc) as c:
        for i in range(repeat + 1):  # the first run warms the workers and their kernels: not timed
            t0 = time.perf_counter()
            res = mst_dist.minimum_spanning_forest(g if i else mst_dist.generate("erdos_renyi", n=1000, m=4000), c,
                                                   partitions=chunks, local_finish=0, vertex_partition="never")
            if i:
                times.append(time.perf_counter() - t0)
    print("RESULT " + json.dumps({"times": times, "ids": hashlib.sha1(res.edge_ids.tobytes()).hexdigest(),
                                  "module": mst_dist.__file__}))
"""


_ROUND_CHILD = r"""
import functools, hashlib, inspect, json, sys, time
import numpy as np
import mst_dist
from mst_dist.engine import ranged
from mst_dist.kernels import vertex_ranges as vr

def exchange(requests, owners, split, serve, assemble, kwargs=None):
    # what mst_dist.engine.exchange does across workers, in this process: split, serve, assemble
    splits = [split(q) for q in requests]
    served = [[vr.narrow(a) for a in serve(o, *[s.part(r) for s in splits])] for r, o in enumerate(owners)]
    return [assemble(q, s, *[served[r][j] for r in range(len(owners))], **(kwargs[j] if kwargs else {}))
            for j, (q, s) in enumerate(zip(requests, splits))]

def one_round(raws, offsets, n, R):
    steps, t = {}, [time.perf_counter()]
    def done(step):
        now = time.perf_counter()
        steps[step], t[0] = now - t[0], now
    b = vr.even_bounds(n, R)
    total = sum(len(raw[0]) for raw in raws)
    mapped = [ranged.prepare(raw, off, n, b) for raw, off in zip(raws, offsets)]
    labels = [ranged.first_labels(int(b[r]), int(b[r + 1])) for r in range(R)]
    done("prepare")
    # versions whose candidates and parents carry their asks (the next stage's split) take the bounds
    carried = "bounds" in inspect.signature(ranged.jump).parameters
    if carried:
        cands = [ranged.merged_range(int(b[r]), int(b[r + 1]), *[mp[1][r] for mp in mapped], bounds=b)
                 for r in range(R)]
    else:
        cands = [ranged.range_candidates(ranged.merge(int(b[r]), int(b[r + 1]), *[mp[1][r] for mp in mapped]),
                                         int(b[r]), int(b[r + 1])) for r in range(R)]
    done("merge")
    if carried:
        hooked = exchange(cands, cands, lambda q: q.asks, ranged.serve_edge_ids,
                          functools.partial(ranged.hook, bounds=b, chunk_bounds=np.append(offsets, total)))
    else:
        hooked = exchange(cands, cands, functools.partial(ranged.split_others, bounds=b), ranged.serve_edge_ids,
                          ranged.hook)
    # the hooking gives RangeParents carrying its chosen edges (a pair of both in versions before 0e187cc)
    parents = [h if hasattr(h, "chosen") else h[0] for h in hooked]
    chosen = [h.chosen if hasattr(h, "chosen") else h[1] for h in hooked]
    done("hook")
    while sum(p.pending() for p in parents):
        if carried:
            parents = exchange(parents, parents, lambda q: q.asks, ranged.serve_parents,
                               functools.partial(ranged.jump, bounds=b))
        else:
            parents = exchange(parents, parents, functools.partial(ranged.split_parents, bounds=b),
                               ranged.serve_parents, ranged.jump)
    done("jump")
    counts = [ranged.counts(p) for p in parents]
    roots, fins = np.array([a for a, _ in counts]), np.array([f for _, f in counts])
    root_off, fin_off = np.cumsum(roots) - roots, np.cumsum(fins) - fins
    numbered = [ranged.number(p, int(root_off[r]), int(fin_off[r])) for r, p in enumerate(parents)]
    rmaps = exchange(parents, numbered, functools.partial(ranged.split_roots, bounds=b), ranged.serve_new_ids,
                     ranged.relabel, [{"numbered": x} for x in numbered])
    done("number")
    n_next = int(roots.sum())
    kw = {"n_next": n_next, "next_bounds": vr.even_bounds(n_next, R)}
    mapped = exchange(mapped, rmaps, functools.partial(ranged.split_ends, bounds=b), ranged.serve_map,
                      ranged.filter_block, [kw] * len(mapped))
    done("filter-edges")
    labels = exchange(labels, rmaps, functools.partial(ranged.split_live, bounds=b), ranged.serve_map, ranged.follow)
    done("labels")
    h = hashlib.sha1(np.sort(np.concatenate(chosen)).tobytes())
    for vl in labels:
        h.update(np.asarray(vl.labels, np.int64).tobytes())
    return steps, h.hexdigest() + f"-{n_next}-{sum(len(m[0].chunk) for m in mapped)}"

n, m, chunks, ranges, repeat = (int(x) for x in sys.argv[1:6])
s, d, w = mst_dist.generate("erdos_renyi", n=n, m=m, seed=1).to_arrays()
cuts = np.linspace(0, m, chunks + 1).astype(np.int64)
raws = [(s[a:z], d[a:z], w[a:z]) for a, z in zip(cuts[:-1], cuts[1:])]
times, best = [], None
for i in range(repeat + 1):  # the first warms the kernels: not timed
    steps, ids = one_round(raws, [int(a) for a in cuts[:-1]], n, ranges)
    if i:
        times.append(sum(steps.values()))
        best = steps if best is None or times[-1] <= min(times) else best
print("RESULT " + json.dumps({"times": times, "steps": best, "ids": ids, "module": mst_dist.__file__}))
"""


def _in_turns(before, child, argv, turns):
    """``child`` (a script printing ``RESULT {json}``) run with ``argv`` in fresh processes, this checkout and
    the one at ``before`` taking turns: ``(best seconds, edge ids' hash, the best run's seconds by step where
    the child gives them)``, each per version."""
    import subprocess

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"before": os.path.abspath(before), "now": here}
    best, ids, steps = {}, {}, {}
    for _ in range(turns):
        for name, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=tree)
            p = subprocess.run([sys.executable, "-c", child, *argv], env=env, cwd=tree, capture_output=True,
                               text=True, check=True)
            r = json.loads(p.stdout.split("RESULT ", 1)[1])
            assert r["module"].startswith(tree), f"{name}: imported {r['module']}, not from {tree}"
            if min(r["times"]) < best.get(name, float("inf")):
                best[name], steps[name] = min(r["times"]), r.get("steps")
            ids.setdefault(name, r["ids"])
    return best, ids, steps


def cpu(args):
    """The CPU benchmark's graphs on the embedded default: this checkout against ``--before``, in turns."""
    import yaml

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "benchmarks", "configs", "bench-cpu.yaml")) as f:
        graphs = [g for g in yaml.safe_load(f)["graphs"] if not args.only or g["name"] in args.only.split(",")]
    out = []
    for gr in graphs:
        best, ids, _ = _in_turns(args.before, _CHILD, [json.dumps(gr["generate"]), str(args.repeat)], args.turns)
        assert ids["before"] == ids["now"], f"{gr['name']}: the forests differ"
        out.append({"graph": gr["name"], "before": best["before"], "now": best["now"],
                    "ratio": best["now"] / best["before"]})
        print(f"{gr['name']:<12} before {best['before']:.3f} s  now {best['now']:.3f} s  "
              f"now / before {out[-1]['ratio']:.3f}", flush=True)
    geo = float(np.exp(np.mean(np.log([o["ratio"] for o in out]))))
    print(f"geometric mean of now / before: {geo:.3f}")
    return {"graphs": out, "geomean_ratio": geo, "repeat": args.repeat, "turns": args.turns}


def chunks(args):
    """Many edge chunks on the centralised rounds, worker processes of 1 thread: ``--before`` against this
    checkout, in turns."""
    argv = [str(x) for x in (args.n, args.m, args.workers, args.chunks, args.repeat)]
    best, ids, _ = _in_turns(args.before, _CHUNKS_CHILD, argv, args.turns)
    assert ids["before"] == ids["now"], "the forests differ"
    ratio = best["now"] / best["before"]
    print(f"Erdos-Renyi n={args.n} m={args.m}, {args.chunks} chunks on {args.workers} workers: before "
          f"{best['before']:.2f} s  now {best['now']:.2f} s  now / before {ratio:.3f}", flush=True)
    return {"graph": {"n": args.n, "m": args.m, "chunks": args.chunks}, "workers": args.workers,
            "before": best["before"], "now": best["now"], "ratio": ratio, "repeat": args.repeat, "turns": args.turns}


def one_round(args):
    """One partitioned round's worker functions in one process, the exchanges called in place (no Dask):
    the CPU a round costs, by step, ``--before`` against this checkout, in turns."""
    argv = [str(x) for x in (args.n, args.m, args.chunks, args.ranges, args.repeat)]
    best, ids, steps = _in_turns(args.before, _ROUND_CHILD, argv, args.turns)
    assert ids["before"] == ids["now"], "the rounds' forest edges, labels or edges left differ"
    ratio = best["now"] / best["before"]
    print(f"one partitioned round, Erdos-Renyi n={args.n} m={args.m}, {args.chunks} chunks, {args.ranges} ranges, "
          f"one process: before {best['before']:.2f} s  now {best['now']:.2f} s  now / before {ratio:.3f}")
    for name in ("before", "now"):
        print(f"  {name:<6}", "  ".join(f"{k} {v:.2f}" for k, v in steps[name].items()))
    return {"graph": {"n": args.n, "m": args.m, "chunks": args.chunks, "ranges": args.ranges}, "before": best["before"],
            "now": best["now"], "ratio": ratio, "steps": steps, "repeat": args.repeat, "turns": args.turns}


def _block(nbytes, seed):
    """An array of ``nbytes`` (its pages written), as an exchange's bundle is."""
    return np.full(nbytes // 8, seed, np.int64)


def _take(*parts):
    return sum(int(p.shape[0]) for p in parts)


def transport(args):
    """Dask's own CPU for moving arrays between worker processes, apart from any work on them: in each
    round every worker makes one array of ``size`` bytes for each other worker and one task on each
    worker takes the arrays made for it (an all-to-all, one transfer per pair, as an exchange's
    bundles); the workers' CPU outside the tasks' functions per GiB that crossed, the scheduler's per
    task."""
    from dask.utils import format_bytes, parse_bytes

    cluster, client = _cluster(args.workers, args.memory, apart=True)
    out = []
    try:
        workers = sorted(client.scheduler_info()["workers"])
        P = len(workers)
        client.run(lambda: None)
        for size in (parse_bytes(x) for x in args.sizes.split(",")):
            with CpuUse(client, cluster.scheduler.pid) as cpu:
                for r in range(args.rounds):
                    made = {(i, j): client.submit(_block, size, i, key=f"mst-tblock-{size}-{r}-{i}-{j}",
                                                  workers=[workers[i]], pure=False)
                            for i in range(P) for j in range(P) if i != j}
                    took = [client.submit(_take, *[made[i, j] for i in range(P) if i != j],
                                          key=f"mst-ttake-{size}-{r}-{j}", workers=[workers[j]], pure=False)
                            for j in range(P)]
                    assert sum(client.gather(took)) == P * (P - 1) * (size // 8)
                    made = took = None
            s = cpu.summary()
            crossed = args.rounds * P * (P - 1) * size
            tasks = args.rounds * (P * (P - 1) + P)
            w = s["parts"]["workers"]
            dask_side = w["user"] + w["system"] - s["tasks_cpu"]
            sched = s["parts"].get("scheduler", {"user": 0.0, "system": 0.0})
            row = {"size": size, "rounds": args.rounds, "workers": P, "bytes_crossed": crossed, "tasks": tasks,
                   "wall": s["wall"], "cpu": s, "workers_outside_tasks_per_gib": dask_side / (crossed / 2**30),
                   "scheduler_ms_per_task": 1e3 * (sched["user"] + sched["system"]) / tasks}
            out.append(row)
            print(f"{format_bytes(size)} a transfer, {P} workers, {args.rounds} rounds: {format_bytes(crossed)} "
                  f"crossed in {s['wall']:.1f} s; workers' CPU outside the tasks {dask_side:.1f} core-s "
                  f"({row['workers_outside_tasks_per_gib']:.1f} a GiB), the tasks' functions {s['tasks_cpu']:.1f}, "
                  f"the scheduler {row['scheduler_ms_per_task']:.2f} ms a task", flush=True)
    finally:
        client.close()
        cluster.close()
    return {"runs": out}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.vertex_partition", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    for name in ("bytes", "ceiling"):
        s = sub.add_parser(name)
        s.add_argument("--n", type=int, default=2**22)
        s.add_argument("--m", type=int, default=2**24)
        s.add_argument("--chunks", type=int, default=16)
        s.add_argument("--ranges", type=int, default=None)
        s.add_argument("--memory", default="4GiB")
        s.add_argument("--seed", type=int, default=1)
        s.add_argument("--out", default=None)
    loc = sub.add_parser("local")
    loc.add_argument("--n", type=int, default=2**21)
    loc.add_argument("--chunks", type=int, default=16)
    loc.add_argument("--ranges", type=int, default=None)
    loc.add_argument("--workers", type=int, default=4)
    loc.add_argument("--memory", default="4GiB")
    loc.add_argument("--seed", type=int, default=1)
    loc.add_argument("--graphs", default="grid,random_geometric,erdos_renyi", help="which of the graphs, by name")
    loc.add_argument("--out", default=None)
    sub.choices["ceiling"].add_argument("--workers", type=int, default=8)
    sub.choices["bytes"].add_argument("--workers", type=lambda v: [int(x) for x in v.split(",")], default=[4, 8],
                                      help="worker counts, comma-separated")
    sub.choices["bytes"].add_argument("--modes", type=lambda v: v.split(","), default=["never", "always"],
                                      help="vertex_partition modes, comma-separated")
    sub.choices["ceiling"].add_argument("--no-single", action="store_true")
    sub.choices["ceiling"].add_argument("--scheduler-apart", action="store_true",
                                        help="the scheduler in a process of its own (dask scheduler, dask worker), "
                                             "so that the client's growth is its own")
    sub.choices["ceiling"].add_argument("--stream", action="store_true",
                                        help="stream the edges in passes too (the vertex map spread)")
    sub.choices["ceiling"].add_argument("--base", type=lambda v: v if v == "auto" else int(v), default=0,
                                        help="mst.vertex-base: components left at which the rounds go on "
                                             "centralised ('auto': what a quarter of a worker holds)")
    sub.choices["ceiling"].add_argument("--slice-edges", type=int, default=None,
                                        help="most edges one pass keeps (default: from the workers' memory)")
    c = sub.add_parser("cpu")
    c.add_argument("--before", required=True, help="a checkout of the version to compare with")
    c.add_argument("--repeat", type=int, default=3, help="timed runs per process (after one warm-up)")
    c.add_argument("--turns", type=int, default=2, help="processes per version and graph, taking turns")
    c.add_argument("--only", default=None, help="graphs of the CPU benchmark to run (comma-separated names)")
    c.add_argument("--out", default=None)
    ch = sub.add_parser("chunks")
    ch.add_argument("--before", required=True, help="a checkout of the version to compare with")
    ch.add_argument("--n", type=int, default=2**23)
    ch.add_argument("--m", type=int, default=2**24)
    ch.add_argument("--chunks", type=int, default=128)
    ch.add_argument("--workers", type=int, default=4)
    ch.add_argument("--repeat", type=int, default=2, help="timed runs per process (after one warm-up)")
    ch.add_argument("--turns", type=int, default=2, help="processes per version, taking turns")
    ch.add_argument("--out", default=None)
    rd = sub.add_parser("round")
    rd.add_argument("--before", required=True, help="a checkout of the version to compare with")
    rd.add_argument("--n", type=int, default=2**25)
    rd.add_argument("--m", type=int, default=12_582_912)
    rd.add_argument("--chunks", type=int, default=32)
    rd.add_argument("--ranges", type=int, default=16)
    rd.add_argument("--repeat", type=int, default=2, help="timed rounds per process (after one warm-up)")
    rd.add_argument("--turns", type=int, default=2, help="processes per version, taking turns")
    rd.add_argument("--out", default=None)
    tr = sub.add_parser("transport")
    tr.add_argument("--workers", type=int, default=8)
    tr.add_argument("--memory", default="1GiB")
    tr.add_argument("--sizes", default="1MiB,8MiB", help="bytes of one transfer, comma-separated")
    tr.add_argument("--rounds", type=int, default=10)
    tr.add_argument("--out", default=None)
    args = p.parse_args(argv)
    result = {"bytes": bytes_moved, "ceiling": ceiling, "cpu": cpu, "local": local,
              "chunks": chunks, "round": one_round, "transport": transport}[args.what](args)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

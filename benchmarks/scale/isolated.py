"""One step of the scale benchmark in a process of its own: a method's runs on a graph, or a graph written.

The runner (:mod:`benchmarks.scale.runner`) starts::

    python -m benchmarks.scale.isolated run   SPEC.json EVENTS.jsonl
    python -m benchmarks.scale.isolated write SPEC.json EVENTS.jsonl

and reads the events this process appends to ``EVENTS.jsonl``, one JSON
object per line, flushed as they happen, so a run that is killed (out of
memory, past its timeout) still leaves what it did before.  A process per
method and graph gives every run the same clean start (memory a run freed is
not always given back to the system, and would blur the next run's
baseline), and lets the runner kill a run, with its worker processes,
without losing the benchmark.

``run`` (:func:`run_method`): start the method's cluster, prime the kernels
on a tiny graph, take the baseline (the tree's RSS before the graph exists),
then for each run: make the graph and compute its forest while a
:class:`~benchmarks.memory.TreeSampler` watches this process and its
worker processes.  Events: ``started``, ``cluster``, ``baseline``,
``arrays`` (graphs from arrays: the RSS with them loaded), ``run-start`` and
``run-end`` (one pair per run), ``done``, or ``error``.

``write`` (:func:`write_graph_file`): generate the graph and write it with
:func:`mst_dist.write_graph` (chunks loaded by an in-process cluster);
events ``started``, ``written``.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback

__all__ = ["run_method", "write_graph_file", "main"]


class _Events:
    """Appends events to a JSON-lines file, each flushed to disk at once."""

    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")

    def __call__(self, event, **fields):
        fields = {"event": event, "time": time.time(), **fields}
        self.f.write(json.dumps(fields, default=_plain) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def _plain(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    return str(o)


def _exact(x):
    """A total weight as JSON keeps it exactly: int for integers, else float."""
    import numpy as np

    if isinstance(x, (int, np.integer)):
        return int(x)
    return float(x)


def _workers(client):
    info = client.scheduler_info(**({"n_workers": -1} if _takes_n_workers(client) else {}))
    return {addr: {"pid": w.get("pid"), "nthreads": w.get("nthreads"), "memory_limit": w.get("memory_limit")}
            for addr, w in info.get("workers", {}).items()}


def _takes_n_workers(client):
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def _cluster(spec):
    """The method's cluster: :func:`~mst_dist.deploy.local.embedded` with the spec's keys."""
    from mst_dist.deploy.local import embedded

    kw = {k: v for k, v in spec["cluster"].items() if v is not None}
    return embedded(dashboard_address=None, **kw)


def _prime(client, stream):
    """Load the kernels on every worker: tiny graphs (generated, from arrays) in the method's mode."""
    import numpy as np

    from mst_dist import Graph, generate, minimum_spanning_forest

    minimum_spanning_forest(generate("rmat", scale=8, edge_factor=8, seed=1), client, stream=stream)
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 256, (2, 2048))
    minimum_spanning_forest(Graph.from_arrays(src, dst, rng.integers(1, 100, 2048), n_vertices=256), client,
                            stream=stream)


def _load_arrays(path):
    """The ``src``, ``dst``, ``weight`` columns of an ``.npy`` directory, read into memory."""
    import numpy as np

    return tuple(np.load(os.path.join(path, f"{k}.npy")) for k in ("src", "dst", "weight"))


def _one_run(spec, client, arrays):
    """Make the graph and compute its forest; the run's record (times, answers, statistics)."""
    from mst_dist import Graph, generate, minimum_spanning_forest, read
    from benchmarks.timing import crc

    gen = dict(spec["generate"])
    t0 = time.perf_counter()
    if spec["source"] == "generate":
        graph = generate(gen.pop("kind"), **gen)
    elif spec["source"] == "written":
        graph = read(spec["path"], format=spec["format"], n_vertices=spec["n_vertices"])
    else:
        graph = Graph.from_arrays(*arrays, n_vertices=spec["n_vertices"])
    t1 = time.perf_counter()
    res = minimum_spanning_forest(graph, client, stream=spec["stream"], backend="cpu")
    t2 = time.perf_counter()
    st = res.stats
    rec = {"times": {"total": t2 - t0, "graph": t1 - t0, "msf": t2 - t1},
           "n_vertices": int(graph.n_vertices), "m": int(graph.n_edges),
           "total_weight": _exact(res.total_weight), "forest_edges": res.n_forest_edges,
           "components": int(res.n_components), "edge_ids_crc32": crc(res.edge_ids),
           "streamed": bool(st.streamed), "passes": [p.to_dict() for p in st.passes],
           "n_rounds": st.n_rounds, "setup_seconds": st.setup_seconds, "solve_seconds": st.solve_seconds,
           "finish_seconds": st.finish_seconds, "partitions": st.partitions, "workers": st.workers,
           "threads": st.threads,
           # what the caller gets back: forest ids and rows, component labels
           "result_bytes": int(sum(a.nbytes for a in (res.edge_ids, res.src, res.dst, res.weight, res.labels)
                                   if a is not None))}
    del res, graph
    return rec


def run_method(spec, events):
    """A method's runs on one graph (see the module's docstring); events go to ``events``."""
    from benchmarks.memory import TreeSampler, tree_rss

    events("started", pid=os.getpid())
    t0 = time.perf_counter()
    with _cluster(spec) as client:
        workers = _workers(client)
        events("cluster", seconds=time.perf_counter() - t0, workers=workers)
        t0 = time.perf_counter()
        _prime(client, spec["stream"])
        gc.collect()
        events("baseline", bytes=tree_rss(), prime_seconds=time.perf_counter() - t0)
        arrays = None
        if spec["source"] == "arrays":
            arrays = _load_arrays(spec["path"])
            events("arrays", bytes=tree_rss(), nbytes=int(sum(a.nbytes for a in arrays)))
        for i in range(spec["warmup"] + spec["repeat"]):
            warm = i < spec["warmup"]
            before = _workers(client)
            events("run-start", run=i, warmup=warm)
            with TreeSampler(interval=spec["interval"]) as s:
                rec = _one_run(spec, client, arrays)
            after = _workers(client)
            rec.update(warmup=warm, run=i, peak_bytes=s.peak, peak_anon_bytes=s.peak_anon,
                       start_bytes=s.start_bytes, samples=s.samples,
                       peak_processes=s.peak_processes, processes_seen=len(s.pids),
                       workers_restarted=len(set(before) - set(after)),
                       workers_pids_changed=sum(1 for a, w in before.items()
                                                if a in after and after[a]["pid"] != w["pid"]))
            events("run-end", **rec)
            gc.collect()
        del arrays
    events("done")


def write_graph_file(spec, events):
    """Generate ``spec["generate"]`` and write it to ``spec["path"]`` in ``spec["format"]``."""
    from mst_dist import generate, write_graph
    from mst_dist.deploy.local import embedded

    events("started", pid=os.getpid())
    gen = dict(spec["generate"])
    t0 = time.perf_counter()
    graph = generate(gen.pop("kind"), **gen)
    with embedded(dashboard_address=None) as client:
        write_graph(graph, spec["path"], spec["format"], client=client)
    events("written", seconds=time.perf_counter() - t0, n_vertices=int(graph.n_vertices), m=int(graph.n_edges))


def main(argv=None):
    """``python -m benchmarks.scale.isolated {run,write} SPEC EVENTS``: 0 done, 1 failed."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] not in ("run", "write"):
        print("usage: python -m benchmarks.scale.isolated {run,write} SPEC.json EVENTS.jsonl",
              file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    events = _Events(argv[2])
    try:
        (run_method if argv[0] == "run" else write_graph_file)(spec, events)
    except BaseException as exc:  # recorded for the runner, then the process ends
        events("error", type=type(exc).__name__, message=str(exc)[:2000],
               oom=isinstance(exc, MemoryError), traceback=traceback.format_exc()[-4000:])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

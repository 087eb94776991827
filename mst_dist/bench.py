"""Measure mst-dist on your own cluster: the engine on generated graphs, phase by phase.

    mst-dist bench                                   # the default graphs, embedded default cluster
    mst-dist bench --scheduler tcp://HOST:8786       # on a cluster that is already up
    mst-dist bench graphs.yaml --repeat 5 --only rmat20 --methods engine,scipy
    python -m mst_dist.bench ...                     # the same

Each graph is generated on the workers (:func:`mst_dist.generate`) and its
forest computed ``warmup + repeat`` times.  The report gives, per graph, the
best and median seconds, edges per second, the rounds, the seconds of each
phase summed over the rounds, setup and finish, and the bytes moved between
workers (:class:`~mst_dist.result.RunStats`).  ``scipy``, when installed, runs
beside it: ``scipy.sparse.csgraph.minimum_spanning_tree`` on the same edges,
gathered into arrays on the client first (not timed), CSR build and call
timed; the two total weights must agree.  Nothing is judged: there are no
targets.

A graphs file is YAML::

    description: "..."     # free text, copied into the report
    repeat: 3              # timed runs per method (default 3)
    warmup: 1              # untimed runs first (default 1)
    methods: [engine, scipy]
    graphs:
      - name: rmat20
        generate: {kind: rmat, scale: 20, edge_factor: 16, seed: 5}

Writes ``bench.json`` (machine, versions, cluster, every run) and ``bench.md``
(the table) in ``--out`` and prints the table.  Exit status: 0 done, 1 the
engine and scipy disagree, 2 bad input.  The comparisons with other libraries
and the project's published numbers live beside the package, in the source
tree's ``benchmarks/`` (docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from mst_dist.config import ConfigError

__all__ = ["METHODS", "DEFAULT_GRAPHS", "validate_graphs_config", "run", "format_table",
           "build_parser", "run_args", "cli"]

#: What ``--methods`` may name: the engine, and scipy beside it.
METHODS = ("engine", "scipy")

#: The graphs of a run without a graphs file: three families, 8M to 17M edges.
DEFAULT_GRAPHS = (
    {"name": "er", "generate": {"kind": "erdos_renyi", "n": 1_000_000, "m": 10_000_000, "seed": 1}},
    {"name": "grid2000", "generate": {"kind": "grid", "rows": 2000, "cols": 2000, "seed": 3}},
    {"name": "rmat20", "generate": {"kind": "rmat", "scale": 20, "edge_factor": 16, "seed": 5}},
)

#: Where the comparison benchmarks went, for messages about what this command no longer does.
MOVED = ("the comparisons with other libraries (rustworkx, cuGraph, ...), the scale runs and their "
         "targets live in benchmarks/ of the source tree: python -m benchmarks CONFIG")

_KEYS = ("description", "repeat", "warmup", "methods", "graphs")


def _count(v, lo, where):
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        raise ConfigError(f"{where} must be an integer >= {lo}, got {v!r}", key=where)
    return v


def _methods(v, where):
    methods = [m.strip() for m in v.split(",")] if isinstance(v, str) else list(v)
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ConfigError(f"{where}: unknown method(s) {', '.join(map(str, bad))}; mst-dist bench runs "
                          f"{', '.join(METHODS)} ({MOVED})", key="methods")
    return [m for m in METHODS if m in methods]


def validate_graphs_config(cfg, source="graphs file"):
    """Check a graphs file (see the module's docstring) and fill in defaults; returns a new dict.

    Raises
    ------
    mst_dist.config.ConfigError
        A :class:`ValueError` naming ``source`` and the key; a config of the
        comparison benchmarks says where they went.
    """
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source}: a graphs file must be a mapping with a 'graphs' list")
    extra = sorted(set(cfg) - set(_KEYS))
    if extra:
        hint = f"; {MOVED}" if set(extra) & {"targets", "schedule", "rustworkx", "benchmark"} else ""
        raise ConfigError(f"{source}: unknown key(s) {', '.join(extra)}; allowed: {', '.join(_KEYS)}{hint}",
                          key=extra[0])
    graphs = cfg.get("graphs")
    if not isinstance(graphs, list) or not graphs:
        raise ConfigError(f"{source}: 'graphs' must be a non-empty list", key="graphs")
    out, names = [], set()
    for i, g in enumerate(graphs):
        where = f"graphs[{i}]"
        if not isinstance(g, dict) or "name" not in g or not isinstance(g.get("generate"), dict) \
                or "kind" not in g["generate"]:
            raise ConfigError(f"{source}: {where} must be a mapping with 'name' and 'generate: {{kind: ...}}'",
                              key=where)
        if str(g["name"]) in names:
            raise ConfigError(f"{source}: {where}: duplicate graph name {g['name']!r}", key=f"{where}.name")
        names.add(str(g["name"]))
        out.append({"name": str(g["name"]), "generate": dict(g["generate"])})
    return {"description": str(cfg.get("description") or ""),
            "repeat": _count(cfg.get("repeat", 3), 1, f"{source}: 'repeat'"),
            "warmup": _count(cfg.get("warmup", 1), 0, f"{source}: 'warmup'"),
            "methods": _methods(cfg.get("methods", METHODS), f"{source}: 'methods'"),
            "graphs": out}


def _select(graphs, only):
    wanted = [s.strip() for s in only.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in {g["name"] for g in graphs}]
    if unknown:
        raise ConfigError(f"--only: no graph named {', '.join(unknown)}; the graphs are "
                          f"{', '.join(g['name'] for g in graphs)}", key="only")
    return [g for g in graphs if g["name"] in wanted]


def _lazy_graph(spec):
    from mst_dist.generators import generate

    params = dict(spec)
    return generate(params.pop("kind"), **params)


def _engine_run(spec, client):
    """One engine run on a graph generated on the workers: its seconds and statistics."""
    from mst_dist.api import minimum_spanning_forest

    graph = _lazy_graph(spec)
    t0 = time.perf_counter()
    res = minimum_spanning_forest(graph, client)
    seconds = time.perf_counter() - t0
    st = res.stats
    return {"seconds": seconds, "total_weight": _plain(res.total_weight), "forest_edges": int(res.n_forest_edges),
            "rounds": st.n_rounds, "phases": st.phase_totals(), "setup_seconds": st.setup_seconds,
            "solve_seconds": st.solve_seconds, "finish_seconds": st.finish_seconds,
            "bytes_moved": int(st.bytes_moved), "streamed": bool(st.streamed), "backend": st.backend}


def _scipy_run(arrays):
    """One scipy run from arrays: CSR built without summing parallel edges, then the forest."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.csgraph import minimum_spanning_tree

    src, dst, w, n = arrays
    t0 = time.perf_counter()
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    # csr_matrix((w, (i, j))) would add up parallel edges' weights: build CSR from its own arrays
    A = sp.csr_matrix((w[order].astype(np.float64), dst[order], indptr), shape=(n, n))
    T = minimum_spanning_tree(A)
    seconds = time.perf_counter() - t0
    total = float(T.sum())
    return {"seconds": seconds, "total_weight": int(round(total)) if w.dtype.kind in "iub" else total,
            "forest_edges": int(T.nnz)}


def _plain(x):
    return x.item() if hasattr(x, "item") else x


def _summary(runs):
    secs = [r["seconds"] for r in runs]
    best = min(runs, key=lambda r: r["seconds"])
    return {"min_seconds": min(secs), "median_seconds": statistics.median(secs), "best": best}


def _cluster_info(client):
    info = client.scheduler_info(**({"n_workers": -1} if "n_workers" in _params(client.scheduler_info) else {}))
    workers = info.get("workers", {})
    return {"address": info.get("address"), "workers": len(workers),
            "threads": sum(w.get("nthreads", 0) for w in workers.values()),
            "memory_limit_bytes": sum(w.get("memory_limit") or 0 for w in workers.values())}


def _params(fn):
    import inspect

    return inspect.signature(fn).parameters


def run(cfg, out_dir, *, client=None, log=None):
    """Run a validated graphs config on ``client``; writes ``bench.json`` and ``bench.md`` in ``out_dir``.

    Parameters
    ----------
    cfg : dict
        What :func:`validate_graphs_config` returns.
    out_dir : path
        Created if needed.
    client : distributed.Client, optional
        The cluster to measure (default: the current client, inside a task
        the worker's; else an embedded cluster started here; ``"embedded"``:
        that one even where a current client exists).
    log : callable, optional
        Progress lines (default: none).

    Returns
    -------
    dict
        What ``bench.json`` holds (``all_agree``: whether the engine and
        scipy found the same total weight and forest size on every graph),
        plus ``"markdown"``: the table.
    """
    import contextlib

    from mst_dist.environment import machine_info, versions

    log = log or (lambda msg: None)
    os.makedirs(out_dir, exist_ok=True)
    with contextlib.ExitStack() as stack:
        from mst_dist.deploy.current import choose, using
        from mst_dist.deploy.local import embedded

        # the package's one client rule; without a current client, an embedded cluster of its own
        client = stack.enter_context(using(choose(client), embedded=embedded))
        report = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_info(),
                  "versions": versions(), "cluster": _cluster_info(client), "config": cfg, "graphs": []}
        for g in cfg["graphs"]:
            lazy = _lazy_graph(g["generate"])
            entry = {"name": g["name"], "generate": g["generate"], "n": int(lazy.n_vertices),
                     "m": int(lazy.n_edges), "methods": {}}
            log(f"== {g['name']}: {g['generate']} (n={entry['n']:,}, m={entry['m']:,})")
            arrays = None
            if "scipy" in cfg["methods"]:
                import numpy as np

                src, dst, w = lazy.to_arrays()  # on the client, not timed
                arrays = (np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(w), entry["n"])
            del lazy
            runs = {m: [] for m in cfg["methods"]}
            for i in range(cfg["warmup"] + cfg["repeat"]):
                for m in cfg["methods"]:
                    rec = _engine_run(g["generate"], client) if m == "engine" else _scipy_run(arrays)
                    if i >= cfg["warmup"]:
                        runs[m].append(rec)
                    which = "warm-up" if i < cfg["warmup"] else f"run {i - cfg['warmup'] + 1}"
                    log(f"   {m} {which}: {rec['seconds']:.3f} s")
            del arrays
            for m, rs in runs.items():
                entry["methods"][m] = {"runs": rs, **_summary(rs)}
            answers = {m: (v["best"]["total_weight"], v["best"]["forest_edges"]) for m, v in entry["methods"].items()}
            entry["agree"] = len(set(answers.values())) <= 1
            if not entry["agree"]:
                log(f"   MISMATCH {g['name']}: " + ", ".join(f"{m}: weight {a[0]}, {a[1]} edges"
                                                            for m, a in answers.items()))
            report["graphs"].append(entry)
    report["all_agree"] = all(g["agree"] for g in report["graphs"])
    md = format_table(report)
    with open(os.path.join(out_dir, "bench.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, default=str)
    with open(os.path.join(out_dir, "bench.md"), "w", encoding="utf-8") as f:
        f.write(md)
    report["markdown"] = md
    return report


def _fmt_s(x):
    if x is None:
        return "–"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def _fmt_n(x):
    return f"{x / 1e9:.2f}G" if x >= 1e9 else f"{x / 1e6:.1f}M" if x >= 1e6 else f"{x / 1e3:.0f}k" if x >= 1e3 \
        else str(int(x))


def format_table(report):
    """The markdown report: the cluster, then one row per graph."""
    from mst_dist.result import PHASES

    mi, cl, v, cfg = report["machine"], report["cluster"], report["versions"], report["config"]
    lines = ["# mst-dist bench", "", *([cfg["description"], ""] if cfg.get("description") else []),
             f"Client machine: {mi.get('cpu_model')}, {mi.get('cpu_count')} CPUs; Python {mi.get('python')}; "
             + ", ".join(f"{k} {v[k]}" for k in ("mst_dist", "numpy", "numba", "dask", "distributed", "scipy")
                         if v.get(k)) + ".  ",
             f"Cluster: {cl['workers']} worker(s), {cl['threads']} thread(s)"
             + (f", {cl['memory_limit_bytes'] / 2**30:.1f} GiB memory limit in all" if cl["memory_limit_bytes"]
                else "") + f".  Runs: {cfg['warmup']} warm-up + {cfg['repeat']} timed per method.", "",
             "engine: `minimum_spanning_forest` on the graph generated on the workers, seconds from the call to "
             "the forest in hand, min of the runs (median in brackets); the other columns are the best run's: "
             "phase seconds summed over its rounds, setup (generating and preparing the chunks), finish (labels "
             "and the forest's rows), bytes moved between workers."
             + ("  scipy: CSR build + `minimum_spanning_tree` from arrays on the client." if "scipy" in
                cfg["methods"] else ""), ""]
    hdr = ["graph", "n", "m"]
    if "engine" in cfg["methods"]:
        hdr += ["engine s", "edges/s", "rounds", *PHASES, "setup s", "finish s", "bytes moved"]
    if "scipy" in cfg["methods"]:
        hdr += ["scipy s"]
    if len(cfg["methods"]) > 1:
        hdr += ["agree"]
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
    for g in report["graphs"]:
        M = g["methods"]
        cells = [g["name"], _fmt_n(g["n"]), _fmt_n(g["m"])]
        if "engine" in M:
            e, b = M["engine"], M["engine"]["best"]
            cells += [f"{_fmt_s(e['min_seconds'])} ({_fmt_s(e['median_seconds'])})",
                      _fmt_n(g["m"] / e["min_seconds"]) if e["min_seconds"] > 0 else "–", str(b["rounds"]),
                      *(_fmt_s(b["phases"].get(p, 0.0)) for p in PHASES),
                      _fmt_s(b["setup_seconds"]), _fmt_s(b["finish_seconds"]), f"{b['bytes_moved'] / 1e6:.1f} MB"]
        if "scipy" in M:
            cells.append(f"{_fmt_s(M['scipy']['min_seconds'])} ({_fmt_s(M['scipy']['median_seconds'])})")
        if len(M) > 1:
            cells.append("yes" if g["agree"] else "**NO**")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def build_parser(parser=None):
    """The arguments of ``mst-dist bench``, on ``parser`` (the subcommand's) or a parser of its own."""
    p = parser or argparse.ArgumentParser(
        prog="python -m mst_dist.bench",
        description="Measure the engine on generated graphs on this machine or a running cluster: "
                    "seconds, edges/s, each phase's seconds and the bytes moved (scipy beside it, if installed).")
    p.add_argument("config", nargs="?", default=None,
                   help="graphs file (YAML: repeat, warmup, methods, graphs); default: er, grid2000 and rmat20")
    p.add_argument("--out", default="bench-out", help="output folder for bench.json and bench.md")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per method (default: 3, or the file's)")
    p.add_argument("--only", default=None, help="comma-separated graph names to run")
    p.add_argument("--methods", default=None,
                   help=f"comma-separated subset of {', '.join(METHODS)} (default: both, scipy if installed)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="measure a running cluster (tcp://host:8786) instead of the embedded default")
    p.add_argument("--no-strict", action="store_true", help=argparse.SUPPRESS)
    return p


def _stderr(msg):
    print(msg, file=sys.stderr, flush=True)


def run_args(args):
    """Run ``mst-dist bench`` from parsed arguments; returns the exit status (0, 1 or 2)."""
    try:
        if args.no_strict:
            raise ConfigError(f"--no-strict: mst-dist bench compares only the engine and scipy, which must "
                              f"agree; {MOVED} --no-strict", key="no_strict")
        if args.config:
            import yaml

            with open(args.config, encoding="utf-8") as f:
                cfg = validate_graphs_config(yaml.safe_load(f), source=args.config)
            explicit = True
        else:
            cfg = validate_graphs_config({"graphs": [dict(g) for g in DEFAULT_GRAPHS]})
            explicit = False
        if args.methods is not None:
            cfg["methods"] = _methods(args.methods, "--methods")
            explicit = True
        if "scipy" in cfg["methods"]:
            try:
                import scipy  # noqa: F401
            except ImportError:
                if explicit:
                    raise ConfigError("scipy is not installed: pip install 'mst-dist[bench]', or leave it out "
                                      "of the methods", key="methods") from None
                cfg["methods"] = [m for m in cfg["methods"] if m != "scipy"]
        if args.repeat is not None:
            cfg["repeat"] = _count(args.repeat, 1, "--repeat")
        if args.only:
            cfg["graphs"] = _select(cfg["graphs"], args.only)
        client = None
        if args.scheduler:
            from mst_dist.deploy.clusters import connect_client

            client = connect_client(args.scheduler, None, "--scheduler")
        try:
            report = run(cfg, args.out, client=client, log=_stderr)
        finally:
            if client is not None:
                client.close()
    except (ValueError, OSError) as exc:
        _stderr(f"error: {exc}")
        return 2
    print(report["markdown"])
    bad = [g["name"] for g in report["graphs"] if not g["agree"]]
    if bad:
        _stderr(f"error: the engine and scipy disagree on {', '.join(bad)} (see {args.out}/bench.json)")
        return 1
    return 0


def cli(argv=None):
    """``python -m mst_dist.bench``: :func:`run_args` on ``argv``."""
    return run_args(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(cli())

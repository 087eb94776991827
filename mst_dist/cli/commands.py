"""The ``mst-dist`` command line.

``mst-dist run CONFIG`` runs a run config (YAML, see ``configs/``);
``mst-dist run --generate KIND --scale 20 ...`` runs a generated graph without
one.  Flags given with a config override its keys.  The summary and per-round
table go to stdout (or the JSON run report with ``--json``); logs go to stderr,
and on a terminal a live progress line (round, phase, components, edges left,
elapsed; off with ``--quiet`` or when stdout is not a terminal).
``--report PATH`` writes the JSON run report, ``--plot PATH`` the rounds'
figures (``.html``, or ``.png`` through headless Chromium).

``mst-dist submit --scheduler tcp://HOST:8786 CONFIG`` runs on a cluster that
is already up; input files are read by its workers, from paths they can see.
``mpirun -n 4 mst-dist run --mpi CONFIG`` runs on the ranks of an MPI job
(dask-mpi).  ``mst-dist job-script CONFIG`` prints the batch script a
``slurm``/``pbs`` config would submit.  A bad config, a bad graph, or
``--backend gpu`` where no worker can run the GPU kernels exits with status 2
and a one-line error.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

__all__ = ["main", "build_parser", "run_config_from_args", "build_graph", "make_client", "report",
           "print_summary"]

logger = logging.getLogger("mst_dist.cli")

#: Generator parameters the command line takes: flag dest -> (parameter, type, help).
_GEN_FLAGS = {
    "scale": ("scale", int, "rmat: log2 of the number of vertices"),
    "edge_factor": ("edge_factor", int, "rmat: edges per vertex (default 16)"),
    "n": ("n", int, "erdos_renyi, gnp, circulant, random_geometric, ssca2: number of vertices"),
    "m": ("m", int, "erdos_renyi: number of edges"),
    "p": ("p", float, "gnp: edge probability"),
    "d": ("d", int, "circulant: neighbours per side; hypercube: dimension"),
    "rows": ("rows", int, "grid: rows"),
    "cols": ("cols", int, "grid: columns"),
    "g": ("g", int, "caveman, connected_caveman: number of cliques"),
    "k": ("k", int, "caveman, connected_caveman: clique size"),
    "radius": ("radius", float, "random_geometric: connection radius in the unit square"),
    "max_clique": ("max_clique", int, "ssca2: largest clique (default n ** (1/3))"),
    "inter": ("inter", int, "ssca2: inter-clique edges per vertex (default 1)"),
    "seed": ("seed", int, "generator seed (default 0)"),
    "weights": ("weights", str, "generated weights: int or float (default int)"),
    "wmin": ("wmin", float, "smallest generated weight (default 1)"),
    "wmax": ("wmax", float, "largest generated weight (default 1000)"),
}


def _local_finish(text):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or an integer, got {text!r}") from None


def _number(text):
    """An int when the text is one (so integer weights stay integers), else a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _add_run_arguments(r, submit=False):
    r.add_argument("config", nargs="?", metavar="CONFIG", help="run config (YAML), see configs/")

    g = r.add_argument_group("graph (a file or a generated graph; overrides the config's graph)")
    g.add_argument("--input", metavar="PATH",
                   help="read the graph from a file, a glob or a directory (edge list, .gr, .mtx, "
                        ".npz, npy directory, .egr, Parquet; see mst_dist.read)")
    g.add_argument("--input-format", metavar="FORMAT",
                   help="the input's format (default: from its name): edgelist, gr, mtx, npz, npy, "
                        "egr, parquet")
    g.add_argument("--generate", metavar="KIND",
                   help="generator: erdos_renyi, gnp, circulant, grid, hypercube, caveman, "
                        "connected_caveman, rmat, random_geometric, ssca2")
    for dest, (_, typ, helptext) in _GEN_FLAGS.items():
        flag = "--" + dest.replace("_", "-")
        if dest in ("wmin", "wmax"):
            typ = _number
        g.add_argument(flag, dest=dest, type=typ, default=None, metavar=dest.upper(), help=helptext)

    e = r.add_argument_group("engine")
    e.add_argument("--partitions", type=int, metavar="P", help="edge chunks (default: auto)")
    e.add_argument("--local-finish", type=_local_finish, metavar="EDGES",
                   help="finish in one task below this many edges ('auto' or an integer)")
    e.add_argument("--backend", choices=("cpu", "auto", "gpu"),
                   help="compute backend: auto (CuPy kernels on the GPU workers, Numba on the others; "
                        "the default), cpu (Numba everywhere) or gpu (CuPy on GPU workers: needs "
                        "workers with resources GPU=1 and pip install 'mst-dist[gpu]')")

    o = r.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="PATH",
                   help="write the forest (edge_id, src, dst, weight) to a .parquet, .csv or .npz")
    o.add_argument("--format", choices=("parquet", "csv", "npz"),
                   help="output format (default: from the extension)")

    c = r.add_argument_group("cluster")
    if submit:
        c.add_argument("--scheduler", metavar="ADDRESS",
                       help="the running scheduler (tcp://host:8786); default: the config's "
                            "cluster.address")
    else:
        c.add_argument("--workers", type=int, metavar="W", help="local cluster: number of workers")
        c.add_argument("--threads", type=int, metavar="T", help="local cluster: threads per worker")
        c.add_argument("--processes", action=argparse.BooleanOptionalAction, default=None,
                       help="local cluster: workers as processes (default: threads of this process)")
        c.add_argument("--scheduler", metavar="ADDRESS",
                       help="connect to a running scheduler (tcp://host:8786) instead of a local cluster")
        c.add_argument("--mpi", action="store_true",
                       help="run on the ranks of this MPI job (mpirun -n 4 mst-dist run --mpi CONFIG): "
                            "rank 0 the scheduler, rank 1 the run, the others workers (dask-mpi)")

    d = r.add_argument_group("report")
    d.add_argument("--json", action="store_true",
                   help="print the JSON run report (config, versions, cluster, stats, timings, "
                        "summary) instead of tables")
    d.add_argument("--report", metavar="PATH", help="write the JSON run report to PATH")
    d.add_argument("--plot", metavar="PATH",
                   help="draw the rounds to PATH: .html (standalone) or .png (needs chromium)")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress or info logs")
    d.add_argument("-v", "--verbose", action="store_true", help="debug logs, Dask's logs too")


def build_parser():
    p = argparse.ArgumentParser(
        prog="mst-dist",
        description="Minimum spanning forests of very large graphs on a Dask cluster.",
    )
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser(
        "run",
        help="compute a minimum spanning forest",
        description="Compute the minimum spanning forest of a run config's graph, or of a "
                    "generated one (--generate). Flags override the config's keys.",
    )
    _add_run_arguments(r)

    s = sub.add_parser(
        "submit",
        help="compute a minimum spanning forest on a running cluster",
        description="Run a run config on a Dask cluster that is already up (--scheduler "
                    "tcp://HOST:8786, or the config's cluster.address). Input files are read by "
                    "the cluster's workers: give paths they can see.",
    )
    _add_run_arguments(s, submit=True)

    gn = sub.add_parser(
        "generate",
        help="write a generated graph to a file",
        description="Generate a graph (chunk by chunk) and write it in any format mst_dist.read "
                    "reads: mst-dist generate rmat --scale 20 -o g.parquet. The format comes "
                    "from the extension (.txt .csv .gr .mtx .npz .egr .parquet; a name without "
                    "extension or ending in / is a directory of Parquet part files).",
    )
    gn.add_argument("kind", metavar="KIND",
                    help="erdos_renyi, gnp, circulant, grid, hypercube, caveman, connected_caveman, "
                         "rmat, random_geometric, ssca2")
    for dest, (_, typ, helptext) in _GEN_FLAGS.items():
        gn.add_argument("--" + dest.replace("_", "-"), dest=dest, default=None, metavar=dest.upper(),
                        type=_number if dest in ("wmin", "wmax") else typ, help=helptext)
    gn.add_argument("-o", "--output", required=True, metavar="PATH", help="the file or directory to write")
    gn.add_argument("--format", metavar="FORMAT",
                    help="edgelist, csv, gr, mtx, npz, npy, egr, parquet (default: from the name)")
    gn.add_argument("--both-directions", action="store_true",
                    help="gr: write every edge as two arcs, as the DIMACS road networks do")
    gn.add_argument("--scheduler", metavar="ADDRESS",
                    help="generate on the workers of a running scheduler (tcp://host:8786)")
    gn.add_argument("-q", "--quiet", action="store_true", help="no info logs")
    gn.add_argument("-v", "--verbose", action="store_true", help="debug logs")

    j = sub.add_parser(
        "job-script",
        help="print the batch script a slurm or pbs run config would submit",
        description="Render the job script dask-jobqueue would submit for a run config whose "
                    "cluster.kind is slurm or pbs (nothing is submitted).",
    )
    j.add_argument("config", metavar="CONFIG", help="run config (YAML) with cluster.kind slurm or pbs")

    from mst_dist.bench import build_parser as _bench_parser

    b = sub.add_parser(
        "bench",
        help="benchmark the engine against scipy and rustworkx",
        description="Run a benchmark config (configs/bench-cpu.yaml): the engine on its embedded "
                    "default, its kernels without Dask, scipy and rustworkx, side by side in this "
                    "process; writes bench.json and bench.md.",
    )
    _bench_parser(b)
    return p


def run_config_from_args(args):
    """The validated run config: the config file's keys, overridden by the flags.

    For ``submit`` the cluster must be an address (``--scheduler`` or the
    config's), and input paths are checked on the workers, not here.
    """
    from mst_dist.cli import runconfig
    from mst_dist.config import ConfigError

    submit = getattr(args, "command", None) == "submit"

    raw = runconfig.read_run_config(args.config) if args.config else {}
    raw = dict(raw)
    gen_params = {param: getattr(args, dest) for dest, (param, _, _) in _GEN_FLAGS.items()
                  if getattr(args, dest) is not None}
    if args.input is not None:
        if args.generate is not None or gen_params:
            raise ConfigError("--input and --generate (or generator flags): give one graph")
        raw["graph"] = {"input": args.input}
    elif args.generate is not None:
        raw["graph"] = {"generate": {"kind": args.generate, **gen_params}}
    elif gen_params:
        graph = raw.get("graph")
        if not (isinstance(graph, dict) and isinstance(graph.get("generate"), dict)):
            flags = ", ".join("--" + k.replace("_", "-") for k in gen_params)
            raise ConfigError(f"{flags}: only with a generated graph (--generate KIND, "
                              f"or a config with graph.generate)")
        raw["graph"] = {"generate": {**graph["generate"], **gen_params}}
    elif "graph" not in raw:
        raise ConfigError("no graph: give a run config (mst-dist run CONFIG), an input "
                          "(mst-dist run --input PATH) or a generator "
                          "(mst-dist run --generate KIND ...)")
    if args.input_format is not None:
        graph = raw.get("graph")
        if not (isinstance(graph, dict) and "input" in graph):
            raise ConfigError("--input-format: only with an input file (--input PATH, or a "
                              "config with graph.input)")
        raw["graph"] = {**graph, "format": args.input_format}
    for key, value in (("partitions", args.partitions), ("local_finish", args.local_finish),
                       ("backend", args.backend)):
        if value is not None:
            raw[key] = value
    if args.output is not None:
        raw["output"] = {"path": args.output}
    if args.format is not None:
        if not isinstance(raw.get("output"), dict):
            raise ConfigError("--format: only with an output (--output PATH)")
        raw["output"] = {**raw["output"], "format": args.format}
    if args.scheduler is not None:
        raw["cluster"] = {"kind": "address", "address": args.scheduler}
    if getattr(args, "mpi", False):
        if args.scheduler is not None:
            raise ConfigError("--mpi and --scheduler: give one (--mpi starts its own scheduler)")
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        raw["cluster"] = cluster if cluster.get("kind") == "mpi" else {"kind": "mpi"}
    local = {k: v for k, v in (("n_workers", getattr(args, "workers", None)),
                               ("threads_per_worker", getattr(args, "threads", None)),
                               ("processes", getattr(args, "processes", None))) if v is not None}
    if local:
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        raw["cluster"] = {**cluster, **local}
    if submit:
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        if cluster.get("kind") != "address":
            raise ConfigError("submit runs on a cluster that is already up: give its scheduler "
                              "(mst-dist submit --scheduler tcp://HOST:8786 CONFIG) or set "
                              "cluster.kind: address and cluster.address in the config",
                              key="cluster.kind")
        return runconfig.validate_run_config(raw, source=args.config, check_paths=False)
    return runconfig.validate_run_config(raw, source=args.config)


def build_graph(cfg):
    """The :class:`~mst_dist.Graph` a validated run config names."""
    from mst_dist.config import ConfigError
    from mst_dist.graph import InvalidGraphError

    spec = cfg["graph"]
    if "generate" in spec:
        from mst_dist.generators import generate

        params = dict(spec["generate"])
        kind = params.pop("kind")
        try:
            return generate(kind, **params)
        except ValueError as e:
            raise ConfigError(f"graph.generate: {e}", key="graph.generate") from None
    from mst_dist.io.readers import read

    path = spec["input"]
    try:
        return read(path, spec.get("format"), n_vertices=cfg["n_vertices"],
                    **spec.get("options", {}))
    except FileNotFoundError as e:
        raise ConfigError(f"graph.input: {e}", key="graph.input") from None
    except InvalidGraphError:
        raise
    except (TypeError, ValueError) as e:  # a reader option the format does not take
        raise ConfigError(f"graph: {e}", key="graph.options") from None


def make_client(cluster, gpu=False):
    """``(client, close)`` for a validated ``cluster`` section (every kind).

    Kind ``local`` gives an in-process cluster (:func:`mst_dist.deploy.local.embedded`;
    unchanged defaults: the engine's embedded default, one worker; with
    ``gpu`` its workers are GPU workers on this machine's device);
    ``address`` a client of that scheduler; ``local-cuda``, ``slurm``,
    ``pbs``, ``mpi`` the clusters of :mod:`mst_dist.deploy`.  ``close()``
    releases what was made here (never a remote cluster).  On the MPI ranks
    that serve as scheduler or workers the client is ``None``, once the run is
    over.
    """
    import contextlib

    from mst_dist.deploy import open_cluster

    stack = contextlib.ExitStack()
    try:
        client = stack.enter_context(open_cluster(cluster, gpu=gpu))
    except BaseException:
        stack.close()
        raise
    return client, stack.close


def _engine_kwargs(cfg, progress):
    """The keyword arguments of :func:`~mst_dist.minimum_spanning_forest` for a run config.

    The backend goes through as given: the engine decides whether the cluster
    can run it (``gpu`` without GPU workers is its :class:`~mst_dist.GPUUnavailableError`,
    which :func:`main` reports as a one-line error).
    """
    return {"partitions": cfg["partitions"], "local_finish": cfg["local_finish"],
            "backend": cfg["backend"], "progress": progress}


def _local_gpu(cfg):
    """Kind ``local``: whether its in-process workers get this machine's GPU.

    As the engine's embedded default does: with backend ``auto`` or ``gpu``
    where CuPy can run on a device here (or ``mst.gpu.array-module`` is the
    ``numpy`` stand-in).  ``gpu`` where it cannot is an error before any
    cluster starts, saying why and how to install the extra.
    """
    if cfg["cluster"]["kind"] != "local":
        return False
    from mst_dist.deploy.local import local_gpu

    return local_gpu(cfg["backend"])


def _progress(event):
    logger.info("round %s %-6s %12s components %14s edges  (%.2fs)",
                event.get("round"), event.get("phase"), f"{event.get('components', 0):,}",
                f"{event.get('edges', 0):,}", event.get("elapsed", 0.0))


def _versions():
    from mst_dist.cli.report import versions

    return versions()


def report(cfg, result, wall_seconds, output=None, cluster=None):
    """The JSON run report of a run (a dict); see :func:`mst_dist.cli.report.run_report`."""
    from mst_dist.cli.report import run_report

    return run_report(cfg, result, wall_seconds, output, cluster)


def _seconds(s):
    return f"{s:.3f}"


def print_summary(result, wall_seconds, output=None, console=None):
    """The run's summary and per-round table, with rich."""
    from dask.utils import format_bytes
    from rich.console import Console
    from rich.table import Table

    from mst_dist.result import PHASES

    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=200)  # a file or a pipe: don't fold the table
    s = result.summary()
    st = result.stats
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(justify="right")
    rows = [
        ("vertices", f"{s['vertices']:,}"),
        ("edges", f"{s['edges']:,}"),
        ("forest edges", f"{s['forest_edges']:,}"),
        ("total weight", f"{s['total_weight']:,}" if isinstance(s["total_weight"], int)
         else repr(s["total_weight"])),
        ("components", f"{s['components']:,}"),
        ("rounds", f"{s['rounds']}"),
        ("engine time", f"{st.total_seconds:.3f} s (setup {st.setup_seconds:.3f}, "
                        f"rounds {st.solve_seconds:.3f}, finish {st.finish_seconds:.3f})"),
        ("wall time", f"{wall_seconds:.3f} s"),
        ("cluster", f"{st.workers} worker(s), {st.threads} thread(s), {st.partitions} partition(s)"),
        ("kernels", {"cpu": "CPU (Numba)", "gpu": "GPU (CuPy)", "mixed": "CPU (Numba) and GPU (CuPy)"}
         .get(st.backend, st.backend)),
    ]
    device = bool(st.h2d_bytes or st.d2h_bytes)
    if device:
        rows.append(("host ↔ device", f"{format_bytes(st.h2d_bytes)} to, {format_bytes(st.d2h_bytes)} from "
                                      "the GPUs"))
    for w, p in sorted(st.placement.items()):
        rows.append((f"chunks on {w}", f"{p['chunks']} ({p['edges']:,} edges), {p['kind'].upper()}, "
                                       f"throughput {p['throughput']:,.3g}"))
    if output:
        rows.append(("forest written to", output))
    for k, v in rows:
        head.add_row(k, v)
    console.print(head)

    t = Table(title="rounds", title_justify="left", show_edge=False, header_style="bold")
    for col in ("round", "mode", "components", "edges", "forest"):
        t.add_column(col, justify="left" if col == "mode" else "right")
    for p in PHASES:
        t.add_column(f"{p} s", justify="right")
    for col in ("wall s", "overhead s", "moved") + (("to GPU", "from GPU") if device else ()):
        t.add_column(col, justify="right")
    for r in st.rounds:
        ps = r.phase_seconds
        t.add_row(
            str(r.round), r.mode,
            f"{r.components_before:,} → {r.components_after:,}",
            f"{r.edges_before:,} → {r.edges_after:,}",
            f"{r.forest_edges:,}",
            *[_seconds(ps[p]) if p in ps else "-" for p in PHASES],
            _seconds(r.wall_seconds),
            _seconds(r.wall_seconds - sum(ps.values())),
            format_bytes(r.bytes_moved),
            *((format_bytes(r.h2d_bytes), format_bytes(r.d2h_bytes)) if device else ()),
        )
    tot = st.phase_totals()
    t.add_section()
    t.add_row("total", "", "", "", f"{s['forest_edges']:,}",
              *[_seconds(tot.get(p, 0.0)) for p in PHASES],
              _seconds(sum(r.wall_seconds for r in st.rounds)), _seconds(st.overhead_seconds),
              format_bytes(st.bytes_moved),
              *((format_bytes(st.h2d_bytes), format_bytes(st.d2h_bytes)) if device else ()))
    console.print(t)


def _setup_logging(quiet, verbose, console=None):
    from rich.console import Console
    from rich.logging import RichHandler

    handler = RichHandler(console=console or Console(stderr=True), show_path=False,
                          log_time_format="[%X]")
    handler.setFormatter(logging.Formatter("%(message)s"))
    pkg = logging.getLogger("mst_dist")
    pkg.handlers[:] = [handler]
    pkg.propagate = False
    pkg.setLevel(logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO))
    if not verbose:
        # LocalCluster's start-up chatter; warnings still show.
        for name in ("distributed", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(logging.WARNING)


def _live_progress(args, console):
    """The live progress display, or ``None``: only on a terminal, never with --quiet."""
    if args.quiet or not sys.stdout.isatty() or not console.is_terminal:
        return None
    from mst_dist.diagnostics.progress import LiveProgress

    return LiveProgress(console=console)


def _visible(path):
    import glob

    return os.path.exists(path) or bool(glob.glob(path))


def _check_inputs_on_workers(client, cfg):
    """``submit``: the workers read the input; each must see its path."""
    from mst_dist.config import ConfigError

    path = cfg["graph"].get("input")
    if path is None:
        return
    seen = client.run(_visible, path)
    blind = sorted(w for w, ok in seen.items() if not ok)
    if blind:
        raise ConfigError(f"graph.input: {path!r} is not visible on {len(blind)} of {len(seen)} worker(s) "
                          f"({', '.join(blind[:3])}{', ...' if len(blind) > 3 else ''}); the workers read "
                          "the input: give a path on a filesystem they share", key="graph.input")


def _check_report_paths(args):
    from mst_dist.config import ConfigError
    from mst_dist.cli.report import plot_format

    for flag, path in (("--report", args.report), ("--plot", args.plot)):
        if path is None:
            continue
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise ConfigError(f"{flag}: directory {directory!r} does not exist")
    if args.plot is not None:
        try:
            plot_format(args.plot)
        except ValueError as e:
            raise ConfigError(f"--plot: {e}") from None


def _run(args, console=None):
    import contextlib

    import dask.config

    from mst_dist import minimum_spanning_forest
    from mst_dist.cli import report as rpt
    from mst_dist.cli.runconfig import run_settings
    from mst_dist.io.writers import write_forest

    t0 = time.perf_counter()
    cfg = run_config_from_args(args)
    _check_report_paths(args)
    submit = args.command == "submit"
    live = _live_progress(args, console) if console is not None else None
    kwargs = _engine_kwargs(cfg, live or (None if args.quiet else _progress))
    # a generated graph is only a recipe: check it before starting a cluster
    graph = build_graph(cfg) if "generate" in cfg["graph"] else None
    client, close = make_client(cfg["cluster"], gpu=_local_gpu(cfg))
    try:
        if client is None:
            return 0  # an MPI rank that served as the scheduler or a worker: the run is over
        if graph is None:
            # an input file: read by the cluster's workers (mst_dist.read scans and loads there)
            if submit:
                _check_inputs_on_workers(client, cfg)
            graph = build_graph(cfg)
        logger.info("graph %s: %s vertices, %s edges", graph.name, f"{graph.n_vertices:,}",
                    f"{graph.n_edges:,}")
        shape = rpt.cluster_shape(client, cfg["cluster"]["kind"])
        if shape.get("dashboard"):
            logger.info("MST dashboard page: %s", shape["dashboard"])
        # the run config's engine settings (placement) hold for this run only
        with dask.config.set(run_settings(cfg)), live if live is not None else contextlib.nullcontext():
            result = minimum_spanning_forest(graph, client, **kwargs)
    finally:
        close()
    output = None
    if cfg["output"] is not None:
        output = write_forest(result, cfg["output"]["path"], cfg["output"]["format"])
        logger.info("wrote %s forest edges to %s", f"{result.n_forest_edges:,}", output)
    wall = time.perf_counter() - t0
    rep = rpt.run_report(cfg, result, wall, output, shape)
    if args.report:
        logger.info("wrote the run report to %s", rpt.write_report(rep, args.report))
    if args.plot:
        try:
            logger.info("wrote the rounds' plot to %s", rpt.write_plot(result, args.plot, graph.name))
        except (ImportError, RuntimeError) as e:
            logger.error("%s", e)
            return 1
    if args.json:
        sys.stdout.write(rpt.dumps(rep))
        sys.stdout.write("\n")
    else:
        print_summary(result, wall, output)
    return 0


def _generate(args):
    """``mst-dist generate KIND ... -o PATH``: a generated graph written with :func:`write_graph`."""
    from mst_dist.cli.runconfig import validate_run_config
    from mst_dist.config import ConfigError
    from mst_dist.io.writers import write_graph

    params = {param: getattr(args, dest) for dest, (param, _, _) in _GEN_FLAGS.items()
              if getattr(args, dest) is not None}
    cfg = validate_run_config({"graph": {"generate": {"kind": args.kind, **params}}})
    opts = {"both_directions": True} if args.both_directions else {}
    client = None
    if args.scheduler is not None:
        from distributed import Client

        client = Client(args.scheduler)
    t0 = time.perf_counter()
    try:
        graph = build_graph(cfg)
        path = write_graph(graph, args.output, args.format, client=client, **opts)
    except (ValueError, TypeError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"generate: {e}") from None
    finally:
        if client is not None:
            client.close()
    print(f"wrote {graph.name}: {graph.n_vertices:,} vertices, {graph.n_edges:,} edges to {path} "
          f"in {time.perf_counter() - t0:.2f} s")
    return 0


def _job_script(args):
    from mst_dist.cli.runconfig import load_run_config
    from mst_dist.config import ConfigError
    from mst_dist.deploy.jobqueue import job_cluster

    cfg = load_run_config(args.config)
    if cfg["cluster"]["kind"] not in ("slurm", "pbs"):
        raise ConfigError(f"{args.config}: cluster.kind: job-script needs kind 'slurm' or 'pbs', "
                          f"got {cfg['cluster']['kind']!r}", key="cluster.kind", source=args.config)
    with job_cluster(cfg["cluster"]) as cluster:
        print(cluster.job_script())
    return 0


def main(argv=None):
    """Entry point of ``mst-dist``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from mst_dist import __version__

        print(f"mst-dist {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "job-script":
        args.quiet, args.verbose = True, False
    if args.command == "bench":
        from mst_dist.bench import cli as bench_cli

        forwarded = [args.config, "--out", args.out]
        for flag, value in (("--repeat", args.repeat), ("--only", args.only), ("--methods", args.methods)):
            if value is not None:
                forwarded += [flag, str(value)]
        if args.no_strict:
            forwarded.append("--no-strict")
        return bench_cli(forwarded)
    from rich.console import Console

    console = Console(stderr=True)
    _setup_logging(args.quiet, args.verbose, console)
    from mst_dist.config import ConfigError
    from mst_dist.graph import InvalidGraphError
    from mst_dist.kernels.gpu import GPUUnavailableError

    try:
        if args.command == "job-script":
            return _job_script(args)
        if args.command == "generate":
            return _generate(args)
        return _run(args, console)
    except (ConfigError, InvalidGraphError, GPUUnavailableError) as e:
        # GPUUnavailableError: backend gpu where no worker can run it (the message says what to install)
        message = " ".join(str(e).split("\n"))
        print(f"mst-dist: error: {message}", file=sys.stderr)
        return 2
    except ImportError as e:  # an optional dependency of the chosen cluster kind
        print(f"mst-dist: error: {e}", file=sys.stderr)
        return 2
    except TimeoutError as e:  # no workers came (cluster.wait_timeout)
        print(f"mst-dist: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mst-dist: interrupted", file=sys.stderr)
        return 130


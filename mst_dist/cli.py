"""The ``mst-dist`` command line.

``mst-dist run CONFIG`` runs a run config (YAML, see ``configs/``);
``mst-dist run --generate KIND --scale 20 ...`` runs a generated graph without
one.  Flags given with a config override its keys.  The summary and per-round
table go to stdout (or a JSON report with ``--json``), progress and logs to
stderr.  A bad config or a bad graph exits with status 2 and a one-line error.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

__all__ = ["main", "build_parser", "run_config_from_args", "build_graph", "make_client", "report"]

logger = logging.getLogger("mst_dist.cli")

#: Generator parameters the command line takes: flag dest -> (parameter, type, help).
_GEN_FLAGS = {
    "scale": ("scale", int, "rmat: log2 of the number of vertices"),
    "edge_factor": ("edge_factor", int, "rmat: edges per vertex (default 16)"),
    "n": ("n", int, "erdos_renyi, gnp, circulant: number of vertices"),
    "m": ("m", int, "erdos_renyi: number of edges"),
    "p": ("p", float, "gnp: edge probability"),
    "d": ("d", int, "circulant: neighbours per side; hypercube: dimension"),
    "rows": ("rows", int, "grid: rows"),
    "cols": ("cols", int, "grid: columns"),
    "g": ("g", int, "caveman, connected_caveman: number of cliques"),
    "k": ("k", int, "caveman, connected_caveman: clique size"),
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
    r.add_argument("config", nargs="?", metavar="CONFIG", help="run config (YAML), see configs/")

    g = r.add_argument_group("graph (a generated graph; overrides the config's graph)")
    g.add_argument("--generate", metavar="KIND",
                   help="generator: erdos_renyi, gnp, circulant, grid, hypercube, caveman, "
                        "connected_caveman, rmat")
    for dest, (_, typ, helptext) in _GEN_FLAGS.items():
        flag = "--" + dest.replace("_", "-")
        if dest in ("wmin", "wmax"):
            typ = _number
        g.add_argument(flag, dest=dest, type=typ, default=None, metavar=dest.upper(), help=helptext)

    e = r.add_argument_group("engine")
    e.add_argument("--partitions", type=int, metavar="P", help="edge chunks (default: auto)")
    e.add_argument("--local-finish", type=_local_finish, metavar="EDGES",
                   help="finish in one task below this many edges ('auto' or an integer)")
    e.add_argument("--backend", choices=("cpu", "auto", "gpu"), help="compute backend")

    o = r.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="PATH",
                   help="write the forest (edge_id, src, dst, weight) to a .parquet, .csv or .npz")
    o.add_argument("--format", choices=("parquet", "csv", "npz"),
                   help="output format (default: from the extension)")

    c = r.add_argument_group("cluster")
    c.add_argument("--workers", type=int, metavar="W", help="local cluster: number of workers")
    c.add_argument("--threads", type=int, metavar="T", help="local cluster: threads per worker")
    c.add_argument("--processes", action=argparse.BooleanOptionalAction, default=None,
                   help="local cluster: workers as processes (default: threads of this process)")
    c.add_argument("--scheduler", metavar="ADDRESS",
                   help="connect to a running scheduler (tcp://host:8786) instead of a local cluster")

    d = r.add_argument_group("report")
    d.add_argument("--json", action="store_true",
                   help="print a JSON report (config, versions, summary, stats) instead of tables")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress or info logs")
    d.add_argument("-v", "--verbose", action="store_true", help="debug logs, Dask's logs too")
    return p


def run_config_from_args(args):
    """The validated run config: the config file's keys, overridden by the flags."""
    from . import config as mconfig

    raw = mconfig.read_run_config(args.config) if args.config else {}
    raw = dict(raw)
    gen_params = {param: getattr(args, dest) for dest, (param, _, _) in _GEN_FLAGS.items()
                  if getattr(args, dest) is not None}
    if args.generate is not None:
        raw["graph"] = {"generate": {"kind": args.generate, **gen_params}}
    elif gen_params:
        graph = raw.get("graph")
        if not (isinstance(graph, dict) and isinstance(graph.get("generate"), dict)):
            flags = ", ".join("--" + k.replace("_", "-") for k in gen_params)
            raise mconfig.ConfigError(f"{flags}: only with a generated graph (--generate KIND, "
                                      f"or a config with graph.generate)")
        raw["graph"] = {"generate": {**graph["generate"], **gen_params}}
    elif "graph" not in raw:
        raise mconfig.ConfigError("no graph: give a run config (mst-dist run CONFIG) "
                                  "or a generator (mst-dist run --generate KIND ...)")
    for key, value in (("partitions", args.partitions), ("local_finish", args.local_finish),
                       ("backend", args.backend)):
        if value is not None:
            raw[key] = value
    if args.output is not None:
        raw["output"] = {"path": args.output}
    if args.format is not None:
        if not isinstance(raw.get("output"), dict):
            raise mconfig.ConfigError("--format: only with an output (--output PATH)")
        raw["output"] = {**raw["output"], "format": args.format}
    if args.scheduler is not None:
        raw["cluster"] = {"kind": "address", "address": args.scheduler}
    local = {k: v for k, v in (("n_workers", args.workers), ("threads_per_worker", args.threads),
                               ("processes", args.processes)) if v is not None}
    if local:
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        raw["cluster"] = {**cluster, **local}
    return mconfig.validate_run_config(raw, source=args.config)


def build_graph(cfg):
    """The :class:`~mst_dist.Graph` a validated run config names."""
    from .config import ConfigError
    from .graph import Graph, InvalidGraphError

    spec = cfg["graph"]
    if "generate" in spec:
        from .generators import generate

        params = dict(spec["generate"])
        kind = params.pop("kind")
        try:
            return generate(kind, **params)
        except ValueError as e:
            raise ConfigError(f"graph.generate: {e}", key="graph.generate") from None
    path = spec["input"]
    import zipfile

    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            missing = {"src", "dst"} - names
            extra = names - {"src", "dst", "weight"}
            if missing or extra:
                raise InvalidGraphError(
                    f"{path}: an .npz graph holds arrays src, dst and optionally weight; "
                    + (f"missing {', '.join(sorted(missing))}" if missing else "")
                    + ("; " if missing and extra else "")
                    + (f"unexpected {', '.join(sorted(extra))}" if extra else ""),
                    source=path)
            src, dst = z["src"], z["dst"]
            weight = z["weight"] if "weight" in names else None
    except InvalidGraphError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise InvalidGraphError(f"{path}: cannot read as .npz: {e}", source=path) from None
    try:
        return Graph.from_arrays(src, dst, weight, n_vertices=cfg["n_vertices"],
                                 name=os.path.basename(path))
    except InvalidGraphError as e:
        raise InvalidGraphError(f"{path}: {e}", edge=e.edge, source=path) from None


def make_client(cluster):
    """``(client, close)`` for a validated ``cluster`` section.

    Kind ``local`` with nothing changed from the defaults gives ``None``: the
    engine starts its embedded default cluster itself.  Kind ``local`` with
    workers, threads, processes or the dashboard set gives a cluster of that
    shape (:func:`mst_dist.cluster.embedded`, one worker unless told);
    kind ``address`` a client of that scheduler.  ``close()`` releases what
    was made here (never a remote cluster).
    """
    import contextlib

    if cluster["kind"] == "address":
        from distributed import Client

        logger.info("connecting to the scheduler at %s", cluster["address"])
        client = Client(cluster["address"])
        return client, client.close
    shape = {"n_workers": cluster["n_workers"], "threads_per_worker": cluster["threads_per_worker"],
             "processes": cluster["processes"], "dashboard_address": cluster["dashboard_address"]}
    if shape == _EMBEDDED_DEFAULT:
        return None, lambda: None
    from .cluster import embedded

    if shape["n_workers"] is None:
        shape["n_workers"] = 1
    stack = contextlib.ExitStack()
    client = stack.enter_context(embedded(**shape))
    return client, stack.close


#: A local cluster section equal to this is the engine's embedded default.
_EMBEDDED_DEFAULT = {"n_workers": None, "threads_per_worker": None, "processes": False,
                     "dashboard_address": "127.0.0.1:0"}


def _engine_kwargs(cfg, progress):
    import inspect

    from . import api
    from .config import ConfigError

    kw = {"partitions": cfg["partitions"], "local_finish": cfg["local_finish"], "progress": progress}
    supported = getattr(api, "BACKENDS", ("cpu", "auto"))
    if cfg["backend"] not in supported:
        raise ConfigError(f"backend: {cfg['backend']!r} is not supported by this version of "
                          f"mst-dist; use one of: {', '.join(supported)}", key="backend")
    if "backend" in inspect.signature(api.minimum_spanning_forest).parameters:
        kw["backend"] = cfg["backend"]
    return kw


def _progress(event):
    logger.info("round %s %-6s %12s components %14s edges  (%.2fs)",
                event.get("round"), event.get("phase"), f"{event.get('components', 0):,}",
                f"{event.get('edges', 0):,}", event.get("elapsed", 0.0))


def _versions():
    import dask
    import distributed
    import numba
    import numpy

    from . import __version__

    return {"mst_dist": __version__, "numpy": numpy.__version__, "numba": numba.__version__,
            "dask": dask.__version__, "distributed": distributed.__version__,
            "python": sys.version.split()[0]}


def _jsonable(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def report(cfg, result, wall_seconds, output=None):
    """The JSON report of a run (a dict)."""
    return {
        "config": cfg,
        "versions": _versions(),
        "summary": result.summary(),
        "stats": result.stats.to_dict(),
        "wall_seconds": wall_seconds,
        "output": output,
    }


def _seconds(s):
    return f"{s:.3f}"


def print_summary(result, wall_seconds, output=None, console=None):
    """The run's summary and per-round table, with rich."""
    from dask.utils import format_bytes
    from rich.console import Console
    from rich.table import Table

    from .result import PHASES

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
    ]
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
    for col in ("wall s", "overhead s", "moved"):
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
        )
    tot = st.phase_totals()
    t.add_section()
    t.add_row("total", "", "", "", f"{s['forest_edges']:,}",
              *[_seconds(tot.get(p, 0.0)) for p in PHASES],
              _seconds(sum(r.wall_seconds for r in st.rounds)), _seconds(st.overhead_seconds),
              format_bytes(st.bytes_moved))
    console.print(t)


def _setup_logging(quiet, verbose):
    from rich.console import Console
    from rich.logging import RichHandler

    handler = RichHandler(console=Console(stderr=True), show_path=False, log_time_format="[%X]")
    handler.setFormatter(logging.Formatter("%(message)s"))
    pkg = logging.getLogger("mst_dist")
    pkg.handlers[:] = [handler]
    pkg.propagate = False
    pkg.setLevel(logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO))
    if not verbose:
        # LocalCluster's start-up chatter; warnings still show.
        for name in ("distributed", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(logging.WARNING)


def _run(args):
    from . import minimum_spanning_forest
    from .io import write_forest

    t0 = time.perf_counter()
    cfg = run_config_from_args(args)
    kwargs = _engine_kwargs(cfg, None if args.quiet else _progress)
    graph = build_graph(cfg)
    logger.info("graph %s: %s vertices, %s edges", graph.name, f"{graph.n_vertices:,}", f"{graph.n_edges:,}")
    client, close = make_client(cfg["cluster"])
    try:
        result = minimum_spanning_forest(graph, client, **kwargs)
    finally:
        close()
    output = None
    if cfg["output"] is not None:
        output = write_forest(result, cfg["output"]["path"], cfg["output"]["format"])
        logger.info("wrote %s forest edges to %s", f"{result.n_forest_edges:,}", output)
    wall = time.perf_counter() - t0
    if args.json:
        json.dump(report(cfg, result, wall, output), sys.stdout, indent=2, default=_jsonable)
        sys.stdout.write("\n")
    else:
        print_summary(result, wall, output)
    return 0


def main(argv=None):
    """Entry point of ``mst-dist``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from . import __version__

        print(f"mst-dist {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    _setup_logging(args.quiet, args.verbose)
    from .config import ConfigError
    from .graph import InvalidGraphError

    try:
        return _run(args)
    except (ConfigError, InvalidGraphError) as e:
        message = " ".join(str(e).split("\n"))
        print(f"mst-dist: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mst-dist: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

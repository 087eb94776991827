"""The ``mst-dist`` commands (``run``, ``submit``, ``generate``, ``job-script``) and :func:`main`.

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

import logging
import os
import sys
import time

from mst_dist import errors
from mst_dist.cli.parser import build_parser, generator_params, run_config_from_args
from mst_dist.cli.summary import print_summary
from mst_dist.errors import (CheckpointMismatchError, ClusterStalledError, ConfigError, GPUUnavailableError,
                             InvalidGraphError, MSTError, SharedStorageError)
from mst_dist.phases import Phase

__all__ = ["main", "build_parser", "run_config_from_args", "build_graph", "make_client", "print_summary",
           "EXITS", "exit_for"]

logger = logging.getLogger("mst_dist.cli")


def _one_line(exc):
    """``mst-dist: error: MESSAGE``, a message of several lines joined into one."""
    return "mst-dist: error: " + " ".join(str(exc).split("\n"))


def _said(exc):
    """``mst-dist: error: MESSAGE``, the message as it is."""
    return f"mst-dist: error: {exc}"


def _interrupted(exc):
    """``mst-dist: interrupted`` (Ctrl-C)."""
    return "mst-dist: interrupted"


#: How a command that raised ends: ``(exception classes, exit status, the line printed on stderr)``.
#: The first row whose classes the error is an instance of decides; an error of no row is a bug,
#: and its traceback shows.  A task that raised on a worker matches as it would here: Dask
#: re-raises the task's own exception, of its own class, on the client.
EXITS = (
    # the request is wrong: a run config or flag, the graph or its file, backend gpu where no
    # worker can run it (the message says what to install), a checkpoint of another run, a path
    # the workers do not share
    ((ConfigError, InvalidGraphError, GPUUnavailableError, CheckpointMismatchError, SharedStorageError), 2,
     _one_line),
    ((ImportError,), 2, _said),            # an optional dependency of the chosen cluster kind
    ((ClusterStalledError,), 1, _said),    # no worker could go on (mst.stall-timeout), or a task killed them
    ((ConnectionError,), 1, _said),        # no scheduler answered (cluster.connect-timeout); a loopback worker
    ((TimeoutError,), 1, _said),           # no workers came (cluster.wait_timeout)
    ((MSTError,), 1, _one_line),           # any other error mst-dist raises on purpose
    ((KeyboardInterrupt,), 130, _interrupted),
)


def exit_for(exc):
    """``(exit status, line for stderr)`` of a command that raised ``exc`` (:data:`EXITS`), or ``None``.

    >>> exit_for(ConfigError("cluster.n_workers: expected int, got 'x'"))
    (2, "mst-dist: error: cluster.n_workers: expected int, got 'x'")
    >>> exit_for(KeyboardInterrupt())
    (130, 'mst-dist: interrupted')
    >>> exit_for(ZeroDivisionError("a bug")) is None
    True
    """
    for classes, status, line in EXITS:
        if isinstance(exc, classes):
            return status, line(exc)
    return None


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
                    storage_options=cfg.get("storage_options"), **spec.get("options", {}))
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


def _engine_spec(cfg, progress):
    """The :class:`~mst_dist.engine.spec.RunSpec` of a validated run config.

    The backend goes through as given: the engine decides whether the cluster
    can run it (``gpu`` without GPU workers is its :class:`~mst_dist.GPUUnavailableError`,
    which :func:`main` reports as a one-line error).
    """
    from mst_dist.engine.spec import RunSpec

    ck = cfg.get("checkpoint") or {}
    return RunSpec.build(partitions=cfg["partitions"], local_finish=cfg["local_finish"], backend=cfg["backend"],
                         stream=cfg["stream"], vertex_partition=cfg["vertex_partition"], progress=progress, checkpoint=ck.get("path"),
                         resume=ck.get("resume", True), storage_options=cfg.get("storage_options"))


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
    if event.get("phase") == Phase.COMPILE:
        from mst_dist.diagnostics.progress import format_event

        logger.info("%s", format_event(event))
        return
    if event.get("phase") == Phase.PASS:
        from dask.utils import format_bytes

        logger.info("%-8s %6s of %s chunks %14s read  (%.2fs)", event.get("pass"),
                    f"{event.get('chunks_done', 0):,}", f"{event.get('chunks_total', 0):,}",
                    format_bytes(event.get("bytes_read", 0)), event.get("elapsed", 0.0))
        return
    from mst_dist.diagnostics.progress import phase_label

    logger.info("round %s %-6s %12s components %14s edges  (%.2fs)",
                event.get("round"), phase_label(event), f"{event.get('components', 0):,}",
                f"{event.get('edges', 0):,}", event.get("elapsed", 0.0))


def _log_level(args):
    """The level of mst-dist's logs: ``--log-level``, else ``-q`` (errors), ``-v`` (info), ``-vv`` (debug).

    By default warnings and errors only: what a run does step by step is the
    live progress line's, and the summary's, to say.
    """
    level = getattr(args, "log_level", None)
    if level:
        return getattr(logging, level.upper())
    if getattr(args, "quiet", False):
        return logging.ERROR
    verbose = int(getattr(args, "verbose", 0) or 0)
    return logging.DEBUG if verbose >= 2 else (logging.INFO if verbose else logging.WARNING)


def _under_mpi():
    """Whether this process is a rank of an MPI job (the launchers' environment)."""
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK"))


class EngineErrorFilter(logging.Filter):
    """Drops Dask's per-task "Compute Failed" reports of errors the command line reports itself.

    A bad line in an input file fails every load task that reads it; the
    run's error (one line, exit status 2) says what and where once, so the
    worker logger's traceback per chunk is noise.  Records of other tasks,
    and of errors of other classes than ``classes`` (or their subclasses),
    pass.
    """

    def __init__(self, classes):
        super().__init__()
        self.classes = tuple(classes)

    def filter(self, record):
        if not str(record.msg).startswith("Compute Failed") or not isinstance(record.args, tuple):
            return True
        args = record.args
        key = str(args[0]) if args else ""
        cls = _error_class(str(args[3]) if len(args) > 3 else "")
        return not ("mst-" in key and cls is not None and issubclass(cls, self.classes))


def _error_class(text):
    """The class of :mod:`mst_dist.errors` that a failed task's exception text is of, or ``None``.

    Dask's worker logs a failed task's exception as text only (its ``repr``,
    ``GraphFormatError('g.txt, line 4: ...')``), never the exception itself:
    the class is the one of :mod:`mst_dist.errors` the text is a constructor
    call of.  Other exceptions (of Python, of other libraries) give ``None``.
    """
    name = text.partition("(")[0].strip()
    return getattr(errors, name) if name in errors.__all__ else None


def _reported_errors():
    """The classes of mst-dist's errors that :func:`main` reports as one line (:data:`EXITS`), subclasses included."""
    return tuple(c for classes, _, _ in EXITS for c in classes if issubclass(c, MSTError))


def quiet_engine_errors():
    """Install :class:`EngineErrorFilter` on this process's Dask worker logger (idempotent)."""
    log = logging.getLogger("distributed.worker")
    if not any(isinstance(f, EngineErrorFilter) for f in log.filters):
        log.addFilter(EngineErrorFilter(_reported_errors()))


def _setup_logging(args, console=None):
    """mst-dist's log handler: rich on a terminal; plain lines otherwise.

    Plain lines (a pipe, a file, or an MPI rank) carry Dask's own log format
    (``distributed.admin.log-format``), so under ``mpirun`` the ranks' Dask
    logs and ours read alike; no colour codes, no folding at 80 columns.
    """
    import dask.config
    from rich.console import Console

    console = console or Console(stderr=True)
    level = _log_level(args)
    if console.is_terminal and not _under_mpi():
        from rich.logging import RichHandler

        handler = RichHandler(console=console, show_path=False, log_time_format="[%X]")
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(dask.config.get(
            "distributed.admin.log-format", "%(asctime)s - %(name)s - %(levelname)s - %(message)s")))
    pkg = logging.getLogger("mst_dist")
    pkg.handlers[:] = [handler]
    pkg.propagate = False
    pkg.setLevel(level)
    if level > logging.DEBUG:
        # LocalCluster's start-up chatter; warnings still show.  -q: Dask's own errors (a worker's
        # traceback, a lost connection) are left to the one-line error mst-dist prints itself
        import distributed  # noqa: F401  (importing it configures Dask's loggers: set them after)

        dask_level = logging.CRITICAL if level >= logging.ERROR else max(level, logging.WARNING)
        for name in ("distributed", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(dask_level)
        # Dask's dashboard allows websocket origins "*", of which Bokeh warns at every start; the
        # dashboards mst-dist starts listen on loopback, and -vv still shows the warning
        logging.getLogger("bokeh.server.util").setLevel(max(dask_level, logging.ERROR))
    quiet_engine_errors()


def _pause_shown(live):
    """What a :class:`~mst_dist.diagnostics.progress.PauseMonitor` calls: the live line shows the paused
    workers while they are paused; without one, the first pause is one log line."""
    from mst_dist.diagnostics.progress import format_pause

    if live is not None:
        return live.pause
    told = []

    def log_once(pause):
        if pause is not None and not told:
            told.append(pause)
            logger.warning("%s (Dask's memory manager)", format_pause(pause))

    return log_once


def _live_progress(args, console):
    """The live progress display, or ``None``: only on a terminal, never with --quiet or on an MPI rank."""
    if args.quiet or not sys.stdout.isatty() or not console.is_terminal or _under_mpi():
        return None
    from mst_dist.diagnostics.progress import LiveProgress

    return LiveProgress(console=console)


def _visible(path):
    import glob

    from mst_dist.io import urls

    if urls.is_url(path):  # the workers reach an object store themselves
        return True
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


def _check_report_paths(args, cfg=None):
    """Every file the run will write, checked writable before any work (a trial file in its directory)."""
    from mst_dist.config import ConfigError
    from mst_dist.cli.report import plot_format
    from mst_dist.io.writers import check_writable

    paths = [("--report", args.report), ("--plot", args.plot)]
    if cfg is not None and cfg.get("output") is not None:
        paths.insert(0, ("--output", cfg["output"]["path"]))
    for flag, path in paths:
        if path is None:
            continue
        try:
            check_writable(path, flag, cfg.get("storage_options") if cfg is not None else None)
        except OSError as e:
            raise ConfigError(str(e), key=flag) from None
    if args.plot is not None:
        try:
            plot_format(args.plot)
        except ValueError as e:
            raise ConfigError(f"--plot: {e}") from None
        import importlib.util

        if importlib.util.find_spec("bokeh") is None:  # checked before the run, not after it
            raise ConfigError(f"--plot {args.plot}: the plot is drawn with Bokeh, which is not installed; "
                              "install it with: pip install 'mst-dist[dashboard]'")


def _check_clustering_flags(args):
    """``--linkage``, ``--clusters``, ``--clusters-output``: consistent, and their files writable, before any work."""
    from mst_dist.config import ConfigError
    from mst_dist.io.writers import check_writable

    if getattr(args, "clusters_output", None) is not None and getattr(args, "clusters", None) is None:
        raise ConfigError("--clusters-output: only with --clusters THRESHOLD", key="--clusters-output")
    for flag, path in (("--linkage", getattr(args, "linkage", None)),
                       ("--clusters-output", getattr(args, "clusters_output", None))):
        if path is not None:
            try:
                check_writable(path, flag)
            except OSError as e:
                raise ConfigError(str(e), key=flag) from None


def _write_clustering(args, result):
    """The single-linkage matrix (``--linkage``) and the flat clusters (``--clusters``) of the forest.

    Returns ``{"threshold", "clusters", "output"}`` for ``--clusters`` (the
    report's ``clusters`` entry), else ``None``.
    """
    import numpy as np

    if getattr(args, "linkage", None) is not None:
        np.save(args.linkage, result.linkage(), allow_pickle=False)
        logger.info("wrote the single-linkage matrix to %s", args.linkage)
    if getattr(args, "clusters", None) is not None:
        labels = result.clusters(threshold=args.clusters)
        if args.clusters_output is not None:
            np.save(args.clusters_output, labels, allow_pickle=False)
            logger.info("wrote the clusters to %s", args.clusters_output)
        return {"threshold": args.clusters, "clusters": int(labels.max()) + 1 if labels.shape[0] else 0,
                "output": args.clusters_output}
    return None


def _run(args, console=None):
    import contextlib

    import dask.config

    from mst_dist.api import solve
    from mst_dist.cli import memorylogs
    from mst_dist.cli import report as rpt
    from mst_dist.diagnostics.progress import PauseMonitor
    from mst_dist.cli.runconfig import run_settings
    from mst_dist.io.writers import write_forest

    t0 = time.perf_counter()
    cfg = run_config_from_args(args)
    _check_report_paths(args, cfg)
    _check_clustering_flags(args)
    submit = args.command == "submit"
    live = _live_progress(args, console) if console is not None else None
    spec = _engine_spec(cfg, live or (None if args.quiet else _progress))
    # a generated graph is only a recipe: check it before starting a cluster
    graph = build_graph(cfg) if "generate" in cfg["graph"] else None
    gpu = _local_gpu(cfg)
    if cfg["cluster"]["kind"] == "local" and not gpu and cfg["backend"] != "gpu":
        # local workers share this machine's kernel cache: fill it first, as a step
        from mst_dist.deploy.local import as_processes
        from mst_dist.engine.warmup import ensure_compiled

        n_workers = cfg["cluster"].get("n_workers") or 1

        with live if live is not None else contextlib.nullcontext():
            # a generated graph's kernels are loaded now too when the workers will be this
            # process's threads: loading them is then part of the cluster's start, not of round 0
            ensure_compiled(None if graph is None else graph.weight_dtype, progress=spec.progress,
                            parts=("local",) if n_workers == 1 else ("local", "rounds"),
                            load=graph is not None and not as_processes(n_workers, cfg["cluster"].get("processes")))
    client, close = make_client(cfg["cluster"], gpu=gpu)
    try:
        if client is None:
            return 0  # an MPI rank that served as the scheduler or a worker: the run is over
        if cfg["cluster"]["kind"] in ("local", "local-cuda"):
            # worker processes started here (restarted ones too) log as this process does
            client.register_plugin(memorylogs.WorkerLogFilters(also=quiet_engine_errors),
                                   name=memorylogs.WorkerLogFilters.name)
        memorylogs.install()
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
        with dask.config.set(run_settings(cfg)), live if live is not None else contextlib.nullcontext(), \
                PauseMonitor(client, _pause_shown(live)):
            if getattr(args, "maximum", False):
                from mst_dist.api import _negated, _unnegated

                result = _unnegated(solve(_negated(graph), client, spec), graph)
            else:
                result = solve(graph, client, spec)
    finally:
        if client is not None:
            local = cfg["cluster"]["kind"] in ("local", "local-cuda")  # where the workers count too
            said = memorylogs.summary(memorylogs.cluster_counts(client if local else None))
            if said:
                logger.warning(said)
        close()
    output = None
    if cfg["output"] is not None:
        output = write_forest(result, cfg["output"]["path"], cfg["output"]["format"],
                              storage_options=cfg.get("storage_options"))
        logger.info("wrote %s forest edges to %s", f"{result.n_forest_edges:,}", output)
    flat = _write_clustering(args, result)
    wall = time.perf_counter() - t0
    rep = rpt.run_report(cfg, result, wall, output, shape)
    if flat is not None:
        rep["clusters"] = flat
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
        from rich.console import Console

        # an MPI rank's output is forwarded by mpirun (maybe through a pseudo-terminal): plain text
        plain = Console(width=1000, color_system=None, force_terminal=False) if _under_mpi() else None
        print_summary(result, wall, output, console=plain, wide=args.wide)
        if flat is not None:
            print(f"{flat['clusters']:,} clusters at threshold {flat['threshold']:g}"
                  + (f" (labels in {flat['output']})" if flat["output"] else ""))
    return 0


def _warmup(args):
    """``mst-dist warmup``: every CPU kernel, the engine's and the clustering layer's (and with ``--gpu`` the
    GPU ones), compiled into the cache now."""
    from mst_dist.engine import warmup

    if args.gpu:
        from mst_dist import config
        from mst_dist.kernels import GPU_INSTALL_HINT, GPUUnavailableError, ready

        ok, reason = ready("gpu", config.get("gpu.array-module", None, "cupy"))
        if not ok:
            hint = "" if GPU_INSTALL_HINT in reason else f"; install the GPU extra: {GPU_INSTALL_HINT}"
            raise GPUUnavailableError(f"warmup --gpu: this machine cannot run the GPU kernels: {reason}{hint}")
    from mst_dist.clustering import warmup as clustering_warmup

    parts = tuple(warmup.PARTS)
    fresh = not (all(warmup.kernels_cached(k, p) for k in ("int64", "float64") for p in parts)
                 and clustering_warmup.kernels_cached())
    t0 = time.perf_counter()
    warmup.ensure_compiled(None, parts=parts)
    clustering_warmup.ensure_compiled()  # after the engine's: HDBSCAN runs the engine
    if args.gpu:
        warmup.warm((), gpu=True)
    secs = time.perf_counter() - t0
    if not args.quiet:
        done = f"kernels compiled in {secs:.1f} s" if fresh else "kernels already compiled"
        print(f"{done}; Numba's cache: {warmup.cache_dir()}")
    return 0


def _generate(args):
    """``mst-dist generate KIND ... -o PATH``: a generated graph written with :func:`write_graph`."""
    from mst_dist.cli.runconfig import validate_run_config
    from mst_dist.config import ConfigError
    from mst_dist.io.writers import write_graph

    cfg = validate_run_config({"graph": {"generate": {"kind": args.kind, **generator_params(args)}}})
    opts = {"both_directions": True} if args.both_directions else {}
    client = None
    if args.scheduler is not None:
        from mst_dist.deploy._core import check_address_security, security_of
        from mst_dist.deploy.clusters import connect_client

        section = {"ca_file": args.tls_ca_file, "cert": args.tls_cert, "key": args.tls_key,
                   "require_encryption": args.require_encryption}
        try:
            security = security_of(section)
        except ValueError as e:
            raise ConfigError(f"--tls-*: {e}") from None
        check_address_security(args.scheduler, security, where="--scheduler")
        client = connect_client(args.scheduler, security, "--scheduler")
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
    from mst_dist.deploy.jobqueue import job_script

    cfg = load_run_config(args.config)
    if cfg["cluster"]["kind"] not in ("slurm", "pbs"):
        raise ConfigError(f"{args.config}: cluster.kind: job-script needs kind 'slurm' or 'pbs', "
                          f"got {cfg['cluster']['kind']!r}", key="cluster.kind", source=args.config)
    print(job_script(cfg["cluster"]))  # rendered without starting a scheduler
    return 0


def main(argv=None):
    """Entry point of ``mst-dist``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from mst_dist._version import __version__

        print(f"mst-dist {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "job-script":
        args.quiet, args.verbose, args.log_level = True, 0, None
    if args.command == "bench":
        from mst_dist.bench import run_args

        return run_args(args)  # the subcommand's arguments are mst_dist.bench's own
    from rich.console import Console

    console = Console(stderr=True, **({"color_system": None, "force_terminal": False} if _under_mpi() else {}))
    _setup_logging(args, console)
    try:
        if args.command == "job-script":
            return _job_script(args)
        if args.command == "generate":
            return _generate(args)
        if args.command == "warmup":
            return _warmup(args)
        return _run(args, console)
    except BaseException as e:  # what EXITS has no row for raises again, untouched
        outcome = exit_for(e)
        if outcome is None:
            raise
        status, line = outcome
        print(line, file=sys.stderr)
        for command in _advised(e, args, sys.argv[1:] if argv is None else argv):
            print(f"  try: {command}", file=sys.stderr)
        return status


def _advised(exc, args, argv):
    """The commands that follow a refusal's advice (:mod:`mst_dist.cli.advice`): ``run`` only, cluster
    shapes only on the local cluster it starts."""
    from mst_dist.errors import GraphTooLargeError

    if not isinstance(exc, GraphTooLargeError) or args.command != "run":
        return []
    from mst_dist.cli.advice import advised_commands

    from distributed.system import MEMORY_LIMIT

    try:
        cluster = run_config_from_args(args)["cluster"]
    except ConfigError:
        cluster = {"kind": None}
    return advised_commands(exc.advice, argv, cluster["kind"] == "local", machine=MEMORY_LIMIT,
                            n_workers=cluster.get("n_workers") or 1)


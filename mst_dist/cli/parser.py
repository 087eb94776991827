"""The ``mst-dist`` arguments, and the run config they describe.

:func:`build_parser` is the parser of every command; :func:`run_config_from_args`
turns the arguments of ``run`` and ``submit`` into a validated run config (the
config file's keys, overridden by the flags).
"""
from __future__ import annotations

import argparse

from mst_dist.config import BACKENDS, STREAM_MODES
from mst_dist.engine.spec import VERTEX_PARTITION_MODES
from mst_dist.generators import GENERATORS, parameters, shared_parameters
from mst_dist.io.formats import FOREST_FORMATS

__all__ = ["build_parser", "run_config_from_args", "generator_params"]

# --------------------------------------------------------------------------
# Generator flags (--generate KIND, mst-dist generate KIND)
# --------------------------------------------------------------------------

def _number(text):
    """An int when the text is one (so integer weights stay integers), else a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)


#: Argument type of each generator parameter type (see :class:`mst_dist.generators.Param`).
_FLAG_TYPES = {"int": int, "float": float, "number": _number, "str": str}


def _flag_help(p):
    text = p.help.rstrip(".")
    text = text[:1].lower() + text[1:]
    if not p.required and p.default is not None and "default" not in text:
        text += f" (default {p.default})"
    return text


def _generator_flags():
    """Generator parameters the command line takes: flag dest -> (parameter, type, help).

    One flag per parameter name of the generators' registry
    (:func:`mst_dist.generators.parameters`); its help names the families that
    take it, with their own description of it.
    """
    uses = {}
    for kind in GENERATORS:
        for p in parameters(kind):
            if not p.shared:
                uses.setdefault(p.name, []).append((kind, p))
    flags = {}
    for name, pairs in uses.items():
        texts = {}
        for kind, p in pairs:
            texts.setdefault(_flag_help(p), []).append(kind)
        helptext = "; ".join(f"{', '.join(kinds)}: {text}" for text, kinds in texts.items())
        flags[name] = (name, _FLAG_TYPES[pairs[0][1].type], helptext)
    for p in shared_parameters():
        flags[p.name] = (p.name, _FLAG_TYPES[p.type], "generator: " + _flag_help(p))
    return flags


#: Generator parameters the command line takes: flag dest -> (parameter, type, help).
_GEN_FLAGS = _generator_flags()


def _add_generator_arguments(group):
    """The generator's parameters as flags (``--scale``, ``--n``, ``--seed``, ...), all unset by default."""
    for dest, (_, typ, helptext) in _GEN_FLAGS.items():
        group.add_argument("--" + dest.replace("_", "-"), dest=dest, default=None, metavar=dest.upper(),
                           type=typ, help=helptext)


def generator_params(args):
    """The generator parameters the flags gave: ``{parameter: value}``, unset ones left out."""
    return {param: getattr(args, dest) for dest, (param, _, _) in _GEN_FLAGS.items()
            if getattr(args, dest) is not None}


# --------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------

def _local_finish(text):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or an integer, got {text!r}") from None


def _memory_limit(text):
    """``--memory-limit``: the text as given, once :func:`~mst_dist.deploy.memory_limit_value` accepts it."""
    from mst_dist.deploy import memory_limit_value

    try:
        memory_limit_value(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _storage_options(text):
    """``--storage-options``: a JSON object."""
    import json

    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r} ({e})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object ({{...}}), got {type(value).__name__} {text!r}")
    return value


_LOG_LEVELS = ("debug", "info", "warning", "error")


def _add_log_arguments(group, quiet_help):
    """``-q``, ``-v`` (``-vv``) and ``--log-level``: what the command logs (default: warnings and errors)."""
    group.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
    group.add_argument("-v", "--verbose", action="count", default=0,
                       help="info logs (what the run does, step by step); -vv: debug logs, Dask's too")
    group.add_argument("--log-level", choices=_LOG_LEVELS, type=str.lower, metavar="LEVEL",
                       help=f"the level of mst-dist's logs: {', '.join(_LOG_LEVELS)} (default: warning; "
                            "overrides -q and -v)")


def _add_tls_arguments(t):
    """``--tls-ca-file``, ``--tls-cert``, ``--tls-key``, ``--require-encryption`` (``dask worker``'s names)."""
    t.add_argument("--tls-ca-file", metavar="PEM", help="the certificate authority that signed the cluster's "
                                                        "certificates (cluster.security.ca_file)")
    t.add_argument("--tls-cert", metavar="PEM", help="this side's certificate (cluster.security.cert)")
    t.add_argument("--tls-key", metavar="PEM", help="its private key (cluster.security.key)")
    t.add_argument("--require-encryption", action=argparse.BooleanOptionalAction, default=None,
                   help="refuse unencrypted connections (cluster.security.require_encryption; default: on "
                        "with certificates); a local cluster without certificates makes temporary ones")


def _add_run_arguments(r, submit=False):
    r.add_argument("config", nargs="?", metavar="CONFIG", help="run config (YAML), see configs/")

    g = r.add_argument_group("graph (a file or a generated graph; overrides the config's graph)")
    g.add_argument("--input", metavar="PATH",
                   help="read the graph from a file, a glob or a directory (edge list, .gr, .mtx, "
                        ".npz, npy directory, .egr, Parquet; see mst_dist.read)")
    g.add_argument("--input-format", metavar="FORMAT",
                   help="the input's format (default: from its name): edgelist, gr, mtx, npz, npy, "
                        "egr, parquet")
    g.add_argument("--dedupe-directions", action=argparse.BooleanOptionalAction, default=None,
                   help="gr, mtx, egr: keep one arc of each pair (u < v) of a file that lists every edge "
                        "both ways (graph.options.dedupe_directions; default: off for gr and mtx, which "
                        "then read both directions as parallel edges, on for egr)")
    g.add_argument("--allow-empty", action="store_true", default=None,
                   help="an input without edges gives the empty forest with a warning (default: an error; "
                        "graph.options.allow_empty)")
    g.add_argument("--generate", metavar="KIND", help="generator: " + ", ".join(GENERATORS))
    _add_generator_arguments(g)

    e = r.add_argument_group("engine")
    e.add_argument("--partitions", type=int, metavar="P", help="edge chunks (default: auto)")
    e.add_argument("--local-finish", type=_local_finish, metavar="EDGES",
                   help="finish in one task below this many edges ('auto' or an integer)")
    e.add_argument("--backend", choices=BACKENDS,
                   help="compute backend: auto (CuPy kernels on the GPU workers, Numba on the others; "
                        "the default), cpu (Numba everywhere) or gpu (CuPy on GPU workers: needs "
                        "workers with resources GPU=1 and pip install 'mst-dist[gpu]')")
    e.add_argument("--maximum", action="store_true",
                   help="the maximum spanning forest (heaviest edges first; ties: the edge given first)")
    e.add_argument("--stream", choices=STREAM_MODES,
                   help="stream the edges from their source in passes: auto (when the graph would not "
                        "fit in the workers' memory; the default, or mst.stream), always, never")
    e.add_argument("--vertex-partition", choices=VERTEX_PARTITION_MODES,
                   help="cut the per-vertex state into ranges spread over the workers: auto (on a cluster "
                        "of several workers, when it would not fit one; the default, or "
                        "mst.vertex-partition), always, never")

    o = r.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="PATH",
                   help="write the forest (edge_id, src, dst, weight) to a .parquet, .csv or .npz")
    o.add_argument("--format", choices=FOREST_FORMATS,
                   help="output format (default: from the extension)")
    o.add_argument("--linkage", metavar="PATH",
                   help="write the forest's single-linkage hierarchy to PATH (.npy): SciPy's (n-1) x 4 "
                        "linkage matrix, for scipy.cluster.hierarchy (dendrogram, fcluster, ...)")
    o.add_argument("--clusters", type=float, metavar="THRESHOLD",
                   help="flat clusters: vertices joined by forest edges of weight <= THRESHOLD "
                        "(scipy's fcluster criterion 'distance'); their count is logged, the labels "
                        "written with --clusters-output")
    o.add_argument("--clusters-output", metavar="PATH",
                   help="with --clusters: write each vertex's cluster to PATH (.npy, int64)")

    s = r.add_argument_group("object stores")
    s.add_argument("--storage-options", type=_storage_options, metavar="JSON",
                   help="options of the file system of s3://, gs://, abfs:// ... paths (--input, --output, "
                        "--checkpoint), a JSON object as dask.dataframe takes them, e.g. "
                        "'{\"anon\": true}' or '{\"client_kwargs\": {\"endpoint_url\": \"http://...\"}}'; "
                        "merged over the config's storage_options")
    k = r.add_argument_group("checkpoint (go on after preemption)")
    k.add_argument("--checkpoint", metavar="DIR",
                   help="save the run's state to DIR after each round or pass (on storage the workers "
                        "share); the same command run again goes on from there")
    k.add_argument("--resume", action=argparse.BooleanOptionalAction, default=None,
                   help="with a checkpoint: go on from the state in DIR (the default); --no-resume "
                        "discards it and starts over")

    c = r.add_argument_group("cluster")
    if submit:
        c.add_argument("--scheduler", metavar="ADDRESS",
                       help="the running scheduler (tcp://host:8786); default: the config's "
                            "cluster.address")
    else:
        c.add_argument("--workers", type=int, metavar="W",
                       help="local cluster: number of workers (default 1); several are worker processes, "
                            "each with its own memory limit (--no-processes: threads of this process, "
                            "which share one budget: its memory limit)")
        c.add_argument("--threads", type=int, metavar="T", help="local cluster: threads per worker")
        c.add_argument("--processes", action=argparse.BooleanOptionalAction, default=None,
                       help="local cluster: workers as processes (default: with several workers; one "
                            "worker is threads of this process)")
        c.add_argument("--memory-limit", type=_memory_limit, metavar="BYTES",
                       help="local cluster: memory limit of each worker: auto (the machine's memory over "
                            "the worker processes; the default, or mst.cluster.memory-limit), bytes, a "
                            "size such as 4GiB, or none; workers that are threads of this process share it")
        c.add_argument("--scheduler", metavar="ADDRESS",
                       help="connect to a running scheduler (tcp://host:8786) instead of a local cluster")
        c.add_argument("--mpi", action="store_true",
                       help="run on the ranks of this MPI job (mpirun -n 4 mst-dist run --mpi CONFIG): "
                            "rank 0 the scheduler, rank 1 the run, the others workers (dask-mpi)")

    _add_tls_arguments(r.add_argument_group("security (TLS; overrides the config's cluster.security)"))

    d = r.add_argument_group("report")
    d.add_argument("--json", action="store_true",
                   help="print the JSON run report (config, versions, cluster, stats, timings, "
                        "summary) instead of tables")
    d.add_argument("--report", metavar="PATH", help="write the JSON run report to PATH")
    d.add_argument("--plot", metavar="PATH",
                   help="draw the rounds to PATH: .html (standalone) or .png (needs chromium)")
    d.add_argument("--wide", action="store_true",
                   help="the round table with every column (each phase's seconds, overhead, bytes moved, "
                        "the engine's own records); default: a compact table that fits 100 columns")
    _add_log_arguments(d, "no progress line; errors only")


def build_parser():
    """The ``mst-dist`` argument parser: ``run``, ``submit``, ``generate``, ``job-script``, ``warmup``, ``bench``."""
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
    gn.add_argument("kind", metavar="KIND", help=", ".join(GENERATORS))
    _add_generator_arguments(gn)
    gn.add_argument("-o", "--output", required=True, metavar="PATH", help="the file or directory to write")
    gn.add_argument("--format", metavar="FORMAT",
                    help="edgelist, csv, gr, mtx, npz, npy, egr, parquet (default: from the name)")
    gn.add_argument("--both-directions", action="store_true",
                    help="gr: write every edge as two arcs, as the DIMACS road networks do")
    gn.add_argument("--scheduler", metavar="ADDRESS",
                    help="generate on the workers of a running scheduler (tcp://host:8786)")
    _add_tls_arguments(gn.add_argument_group("security (TLS to the --scheduler)"))
    _add_log_arguments(gn, "errors only")

    j = sub.add_parser(
        "job-script",
        help="print the batch script a slurm or pbs run config would submit",
        description="Render the job script dask-jobqueue would submit for a run config whose "
                    "cluster.kind is slurm or pbs (nothing is submitted).",
    )
    j.add_argument("config", metavar="CONFIG", help="run config (YAML) with cluster.kind slurm or pbs")

    wu = sub.add_parser(
        "warmup",
        help="compile the kernels ahead (for images and batch jobs)",
        description="Compile every CPU kernel into Numba's on-disk cache now: the engine's (integer "
                    "and float weights) and the clustering layer's (kNN graphs exact and approximate, "
                    "HDBSCAN), so that no run compiles: once after install, e.g. in a container "
                    "image's build or before a batch job array. Prints where the cache is.",
    )
    wu.add_argument("--gpu", action="store_true",
                    help="also compile the GPU kernels (needs CuPy and a CUDA device)")
    _add_log_arguments(wu, "print nothing")

    from mst_dist.bench import build_parser as _bench_parser

    b = sub.add_parser(
        "bench",
        help="measure the engine on this machine or a running cluster",
        description="Time the engine on generated graphs (default: er, grid2000, rmat20) on the "
                    "embedded default cluster or --scheduler's: seconds, edges/s, each phase's "
                    "seconds and the bytes moved, with scipy beside it if installed; writes "
                    "bench.json and bench.md.",
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
    gen_params = generator_params(args)
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
    if args.dedupe_directions is not None:
        graph = raw.get("graph")
        if not (isinstance(graph, dict) and "input" in graph):
            raise ConfigError("--dedupe-directions: only with an input file (--input PATH, or a "
                              "config with graph.input)")
        options = graph.get("options") if isinstance(graph.get("options"), dict) else {}
        raw["graph"] = {**graph, "options": {**options, "dedupe_directions": args.dedupe_directions}}
    if args.allow_empty:
        graph = raw.get("graph")
        if not (isinstance(graph, dict) and "input" in graph):
            raise ConfigError("--allow-empty: only with an input file (--input PATH, or a config with "
                              "graph.input)")
        options = graph.get("options") if isinstance(graph.get("options"), dict) else {}
        raw["graph"] = {**graph, "options": {**options, "allow_empty": True}}
    for key, value in (("partitions", args.partitions), ("local_finish", args.local_finish),
                       ("backend", args.backend), ("stream", args.stream),
                       ("vertex_partition", args.vertex_partition)):
        if value is not None:
            raw[key] = value
    if args.checkpoint is not None:
        ck = raw.get("checkpoint") if isinstance(raw.get("checkpoint"), dict) else {}
        raw["checkpoint"] = {**ck, "path": args.checkpoint}
    if args.resume is not None:
        if not isinstance(raw.get("checkpoint"), dict):
            raise ConfigError("--resume/--no-resume: only with a checkpoint (--checkpoint DIR, or a "
                              "config with checkpoint.path)")
        raw["checkpoint"] = {**raw["checkpoint"], "resume": args.resume}
    if getattr(args, "storage_options", None) is not None:
        so = raw.get("storage_options")
        raw["storage_options"] = {**(so if isinstance(so, dict) else {}), **args.storage_options}
    if args.output is not None:
        raw["output"] = {"path": args.output}
    if args.format is not None:
        if not isinstance(raw.get("output"), dict):
            raise ConfigError("--format: only with an output (--output PATH)")
        raw["output"] = {**raw["output"], "format": args.format}
    if args.scheduler is not None:
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        keep = {"security": cluster["security"]} if "security" in cluster else {}  # the config's TLS stays
        raw["cluster"] = {"kind": "address", "address": args.scheduler, **keep}
    if getattr(args, "mpi", False):
        if args.scheduler is not None:
            raise ConfigError("--mpi and --scheduler: give one (--mpi starts its own scheduler)")
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        raw["cluster"] = cluster if cluster.get("kind") == "mpi" else {"kind": "mpi"}
    local = {k: v for k, v in (("n_workers", getattr(args, "workers", None)),
                               ("threads_per_worker", getattr(args, "threads", None)),
                               ("processes", getattr(args, "processes", None)),
                               ("memory_limit", getattr(args, "memory_limit", None))) if v is not None}
    if local:
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        raw["cluster"] = {**cluster, **local}
    tls = {k: v for k, v in (("ca_file", args.tls_ca_file), ("cert", args.tls_cert), ("key", args.tls_key),
                             ("require_encryption", args.require_encryption)) if v is not None}
    if tls:
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        security = cluster.get("security") if isinstance(cluster.get("security"), dict) else {}
        raw["cluster"] = {**cluster, "security": {**security, **tls}}
    if submit:
        cluster = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        if cluster.get("kind") != "address":
            raise ConfigError("submit runs on a cluster that is already up: give its scheduler "
                              "(mst-dist submit --scheduler tcp://HOST:8786 CONFIG) or set "
                              "cluster.kind: address and cluster.address in the config",
                              key="cluster.kind")
        return runconfig.validate_run_config(raw, source=args.config, check_paths=False)
    return runconfig.validate_run_config(raw, source=args.config)

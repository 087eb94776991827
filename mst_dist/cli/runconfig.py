"""Run configs: the YAML files given to ``mst-dist run`` (see ``configs/quickstart.yaml``).

A run config says which graph, where the forest goes, which cluster.
:func:`load_run_config` reads one and checks it against the schema below; a
mistake raises :class:`~mst_dist.ConfigError` naming the key path and
what is allowed there.  Keys the file leaves out are filled from the engine
settings (:func:`mst_dist.config.get`, documented in ``mst_dist/mst-dist.yaml``).
"""
from __future__ import annotations

import os

import dask.config
import yaml

from mst_dist.config import BACKENDS, STREAM_MODES, ConfigError, get
from mst_dist.deploy import CLUSTERS, memory_limit_value, security_of
from mst_dist.engine.spec import VERTEX_PARTITION_MODES
from mst_dist.generators import GENERATORS, parameters, shared_parameters
from mst_dist.io.urls import is_url

__all__ = [
    "load_run_config",
    "read_run_config",
    "validate_run_config",
    "run_settings",
    "GENERATOR_PARAMS",
    "BACKENDS",
    "STREAM_MODES",
    "CLUSTER_KINDS",
    "WORKER_KINDS",
]

# --------------------------------------------------------------------------
# Schema: graph generators (graph.generate)
# --------------------------------------------------------------------------

#: Run-config type of each generator parameter type (see :class:`mst_dist.generators.Param`).
_PARAM_TYPES = {"int": "int", "float": "float", "number": "float", "str": "str"}


def _param_type(p):
    return _PARAM_TYPES[p.type] + ("|null" if p.nullable else "")


#: Graph generators a run config may name: ``{kind: {param: (type, required)}}``, from
#: the generators' own parameters (:func:`mst_dist.generators.parameters`).
GENERATOR_PARAMS = {
    kind: {p.name: (_param_type(p), p.required) for p in parameters(kind) if not p.shared}
    for kind in GENERATORS
}

#: Parameters every generator takes: ``{param: (type, default)}``.
_COMMON_GENERATE = {p.name: (_param_type(p), p.default) for p in shared_parameters()}
_WEIGHTS = next(p.choices for p in shared_parameters() if p.name == "weights")

# --------------------------------------------------------------------------
# Schema: top level, graph, output, placement, cluster
# --------------------------------------------------------------------------

_TOP_KEYS = ("graph", "n_vertices", "backend", "partitions", "local_finish", "stream", "vertex_partition",
             "placement", "output", "checkpoint", "cluster", "storage_options")
_GRAPH_KEYS = ("generate", "input", "format", "options")
_OUTPUT_KEYS = ("path", "format")
_CHECKPOINT_KEYS = ("path", "resume")
#: Kinds of worker a ``placement.throughput`` mapping rates (GPU workers advertise resources GPU=1).
WORKER_KINDS = ("gpu", "cpu")
#: placement key -> (type, engine setting it defaults to)
_PLACEMENT_KEYS = {
    "throughput": ("mapping|null", "placement.throughput"),
    "calibration_edges": ("int", "placement.calibration-edges"),
}
#: Cluster kinds a run config may name: those :func:`mst_dist.deploy.open_cluster` opens (see
#: ``mst_dist/mst-dist.yaml`` and ``cluster/``).
CLUSTER_KINDS = tuple(CLUSTERS)
_JOBQUEUE = ("slurm", "pbs")
_STARTED = ("local", "local-cuda", "slurm", "pbs", "mpi")  # kinds whose scheduler mst-dist starts
#: cluster key -> (type, engine setting it defaults to (None: no default), kinds it applies to)
_CLUSTER_KEYS = {
    "kind": ("str", "cluster.kind", CLUSTER_KINDS),
    "address": ("str|null", "cluster.address", ("address",)),
    "n_workers": ("int|null", "cluster.n-workers", ("local", "local-cuda")),
    "threads_per_worker": ("int|null", "cluster.threads-per-worker", ("local", "local-cuda", "mpi")),
    "processes": ("bool|null", "cluster.processes", ("local", "slurm", "pbs")),
    "dashboard_address": ("str|null", "cluster.dashboard-address", _STARTED),
    "memory_limit": ("str|int|float|null", "cluster.memory-limit", ("local", "local-cuda", "mpi")),
    "cuda_visible_devices": ("str|null", None, ("local-cuda",)),
    "warmup": ("bool", "cluster.warmup", ("local", "local-cuda", "slurm", "pbs", "mpi")),
    "wait_timeout": ("float", "cluster.wait-timeout", ("address", "slurm", "pbs", "mpi")),
    "jobs": ("int", "cluster.jobs", _JOBQUEUE),
    "cores": ("int|null", None, _JOBQUEUE),
    "memory": ("str|null", None, _JOBQUEUE),
    "queue": ("str|null", None, _JOBQUEUE),
    "account": ("str|null", None, _JOBQUEUE),
    "walltime": ("str|null", None, _JOBQUEUE),
    "job_name": ("str|null", None, _JOBQUEUE),
    "resource_spec": ("str|null", None, ("pbs",)),
    "interface": ("str|null", None, ("slurm", "pbs", "mpi")),
    "local_directory": ("str|null", None, ("slurm", "pbs", "mpi")),
    "log_directory": ("str|null", None, _JOBQUEUE),
    "python": ("str|null", None, _JOBQUEUE),
    "job_extra_directives": ("list[str]|null", None, _JOBQUEUE),
    "job_script_prologue": ("list[str]|null", None, _JOBQUEUE),
    "worker_extra_args": ("list[str]|null", None, _JOBQUEUE),
    "security": ("mapping|null", None, CLUSTER_KINDS),
}
#: cluster.security key -> type (TLS: see :func:`mst_dist.deploy._core.security_of`).
_SECURITY_KEYS = {"ca_file": "str|null", "cert": "str|null", "key": "str|null",
                  "require_encryption": "bool|null"}
#: Per-kind types where they differ from the table: workers per job for dask-jobqueue.
_KIND_TYPES = {("processes", "slurm"): "int|null", ("processes", "pbs"): "int|null"}


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------

def _kind_of(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, (list, tuple)):
        return "list"
    return type(value).__name__


def _fail(path, message, source):
    where = f"{source}: " if source else ""
    path = path or "(top level)"
    raise ConfigError(f"{where}{path}: {message}", key=path, source=source)


def _check_type(path, value, spec, source):
    """``value`` if its kind is one of ``spec`` ("int|null"); an int passes as a float."""
    allowed = spec.split("|")
    kind = _kind_of(value)
    if kind == "list" and "list[str]" in allowed:
        for i, item in enumerate(value):
            if not isinstance(item, str):
                _fail(f"{path}[{i}]", f"expected str, got {_kind_of(item)} {item!r}", source)
        return list(value)
    if kind in allowed or (kind == "int" and "float" in allowed):
        return value
    got = f"{kind} {value!r}" if kind not in ("mapping", "list") else kind
    _fail(path, f"expected {' or '.join(allowed)}, got {got}", source)


def _check_choice(path, value, choices, source):
    if value not in choices:
        _fail(path, f"expected one of {', '.join(map(str, choices))}; got {value!r}", source)
    return value


def _check_min(path, value, lo, source):
    if value is not None and value < lo:
        _fail(path, f"must be >= {lo}, got {value!r}", source)
    return value


def _mapping(path, value, allowed, source, required=()):
    """Check ``value`` is a mapping whose keys are among ``allowed``; normalise ``-`` to ``_``."""
    if not isinstance(value, dict):
        _check_type(path, value, "mapping", source)
    out = {}
    for key, v in value.items():
        name = str(key).replace("-", "_")
        sub = f"{path}.{key}" if path else str(key)
        if name not in allowed:
            _fail(sub, f"unknown key; allowed: {', '.join(allowed)}", source)
        if name in out:
            _fail(sub, "given twice (as '-' and '_' spellings)", source)
        out[name] = v
    for name in required:
        if name not in out:
            sub = f"{path}.{name}" if path else name
            _fail(sub, f"missing required key (needed here: {', '.join(required)})", source)
    return out


def _setting(path, raw, name, setting, spec, source):
    """``raw[name]`` checked against ``spec``; absent: the engine setting (checked too)."""
    if name in raw:
        return _check_type(path, raw[name], spec, source)
    return _check_type(f"mst.{setting} (dask config)", get(setting), spec, source)


def _validate_generate(path, raw, source):
    if not isinstance(raw, dict):
        _check_type(path, raw, "mapping", source)
    kind = raw.get("kind")
    if kind is None:
        _fail(f"{path}.kind", f"missing required key; one of: {', '.join(GENERATOR_PARAMS)}", source)
    _check_type(f"{path}.kind", kind, "str", source)
    _check_choice(f"{path}.kind", kind, tuple(GENERATOR_PARAMS), source)
    params = GENERATOR_PARAMS[kind]
    allowed = ("kind", *params, *_COMMON_GENERATE)
    required = tuple(p for p, (_, req) in params.items() if req)
    raw = _mapping(path, raw, allowed, source, required=required)
    out = {"kind": kind}
    for name, (spec, default) in _COMMON_GENERATE.items():
        out[name] = _check_type(f"{path}.{name}", raw.get(name, default), spec, source)
    _check_choice(f"{path}.weights", out["weights"], _WEIGHTS, source)
    if out["wmin"] > out["wmax"]:
        _fail(f"{path}.wmin", f"must be <= wmax ({out['wmax']!r}), got {out['wmin']!r}", source)
    for name, (spec, _) in params.items():
        if name in raw:
            out[name] = _check_type(f"{path}.{name}", raw[name], spec, source)
            if spec == "int":
                _check_min(f"{path}.{name}", out[name], 0, source)
    return out


def _validate_graph(raw, source, check_paths=True):
    graph = _mapping("graph", raw, _GRAPH_KEYS, source)
    if ("generate" in graph) == ("input" in graph):
        _fail("graph", "needs exactly one of: generate (a generator), input (a file)", source)
    if "generate" in graph:
        for key in ("format", "options"):
            if key in graph:
                _fail(f"graph.{key}", "only with graph.input (a file)", source)
        return {"generate": _validate_generate("graph.generate", graph["generate"], source)}
    from mst_dist.io.formats import FORMATS, format_of_path

    path = _check_type("graph.input", graph["input"], "str", source)
    out = {"input": path}
    is_glob = any(ch in path for ch in "*?[")
    if graph.get("format") is not None:
        out["format"] = _check_choice("graph.format", _check_type("graph.format", graph["format"],
                                                                  "str", source), FORMATS, source)
    unknown = "format" not in out and format_of_path(path) is None
    if unknown and os.path.splitext(path)[1]:
        _fail("graph.input", f"cannot tell the format of {path!r} from its name; give "
              f"graph.format (one of {', '.join(FORMATS)})", source)
    if check_paths and not is_glob and not is_url(path) and not os.path.exists(path):
        _fail("graph.input", f"no such file: {path!r}", source)  # a URL (s3://...) is looked up by read()
    if unknown:
        _fail("graph.input", f"cannot tell the format of {path!r} from its name; give "
              f"graph.format (one of {', '.join(FORMATS)})", source)
    if graph.get("options") is not None:
        out["options"] = dict(_check_type("graph.options", graph["options"], "mapping", source))
    return out


def _validate_output(raw, source):
    from mst_dist.io.formats import FOREST_FORMATS, forest_format

    if raw is None:
        return None
    out = _mapping("output", raw, _OUTPUT_KEYS, source, required=("path",))
    path = _check_type("output.path", out["path"], "str", source)
    if not is_url(path):  # a URL (s3://...) is checked by a trial write before the run
        directory = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            _fail("output.path", f"{path!r} is a directory; give a file name", source)
        if not os.path.isdir(directory):
            _fail("output.path", f"directory {directory!r} does not exist", source)
    fmt = out.get("format")
    if fmt is not None:
        _check_type("output.format", fmt, "str", source)
        _check_choice("output.format", fmt, FOREST_FORMATS, source)
    else:
        try:
            fmt = forest_format(path)
        except ValueError as e:
            _fail("output.path", f"{e}; or give output.format", source)
    return {"path": path, "format": fmt}


def _validate_checkpoint(raw, source, check_paths=True):
    """The ``checkpoint`` section: the directory a run saves its state to, and whether to resume from it."""
    if raw is None:
        return None
    out = _mapping("checkpoint", raw, _CHECKPOINT_KEYS, source, required=("path",))
    path = _check_type("checkpoint.path", out["path"], "str", source)
    resume = _check_type("checkpoint.resume", out.get("resume", True), "bool", source)
    if check_paths and not is_url(path) and os.path.exists(path) and not os.path.isdir(path):
        _fail("checkpoint.path", f"{path!r} is a file; give a directory (created if missing)", source)
    return {"path": path, "resume": resume}


def _validate_placement(raw, source):
    """The ``placement`` section: fixed relative throughputs of GPU and CPU workers, or ``null``
    (measured by a calibration task of ``calibration_edges`` edges); unset keys from the engine
    settings ``mst.placement.*``."""
    import math

    raw = _mapping("placement", raw if raw is not None else {}, tuple(_PLACEMENT_KEYS), source)
    out = {}
    for name, (spec, setting) in _PLACEMENT_KEYS.items():
        out[name] = _setting(f"placement.{name}", raw, name, setting, spec, source)
    tp = out["throughput"]
    if tp is not None:
        path = "placement.throughput" if "throughput" in raw else "mst.placement.throughput (dask config)"
        tp = _mapping(path, tp, WORKER_KINDS, source, required=WORKER_KINDS)
        for kind in WORKER_KINDS:
            value = _check_type(f"{path}.{kind}", tp[kind], "float", source)
            if not (math.isfinite(value) and value > 0):
                _fail(f"{path}.{kind}", f"must be a finite number > 0 (edges/second of one {kind} "
                      f"worker relative to the other kind), got {value!r}", source)
        out["throughput"] = {kind: tp[kind] for kind in WORKER_KINDS}
    _check_min("placement.calibration_edges", out["calibration_edges"], 1, source)
    return out


def _kinds_text(kinds):
    return ("kind " if len(kinds) == 1 else "kinds ") + ", ".join(repr(k) for k in kinds)


def _validate_cluster(raw, source):
    raw = _mapping("cluster", raw if raw is not None else {}, tuple(_CLUSTER_KEYS), source)
    kind = _setting("cluster.kind", raw, "kind", "cluster.kind", "str", source)
    _check_choice("cluster.kind", kind, CLUSTER_KINDS, source)
    out = {"kind": kind}
    for name, (spec, setting, kinds) in _CLUSTER_KEYS.items():
        if name == "kind":
            continue
        spec = _KIND_TYPES.get((name, kind), spec)
        if kind not in kinds:
            if name in raw and raw[name] is not None:
                hint = "; set cluster.kind: address" if name == "address" else ""
                _fail(f"cluster.{name}", f"only for {_kinds_text(kinds)} (this is kind {kind!r}){hint}",
                      source)
            continue
        if name in raw or setting is None:
            out[name] = _check_type(f"cluster.{name}", raw.get(name), spec, source)
        elif spec != _CLUSTER_KEYS[name][0]:  # the engine setting is for another kind: no default
            out[name] = None
        else:
            out[name] = _setting(f"cluster.{name}", raw, name, setting, spec, source)
    out["security"] = _validate_security(out.get("security"), kind, source)
    if out["security"] is None:
        del out["security"]  # Dask's own TLS settings, if any
    if "memory_limit" in out:
        try:
            out["memory_limit"] = memory_limit_value(out["memory_limit"])
        except ValueError as e:
            path = ("cluster.memory_limit" if "memory_limit" in raw
                    else "mst.cluster.memory-limit (dask config)")
            _fail(path, str(e), source)
    for name in ("n_workers", "threads_per_worker", "jobs", "cores", "processes"):
        if isinstance(out.get(name), int) and not isinstance(out.get(name), bool):
            _check_min(f"cluster.{name}", out[name], 1, source)
    if "wait_timeout" in out:
        _check_min("cluster.wait_timeout", out["wait_timeout"], 0, source)
    if kind == "address" and not out["address"]:
        _fail("cluster.address", "missing: kind 'address' needs the scheduler's address "
              "(e.g. tcp://host:8786)", source)
    if kind == "address":
        from mst_dist.deploy._core import check_address_security

        try:
            check_address_security(out["address"], security_of(out.get("security")))
        except ConfigError as e:
            _fail("cluster.address", str(e).split(": ", 1)[1], source)
    if kind in _JOBQUEUE:
        for name in ("cores", "memory"):
            if out[name] is None and dask.config.get(f"jobqueue.{kind}.{name}", None) is None:
                _fail(f"cluster.{name}", f"missing: kind {kind!r} needs {name} (per job); set it here or "
                      f"in the dask config jobqueue.{kind}.{name} (see cluster/jobqueue-{kind}.yaml)",
                      source)
    return out


def _validate_security(raw, kind, source):
    """The ``cluster.security`` section (TLS for the cluster's connections), or ``None``."""
    if raw is None:
        return None
    raw = _mapping("cluster.security", raw, tuple(_SECURITY_KEYS), source)
    out = {name: _check_type(f"cluster.security.{name}", raw.get(name), spec, source)
           for name, spec in _SECURITY_KEYS.items()}
    local = kind in ("local", "local-cuda")
    try:
        if not (local and out["require_encryption"] and not any(out[k] for k in ("ca_file", "cert", "key"))):
            security_of(out)  # (local kinds make temporary certificates when the cluster starts)
    except ValueError as e:
        path, _, message = str(e).partition(": ")
        _fail(f"cluster.{path}", message, source)
    return out


def validate_run_config(raw, source=None, check_paths=True):
    """Check a run config (a dict as read from YAML) and fill in its defaults.

    Returns a new dict with every top-level key present: ``graph``
    (``{"generate": {...}}`` or ``{"input": path}``), ``n_vertices``,
    ``backend``, ``partitions``, ``local_finish``, ``stream`` (``auto``,
    ``always`` or ``never``: whether the edges are streamed from their source
    in passes), ``vertex_partition`` (``auto``, ``always`` or ``never``:
    whether the per-vertex state is cut into ranges over the workers), ``placement``
    (``{"throughput": None or {"gpu": x, "cpu": y}, "calibration_edges": n}``),
    ``output`` (``None`` or ``{"path", "format"}``), ``checkpoint`` (``None`` or
    ``{"path", "resume"}``: where the run saves its state after each round or
    pass, and whether a rerun goes on from it), ``cluster`` and ``storage_options`` (``None`` or
    the options of the file system of URL paths -- ``s3://...`` -- in ``graph.input``,
    ``output.path`` and ``checkpoint.path``: credentials, endpoint, as ``dask.dataframe`` takes
    them).  Raises :class:`ConfigError`
    naming the first bad key path; ``source`` (a file name) prefixes the
    message.  ``check_paths=False`` leaves out the check that an input file
    exists here (``mst-dist submit``: the workers read it, and check it).

    >>> cfg = validate_run_config({"graph": {"generate": {"kind": "grid", "rows": 3, "cols": 4}}})
    >>> cfg["graph"]["generate"]["rows"], cfg["output"]
    (3, None)
    >>> validate_run_config({"graph": {"generate": {"kind": "grid", "rows": "x", "cols": 4}}})
    Traceback (most recent call last):
    ...
    mst_dist.errors.ConfigError: graph.generate.rows: expected int, got str 'x'
    """
    if raw is None:
        raw = {}
    raw = _mapping("", raw, _TOP_KEYS, source, required=("graph",))
    out = {"graph": _validate_graph(raw["graph"], source, check_paths)}

    nv = _check_type("n_vertices", raw.get("n_vertices"), "int|null", source)
    _check_min("n_vertices", nv, 0, source)
    if nv is not None and "input" not in out["graph"]:
        _fail("n_vertices", "only with graph.input (a generator sets its own)", source)
    out["n_vertices"] = nv

    out["backend"] = _setting("backend", raw, "backend", "backend", "str", source)
    _check_choice("backend", out["backend"], BACKENDS, source)

    out["partitions"] = _setting("partitions", raw, "partitions", "partitions", "int|null", source)
    _check_min("partitions", out["partitions"], 1, source)

    lf = _setting("local_finish", raw, "local_finish", "local-finish", "str|int", source)
    if isinstance(lf, str):
        _check_choice("local_finish", lf, ("auto",), source)
    else:
        _check_min("local_finish", lf, 0, source)
    out["local_finish"] = lf

    out["stream"] = _setting("stream", raw, "stream", "stream", "str", source)
    _check_choice("stream" if "stream" in raw else "mst.stream (dask config)", out["stream"],
                  STREAM_MODES, source)

    out["vertex_partition"] = _setting("vertex_partition", raw, "vertex_partition", "vertex-partition", "str", source)
    _check_choice("vertex_partition" if "vertex_partition" in raw else "mst.vertex-partition (dask config)",
                  out["vertex_partition"], VERTEX_PARTITION_MODES, source)

    out["placement"] = _validate_placement(raw.get("placement"), source)
    out["output"] = _validate_output(raw.get("output"), source)
    out["checkpoint"] = _validate_checkpoint(raw.get("checkpoint"), source, check_paths)
    out["cluster"] = _validate_cluster(raw.get("cluster"), source)
    out["storage_options"] = _check_type("storage_options", raw.get("storage_options"), "mapping|null", source)
    return out


def run_settings(cfg):
    """The engine settings a validated run config sets for its run, as ``dask.config`` keys.

    The engine reads chunk placement from ``mst.placement.*``; a run config's
    ``placement`` section applies to its run through ``dask.config.set``:

    >>> cfg = validate_run_config({"graph": {"generate": {"kind": "grid", "rows": 3, "cols": 4}},
    ...                            "placement": {"throughput": {"gpu": 40, "cpu": 1}}})
    >>> with dask.config.set(run_settings(cfg)):
    ...     dask.config.get("mst.placement.throughput")
    {'gpu': 40, 'cpu': 1}
    """
    placement = cfg["placement"]
    return {"mst.placement.throughput": placement["throughput"],
            "mst.placement.calibration-edges": placement["calibration_edges"]}


def read_run_config(path):
    """The raw mapping of a run config file (not validated)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such run config file", source=path) from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a run config file", source=path) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}", source=path) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a run config is a mapping of keys "
                          f"({', '.join(_TOP_KEYS)}), got {_kind_of(raw)}", source=path)
    return raw


def load_run_config(path):
    """Read a run config (YAML) and validate it; see :func:`validate_run_config`."""
    path = os.fspath(path)
    return validate_run_config(read_run_config(path), source=path)

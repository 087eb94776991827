"""Configuration: packaged defaults in ``dask.config`` and validated run configs.

Two kinds of configuration live here.

*Engine settings* (``mst.split-every``, ``mst.cluster.n-workers``, ...) are
documented, with their defaults, in the packaged ``mst-dist.yaml``, which this
module loads into :mod:`dask.config` on import.  They layer as Dask's own do:
a keyword argument beats ``dask.config.set``, which beats an environment
variable (``DASK_MST__SPLIT_EVERY=4``), which beats your YAML files in
``~/.config/dask``, which beat the packaged file.  Read one with :func:`get`.

*Run configs* are the YAML files given to ``mst-dist run`` (see
``configs/quickstart.yaml``): which graph, where the forest goes, which
cluster.  :func:`load_run_config` reads one and checks it against a schema; a
mistake raises :class:`ConfigError` naming the key path and what is allowed
there.  Keys the file leaves out are filled from the engine settings.
"""
from __future__ import annotations

import os

import dask.config
import yaml

__all__ = [
    "ConfigError",
    "get",
    "refresh",
    "load_run_config",
    "read_run_config",
    "validate_run_config",
    "GENERATOR_PARAMS",
    "BACKENDS",
]

_DEFAULTS_FILE = os.path.join(os.path.dirname(__file__), "mst-dist.yaml")

with open(_DEFAULTS_FILE, encoding="utf-8") as _f:
    #: The packaged defaults (a copy of what ``mst-dist.yaml`` holds).
    DEFAULTS = yaml.safe_load(_f)

dask.config.update_defaults(DEFAULTS)


class ConfigError(ValueError):
    """A bad configuration: the message names the key path and what is allowed."""

    def __init__(self, message, key=None, source=None):
        super().__init__(message)
        self.key = key
        self.source = source


_NO_DEFAULT = object()


def get(key, override=None, default=_NO_DEFAULT):
    """An engine setting: ``override`` when given (not ``None``), else ``dask.config``.

    ``key`` is relative to ``mst`` (``"split-every"``, ``"cluster.n-workers"``)
    or absolute (``"mst.split-every"``); hyphens and underscores are
    interchangeable, as everywhere in :mod:`dask.config`.

    >>> get("split-every", 4)
    4
    >>> get("filter.light-factor") == dask.config.get("mst.filter.light-factor")
    True
    """
    if override is not None:
        return override
    if not key.startswith("mst."):
        key = "mst." + key
    if default is _NO_DEFAULT:
        return dask.config.get(key)
    return dask.config.get(key, default)


def refresh():
    """Re-read the environment and the YAML files (packaged defaults included)."""
    dask.config.refresh()


# --------------------------------------------------------------------------
# Run configs
# --------------------------------------------------------------------------

#: Backends a run config may name.
BACKENDS = ("cpu", "auto", "gpu")

#: Graph generators a run config may name: ``{kind: {param: (type, required)}}``.
GENERATOR_PARAMS = {
    "erdos_renyi": {"n": ("int", True), "m": ("int", True)},
    "gnp": {"n": ("int", True), "p": ("float", True)},
    "circulant": {"n": ("int", True), "d": ("int", True)},
    "grid": {"rows": ("int", True), "cols": ("int", True)},
    "hypercube": {"d": ("int", True)},
    "caveman": {"g": ("int", True), "k": ("int", True)},
    "connected_caveman": {"g": ("int", True), "k": ("int", True)},
    "rmat": {
        "scale": ("int", True),
        "edge_factor": ("int", False),
        "a": ("float", False),
        "b": ("float", False),
        "c": ("float", False),
    },
}

#: Parameters every generator takes: ``{param: (type, default)}``.
_COMMON_GENERATE = {
    "seed": ("int", 0),
    "weights": ("str", "int"),
    "wmin": ("float", 1),
    "wmax": ("float", 1000),
}
_WEIGHTS = ("int", "float")

_TOP_KEYS = ("graph", "n_vertices", "backend", "partitions", "local_finish", "output", "cluster")
_GRAPH_KEYS = ("generate", "input")
_OUTPUT_KEYS = ("path", "format")
_CLUSTER_KINDS = ("local", "address")
#: cluster key -> (type, engine setting it defaults to)
_CLUSTER_KEYS = {
    "kind": ("str", "cluster.kind"),
    "address": ("str|null", "cluster.address"),
    "n_workers": ("int|null", "cluster.n-workers"),
    "threads_per_worker": ("int|null", "cluster.threads-per-worker"),
    "processes": ("bool", "cluster.processes"),
    "dashboard_address": ("str|null", "cluster.dashboard-address"),
}
_LOCAL_ONLY = ("n_workers", "threads_per_worker", "processes", "dashboard_address")
_INPUT_EXTENSIONS = (".npz",)


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


def _validate_graph(raw, source):
    graph = _mapping("graph", raw, _GRAPH_KEYS, source)
    if len(graph) != 1:
        _fail("graph", "needs exactly one of: generate (a generator), input (a file)", source)
    if "generate" in graph:
        return {"generate": _validate_generate("graph.generate", graph["generate"], source)}
    path = _check_type("graph.input", graph["input"], "str", source)
    ext = os.path.splitext(path)[1].lower()
    if ext not in _INPUT_EXTENSIONS:
        _fail("graph.input", f"unsupported file type {ext or '(none)'!r}; supported: "
              f"{', '.join(_INPUT_EXTENSIONS)} (arrays src, dst and optional weight)", source)
    if not os.path.exists(path):
        _fail("graph.input", f"no such file: {path!r}", source)
    return {"input": path}


def _validate_output(raw, source):
    from .io import FOREST_FORMATS, forest_format

    if raw is None:
        return None
    out = _mapping("output", raw, _OUTPUT_KEYS, source, required=("path",))
    path = _check_type("output.path", out["path"], "str", source)
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


def _validate_cluster(raw, source):
    raw = _mapping("cluster", raw if raw is not None else {}, tuple(_CLUSTER_KEYS), source)
    out = {}
    for name, (spec, setting) in _CLUSTER_KEYS.items():
        out[name] = _setting(f"cluster.{name}", raw, name, setting, spec, source)
    _check_choice("cluster.kind", out["kind"], _CLUSTER_KINDS, source)
    for name in ("n_workers", "threads_per_worker"):
        _check_min(f"cluster.{name}", out[name], 1, source)
    if out["kind"] == "address":
        if not out["address"]:
            _fail("cluster.address", "missing: kind 'address' needs the scheduler's address "
                  "(e.g. tcp://host:8786)", source)
        for name in _LOCAL_ONLY:
            if name in raw:
                _fail(f"cluster.{name}", "only for kind 'local' (an existing scheduler "
                      "has its own workers)", source)
    elif "address" in raw and raw["address"] is not None:
        _fail("cluster.address", "only for kind 'address'; set cluster.kind: address", source)
    return out


def validate_run_config(raw, source=None):
    """Check a run config (a dict as read from YAML) and fill in its defaults.

    Returns a new dict with every top-level key present: ``graph``
    (``{"generate": {...}}`` or ``{"input": path}``), ``n_vertices``,
    ``backend``, ``partitions``, ``local_finish``, ``output`` (``None`` or
    ``{"path", "format"}``) and ``cluster``.  Raises :class:`ConfigError`
    naming the first bad key path; ``source`` (a file name) prefixes the
    message.

    >>> cfg = validate_run_config({"graph": {"generate": {"kind": "grid", "rows": 3, "cols": 4}}})
    >>> cfg["graph"]["generate"]["rows"], cfg["output"]
    (3, None)
    >>> validate_run_config({"graph": {"generate": {"kind": "grid", "rows": "x", "cols": 4}}})
    Traceback (most recent call last):
    ...
    mst_dist.config.ConfigError: graph.generate.rows: expected int, got str 'x'
    """
    if raw is None:
        raw = {}
    raw = _mapping("", raw, _TOP_KEYS, source, required=("graph",))
    out = {"graph": _validate_graph(raw["graph"], source)}

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

    out["output"] = _validate_output(raw.get("output"), source)
    out["cluster"] = _validate_cluster(raw.get("cluster"), source)
    return out


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

"""The scale benchmark's config: graphs, methods, clusters and targets, read and checked from YAML.

A config (``benchmarks/configs/bench-scale.yaml``) is a mapping with
``benchmark: scale``::

    benchmark: scale
    description: "..."             # free text, copied into the report
    repeat: 1                      # timed runs per method and graph (>= 1)
    warmup: 0                      # untimed runs of the graph first (>= 0)
    timeout: 1200                  # seconds one run may take; past it: reported "timeout"
    sample_interval: 0.05          # seconds between RSS samples
    scratch: null                  # folder for graphs written to disk (default: the temp folder)
    methods: [engine, engine-stream]          # default of every graph
    cluster: {}                    # default of every graph: the embedded default
    graphs:
      - name: rmat24
        generate: {kind: rmat, scale: 24, edge_factor: 16, seed: 1}
      - name: rmat24-4gib
        generate: {kind: rmat, scale: 24, edge_factor: 16, seed: 1}
        methods: [engine-stream]
        cluster: {processes: true, n_workers: 2, memory_limit: 4GiB}
      - name: rmat26-npy
        written: {generate: {kind: rmat, scale: 26, seed: 1}, format: npy}
      - name: er-arrays
        arrays: {generate: {kind: erdos_renyi, n: 1000000, m: 10000000, seed: 1}}
    targets:
      - {graph: rmat24, method: engine-stream, versus: engine, max_time_ratio: 1.25,
         max_peak_ratio: 0.3333}

A graph has exactly one source: ``generate`` (the engine generates it on the
workers), ``written`` (generated once into a file of ``format``, not timed,
then read back with :func:`mst_dist.read`) or ``arrays`` (generated once into
``.npy`` files, loaded into memory, then ``Graph.from_arrays``).  A
``cluster`` takes ``n_workers``, ``threads_per_worker``, ``processes`` and
``memory_limit`` (a size such as ``4GiB``), those of
:func:`mst_dist.deploy.local.embedded`; unset keys keep its defaults.

A target names a graph and a method (default ``engine-stream``) and any of
the checks of :data:`TARGET_CHECKS`; each check is one PASS/FAIL line of the
report.

:func:`validate_scale_config` returns a new dict with every default filled
in; validating that result again gives it back unchanged.
"""
from __future__ import annotations

import json

from benchmarks.config import _integer, _text  # the comparison benchmark's checks
from mst_dist.config import ConfigError

__all__ = ["SCALE_METHODS", "STREAM_OF", "CLUSTER_KEYS", "SOURCES", "TARGET_CHECKS", "SCALE_SCHEMA",
           "validate_scale_config", "is_scale_config", "source_of", "generator_spec", "graph_spec_key"]

#: The scale benchmark's methods and the ``stream=`` each passes to the engine.
STREAM_OF = {"engine": "never", "engine-stream": "always"}

#: The methods a scale config may list, in the order they run on a graph.
SCALE_METHODS = tuple(STREAM_OF)

#: Keys of a ``cluster`` section (those of :func:`mst_dist.deploy.local.embedded`).
CLUSTER_KEYS = ("n_workers", "threads_per_worker", "processes", "memory_limit")

#: Where a graph's edges come from: exactly one of these keys per graph.
SOURCES = ("generate", "written", "arrays")

#: The checks a target may hold, with what each compares.
TARGET_CHECKS = {
    "max_peak_gib": "peak RSS of the run's process tree, GiB, at most",
    "max_bytes_per_edge": "peak RSS of the tree / m, at most",
    "max_engine_bytes_per_edge": "(peak - RSS with the arrays loaded) / m, at most (arrays graphs)",
    "max_seconds": "seconds of the timed run, at most",
    "max_time_ratio": "seconds / seconds of the 'versus' method on the graph, at most",
    "max_peak_ratio": "peak RSS / peak RSS of the 'versus' method on the graph, at most",
    "completes": "the run completes with no worker restarted",
    "same_edges_as": "same forest edge ids as every run of this other graph",
}


def _positive(v, source, key, out):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ConfigError(f"{source}: '{key}' must be a number > 0, got {v!r}", key=key)
    return float(v)


def _kind(v, source, key, out):
    if v != "scale":
        raise ConfigError(f"{source}: '{key}' must be 'scale' here, got {v!r}", key=key)
    return v


def _scratch(v, source, key, out):
    if v is not None and not isinstance(v, str):
        raise ConfigError(f"{source}: '{key}' must be a folder path, got {v!r}", key=key)
    return v


def _methods(v, source, key, out):
    methods = [v] if isinstance(v, str) else v
    if not isinstance(methods, (list, tuple)) or not methods:
        raise ConfigError(f"{source}: '{key}' must be a non-empty list of {', '.join(SCALE_METHODS)}",
                          key=key)
    bad = [m for m in methods if m not in SCALE_METHODS]
    if bad:
        raise ConfigError(f"{source}: '{key}': unknown method(s) {', '.join(map(str, bad))}; choose from "
                          f"{', '.join(SCALE_METHODS)}", key=key)
    return [m for m in SCALE_METHODS if m in methods]


def _cluster(v, source, key, out):
    if v is None:
        return {}
    if not isinstance(v, dict) or set(v) - set(CLUSTER_KEYS):
        raise ConfigError(f"{source}: '{key}' takes only {', '.join(CLUSTER_KEYS)}", key=key)
    c = dict(v)
    for k in ("n_workers", "threads_per_worker"):
        if c.get(k) is not None:
            _integer(1)(c[k], source, f"{key}.{k}", out)
    if c.get("processes") is not None and not isinstance(c["processes"], bool):
        raise ConfigError(f"{source}: '{key}.processes' must be true or false, got {c['processes']!r}",
                          key=f"{key}.processes")
    lim = c.get("memory_limit")
    if lim is not None:
        from dask.utils import parse_bytes

        try:
            ok = parse_bytes(lim) > 0 if isinstance(lim, str) else (
                isinstance(lim, int) and not isinstance(lim, bool) and lim > 0)
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(f"{source}: '{key}.memory_limit' must be a size such as 4GiB, got {lim!r}",
                              key=f"{key}.memory_limit")
    return c


def _generate(v, source, key):
    """A generator spec, checked by building the (lazy) graph: kind, parameters, ranges."""
    from mst_dist.generators import generate

    if not isinstance(v, dict) or "kind" not in v:
        raise ConfigError(f"{source}: '{key}' must be a mapping with 'kind'", key=key)
    params = dict(v)
    kind = params.pop("kind")
    try:
        generate(kind, **params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: '{key}': {exc}", key=key) from None
    return dict(v)


def _graph(g, source, where, defaults):
    from mst_dist.io.formats import GRAPH_FORMATS

    if not isinstance(g, dict) or "name" not in g:
        raise ConfigError(f"{source}: {where} must be a mapping with 'name'", key=where)
    allowed = ("name", *SOURCES, "methods", "cluster")
    extra = sorted(set(g) - set(allowed))
    if extra:
        raise ConfigError(f"{source}: {where}: unknown key(s) {', '.join(extra)}; allowed: "
                          f"{', '.join(allowed)}", key=f"{where}.{extra[0]}")
    given = [s for s in SOURCES if s in g]
    if len(given) != 1:
        raise ConfigError(f"{source}: {where} needs exactly one of {', '.join(SOURCES)}", key=where)
    kind = given[0]
    out = {"name": str(g["name"])}
    if kind == "generate":
        out["generate"] = _generate(g["generate"], source, f"{where}.generate")
    else:
        spec = g[kind]
        keys = ("generate", "format") if kind == "written" else ("generate",)
        if not isinstance(spec, dict) or "generate" not in spec or set(spec) - set(keys):
            raise ConfigError(f"{source}: {where}.{kind} must be a mapping with 'generate'"
                              + (" and optionally 'format'" if kind == "written" else ""),
                              key=f"{where}.{kind}")
        out[kind] = {"generate": _generate(spec["generate"], source, f"{where}.{kind}.generate")}
        if kind == "written":
            fmt = spec.get("format", "npy")
            if fmt not in GRAPH_FORMATS:
                raise ConfigError(f"{source}: {where}.written.format must be one of "
                                  f"{', '.join(GRAPH_FORMATS)}, got {fmt!r}", key=f"{where}.written.format")
            out[kind]["format"] = fmt
    out["methods"] = _methods(g.get("methods", defaults["methods"]), source, f"{where}.methods", None)
    out["cluster"] = _cluster(g.get("cluster", defaults["cluster"]), source, f"{where}.cluster", None)
    return out


def _graphs(v, source, key, out):
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{source}: 'graphs' must be a non-empty list", key="graphs")
    graphs, names = [], set()
    for i, g in enumerate(v):
        where = f"graphs[{i}]"
        gg = _graph(g, source, where, out)
        if gg["name"] in names:
            raise ConfigError(f"{source}: {where}: duplicate graph name {gg['name']!r}", key=f"{where}.name")
        names.add(gg["name"])
        graphs.append(gg)
    return graphs


def _targets(v, source, key, out):
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigError(f"{source}: 'targets' must be a list of mappings", key="targets")
    graphs = {g["name"]: g for g in out["graphs"]}
    allowed = ("graph", "method", "versus", *TARGET_CHECKS)
    targets = []
    for i, t in enumerate(v):
        where = f"targets[{i}]"
        if not isinstance(t, dict) or "graph" not in t:
            raise ConfigError(f"{source}: {where} must be a mapping with 'graph'", key=where)
        extra = sorted(set(t) - set(allowed))
        if extra:
            raise ConfigError(f"{source}: {where}: unknown key(s) {', '.join(extra)}; allowed: "
                              f"{', '.join(allowed)}", key=f"{where}.{extra[0]}")
        if not set(t) & set(TARGET_CHECKS):
            raise ConfigError(f"{source}: {where} checks nothing; give one of {', '.join(TARGET_CHECKS)}",
                              key=where)
        g = graphs.get(str(t["graph"]))
        if g is None:
            raise ConfigError(f"{source}: {where}.graph: no graph named {t['graph']!r}; the config has "
                              f"{', '.join(graphs)}", key=f"{where}.graph")
        tt = {"graph": g["name"], "method": t.get("method", "engine-stream")}
        for k in ("method", "versus"):
            if k in t or k == "method":
                m = t.get(k, tt["method"])
                if m not in g["methods"]:
                    raise ConfigError(f"{source}: {where}.{k}: graph {g['name']!r} does not run {m!r} "
                                      f"(it runs {', '.join(g['methods'])})", key=f"{where}.{k}")
                tt[k] = m
        ratios = [k for k in ("max_time_ratio", "max_peak_ratio") if k in t]
        if bool(ratios) != ("versus" in t):
            raise ConfigError(f"{source}: {where}: 'versus' and max_time_ratio/max_peak_ratio go together",
                              key=f"{where}.versus")
        for k in ("max_peak_gib", "max_bytes_per_edge", "max_engine_bytes_per_edge", "max_seconds", *ratios):
            if k in t:
                tt[k] = _positive(t[k], source, f"{where}.{k}", out)
        if "max_engine_bytes_per_edge" in t and source_of(g) != "arrays":
            raise ConfigError(f"{source}: {where}.max_engine_bytes_per_edge applies to graphs from arrays; "
                              f"{g['name']!r} is {source_of(g)}", key=f"{where}.max_engine_bytes_per_edge")
        if "completes" in t:
            if t["completes"] is not True:
                raise ConfigError(f"{source}: {where}.completes must be true", key=f"{where}.completes")
            tt["completes"] = True
        if "same_edges_as" in t:
            other = str(t["same_edges_as"])
            if other not in graphs or other == g["name"]:
                raise ConfigError(f"{source}: {where}.same_edges_as: no other graph named {other!r}",
                                  key=f"{where}.same_edges_as")
            if graph_spec_key(graphs[other]) != graph_spec_key(g):
                raise ConfigError(f"{source}: {where}.same_edges_as: {other!r} is generated with other "
                                  f"parameters than {g['name']!r}", key=f"{where}.same_edges_as")
            tt["same_edges_as"] = other
        targets.append(tt)
    return targets


#: Every key of a scale config: its default and its check, in the order they
#: are checked (``methods`` and ``cluster`` before ``graphs``, which take them
#: as defaults; ``targets`` last, as they name graphs).
SCALE_SCHEMA = {
    "benchmark": ("scale", _kind),
    "description": ("", _text),
    "repeat": (1, _integer(1)),
    "warmup": (0, _integer(0)),
    "timeout": (1200.0, _positive),
    "sample_interval": (0.05, _positive),
    "scratch": (None, _scratch),
    "methods": (list(SCALE_METHODS), _methods),
    "cluster": ({}, _cluster),
    "graphs": (None, _graphs),
    "targets": ([], _targets),
}


def is_scale_config(cfg):
    """Whether a loaded YAML mapping is a scale benchmark's config (``benchmark: scale``)."""
    return isinstance(cfg, dict) and cfg.get("benchmark") == "scale"


def source_of(g):
    """Which of :data:`SOURCES` a (validated) graph entry has."""
    return next(s for s in SOURCES if s in g)


def generator_spec(g):
    """The generator spec behind a graph entry, whatever its source (``{"kind": ..., ...}``)."""
    return g["generate"] if "generate" in g else g[source_of(g)]["generate"]


def graph_spec_key(g):
    """The generator spec behind a graph entry, as a canonical string: equal keys, same edge ids."""
    return json.dumps(generator_spec(g), sort_keys=True)


def validate_scale_config(cfg, source="config"):
    """Check a scale benchmark config and fill in defaults; returns a new dict.

    Parameters
    ----------
    cfg : dict
        The config as loaded from YAML (see the module's docstring).
    source : str
        Where it came from, to start error messages.

    Returns
    -------
    dict
        Every key of :data:`SCALE_SCHEMA`; every graph with its source (one
        of :data:`SOURCES`; ``written.format`` filled in), its ``methods``
        and ``cluster`` (its own or the config's); every target with its
        ``method``.

    Raises
    ------
    mst_dist.config.ConfigError
        A :class:`ValueError` naming the key and what it allows.
    """
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source}: a benchmark config must be a mapping with a 'graphs' list")
    extra = sorted(set(cfg) - set(SCALE_SCHEMA))
    if extra:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(extra)}; allowed: "
                          f"{', '.join(sorted(SCALE_SCHEMA))}", key=extra[0])
    out = {}
    for key, (default, check) in SCALE_SCHEMA.items():
        v = cfg.get(key)
        out[key] = check(default if v is None else v, source, key, out)
    return out

"""The benchmark config: the methods and targets it may name, read and checked from YAML.

A config is a mapping (``benchmarks/configs/bench-*.yaml``)::

    description: "..."          # free text, copied into the report
    repeat: 3                   # timed runs per method (>= 1)
    warmup: 1                   # untimed runs first (>= 0)
    schedule: interleaved       # or sequential (see benchmarks.runner)
    methods: [engine, scipy]    # a subset of ALL_METHODS (default: METHODS)
    rustworkx: {chunk: 2000000, build_repeat: 1}
    targets: {scipy_geomean: 8, gpu_graph: circulant100m}   # overrides of the targets
    # or: targets: informational   # ratios reported beside the targets, no PASS/FAIL
    graphs:
      - name: er
        generate: {kind: erdos_renyi, n: 1000000, m: 10000000, seed: 1}

:func:`validate_config` checks it against :data:`SCHEMA` (one row per key:
its default and its check) and returns a new dict with every default filled
in; validating that result again gives it back unchanged.
"""
from __future__ import annotations

from mst_dist.config import ConfigError

__all__ = ["METHODS", "GPU_METHODS", "COLD_METHODS", "ALL_METHODS", "DEFAULT_TARGETS", "GPU_TARGETS", "SCHEMA",
           "load_config", "validate_config"]

#: CPU methods in the order they run on each graph (what a config without
#: ``methods`` runs).
METHODS = ("engine", "engine-no-client", "engine-distributed", "kernels-loop", "kernels-loop-dedupe", "scipy",
           "rustworkx")

#: Methods that need a CUDA GPU; run after the CPU ones, in this order.
GPU_METHODS = ("engine-gpu", "cugraph")

#: Methods that start fresh processes (the engine and scipy, one process per run); run last.
COLD_METHODS = ("cold",)

#: Every method a config may list, in the order they run on each graph.
ALL_METHODS = METHODS + GPU_METHODS + COLD_METHODS

#: The CPU targets (engine on the embedded default, min times).
DEFAULT_TARGETS = {
    "scipy_geomean": 8.0,     # engine at least 8x faster than scipy build+call, geometric mean
    "scipy_each": 5.0,        # ... and at least 5x on each graph
    "rustworkx_call_each": 1.0,  # faster than rustworkx's call alone on each graph
    "kernels_ratio_max": 1.5,    # engine within 1.5x of the kernels chained without Dask
}

#: The GPU benchmark's targets (engine-gpu, min times); checked when a config
#: lists a GPU method.  The circulant ones apply to the graph named by the
#: config's ``targets.gpu_graph`` (benchmarks/configs/bench-gpu.yaml: circulant100m).
GPU_TARGETS = {
    "cugraph_each": 3.0,         # engine-gpu >= 3x faster than cuGraph build+call on each graph
    "circulant_total_s": 0.336,  # engine-gpu end to end on targets.gpu_graph, below this (seconds)
    "circulant_kernel_s": 0.1,   # ... and its kernel time (phase seconds summed), below this
}

#: Edges per ``extend_from_weighted_edge_list`` call of the rustworkx build.
RX_CHUNK = 2_000_000


# Each check takes (value, source, key, config-so-far) and returns the value to keep.

def _text(v, source, key, out):
    return "" if v is None else str(v)


def _integer(lo):
    def check(v, source, key, out):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise ConfigError(f"{source}: '{key}' must be an integer >= {lo}, got {v!r}", key=key)
        return v
    return check


def _choice(*choices):
    def check(v, source, key, out):
        if v not in choices:
            raise ConfigError(f"{source}: '{key}' must be {' or '.join(map(repr, choices))}, got {v!r}",
                              key=key)
        return v
    return check


def _section(schema):
    """A nested mapping checked against its own schema (``rustworkx``)."""
    def check(v, source, key, out):
        if not isinstance(v, dict) or set(v) - set(schema):
            raise ConfigError(f"{source}: '{key}' takes only {' and '.join(map(repr, schema))}", key=key)
        return _apply(schema, v, source, f"{key}.")
    return check


def _graphs(v, source, key, out):
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{source}: 'graphs' must be a non-empty list", key="graphs")
    graphs, names = [], set()
    for i, g in enumerate(v):
        where = f"{source}: graphs[{i}]"
        if not isinstance(g, dict) or "name" not in g or "generate" not in g:
            raise ConfigError(f"{where} must be a mapping with 'name' and 'generate'", key=f"graphs[{i}]")
        name = str(g["name"])
        if name in names:
            raise ConfigError(f"{where}: duplicate graph name {name!r}", key=f"graphs[{i}].name")
        names.add(name)
        gen = g["generate"]
        if not isinstance(gen, dict) or "kind" not in gen:
            raise ConfigError(f"{where}.generate must be a mapping with 'kind'", key=f"graphs[{i}].generate")
        graphs.append({"name": name, "generate": dict(gen)})
    return graphs


def _methods(v, source, key, out):
    methods = [v] if isinstance(v, str) else list(v)
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise ConfigError(f"{source}: unknown method(s) {', '.join(map(str, bad))}; choose from "
                          f"{', '.join(ALL_METHODS)}", key="methods")
    return [m for m in ALL_METHODS if m in methods]


def _targets(v, source, key, out):
    """The targets: overrides of the defaults, and whether they are checked.

    ``targets: informational`` (or ``informational: true`` among the
    overrides) reports each ratio beside its target without a verdict: the
    targets are set for the full-size graphs (``bench-cpu.yaml``), and a
    quick run on graphs a twentieth of the size measures mostly fixed costs.
    """
    if v == "informational":
        v = {"informational": True}
    allowed = [*DEFAULT_TARGETS, *GPU_TARGETS, "gpu_graph", "informational"]
    if not isinstance(v, dict) or set(v) - set(allowed):
        raise ConfigError(f"{source}: 'targets' takes {', '.join(allowed)}, or is 'informational'",
                          key="targets")
    v = dict(v)
    gpu_graph = v.pop("gpu_graph", None)
    informational = v.pop("informational", False)
    if not isinstance(informational, bool):
        raise ConfigError(f"{source}: targets.informational must be true or false, got {informational!r}",
                          key="targets.informational")
    names = [g["name"] for g in out["graphs"]]
    if gpu_graph is not None and str(gpu_graph) not in names:
        raise ConfigError(f"{source}: targets.gpu_graph: no graph named {gpu_graph!r}; the config has "
                          f"{', '.join(names)}", key="targets.gpu_graph")
    try:
        values = {k: float(x) for k, x in v.items()}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: target values must be numbers ({exc})", key="targets") from None
    return {**DEFAULT_TARGETS, **GPU_TARGETS, **values,
            "gpu_graph": None if gpu_graph is None else str(gpu_graph), "informational": informational}


#: Every key of a benchmark config: its default and its check, in the order
#: they are checked (``targets`` after ``graphs``: ``gpu_graph`` names one).
SCHEMA = {
    "description": ("", _text),
    "graphs": (None, _graphs),
    "methods": (METHODS, _methods),
    "repeat": (3, _integer(1)),
    "warmup": (1, _integer(0)),
    "schedule": ("interleaved", _choice("interleaved", "sequential")),
    "rustworkx": ({}, _section({"chunk": (RX_CHUNK, _integer(1)), "build_repeat": (1, _integer(1))})),
    "targets": ({}, _targets),
}


def _apply(schema, cfg, source, prefix=""):
    out = {}
    for key, (default, check) in schema.items():
        v = cfg.get(key)
        out[key] = check(default if v is None else v, source, prefix + key, out)
    return out


def validate_config(cfg, source="config"):
    """Check a benchmark config and fill in defaults; returns a new dict.

    Parameters
    ----------
    cfg : dict
        The config as loaded from YAML (see the module's docstring and
        :data:`SCHEMA`).
    source : str
        Where it came from, to start error messages.

    Returns
    -------
    dict
        Every key of :data:`SCHEMA`: ``methods`` in :data:`ALL_METHODS` order,
        ``targets`` with every target (:data:`DEFAULT_TARGETS`,
        :data:`GPU_TARGETS`, then the config's), ``gpu_graph`` and
        ``informational`` (true: reported without verdicts).

    Raises
    ------
    mst_dist.config.ConfigError
        A :class:`ValueError` naming the key and what it allows.
    """
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source}: a benchmark config must be a mapping with a 'graphs' list")
    extra = sorted(set(cfg) - set(SCHEMA))
    if extra:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(extra)}; allowed: {', '.join(sorted(SCHEMA))}",
                          key=extra[0])
    return _apply(SCHEMA, cfg, source)


def load_config(path):
    """Read a benchmark YAML file and validate it (see :func:`validate_config`)."""
    import yaml

    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    return validate_config(cfg, source=str(path))

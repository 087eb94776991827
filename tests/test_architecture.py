"""The package's structure, read from its imports: no cycle, and layers import only downward.

Every ``import`` counts, function-level ones included: a cycle hidden in a
function is still a cycle a reader has to untangle.
"""
import ast
import re
import pathlib

import pytest

from support import ROOT

PKG = pathlib.Path(ROOT) / "mst_dist"

#: Each layer may import the layers listed after it (and itself), nothing above.
LAYERS = [
    ("cli", "bench", "nx"),                # what a person runs; the networkx backend
    ("api", "clustering.hdbscan",          # minimum_spanning_forest (starts the embedded cluster); HDBSCAN runs it
     "clustering.estimator",               # the HDBSCAN estimator: kNN graphs of points, then hdbscan
     "clustering.warmup"),                 # the clustering kernels compiled ahead (mst-dist warmup)
    ("clustering.neighbours", "clustering._distributed_knn",   # kNN graphs of points, searched on the cluster
     "clustering._distributed_nndescent",  # approximate ones, NN-descent in overlapping parts on the cluster
     "clustering.point_files"),            # points read from .npy, Parquet and Zarr files on the workers
    ("deploy",),                           # clusters mst-dist starts or joins
    ("diagnostics",),                      # dashboard page, figures, progress
    ("engine",),                           # task graphs over the kernels
    ("io", "generators"),                  # sources of edges, outputs
    # the data model, the settings, the environment
    ("graph", "result", "config", "environment", "_version",
     "clustering"),                        # the forest's hierarchy, flat clusters, levels; kNN graphs
    ("kernels",),                          # arrays in, arrays out
    ("phases",),                           # the names of a run's phases and tasks: imports nothing of mst_dist
    ("errors",),                           # every error class, one base: imports nothing of mst_dist
]
_RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _imports(name, path, known):
    """The mst_dist modules ``name`` imports (resolved to modules that exist)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from pkg import sub`` imports the submodule; ``from pkg import name``, the package
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t.startswith("mst_dist") and t != name:
                out.add(t)
    return out


def _graph():
    mods = _modules()
    return {m: _imports(m, p, mods) for m, p in mods.items()}


def _layer(module):
    """The rank of ``module``'s layer: its longest dotted prefix in :data:`LAYERS`."""
    parts = module.split(".")[1:]
    for i in range(len(parts), 0, -1):
        rank = _RANK.get(".".join(parts[:i]))
        if rank is not None:
            return rank
    return None


def test_every_module_has_a_layer():
    missing = sorted(m for m in _modules() if m != "mst_dist" and _layer(m) is None)
    assert not missing, f"modules outside the layers of {__name__}.LAYERS: {missing}"


def test_no_import_cycle():
    graph = _graph()
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            # a subpackage's __init__ and its own modules are one unit (not the root, which
            # re-exports the public names: importing from it is importing everything)
            if "mst_dist" not in (m, t) and (t.startswith(m + ".") or m.startswith(t + ".")):
                continue
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_layers_import_only_downward():
    bad = []
    for m, targets in _graph().items():
        lm = _layer(m)
        for t in targets:
            lt = _layer(t)
            if lm is not None and lt is not None and lt < lm:
                bad.append(f"{m} imports {t}")
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


@pytest.mark.parametrize("layer", ["kernels"])
def test_kernels_know_nothing_of_dask_config_or_logging(layer):
    forbidden = ("dask", "distributed", "logging", "mst_dist.config")
    bad = []
    for m, p in _modules().items():
        if not m.startswith(f"mst_dist.{layer}"):
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bad += [f"{m}: {n}" for n in names if n.split(".")[0] in forbidden or n.startswith(forbidden)]
    assert not bad, "\n".join(bad)


def test_no_private_engine_name_outside_the_engine():
    bad = []
    for m, p in _modules().items():
        if m.startswith("mst_dist.engine"):
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mst_dist.engine"):
                bad += [f"{m}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not bad, "\n".join(bad)


#: Exception classes defined outside mst_dist/errors.py, each with why it is not a public error.
PRIVATE_EXCEPTIONS = {
    # raised and caught inside check_writable to end its trial write: never reaches a caller
    ("mst_dist.io.writers", "_Probe"),
}


def test_every_error_class_is_defined_in_errors():
    """A class deriving from an exception (a builtin one, or one of these) is defined in mst_dist/errors.py."""
    import builtins

    classes = [(m, node.name, [ast.unparse(b).rpartition(".")[2] for b in node.bases])
               for m, p in _modules().items() for node in ast.walk(ast.parse(p.read_text()))
               if isinstance(node, ast.ClassDef)]
    exceptions = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}
    found = set()
    while True:  # classes deriving from those found so far, until none is new
        new = {(m, n) for m, n, bases in classes if (m, n) not in found
               and any(b in exceptions or b.endswith(("Error", "Exception", "Warning")) for b in bases)}
        if not new:
            break
        found |= new
        exceptions |= {n for _, n in new}
    bad = sorted(f"{m}.{n}" for m, n in found - PRIVATE_EXCEPTIONS if m != "mst_dist.errors")
    assert not bad, "exception classes outside mst_dist.errors: " + ", ".join(bad)


# ---------------------------------------------------------------------------
# the kernels are reached through their registry and their contract
# ---------------------------------------------------------------------------

#: Modules outside the kernels that may still import a backend module (a module name, or a package
#: for all its modules), each with the reason, while they move to the registry.  Empty: the engine's
#: runs (mst_dist.engine.runs, split out of the former engine/driver.py) import none; an entry no
#: module needs any more fails :func:`test_the_backend_import_allowlist_is_still_needed`.
BACKEND_IMPORT_ALLOWLIST = {}

_BACKEND_MODULES = ("mst_dist.kernels.cpu", "mst_dist.kernels.gpu")


def _allowed(module):
    return any(module == a or module.startswith(a + ".") for a in BACKEND_IMPORT_ALLOWLIST)


def test_backends_are_reached_through_the_registry():
    """Outside the kernels no module imports a backend (cpu, gpu): ``mst_dist.kernels.backend(name)``."""
    bad = []
    for m, targets in _graph().items():
        if m.startswith("mst_dist.kernels") or _allowed(m):
            continue
        bad += [f"{m} imports {t}" for t in sorted(targets)
                if any(t == b or t.startswith(b + ".") for b in _BACKEND_MODULES)]
    assert not bad, "backend modules imported outside the kernels:\n" + "\n".join(bad)


def test_the_backend_import_allowlist_is_still_needed():
    graph = _graph()
    stale = [a for a in BACKEND_IMPORT_ALLOWLIST
             if not any((m == a or m.startswith(a + ".")) and
                        any(t == b or t.startswith(b + ".") for t in ts for b in _BACKEND_MODULES)
                        for m, ts in graph.items())]
    assert not stale, f"allowed to import a backend but imports none (drop them from the list): {stale}"


#: Calls that return a backend (the registry's, and the engine's own choosers over it).
_BACKEND_GETTERS = {"backend", "kernel_backend", "kernels_for", "host_kernels"}
#: Names that hold a backend by the engine's convention.
_BACKEND_NAMES = {"kern"}


def _getter(node):
    f = node.func if isinstance(node, ast.Call) else None
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return name in _BACKEND_GETTERS


def _backend_uses(tree):
    """``(line, attribute)`` of every attribute the code reads off a backend."""
    names = set(_BACKEND_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _getter(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    def is_backend(node):
        return (isinstance(node, ast.Name) and node.id in names) or _getter(node)

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_backend(node.value):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("hasattr", "getattr") and len(node.args) >= 2 and is_backend(node.args[0]):
            # a capability is asked through its flag, never by probing for a function
            out.append((node.lineno, f"{node.func.id}({ast.unparse(node.args[1])})"))
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and \
                node.left.attr == "name" and is_backend(node.left.value):
            # what a backend can do is its capabilities' business, not its name's
            out.append((node.lineno, f"name compared ({ast.unparse(node)})"))
    return out


@pytest.mark.parametrize("prefix", ["mst_dist.engine", "mst_dist.graph", "mst_dist.io"])
def test_callers_use_only_the_contracts_names(prefix):
    """Every attribute the engine, the graph and the readers read off a backend is the contract's."""
    from mst_dist.kernels.contract import CAPABILITIES

    bad, seen = [], 0
    for m, p in sorted(_modules().items()):
        if m != prefix and not m.startswith(prefix + "."):
            continue
        for line, attr in _backend_uses(ast.parse(p.read_text())):
            seen += 1
            if attr not in CAPABILITIES:
                bad.append(f"{m}:{line}: .{attr}")
    assert not bad, "backend attributes outside the contract (mst_dist.kernels.contract):\n" + "\n".join(bad)
    assert seen, f"no backend use found under {prefix}: the check reads nothing"


def test_every_backend_has_the_contracts_capabilities():
    from mst_dist.kernels import backend
    from mst_dist.kernels.contract import ATTRIBUTES, OPTIONAL_FUNCTIONS, PHASE_FUNCTIONS

    for kern in (backend("reference"), backend("cpu"), backend("gpu", xp="numpy")):
        missing = [a for a in (*PHASE_FUNCTIONS, *ATTRIBUTES) if not hasattr(kern, a)]
        assert not missing, f"{kern.name} lacks {missing}"
        for func, flag in OPTIONAL_FUNCTIONS.items():
            assert hasattr(kern, func) == bool(getattr(kern, flag)), f"{kern.name}: {func} and {flag} disagree"


#: Numba's private names the package relies on; read in :mod:`mst_dist.kernels.compile` only,
#: each behind a function with a fallback.
_NUMBA_PRIVATE = {"_cache", "_cache_file", "_cache_path", "_load_index", "_index_path", "_impl", "_locator",
                  "_cache_hits", "_cache_misses", "_compile_for_args", "_overloads"}


def test_no_private_numba_attribute_outside_the_compile_module():
    bad = []
    for m, p in _modules().items():
        if m == "mst_dist.kernels.compile":
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in _NUMBA_PRIVATE:
                bad.append(f"{m}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("numba"):
                bad += [f"{m}:{node.lineno}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not bad, "Numba's private names outside mst_dist.kernels.compile:\n" + "\n".join(sorted(bad))


# ---------------------------------------------------------------------------
# no long function
# ---------------------------------------------------------------------------

MAX_FUNCTION_LINES = 120

#: Functions allowed more than MAX_FUNCTION_LINES lines of code, each with the reason.  Only Numba
#: kernels whose hot loop would be slower split; an entry no function needs any more fails
#: :func:`test_the_long_function_allowlist_is_still_needed`.
LONG_FUNCTION_ALLOWLIST = {
    # one pass over the bytes of every line of a text graph file: its per-line step and per-token
    # integer scan stay in the one loop, since each, made a function of its own (inlined by Numba),
    # cost 5 to 25 % of the parse time of a 16 MiB piece; its cold steps are functions already
    "mst_dist.io.readers.textkernel.parse_text",
}


def _function_lines():
    """``{module.qualified name: lines of code}`` of every function, its docstring left out."""
    out = {}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    body = child.body
                    if (len(body) > 1 and isinstance(body[0], ast.Expr)
                            and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
                        body = body[1:]
                    out[name] = child.end_lineno - body[0].lineno + 1
                walk(child, name)

    for m, p in _modules().items():
        walk(ast.parse(p.read_text()), m)
    return out


def test_no_function_is_too_long():
    """No function has more than MAX_FUNCTION_LINES lines of code (docstring aside), bar the allowlist."""
    long = {name: n for name, n in _function_lines().items()
            if n > MAX_FUNCTION_LINES and name not in LONG_FUNCTION_ALLOWLIST}
    assert not long, "functions too long (split them into named steps): " + ", ".join(
        f"{name} ({n} lines)" for name, n in sorted(long.items()))


def test_the_long_function_allowlist_is_still_needed():
    lines = _function_lines()
    stale = sorted(name for name in LONG_FUNCTION_ALLOWLIST if lines.get(name, 0) <= MAX_FUNCTION_LINES)
    assert not stale, "no longer long (or gone): drop from LONG_FUNCTION_ALLOWLIST: " + ", ".join(stale)


# ---------------------------------------------------------------------------
# no large class; runs are kinds, not branches
# ---------------------------------------------------------------------------

MAX_CLASS_LINES = 300


def _classes():
    for m, p in _modules().items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ClassDef):
                yield f"{m}.{node.name}", node


def test_no_class_is_too_large():
    """No class spans more than MAX_CLASS_LINES lines (docstrings included)."""
    large = {name: node.end_lineno - node.lineno + 1 for name, node in _classes()
             if node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES}
    assert not large, "classes too large (split them): " + ", ".join(f"{k} ({v} lines)" for k, v in large.items())


def test_every_kind_of_run_is_an_edge_source_and_a_vertex_store():
    """Each kind of run is a pair of parts, each part a class in a module of its own under engine/runs; no
    part inherits from another part (they are composed, not stacked), and every pair is a kind."""
    import itertools

    from mst_dist.engine.runs import KINDS, SOURCES, STORES
    from mst_dist.engine.runs.base import Run
    from mst_dist.engine.runs.parts import KIND_NAMES, EdgeSource, VertexStore

    parts = [*SOURCES.values(), *STORES.values()]
    assert len({cls.__module__ for cls in parts}) == len(parts)
    for cls in parts:
        assert cls.__module__.startswith("mst_dist.engine.runs.") and not issubclass(cls, Run)
        assert cls.__bases__ in ((EdgeSource,), (VertexStore,)), cls
    assert set(KINDS) == {"resident", "streaming", "partitioned", "spread-streaming"}
    assert {(s.name, v.name) for s, v in KINDS.values()} == set(itertools.product(SOURCES, STORES))
    for name, (source, store) in KINDS.items():
        assert issubclass(source, EdgeSource) and issubclass(store, VertexStore)
        assert KIND_NAMES[source.name, store.name] == name
    assert not [c for c in vars(__import__("mst_dist.engine.runs", fromlist=["x"])).values()
                if isinstance(c, type) and issubclass(c, Run) and c is not Run]


def test_each_part_reads_its_own_spec_fields():
    """A field of the spec that a part of a run owns (its ``spec_fields``) is read only in that part's modules
    (the vertex ranges' include their round loop and local contraction)."""
    from mst_dist.engine.runs import SOURCES, STORES

    parts = [*SOURCES.values(), *STORES.values()]
    owned = {f for cls in parts for f in cls.spec_fields}
    extra = {"mst_dist.engine.runs.ranges": ("ranged_rounds", "local_first"),
             "mst_dist.engine.runs.one_worker": ("solver",)}
    for cls in parts:
        modules = [cls.__module__] + [f"mst_dist.engine.runs.{m}" for m in extra.get(cls.__module__, ())]
        for m in modules:
            read = set(re.findall(r"\bspec\.([a-z_]+)", _modules()[m].read_text())) & owned
            assert read <= set(cls.spec_fields), f"{m} reads {sorted(read - set(cls.spec_fields))} of another part"


def test_no_step_asks_which_kind_it_is_in():
    """The steps of a run read no kind flag: no ``if self.streaming``/``isinstance(self, ...)`` in engine/runs."""
    for m, p in _modules().items():
        if not m.startswith("mst_dist.engine.runs"):
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.If, ast.IfExp)):
                test = ast.unparse(node.test)
                assert "self.streams" not in test and "self.kind" not in test and "isinstance(self" not in test, \
                    f"{m}: a step branches on the kind of run ({test}); override the step in the kind instead"

"""The input/output and generator layers import only downward, and never in a circle.

Read from the source (every ``import`` statement, function-level ones too),
not from ``sys.modules``, so a lazy import cannot hide an edge.
"""
import ast
import pathlib

import pytest

from support import ROOT

PACKAGE = pathlib.Path(ROOT) / "mst_dist"

#: What the io and generators layers may import besides themselves.
BELOW = ("mst_dist.graph", "mst_dist.result", "mst_dist.config", "mst_dist.environment",
         "mst_dist.kernels")
#: The modules below them, which must not import them (``result.to_networkx`` and friends
#: may import the interop module, which imports nothing of the result's).
LOWER = BELOW
ALLOWED_UP = {("mst_dist.result", "mst_dist.io.interop")}


def _modules():
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _resolve(name):
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(module):
    """The package modules ``module`` imports (at any depth of its code)."""
    out = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            if n.startswith("mst_dist"):
                target = _resolve(n)
                if target != module:
                    out.add(target)
    return out


def _in(module, prefixes):
    return any(module == p or module.startswith(p + ".") for p in prefixes)


AREA = sorted(m for m in MODULES if _in(m, ("mst_dist.io", "mst_dist.generators")))


def test_the_area_is_found():
    assert "mst_dist.io.readers.text" in AREA and "mst_dist.generators.registry" in AREA


@pytest.mark.parametrize("module", AREA)
def test_imports_only_downward(module):
    up = sorted(t for t in imports(module)
                if not _in(t, ("mst_dist.io", "mst_dist.generators") + BELOW))
    assert up == [], f"{module} imports {up}"
    if _in(module, ("mst_dist.io",)):
        assert not any(_in(t, ("mst_dist.generators",)) for t in imports(module)), module


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _in(m, LOWER)))
def test_lower_layers_do_not_import_the_area(module):
    up = sorted(t for t in imports(module) if t in AREA and (module, t) not in ALLOWED_UP)
    assert up == [], f"{module} imports {up}"


def test_no_cycle_within_the_area_and_below():
    scope = [m for m in MODULES if m in AREA or _in(m, BELOW)]
    graph = {m: {t for t in imports(m) if t in scope} for m in scope}
    state = {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                pytest.fail("import cycle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(scope):
        if m not in state:
            visit(m, [m])

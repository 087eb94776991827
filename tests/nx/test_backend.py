"""mst-dist as a networkx backend: the same answers as networkx's own functions."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from fractions import Fraction
from importlib.metadata import entry_points

import numpy as np
import pytest

from support import needs

nx = needs.module("networkx", "pip install 'mst-dist[networkx]'", module_level=True)

from mst_dist.nx import FUNCTIONS, ArrayGraph, BackendInterface

B = "mst_dist"


@pytest.fixture(autouse=True)
def _quiet_cache_note():
    """networkx notes each reuse of a cached conversion; the tests reuse graphs on purpose."""
    saved = set(nx.config.warnings_to_ignore)
    nx.config.warnings_to_ignore.add("cache")
    yield
    nx.config.warnings_to_ignore = saved


def tied_graph(cls, n=40, m=160, seed=0, labels=True):
    """A graph with many equal weights, string labels and parallel edges for multigraphs."""
    rng = np.random.default_rng(seed)
    G = cls()
    G.add_nodes_from((f"v{i}" if labels else i) for i in rng.permutation(n).tolist())
    for _ in range(m):
        u, v = rng.integers(0, n, 2).tolist()
        name = (lambda i: f"v{i}") if labels else (lambda i: i)
        G.add_edge(name(u), name(v), weight=int(rng.integers(0, 4)), cost=float(rng.random()))
    return G


# --------------------------------------------------------------------------
# registration
# --------------------------------------------------------------------------

def test_registered_through_networkx_entry_points():
    (ep,) = entry_points(group="networkx.backends", name=B)
    assert ep.load() is BackendInterface
    (info_ep,) = entry_points(group="networkx.backend_info", name=B)
    info = info_ep.load()()
    assert info["backend_name"] == B
    assert set(info["functions"]) == set(FUNCTIONS)
    for name in FUNCTIONS:
        assert callable(getattr(BackendInterface, name))
        assert name in nx.utils.backends._registered_algorithms, name   # a networkx name
    assert "mst_dist" in nx.minimum_spanning_tree.backends


@pytest.mark.slow
def test_import_networkx_imports_nothing_of_mst_dist():
    code = ("import sys, networkx as nx; "
            "assert 'mst_dist' in nx.utils.backends.backend_info; "
            "print(sorted(m for m in sys.modules if m.startswith('mst_dist')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------
# spanning forests: networkx's Kruskal exactly, ties included
# --------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [nx.Graph, nx.MultiGraph])
@pytest.mark.parametrize("weight", ["weight", "cost", "missing"])
def test_spanning_edges_identical_to_kruskal(client, cls, weight):
    G = tied_graph(cls, seed=3)
    for func in (nx.minimum_spanning_edges, nx.maximum_spanning_edges):
        for keys in (True, False):
            for data in (True, False):
                ours = list(func(G, weight=weight, keys=keys, data=data, backend=B, client=client))
                theirs = list(func(G, weight=weight, keys=keys, data=data))
                assert ours == theirs                   # same edges, same order, same orientation
                if data:                                # the graph's own attribute dicts
                    assert all(a[-1] is b[-1] for a, b in zip(ours, theirs))


def test_spanning_trees_identical_graphs(client):
    for cls in (nx.Graph, nx.MultiGraph):
        G = tied_graph(cls, seed=5)
        G.graph["name"] = "tied"
        nx.set_node_attributes(G, {v: {"colour": i % 3} for i, v in enumerate(G)})
        for func in (nx.minimum_spanning_tree, nx.maximum_spanning_tree):
            T, R = func(G, backend=B, client=client), func(G)
            assert type(T) is cls
            assert T.graph == R.graph and T._node == R._node and T._adj == R._adj


def test_current_client_is_used_and_algorithm_names_give_the_same_forest(client):
    G = tied_graph(nx.Graph, seed=7, labels=False)     # the session client is the current one
    expected = list(nx.minimum_spanning_edges(G, data=False))
    for algorithm in ("kruskal", "prim", "boruvka", "borůvka"):
        assert list(nx.minimum_spanning_edges(G, algorithm=algorithm, data=False, backend=B)) \
            == expected
    with pytest.raises(ValueError, match="random is not a valid choice"):
        nx.minimum_spanning_edges(G, algorithm="random", backend=B)
    with pytest.raises(nx.NetworkXNotImplemented, match="multigraph"):
        list(nx.minimum_spanning_edges(nx.MultiGraph(G), algorithm="boruvka", backend=B))
    with pytest.raises(nx.NetworkXNotImplemented, match="directed"):
        nx.minimum_spanning_tree(nx.DiGraph(G), backend=B)


@pytest.mark.parametrize("weights", [
    [1.5, float("inf"), -float("inf"), 0.0, -0.0, 1.5, 2],          # infinities, signed zeros
    [2**70, 3, -(2**65), 3, 2**70, 0, 1],                          # beyond 64 bits
    [2**60 + 1, 2.0**60, 2**60, 1.5, 7, 2**60 + 1, 0.5],           # ints beyond 2**53 with floats
    [Fraction(1, 3), Fraction(1, 2), 0.4, Fraction(1, 3), 1, 0, True],
    [True, False, True, True, False, 1, 0],
    [-(2**63), 2**63 - 1, 0, -(2**63), 5, 5, 1],                   # int64's ends: -w overflows
])
def test_weights_networkx_sorts_are_ours(client, weights):
    G = nx.MultiGraph()
    ends = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 0), (1, 3), (0, 1)]
    for (u, v), w in zip(ends, weights):
        G.add_edge(u, v, weight=w)
    for func in (nx.minimum_spanning_edges, nx.maximum_spanning_edges):
        assert list(func(G, backend=B, client=client)) == list(func(G))


def test_nan_weights_raise_when_read_or_are_dropped(client):
    G = tied_graph(nx.Graph, seed=2)
    u, v = next(iter(G.edges))
    G.edges[u, v]["weight"] = float("nan")
    edges = nx.minimum_spanning_edges(G, backend=B, client=client)     # lazy, as networkx
    with pytest.raises(ValueError, match="NaN found as an edge weight"):
        list(edges)
    assert list(nx.minimum_spanning_edges(G, ignore_nan=True, backend=B, client=client)) == \
        list(nx.minimum_spanning_edges(G, ignore_nan=True))
    G.edges[u, v]["weight"] = "heavy"
    G.__networkx_cache__.clear()
    with pytest.raises(TypeError, match="real numbers"):
        list(nx.minimum_spanning_edges(G, backend=B, client=client))


def test_partition_spanning_tree(client):
    EP = nx.EdgePartition
    G = tied_graph(nx.Graph, n=12, m=40, seed=11, labels=False)
    edges = list(G.edges)
    for i, state in ((0, EP.INCLUDED), (3, EP.EXCLUDED), (5, EP.INCLUDED), (8, EP.EXCLUDED)):
        G.edges[edges[i]]["part"] = state
    for minimum in (True, False):
        T = nx.partition_spanning_tree(G, minimum, partition="part", backend=B, client=client)
        R = nx.partition_spanning_tree(G, minimum, partition="part")
        assert T._adj == R._adj
        assert T.has_edge(*edges[0]) and not T.has_edge(*edges[3])


def test_empty_and_edgeless(client):
    for G in (nx.Graph(), nx.empty_graph(3), nx.MultiGraph([(0, 0)])):
        T = nx.minimum_spanning_tree(G, backend=B, client=client)
        assert list(T) == list(G) and T.number_of_edges() == 0


# --------------------------------------------------------------------------
# components, forests and trees
# --------------------------------------------------------------------------

def components_cases():
    G = tied_graph(nx.Graph, n=60, m=45, seed=1)
    G.add_node("alone")
    yield G
    yield nx.MultiGraph(G)
    yield nx.path_graph(5)
    yield nx.Graph([(0, 1)])


def test_connected_components(client):
    for G in components_cases():
        ours = list(nx.connected_components(G, backend=B, client=client))
        assert ours == list(nx.connected_components(G))          # same sets, same order
        assert nx.number_connected_components(G, backend=B, client=client) == len(ours)
        assert nx.is_connected(G, backend=B, client=client) is (len(ours) == 1)
        first = next(iter(G))
        assert nx.node_connected_component(G, first, backend=B, client=client) == \
            nx.node_connected_component(G, first)
    with pytest.raises(nx.NetworkXPointlessConcept):
        nx.is_connected(nx.Graph(), backend=B, client=client)
    with pytest.raises(KeyError):
        nx.node_connected_component(nx.path_graph(3), "absent", backend=B, client=client)


def test_weak_components_and_recognition(client):
    D = nx.gnp_random_graph(40, 0.04, seed=3, directed=True)
    assert list(nx.weakly_connected_components(D, backend=B, client=client)) == \
        list(nx.weakly_connected_components(D))
    assert nx.number_weakly_connected_components(D, backend=B, client=client) == \
        nx.number_weakly_connected_components(D)
    assert nx.is_weakly_connected(D, backend=B, client=client) is nx.is_weakly_connected(D)
    cases = [nx.path_graph(6), nx.cycle_graph(5), nx.Graph([(0, 1), (2, 3)]),
             nx.Graph([(0, 0), (1, 2)]), nx.MultiGraph([(0, 1), (0, 1)]), nx.empty_graph(4),
             nx.DiGraph([(0, 1), (2, 1), (1, 3)]), nx.DiGraph([(0, 1), (1, 0)]), D]
    for G in cases:
        assert nx.is_forest(G, backend=B, client=client) is nx.is_forest(G), G.edges
        assert nx.is_tree(G, backend=B, client=client) is nx.is_tree(G), G.edges
    with pytest.raises(nx.NetworkXPointlessConcept):
        nx.is_tree(nx.Graph(), backend=B, client=client)


# --------------------------------------------------------------------------
# the conversion and the hooks
# --------------------------------------------------------------------------

def test_array_graph_converts_once_in_edge_order():
    G = nx.MultiGraph()
    G.add_edge("b", "a", key="k", weight=2)
    G.add_edge("a", "c", weight=1)
    A = BackendInterface.convert_from_nx(G)
    assert isinstance(A, ArrayGraph) and A.nodes == ["b", "a", "c"]
    assert A.edges == list(G.edges(keys=True, data=True))
    assert (A.src.tolist(), A.dst.tolist()) == ([0, 1], [1, 2])
    assert A.weights("weight") is A.weights("weight")             # read once, kept
    assert BackendInterface.convert_to_nx(A) is G
    assert BackendInterface.convert_to_nx(3) == 3


def test_can_run_and_should_run():
    G = nx.path_graph(3)
    assert BackendInterface.can_run("minimum_spanning_tree", (G,), {}) is True
    assert "attribute name" in BackendInterface.can_run(
        "minimum_spanning_tree", (G,), {"weight": lambda u, v, d: 1})
    assert "networkx" in BackendInterface.should_run("minimum_spanning_tree", (G,), {})
    big = nx.empty_graph(10)
    big.add_edges_from((i % 10, (i * 7 + 1) % 10, {"k": i}) for i in range(10))
    from mst_dist.nx import interface

    assert isinstance(BackendInterface.should_run("is_tree", (big,), {}), str)
    saved = interface.SMALL_GRAPH_EDGES
    interface.SMALL_GRAPH_EDGES = 5
    try:
        assert BackendInterface.should_run("is_tree", (big,), {}) is True
    finally:
        interface.SMALL_GRAPH_EDGES = saved


# --------------------------------------------------------------------------
# networkx's own test module, run against the backend
# --------------------------------------------------------------------------

def not_applying(name):
    """Why a test of networkx's MST module does not run against the backend (docs/networkx.md), or None."""
    if name.startswith("test_random_spanning_tree_"):
        if name.endswith("_large"):
            return "networkx's slow tests: skipped without --runslow"
        return "random_spanning_tree samples a tree at random: not answered here (xfail)"
    if name.startswith("test_nst_"):
        return "number_of_spanning_trees counts trees (Kirchhoff): not answered here (xfail)"
    return None


@pytest.mark.slow
def test_networkx_mst_tests_pass_against_the_backend(tmp_path):
    # the spanning-tree iterators pass too, but make thousands of calls (minutes): left out
    report = tmp_path / "report.xml"
    env = dict(os.environ, NETWORKX_TEST_BACKEND=B)
    env.pop("NETWORKX_FALLBACK_TO_NX", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "networkx.algorithms.tree.tests.test_mst",
         "-k", "not Iterator", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         "-o", "addopts="],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False)
    outcome = {}
    for case in ET.parse(report).iter("testcase"):
        name = (case.get("classname"), case.get("name").split("[")[0])
        kinds = [c.tag for c in case] + [c.get("type", "") for c in case]
        outcome[name] = ("failed" if "failure" in kinds or "error" in kinds else
                         "xfailed" if "pytest.xfail" in kinds else
                         "skipped" if "skipped" in kinds else "passed")
    failed = sorted(n for n, o in outcome.items() if o == "failed")
    assert not failed, proc.stdout[-4000:]
    not_run = {n for n, o in outcome.items() if o in ("xfailed", "skipped")}
    assert not_run == {n for n in outcome if not_applying(n[1])}, proc.stdout[-4000:]
    passed = {n[1] for n, o in outcome.items() if o == "passed"}
    assert sum(o == "passed" for o in outcome.values()) >= 50, proc.stdout[-4000:]
    assert {"test_minimum_tree", "test_key_data_bool", "test_nan_weights"} <= passed

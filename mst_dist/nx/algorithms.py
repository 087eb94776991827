"""networkx's spanning-forest and connected-component functions, answered by mst-dist.

Each function has its networkx name and signature (plus a keyword-only
``client``), takes an :class:`~mst_dist.nx.convert.ArrayGraph` and hands back
what networkx's own hands back: the same edge tuples with the graph's own
attribute dicts, graphs of the input's class, node sets, Python numbers.

One run of :func:`mst_dist.minimum_spanning_forest` answers each call, on
``client``, else on the current ``distributed`` client, else on the embedded
default cluster.  The forest is the unique one under ``(weight, edge id)``
with edge ids in ``G.edges(data=True)`` order: exactly the edges networkx's
Kruskal picks, in the order it yields them, ties included.  ``algorithm``
names ``"prim"`` and ``"boruvka"`` give that same forest (with distinct
weights, the one forest Prim's and Borůvka's algorithms find too; with ties,
Prim's traversal may pick another forest of the same weight).
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from mst_dist.api import minimum_spanning_forest
from mst_dist.graph import Graph

__all__ = [
    "minimum_spanning_edges", "maximum_spanning_edges", "minimum_spanning_tree",
    "maximum_spanning_tree", "kruskal_mst_edges", "prim_mst_edges", "boruvka_mst_edges",
    "partition_spanning_tree",
    "connected_components", "number_connected_components", "is_connected",
    "node_connected_component", "weakly_connected_components",
    "number_weakly_connected_components", "is_weakly_connected", "is_forest", "is_tree",
]

#: networkx's algorithm names (``minimum_spanning_edges(algorithm=...)``).
ALGORITHMS = ("boruvka", "borůvka", "kruskal", "prim")


# ---------------------------------------------------------------------------
# the two runs everything here is made of
# ---------------------------------------------------------------------------

def _run(G, src, dst, keys, client):
    g = Graph.from_arrays(src, dst, keys, n_vertices=len(G.nodes),
                          name=f"networkx({G.graph.__class__.__name__})")
    return minimum_spanning_forest(g, client)  # the package's one client rule


def _forest(G, weight, minimum, ignore_nan, client, partition=None):
    """Edge ids of the spanning forest, in the order networkx's Kruskal yields them.

    ``partition``: an edge attribute holding :class:`networkx.EdgePartition`
    values; included edges come first (in edge order), excluded ones never.
    """
    kept, keys = G.order_keys(weight, minimum, ignore_nan)
    if partition is not None:
        state = [G.edges[j][-1].get(partition) for j in (range(len(G.edges)) if kept is None else kept)]
        inc = np.fromiter((s == nx.EdgePartition.INCLUDED for s in state), bool, len(state))
        exc = np.fromiter((s == nx.EdgePartition.EXCLUDED for s in state), bool, len(state))
        if inc.any() or exc.any():
            ranks = np.unique(keys, return_inverse=True)[1].reshape(-1).astype(np.int64) + 1
            ranks[inc] = 0
            ids = np.arange(len(state)) if kept is None else kept
            kept, keys = ids[~exc], ranks[~exc]
    src, dst = (G.src, G.dst) if kept is None else (G.src[kept], G.dst[kept])
    res = _run(G, src, dst, keys, client)
    ids = res.edge_ids
    ids = ids[np.argsort(keys[ids], kind="stable")]     # (key, edge id): ids come ascending
    return ids if kept is None else kept[ids]


def _labels(G, client):
    """Component label of each vertex, numbered by each component's first node."""
    res = _run(G, G.src, G.dst, np.ones(len(G.src), np.int8), client)
    return res.labels, res.n_components


def _edge_tuples(G, ids, keys, data):
    edges = G.edges
    if G.is_multigraph():
        if keys:
            return (edges[j] if data else edges[j][:3] for j in ids.tolist())
        return ((e[0], e[1], e[3]) if data else e[:2] for e in map(edges.__getitem__, ids.tolist()))
    return (edges[j] if data else edges[j][:2] for j in ids.tolist())


def _check_algorithm(algorithm):
    if algorithm not in ALGORITHMS:
        raise ValueError(f"{algorithm} is not a valid choice for an algorithm.")


def _undirected(G, algorithm=None):
    if G.is_directed():
        raise nx.NetworkXNotImplemented("not implemented for directed type")
    if algorithm in ("boruvka", "borůvka") and G.is_multigraph():
        raise nx.NetworkXNotImplemented("not implemented for multigraph type")


# ---------------------------------------------------------------------------
# spanning forests (networkx.algorithms.tree.mst)
# ---------------------------------------------------------------------------

def _spanning_edges(G, minimum, weight, keys, data, ignore_nan, client, partition=None):
    # a generator, as networkx's: a NaN weight raises when the edges are read
    yield from _edge_tuples(G, _forest(G, weight, minimum, ignore_nan, client, partition), keys, data)


def minimum_spanning_edges(G, algorithm="kruskal", weight="weight", keys=True, data=True,
                           ignore_nan=False, *, client=None):
    """Edges of a minimum spanning forest, as networkx's (an iterator)."""
    _check_algorithm(algorithm)
    _undirected(G, algorithm)
    return _spanning_edges(G, True, weight, keys, data, ignore_nan, client)


def maximum_spanning_edges(G, algorithm="kruskal", weight="weight", keys=True, data=True,
                           ignore_nan=False, *, client=None):
    """Edges of a maximum spanning forest, as networkx's (an iterator): the weights' order reversed."""
    _check_algorithm(algorithm)
    _undirected(G, algorithm)
    return _spanning_edges(G, False, weight, keys, data, ignore_nan, client)


def kruskal_mst_edges(G, minimum, weight="weight", keys=True, data=True, ignore_nan=False,
                      partition=None, *, client=None):
    """networkx's Kruskal (with its edge partition): the same edges in the same order."""
    _undirected(G)
    return _spanning_edges(G, minimum, weight, keys, data, ignore_nan, client, partition)


def prim_mst_edges(G, minimum, weight="weight", keys=True, data=True, ignore_nan=False, *,
                   client=None):
    """Edges of a minimum (maximum) spanning forest for networkx's Prim entry point."""
    _undirected(G)
    return _spanning_edges(G, minimum, weight, keys, data, ignore_nan, client)


def boruvka_mst_edges(G, minimum=True, weight="weight", keys=False, data=True, ignore_nan=False,
                      *, client=None):
    """Edges of a minimum (maximum) spanning forest for networkx's Borůvka entry point."""
    _undirected(G, "boruvka")
    return _spanning_edges(G, minimum, weight, keys, data, ignore_nan, client)


def _tree(G, edges):
    T = G.graph.__class__()
    T.graph.update(G.graph.graph)
    T.add_nodes_from(G.graph.nodes.items())
    T.add_edges_from(edges)
    return T


def minimum_spanning_tree(G, weight="weight", algorithm="kruskal", ignore_nan=False, *,
                          client=None):
    """A minimum spanning forest as a graph of ``G``'s class, with its attributes."""
    edges = minimum_spanning_edges(G, algorithm, weight, keys=True, data=True,
                                   ignore_nan=ignore_nan, client=client)
    return _tree(G, edges)


def maximum_spanning_tree(G, weight="weight", algorithm="kruskal", ignore_nan=False, *,
                          client=None):
    """A maximum spanning forest as a graph of ``G``'s class, with its attributes."""
    edges = maximum_spanning_edges(G, algorithm, weight, keys=True, data=True,
                                   ignore_nan=ignore_nan, client=client)
    return _tree(G, list(edges))


def partition_spanning_tree(G, minimum=True, weight="weight", partition="partition",
                            ignore_nan=False, *, client=None):
    """networkx's spanning tree respecting an edge partition (included, excluded, open edges)."""
    return _tree(G, kruskal_mst_edges(G, minimum, weight, keys=True, data=True,
                                      ignore_nan=ignore_nan, partition=partition, client=client))


# ---------------------------------------------------------------------------
# components (networkx.algorithms.components), forests and trees (tree.recognition)
# ---------------------------------------------------------------------------

def _component_sets(G, client):
    labels, c = _labels(G, client)
    members = [set() for _ in range(c)]
    for node, lab in zip(G.nodes, labels.tolist()):
        members[lab].add(node)
    return members


def connected_components(G, *, client=None):
    """The node sets of the components, in the order of their first node (as networkx)."""
    _undirected(G)
    yield from _component_sets(G, client)


def number_connected_components(G, *, client=None):
    """How many components, isolated nodes counted."""
    _undirected(G)
    return int(_labels(G, client)[1])


def is_connected(G, *, client=None):
    """Whether ``G`` is one component; networkx's error for a graph without nodes."""
    _undirected(G)
    if len(G) == 0:
        raise nx.NetworkXPointlessConcept("Connectivity is undefined for the null graph.")
    return number_connected_components(G, client=client) == 1


def node_connected_component(G, n, *, client=None):
    """The node set of ``n``'s component."""
    _undirected(G)
    i = G.vertex(n)
    labels, _ = _labels(G, client)
    sel = np.flatnonzero(labels == labels[i]).tolist()
    return {G.nodes[j] for j in sel}


def _directed(G):
    if not G.is_directed():
        raise nx.NetworkXNotImplemented("not implemented for undirected type")


def weakly_connected_components(G, *, client=None):
    """The node sets of a directed graph's weak components, in the order of their first node."""
    _directed(G)
    yield from _component_sets(G, client)


def number_weakly_connected_components(G, *, client=None):
    """How many weak components a directed graph has."""
    _directed(G)
    return int(_labels(G, client)[1])


def is_weakly_connected(G, *, client=None):
    """Whether a directed graph is one weak component."""
    _directed(G)
    if len(G) == 0:
        raise nx.NetworkXPointlessConcept(
            "Connectivity is undefined for the null graph.")
    return int(_labels(G, client)[1]) == 1


def _pointless(G):
    if len(G) == 0:
        raise nx.NetworkXPointlessConcept("G has no nodes.")


def is_forest(G, *, client=None):
    """Whether every (weak) component is a tree: edges = nodes - components.

    A self-loop or a parallel edge is an edge too many, as in networkx.
    """
    _pointless(G)
    return G.number_of_edges() == len(G) - int(_labels(G, client)[1])


def is_tree(G, *, client=None):
    """Whether ``G`` is one (weak) component with ``n - 1`` edges."""
    _pointless(G)
    return G.number_of_edges() == len(G) - 1 and int(_labels(G, client)[1]) == 1

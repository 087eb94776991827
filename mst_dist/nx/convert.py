"""A networkx graph as arrays: the backend's graph type, converted once.

networkx's Kruskal sorts ``G.edges(data=True)`` (``keys=True`` for a
multigraph) stably by weight.  :class:`ArrayGraph` numbers the edges in that
same order, so mst-dist's strict order ``(weight, edge id)`` is networkx's
sort order and the forests are identical, ties included.
"""
from __future__ import annotations

import contextlib
import gc
import numbers

import numpy as np

__all__ = ["ArrayGraph", "convert_from_nx", "convert_to_nx"]

_EXACT_FLOAT = 2 ** 53   # beyond it an int and a float64 may compare differently than in Python


class ArrayGraph:
    """A networkx graph converted for mst-dist: vertex ids and edge endpoints as arrays.

    Attributes
    ----------
    graph : networkx.Graph
        The graph converted (any of the four classes).  It is kept, not
        copied, for what the answers hand back: its class, its graph and node
        attributes, the edges' own attribute dicts.
    nodes : list
        Vertex ``i`` is the node ``nodes[i]`` (``list(graph)`` order).
    edges : list of tuple
        Edge ``j`` as networkx gives it: ``(u, v, d)``, or ``(u, v, key, d)``
        for a multigraph, in ``graph.edges(data=True)`` order.
    src, dst : int64 arrays
        Edge ``j``'s endpoints as vertex ids.

    The weights of an attribute are read from the edges' dicts on first use
    and kept (:meth:`weights`), like a converted graph in networkx's own
    cache: mutate the graph through its methods (which clear that cache),
    not by writing into the dicts, between calls.
    """

    __networkx_backend__ = "mst_dist"

    def __init__(self, graph, nodes, edges, src, dst):
        self.graph = graph
        self.nodes = nodes
        self.edges = edges
        self.src = src
        self.dst = dst
        self._weights = {}
        self._index = None

    @classmethod
    def from_networkx(cls, G):
        """Convert ``G``: one pass over its nodes, one over its edges."""
        nodes = list(G)
        with _gc_paused():
            edges = list(G.edges(keys=True, data=True) if G.is_multigraph() else G.edges(data=True))
        m = len(edges)
        identity = all(type(v) is int and v == i for i, v in enumerate(nodes))
        if identity:
            src = np.fromiter((e[0] for e in edges), np.int64, m)
            dst = np.fromiter((e[1] for e in edges), np.int64, m)
        else:
            index = {v: i for i, v in enumerate(nodes)}
            src = np.fromiter((index[e[0]] for e in edges), np.int64, m)
            dst = np.fromiter((index[e[1]] for e in edges), np.int64, m)
        return cls(G, nodes, edges, src, dst)

    def __len__(self):
        return len(self.nodes)

    def __repr__(self):
        return (f"ArrayGraph({self.graph.__class__.__name__}, nodes={len(self.nodes):,}, "
                f"edges={len(self.edges):,})")

    def is_directed(self):
        return self.graph.is_directed()

    def is_multigraph(self):
        return self.graph.is_multigraph()

    def number_of_edges(self):
        return len(self.edges)

    def vertex(self, node):
        """The vertex id of ``node``; ``KeyError`` if it is not a node (as networkx)."""
        if self._index is None:
            self._index = {v: i for i, v in enumerate(self.nodes)}
        return self._index[node]

    def weights(self, attr):
        """Edge weights of attribute ``attr`` (default 1, as networkx), an array in edge order.

        Integers and floats as an int64/float64 array; other real numbers
        (``Fraction``, ``Decimal``, integers beyond 64 bits, or integers
        beyond 2**53 mixed with floats) as an object array, compared by
        Python itself.  Anything else is a ``TypeError`` naming the edge.
        """
        w = self._weights.get(attr)
        if w is None:
            w = self._weights[attr] = _weight_array([e[-1].get(attr, 1) for e in self.edges],
                                                    self.edges, attr)
        return w

    def order_keys(self, attr, minimum=True, ignore_nan=False):
        """Keys whose order ``(key, edge id)`` is networkx's sort of the edges by weight.

        Returns ``(kept, keys)``: ``kept`` the edge ids taking part (``None``:
        all), ``keys`` an int64 or float64 array over them, finite, for the
        engine.  ``minimum=False`` orders by decreasing weight, still by edge
        id among equal weights (networkx sorts with ``reverse=True``, which
        keeps equal items in their order).  A NaN weight raises networkx's
        ``ValueError``, or with ``ignore_nan`` drops the edge.
        """
        w = self.weights(attr)
        kept = None
        nan = _nan_mask(w)
        if nan is not None and nan.any():
            if not ignore_nan:
                raise ValueError(f"NaN found as an edge weight. Edge {self.edges[int(np.argmax(nan))]}")
            kept = np.flatnonzero(~nan)
            w = w[kept]
        if w.dtype == object:
            keys = _python_ranks(w)
        elif w.dtype.kind == "f" and not np.isfinite(w).all():
            keys = _ranks(w)                      # ±inf: the engine takes finite weights
        elif w.dtype.kind == "u" and w.size and w.max() > np.iinfo(np.int64).max:
            keys = _ranks(w)
        elif w.dtype.kind in "iu" and not minimum and w.size and w.min() == np.iinfo(np.int64).min:
            keys = _ranks(w)                      # -w would overflow
        else:
            keys = w.astype(np.int64, copy=False) if w.dtype.kind == "u" else w
        return kept, (keys if minimum else -keys)


@contextlib.contextmanager
def _gc_paused():
    """No cyclic garbage collection while a list of millions of fresh tuples is built.

    The tuples hold no cycles, but each allocation burst triggers collections
    that scan the whole growing list, so the conversion's time would grow
    faster than its edges.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _weight_array(vals, edges, attr):
    if not vals:
        return np.zeros(0, np.int64)
    try:
        w = np.asarray(vals)
    except (OverflowError, TypeError, ValueError):
        w = None
    if w is not None and w.ndim == 1:
        if w.dtype.kind == "b":
            return w.astype(np.int64)
        if w.dtype.kind in "iu":
            return w
        if w.dtype.kind == "f" and not any(type(x) is int and abs(x) > _EXACT_FLOAT for x in vals):
            return w
    for j, x in enumerate(vals):
        if not isinstance(x, numbers.Real):
            raise TypeError(f"edge {edges[j][:-1]} has weight {x!r} (attribute {attr!r}): "
                            f"weights must be real numbers")
    w = np.empty(len(vals), dtype=object)
    w[:] = vals
    return w


def _nan_mask(w):
    if w.dtype == object:
        # NaN is the one value unequal to itself (float, numpy and Decimal NaNs alike)
        return np.fromiter((x != x for x in w), bool, len(w))  # noqa: PLR0124
    if w.dtype.kind == "f":
        return np.isnan(w)
    return None


def _ranks(w):
    """Dense ranks (int64) of a numeric array: equal values, equal ranks."""
    return np.unique(w, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _python_ranks(w):
    """Dense ranks (int64) of an object array, by Python's own comparisons."""
    order = sorted(range(len(w)), key=w.__getitem__)
    ranks = np.empty(len(w), np.int64)
    r = -1
    prev = None
    for i, j in enumerate(order):
        if i == 0 or prev < w[j]:
            r += 1
        prev = w[j]
        ranks[j] = r
    return ranks


def convert_from_nx(G, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                    preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                    graph_name=None):
    """networkx's conversion hook: an :class:`ArrayGraph` of ``G``.

    The ``edge_attrs``/``preserve_*`` hints are not needed: the converted
    graph keeps the networkx graph it came from, so every attribute stays
    reachable, and weights are read per attribute on first use.
    """
    if isinstance(G, ArrayGraph):
        return G
    return ArrayGraph.from_networkx(G)


def convert_to_nx(obj, *, name=None):
    """networkx's conversion hook back: the networkx graph of an :class:`ArrayGraph`, else ``obj``.

    The backend's answers are networkx objects already (graphs, node sets,
    edge tuples, Python numbers).
    """
    if isinstance(obj, ArrayGraph):
        return obj.graph
    return obj

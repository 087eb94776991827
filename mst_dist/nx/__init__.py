"""mst-dist as a networkx backend: ``nx.minimum_spanning_tree(G, backend="mst_dist")``.

networkx finds the backend through the ``networkx.backends`` entry point
(:class:`~mst_dist.nx.interface.BackendInterface`); what its documentation
shows of it comes from the ``networkx.backend_info`` entry point, the small
module ``_mst_dist_nx`` (read on every ``import networkx``, so it imports
nothing of mst-dist).  A networkx graph is converted once
(:class:`~mst_dist.nx.convert.ArrayGraph`; networkx caches the conversion on
the graph) and the spanning-forest and connected-component functions of
:mod:`mst_dist.nx.algorithms` answer under their networkx names and
signatures, plus a keyword-only ``client``.

Examples
--------
>>> import networkx as nx
>>> G = nx.Graph([("a", "b", {"weight": 3}), ("b", "c", {"weight": 1}), ("a", "c", {"weight": 1})])
>>> sorted(nx.minimum_spanning_tree(G, backend="mst_dist").edges(data="weight"))
[('a', 'c', 1), ('b', 'c', 1)]
>>> nx.number_connected_components(G, backend="mst_dist")
1
"""
from mst_dist.nx.convert import ArrayGraph, convert_from_nx, convert_to_nx
from mst_dist.nx.interface import FUNCTIONS, BackendInterface

__all__ = ["ArrayGraph", "BackendInterface", "FUNCTIONS", "convert_from_nx", "convert_to_nx"]

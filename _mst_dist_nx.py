"""What networkx shows of the mst-dist backend (the ``networkx.backend_info`` entry point).

networkx calls :func:`get_info` on every ``import networkx``, so this module
stands apart from the ``mst_dist`` package and imports nothing: importing
``mst_dist`` (NumPy, Dask) would slow down every program that imports
networkx.  The backend itself is ``mst_dist.nx`` (the ``networkx.backends``
entry point), loaded only when a call is dispatched to it.
"""

_CLIENT = {
    "client : distributed.Client, optional":
        "The cluster to run on; default: the current distributed client, else "
        "mst-dist's embedded local cluster.",
}

_SAME_FOREST = ("The forest is the one networkx's Kruskal picks, ties included: edges are "
                "ordered by (weight, position in G.edges(data=True)). ``algorithm`` names "
                "'prim' and 'boruvka' give that forest too (the same one whenever the "
                "weights are distinct).")

_FOREST_FUNCTIONS = ("minimum_spanning_edges", "maximum_spanning_edges", "minimum_spanning_tree",
                     "maximum_spanning_tree", "kruskal_mst_edges", "prim_mst_edges",
                     "boruvka_mst_edges", "partition_spanning_tree")
_COMPONENT_FUNCTIONS = ("connected_components", "number_connected_components", "is_connected",
                        "node_connected_component", "weakly_connected_components",
                        "number_weakly_connected_components", "is_weakly_connected",
                        "is_forest", "is_tree")


def get_info():
    """The backend's description for networkx: name, summary, functions and their extra keywords."""
    functions = {name: {"additional_docs": _SAME_FOREST, "additional_parameters": dict(_CLIENT)}
                 for name in _FOREST_FUNCTIONS}
    functions.update({name: {"additional_docs": "Components from the labels of one "
                                                 "minimum spanning forest run.",
                             "additional_parameters": dict(_CLIENT)}
                      for name in _COMPONENT_FUNCTIONS})
    return {
        "backend_name": "mst_dist",
        "project": "mst-dist",
        "package": "mst_dist",
        "short_summary": "Minimum spanning forests and connected components by distributed "
                         "Borůvka on Dask.",
        "functions": functions,
        "default_config": {},
    }

"""The object networkx loads through the ``networkx.backends`` entry point."""
from __future__ import annotations

import inspect

from mst_dist.nx import algorithms
from mst_dist.nx.convert import convert_from_nx, convert_to_nx

__all__ = ["BackendInterface", "FUNCTIONS", "SMALL_GRAPH_EDGES"]

#: The networkx functions this backend answers, by their networkx names.
FUNCTIONS = tuple(algorithms.__all__)

#: Below this many edges networkx's own functions answer sooner than a cluster run.
SMALL_GRAPH_EDGES = 100_000


class BackendInterface:
    """mst-dist as a networkx backend: the hooks networkx calls, then one attribute per function.

    ``convert_from_nx``/``convert_to_nx`` turn a networkx graph into an
    :class:`~mst_dist.nx.convert.ArrayGraph` and back; ``can_run`` says
    which calls the backend answers; ``should_run`` (consulted only when
    networkx picks a backend by itself, from ``nx.config.backend_priority``)
    leaves small graphs to networkx.  ``backend="mst_dist"`` always runs here.
    """

    convert_from_nx = staticmethod(convert_from_nx)
    convert_to_nx = staticmethod(convert_to_nx)

    @staticmethod
    def can_run(name, args, kwargs):
        """``True``, or why not: weights must come from an edge attribute, not a function."""
        try:
            bound = inspect.signature(getattr(algorithms, name)).bind_partial(*args, **kwargs)
        except TypeError:
            return True          # let the call itself say what is wrong
        if callable(bound.arguments.get("weight")):
            return "weight must be an edge attribute name, not a function"
        return True

    @staticmethod
    def should_run(name, args, kwargs):
        """Large graphs only: a run on a cluster costs more than networkx on a small graph."""
        G = args[0] if args else kwargs.get("G")
        m = G.number_of_edges() if hasattr(G, "number_of_edges") else 0
        if m < SMALL_GRAPH_EDGES:
            return f"a graph of fewer than {SMALL_GRAPH_EDGES:,} edges is done sooner by networkx"
        return True


for _name in FUNCTIONS:
    setattr(BackendInterface, _name, staticmethod(getattr(algorithms, _name)))
del _name

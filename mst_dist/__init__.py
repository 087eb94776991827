"""mst-dist: minimum spanning forests of very large graphs on a Dask cluster.

>>> import mst_dist
>>> g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])
>>> res = mst_dist.minimum_spanning_forest(g)
>>> res.edge_ids.tolist(), res.total_weight, res.n_components
([1, 2, 3], 10, 1)
"""
from .graph import Graph, InvalidGraphError
from .result import MSFResult, RoundStats, RunStats, PHASES
from .api import minimum_spanning_forest
from .generators import generate, GENERATORS

__version__ = "0.1.0"

__all__ = [
    "Graph",
    "InvalidGraphError",
    "MSFResult",
    "RoundStats",
    "RunStats",
    "PHASES",
    "minimum_spanning_forest",
    "generate",
    "GENERATORS",
    "__version__",
]

"""Seeded synthetic graphs generated on the workers, chunk by chunk.

Each generator returns a :class:`~mst_dist.graph.Graph` whose sources are
:class:`~mst_dist.graph.FunctionSource` objects: the edges are never built on
the client.  A worker asked for rows ``[start, stop)`` calls the family's
module-level row function, which returns ``(src, dst, weight)``.

Chunk independence
------------------
The rows of a range do not depend on how the edge list is split, nor on the
worker, process or thread count that makes them.  ``erdos_renyi``, ``gnp``
and ``rmat`` draw each edge's endpoints, and every family its weights, from
a counter-based generator (Philox4x32-10, :mod:`~mst_dist.generators.philox`):
each value is a function of the seed, the family and the edge index alone,
so a range is generated directly, edge by edge, in parallel.  Families with a
deterministic structure (circulant, grid, hypercube, caveman) compute each
edge's endpoints arithmetically from its index.  ``ssca2`` and
``random_geometric`` draw their shapes (clique sizes, points) per block of
cliques or strip from ``np.random.default_rng([seed, family_tag, stream,
block])`` streams.  No generator builds a table whose size grows with the
number of vertices.

Weights
-------
``weights="int"``: int64 uniform on ``[wmin, wmax]`` inclusive (ties on
purpose, the strict ``(weight, edge id)`` order resolves them).
``weights="float"``: float64 uniform on ``[wmin, wmax)``.

Modules
-------
- :mod:`~mst_dist.generators.philox`: the counter-based draws and the compiled
  kernels of the random families and of every family's weights (workers).
- :mod:`~mst_dist.generators.blocks`: stream tags, the block streams of
  ``ssca2`` and ``random_geometric``, row ranges (workers).
- :mod:`~mst_dist.generators.checks`: parameter validation (client).
- :mod:`~mst_dist.generators.families`: the families of known size
  (``erdos_renyi``, ``gnp``, ``circulant``, ``grid``, ``hypercube``,
  ``caveman``, ``connected_caveman``, ``rmat``).
- :mod:`~mst_dist.generators.geometric`: ``random_geometric``, whose edge
  count depends on its points: building it runs one counting pass as tasks
  (on the current ``distributed`` client, else local threads).
- :mod:`~mst_dist.generators.ssca`: SSCA#2-like clustered graphs (``ssca2``).
- :mod:`~mst_dist.generators.registry`: :data:`GENERATORS`, :func:`generate`
  and :func:`parameters` (each family's parameters, read from its builder;
  the run configs' schema and the command line's flags are built from it).
"""
from mst_dist.generators.blocks import BLOCK
from mst_dist.generators.families import (
    caveman, circulant, connected_caveman, erdos_renyi, gnp, grid, hypercube, rmat,
)
from mst_dist.generators.geometric import random_geometric
from mst_dist.generators.registry import (
    GENERATORS, Param, generate, parameters, shared_parameters,
)
from mst_dist.generators.ssca import ssca2

__all__ = [
    "BLOCK",
    "GENERATORS",
    "generate",
    "parameters",
    "shared_parameters",
    "Param",
    "erdos_renyi",
    "gnp",
    "circulant",
    "grid",
    "hypercube",
    "caveman",
    "connected_caveman",
    "rmat",
    "random_geometric",
    "ssca2",
]

"""Borůvka's levels: the components after each round, the levels of affinity clustering."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["levels", "write_levels"]


def levels(result, *, levels_output=None):
    """The components after each round of Borůvka's algorithm on the graph.

    Round ``r`` of Borůvka's algorithm (every component takes its cheapest
    incident edge under the strict order ``(weight, edge id)``, then the
    components those edges join are merged) gives level ``r``: the
    affinity clustering of Bateni, Behnezhad, Derakhshan, Hajiaghayi,
    Kiveris, Lattanzi and Mirrokni ("Affinity Clustering: Hierarchical
    Clustering at Scale").

    The levels are computed from the forest alone, exactly: the cheapest
    edge leaving a set of vertices is a forest edge (the cut property, with
    a strict order), and every forest edge leaving the set is an edge of
    the graph leaving it, so the cheapest forest edge leaving each component
    is the cheapest graph edge leaving it, round after round.  They are
    those of textbook Borůvka rounds on the whole graph, whatever rounds,
    filters and finishing solve the engine itself ran.

    Parameters
    ----------
    result : MSFResult
        A minimum spanning forest holding its rows.
    levels_output : str or os.PathLike, optional
        A directory: each level is also written there as a Parquet file
        ``level-<r>.parquet`` (columns ``vertex``, ``cluster``), atomically
        (the directory appears once every level is written).

    Returns
    -------
    list of int64 ndarray
        One label array of length ``n_vertices`` per round, coarsening and
        nested (two vertices together at level ``r`` are together at every
        later level); each numbered ``0, 1, ...`` in order of each cluster's
        smallest vertex.  The last is the components (``result.labels``).
        A graph without edges has no round: an empty list.

    Examples
    --------
    >>> import mst_dist
    >>> g = mst_dist.Graph.from_arrays([0, 1, 2, 3], [1, 2, 3, 4], [1, 5, 1, 9])
    >>> [lv.tolist() for lv in mst_dist.minimum_spanning_forest(g).levels()]
    [[0, 0, 1, 1, 1], [0, 0, 0, 0, 0]]
    """
    from mst_dist.clustering._kernels import boruvka_levels
    from mst_dist.clustering.linkage import forest_arrays

    n = int(result.n_vertices)
    src, dst, weight, order = forest_arrays(result, "levels")
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0])
    out = list(boruvka_levels(n, src, dst, rank))
    if levels_output is not None:
        write_levels(out, levels_output)
    return out


def write_levels(levels, path):
    """Write the levels as ``level-<r>.parquet`` files (``vertex``, ``cluster``) in the directory ``path``.

    The directory is written beside its final name and renamed into place,
    replacing what was there.
    """
    import shutil
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".levels-", dir=parent)
    try:
        for r, lab in enumerate(levels, start=1):
            table = pa.table({"vertex": np.arange(lab.shape[0], dtype=np.int64), "cluster": lab})
            pq.write_table(table, os.path.join(tmp, f"level-{r:03d}.parquet"))
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path

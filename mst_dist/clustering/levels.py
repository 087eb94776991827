"""Borůvka's levels: the components after each round, the levels of affinity clustering."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["levels", "write_levels"]


def levels(result, *, levels_output=None, storage_options=None):
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
        A minimum spanning forest holding its rows, or kept on the workers
        (``gather=False``).
    levels_output : str, os.PathLike or URL, optional
        A directory: each level is also written there as a Parquet file
        ``level-<r>.parquet`` (columns ``vertex``, ``cluster``), atomically
        (the directory appears once every level is written; for a URL,
        under a hidden prefix committed at the end).  For a result kept on
        the workers the levels are computed and written by a task on a
        worker from the kept forest, and nothing per vertex comes to this
        process: the path must be one the workers reach (shared storage, an
        object store).
    storage_options : dict, optional
        Options of a URL's file system, as ``dask.dataframe`` takes them.

    Returns
    -------
    list of int64 ndarray, or int
        One label array of length ``n_vertices`` per round, coarsening and
        nested (two vertices together at level ``r`` are together at every
        later level); each numbered ``0, 1, ...`` in order of each cluster's
        smallest vertex.  The last is the components (``result.labels``).
        A graph without edges has no round: an empty list.  For a result
        kept on the workers with ``levels_output``: the number of levels
        written.

    Examples
    --------
    >>> import mst_dist
    >>> g = mst_dist.Graph.from_arrays([0, 1, 2, 3], [1, 2, 3, 4], [1, 5, 1, 9])
    >>> [lv.tolist() for lv in mst_dist.minimum_spanning_forest(g).levels()]
    [[0, 0, 1, 1, 1], [0, 0, 0, 0, 0]]
    """
    from mst_dist.clustering.linkage import forest_arrays

    n = int(result.n_vertices)
    kept = result.__dict__.get("kept")
    if kept is not None and levels_output is not None and "edge_ids" not in result.__dict__:
        import uuid

        # the forest stays on the workers: one task reads its parts, computes and writes the levels
        task = kept.client.submit(levels_of_parts, n, levels_output, storage_options, *kept.parts,
                                  key=f"mst-levels-{uuid.uuid4().hex[:12]}", pure=False)
        return task.result()
    src, dst, weight, order = forest_arrays(result, "levels")
    out = _levels(n, src, dst, order)
    if levels_output is not None:
        write_levels(out, levels_output, storage_options)
    return out


def _levels(n, src, dst, order):
    from mst_dist.clustering._kernels import boruvka_levels

    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0])
    return list(boruvka_levels(n, src, dst, rank))


def levels_of_parts(n, path, storage_options, *parts):
    """A task: the levels of a forest kept as DataFrame parts (edge id order), written to ``path``.

    Returns the number of levels written.
    """
    from mst_dist.clustering.linkage import engine_order

    if parts:
        src = np.concatenate([p["src"].to_numpy(np.int64) for p in parts])
        dst = np.concatenate([p["dst"].to_numpy(np.int64) for p in parts])
        weight = np.concatenate([p["weight"].to_numpy() for p in parts])
    else:
        src = dst = np.zeros(0, np.int64)
        weight = np.zeros(0)
    out = _levels(n, src, dst, engine_order(weight))
    write_levels(out, path, storage_options)
    return len(out)


#: What this layer writes through the I/O layer without importing it, registered by
#: :mod:`mst_dist.io.writers` when it is imported (``import mst_dist`` imports it):
#: ``"is_url"`` tells a URL, ``"url"`` writes a directory of levels there.
WRITERS: dict = {}


def write_levels(levels, path, storage_options=None):
    """Write the levels as ``level-<r>.parquet`` files (``vertex``, ``cluster``) in the directory ``path``.

    The directory is written beside its final name and renamed into place,
    replacing what was there; a URL (``s3://...``, with ``storage_options``)
    is written under a hidden prefix and committed once every level is there.
    """
    if WRITERS and WRITERS["is_url"](path):
        return WRITERS["url"](levels, path, storage_options)
    return _write_levels_here(levels, path)


def _write_levels_here(levels, path):
    """:func:`write_levels` to a local directory."""
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

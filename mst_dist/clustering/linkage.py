"""Single-linkage hierarchy of a spanning forest, in SciPy's linkage format."""
from __future__ import annotations

import numpy as np

__all__ = ["engine_order", "forest_arrays", "linkage"]


def forest_arrays(result, what="the linkage", ordered=True):
    """The forest of ``result`` as ``(src, dst, weight, order)``, ``order`` its ``(weight, edge id)`` order.

    ``ordered=False``: ``order`` is ``None`` (a caller that needs no order).

    ``src``/``dst`` are int64, ``weight`` as stored; the forest's rows are in
    edge id order, so a stable sort by weight is the engine's order.  A
    result whose forest was written to disk only (``output=``) holds no
    rows: that is a ``ValueError`` naming the dataset to read back.
    """
    if result.edge_ids is None:
        raise ValueError(f"{what} needs the forest's rows, which this result does not hold (the run "
                         f"wrote them to {result.output!r}): read them back with "
                         f"mst_dist.read_forest({result.output!r}) and build the result from them, or "
                         f"run without output=")
    src = np.asarray(result.src, dtype=np.int64)
    dst = np.asarray(result.dst, dtype=np.int64)
    weight = np.asarray(result.weight)
    if result.edge_ids.shape[0] > 1 and not np.all(np.diff(result.edge_ids) > 0):
        by_id = np.argsort(result.edge_ids, kind="stable")
        src, dst, weight = src[by_id], dst[by_id], weight[by_id]
    return src, dst, weight, engine_order(weight) if ordered else None


def engine_order(weight):
    """Positions of ``weight`` in ``(weight, position)`` order, as a stable argsort gives them.

    A radix sort of the weights' order-preserving uint64 keys (about twice
    as fast as NumPy's quicksort of float64, and stable, where NumPy's stable
    sort is a merge sort slower still); ``-0.0`` ties ``0.0``, nan sorts
    last, as in NumPy.
    """
    from mst_dist.clustering._kernels import RADIX_BITS, radix_order, sort_keys

    return radix_order(sort_keys(weight), RADIX_BITS)


def component_reps(n, labels, src, dst):
    """One vertex per component (its smallest), in order of the components' smallest vertex.

    From ``labels`` when the result holds them (numbered that way), else
    from a union-find over the forest.
    """
    if labels is None:
        from mst_dist.clustering._kernels import flat_labels

        labels = flat_labels(n, src, dst, np.zeros(src.shape[0]), np.arange(src.shape[0]), -1, 0.0)
    labels = np.asarray(labels)
    if labels.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    # numbered by smallest vertex: a component's smallest vertex is where the running maximum rises
    first = np.empty(labels.shape[0], dtype=bool)
    first[0] = True
    np.greater(labels[1:], np.maximum.accumulate(labels)[:-1], out=first[1:])
    return np.flatnonzero(first).astype(np.int64)


def linkage(result, *, join_distance=np.inf):
    """The single-linkage hierarchy of a forest: SciPy's ``(n - 1) x 4`` linkage matrix.

    Single linkage merges clusters in the order Kruskal's algorithm adds the
    minimum spanning forest's edges (Gower and Ross, "Minimum Spanning Trees
    and Single Linkage Cluster Analysis"), so the hierarchy is read from the
    forest alone, by one union-find over its ``n - c`` edges.

    Parameters
    ----------
    result : MSFResult
        A minimum spanning forest holding its rows (a run without
        ``output=``).
    join_distance : float, optional
        Height of the ``c - 1`` rows that join the ``c`` connected
        components of a disconnected graph (default ``inf``, as they are at
        no finite distance).  A finite value larger than every weight gives a
        matrix that ``dendrogram`` can draw.

    Returns
    -------
    Z : float64 ndarray of shape ``(n - 1, 4)``
        Row ``i`` merges clusters ``Z[i, 0] < Z[i, 1]`` at height ``Z[i, 2]``
        into cluster ``n + i`` of ``Z[i, 3]`` vertices; vertices are clusters
        ``0 .. n-1``.  Usable by every function of
        ``scipy.cluster.hierarchy``.

    Notes
    -----
    Rows follow the engine's strict order ``(weight, edge id)``: of two
    forest edges of equal weight the one given first in the input merges
    first.  For a graph whose distances are distinct the matrix equals
    ``scipy.cluster.hierarchy.linkage(y, "single")`` of the same distances,
    row for row (same cluster ids, same order).  With ties SciPy's order of
    tied merges comes from its own Prim walk and can differ; the cophenetic
    distances and every flat clustering (``fcluster``) are the same, as they
    do not depend on that order.

    The components of a disconnected graph are joined last, at
    ``join_distance``: the cluster holding the smallest vertex joins the
    component of the next smallest vertex not in it, and so on, in order of
    each component's smallest vertex (the order of ``result.labels``).

    Heights are the weights as float64 (integer weights above 2**53 are
    rounded there; the order of the rows is still that of the exact weights).

    Examples
    --------
    >>> import mst_dist
    >>> g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])
    >>> mst_dist.minimum_spanning_forest(g).linkage()
    array([[1., 2., 1., 2.],
           [0., 4., 2., 3.],
           [3., 5., 7., 4.]])
    """
    from mst_dist.clustering._kernels import linkage_rows

    join_distance = float(join_distance)
    if np.isnan(join_distance):
        raise ValueError("join_distance must be a number, got nan")
    n = int(result.n_vertices)
    src, dst, weight, order = forest_arrays(result)
    height = weight.astype(np.float64, copy=False)
    if n and height.shape[0] and join_distance < height.max():
        raise ValueError(f"join_distance={join_distance!r} is below the forest's largest weight "
                         f"{height.max()!r}: the components' joins must come last")
    reps = component_reps(n, result.labels, src, dst)
    Z = linkage_rows(n, src, dst, height, order, reps, join_distance)
    if Z.shape[0] != max(n - 1, 0):
        raise ValueError(f"the forest's {src.shape[0]} edges over {n} vertices are not a forest "
                         f"(a cycle): the linkage has {Z.shape[0]} rows, not {max(n - 1, 0)}")
    return Z

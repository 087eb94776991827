"""A forest the engine returned or wrote, held to the naive Kruskal and BFS of :mod:`support.naive`.

Every test that names a forest checks all of it (edge ids, endpoints, weights,
total, components, labels where it has them), never only its edge count: any
spanning forest has the right count.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from support.naive import component_labels, kruskal


@dataclass(frozen=True)
class Expected:
    """The minimum spanning forest of a graph under (weight, edge id), by the naive references."""

    n_vertices: int
    n_edges: int
    edge_ids: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    total: int | float
    n_components: int
    labels: np.ndarray


def expected(graph=None, *, n_vertices=None, src=None, dst=None, weight=None):
    """The :class:`Expected` forest of ``graph`` (an ``mst_dist.Graph``) or of the arrays given."""
    if graph is not None:
        n_vertices = graph.n_vertices
        src, dst, weight = graph.to_arrays()
    src, dst, weight = np.asarray(src), np.asarray(dst), np.asarray(weight)
    ids, comps = kruskal(n_vertices, src, dst, weight)
    w = weight[ids]
    total = sum(int(x) for x in w.tolist()) if w.dtype.kind in "iub" else float(np.sum(w, dtype=np.float64))
    return Expected(int(n_vertices), len(src), ids, src[ids], dst[ids], w, total, comps,
                    component_labels(n_vertices, src, dst))


def assert_forest(exp, edge_ids, src=None, dst=None, weight=None, *, total=None, n_components=None,
                  labels=None):
    """Each part given equals the expected forest's (ids, endpoints, weights, total, components, labels)."""
    np.testing.assert_array_equal(np.asarray(edge_ids), exp.edge_ids, err_msg="forest edge ids")
    for name, got, want in (("src", src, exp.src), ("dst", dst, exp.dst), ("weight", weight, exp.weight)):
        if got is not None:
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"forest {name}")
    if total is not None:
        assert total == exp.total, f"total weight {total!r}, expected {exp.total!r}"
    if n_components is not None:
        assert n_components == exp.n_components, f"{n_components} components, expected {exp.n_components}"
    if labels is not None:
        np.testing.assert_array_equal(np.asarray(labels), exp.labels, err_msg="component labels")


def assert_result(res, exp):
    """A :class:`mst_dist.MSTResult` with its arrays in memory is the expected forest, all of it."""
    assert_forest(exp, res.edge_ids, res.src, res.dst, res.weight, total=res.total_weight,
                  n_components=res.n_components, labels=res.labels)
    assert res.n_forest_edges == len(exp.edge_ids)


def assert_summary(summary, exp):
    """A run report's ``summary`` (``--json``) counts the expected forest: edges, weight, components."""
    assert summary["forest_edges"] == len(exp.edge_ids), summary
    assert summary["total_weight"] == exp.total, summary
    assert summary["components"] == exp.n_components, summary


def read_forest_file(path):
    """The columns of a forest file the command line wrote (.npz, .parquet, .csv; labels if the .npz has them)."""
    path = os.fspath(path)
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    if path.endswith(".csv"):
        import pyarrow.csv as pcsv

        t = pcsv.read_csv(path)
    else:
        import pyarrow.parquet as pq

        t = pq.read_table(path)
    return {c: t.column(c).to_numpy() for c in t.column_names}


def assert_forest_file(path, exp):
    """The forest file at ``path`` holds exactly the expected forest (and its labels, if it has them)."""
    cols = read_forest_file(path)
    assert_forest(exp, cols["edge_id"], cols["src"], cols["dst"], cols["weight"], labels=cols.get("labels"))
    w = cols["weight"]
    got = sum(int(x) for x in w.tolist()) if w.dtype.kind in "iub" else float(np.sum(w, dtype=np.float64))
    assert got == exp.total


def assert_minimum_forest(n_vertices, src, dst, weight, edge_ids, *, total=None, n_components=None):
    """For graphs too large for :func:`expected`: ``edge_ids`` is a minimum spanning forest, by SciPy.

    Independent of the engine: the rows are distinct edges of the graph, they form a forest
    (``n - c`` edges joining ``c`` components, SciPy's own count), and their weight equals the
    total of SciPy's minimum spanning tree (parallel edges reduced to their minimum, self-loops
    dropped, weights shifted to be positive: a constant shift moves every spanning forest's
    weight alike). Such a forest is a minimum one; ties may pick other ids than Kruskal's.
    Integer weights only (compared exactly while totals stay below 2**53).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

    src, dst, weight = np.asarray(src), np.asarray(dst), np.asarray(weight)
    ids = np.asarray(edge_ids)
    assert weight.dtype.kind in "iu"
    assert len(np.unique(ids)) == len(ids) and (ids.size == 0 or 0 <= ids.min() <= ids.max() < len(src))
    n_comp, _ = connected_components(coo_matrix((np.ones(len(src)), (src, dst)), shape=(n_vertices,) * 2),
                                     directed=False)
    assert len(ids) == n_vertices - n_comp, f"{len(ids)} forest edges, expected {n_vertices - n_comp}"
    f_comp, _ = connected_components(coo_matrix((np.ones(len(ids)), (src[ids], dst[ids])),
                                                shape=(n_vertices,) * 2), directed=False)
    assert f_comp == n_comp, "the forest's edges leave more components than the graph has: a cycle"
    keep = src != dst
    a, b = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    w = weight[keep].astype(np.int64)
    # parallel edges reduced to their minimum: the edges grouped by their pair, the least weight of
    # each group (one sort of a single key where the pair fits one int64, of two keys otherwise)
    if n_vertices < 2**31:
        order = np.argsort(a.astype(np.int64) * n_vertices + b)
    else:
        order = np.lexsort((b, a))
    a, b, w = a[order], b[order], w[order]
    first = np.ones(len(a), bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    starts = np.flatnonzero(first)
    least = np.minimum.reduceat(w, starts) if len(w) else w
    low = int(w.min()) if len(w) else 0
    shifted = (least - low + 1).astype(np.float64)
    tree = minimum_spanning_tree(coo_matrix((shifted, (a[starts], b[starts])), shape=(n_vertices,) * 2).tocsr())
    want = int(round(tree.sum())) + (low - 1) * (n_vertices - n_comp)
    got = sum(int(x) for x in weight[ids].tolist())
    assert got == want, f"forest weight {got}, a minimum spanning forest weighs {want}"
    if total is not None:
        assert total == want, f"total weight {total}, a minimum spanning forest weighs {want}"
    if n_components is not None:
        assert n_components == n_comp


def check_written_per_range(res, g, forest_dir, labels_dir, label_parts):
    """A run that wrote its forest (per chunk) and its labels (``label_parts`` parts, one per range of
    vertices): only counts came back, and what was written is the oracle's forest and labels."""
    import pyarrow.parquet as pq

    import mst_dist

    s, d, w = g.to_arrays()
    exp, comps = kruskal(g.n_vertices, s, d, w)
    assert res.edge_ids is None and res.labels is None
    assert res.forest_edges == exp.shape[0] and res.n_components == comps
    ids, src, dst, weight = mst_dist.read_forest(forest_dir)
    np.testing.assert_array_equal(ids, exp)
    np.testing.assert_array_equal(src, s[exp], err_msg="written forest src")
    np.testing.assert_array_equal(dst, d[exp], err_msg="written forest dst")
    np.testing.assert_array_equal(weight, w[exp], err_msg="written forest weight")
    total = sum(int(x) for x in w[exp].tolist()) if w.dtype.kind in "iub" else float(np.sum(w[exp], dtype=np.float64))
    assert res.total_weight == total, f"total weight {res.total_weight!r}, expected {total!r}"
    t = pq.read_table(labels_dir).sort_by("vertex")
    np.testing.assert_array_equal(t.column("vertex").to_numpy(), np.arange(g.n_vertices))
    np.testing.assert_array_equal(t.column("component").to_numpy(), component_labels(g.n_vertices, s, d))
    assert len(os.listdir(labels_dir)) == label_parts


def check_kept_per_range(client, res, g, chunks, ranges):
    """A ``gather=False`` run: ``chunks`` forest parts and ``ranges`` label parts kept on the workers; the
    Dask collections over them, and the gathered arrays, are the oracle's."""
    s, d, w = g.to_arrays()
    exp, comps = kruskal(g.n_vertices, s, d, w)
    labels_exp = component_labels(g.n_vertices, s, d)
    assert res.forest_edges == exp.shape[0] and res.n_components == comps
    assert res.total_weight == w[exp].sum()
    assert len(res.kept.parts) == chunks and len(res.kept.label_parts) == ranges
    frame = client.compute(res.to_dask_dataframe()).result()
    np.testing.assert_array_equal(frame["edge_id"].to_numpy(), exp)
    np.testing.assert_array_equal(frame["src"].to_numpy(), s[exp])
    np.testing.assert_array_equal(frame["dst"].to_numpy(), d[exp])
    np.testing.assert_array_equal(frame["weight"].to_numpy(), w[exp])
    labels = client.compute(res.to_dask_dataframe("labels")).result()
    np.testing.assert_array_equal(labels["vertex"].to_numpy(), np.arange(g.n_vertices))
    np.testing.assert_array_equal(labels["component"].to_numpy(), labels_exp)
    np.testing.assert_array_equal(res.labels, labels_exp)
    np.testing.assert_array_equal(res.edge_ids, exp)

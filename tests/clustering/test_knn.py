"""kNN graph inputs: scikit-learn's directed kNN matrix, symmetrised; points."""
import numpy as np
import pytest

import mst_dist
from mst_dist.clustering import from_kneighbors_graph, from_points
from support.needs import module

neighbors = module("sklearn.neighbors", "pip install scikit-learn", module_level=True)
import scipy.sparse as sp  # noqa: E402


def test_union_and_mutual_symmetrisation():
    # 0 -> 1 (1.0), 1 -> 0 (1.0), 2 -> 1 (2.0), 3 -> 3 (diagonal), 3 -> 0 stored zero
    A = sp.csr_array(([1.0, 1.0, 2.0, 5.0, 0.0], ([0, 1, 2, 3, 3], [1, 0, 1, 3, 0])), shape=(4, 4))
    src, dst, w = from_kneighbors_graph(A).to_arrays()
    assert (src.tolist(), dst.tolist(), w.tolist()) == ([0, 0, 1], [1, 3, 2], [1.0, 0.0, 2.0])
    src, dst, w = from_kneighbors_graph(A, symmetrize="mutual").to_arrays()
    assert (src.tolist(), dst.tolist(), w.tolist()) == ([0], [1], [1.0])
    with pytest.raises(ValueError, match="symmetrize"):
        from_kneighbors_graph(A, symmetrize="max")
    with pytest.raises(TypeError, match="scipy.sparse"):
        from_kneighbors_graph(np.eye(3))


def test_kneighbors_graph_union_is_the_maximum_with_the_transpose():
    X = np.random.default_rng(0).normal(size=(200, 3))
    A = neighbors.kneighbors_graph(X, 5, mode="distance")
    g = from_kneighbors_graph(A)
    S = sp.triu(A.maximum(A.T), 1).tocoo()
    got = sorted(zip(*(a.tolist() for a in g.to_arrays())))
    assert got == sorted(zip(S.row.tolist(), S.col.tolist(), S.data.tolist()))
    # the forest of the symmetrised graph, and of the directed matrix read as parallel edges, are SciPy's
    # minimum spanning forest of the symmetrised matrix (no zero distance here for SciPy to drop)
    from scipy.sparse.csgraph import minimum_spanning_tree

    assert S.data.min() > 0
    want = minimum_spanning_tree(A.maximum(A.T)).sum()
    direct = mst_dist.minimum_spanning_forest(mst_dist.Graph.from_scipy(A, symmetric=False))
    for res in (mst_dist.minimum_spanning_forest(g), direct):
        assert res.total_weight == pytest.approx(want, rel=1e-12)
        assert res.forest_edges == minimum_spanning_tree(A.maximum(A.T)).nnz


def test_from_points_and_duplicate_points():
    X = np.r_[np.zeros((3, 2)), np.ones((3, 2))]
    g = from_points(X, 2)
    src, dst, w = g.to_arrays()
    assert g.n_vertices == 6 and (w == 0).sum() == 6         # zero distances are kept as edges
    res = mst_dist.minimum_spanning_forest(g)
    assert res.clusters(threshold=0).tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="k must be"):
        from_points(X, 6)

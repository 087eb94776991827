"""Borůvka's rounds on points: the exact mutual-reachability tree, and the joins of a kNN graph's components."""
import numpy as np
import pytest

from support.needs import module

module("sklearn", "pip install scikit-learn", module_level=True)
import scipy.sparse as sp  # noqa: E402
from scipy.sparse.csgraph import minimum_spanning_tree  # noqa: E402
from scipy.spatial.distance import pdist, squareform  # noqa: E402
from sklearn.neighbors import KDTree, kneighbors_graph  # noqa: E402

from mst_dist.clustering.joins import exact_tree, join_components  # noqa: E402


def mutual_reachability(X, min_samples):
    core = KDTree(X).query(X, k=min_samples)[0][:, -1]
    D = squareform(pdist(X))
    return core, np.maximum(np.maximum(core[:, None], core[None, :]), D)


def weight(X, core, u, v):
    return np.maximum(np.maximum(core[u], core[v]), np.linalg.norm(X[u] - X[v], axis=1))


@pytest.mark.parametrize("min_samples", [1, 3, 8])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_exact_tree_weighs_what_scipys_tree_of_all_pairs_weighs(min_samples, seed):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(size=(150, 3)), rng.normal(6, 0.3, size=(50, 3))]
    X[7] = X[8]  # a duplicate: distance 0
    core, MR = mutual_reachability(X, min_samples)
    u, v = exact_tree(X, core)
    assert u.shape[0] == len(X) - 1
    MR[MR == 0] = 1e-300  # scipy's csgraph drops zero weights: a distance of 0 kept as the least positive
    upper = sp.csr_matrix(np.triu(MR, 1))  # each pair once, no self-loop
    assert weight(X, core, u, v).sum() == pytest.approx(minimum_spanning_tree(upper).sum(), rel=1e-12, abs=1e-9)


def test_joins_connect_a_knn_graph_by_the_lightest_edges_between_its_parts():
    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(0, 0.2, (40, 2)), rng.normal(5, 0.2, (40, 2)), rng.normal((0, 9), 0.2, (40, 2))]
    A = kneighbors_graph(X, 5).tocoo()
    core, MR = mutual_reachability(X, 3)
    u, v = join_components(X, core, A.row.astype(np.int64), A.col.astype(np.int64))
    assert u.shape[0] == 2
    # the exact tree joins the three blobs with the same two edges
    eu, ev = exact_tree(X, core)
    crossing = np.abs(eu // 40 - ev // 40) > 0
    assert sorted(weight(X, core, u, v)) == pytest.approx(sorted(weight(X, core, eu[crossing], ev[crossing])))
    connected = join_components(X, core, np.arange(119), np.arange(1, 120))
    assert connected[0].shape[0] == 0


def test_the_rounds_give_the_same_edges_on_one_thread_and_on_all():
    """Blocks of points searched on several threads, each with its own bests: the same tree, ties included."""
    import numba

    from mst_dist.clustering.joins import SEARCH_BLOCK

    rng = np.random.default_rng(5)
    n = 3 * SEARCH_BLOCK + 17
    X = np.round(np.r_[rng.normal(size=(n - n // 3, 3)), rng.normal(8, 0.5, size=(n // 3, 3))], 1)  # many ties
    core = np.round(rng.random(n) * 0.05, 2)
    # a graph of one part (a star on every third point) and single points
    leaves = np.arange(3, n, 3)
    src, dst = leaves, np.zeros_like(leaves)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        tree_one, joins_one = exact_tree(X, core), join_components(X, core, src, dst)
    finally:
        numba.set_num_threads(threads)
    tree_all, joins_all = exact_tree(X, core), join_components(X, core, src, dst)
    assert tree_one[0].shape[0] == n - 1 and joins_one[0].shape[0] == n - 1 - leaves.shape[0]
    for a, b in ((tree_one, tree_all), (joins_one, joins_all)):
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])

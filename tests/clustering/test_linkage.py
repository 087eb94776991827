"""The single-linkage matrix and flat clusters of a forest, against scipy.cluster.hierarchy."""
import numpy as np
import pytest

import mst_dist
from support.needs import module

hierarchy = module("scipy.cluster.hierarchy", "pip install scipy", module_level=True)
from scipy.spatial.distance import pdist  # noqa: E402


def complete_graph(y, n):
    """The complete graph of a condensed distance vector: edge id = condensed index."""
    i, j = np.triu_indices(n, 1)
    return mst_dist.Graph.from_arrays(i, j, y, n_vertices=n)


def partition_equal(a, b):
    """Two label arrays are the same partition (up to renaming)."""
    a, b = np.asarray(a), np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("n,dim", [(3, 1), (10, 2), (40, 3), (97, 5)])
@pytest.mark.parametrize("seed", range(4))
def test_equals_scipy_single_linkage_with_distinct_distances(n, dim, seed):
    X = np.random.default_rng(seed).normal(size=(n, dim))
    y = pdist(X)
    assert np.unique(y).shape[0] == y.shape[0]
    Z = mst_dist.minimum_spanning_forest(complete_graph(y, n)).linkage()
    np.testing.assert_array_equal(Z, hierarchy.linkage(y, "single"))
    assert hierarchy.is_valid_linkage(Z)


@pytest.mark.parametrize("seed", range(6))
def test_ties_give_scipys_cophenetic_distances_and_flat_clusters(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    X = rng.integers(0, 4, size=(n, 2))
    y = pdist(X, "cityblock")                 # integers: many ties, zeros too
    res = mst_dist.minimum_spanning_forest(complete_graph(y, n))
    Z, Zs = res.linkage(), hierarchy.linkage(y, "single")
    np.testing.assert_array_equal(hierarchy.cophenet(Z), hierarchy.cophenet(Zs))
    for t in np.unique(np.r_[y, -1, 0.5, y.max() + 1]):
        assert partition_equal(res.clusters(threshold=t), hierarchy.fcluster(Zs, t, "distance"))
    for k in range(1, n + 2):
        assert partition_equal(res.clusters(n_clusters=k), hierarchy.fcluster(Zs, k, "maxclust"))


def test_ties_merge_in_weight_then_edge_id_order():
    # a star of equal weights: the edge given first merges first
    g = mst_dist.Graph.from_arrays([0, 0, 0], [3, 1, 2], [5, 5, 5])
    Z = mst_dist.minimum_spanning_forest(g).linkage()
    np.testing.assert_array_equal(Z, [[0, 3, 5, 2], [1, 4, 5, 3], [2, 5, 5, 4]])
    # equal weights given in the other order merge in that order
    g = mst_dist.Graph.from_arrays([0, 0, 0], [2, 1, 3], [5, 5, 5])
    np.testing.assert_array_equal(mst_dist.minimum_spanning_forest(g).linkage(),
                                  [[0, 2, 5, 2], [1, 4, 5, 3], [3, 5, 5, 4]])


@pytest.mark.parametrize("seed", range(5))
def test_flat_clusters_equal_fcluster(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 80))
    y = pdist(rng.uniform(size=(n, 2)))
    res = mst_dist.minimum_spanning_forest(complete_graph(y, n))
    Z = res.linkage()
    for t in np.r_[np.quantile(y, [0, 0.01, 0.05, 0.2, 1]), Z[:, 2]]:
        got = res.clusters(threshold=t)
        want = hierarchy.fcluster(Z, t, "distance")
        assert partition_equal(got, want)
        assert got.max() + 1 == want.max()
    for k in range(1, n + 3):
        assert partition_equal(res.clusters(n_clusters=k), hierarchy.fcluster(Z, k, "maxclust"))


def test_cluster_labels_are_numbered_by_smallest_vertex():
    g = mst_dist.Graph.from_arrays([3, 0, 1], [4, 2, 3], [1.0, 1.0, 9.0])
    labels = mst_dist.minimum_spanning_forest(g).clusters(threshold=2)
    assert labels.tolist() == [0, 1, 0, 2, 2]


def test_disconnected_graph_joins_components_last_at_inf():
    # components {0, 2, 5}, {1, 4}, {3}, {6}: joined in order of their smallest vertex
    g = mst_dist.Graph.from_arrays([0, 2, 4], [2, 5, 1], [1.0, 2.0, 0.5], n_vertices=7)
    res = mst_dist.minimum_spanning_forest(g)
    Z = res.linkage()
    assert Z.shape == (6, 4)
    np.testing.assert_array_equal(Z[:3], [[1, 4, 0.5, 2], [0, 2, 1.0, 2], [5, 8, 2.0, 3]])
    np.testing.assert_array_equal(Z[3:], [[7, 9, np.inf, 5], [3, 10, np.inf, 6], [6, 11, np.inf, 7]])
    assert hierarchy.is_valid_linkage(Z)
    assert partition_equal(res.clusters(n_clusters=2), hierarchy.fcluster(Z, 2, "maxclust"))
    assert partition_equal(res.clusters(n_clusters=4), res.labels)
    assert res.clusters(threshold=np.inf).tolist() == [0] * 7
    assert partition_equal(res.clusters(threshold=1e300), res.labels)
    # a finite join height, for dendrogram
    Zf = res.linkage(join_distance=10)
    np.testing.assert_array_equal(Zf[3:, 2], [10, 10, 10])
    hierarchy.dendrogram(Zf, no_plot=True)
    assert res.clusters(threshold=10, join_distance=10).tolist() == [0] * 7
    with pytest.raises(ValueError, match="join_distance"):
        res.linkage(join_distance=1.0)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_graphs(n):
    g = mst_dist.Graph.from_arrays([0] * (n == 2), [1] * (n == 2), [3.0] * (n == 2), n_vertices=n)
    res = mst_dist.minimum_spanning_forest(g)
    Z = res.linkage()
    assert Z.shape == (max(n - 1, 0), 4)
    if n == 2:
        np.testing.assert_array_equal(Z, hierarchy.linkage([3.0], "single"))
        assert res.clusters(threshold=2.9).tolist() == [0, 1]
        assert res.clusters(n_clusters=1).tolist() == [0, 0]
    else:
        assert res.clusters(threshold=1).tolist() == [0] * n
        assert res.levels() == []


def test_two_isolated_vertices():
    res = mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays([], [], [], n_vertices=2))
    np.testing.assert_array_equal(res.linkage(), [[0, 1, np.inf, 2]])
    assert res.clusters(n_clusters=1).tolist() == [0, 0]


def test_integer_weights_and_argument_errors():
    g = mst_dist.Graph.from_arrays([0, 1, 2], [1, 2, 3], np.array([7, 2, 7], dtype=np.int32))
    res = mst_dist.minimum_spanning_forest(g)
    Z = res.linkage()
    assert Z.dtype == np.float64
    np.testing.assert_array_equal(Z, [[1, 2, 2, 2], [0, 4, 7, 3], [3, 5, 7, 4]])
    with pytest.raises(ValueError, match="exactly one"):
        res.clusters()
    with pytest.raises(ValueError, match="exactly one"):
        res.clusters(threshold=1, n_clusters=2)
    with pytest.raises(ValueError, match="n_clusters must be a positive integer"):
        res.clusters(n_clusters=0)
    with pytest.raises(ValueError, match="threshold must be a number"):
        res.clusters(threshold="x")


def test_forest_on_disk_only_is_an_error_naming_it(tmp_path):
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1.0, 2.0])
    res = mst_dist.minimum_spanning_forest(g, output=tmp_path / "forest")
    with pytest.raises(ValueError, match="read_forest"):
        res.linkage()


@pytest.mark.parametrize("fixture,partitions,local_finish",
                         [("client", 1, "auto"), ("client", 7, 0), ("client2", 3, 0), ("client2", 5, "auto")])
def test_same_hierarchy_on_every_cluster_shape(request, fixture, partitions, local_finish):
    rng = np.random.default_rng(11)
    n, m = 300, 1200
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(0, 30, m)                 # ties across chunks
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n + 5)
    ref = mst_dist.minimum_spanning_forest(g, partitions=1, local_finish="auto")
    res = mst_dist.minimum_spanning_forest(g, request.getfixturevalue(fixture), partitions=partitions,
                                           local_finish=local_finish)
    np.testing.assert_array_equal(res.linkage(), ref.linkage())
    np.testing.assert_array_equal(res.clusters(threshold=10), ref.clusters(threshold=10))
    for a, b in zip(res.levels(), ref.levels(), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("weights", [
    np.random.default_rng(0).random(5000),                          # distinct floats
    np.random.default_rng(1).integers(0, 50, 5000),                 # many ties
    np.random.default_rng(2).integers(-2**62, 2**62, 3000, dtype=np.int64),
    np.random.default_rng(3).random(2000).astype(np.float32).round(2),
    np.array([np.nan, 1.0, np.nan, 0.5, 1.0, -np.inf, np.inf, -0.0, 0.0]),
    np.array([3, 3, 3, 3], dtype=np.uint8),
    np.array([7.0]),
    np.zeros(0),
    np.array([2**64 - 1, 0, 2**63, 2**63 - 1, 0, 2**64 - 1], dtype=np.uint64),
    np.array([-128, 127, -1, 0, -128, 5], dtype=np.int8),
    np.array([-np.inf, -1e-300, -5e-324, 5e-324, -1.5, -1e300, np.nan, -np.nan]),
], ids=["floats", "ties", "int64", "float32-ties", "nan-inf-zeros", "all-equal", "one", "empty",
        "uint64-extremes", "int8", "negative-floats-and-nans"])
def test_engine_order_is_the_stable_weight_order(weights):
    """The fast (weight, edge id) order equals NumPy's stable argsort, ties and nan included."""
    from mst_dist.clustering.linkage import engine_order

    np.testing.assert_array_equal(engine_order(weights), np.argsort(weights, kind="stable"))

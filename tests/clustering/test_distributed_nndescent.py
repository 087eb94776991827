"""The approximate kNN graph on a cluster of more than one worker: NN-descent over overlapping parts."""
import numpy as np
import pytest

from mst_dist.clustering import knn_graph, knn_recall

da = pytest.importorskip("dask.array")


def tight_blobs(per, centres, dims, seed):
    """Blobs far apart (centres 1,000 apart, spread 1): a point's neighbours are all in its own blob."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([1000.0 * rng.standard_normal(dims) + rng.standard_normal((per, dims)) for _ in range(centres)])
    return X[rng.permutation(X.shape[0])]


def pairs(graph):
    s, d, w = graph.to_arrays()
    order = np.lexsort((d, s))
    return s[order], d[order], w[order]


@pytest.mark.parametrize("symmetrize", ["union", "mutual"])
def test_parts_merged_give_the_exact_graph_where_each_part_finds_its_neighbours(client2, symmetrize):
    # 4 blobs of 150 points, 4 parts: each point is searched in its own blob's part and in one other;
    # within a part of at most 300 points NN-descent finds every true neighbour, so the merged lists
    # (each pair measured in two parts kept once, the k nearest taken) are the exact ones
    X = tight_blobs(150, 4, 6, seed=1)
    g = knn_graph(da.from_array(X, chunks=(100, 6)), 6, approximate=True, client=client2, partitions=4,
                  symmetrize=symmetrize, random_state=3)
    info = g.meta["knn"]
    assert not g.in_memory and info["parts"] == 4 and info["parts_per_point"] == 2
    assert sum(info["part_points"]) == 2 * X.shape[0] and max(info["part_points"]) < X.shape[0]
    exact = knn_graph(X, 6, symmetrize=symmetrize)
    for a, b in zip(pairs(g), pairs(exact)):
        np.testing.assert_array_equal(a, b)
    assert info["recall"] == 1.0 and info["recall_points"] == 200


def test_parts_of_one_cloud_find_most_neighbours_and_repeat(client2):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 5))
    Xd = da.from_array(X, chunks=(700, 5))
    g = knn_graph(Xd, 8, approximate=True, client=client2, random_state=4)  # default: two parts a worker
    assert g.meta["knn"]["parts"] == 4
    s, d, w = g.to_arrays()
    assert (s < d).all() and np.unique(s * X.shape[0] + d).shape[0] == s.shape[0]
    np.testing.assert_allclose(w, np.sqrt(((X[s] - X[d]) ** 2).sum(axis=1)), rtol=1e-12)
    assert np.bincount(np.r_[s, d], minlength=X.shape[0]).min() >= 8  # each point keeps k neighbours
    assert knn_recall(X, g, 8, sample=500) > 0.98
    assert 0.98 < g.meta["knn"]["recall"] <= 1.0 and g.meta["knn"]["recall_points"] == 200
    again = knn_graph(Xd, 8, approximate=True, client=client2, random_state=4)
    for a, b in zip(g.to_arrays(), again.to_arrays()):
        np.testing.assert_array_equal(a, b)


def test_a_bad_point_is_named_on_a_cluster_of_parts(client2):
    X = np.random.default_rng(2).standard_normal((900, 3))
    X[777, 1] = np.nan
    with pytest.raises(ValueError, match="point 777 "):
        knn_graph(da.from_array(X, chunks=(300, 3)), 4, approximate=True, client=client2).n_edges


def test_hdbscan_of_a_dask_array_with_approximate_neighbours_in_parts(client2):
    from sklearn.metrics import adjusted_rand_score

    from mst_dist import HDBSCAN

    X = tight_blobs(200, 3, 4, seed=6)
    here = HDBSCAN(min_cluster_size=20).fit(X)
    there = HDBSCAN(min_cluster_size=20, approximate_knn=True, client=client2).fit(da.from_array(X, chunks=(150, 4)))
    assert here.labels_.max() == 2 and adjusted_rand_score(here.labels_, there.labels_) == 1.0
    assert here.knn_info_ == {"method": "exact", "k": 40}
    info = there.knn_info_
    assert info["method"] == "nn-descent" and info["parts"] == 4 and info["k"] == 40 and info["recall"] == 1.0


def test_the_reported_recall_is_the_lists_share_of_the_true_neighbours():
    from mst_dist.clustering._nndescent import approximate_edges, nndescent_neighbours, recall_rows
    from mst_dist.clustering.knn import exact_neighbours

    X = np.random.default_rng(7).standard_normal((1500, 12))
    poor = {"random_state": 1, "n_trees": 1, "max_iterations": 1, "list_size": 10}  # a search that misses some
    info = approximate_edges(X, 10, **poor)[4]
    _, found, _ = nndescent_neighbours(X, 10, **poor)
    _, true = exact_neighbours(X, 10)
    rows = recall_rows(X.shape[0], info["random_state"])
    share = np.mean([np.intersect1d(found[i], true[i]).shape[0] / 10 for i in rows])
    assert info["recall_points"] == rows.shape[0] == 200
    assert info["recall"] == pytest.approx(share, abs=1e-12) and info["recall"] < 0.999

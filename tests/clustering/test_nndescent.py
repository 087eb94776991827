"""Approximate kNN graphs (NN-descent): recall against brute force, the graph's rules, determinism, errors."""
import numpy as np
import pytest

from mst_dist.clustering import knn_graph
from mst_dist.clustering.neighbours import knn_recall

# one process for the module: its first test compiles the kernels (every metric), the others reuse them
pytestmark = pytest.mark.xdist_group("tests/clustering/test_nndescent.py")


# ---------------------------------------------------------------------------
# brute force in NumPy
# ---------------------------------------------------------------------------

def distances(X, metric="euclidean", p=2, Y=None):
    """Distances of every pair (SciPy's ``cdist``: a loop over pairs in C), or of rows ``X[i], Y[i]``."""
    from scipy.spatial.distance import cdist

    name = {"manhattan": "cityblock"}.get(metric, metric)
    kw = {"p": p} if metric == "minkowski" else {}
    if Y is None:
        return cdist(X, X, name, **kw)
    D = np.abs(X - Y)
    if metric == "cosine":
        return 1 - (X * Y).sum(1) / np.linalg.norm(X, axis=1) / np.linalg.norm(Y, axis=1)
    if metric == "chebyshev":
        return D.max(1)
    if metric == "euclidean":
        return np.sqrt((D * D).sum(1))
    return D.sum(1) if metric == "manhattan" else (D ** p).sum(1) ** (1 / p)


def graph_recall(X, g, k, metric="euclidean", p=2):
    """The share of each point's true k nearest (ties at the k-th included) adjacent to it in ``g``."""
    D = distances(X, metric, p)
    np.fill_diagonal(D, np.inf)
    kth = np.sort(D, axis=1)[:, k - 1]
    src, dst, w = g.to_arrays()
    n = X.shape[0]
    hit = np.zeros(n)
    near_s = D[src, dst] <= kth[src] * (1 + 1e-9)
    near_d = D[src, dst] <= kth[dst] * (1 + 1e-9)
    np.add.at(hit, src[near_s], 1)
    np.add.at(hit, dst[near_d], 1)
    return float(np.minimum(hit, k).sum() / (n * k))


def weights_are_distances(X, g, metric="euclidean", p=2):
    src, dst, w = g.to_arrays()
    assert (src < dst).all() and np.unique(src * X.shape[0] + dst).shape[0] == src.shape[0]
    np.testing.assert_allclose(w, distances(X[src], metric, p, X[dst]), rtol=1e-9, atol=1e-12)


def blobs(n, d, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10, 10, size=(5, d))
    return centers[rng.integers(0, 5, n)] + rng.normal(size=(n, d))


# ---------------------------------------------------------------------------
# recall
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("d,metric", [(2, "euclidean"), (10, "euclidean"), (32, "euclidean"), (32, "manhattan"),
                                      (10, "cosine"), (10, "chebyshev")])
def test_recall_on_random_points(d, metric):
    X = np.random.default_rng(d).normal(size=(2000, d))
    g = knn_graph(X, 10, metric=metric, approximate=True)
    assert g.meta["knn"]["method"] == "nn-descent" and g.n_vertices == 2000
    weights_are_distances(X, g, metric)
    r = graph_recall(X, g, 10, metric)
    assert r >= 0.95, (d, metric, r)
    # knn_recall's sample of 1000 says about the same (the numpy value is over all points)
    assert knn_recall(X, g, 10, metric=metric) == pytest.approx(r, abs=0.02)


def test_recall_on_clustered_points_and_minkowski():
    X = blobs(2500, 10)
    g = knn_graph(X, 10, approximate=True, random_state=3)
    assert graph_recall(X, g, 10) >= 0.95
    g = knn_graph(X[:1500], 8, metric="minkowski", p=3, approximate=True)
    weights_are_distances(X[:1500], g, "minkowski", 3)
    assert graph_recall(X[:1500], g, 8, "minkowski", 3) >= 0.95


def test_knn_recall_of_lists_and_of_the_exact_graph():
    from mst_dist.clustering.knn import exact_neighbours

    X = np.random.default_rng(1).normal(size=(800, 6))
    assert knn_recall(X, knn_graph(X, 7), 7) == 1.0
    _, ind = exact_neighbours(X, 7)
    assert knn_recall(X, ind, 7, sample=100) == 1.0
    half = ind.copy()
    half[:, 3:] = -1
    assert knn_recall(X, half, 7, sample=10_000) == pytest.approx(3 / 7)
    # the mutual graph leaves out neighbours by construction
    assert knn_recall(X, knn_graph(X, 7, symmetrize="mutual"), 7) < 1.0
    with pytest.raises(ValueError, match="sample"):
        knn_recall(X, ind, 7, sample=0)


# ---------------------------------------------------------------------------
# the graph's rules
# ---------------------------------------------------------------------------

def test_duplicates_give_zero_edges_and_the_exact_graph():
    X = np.repeat(np.random.default_rng(2).normal(size=(60, 4)), 5, axis=0)
    g = knn_graph(X, 4, approximate=True)
    exact = knn_graph(X, 4)
    for a, b in zip(g.to_arrays(), exact.to_arrays()):
        np.testing.assert_array_equal(np.sort(a), np.sort(b))
    assert (g.to_arrays()[2] == 0).all()


@pytest.mark.parametrize("symmetrize", ["union", "mutual"])
def test_symmetrize_reads_the_lists(symmetrize):
    from mst_dist.clustering._nndescent import nndescent_neighbours

    X = np.random.default_rng(4).normal(size=(1200, 16))
    g = knn_graph(X, 6, symmetrize=symmetrize, approximate=True, random_state=9)
    _, nbr, _ = nndescent_neighbours(X, 6, random_state=9)
    lists = [set(r.tolist()) for r in nbr]
    want = {(min(i, j), max(i, j)) for i in range(1200) for j in lists[i]
            if symmetrize == "union" or i in lists[j]}
    src, dst, _ = g.to_arrays()
    assert sorted(zip(src.tolist(), dst.tolist())) == sorted(want)
    weights_are_distances(X, g)


def test_k_of_all_other_points_is_the_exact_graph():
    X = np.random.default_rng(5).normal(size=(40, 3))
    for k in (39, 38):
        a, b = knn_graph(X, k, approximate=True), knn_graph(X, k)
        for x, y in zip(a.to_arrays(), b.to_arrays()):
            np.testing.assert_array_equal(x, y)


def test_bad_inputs_as_the_exact_search():
    X = np.random.default_rng(6).normal(size=(20, 2))
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 19\]"):
        knn_graph(X, 20, approximate=True)
    with pytest.raises(ValueError, match="k must be"):
        knn_graph(X, 0, approximate=True)
    Y = X.copy()
    Y[13, 1] = np.nan
    with pytest.raises(ValueError, match="point 13 "):
        knn_graph(Y, 3, approximate=True)
    with pytest.raises(ValueError, match="metric must be one of"):
        knn_graph(X, 3, metric="hamming", approximate=True)
    with pytest.raises(ValueError, match="symmetrize"):
        knn_graph(X, 3, symmetrize="max", approximate=True)
    with pytest.raises(ValueError, match="2-dimensional"):
        knn_graph(X[:, 0], 3, approximate=True)
    with pytest.raises(ValueError, match="point 4 is zero"):
        knn_graph(np.r_[X[:4], [[0.0, 0.0]], X[4:]], 3, metric="cosine", approximate=True)
    with pytest.raises(ValueError, match="random_state"):
        knn_graph(X, 3, approximate=True, random_state=-1)
    with pytest.raises(ValueError, match="approximate must be"):
        knn_graph(X, 3, approximate="yes")


# ---------------------------------------------------------------------------
# determinism
# ---------------------------------------------------------------------------

def test_same_seed_same_graph_whatever_the_threads():
    import numba

    X = blobs(3000, 12, seed=7)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS, min(3, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            for _ in range(2):
                runs.append(knn_graph(X, 10, approximate=True, random_state=11))
    finally:
        numba.set_num_threads(before)
    first = runs[0].to_arrays()
    for g in runs[1:]:
        for a, b in zip(first, g.to_arrays()):
            np.testing.assert_array_equal(a, b)
        assert g.meta["knn"] == runs[0].meta["knn"]
    # None is a fixed seed (0)
    a, b = knn_graph(X[:500], 5, approximate=True), knn_graph(X[:500], 5, approximate=True, random_state=0)
    for x, y in zip(a.to_arrays(), b.to_arrays()):
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------------------
# on a cluster, and in HDBSCAN
# ---------------------------------------------------------------------------

def test_on_one_worker_the_edges_left_there(client2):
    da = pytest.importorskip("dask.array")
    X = blobs(1500, 8, seed=8)
    g = knn_graph(da.from_array(X, chunks=(400, 8)), 7, approximate=True, client=client2, random_state=2,
                  partitions=1)
    assert not g.in_memory and g.n_vertices == 1500 and g.meta["knn"]["method"] == "nn-descent"
    here = knn_graph(X, 7, approximate=True, random_state=2)
    for a, b in zip(g.to_arrays(), here.to_arrays()):
        np.testing.assert_array_equal(a, b)
    Y = X.copy()
    Y[1234, 3] = np.inf
    with pytest.raises(ValueError, match="point 1234 "):
        knn_graph(da.from_array(Y, chunks=(400, 8)), 7, approximate=True, client=client2).n_edges
    with pytest.raises(ValueError, match="k must be"):
        knn_graph(da.from_array(X, chunks=(400, 8)), 1500, approximate=True, client=client2)


def test_hdbscan_with_approximate_neighbours():
    from mst_dist import HDBSCAN

    X = blobs(600, 10, seed=9)
    exact = HDBSCAN(min_cluster_size=20).fit(X)
    approx = HDBSCAN(min_cluster_size=20, approximate_knn=True).fit(X)
    assert approx.get_params()["approximate_knn"] is True
    assert approx.n_clusters_ == exact.n_clusters_
    assert (approx.labels_ == exact.labels_).mean() > 0.98
    with pytest.raises(ValueError, match="approximate_knn"):
        HDBSCAN(exact=True, approximate_knn=True).fit(X)
    with pytest.raises(ValueError, match="approximate_knn"):
        HDBSCAN(approximate_knn="no").fit(X)

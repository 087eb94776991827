"""HDBSCAN on distance graphs, against scikit-learn's HDBSCAN."""
import numpy as np
import pytest

import mst_dist
from support.needs import module

module("sklearn", "pip install scikit-learn", module_level=True)
from scipy.sparse.csgraph import minimum_spanning_tree  # noqa: E402
from scipy.spatial.distance import pdist, squareform  # noqa: E402
from sklearn.cluster import HDBSCAN  # noqa: E402
from sklearn.cluster._hdbscan._tree import HIERARCHY_dtype, tree_to_labels  # noqa: E402
from sklearn.datasets import make_blobs, make_moons  # noqa: E402


def partition_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return np.array_equal(a < 0, b < 0) and len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def agreement(a, b):
    """Fraction of points whose label in ``b`` is the one most of their ``a`` cluster got (noise: -1 both)."""
    same = 0
    for label in set(a.tolist()):
        mine = b[a == label]
        if label < 0:
            same += int(np.count_nonzero(mine < 0))
        else:
            values, counts = np.unique(mine, return_counts=True)
            same += int(counts[values >= 0].max()) if np.any(values >= 0) else 0
    return same / len(a)


def points(shape, seed, noise):
    rng = np.random.default_rng(seed)
    if shape == "blobs":
        X, _ = make_blobs(120, centers=4, cluster_std=rng.uniform(0.3, 1.5, 4), random_state=seed)
    elif shape == "moons":
        X, _ = make_moons(120, noise=0.06, random_state=seed)
    else:  # one blob and a sparse one
        X = np.r_[rng.normal(size=(80, 2)), rng.normal(6, 3, size=(40, 2))]
    lo, hi = X.min(0), X.max(0)
    return np.r_[X, rng.uniform(lo, hi, size=(int(noise * len(X)), 2))]


def complete_graph(X):
    n = len(X)
    i, j = np.triu_indices(n, 1)
    return mst_dist.Graph.from_arrays(i, j, pdist(X), n_vertices=n)


def sklearn_labels_of(Z, min_cluster_size, **kw):
    """scikit-learn's condensed tree and selection run on a given single-linkage matrix."""
    h = np.empty(Z.shape[0], dtype=HIERARCHY_dtype)
    h["left_node"], h["right_node"] = Z[:, 0], Z[:, 1]
    h["value"], h["cluster_size"] = Z[:, 2], Z[:, 3]
    return tree_to_labels(h, min_cluster_size, **kw)


@pytest.mark.parametrize("shape", ["blobs", "moons", "uneven"])
@pytest.mark.parametrize("noise,seed", [(0.0, 0), (0.1, 1), (0.3, 2)])
def test_same_clusters_as_sklearn_on_complete_distance_graphs(shape, noise, seed):
    X = points(shape, seed, noise)
    g = complete_graph(X)
    D = squareform(pdist(X))
    for mcs, ms in ((5, None), (10, 4)):
        sk = HDBSCAN(min_cluster_size=mcs, min_samples=ms, metric="precomputed", copy=True).fit(D)
        me = mst_dist.hdbscan(g, min_cluster_size=mcs, min_samples=ms)
        # the core distances are scikit-learn's (a point is its own first neighbour)
        k = mcs if ms is None else ms
        np.testing.assert_array_equal(me.core_distances_, np.sort(D, axis=1)[:, k - 1])
        # the forest is a minimum spanning forest of the same mutual reachability distances
        mr = np.maximum(np.maximum.outer(me.core_distances_, me.core_distances_), D)
        i, j = me.forest_.src, me.forest_.dst
        np.testing.assert_array_equal(me.forest_.weight, mr[i, j])
        assert me.forest_.total_weight == pytest.approx(minimum_spanning_tree(mr).sum())
        # the same clusters, point for point, but for a point or two where tied distances let
        # scikit-learn's Prim walk order the merges its own way
        assert agreement(sk.labels_, me.labels_) >= 0.96
        # condensing the tied merges one at a time in the linkage's order is scikit-learn's own
        # condensation: exactly its clusters and probabilities of the same hierarchy
        ordered = mst_dist.hdbscan(g, min_cluster_size=mcs, min_samples=ms, ties="order")
        np.testing.assert_array_equal(ordered.single_linkage_tree_, me.single_linkage_tree_)
        labels, prob = sklearn_labels_of(ordered.single_linkage_tree_, mcs)
        assert partition_equal(labels, ordered.labels_)
        np.testing.assert_allclose(prob, ordered.probabilities_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_exactly_sklearn_where_mutual_reachability_has_no_ties(seed):
    # min_samples=1: core distances 0, mutual reachability = the distances, all distinct
    X = points("blobs", seed, 0.2)
    D = squareform(pdist(X))
    for mcs in (2, 5, 15):
        sk = HDBSCAN(min_cluster_size=mcs, min_samples=1, metric="precomputed", copy=True).fit(D)
        for ties in ("merge", "order"):
            me = mst_dist.hdbscan(complete_graph(X), min_cluster_size=mcs, min_samples=1, ties=ties)
            assert partition_equal(sk.labels_, me.labels_)
            np.testing.assert_allclose(sk.probabilities_, me.probabilities_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("min_cluster_size", [2, 5, 60])
@pytest.mark.parametrize("min_samples", [1, 12])
@pytest.mark.parametrize("method", ["eom", "leaf"])
def test_selection_equals_sklearns_on_the_same_hierarchy(min_cluster_size, min_samples, method):
    X = points("uneven", 3, 0.2)
    for single in (False, True):
        me = mst_dist.hdbscan(complete_graph(X), min_cluster_size=min_cluster_size, min_samples=min_samples,
                              cluster_selection_method=method, allow_single_cluster=single, ties="order")
        labels, prob = sklearn_labels_of(me.single_linkage_tree_, min_cluster_size,
                                         cluster_selection_method=method, allow_single_cluster=single)
        assert partition_equal(labels, me.labels_)
        np.testing.assert_allclose(prob, me.probabilities_, rtol=0, atol=1e-12)
        assert me.n_clusters_ == len(set(labels.tolist()) - {-1})


@pytest.mark.parametrize("seed", range(3))
def test_merged_ties_do_not_depend_on_the_vertices_numbering(seed):
    X = points("uneven", seed, 0.2)
    p = np.random.default_rng(seed).permutation(len(X))
    for mcs, ms in ((5, None), (10, 4), (8, 8)):
        me = mst_dist.hdbscan(complete_graph(X), min_cluster_size=mcs, min_samples=ms)
        other = mst_dist.hdbscan(complete_graph(X[p]), min_cluster_size=mcs, min_samples=ms)
        back = np.empty_like(other.labels_)
        back[p] = other.labels_
        assert partition_equal(me.labels_, back)
        prob = np.empty_like(other.probabilities_)
        prob[p] = other.probabilities_
        np.testing.assert_allclose(me.probabilities_, prob, rtol=0, atol=1e-12)


def test_single_cluster_and_noise_labels():
    X = np.random.default_rng(0).normal(size=(60, 2))
    g = complete_graph(X)
    D = squareform(pdist(X))
    me = mst_dist.hdbscan(g, min_cluster_size=10, allow_single_cluster=True)
    sk = HDBSCAN(min_cluster_size=10, allow_single_cluster=True, metric="precomputed", copy=True).fit(D)
    assert partition_equal(sk.labels_, me.labels_)
    assert set(me.labels_.tolist()) <= {-1, 0, 1, 2}
    assert np.all(me.probabilities_[me.labels_ < 0] == 0)
    assert np.all((me.probabilities_ >= 0) & (me.probabilities_ <= 1))


def test_condensed_tree_and_linkage():
    X = points("blobs", 1, 0.1)
    me = mst_dist.hdbscan(complete_graph(X), min_cluster_size=5)
    n = len(X)
    t = me.condensed_tree_
    assert t.dtype.names == ("parent", "child", "lambda_val", "child_size")
    pts = t[t["child"] < n]
    assert sorted(pts["child"].tolist()) == list(range(n))     # every point leaves one cluster once
    assert t["parent"].min() == n
    clusters = t[t["child"] >= n]
    assert np.all(clusters["child_size"] >= 5)
    assert me.single_linkage_tree_.shape == (n - 1, 4)
    assert "n_clusters_" in repr(me)


def test_disconnected_knn_graph_clusters_each_component():
    # two far groups with no edge between them, and two vertices without enough neighbours
    rng = np.random.default_rng(5)
    X = np.r_[rng.normal(size=(30, 2)), rng.normal(50, 1, size=(30, 2))]
    A = module("sklearn.neighbors", "pip install scikit-learn").kneighbors_graph(X, 6, mode="distance")
    g = mst_dist.clustering.from_kneighbors_graph(A)
    src, dst, w = g.to_arrays()
    assert not np.any((src < 30) & (dst >= 30))
    src, dst, w = np.r_[src, 60], np.r_[dst, 61], np.r_[w, 1.0]   # a pair: one neighbour each
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=63)      # and vertex 62: none
    me = mst_dist.hdbscan(g, min_cluster_size=5, min_samples=3)
    assert me.labels_[60:].tolist() == [-1, -1, -1]
    assert np.isinf(me.core_distances_[60:]).all()
    assert me.n_clusters_ == 2
    assert len(set(me.labels_[:30].tolist())) == 1 and len(set(me.labels_[30:60].tolist())) == 1
    assert np.isinf(me.single_linkage_tree_[-3:, 2]).all()


def test_kneighbors_graph_input_is_symmetrised():
    X = points("blobs", 2, 0.0)
    from sklearn.neighbors import kneighbors_graph

    A = kneighbors_graph(X, 8, mode="distance")
    me = mst_dist.hdbscan(mst_dist.clustering.from_kneighbors_graph(A), min_cluster_size=5)
    assert me.n_clusters_ >= 2
    assert me.labels_.shape == (len(X),)


def test_argument_errors():
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="min_cluster_size must be an integer >= 2"):
        mst_dist.hdbscan(g, min_cluster_size=1)
    with pytest.raises(ValueError, match="min_samples"):
        mst_dist.hdbscan(g, min_samples=0)
    with pytest.raises(ValueError, match="ties"):
        mst_dist.hdbscan(g, ties="random")
    with pytest.raises(ValueError, match="cluster_selection_method"):
        mst_dist.hdbscan(g, cluster_selection_method="mass")
    with pytest.raises(ValueError, match="edge 1: weight -2.0 is negative"):
        mst_dist.hdbscan(mst_dist.Graph.from_arrays([0, 1], [1, 2], [1.0, -2.0]), min_samples=2)


# ---------------------------------------------------------------------------
# A graph read or generated on the workers: core distances and weights computed there
# ---------------------------------------------------------------------------

def _same_result(a, b):
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.probabilities_, b.probabilities_)
    np.testing.assert_array_equal(a.core_distances_, b.core_distances_)
    np.testing.assert_array_equal(a.condensed_tree_, b.condensed_tree_)
    np.testing.assert_array_equal(a.single_linkage_tree_, b.single_linkage_tree_)


def _hdbscan_tasks(client):
    def prefixes(dask_scheduler):
        return sorted(p for p in dask_scheduler.task_prefixes if "hdbscan" in p)

    return client.run_on_scheduler(prefixes)


@pytest.mark.parametrize("min_samples", [1, 4, 9])
def test_read_knn_graph_clustered_on_the_workers(client2, tmp_path, min_samples):
    """A kNN graph written to Parquet and read back: its nearest-neighbour lists, core distances and
    mutual-reachability weights are tasks on the workers, and the result is the in-memory path's
    (min_samples=9: vertices of fewer neighbours have no core distance)."""
    from mst_dist.clustering import from_points

    X, _ = make_blobs(600, centers=5, cluster_std=0.8, random_state=3)
    knn = from_points(X, 6)
    src, dst, w = knn.to_arrays()
    mst_dist.write_graph(knn, tmp_path / "knn.parquet")
    g = mst_dist.read(tmp_path / "knn.parquet", client=client2, n_vertices=knn.n_vertices)
    assert not g.in_memory
    here = mst_dist.hdbscan(mst_dist.Graph.from_arrays(src, dst, w, n_vertices=knn.n_vertices),
                            min_cluster_size=15, min_samples=min_samples, client=client2)
    there = mst_dist.hdbscan(g, min_cluster_size=15, min_samples=min_samples, client=client2, partitions=5)
    _same_result(there, here)
    assert there.n_clusters_ >= 2
    if min_samples > 1:
        assert {"mst-hdbscan-nearest", "mst-hdbscan-merge", "mst-hdbscan-core"} <= set(_hdbscan_tasks(client2))
    if min_samples == 9:
        assert not np.isfinite(there.core_distances_).all()


@pytest.mark.processes
def test_generated_graph_clustered_on_worker_processes(pclient):
    """Worker processes: the lists and the core distances are pickled between them; the core distances'
    worker plugin is gone after the run."""
    g = mst_dist.generate("random_geometric", seed=5, n=1500, radius=0.06)
    here = mst_dist.hdbscan(mst_dist.Graph.from_arrays(*g.to_arrays(), n_vertices=g.n_vertices),
                            min_cluster_size=10, min_samples=5, client=pclient)
    there = mst_dist.hdbscan(g, min_cluster_size=10, min_samples=5, client=pclient, partitions=6)
    _same_result(there, here)
    def plugins(dask_worker):
        return [p for p in dask_worker.plugins if "hdbscan" in p]

    assert all(v == [] for v in pclient.run(plugins).values())


def test_negative_distance_named_by_the_worker_that_read_it(client2):
    rows = np.array([[0, 1, 1.0], [1, 2, 2.0], [2, 3, -0.5], [3, 0, 1.0]])
    from mst_dist.graph import FunctionSource, Graph, InvalidGraphError

    g = Graph(n_vertices=4, weight_dtype=np.dtype(np.float64), sources=[FunctionSource(_rows, {"rows": rows}, 4)])
    with pytest.raises(InvalidGraphError, match="edge 2: weight -0.5 is negative"):
        mst_dist.hdbscan(g, min_cluster_size=2, min_samples=2, client=client2)


def _rows(start, stop, *, rows):
    r = rows[start:stop]
    return r[:, 0].astype(np.int64), r[:, 1].astype(np.int64), r[:, 2]


@pytest.mark.parametrize("min_samples", [1, 2])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -0.5])
def test_a_weight_that_is_no_distance_is_named_by_the_worker_that_read_it(client2, min_samples, bad):
    """NaN passes ``w < 0``: it, an infinite weight and a negative one are refused where they load,
    naming the edge, with nearest lists (min_samples=2) and without (min_samples=1)."""
    rows = np.array([[0, 1, 1.0], [1, 2, 2.0], [2, 3, bad], [3, 0, 1.0]])
    from mst_dist.graph import FunctionSource, Graph, InvalidGraphError

    g = Graph(n_vertices=4, weight_dtype=np.dtype(np.float64),
              sources=[FunctionSource(_rows, {"rows": rows[:1]}, 1), FunctionSource(_rows, {"rows": rows[1:]}, 3)])
    with pytest.raises(InvalidGraphError, match=rf"edge 2: weight {bad!r} (is negative|is not a distance)") as e:
        mst_dist.hdbscan(g, min_cluster_size=2, min_samples=min_samples, client=client2)
    assert e.value.edge == 2


def test_min_samples_or_min_cluster_size_beyond_the_vertices():
    """More samples than vertices: refused, as scikit-learn refuses it (no vertex could be a core point);
    a smallest cluster larger than the graph: scikit-learn's answer (all noise, or the one cluster)."""
    X = points("blobs", 4, 0.0)[:30]
    D = squareform(pdist(X))
    g = complete_graph(X)
    with pytest.raises(ValueError, match="min_samples=31 is more than the graph's 30 vertices"):
        mst_dist.hdbscan(g, min_cluster_size=5, min_samples=31)
    with pytest.raises(ValueError, match="min_samples=40 is more than"):  # min_samples defaults to min_cluster_size
        mst_dist.hdbscan(g, min_cluster_size=40, allow_single_cluster=True)
    for kw in (dict(min_cluster_size=40, min_samples=5), dict(min_cluster_size=31, min_samples=1),
               dict(min_cluster_size=5, min_samples=30)):
        for single in (False, True):
            sk = HDBSCAN(metric="precomputed", copy=True, allow_single_cluster=single, **kw).fit(D)
            me = mst_dist.hdbscan(g, allow_single_cluster=single, **kw)
            assert partition_equal(sk.labels_, me.labels_), (kw, single)
            np.testing.assert_allclose(sk.probabilities_, me.probabilities_, rtol=0, atol=1e-12)


def test_duplicate_points_zero_distances():
    """Every third point twice: zero distances are ordinary edges (never dropped, as scipy's csgraph
    drops them); both copies of a point share a label, and the clusters are scikit-learn's."""
    X, _ = make_blobs(60, centers=3, random_state=1)
    X = np.r_[X, X[::3]]
    n = len(X)
    copies = np.arange(0, 60, 3), np.arange(60, n)
    D = squareform(pdist(X))
    g = complete_graph(X)
    assert np.count_nonzero(g.to_arrays()[2] == 0) == len(copies[0])
    for mcs, ms in ((5, 1), (5, 3)):
        sk = HDBSCAN(min_cluster_size=mcs, min_samples=ms, metric="precomputed", copy=True).fit(D)
        me = mst_dist.hdbscan(g, min_cluster_size=mcs, min_samples=ms)
        assert partition_equal(sk.labels_, me.labels_)
        np.testing.assert_allclose(sk.probabilities_, me.probabilities_, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(me.labels_[copies[0]], me.labels_[copies[1]])
        if ms == 1:
            assert np.all(me.core_distances_ == 0)


def test_isolated_vertices_are_noise_and_leave_the_rest_as_scikit_learn_clusters_it():
    """The points as the even vertices of a graph whose odd vertices have no edge: the odd ones are
    noise with no core distance, and the even ones get exactly scikit-learn's clusters."""
    X = points("blobs", 0, 0.2)
    n = len(X)
    i, j = np.triu_indices(n, 1)
    g = mst_dist.Graph.from_arrays(2 * i, 2 * j, pdist(X), n_vertices=2 * n)
    D = squareform(pdist(X))
    for mcs in (2, 5, 15):
        sk = HDBSCAN(min_cluster_size=mcs, min_samples=1, metric="precomputed", copy=True).fit(D)
        me = mst_dist.hdbscan(g, min_cluster_size=mcs, min_samples=1)
        assert partition_equal(sk.labels_, me.labels_[0::2])
        np.testing.assert_allclose(sk.probabilities_, me.probabilities_[0::2], rtol=0, atol=1e-12)
        assert np.all(me.labels_[1::2] == -1) and np.all(me.probabilities_[1::2] == 0)
    # with min_samples > 1 an isolated vertex has no neighbour to be a core point with
    me = mst_dist.hdbscan(g, min_cluster_size=5, min_samples=3)
    assert np.isinf(me.core_distances_[1::2]).all() and np.all(me.labels_[1::2] == -1)
    np.testing.assert_array_equal(me.core_distances_[0::2], np.sort(D, axis=1)[:, 2])


@pytest.mark.parametrize("k", [3, 8])
def test_core_distances_of_a_knn_graph_are_exact_up_to_k_plus_one(client2, tmp_path, k):
    """Documented: on a kNN graph the core distances are exact for ``min_samples <= k + 1``; checked
    against brute force over every pair of points, in memory and on the workers."""
    from mst_dist.clustering import from_points

    X = np.random.default_rng(k).normal(size=(300, 3))
    D = squareform(pdist(X))
    brute = np.sort(D, axis=1)  # column 0: the point itself
    knn = from_points(X, k)
    mst_dist.write_graph(knn, tmp_path / "knn.parquet")
    there = mst_dist.read(tmp_path / "knn.parquet", client=client2, n_vertices=knn.n_vertices)
    for ms in range(1, k + 2):
        for g in (knn, there):
            got = mst_dist.hdbscan(g, min_cluster_size=5, min_samples=ms, client=client2).core_distances_
            np.testing.assert_allclose(got, brute[:, ms - 1], rtol=1e-12, atol=0, err_msg=f"min_samples={ms}")

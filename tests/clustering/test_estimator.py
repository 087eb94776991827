"""The HDBSCAN estimator: scikit-learn's conventions, mst_dist.hdbscan's clusters, inputs and their errors."""
import numpy as np
import pytest

import mst_dist
from support.needs import module

module("sklearn", "pip install scikit-learn", module_level=True)
from scipy.spatial.distance import pdist, squareform  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.cluster import HDBSCAN as SkHDBSCAN  # noqa: E402
from sklearn.datasets import make_blobs, make_moons  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from mst_dist.clustering.estimator import HDBSCAN  # noqa: E402


def partition_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return np.array_equal(a < 0, b < 0) and len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.fixture(scope="module")
def blobs():
    X, _ = make_blobs(150, centers=3, cluster_std=0.6, random_state=3)
    return X


#: scikit-learn's checks that do not apply, each with the reason.
NOT_APPLICABLE = {
    # array API namespaces (CuPy, torch) as inputs: the estimator takes NumPy or Dask arrays (a GPU
    # worker runs the engine's CuPy kernels on the graph, whatever array the points came in)
    "check_array_api_input": "array API inputs are not accepted",
}


def _checks():
    mark = parametrize_with_checks([HDBSCAN(min_cluster_size=3)]).mark
    names, cases = mark.args[0], mark.args[1]
    kept = [case for case in cases if getattr(case[1], "func", case[1]).__name__ not in NOT_APPLICABLE]
    assert len(kept) == len(cases) - len(NOT_APPLICABLE)
    return pytest.mark.parametrize(names, kept, ids=mark.kwargs["ids"])


# every check scikit-learn has for a clusterer but those above: none is expected to fail
@_checks()
def test_scikit_learn_checks(estimator, check):
    check(estimator)


def test_the_package_exports_the_estimator():
    assert mst_dist.HDBSCAN is HDBSCAN
    assert mst_dist.clustering.HDBSCAN is HDBSCAN


def test_parameters_are_stored_as_given_and_checked_in_fit(blobs):
    est = HDBSCAN(min_cluster_size=-3, metric="nonsense")  # no error yet: scikit-learn's convention
    assert est.get_params()["min_cluster_size"] == -3
    with pytest.raises(ValueError, match="min_cluster_size must be an integer >= 2"):
        est.fit(blobs)
    est.set_params(min_cluster_size=5)
    with pytest.raises(ValueError, match="unknown metric 'nonsense'; choose one of euclidean, precomputed"):
        est.fit(blobs)
    twin = clone(HDBSCAN(min_cluster_size=7, engine_options={"partitions": 2}))
    assert twin.get_params()["engine_options"] == {"partitions": 2} and twin.min_cluster_size == 7


def test_labels_are_those_of_mst_dist_hdbscan_on_the_same_graph(blobs):
    est = HDBSCAN(min_cluster_size=8, min_samples=4, k=9).fit(blobs)
    ref = mst_dist.hdbscan(mst_dist.clustering.from_points(blobs, 9), 8, 4)
    assert est.n_clusters_ == ref.n_clusters_ == 3
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    np.testing.assert_array_equal(est.probabilities_, ref.probabilities_)
    np.testing.assert_array_equal(est.core_distances_, ref.core_distances_)
    assert np.array_equal(est.fit_predict(blobs), est.labels_)


def test_attributes(blobs):
    est = HDBSCAN(min_cluster_size=8).fit(blobs)
    n = len(blobs)
    mst = est.minimum_spanning_tree_
    assert mst.shape == (n - 1, 3) and np.all(np.diff(mst[:, 2]) >= 0)  # the kNN graph's parts joined
    assert mst[:, 2].sum() == pytest.approx(est.forest_.total_weight)
    assert est.single_linkage_tree_.shape == (n - 1, 4)
    assert est.condensed_tree_.dtype == mst_dist.clustering.CONDENSED_DTYPE
    assert est.outlier_scores_.shape == (n,) and 0 <= est.outlier_scores_.min() <= est.outlier_scores_.max() <= 1
    assert est.cluster_persistence_.shape == (3,) and np.all((est.cluster_persistence_ > 0)
                                                             & (est.cluster_persistence_ <= 1))
    assert 0 < est.relative_validity_ <= 1
    assert len(est.exemplars_) == 3 and est.n_features_in_ == 2
    for label, (pts, idx) in enumerate(zip(est.exemplars_, est.exemplar_indices_)):
        assert len(idx) and np.all(est.labels_[idx] == label)
        np.testing.assert_array_equal(pts, blobs[idx])
    assert est.prediction_data_ is None


def test_an_outlier_scores_highest_and_is_noise():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 0.2, (40, 2)), rng.normal(5, 0.2, (40, 2)), [[20.0, 20.0]]]
    est = HDBSCAN(min_cluster_size=5).fit(X)  # (the two blobs' kNN graphs apart, joined as the exact tree joins them)
    assert est.labels_[-1] == -1 and est.outlier_scores_.argmax() == len(X) - 1


@pytest.mark.parametrize("shape", ["blobs", "moons"])
def test_exact_is_the_tree_of_all_pairs(shape):
    if shape == "blobs":
        X, _ = make_blobs(120, centers=3, random_state=2)
    else:
        X, _ = make_moons(120, noise=0.07, random_state=2)
    exact = HDBSCAN(min_cluster_size=6, min_samples=4, k=3, exact=True).fit(X)
    everything = HDBSCAN(min_cluster_size=6, min_samples=4, metric="precomputed").fit(squareform(pdist(X)))
    assert exact.forest_.total_weight == pytest.approx(everything.forest_.total_weight, rel=1e-12)
    np.testing.assert_array_equal(exact.labels_, everything.labels_)
    np.testing.assert_array_equal(exact.outlier_scores_, everything.outlier_scores_)


def test_epsilon_merges_clusters_born_below_it():
    X, _ = make_blobs(120, centers=[[0, 0], [1.2, 0], [10, 10]], cluster_std=0.25, random_state=1)
    apart = HDBSCAN(min_cluster_size=10, min_samples=2, k=119).fit(X)
    merged = HDBSCAN(min_cluster_size=10, min_samples=2, k=119, cluster_selection_epsilon=2.0).fit(X)
    assert apart.n_clusters_ == 3 and merged.n_clusters_ == 2
    hdbscan = module("hdbscan", "pip install hdbscan")
    # the hdbscan package's min_samples does not count the point itself
    theirs = hdbscan.HDBSCAN(min_cluster_size=10, min_samples=1, cluster_selection_epsilon=2.0).fit(X)
    assert partition_equal(merged.labels_, theirs.labels_)


def test_precomputed_inputs_give_the_same_clusters(blobs):
    D = squareform(pdist(blobs))
    i, j = np.triu_indices(len(blobs), 1)
    graph = mst_dist.Graph.from_arrays(i, j, pdist(blobs), n_vertices=len(blobs))
    import scipy.sparse as sp

    dense = HDBSCAN(min_cluster_size=8, metric="precomputed").fit(D)
    for X in (graph, sp.csr_array(D)):
        other = HDBSCAN(min_cluster_size=8, metric="precomputed").fit(X)
        np.testing.assert_array_equal(other.labels_, dense.labels_)
    points = HDBSCAN(min_cluster_size=8, k=len(blobs) - 1).fit(blobs)  # the kNN graph of all pairs
    np.testing.assert_array_equal(points.labels_, dense.labels_)
    assert not hasattr(dense, "exemplars_") and len(dense.exemplar_indices_) == dense.n_clusters_


@pytest.mark.parametrize("shape", ["blobs", "moons"])
def test_scikit_learns_precomputed_hdbscan_without_ties(shape):
    """min_samples=1 on distinct distances: no tied mutual reachability, scikit-learn's labels exactly."""
    if shape == "blobs":
        X, _ = make_blobs(100, centers=3, random_state=5)
    else:
        X, _ = make_moons(100, noise=0.08, random_state=5)
    D = squareform(pdist(X))
    for kw in ({}, {"cluster_selection_method": "leaf"}, {"allow_single_cluster": True}):
        ours = HDBSCAN(min_cluster_size=6, min_samples=1, metric="precomputed", **kw).fit(D)
        sk = SkHDBSCAN(min_cluster_size=6, min_samples=1, metric="precomputed", **kw).fit(D)
        assert partition_equal(ours.labels_, sk.labels_), kw
        np.testing.assert_allclose(ours.probabilities_, sk.probabilities_, err_msg=str(kw))


def test_a_dask_array_gives_the_clusters_of_its_points(blobs, client):
    import dask.array as da

    est = HDBSCAN(min_cluster_size=8, k=9, client=client).fit(da.from_array(blobs, chunks=50))
    ref = HDBSCAN(min_cluster_size=8, k=9).fit(blobs)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    for a, b in zip(est.exemplars_, ref.exemplars_):
        np.testing.assert_array_equal(a, b)
    exact = HDBSCAN(min_cluster_size=8, exact=True, client=client).fit(da.from_array(blobs, chunks=50))
    np.testing.assert_array_equal(exact.labels_, HDBSCAN(min_cluster_size=8, exact=True).fit(blobs).labels_)


@pytest.mark.parametrize("X, kw, message", [
    ([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]], {"min_cluster_size": 2}, "NaN"),
    ([[0.0, 1.0], [np.inf, 2.0], [3.0, 4.0]], {"min_cluster_size": 2}, "infinity"),
    (np.arange(10.0), {}, "2D array"),
    (np.ones((6, 2)), {"min_cluster_size": 2, "k": 6}, r"k=6 neighbours of each of 6 points: give k < n_samples"),
    (np.ones((6, 2)), {"min_cluster_size": 2, "min_samples": 5, "k": 2}, "k=2 is less than min_samples - 1 = 4"),
    (np.arange(8.0).reshape(4, 2), {"min_cluster_size": 5}, "n_samples=4 is fewer than min_cluster_size=5"),
    (np.ones((6, 2)), {"metric": "cityblock"}, "unknown metric 'cityblock'"),
    (np.ones((6, 2)), {"cluster_selection_method": "best"}, "unknown cluster_selection_method 'best'"),
    (np.ones((6, 2)), {"cluster_selection_epsilon": -1.0}, "cluster_selection_epsilon must be a finite number"),
    (np.ones((6, 3)), {"metric": "precomputed"}, "must be square"),
    (-np.ones((6, 6)), {"metric": "precomputed"}, "NaN, infinite or negative"),
    (np.ones((6, 6)), {"metric": "precomputed", "prediction_data": True}, "prediction_data=True needs points"),
])
def test_bad_input_is_a_clear_error(X, kw, message):
    with pytest.raises(ValueError, match=message):
        HDBSCAN(**kw).fit(X)


def test_a_ragged_array_is_a_clear_error():
    with pytest.raises(ValueError, match="inhomogeneous|sequence"):
        HDBSCAN(min_cluster_size=2).fit([[0.0, 1.0], [2.0], [3.0, 4.0]])


@pytest.mark.parametrize("name", ["estimator", "prediction", "outliers", "validity"])
def test_docstring_examples(name):
    import doctest
    import importlib

    out = doctest.testmod(importlib.import_module(f"mst_dist.clustering.{name}"), report=False)
    assert out.attempted >= 3 and out.failed == 0, out

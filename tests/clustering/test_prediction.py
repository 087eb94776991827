"""New points against a fitted HDBSCAN estimator: labels, soft clustering, and the errors."""
import numpy as np
import pytest

from support.needs import module

module("sklearn", "pip install scikit-learn", module_level=True)
from sklearn.datasets import make_blobs  # noqa: E402

from mst_dist.clustering import all_points_membership_vectors, approximate_predict, membership_vector  # noqa: E402
from mst_dist.clustering.estimator import HDBSCAN  # noqa: E402


@pytest.fixture(scope="module")
def model():
    X, _ = make_blobs(200, centers=3, cluster_std=0.5, random_state=4)
    return X, HDBSCAN(min_cluster_size=10, prediction_data=True).fit(X)


def test_fitted_points_are_predicted_in_their_own_clusters(model):
    X, est = model
    labels, probabilities = approximate_predict(est, X + 1e-6)
    clustered = est.labels_ >= 0
    assert np.mean(labels[clustered] == est.labels_[clustered]) >= 0.98
    assert np.all((probabilities >= 0) & (probabilities <= 1)) and np.all(probabilities[labels < 0] == 0)
    far, _ = approximate_predict(est, [[100.0, 100.0]])
    assert far.tolist() == [-1]


def test_membership_vectors(model):
    X, est = model
    soft = all_points_membership_vectors(est)
    assert soft.shape == (len(X), est.n_clusters_)
    assert np.all(soft.sum(axis=1) <= 1 + 1e-9)
    clustered = est.labels_ >= 0
    assert np.mean(soft[clustered].argmax(axis=1) == est.labels_[clustered]) >= 0.98
    centre = X[est.labels_ == 1].mean(axis=0, keepdims=True)
    v = membership_vector(est, centre)
    assert v.shape == (1, est.n_clusters_) and v[0].argmax() == 1


def test_prediction_needs_prediction_data_and_matching_points(model):
    X, est = model
    plain = HDBSCAN(min_cluster_size=10).fit(X)
    for f in (approximate_predict, membership_vector):
        with pytest.raises(ValueError, match="fit it with HDBSCAN\\(prediction_data=True\\)"):
            f(plain, X[:2])
        with pytest.raises(ValueError, match="with 2 coordinates"):
            f(est, np.zeros((3, 5)))
        with pytest.raises(ValueError, match="NaN or infinite"):
            f(est, [[np.nan, 0.0]])
    with pytest.raises(ValueError, match="no prediction data"):
        all_points_membership_vectors(plain)


def test_no_cluster_predicts_noise():
    X = np.random.default_rng(0).uniform(size=(30, 2))
    est = HDBSCAN(min_cluster_size=25, prediction_data=True).fit(X)
    assert est.n_clusters_ == 0
    with pytest.warns(UserWarning, match="found no cluster"):
        labels, probabilities = approximate_predict(est, X[:3])
    assert labels.tolist() == [-1, -1, -1] and probabilities.tolist() == [0, 0, 0]
    assert all_points_membership_vectors(est).shape == (30, 0)

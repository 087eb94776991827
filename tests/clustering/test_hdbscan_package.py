"""The HDBSCAN estimator against the hdbscan package, on the examples of its documentation (blobs, moons).

Two kinds of comparison: the steps after the tree (flat clusters, GLOSH,
relative validity, prediction, soft clustering) run on the package's own
condensed tree and spanning tree must give its numbers exactly; whole fits
give its clusters where no mutual-reachability distances tie, and close
ones where they do (the package condenses tied merges one at a time, in
the order its Prim walk met them, so that its own results on tied data
change with the order of its input; here they are condensed as one event).  The estimator's default tree (the kNN graph, its
components joined as the exact tree joins them) is the exact one here.  The package's ``min_samples`` does not count the
point itself: its ``m`` is ``m + 1`` here.
"""
from types import SimpleNamespace

import numpy as np
import pytest

from support.needs import module

module("sklearn", "pip install scikit-learn", module_level=True)
hdbscan = module("hdbscan", "pip install hdbscan", module_level=True)
from hdbscan._hdbscan_tree import compute_stability, get_clusters, outlier_scores  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402
from sklearn.datasets import make_blobs, make_moons  # noqa: E402

from mst_dist.clustering import CONDENSED_DTYPE, all_points_membership_vectors, approximate_predict  # noqa: E402
from mst_dist.clustering import membership_vector  # noqa: E402
from mst_dist.clustering._kernels import condense  # noqa: E402
from mst_dist.clustering.estimator import HDBSCAN  # noqa: E402
from mst_dist.clustering.outliers import glosh  # noqa: E402
from mst_dist.clustering.prediction import prediction_data  # noqa: E402
from mst_dist.clustering.selection import flat  # noqa: E402
from mst_dist.clustering.validity import relative_validity  # noqa: E402


#: The package's exact tree (Prim's walk): its default, Borůvka's rounds on a k-d tree, returns a
#: heavier tree than the exact one on these moons (29.128 against 29.115 at min_samples=5).
EXACT = "prims_kdtree"


def data(shape):
    if shape == "blobs":
        X, _ = make_blobs(300, centers=4, cluster_std=0.8, random_state=0)
        new, _ = make_blobs(60, centers=4, cluster_std=1.2, random_state=1)
    else:
        X, _ = make_moons(300, noise=0.06, random_state=0)
        new, _ = make_moons(60, noise=0.1, random_state=1)
    return X, new


def how_it_works():
    """The data of the package's "How HDBSCAN Works" (fitted there with ``min_cluster_size=5``)."""
    moons, _ = make_moons(n_samples=50, noise=0.05, random_state=0)
    blobs, _ = make_blobs(n_samples=50, centers=[(-0.75, 2.25), (1.0, 2.0)], cluster_std=0.25, random_state=0)
    return np.vstack([moons, blobs])


def tied(example):
    """``(points, min_cluster_size, the package's min_samples)`` of an example with tied distances.

    ``"..., d decimals"``: the coordinates rounded, so that many distances tie.
    """
    name, _, rounded = example.partition(", ")
    if name == "how it works":
        X, mcs, ms = how_it_works(), 5, 5
    else:
        X, mcs, ms = data(name)[0], 10, 5
    return (np.round(X, int(rounded.split()[0])) if rounded else X), mcs, ms


def package_scores(X, mcs, ms, orders):
    """The package's GLOSH scores of ``X`` fitted in ``orders`` input orders (the first ``X``'s own), in ``X``'s order."""
    out = []
    for seed in range(orders):
        p = np.random.default_rng(seed).permutation(len(X)) if seed else np.arange(len(X))
        scores = np.empty(len(X))
        scores[p] = hdbscan.HDBSCAN(min_cluster_size=mcs, min_samples=ms, algorithm=EXACT).fit(X[p]).outlier_scores_
        out.append(scores)
    return out


def rank(a, b):
    """Spearman's rank correlation of two score arrays, scores equal to 12 decimals ranked as one.

    Distances equal in exact arithmetic can differ in their last bits (the
    same gap between other coordinates), and so can scores computed from
    them: those differences are not an order.
    """
    return spearmanr(np.round(a, 12), np.round(b, 12))[0]


@pytest.fixture(scope="module", params=["blobs", "moons"])
def fitted(request):
    """The package's model of min_samples=5 (keeping its spanning tree and prediction data), and its tree as ours."""
    X, new = data(request.param)
    theirs = hdbscan.HDBSCAN(min_cluster_size=10, min_samples=5, gen_min_span_tree=True,
                             prediction_data=True).fit(X)
    raw = theirs.condensed_tree_.to_numpy()
    tree = np.empty(raw.shape[0], CONDENSED_DTYPE)
    for f in CONDENSED_DTYPE.names:
        tree[f] = raw[f]
    return X, new, theirs, raw, tree


def label_map(theirs, ours):
    """Our label -> theirs, asserting the partitions are one."""
    pairs = set(zip(ours.tolist(), theirs.tolist()))
    assert np.array_equal(ours < 0, theirs < 0)
    assert len(pairs) == len(set(ours.tolist())) == len(set(theirs.tolist()))
    return {a: b for a, b in pairs if a >= 0}


@pytest.mark.parametrize("method", ["eom", "leaf"])
@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0])
def test_flat_clusters_of_the_packages_tree(fitted, method, single, epsilon):
    X, _, _, raw, tree = fitted
    labels, probabilities, persistence = get_clusters(raw, compute_stability(raw), method, single, False, epsilon)
    ours = flat(tree, len(X), method, single, epsilon)
    to_theirs = label_map(labels, ours.labels)
    np.testing.assert_array_equal(ours.probabilities, probabilities)
    # (the package sums stabilities in float32)
    np.testing.assert_allclose(ours.persistence, persistence[[to_theirs[i] for i in range(len(to_theirs))]],
                               rtol=1e-6)


def test_glosh_and_validity_of_the_packages_trees(fitted):
    X, _, theirs, raw, tree = fitted
    np.testing.assert_array_equal(glosh(tree, len(X)), outlier_scores(raw))
    mst = theirs.minimum_spanning_tree_.to_numpy()
    value = relative_validity(theirs.labels_, mst[:, 0].astype(int), mst[:, 1].astype(int), mst[:, 2])
    assert value == pytest.approx(theirs.relative_validity_, rel=1e-12)


def test_the_packages_linkage_condensed_one_merge_at_a_time(fitted):
    """Its single-linkage tree condensed one merge at a time, in its order: its GLOSH scores and clusters exactly.

    So where whole fits differ from the package's on tied distances, they
    differ by how the tied merges are condensed, not by the scores' formula.
    """
    X, _, theirs, _, _ = fitted
    Z = np.ascontiguousarray(theirs.single_linkage_tree_.to_numpy())
    parent, child, lam, size = condense(Z, len(X), 10, False)
    tree = np.empty(parent.shape[0], CONDENSED_DTYPE)
    tree["parent"], tree["child"], tree["lambda_val"], tree["child_size"] = parent, child, lam, size
    np.testing.assert_array_equal(glosh(tree, len(X)), theirs.outlier_scores_)
    label_map(theirs.labels_, flat(tree, len(X)).labels)


def test_prediction_on_the_packages_tree(fitted):
    """With the package's tree and core distances, its predictions and membership vectors exactly.

    The package's prediction data takes each fitted point's core distance
    counting the point itself, and a new point's as the distance to its
    neighbour number ``min_samples + 1``: ours with ``min_samples = 7`` reads
    the same neighbour.
    """
    X, new, theirs, _, tree = fitted
    sel = flat(tree, len(X))
    to_theirs = label_map(theirs.labels_, sel.labels)
    cols = [to_theirs[i] for i in range(len(to_theirs))]
    model = SimpleNamespace(prediction_data_=prediction_data(X, tree, len(X), sel.selected,
                                                             theirs.prediction_data_.core_distances, 7))
    labels, probabilities = approximate_predict(model, new)
    their_labels, their_probabilities = hdbscan.approximate_predict(theirs, new)
    np.testing.assert_array_equal(np.array([to_theirs.get(v, -1) for v in labels]), their_labels)
    np.testing.assert_allclose(probabilities, their_probabilities, rtol=1e-12)
    np.testing.assert_allclose(membership_vector(model, new), hdbscan.membership_vector(theirs, new)[:, cols],
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(all_points_membership_vectors(model),
                               hdbscan.all_points_membership_vectors(theirs)[:, cols], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shape", ["blobs", "moons"])
def test_whole_fits_without_ties(shape):
    """min_samples=1 there (2 here): mutual reachability is the distance on the tree's edges, no ties."""
    X, new = data(shape)
    theirs = hdbscan.HDBSCAN(min_cluster_size=10, min_samples=1, gen_min_span_tree=True,
                             prediction_data=True, algorithm=EXACT).fit(X)
    ours = HDBSCAN(min_cluster_size=10, min_samples=2, prediction_data=True).fit(X)
    to_theirs = label_map(theirs.labels_, ours.labels_)
    cols = [to_theirs[i] for i in range(len(to_theirs))]
    np.testing.assert_allclose(ours.probabilities_, theirs.probabilities_, rtol=1e-12)
    np.testing.assert_allclose(ours.outlier_scores_, theirs.outlier_scores_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ours.cluster_persistence_, theirs.cluster_persistence_[cols], rtol=1e-6)
    mst = theirs.minimum_spanning_tree_.to_numpy()
    np.testing.assert_allclose(ours.minimum_spanning_tree_[:, 2], np.sort(mst[:, 2]), rtol=1e-12)
    assert ours.relative_validity_ == pytest.approx(theirs.relative_validity_, rel=1e-9)
    for a, b in zip(ours.exemplars_, [theirs.exemplars_[c] for c in cols]):
        assert sorted(map(tuple, a)) == sorted(map(tuple, b))
    np.testing.assert_allclose(all_points_membership_vectors(ours),
                               hdbscan.all_points_membership_vectors(theirs)[:, cols], rtol=1e-9, atol=1e-12)
    # new points: ours take a new point's core distance by the fitted points' rule, the package
    # one neighbour further out; the labels of points near the clusters agree
    labels, _ = approximate_predict(ours, new)
    their_labels, _ = hdbscan.approximate_predict(theirs, new)
    assert np.mean(np.array([to_theirs.get(v, -1) for v in labels]) == their_labels) >= 0.9
    soft, their_soft = membership_vector(ours, new), hdbscan.membership_vector(theirs, new)[:, cols]
    assert np.mean(soft.argmax(1) == their_soft.argmax(1)) >= 0.9


@pytest.mark.parametrize("shape", ["blobs", "moons"])
def test_whole_fits_with_ties(shape):
    """min_samples=5 there (6 here): tied distances, condensed in another order; close clusters."""
    X, _ = data(shape)
    theirs = hdbscan.HDBSCAN(min_cluster_size=10, min_samples=5, algorithm=EXACT).fit(X)
    ours = HDBSCAN(min_cluster_size=10, min_samples=6).fit(X)
    assert ours.n_clusters_ == theirs.labels_.max() + 1
    same = np.mean([np.bincount(theirs.labels_[ours.labels_ == c] + 1).argmax() - 1 == t
                    for c, t in zip(ours.labels_, theirs.labels_)])
    assert same >= 0.97


@pytest.mark.parametrize("example", ["blobs", "blobs, 1 decimals", "moons, 1 decimals", "how it works",
                                     "how it works, 1 decimals"])
def test_glosh_with_ties_ranks_as_the_packages(example):
    """Tied distances (rounded coordinates, core distances): GLOSH scores ranked as the package's."""
    X, mcs, ms = tied(example)
    theirs, = package_scores(X, mcs, ms, 1)
    ours = HDBSCAN(min_cluster_size=mcs, min_samples=ms + 1).fit(X).outlier_scores_
    assert rank(ours, theirs) >= 0.99


@pytest.mark.parametrize("example", ["moons", "how it works, 2 decimals"])
def test_glosh_with_ties_as_near_the_package_as_it_is_to_itself(example):
    """Where the package's scores change with the order of its input, ours are one of its answers.

    The package condenses tied merges one at a time in the order its Prim
    walk met them: the same points given in another order put a point that
    leaves at a tied distance in another cluster (often a cluster born and
    emptied at that one distance, where it scores 0).  On the moons its
    scores on 6 orders rank-correlate with one another at 0.85 to 1.0, and
    which order gives which scores has differed between installs of the
    same versions.  Ours do not depend on the order; they rank as its
    scores on some order (0.99 or more) and correlate with its scores on
    the 6 orders, on average, at least as well as the least typical of its
    own answers does with the other five (on one install: 0.90 against
    0.88; orders' own 0.88 to 0.93).
    """
    X, mcs, ms = tied(example)
    model = HDBSCAN(min_cluster_size=mcs, min_samples=ms + 1)
    ours = model.fit(X).outlier_scores_
    p = np.random.default_rng(7).permutation(len(X))
    np.testing.assert_allclose(model.fit(X[p]).outlier_scores_, ours[p], rtol=0, atol=1e-12)
    theirs = package_scores(X, mcs, ms, 6)
    agreement = [rank(ours, t) for t in theirs]
    own = [np.mean([rank(a, b) for j, b in enumerate(theirs) if j != i]) for i, a in enumerate(theirs)]
    assert max(agreement) >= 0.99
    assert np.mean(agreement) >= min(own) - 0.01, (agreement, own)

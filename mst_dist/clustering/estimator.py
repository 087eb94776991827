"""The HDBSCAN estimator: scikit-learn's conventions, the ``hdbscan`` package's attributes, the engine's forest."""
from __future__ import annotations

import numbers
import os

import numpy as np

__all__ = ["HDBSCAN"]

#: Metrics of ``HDBSCAN(metric=...)``: distances between points, or distances given.
METRICS = ("euclidean", "precomputed")

try:  # the ``clustering`` extra
    from sklearn.base import BaseEstimator, ClusterMixin
except ImportError:  # pragma: no cover - exercised without scikit-learn only
    from mst_dist.clustering.selection import ParamsMixin as BaseEstimator

    class ClusterMixin:
        def fit_predict(self, X, y=None, **kwargs):
            return self.fit(X, **kwargs).labels_


def _integer(name, value, low, none=False):
    if none and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"HDBSCAN: {name} must be an integer >= {low}{' or None' if none else ''}, got {value!r}")
    return int(value)


def _knn_info(graph, k):
    """What the estimator reports of the search of its kNN graph of ``k`` neighbours."""
    info = graph.meta.get("knn") if isinstance(graph.meta, dict) else None
    return dict(info, k=k) if info else {"method": "exact", "k": k}


def _is_dask_array(X):
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks")


class HDBSCAN(ClusterMixin, BaseEstimator):
    """HDBSCAN clustering of points or of a graph of distances, with the ``hdbscan`` package's surface.

    Campello, Moulavi and Sander's HDBSCAN ("Density-Based Clustering Based
    on Hierarchical Density Estimates") over :func:`mst_dist.hdbscan`: points
    become their kNN graph (:func:`mst_dist.clustering.from_points`, on the
    workers for a Dask array), whose mutual-reachability spanning forest
    the engine computes; the attributes are those of the ``hdbscan``
    package (``outlier_scores_``, ``exemplars_``, ``relative_validity_``,
    ...) and :func:`~mst_dist.clustering.approximate_predict` and the membership vectors place new points.

    Parameters
    ----------
    min_cluster_size : int, default 5
        Smallest cluster (at least 2).
    min_samples : int, optional
        Neighbours that make a core point, the point itself counted.
        Default: ``min_cluster_size``.
    metric : {"euclidean", "precomputed"}
        ``"precomputed"``: ``X`` is a SciPy sparse matrix of distances (a kNN
        graph: stored entries are edges, see
        :func:`~mst_dist.clustering.from_kneighbors_graph`), a dense square
        distance matrix, or an :class:`mst_dist.Graph` of distances.
    cluster_selection_method : {"eom", "leaf"}
    allow_single_cluster : bool
    cluster_selection_epsilon : float, default 0.0
        Clusters born below this distance are merged up into the cluster
        that holds them at this distance (Malzer and Baum, "A Hybrid
        Approach To Hierarchical Density-based Cluster Selection"), as the
        ``hdbscan`` package and scikit-learn define it.
    prediction_data : bool
        Keep what :func:`~mst_dist.clustering.approximate_predict`,
        :func:`~mst_dist.clustering.membership_vector` and
        :func:`~mst_dist.clustering.all_points_membership_vectors` need
        (points only; the points are held in this process).
    k : int, optional
        Neighbours of each point in the kNN graph, ``min_samples - 1 <= k < n``.
        Default: ``max(2 * min_samples, 10)`` (at most ``n - 1``).  The
        forest is the exact mutual-reachability tree of that graph; a larger
        ``k`` brings it nearer the tree of all pairs (``k = n - 1``: equal).
        Where the kNN graph falls apart, its components are joined by the
        edges the exact tree joins them with (Borůvka's rounds on the
        components, ``mst_dist.clustering.joins``), as the exact tree
        would, so clusters and outliers are not cut along the graph's gaps
        (points in memory; a Dask array's components join at infinite
        distance, as in :func:`mst_dist.hdbscan`).
    exact : bool
        The exact mutual-reachability minimum spanning tree of all pairs
        (Borůvka's rounds over a k-d tree that skips nodes inside one
        component, after March, Ram and Gray, "Fast Euclidean Minimum
        Spanning Tree: Algorithm, Analysis, and Applications"), its edges
        added to the kNN graph: the clusters of the ``hdbscan`` package's
        definition.  One core here searches it (a Dask array's points are
        brought here).
    approximate_knn : bool, default False
        The kNN graph by NN-descent (``knn_graph(..., approximate=True)``):
        far faster in many dimensions, most neighbours the true ones, so
        the core distances and the graph's edges are near the exact ones,
        not equal (fixed seed: the same result each fit).  Not with
        ``exact=True``.
    client : distributed.Client, optional
        The cluster of the run (None: the current client, else the embedded
        cluster).
    engine_options : dict, optional
        Keywords of :func:`~mst_dist.minimum_spanning_forest` (``partitions``,
        ``backend``, ...), as one parameter: scikit-learn's ``clone`` and
        ``get_params`` see only named parameters.

    Attributes
    ----------
    labels_ : int64 ndarray (n,)
        Clusters ``0, 1, ...`` in order of each cluster's smallest point; ``-1`` noise.
    probabilities_ : float64 ndarray (n,)
        Strength of each point's membership of its cluster; 0 for noise.
    outlier_scores_ : float64 ndarray (n,)
        GLOSH scores (``mst_dist.clustering.outliers.glosh``).
    cluster_persistence_ : float64 ndarray, one per cluster
        Each cluster's stability over its size times the tree's largest lambda (in ``[0, 1]``).
    exemplars_ : list of ndarrays
        Each cluster's exemplar points (the points of its leaf clusters that
        leave them last); not set for ``metric="precomputed"``, where
        ``exemplar_indices_`` holds them as indices.
    exemplar_indices_ : list of int64 ndarrays
    condensed_tree_ : structured ndarray
        Rows ``(parent, child, lambda_val, child_size)``, the ``hdbscan``
        package's raw condensed tree.
    single_linkage_tree_ : float64 ndarray (n - 1, 4)
        SciPy's linkage format.
    minimum_spanning_tree_ : float64 ndarray (m, 3)
        Rows ``(u, v, mutual reachability distance)`` of the forest's edges
        between core points, in ``(weight, edge id)`` order: the ``hdbscan``
        package's raw tree (``m = n - 1`` for a connected graph).
    forest_ : MSFResult
        The engine's result (its statistics, its edge ids).
    relative_validity_ : float
        DBCV as the ``hdbscan`` package approximates it from the forest
        (``mst_dist.clustering.validity.relative_validity``).
    core_distances_ : float64 ndarray (n,)
    n_clusters_ : int
    prediction_data_ : PredictionData or None
    n_features_in_ : int
        (points only)
    knn_info_ : dict or None
        How the kNN graph of the points was searched: ``{"method": "exact",
        "k": ...}``, or NN-descent's ``meta["knn"]`` (its seed, rounds, and
        ``recall``: the share of the true ``k`` nearest neighbours its lists
        hold, on a sample of ``recall_points`` points checked by brute
        force); None for ``metric="precomputed"``.

    Examples
    --------
    >>> import numpy as np, mst_dist
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 0.2, (25, 2)), rng.normal(4, 0.2, (25, 2)), [[2.0, 2.0]]]
    >>> model = mst_dist.HDBSCAN(min_cluster_size=5).fit(X)
    >>> model.n_clusters_, model.labels_[[0, 25, 50]].tolist()
    (2, [0, 1, -1])
    >>> int(model.outlier_scores_.argmax())
    50
    """

    def __init__(self, min_cluster_size=5, min_samples=None, metric="euclidean", cluster_selection_method="eom",
                 allow_single_cluster=False, cluster_selection_epsilon=0.0, prediction_data=False, k=None,
                 exact=False, approximate_knn=False, client=None, engine_options=None):
        self.min_cluster_size = min_cluster_size
        self.min_samples = min_samples
        self.metric = metric
        self.cluster_selection_method = cluster_selection_method
        self.allow_single_cluster = allow_single_cluster
        self.cluster_selection_epsilon = cluster_selection_epsilon
        self.prediction_data = prediction_data
        self.k = k
        self.exact = exact
        self.approximate_knn = approximate_knn
        self.client = client
        self.engine_options = engine_options

    # -- validation --------------------------------------------------------------------------------

    def _settings(self):
        """``(min_cluster_size, min_samples, epsilon)``, checked; every other parameter checked too."""
        mcs = _integer("min_cluster_size", self.min_cluster_size, 2)
        ms = _integer("min_samples", self.min_samples, 1, none=True) or mcs
        _integer("k", self.k, 1, none=True)
        if self.metric not in METRICS:
            raise ValueError(f"HDBSCAN: unknown metric {self.metric!r}; choose one of {', '.join(METRICS)}")
        if self.cluster_selection_method not in ("eom", "leaf"):
            raise ValueError(f"HDBSCAN: unknown cluster_selection_method {self.cluster_selection_method!r}; "
                             f"choose one of eom, leaf")
        eps = self.cluster_selection_epsilon
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not 0 <= eps < np.inf:
            raise ValueError(f"HDBSCAN: cluster_selection_epsilon must be a finite number >= 0, got {eps!r}")
        if not isinstance(self.approximate_knn, (bool, np.bool_)):
            raise ValueError(f"HDBSCAN: approximate_knn must be True or False, got {self.approximate_knn!r}")
        if self.approximate_knn and self.exact:
            raise ValueError("HDBSCAN: exact=True is the tree of exact distances; it cannot take "
                             "approximate_knn=True")
        if self.engine_options is not None and not isinstance(self.engine_options, dict):
            raise TypeError(f"HDBSCAN: engine_options must be a dict, got {type(self.engine_options).__name__}")
        return mcs, ms, float(eps)

    def _points(self, X):
        """``X`` as points: a checked float64 array (or a Dask array, checked lazily on its cluster)."""
        if isinstance(X, (str, os.PathLike)):  # a file: a Dask array, its blocks read and checked by the workers
            from mst_dist.clustering.point_files import read_points
            return read_points(X)
        if _is_dask_array(X):
            if X.ndim != 2:
                raise ValueError(f"HDBSCAN: X must be 2-dimensional (points x coordinates), got shape {X.shape}")
            if not bool(np.isfinite(X).all().compute()):
                raise ValueError("HDBSCAN: X holds NaN or infinite coordinates")
            return X
        try:
            from sklearn.utils import check_array
        except ImportError:  # pragma: no cover
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 2:
                raise ValueError(f"HDBSCAN: X must be 2-dimensional, got shape {X.shape}") from None
            if not np.isfinite(X).all():
                raise ValueError("HDBSCAN: X holds NaN or infinite coordinates") from None
            return X
        return check_array(X, dtype=np.float64, ensure_min_samples=1)

    def _graph(self, X, mcs, ms):
        """``(graph, points or None)``: what the engine clusters, and the points if ``X`` holds points."""
        from mst_dist.clustering.selection import precomputed_graph

        if self.metric == "precomputed":
            self.knn_info_ = None
            return precomputed_graph(X), None
        X = self._points(X)
        n = X.shape[0]
        self.n_features_in_ = X.shape[1]
        if n < mcs:
            raise ValueError(f"HDBSCAN: n_samples={n} is fewer than min_cluster_size={mcs}")
        k = self.k
        if k is None:
            k = min(max(2 * ms, 10), n - 1)
        elif k >= n:
            raise ValueError(f"HDBSCAN: k={k} neighbours of each of {n} points: give k < n_samples = {n}")
        if k < ms - 1:
            raise ValueError(f"HDBSCAN: k={k} is less than min_samples - 1 = {ms - 1}: no point would have a "
                             f"core distance; give k >= {ms - 1}")
        from mst_dist.clustering import from_points

        approximate = bool(self.approximate_knn)
        if _is_dask_array(X):
            if not self.exact:  # searched on the run's cluster, the edges left there
                knn = from_points(X, int(k), client=self.client, approximate=approximate)
                self.knn_info_ = _knn_info(knn, int(k))
                return knn, X
            X = np.asarray(X, dtype=np.float64)  # the exact tree is searched here
        from mst_dist.clustering.joins import with_joins

        knn = from_points(X, int(k), approximate=approximate)
        self.knn_info_ = _knn_info(knn, int(k))
        return with_joins(knn, X, ms, exact=bool(self.exact)), X

    # -- fitting -----------------------------------------------------------------------------------

    def fit(self, X, y=None):
        """Cluster ``X`` (points, or distances with ``metric="precomputed"``); ``y`` is ignored.

        A path (``.npy``, Parquet, Zarr, a URL) is read as a Dask array by
        :func:`~mst_dist.clustering.read_points` (call it for its options)
        and clustered as one: ``prediction_data`` and ``exact`` bring its points here.

        Raises
        ------
        ValueError
            A parameter out of range, NaN or infinite input, a 1-D or ragged
            array, ``k >= n``, or fewer points than ``min_cluster_size``; a
            bad file of points: :class:`~mst_dist.GraphFormatError`.
        """
        from mst_dist.clustering.hdbscan import hdbscan

        mcs, ms, eps = self._settings()
        graph, points = self._graph(X, mcs, ms)
        n = graph.n_vertices
        if n < mcs:
            raise ValueError(f"HDBSCAN: n_samples={n} is fewer than min_cluster_size={mcs}")
        if ms > n:
            raise ValueError(f"HDBSCAN: min_samples={ms} is more than n_samples={n}")
        if self.prediction_data and points is None:
            raise ValueError("HDBSCAN: prediction_data=True needs points (metric='euclidean'), not distances")
        res = hdbscan(graph, mcs, ms, cluster_selection_method=self.cluster_selection_method,
                      allow_single_cluster=bool(self.allow_single_cluster), client=self.client,
                      **(self.engine_options or {}))
        self._set_result(res, n, eps)
        self._set_points(points, ms)
        return self

    def _set_result(self, res, n, eps):
        from mst_dist.clustering.outliers import glosh
        from mst_dist.clustering.prediction import exemplar_indices
        from mst_dist.clustering.selection import flat, spanning_rows
        from mst_dist.clustering.validity import relative_validity

        tree = res.condensed_tree_
        sel = flat(tree, n, self.cluster_selection_method, bool(self.allow_single_cluster), eps)
        self.labels_, self.probabilities_ = sel.labels, sel.probabilities
        self.cluster_persistence_ = sel.persistence
        self._selected = sel.selected
        self.n_clusters_ = int(sel.selected.shape[0])
        self.condensed_tree_ = tree
        self.single_linkage_tree_ = res.single_linkage_tree_
        self.core_distances_ = res.core_distances_
        self.forest_ = res.forest_
        self.minimum_spanning_tree_ = spanning_rows(res.forest_, res.core_distances_)
        mst = self.minimum_spanning_tree_
        self.relative_validity_ = relative_validity(self.labels_, mst[:, 0].astype(np.int64),
                                                    mst[:, 1].astype(np.int64), mst[:, 2])
        self.outlier_scores_ = glosh(tree, n)
        self.exemplar_indices_ = exemplar_indices(tree, n, sel.selected)

    def _set_points(self, points, ms):
        from mst_dist.clustering.prediction import prediction_data

        self.prediction_data_ = None
        if points is None:
            return
        if self.prediction_data:
            points = np.asarray(points, dtype=np.float64)  # a Dask array comes here: prediction needs it
            self.prediction_data_ = prediction_data(points, self.condensed_tree_, points.shape[0], self._selected,
                                                    self.core_distances_, ms)
            self.exemplars_ = list(self.prediction_data_.exemplars)
        elif _is_dask_array(points):
            idx = self.exemplar_indices_
            flat_idx = np.concatenate(idx) if idx else np.zeros(0, np.int64)
            rows = np.asarray(points[np.sort(flat_idx)].compute(), dtype=np.float64)
            where = {int(v): i for i, v in enumerate(np.sort(flat_idx))}
            self.exemplars_ = [rows[[where[int(v)] for v in i]] for i in idx]
        else:
            self.exemplars_ = [np.asarray(points[i], dtype=np.float64) for i in self.exemplar_indices_]

    def __sklearn_tags__(self):  # scikit-learn >= 1.6 asks for tags so
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        return tags

"""The clustering layer's kernels compiled ahead into Numba's cache: kNN graphs, HDBSCAN, the estimator.

The clustering kernels (the k-d tree search, NN-descent, the condensed
tree, the joins of Borůvka's rounds, GLOSH, prediction) are Numba functions
cached on disk like the engine's (:mod:`mst_dist.kernels.compile`): the
first process after an install or an upgrade that clusters compiles them,
for a minute or more.  ``mst-dist warmup`` calls :func:`ensure_compiled`
after the engine's kernels, so that no later process compiles them.

It runs the layer's public calls once on a few hundred points:
:func:`~mst_dist.clustering.knn_graph` exact (in this process and on a
cluster of threads) and approximate, :func:`~mst_dist.clustering.knn_recall`,
:func:`~mst_dist.hdbscan` both ways of condensing ties,
:class:`~mst_dist.HDBSCAN` fitted on points (read-only ones too, as a
memory-mapped file gives), with ``exact=True`` and with
``approximate_knn=True``, its prediction functions, and the forest's
linkage, flat clusters and levels.  Two groups compile side by side
(:data:`GROUPS`), the searches of points in a process of its own and the
hierarchy's kernels in this one; this process then runs everything,
loading what the other compiled.  A stamp beside the cache records it
(:func:`kernels_cached`).
"""
from __future__ import annotations

import contextlib
import logging
import time

import numpy as np

from mst_dist.kernels import compile as kernel_compile

__all__ = ["ensure_compiled", "kernels_cached", "warm", "MODULES", "GROUPS"]

logger = logging.getLogger("mst_dist.clustering.warmup")

#: The clustering layer's modules with Numba kernels cached on disk.
MODULES = tuple(f"mst_dist.clustering.{m}" for m in ("_kernels", "_neighbours_kernels", "_nndescent_kernels",
                                                       "joins", "outliers", "prediction"))


def _points(n=240, d=3, seed=0):
    """Blobs of ``n`` points in ``d`` dimensions, a few of them noise."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-8, 8, size=(4, d))
    X = centres[rng.integers(0, 4, n)] + rng.normal(size=(n, d))
    X[: n // 20] = rng.uniform(-12, 12, size=(n // 20, d))
    return X


def _shared():
    """The small kernels both groups call (the points' check, the lists' edges), compiled before they split."""
    from mst_dist.clustering.knn import check_points, knn_edges

    X = check_points(_points(16), 2)
    D = np.abs(X[:, :1] - X[:, 0])
    nbr = np.ascontiguousarray(np.argsort(D, axis=1)[:, 1:3])  # each point's 2 nearest, itself left out
    dist = np.take_along_axis(D, nbr, axis=1)
    for symmetrize in ("union", "mutual"):
        knn_edges(np.arange(16, dtype=np.int64), dist, nbr, dist[nbr, -1], nbr[nbr, -1], symmetrize)


def _brute_graph(X, k):
    """The kNN graph of a few points by NumPy alone (no search kernel): a Graph of distances."""
    from mst_dist.graph import Graph

    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    np.fill_diagonal(D, np.inf)
    nbr = np.argsort(D, axis=1)[:, :k]
    src = np.repeat(np.arange(X.shape[0]), k)
    dst = nbr.ravel()
    pairs = np.unique(np.stack([np.minimum(src, dst), np.maximum(src, dst)]), axis=1)
    return Graph.from_arrays(pairs[0], pairs[1], D[pairs[0], pairs[1]], n_vertices=X.shape[0], name=f"knn-{k}")


def _readonly(X):
    """A read-only copy of ``X``: the array types of a memory-mapped file's points."""
    X = X.copy()
    X.setflags(write=False)
    return X


def _search_group(kind="float64", cluster=True):
    """The searches of points: exact kNN graphs (k-d trees) and approximate ones (NN-descent), the recall.

    With ``cluster``: the exact search over a Dask array's boxes too, on a
    cluster of this process's threads.  ``kind``: the argument a compile
    process passes (:data:`GROUPS`); the points are float64 whatever it says.
    """
    from mst_dist.clustering import knn_graph, knn_recall

    X = _points()
    for metric in ("euclidean", "cosine", "manhattan"):
        g = knn_graph(X, 8, metric=metric, approximate=True)
        knn_recall(X, g, 8, sample=40, metric=metric)
    knn_graph(X, 8, approximate=True, symmetrize="mutual", random_state=1)
    for metric in ("euclidean", "minkowski"):
        knn_graph(X, 8, metric=metric, p=3)
    knn_graph(X, 8, symmetrize="mutual")
    knn_graph(_readonly(X), 8)
    if cluster:
        with _threads_cluster() as client:
            knn_graph(_dask_points(X), 8, client=client)


def _hierarchy_group(kind="float64"):
    """HDBSCAN of a graph (both ways of condensing ties, the estimator's attributes), the forest's
    hierarchy, and the joins of the exact tree (on read-only points too); no search of points.

    ``kind``: the argument a compile process passes (:data:`GROUPS`), unused.
    """
    import mst_dist
    from mst_dist.clustering.hdbscan import hdbscan
    from mst_dist.clustering.joins import with_joins

    X = _points()
    g = _brute_graph(X, 8)
    for ties in ("merge", "order"):
        hdbscan(g, 5, ties=ties)
        hdbscan(g, 5, ties=ties, cluster_selection_method="leaf", allow_single_cluster=True)
    mst_dist.HDBSCAN(min_cluster_size=5, metric="precomputed").fit(g)
    forest = mst_dist.minimum_spanning_forest(g)
    forest.linkage()
    forest.clusters(n_clusters=3)
    forest.levels()
    for points in (X, _readonly(X)):
        with_joins(_brute_graph(points, 2), points, 5)
        with_joins(g, points, 5, exact=True)


@contextlib.contextmanager
def _threads_cluster():
    """A cluster of two workers, threads of this process: its client, the cluster closed after."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster, set_as_default=False) as client:
        yield client


def _dask_points(X):
    import dask.array as da

    return da.from_array(X, chunks=(X.shape[0] // 3, X.shape[1]))


def warm():
    """Run the clustering layer's calls once (compiles or loads their kernels); returns the seconds it took.

    The groups' calls, then the estimator on points (in memory and
    read-only; with ``exact=True``, ``approximate_knn=True``), its
    prediction functions, and kNN graphs and HDBSCAN on a cluster of threads.
    """
    import mst_dist
    from mst_dist.clustering import knn_graph
    from mst_dist.clustering.hdbscan import hdbscan

    t0 = time.perf_counter()
    _shared()
    _search_group(cluster=False)
    _hierarchy_group()
    X = _points()
    try:
        import sklearn  # noqa: F401  (prediction's KD-tree of the points)
        prediction = True
    except ImportError:
        prediction = False
    for points in (X, _readonly(X)):
        for exact in (False, True):
            model = mst_dist.HDBSCAN(min_cluster_size=5, exact=exact, prediction_data=prediction).fit(points)
    mst_dist.HDBSCAN(min_cluster_size=5, approximate_knn=True).fit(X)
    if prediction:
        from mst_dist.clustering import all_points_membership_vectors, approximate_predict, membership_vector

        approximate_predict(model, X[:7])
        membership_vector(model, X[:7])
        all_points_membership_vectors(model)
    with _threads_cluster() as client:
        points = _dask_points(X)
        hdbscan(knn_graph(points, 8, client=client), 5, client=client)
        knn_graph(points, 8, approximate=True, client=client)
    return time.perf_counter() - t0


#: The groups compiled side by side, one process each: no kernel is in both but :func:`_shared`'s,
#: compiled before they start, and the median selection, which both trees' builds call with the same
#: types (two processes compiling *different* forms of one kernel could leave Numba's cache index
#: naming one form's file for the other).
GROUPS = ("_search_group", "_hierarchy_group")


def _modules():
    import importlib

    return kernel_compile.kernel_modules(*(importlib.import_module(m) for m in MODULES))


def _stamp():
    return kernel_compile.stamp_path("clustering", _modules())


def kernels_cached():
    """Whether Numba's on-disk cache holds the clustering kernels, compiled by :func:`ensure_compiled`.

    True for the same kernel sources, Numba, Python and CPU, while each
    kernel's cache index is still there and fresh.
    """
    mods = _modules()
    return kernel_compile.stamp_holds(_stamp(), kernel_compile.fingerprint(mods), kernel_compile.dispatchers(mods))


def ensure_compiled():
    """Compile the clustering kernels into Numba's cache unless they are there; returns the seconds, or ``None``.

    The groups of :data:`GROUPS` compile side by side
    (:func:`mst_dist.kernels.compile.compile_in_processes`), then
    :func:`warm` runs here, loading what the other process compiled and
    compiling what it missed, and a stamp records it.  Call it after the
    engine's kernels are compiled (:func:`mst_dist.engine.warmup.ensure_compiled`):
    HDBSCAN runs the engine.
    """
    if kernels_cached():
        return None
    t0 = time.perf_counter()
    _shared()

    def failed(code, err):
        logger.debug("a kernel compilation process failed (%s): %s", code, err)

    kernel_compile.compile_in_processes([((__name__, g), ["float64"]) for g in GROUPS], on_failure=failed)
    warm()
    mods = _modules()
    if not kernel_compile.write_stamp(_stamp(), kernel_compile.fingerprint(mods), kernel_compile.dispatchers(mods)):
        logger.debug("could not write the clustering kernels' compile stamp")
    return time.perf_counter() - t0

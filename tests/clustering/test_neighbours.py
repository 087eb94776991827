"""Exact kNN graphs of points: the k-d tree kernels, the graph's edges, the search on a cluster."""
import numpy as np
import pytest

import mst_dist
from mst_dist.clustering import knn_graph
from mst_dist.clustering.knn import exact_neighbours

da = pytest.importorskip("dask.array", reason="the search on a cluster takes Dask arrays")


# ---------------------------------------------------------------------------
# slow references
# ---------------------------------------------------------------------------

def naive_reduced(X, metric, p=2):
    """Every pair's reduced distance, summed in coordinate order as the kernels do."""
    n = X.shape[0]
    R = np.zeros((n, n))
    for c in range(X.shape[1]):
        a = np.abs(X[:, None, c] - X[None, :, c])
        if metric == "chebyshev":
            R = np.maximum(R, a)
        elif metric == "manhattan":
            R = R + a
        elif metric == "minkowski":
            R = R + a ** p
        else:
            R = R + a * a
    return R


def naive_lists(X, k, metric="euclidean", p=2):
    """The k nearest of each point by ``(reduced distance, index)``, itself excluded."""
    R = naive_reduced(X, metric, p)
    n = X.shape[0]
    np.fill_diagonal(R, np.inf)
    idx = np.lexsort((np.broadcast_to(np.arange(n), (n, n)), R), axis=1)[:, :k]
    return np.take_along_axis(R, idx, 1), idx


def naive_edges(X, k, symmetrize="union", metric="euclidean", p=2):
    """Sorted ``(i, j, distance)`` of the kNN graph from the naive lists."""
    R, idx = naive_lists(X, k, metric, p)
    lists = [set(row.tolist()) for row in idx]
    D = naive_reduced(X, metric, p)
    D = np.sqrt(D) if metric == "euclidean" else (D ** (1 / p) if metric == "minkowski" else D)
    out = set()
    for i, row in enumerate(lists):
        for j in row:
            if symmetrize == "union" or i in lists[j]:
                out.add((min(i, j), max(i, j)))
    return sorted((i, j, D[i, j]) for i, j in out)


def graph_edges(g):
    return sorted(zip(*(a.tolist() for a in g.to_arrays())))


def same_edges(got, want):
    assert [(i, j) for i, j, _ in got] == [(i, j) for i, j, _ in want]
    np.testing.assert_allclose([w for *_, w in got], [w for *_, w in want], rtol=1e-12, atol=1e-12)


def points(kind, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.normal(size=(400, 3))
    if kind == "grid":  # many ties in distance
        return rng.integers(0, 6, size=(500, 2)).astype(float)
    if kind == "duplicates":
        return np.repeat(rng.normal(size=(60, 4)), 5, axis=0)
    return rng.normal(size=(250, 12))  # "wide"


# ---------------------------------------------------------------------------
# in this process
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["normal", "grid", "duplicates", "wide"])
@pytest.mark.parametrize("metric,p", [("euclidean", 2), ("manhattan", 1), ("chebyshev", 2), ("minkowski", 3)])
def test_lists_are_the_brute_force_ones(kind, metric, p):
    X = points(kind)
    for k in (1, 6, 40):  # 40: more than a leaf holds
        dist, ind = exact_neighbours(X, k, metric=metric, p=p)
        want_d, want_i = naive_lists(X, k, metric, p)
        assert np.array_equal(ind, want_i), (kind, metric, k)
        np.testing.assert_allclose(dist, want_d, rtol=1e-12)


@pytest.mark.parametrize("symmetrize", ["union", "mutual"])
@pytest.mark.parametrize("kind", ["normal", "grid", "duplicates"])
def test_graph_edges_are_the_brute_force_ones(kind, symmetrize):
    X = points(kind, 1)
    for k in (1, 5):
        same_edges(graph_edges(knn_graph(X, k, symmetrize=symmetrize)), naive_edges(X, k, symmetrize))


def test_union_is_scikit_learns_graph_and_from_points_keeps_its_signature():
    neighbors = pytest.importorskip("sklearn.neighbors", reason="scikit-learn is the reference here")
    from mst_dist.clustering import from_kneighbors_graph, from_points

    X = np.random.default_rng(2).normal(size=(300, 5))
    want = graph_edges(from_kneighbors_graph(neighbors.kneighbors_graph(X, 7, mode="distance")))
    same_edges(graph_edges(knn_graph(X, 7)), want)
    same_edges(graph_edges(from_points(X, 7, n_jobs=1)), want)


def test_duplicate_points_give_zero_distance_edges():
    X = np.r_[np.zeros((3, 2)), np.ones((3, 2))]
    g = knn_graph(X, 2)
    src, dst, w = g.to_arrays()
    assert g.n_vertices == 6 and sorted(zip(src.tolist(), dst.tolist())) == [(0, 1), (0, 2), (1, 2), (3, 4),
                                                                              (3, 5), (4, 5)]
    assert (w == 0).all()


def test_minkowski_and_cosine():
    X = np.random.default_rng(3).normal(size=(200, 4))
    same_edges(graph_edges(knn_graph(X, 4, metric="minkowski", p=1.5)), naive_edges(X, 4, "union", "minkowski", 1.5))
    same_edges(graph_edges(knn_graph(X, 4, metric="minkowski", p=1)), naive_edges(X, 4, "union", "manhattan"))
    U = X / np.linalg.norm(X, axis=1)[:, None]
    got = graph_edges(knn_graph(X * 7.0, 4, metric="cosine"))
    want = [(i, j, 1 - U[i] @ U[j]) for i, j, _ in naive_edges(U, 4)]
    same_edges(got, want)


def test_bad_inputs_are_named():
    X = np.random.default_rng(4).normal(size=(20, 2))
    with pytest.raises(ValueError, match="metric must be one of .*'chebyshev'.*'euclidean'"):
        knn_graph(X, 3, metric="hamming")
    Y = X.copy()
    Y[13, 1] = np.nan
    with pytest.raises(ValueError, match="point 13 "):
        knn_graph(Y, 3)
    Y[13, 1] = -np.inf
    with pytest.raises(ValueError, match="point 13 "):
        knn_graph(Y, 3)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 19\]"):
        knn_graph(X, 20)
    with pytest.raises(ValueError, match="k must be"):
        knn_graph(X, 0)
    with pytest.raises(ValueError, match="2-dimensional"):
        knn_graph(X[:, 0], 3)
    with pytest.raises(ValueError, match="equal length"):
        knn_graph([[0.0, 1.0], [2.0], [3.0, 4.0]], 1)
    with pytest.raises(ValueError, match="symmetrize"):
        knn_graph(X, 3, symmetrize="max")
    with pytest.raises(ValueError, match="p must be"):
        knn_graph(X, 3, metric="minkowski", p=0.5)
    with pytest.raises(ValueError, match="point 4 is zero"):
        knn_graph(np.r_[X[:4], [[0.0, 0.0]], X[4:]], 3, metric="cosine")
    with pytest.raises(ValueError, match="partitions"):
        knn_graph(X, 3, partitions=0)


# ---------------------------------------------------------------------------
# on a cluster
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("symmetrize", ["union", "mutual"])
def test_on_the_workers_from_a_dask_array(client2, symmetrize):
    X = points("grid", 5)[:400]
    D = da.from_array(X, chunks=(90, 1))  # ragged chunks of rows, columns in two chunks
    for k, P in ((3, 5), (9, 16)):  # 16 boxes of ~25 points: k-th neighbours across boxes
        g = knn_graph(D, k, symmetrize=symmetrize, client=client2, partitions=P)
        assert not g.in_memory and g.n_vertices == 400
        same_edges(graph_edges(g), naive_edges(X, k, symmetrize))


def test_points_on_the_box_boundaries(client2):
    # a coarse lattice: the medians the boxes are cut at are coordinates of many points
    X = np.array([(x, y) for x in range(12) for y in range(12)], float)
    g = knn_graph(da.from_array(X, chunks=(50, 2)), 4, client=client2, partitions=6)
    same_edges(graph_edges(g), naive_edges(X, 4))
    # k beyond every box's own points
    g = knn_graph(X, 60, client=client2, partitions=8)
    same_edges(graph_edges(g), naive_edges(X, 60))


def test_bad_chunk_is_named_on_the_workers(client2):
    X = np.random.default_rng(6).normal(size=(300, 3))
    X[217, 2] = np.inf
    with pytest.raises(ValueError, match="point 217 "):
        knn_graph(da.from_array(X, chunks=(100, 3)), 5, client=client2)
    with pytest.raises(ValueError, match="k must be"):
        knn_graph(da.from_array(X, chunks=(100, 3)), 300, client=client2)


def test_the_forest_reads_the_edges_where_they_are(client2):
    rng = np.random.default_rng(7)
    X = np.r_[rng.normal(size=(150, 3)), rng.normal(size=(150, 3)) + 20.0]
    g = knn_graph(da.from_array(X, chunks=(70, 3)), 5, client=client2, partitions=4)
    here = knn_graph(X, 5)
    a, b = (mst_dist.minimum_spanning_forest(x, client2) for x in (g, here))
    assert a.total_weight == pytest.approx(b.total_weight, rel=1e-12)
    assert a.n_components == b.n_components == 2


def _rows_of(source):
    return source.load(0, source.n_edges)


def test_worker_processes_read_each_others_edges(pclient):
    X = np.random.default_rng(8).normal(size=(240, 2))
    g = knn_graph(da.from_array(X, chunks=(60, 2)), 4, client=pclient, partitions=4)
    same_edges(graph_edges(g), naive_edges(X, 4))
    # every box's rows read on every worker: from its own memory or through the published dataset
    want = [s.load(0, s.n_edges) for s in g.sources]
    for w in pclient.scheduler_info()["workers"]:
        got = pclient.gather([pclient.submit(_rows_of, s, workers=[w], pure=False) for s in g.sources])
        for a, b in zip(got, want):
            assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_collected_graph_unpublishes_its_edges_without_waiting(client2):
    """The finalizer of a graph on the workers may run in any thread (the garbage collector's),
    also one the scheduler of an in-process cluster waits on: it hands the unpublishing to the
    client's loop and returns at once; its edges are released; a closed client is left alone."""
    import gc
    import threading
    import time

    from distributed import Client

    X = np.random.default_rng(5).random((600, 2))
    before = set(client2.list_datasets())  # other tests' graphs on this cluster may still be alive
    g = knn_graph(X, 4, client=client2)
    names = [n for n in client2.list_datasets() if str(n).startswith("mst-knn") and n not in before]
    assert names
    done = threading.Event()
    t = time.perf_counter()
    del g
    gc.collect()
    assert time.perf_counter() - t < 5
    deadline = time.monotonic() + 30
    while set(names) & set(client2.list_datasets()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(names) & set(client2.list_datasets())
    # from the client's event loop thread itself: returns without blocking the loop
    from mst_dist.clustering import _distributed_knn as dk

    client2.publish_dataset(**{"mst-knn-probe-0": client2.scatter([1])[0]})
    client2.loop.add_callback(lambda: (dk._release(client2, ["mst-knn-probe-0"], "probe"), done.set()))
    assert done.wait(10)
    deadline = time.monotonic() + 30
    while "mst-knn-probe-0" in client2.list_datasets() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "mst-knn-probe-0" not in client2.list_datasets()
    closed = Client(client2.scheduler.address, set_as_default=False)
    closed.close()
    t = time.perf_counter()
    dk._release(closed, ["anything"], "closed")
    assert time.perf_counter() - t < 1

"""Points read from files (.npy, Parquet, Zarr) for the kNN graph and HDBSCAN: the same results as the arrays."""
import numpy as np
import pytest

import mst_dist
from mst_dist.clustering import knn_graph, read_points
from mst_dist.errors import GraphFormatError
from support.needs import module

da = pytest.importorskip("dask.array", reason="points read from files are Dask arrays")
pq = module("pyarrow.parquet", "pip install pyarrow", module_level=True)
pa = module("pyarrow", "pip install pyarrow", module_level=True)


def blobs(n, d, seed=0):
    """Three Gaussian blobs in ``d`` dimensions, rows shuffled."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-6, 6, size=(3, d))
    X = np.concatenate([c + rng.normal(scale=0.8, size=(n // 3 + (i < n % 3), d)) for i, c in enumerate(centres)])
    return X[rng.permutation(n)]


@pytest.fixture(scope="module")
def two_d():
    return blobs(2000, 2)


@pytest.fixture(scope="module")
def five_d():
    return blobs(2000, 5, seed=1)


def edges(g):
    s, d, w = g.to_arrays()
    order = np.lexsort((d, s))
    return s[order], d[order], w[order]


def assert_same_graph(got, want):
    assert got.n_vertices == want.n_vertices
    (s1, d1, w1), (s2, d2, w2) = edges(got), edges(want)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_allclose(w1, w2, rtol=1e-12, atol=1e-12)


def write_parquet(path, X, row_group_size=700, extra=None):
    cols = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    cols.update(extra or {})
    pq.write_table(pa.table(cols), path, row_group_size=row_group_size)
    return path


def write_zarr(path, X, chunks):
    zarr = module("zarr", "pip install zarr (or mst-dist[test])")
    z = zarr.open_array(str(path), mode="w", shape=X.shape, chunks=chunks, dtype=X.dtype)
    z[:] = X
    return path


def write(fmt, tmp_path, X):
    if fmt == "npy":
        p = tmp_path / "points.npy"
        np.save(p, X)
        return p
    if fmt == "parquet":
        return write_parquet(tmp_path / "points.parquet", X)
    return write_zarr(tmp_path / "points.zarr", X, (600, X.shape[1]))


# ---------------------------------------------------------------------------
# the kNN graph of a file is the kNN graph of its array
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["npy", "parquet", "zarr"])
@pytest.mark.parametrize("dims", ["two_d", "five_d"])
def test_knn_graph_of_a_file_is_the_arrays(fmt, dims, tmp_path, client2, request):
    X = request.getfixturevalue(dims)
    path = write(fmt, tmp_path, X)
    k = 7
    g = knn_graph(path, k, client=client2, partitions=4)
    assert not g.in_memory  # searched on the workers, the edges left there
    assert_same_graph(g, knn_graph(X, k))
    if fmt == "npy" and dims == "two_d":  # a str works as a PathLike does, and from_points takes a path too
        assert_same_graph(mst_dist.clustering.from_points(str(path), k, client=client2), knn_graph(X, k))


def test_read_points_is_lazy_row_blocks(two_d, tmp_path):
    p = tmp_path / "p.npy"
    np.save(p, two_d)
    X = read_points(p, chunks=700)
    assert X.shape == two_d.shape and X.dtype == np.float64
    assert X.chunks == ((700, 700, 600), (2,))
    assert len(X.dask) == X.npartitions == 3  # one task per block: nothing read yet
    np.testing.assert_array_equal(X[1400:1405].compute(), two_d[1400:1405])
    P = read_points(write_parquet(tmp_path / "p.parquet", two_d, row_group_size=1000))
    assert P.chunks == ((1000, 1000), (2,))  # row groups become blocks
    assert read_points(tmp_path / "p.parquet", chunks=1500).chunks == ((1500, 500), (2,))


def test_float32_npy(two_d, tmp_path, client2):
    X = two_d.astype(np.float32)
    p = tmp_path / "f32.npy"
    np.save(p, X)
    assert read_points(p).dtype == np.float32
    assert_same_graph(knn_graph(p, 5, client=client2), knn_graph(X, 5))
    q = tmp_path / "f32_fortran.npy"
    np.save(q, np.asfortranarray(X))
    np.testing.assert_array_equal(read_points(q, chunks=900).compute(), X)


def test_parquet_columns_and_a_directory_of_files(five_d, tmp_path, client2):
    part = tmp_path / "parts"
    part.mkdir()
    bounds = [0, 300, 1100, 1250, 2000]
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):  # natural order: part.2 before part.10
        write_parquet(part / f"part.{[0, 2, 10, 11][i]}.parquet", five_d[a:b], row_group_size=256,
                      extra={"label": np.array([f"r{j}" for j in range(a, b)]), "id": np.arange(a, b)})
    (part / "_SUCCESS").write_text("")  # hidden files are left out, as for mst_dist.read
    with pytest.raises(GraphFormatError, match=r"column 'label' has type .*columns=\[") as info:
        read_points(part)
    assert info.value.path.endswith("part.0.parquet") and "'x0'" in str(info.value)
    cols = [f"x{j}" for j in range(5)]
    X = read_points(part, columns=cols)
    assert X.shape == (2000, 5) and X.chunks[0][:3] == (256, 44, 256)
    np.testing.assert_array_equal(X.compute(), five_d)
    assert_same_graph(knn_graph(X, 6, client=client2), knn_graph(five_d, 6))
    np.testing.assert_array_equal(read_points(part, columns=["x3", "id"]).compute(),
                                  np.c_[five_d[:, 3], np.arange(2000)])
    with pytest.raises(GraphFormatError, match=r"column 'label' has type .*coordinates must be numbers"):
        read_points(part, columns=["x0", "label"])
    with pytest.raises(GraphFormatError, match=r"no column 'y'; the file has 'x0'"):
        read_points(part, columns=["x0", "y"])


def test_zarr_chunks(two_d, tmp_path, client2):
    path = write_zarr(tmp_path / "c.zarr", two_d, (400, 1))  # columns chunked too
    X = read_points(path)
    assert X.chunks[0] == (400,) * 5
    assert read_points(path, chunks=1000).chunks == ((1000, 1000), (2,))
    assert_same_graph(knn_graph(path, 4, client=client2, partitions=3), knn_graph(two_d, 4))


# ---------------------------------------------------------------------------
# HDBSCAN of a file is HDBSCAN of its array
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["npy", "parquet", "zarr"])
def test_hdbscan_of_a_file_is_the_arrays(fmt, two_d, tmp_path, client2):
    path = write(fmt, tmp_path, two_d)
    got = mst_dist.HDBSCAN(min_cluster_size=25, min_samples=5, k=10, client=client2).fit(path)
    want = mst_dist.HDBSCAN(min_cluster_size=25, min_samples=5, k=10).fit(two_d)
    assert got.n_clusters_ == want.n_clusters_ >= 2
    np.testing.assert_array_equal(got.labels_, want.labels_)
    assert got.n_features_in_ == 2
    for a, b in zip(got.exemplars_, want.exemplars_):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------
# bad files
# ---------------------------------------------------------------------------

def test_nan_and_infinite_coordinates_name_the_file_and_the_point(two_d, tmp_path, client2):
    X = two_d.copy()
    X[1234, 1] = np.nan
    p = tmp_path / "nan.npy"
    np.save(p, X)
    with pytest.raises(GraphFormatError, match=r"nan\.npy: point 1234 has a coordinate that is NaN or infinite"):
        knn_graph(p, 5, client=client2)
    with pytest.raises(GraphFormatError, match="point 1234 "):
        mst_dist.HDBSCAN(min_cluster_size=10, client=client2).fit(p)
    X[1234, 1] = 0.0
    X[1500, 0] = -np.inf
    q = write_parquet(tmp_path / "inf.parquet", X, row_group_size=700)  # row group 2 starts at 1400
    with pytest.raises(GraphFormatError, match=r"inf\.parquet, row group 2, row 100: point 1500 has a coordinate") \
            as info:
        read_points(q).compute()
    assert (info.value.row_group, info.value.row) == (2, 100)
    z = write_zarr(tmp_path / "inf.zarr", X, (500, 2))
    with pytest.raises(GraphFormatError, match=r"inf\.zarr: point 1500 has"):
        knn_graph(z, 5, client=client2)


def test_a_null_names_its_row(tmp_path):
    t = pa.table({"x": pa.array([0.0, 1.0, None, 3.0]), "y": pa.array([0.0, 1.0, 2.0, 3.0])})
    pq.write_table(t, tmp_path / "null.parquet", row_group_size=2)
    with pytest.raises(GraphFormatError, match=r"null\.parquet, row group 1, row 0: null in column 'x' \(point 2\)"):
        read_points(tmp_path / "null.parquet").compute()


def test_bad_files_are_clear_errors(tmp_path):
    np.save(tmp_path / "flat.npy", np.arange(10.0))
    with pytest.raises(GraphFormatError, match=r"flat\.npy: has shape \(10,\); points are a 2-D array"):
        read_points(tmp_path / "flat.npy")
    with pytest.raises(GraphFormatError, match=r"flat\.npy: has shape \(10,\)"):
        knn_graph(tmp_path / "flat.npy", 3)
    np.save(tmp_path / "text.npy", np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(GraphFormatError, match=r"text\.npy: has dtype <U1; coordinates must be numbers"):
        read_points(tmp_path / "text.npy")
    with pytest.raises(FileNotFoundError, match="missing.npy"):
        knn_graph(tmp_path / "missing.npy", 3)
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        mst_dist.HDBSCAN().fit(str(tmp_path / "missing.parquet"))
    (tmp_path / "points.csv").write_text("0,1\n2,3\n")
    with pytest.raises(GraphFormatError, match=r"points\.csv: not a file of points"):
        read_points(tmp_path / "points.csv")
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(GraphFormatError, match=r"junk\.npy: not a readable \.npy file"):
        read_points(tmp_path / "junk.npy")
    write_zarr(tmp_path / "flat.zarr", np.arange(10.0), (5,))
    with pytest.raises(GraphFormatError, match=r"flat\.zarr: has shape \(10,\)"):
        read_points(tmp_path / "flat.zarr")
    with pytest.raises(ValueError, match="columns= names Parquet columns"):
        read_points(tmp_path / "flat.npy", columns=["a"])
    with pytest.raises(ValueError, match="chunks must be a positive number of rows"):
        read_points(tmp_path / "flat.npy", chunks=0)
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        read_points(tmp_path / "points.csv", format="csv")

"""The maximum spanning forest: Kruskal over a stable sort by decreasing weight."""
import numpy as np
import pytest

import mst_dist
from support.needs import module


def kruskal_max(n, src, dst, w):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    out = []
    for e in sorted(range(len(src)), key=lambda e: (-w[e], e)):
        a, b = find(src[e]), find(dst[e])
        if a != b:
            parent[a] = b
            out.append(e)
    return sorted(out)


@pytest.mark.parametrize("dtype", [np.int64, np.uint32, np.float32, np.float64])
@pytest.mark.parametrize("seed", range(3))
def test_maximum_forest_equals_kruskal_by_decreasing_weight(dtype, seed):
    rng = np.random.default_rng(seed)
    n, m = 60, 200
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(0, 20, m).astype(dtype)   # ties: the edge given first wins
    res = mst_dist.maximum_spanning_forest(mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n + 3))
    ids = kruskal_max(n + 3, src, dst, w.tolist())
    assert res.edge_ids.tolist() == ids
    assert res.weight.dtype == w.dtype
    np.testing.assert_array_equal(res.weight, w[ids])
    assert res.total_weight == (int(w[ids].astype(np.int64).sum()) if w.dtype.kind in "iu"
                                else pytest.approx(float(w[ids].astype(np.float64).sum())))
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    comps, _ = connected_components(coo_matrix((np.ones(m), (src, dst)), shape=(n + 3, n + 3)), directed=False)
    assert res.n_components == comps


def test_maximum_forest_matches_networkx():
    nx = module("networkx", "pip install networkx")
    G = nx.gnm_random_graph(40, 150, seed=3)
    rng = np.random.default_rng(3)
    for u, v in G.edges:
        G.edges[u, v]["weight"] = float(rng.uniform())
    want = nx.maximum_spanning_tree(G).size(weight="weight")
    assert mst_dist.maximum_spanning_forest(G).total_weight == pytest.approx(want)
    # and SciPy's minimum spanning tree of the negated weights (all nonzero: SciPy drops zeros)
    from scipy.sparse.csgraph import minimum_spanning_tree

    A = nx.to_scipy_sparse_array(G, nodelist=sorted(G), weight="weight", format="coo")
    neg = type(A)((-A.data, (A.row, A.col)), shape=A.shape)
    assert mst_dist.maximum_spanning_forest(G).total_weight == pytest.approx(-minimum_spanning_tree(neg).sum())


def test_generated_graph_is_negated_where_it_loads():
    g = mst_dist.generate("rmat", scale=7, seed=2)
    src, dst, w = g.to_arrays()
    res = mst_dist.maximum_spanning_forest(g, partitions=3)
    assert res.edge_ids.tolist() == kruskal_max(g.n_vertices, src.tolist(), dst.tolist(), w.tolist())


def test_unnegatable_weight_read_on_the_workers_names_its_edge(client, tmp_path):
    """A weight read by the workers (here the second of two Parquet files, in its second row group) whose
    negation wraps in int64 is refused where it loads, naming its edge id, never a wrong forest."""
    pa = module("pyarrow", "pip install pyarrow")
    import pyarrow.parquet as pq

    low = np.iinfo(np.int64).min
    w = np.arange(1, 21, dtype=np.int64)
    pq.write_table(pa.table({"src": np.arange(20), "dst": np.arange(1, 21), "weight": w}), tmp_path / "a.parquet")
    w2 = w.copy()
    w2[13] = low
    pq.write_table(pa.table({"src": np.arange(20), "dst": np.arange(1, 21) % 20, "weight": w2}),
                   tmp_path / "b.parquet", row_group_size=8)
    g = mst_dist.read(tmp_path, client=client)
    assert g.n_edges == 40
    with pytest.raises(mst_dist.InvalidGraphError, match=r"edge 33 of b\.parquet: weight -9223372036854775808 "
                                                          r"has no negation") as e:
        mst_dist.maximum_spanning_forest(g, client, partitions=3)
    assert e.value.edge == 33
    # the minimum forest takes the same weight as an ordinary edge
    src, dst, weight = g.to_arrays()
    assert weight[33] == low
    res = mst_dist.minimum_spanning_forest(g, client, partitions=3)
    assert 33 in res.edge_ids.tolist()


def test_uint64_weights_of_a_dataframe_beyond_int64_refused(client):
    dd = module("dask.dataframe", "pip install 'dask[dataframe]'")
    import pandas as pd

    frame = pd.DataFrame({"src": [0, 1, 2, 0], "dst": [1, 2, 3, 3],
                          "weight": np.array([1, 3, 2**63 + 5, 4], dtype=np.uint64)})
    g = mst_dist.Graph.from_dask_dataframe(dd.from_pandas(frame, npartitions=2), client=client)
    for solve in (mst_dist.maximum_spanning_forest, mst_dist.minimum_spanning_forest):
        with pytest.raises(mst_dist.InvalidGraphError, match="edge 2 of a DataFrame partition"):
            solve(g, client)


def test_unnegatable_weight_and_output_are_errors(tmp_path):
    g = mst_dist.Graph.from_arrays([0], [1], np.array([np.iinfo(np.int64).min]))
    with pytest.raises(mst_dist.InvalidGraphError, match="edge 0"):
        mst_dist.maximum_spanning_forest(g)
    g = mst_dist.Graph.from_arrays([0], [1], np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(mst_dist.InvalidGraphError, match="float64"):
        mst_dist.maximum_spanning_forest(g)
    with pytest.raises(ValueError, match="write_forest"):
        mst_dist.maximum_spanning_forest(mst_dist.Graph.from_arrays([0], [1], [1.0]), output=tmp_path / "f")

"""Conversions to and from networkx, SciPy, pandas and Dask DataFrames."""
import numpy as np
import pytest

import mst_dist
from mst_dist import Graph, InvalidGraphError
from support import needs
from support.naive import kruskal

nx = needs.module("networkx", "pip install 'mst-dist[networkx]'", module_level=True)
sp = needs.module("scipy.sparse", "pip install scipy", module_level=True)


def msf(g, client, **kw):
    return mst_dist.minimum_spanning_forest(g, client, **kw)


# --------------------------------------------------------------------------
# networkx
# --------------------------------------------------------------------------

def test_from_networkx_matches_networkx_msf(client):
    G = nx.gnm_random_graph(60, 300, seed=4)
    rng = np.random.default_rng(1)
    for u, v in G.edges:
        G.edges[u, v]["weight"] = int(rng.integers(1, 20))
    g = Graph.from_networkx(G)
    assert (g.n_vertices, g.n_edges) == (60, 300) and "nodes" not in g.meta
    res = msf(g, client)
    T = nx.minimum_spanning_tree(G)
    assert res.total_weight == T.size(weight="weight")
    assert res.n_components == nx.number_connected_components(G)
    F = res.to_networkx()
    assert F.number_of_nodes() == 60 and nx.is_forest(F)
    assert sum(w for *_, w in F.edges(data="weight")) == res.total_weight
    ids = nx.get_edge_attributes(F, "edge_id")
    assert sorted(ids.values()) == res.edge_ids.tolist()


def test_from_networkx_labels_multigraph_and_defaults(client):
    M = nx.MultiGraph()
    M.add_edge("x", "y", weight=5)
    M.add_edge("x", "y", weight=2)          # parallel edge, the lighter one
    M.add_edge("y", "z")                     # no weight: default 1
    M.add_node("lonely")
    g = Graph.from_networkx(M)
    assert g.meta["nodes"] == ["x", "y", "z", "lonely"]
    assert g.to_arrays()[2].tolist() == [5, 2, 1]
    res = msf(g, client)
    assert res.edge_ids.tolist() == [1, 2] and res.n_components == 2
    T = res.to_networkx(nodes=g.meta["nodes"])
    assert sorted(T.edges(data="weight")) == [("x", "y", 2), ("y", "z", 1)]
    assert "lonely" in T
    g2 = Graph.from_networkx(M, weight="cost", default=3.5)
    assert g2.weight_dtype == np.float64
    with pytest.raises(InvalidGraphError, match="directed"):
        Graph.from_networkx(nx.DiGraph([(0, 1)]))
    with pytest.raises(InvalidGraphError, match="weights must be"):
        Graph.from_networkx(nx.Graph([(0, 1, {"weight": "heavy"})]))
    bad = nx.Graph([(0, 1, {"weight": float("nan")})])
    with pytest.raises(InvalidGraphError, match="NaN"):
        Graph.from_networkx(bad)


def test_from_networkx_nodelist():
    G = nx.path_graph(4)
    g = Graph.from_networkx(G, nodelist=[3, 2, 1, 0])
    assert g.to_arrays()[0].tolist() == [3, 2, 1] and g.meta["nodes"] == [3, 2, 1, 0]
    with pytest.raises(InvalidGraphError, match="every node"):
        Graph.from_networkx(G, nodelist=[0, 1, 2])


# --------------------------------------------------------------------------
# SciPy
# --------------------------------------------------------------------------

def test_from_scipy_explicit_zeros_and_symmetry(client):
    # (0,1)=3 and (1,2)=2 both ways, and stored zeros at (0,3), (3,0): weight-0 edges if kept
    A = sp.coo_array(([3, 3, 0, 2, 2, 0], ([0, 1, 0, 1, 2, 3], [1, 0, 3, 2, 1, 0])),
                     shape=(4, 4)).tocsr()
    assert A.nnz == 6
    g = Graph.from_scipy(A)
    assert g.to_arrays()[0].tolist() == [0, 1] and g.to_arrays()[1].tolist() == [1, 2]
    assert msf(g, client).n_components == 2
    gz = Graph.from_scipy(A, keep_zeros=True)
    s, d, w = gz.to_arrays()
    assert list(zip(s.tolist(), d.tolist(), w.tolist())) == [(0, 1, 3), (0, 3, 0), (1, 2, 2)]
    res = msf(gz, client)
    assert res.n_components == 1 and res.total_weight == 5
    both = Graph.from_scipy(A, symmetric=False)
    assert both.n_edges == 4
    assert Graph.from_scipy(A, symmetric=False, keep_zeros=True).n_edges == 6


def test_from_scipy_matches_csgraph(client):
    from scipy.sparse.csgraph import minimum_spanning_tree

    rng = np.random.default_rng(0)
    B = sp.random_array((80, 80), density=0.1, random_state=rng, format="csr")
    B.data = np.round(B.data * 50) + 1
    A = (B + B.T).tocsr()                    # symmetric, no zeros
    g = Graph.from_scipy(A)
    assert g.n_edges == sp.triu(A).nnz
    res = msf(g, client)
    assert res.total_weight == pytest.approx(minimum_spanning_tree(A).sum())
    exp, _ = kruskal(80, *g.to_arrays())
    assert res.edge_ids.tolist() == exp.tolist()


def test_from_scipy_rejects():
    with pytest.raises(InvalidGraphError, match="square"):
        Graph.from_scipy(sp.csr_array(np.ones((2, 3))))
    with pytest.raises(TypeError, match="scipy.sparse"):
        Graph.from_scipy(np.ones((2, 2)))
    with pytest.raises(InvalidGraphError, match="NaN"):
        Graph.from_scipy(sp.csr_array(np.array([[0, np.nan], [0, 0]])))


def test_to_scipy(client):
    g = Graph.from_arrays([0, 1, 2], [1, 2, 0], [0, 4, 2], n_vertices=4)
    res = msf(g, client)
    A = res.to_scipy()
    assert A.shape == (4, 4) and A.nnz == 2           # the zero-weight edge is stored
    assert A[0, 1] == 0 and A[2, 0] == 2
    S = res.to_scipy(symmetric=True, format="coo")
    assert S.nnz == 4 and S.format == "coo"


# --------------------------------------------------------------------------
# pandas and Dask DataFrames
# --------------------------------------------------------------------------

def test_pandas_round_trip(client):
    pd = needs.module("pandas", "pip install pandas")
    df = pd.DataFrame({"a": [0, 1, 2, 0], "b": [1, 2, 0, 3], "w": [4.0, 1.0, 2.0, 7.0]})
    g = Graph.from_pandas(df, src="a", dst="b", weight="w")
    res = msf(g, client)
    out = res.to_pandas()
    assert list(out.columns) == ["edge_id", "src", "dst", "weight"]
    assert out["edge_id"].tolist() == [1, 2, 3] and out["weight"].dtype == np.float64
    g1 = Graph.from_pandas(df.rename(columns={"a": "src", "b": "dst"}).drop(columns="w"))
    assert g1.to_arrays()[2].tolist() == [1, 1, 1, 1]
    with pytest.raises(InvalidGraphError, match="no column"):
        Graph.from_pandas(df)
    with pytest.raises(InvalidGraphError, match="no column"):
        Graph.from_pandas(df, src="a", dst="b", weight="cost")
    df2 = pd.DataFrame({"src": [0, None], "dst": [1, 2]})
    with pytest.raises(InvalidGraphError, match="missing value at row 1"):
        Graph.from_pandas(df2)


def test_dask_dataframe_is_lazy_and_partitioned(client):
    pd = needs.module("pandas", "pip install pandas")
    dd = needs.module("dask.dataframe", "pip install 'dask[dataframe]'")
    rng = np.random.default_rng(5)
    m, n = 5000, 700
    df = pd.DataFrame({"src": rng.integers(0, n, m), "dst": rng.integers(0, n, m),
                       "weight": rng.integers(1, 40, m)})
    ddf = dd.from_pandas(df, npartitions=7)
    g = Graph.from_dask_dataframe(ddf)
    assert len(g.sources) == 7 and g.n_edges == m and g.n_vertices == df[["src", "dst"]].max().max() + 1
    assert all(not s.splittable for s in g.sources)
    # each source carries only its own partition's task graph
    sizes = [len(s.params["dsk"]) for s in g.sources]
    assert max(sizes) <= 3
    for a, b in zip(g.to_arrays(), (df.src.to_numpy(), df.dst.to_numpy(), df.weight.to_numpy())):
        np.testing.assert_array_equal(a, b)
    exp, _ = kruskal(g.n_vertices, *g.to_arrays())
    for p in (1, 3, 7):
        assert msf(g, client, partitions=p).edge_ids.tolist() == exp.tolist()


def test_dask_dataframe_errors(client):
    pd = needs.module("pandas", "pip install pandas")
    dd = needs.module("dask.dataframe", "pip install 'dask[dataframe]'")
    df = pd.DataFrame({"src": [0, 1, 2, 3], "dst": [1, 2, 3, -1], "weight": [1.0, 2, 3, 4]})
    with pytest.raises(InvalidGraphError, match="partition 1"):
        Graph.from_dask_dataframe(dd.from_pandas(df, npartitions=2))
    df = pd.DataFrame({"src": [0.5], "dst": [1]})
    with pytest.raises(InvalidGraphError, match="vertex ids must be integers"):
        Graph.from_dask_dataframe(dd.from_pandas(df, npartitions=1))


# --------------------------------------------------------------------------
# Graph objects passed to minimum_spanning_forest directly; labels kept
# --------------------------------------------------------------------------

def test_networkx_graph_round_trips_with_its_labels(client):
    G = nx.Graph()
    G.add_weighted_edges_from([("a", "b", 3), ("b", "c", 1), ("a", "c", 2), ("d", "e", 5)])
    G.add_node("lonely")
    res = mst_dist.minimum_spanning_forest(G, client)
    assert res.nodes == ["a", "b", "c", "d", "e", "lonely"]
    T = res.to_networkx()
    assert set(T) == set(G)
    assert sorted(T.edges(data="weight")) == [("a", "c", 2), ("b", "c", 1), ("d", "e", 5)]
    assert nx.utils.edges_equal(T.edges, nx.minimum_spanning_tree(G).edges)
    # an explicit labelling still wins
    T2 = res.to_networkx(nodes=list(range(10, 16)))
    assert sorted(T2.edges) == [(10, 12), (11, 12), (13, 14)]
    # a graph whose nodes are already 0 .. n-1 keeps plain ids
    assert mst_dist.minimum_spanning_forest(nx.path_graph(3), client).nodes is None


def test_scipy_matrix_passed_directly(client):
    A = sp.csr_array(np.array([[0, 4, 1], [4, 0, 2], [1, 2, 0]]))
    res = mst_dist.minimum_spanning_forest(A, client)
    assert res.total_weight == 3 and res.n_components == 1
    assert sorted(zip(res.src.tolist(), res.dst.tolist())) == [(0, 2), (1, 2)]
    res = mst_dist.minimum_spanning_forest(sp.csr_matrix(A), client)   # the matrix classes too
    assert res.total_weight == 3


def test_to_networkx_and_to_scipy_show_their_parameters():
    import inspect

    assert list(inspect.signature(mst_dist.MSFResult.to_networkx).parameters) == ["self", "nodes"]
    assert list(inspect.signature(mst_dist.MSFResult.to_scipy).parameters) == \
        ["self", "symmetric", "format"]
    assert "nodelist" in inspect.signature(Graph.from_networkx).parameters
    assert "keep_zeros" in inspect.signature(Graph.from_scipy).parameters


@pytest.mark.parametrize("partitions", [0, -2, 1.5, True, "many"])
def test_partitions_must_be_positive(partitions):
    g = Graph.from_arrays([0], [1], [1])
    with pytest.raises(ValueError, match="partitions: must be a positive integer"):
        mst_dist.minimum_spanning_forest(g, partitions=partitions)


def test_not_a_graph_names_what_is_accepted():
    with pytest.raises(TypeError, match="networkx graph, a SciPy sparse"):
        mst_dist.minimum_spanning_forest([(0, 1, 2)])

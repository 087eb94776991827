"""Writers: forests, component labels and graphs in every format, atomically; round trips through the readers."""
import os

import numpy as np
import pytest

import mst_dist
from mst_dist.io import writers as mio
from mst_dist.io.formats import GraphFormatError
from mst_dist.io.readers import read
from support import DATA
from support.naive import component_labels, kruskal


def tiny_result(client=None):
    g = mst_dist.Graph.from_arrays([0, 1, 2, 0, 4], [1, 2, 0, 3, 5], [4, 1, 2, 7, 3], n_vertices=7)
    return mst_dist.minimum_spanning_forest(g, client)


# --------------------------------------------------------------------------
# forests and labels
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["parquet", "csv", "npz"])
def test_forest_and_labels_files(client, tmp_path, fmt):
    res = tiny_result(client)
    f = mio.write_forest(res, tmp_path / f"f.{fmt}", labels=tmp_path / f"l.{fmt}")
    lab = tmp_path / f"l.{fmt}"
    if fmt == "npz":
        z, zl = np.load(f), np.load(lab)
        assert z["edge_id"].tolist() == res.edge_ids.tolist() == [1, 2, 3, 4]
        assert zl["component"].tolist() == res.labels.tolist() == [0, 0, 0, 0, 1, 1, 2]
        assert zl["vertex"].tolist() == list(range(7))
    else:
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq

        reader = pq.read_table if fmt == "parquet" else pcsv.read_csv
        t, tl = reader(f), reader(lab)
        assert t.column("edge_id").to_pylist() == [1, 2, 3, 4]
        assert t.column("weight").to_pylist() == [1, 2, 7, 3]
        assert tl.column("component").to_pylist() == [0, 0, 0, 0, 1, 1, 2]


def test_labels_inside_npz(client, tmp_path):
    res = tiny_result(client)
    p = mio.write_forest(res, tmp_path / "f.npz", labels=True)
    z = np.load(p, allow_pickle=False)
    assert sorted(z.files) == ["dst", "edge_id", "labels", "src", "weight"]
    assert z["labels"].tolist() == res.labels.tolist()
    with pytest.raises(ValueError, match="labels=PATH"):
        mio.write_forest(res, tmp_path / "f.csv", labels=True)
    assert not (tmp_path / "f.csv").exists()


def test_labels_standalone(client, tmp_path):
    res = tiny_result(client)
    p = mio.write_labels(res, tmp_path / "labels.parquet")
    import pyarrow.parquet as pq

    t = pq.read_table(p)
    assert t.column_names == ["vertex", "component"]
    np.testing.assert_array_equal(t.column("component").to_numpy(), component_labels(
        7, [0, 1, 2, 0, 4], [1, 2, 0, 3, 5]))


def test_failed_writes_leave_nothing(client, tmp_path, monkeypatch):
    res = tiny_result(client)

    def boom(cols, tmp):
        with open(tmp, "wb") as f:
            f.write(b"half")
        raise OSError("disk full")

    monkeypatch.setitem(mio._WRITERS, "csv", boom)
    (tmp_path / "keep.csv").write_text("old")
    with pytest.raises(OSError, match="disk full"):
        mio.write_labels(res, tmp_path / "keep.csv")
    assert os.listdir(tmp_path) == ["keep.csv"] and (tmp_path / "keep.csv").read_text() == "old"


def test_failed_graph_write_leaves_nothing(tmp_path):
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1.5, 2.5])
    with pytest.raises(ValueError, match="int32 weights"):
        mio.write_graph(g, tmp_path / "g.egr")
    g2 = mst_dist.Graph.from_arrays([0, 1], [1, 2], [1, 2**40])
    with pytest.raises(ValueError, match="int32 range"):
        mio.write_graph(g2, tmp_path / "g.egr")

    def broken(start, stop):
        raise RuntimeError("source failed")

    bad = mst_dist.Graph(n_vertices=3, sources=[mst_dist.graph.FunctionSource(broken, {}, 2)],
                         weight_dtype=np.dtype(np.int64), validated=True)
    for name, fmt in (("g.txt", None), ("g.parquet", None), ("gdir", "parquet"), ("gnpy", "npy")):
        with pytest.raises(RuntimeError, match="source failed"):
            mio.write_graph(bad, tmp_path / name, fmt)
    assert os.listdir(tmp_path) == []


def test_graph_directory_replaced_atomically(tmp_path):
    g = mst_dist.Graph.from_arrays([0, 1], [1, 2], [5, 6])
    d = tmp_path / "parts"
    mio.write_graph(g, d)
    mio.write_graph(mst_dist.Graph.from_arrays([0], [1], [9]), str(d) + "/")
    assert read(d).to_arrays()[2].tolist() == [9]
    assert sorted(os.listdir(tmp_path)) == ["parts"]


def test_graph_format_names():
    assert mio.graph_format("x.gr") == "gr" and mio.graph_format("x.csv") == "csv"
    assert mio.graph_format("x.mm") == "mtx" and mio.graph_format("dir/") == "parquet"
    with pytest.raises(ValueError, match="give format="):
        mio.graph_format("x.weird")
    g = mst_dist.Graph.from_arrays([0], [1], [1])
    with pytest.raises(ValueError, match="unknown option"):
        mio.write_graph(g, "x.txt", both_directions=True)


# --------------------------------------------------------------------------
# graph round trips: every format, same graph, same forest
# --------------------------------------------------------------------------

def graph_with(weights, m=3000, n=400, seed=3):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    w = rng.integers(-5, 60, m) if weights == "int" else rng.integers(-5, 60, m) / 8.0
    if weights == "float":
        w[:3] = [0.1, 1e-300, 2.0 ** 60 + 0.5]
    return mst_dist.Graph.from_arrays(s, d, w, n_vertices=n)


TARGETS = [("g.txt", None, {}), ("g.csv", None, {}), ("g.gr", None, {}), ("g.mtx", None, {}),
           ("g.npz", None, {}), ("npydir", "npy", {}), ("g.parquet", None, {}),
           ("pqdir/", None, {"chunk_edges": 700}), ("g.egr", None, {})]


@pytest.mark.parametrize("weights", ["int", "float"])
@pytest.mark.parametrize("name,fmt,opts", TARGETS, ids=[t[0] for t in TARGETS])
def test_round_trip(client, tmp_path, name, fmt, opts, weights):
    g = graph_with(weights)
    if name == "g.egr" and weights == "float":
        # the format holds int32 weights only: refused, and nothing is left behind
        with pytest.raises(ValueError):
            mio.write_graph(g, tmp_path / name, fmt, client=client, **opts)
        assert not list(tmp_path.iterdir())
        return
    p = mio.write_graph(g, tmp_path / name, fmt, client=client, **opts)
    back = read(p, n_vertices=g.n_vertices, format="npy" if fmt == "npy" else None)
    assert back.n_vertices == g.n_vertices and back.weight_dtype == g.weight_dtype
    s, d, w = g.to_arrays()
    bs, bd, bw = back.to_arrays()
    if name == "g.egr":
        keep = s != d
        exp = sorted(zip(np.minimum(s, d)[keep].tolist(), np.maximum(s, d)[keep].tolist(),
                         w[keep].tolist()))
        assert sorted(zip(bs.tolist(), bd.tolist(), bw.tolist())) == exp
    else:
        np.testing.assert_array_equal(bs, s)
        np.testing.assert_array_equal(bd, d)
        np.testing.assert_array_equal(bw, w)
        assert bw.dtype == w.dtype
    res0 = mst_dist.minimum_spanning_forest(g, client)
    res1 = mst_dist.minimum_spanning_forest(back, client, partitions=3)
    assert res1.total_weight == res0.total_weight and res1.n_components == res0.n_components
    if name != "g.egr":
        assert res1.edge_ids.tolist() == res0.edge_ids.tolist()


def test_gr_both_directions(client, tmp_path):
    g = graph_with("int", m=500, n=60)
    p = mio.write_graph(g, tmp_path / "g.gr", both_directions=True)
    assert open(p).read().splitlines()[2] == f"p sp 60 {2 * g.n_edges}"
    both = read(p)
    assert both.n_edges == 2 * g.n_edges
    s, d, w = g.to_arrays()
    bs, bd, bw = both.to_arrays()
    np.testing.assert_array_equal(bs[0::2], s)
    np.testing.assert_array_equal(bs[1::2], d)
    one = read(p, dedupe_directions=True)
    exp_ids, _ = kruskal(g.n_vertices, s, d, w)
    res = mst_dist.minimum_spanning_forest(one, client)
    assert res.total_weight == mst_dist.minimum_spanning_forest(g, client).total_weight
    res_both = mst_dist.minimum_spanning_forest(both, client)
    assert res_both.edge_ids.tolist() == [2 * i for i in exp_ids]  # the first arc of each pair


def test_egr_layout_is_eclgraph(tmp_path):
    """The bytes ECL-MST expects: int32 nodes, edges, nindex[n+1], nlist[edges], eweight[edges]."""
    g = mst_dist.Graph.from_arrays([0, 0, 2, 1], [1, 2, 1, 1], [5, 6, 7, 9], n_vertices=4)
    p = mio.write_graph(g, tmp_path / "g.egr")
    a = np.fromfile(p, "<i4")
    nodes, edges = a[:2]
    assert (nodes, edges) == (4, 7)  # three edges both ways, the loop (1,1) once
    nindex, nlist, ew = a[2:7], a[7:14], a[14:21]
    assert nindex.tolist() == [0, 2, 5, 7, 7]
    assert nlist.tolist() == [1, 2, 0, 2, 1, 0, 1]
    assert ew.tolist() == [5, 6, 5, 7, 9, 6, 7]
    assert a.size == 21


def test_generated_graph_to_file_and_back(client, tmp_path):
    g = mst_dist.generate("grid", rows=30, cols=40, seed=2)
    p = mio.write_graph(g, tmp_path / "grid.parquet", client=client)
    back = read(p)
    for a, b in zip(back.to_arrays(), g.to_arrays()):
        np.testing.assert_array_equal(a, b)


def test_write_errors_are_reader_errors_for_bad_text(tmp_path):
    # what the writer writes the reader reads; what it does not, the reader names
    p = tmp_path / "g.txt"
    p.write_text("# x\n0 1 2\n")
    assert read(p).n_edges == 1
    p.write_text("0 1 2\n0 1\n")
    with pytest.raises(GraphFormatError, match="line 2"):
        read(p)


# --------------------------------------------------------------------------
# the command line: mst-dist generate, mst-dist run --input
# --------------------------------------------------------------------------

def test_cli_generate_every_format(tmp_path, capsys):
    from mst_dist.cli import commands as cli

    ref = mst_dist.generate("ssca2", n=300, max_clique=6, seed=4)
    for name in ("g.txt", "g.gr", "g.mtx", "g.npz", "g.parquet", "parts/"):
        out = tmp_path / name
        assert cli.main(["generate", "ssca2", "--n", "300", "--max-clique", "6", "--seed", "4",
                         "-o", str(out), "-q"]) == 0
        assert "300 vertices" in capsys.readouterr().out
        back = read(str(out).rstrip("/"), n_vertices=300)
        for a, b in zip(back.to_arrays(), ref.to_arrays()):
            np.testing.assert_array_equal(a, b)
    assert cli.main(["generate", "grid", "--rows", "3", "--cols", "3", "--weights", "float",
                     "-o", str(tmp_path / "g.egr"), "-q"]) == 2
    assert "int32 weights" in capsys.readouterr().err
    assert not (tmp_path / "g.egr").exists()
    assert cli.main(["generate", "grid", "--rows", "3", "-o", str(tmp_path / "x.txt"), "-q"]) == 2
    assert "missing required key" in capsys.readouterr().err


def test_cli_run_input(client, tmp_path, capsys):
    from mst_dist.cli import commands as cli

    addr = client.scheduler.address
    data = DATA
    out = tmp_path / "forest.csv"
    assert cli.main(["run", "--input", os.path.join(data, "tiny.gr"), "--input-format", "gr",
                     "--scheduler", addr, "-q", "-o", str(out), "--json"]) == 0
    import json

    rep = json.loads(capsys.readouterr().out)
    assert rep["summary"]["edges"] == 18 and rep["summary"]["total_weight"] == 11
    import pyarrow.csv as pcsv

    assert pcsv.read_csv(out).column("edge_id").to_pylist() == [0, 4, 6, 10, 16]
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"graph:\n  input: {os.path.join(data, 'tiny.gr')}\n  options: "
                   "{dedupe_directions: true}\n")
    assert cli.main(["run", str(cfg), "--scheduler", addr, "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["edges"] == 9
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 2\n1 x 3\n")
    out2 = tmp_path / "never.parquet"
    assert cli.main(["run", "--input", str(bad), "--scheduler", addr, "-q", "-o", str(out2)]) == 2
    err = capsys.readouterr().err
    assert "bad.txt, line 2: expected an integer" in err and not out2.exists()
    assert cli.main(["run", "--input", str(bad), "--generate", "grid", "-q"]) == 2
    assert "give one graph" in capsys.readouterr().err

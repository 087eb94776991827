"""Graph readers: the small files of tests/data, errors, chunking, and fuzzing against reference parsers."""
import bz2
import gzip
import lzma
import math
import os
import pickle
import re
import shutil
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import mst_dist
from mst_dist.graph import vertex_memory
from mst_dist.io.formats import GraphFormatError
from mst_dist.io.readers import read
from support.naive import kruskal

from support import DATA


def data(name):
    return os.path.join(DATA, name)


# --------------------------------------------------------------------------
# the small files: (file, read options, n, m, weight dtype, expected MSF ids, total, components)
# --------------------------------------------------------------------------

# The tiny graph: edges 0..9 = (0,1,3) (0,2,3) (1,2,1) (1,3,2) (2,3,4) (3,4,2) (2,4,5)
# (4,5,7) (3,5,3) (5,5,1); vertex 6 isolated where n=7 is declared.  Kruskal by
# (weight, id): 2 (w1), 9 is a loop; 3, 5 (w2); 0 then 1 is a cycle (the tie goes to the
# lower id), 8 (w3); the rest close cycles.
TINY_IDS = [0, 2, 3, 5, 8]
FILES = [
    ("tiny.txt", {}, 6, 10, "int64", TINY_IDS, 11, 1),
    ("tiny.txt", {"n_vertices": 7}, 7, 10, "int64", TINY_IDS, 11, 2),
    ("tiny.csv", {}, 6, 10, "float64", TINY_IDS, 12.0, 1),
    # both directions: arc 2e is edge e, arc 2e+1 its reverse; the loop is not listed
    ("tiny.gr", {}, 7, 18, "int64", [0, 4, 6, 10, 16], 11, 2),
    ("tiny.gr", {"dedupe_directions": True}, 7, 9, "int64", TINY_IDS, 11, 2),
    ("tiny.mtx", {}, 7, 10, "int64", TINY_IDS, 11, 2),
    # pattern, general: (0,1) (1,0) (1,2) (2,1) (0,2) (5,6), all weight 1
    ("tiny_pattern.mtx", {}, 7, 6, "int64", [0, 2, 5], 3, 4),
    ("tiny_pattern.mtx", {"dedupe_directions": True}, 7, 4, "int64", [0, 1, 3], 3, 4),
    ("tiny.npz", {}, 6, 10, "int64", TINY_IDS, 11, 1),
    ("tiny_npy", {}, 6, 10, "float64", TINY_IDS, 12.0, 1),
    # CSR order, u < v kept: (0,1,3) (0,2,3) (1,2,1) (1,3,2) (2,3,4) (2,4,5) (3,4,2) (3,5,3) (4,5,7)
    ("tiny.egr", {}, 7, 9, "int64", [0, 2, 3, 6, 7], 11, 2),
    ("tiny.egr", {"dedupe_directions": False}, 7, 18, "int64", None, 11, 2),
    ("tiny.parquet", {"src": "u", "dst": "v", "weight": "cost"}, 6, 10, "int64", TINY_IDS, 11, 1),
]
FILE_IDS = [f"{f[0]}-{'-'.join(f[1]) or 'default'}" for f in FILES]


@pytest.mark.parametrize("name,opts,n,m,wdt,ids,total,comps", FILES, ids=FILE_IDS)
def test_small_files(client, name, opts, n, m, wdt, ids, total, comps):
    g = read(data(name), **opts)
    assert (g.n_vertices, g.n_edges, g.weight_dtype.name) == (n, m, wdt)
    assert g.validated and g.meta["format"]
    src, dst, w = g.to_arrays()
    assert src.dtype == dst.dtype == np.int64 and w.dtype == np.dtype(wdt)
    exp, exp_comps = kruskal(n, src, dst, w)
    if ids is not None:
        assert exp.tolist() == ids
    res = mst_dist.minimum_spanning_forest(g, client)
    assert res.edge_ids.tolist() == exp.tolist()
    assert res.total_weight == total and type(res.total_weight) is type(total)
    assert res.n_components == comps == exp_comps


def test_tiny_files_agree():
    """tiny.txt, .npz, .parquet are the same graph; .mtx the same edges reversed."""
    ref = read(data("tiny.txt")).to_arrays()
    for name, opts in (("tiny.npz", {}), ("tiny.parquet", {"src": "u", "dst": "v", "weight": "cost"})):
        for a, b in zip(read(data(name), **opts).to_arrays(), ref):
            np.testing.assert_array_equal(a, b)
    s, d, w = read(data("tiny.mtx")).to_arrays()
    np.testing.assert_array_equal(s, ref[1])
    np.testing.assert_array_equal(d, ref[0])
    s, d, w = read(data("tiny.gr"), dedupe_directions=True).to_arrays()
    np.testing.assert_array_equal(s, ref[0][:9])
    np.testing.assert_array_equal(w, ref[2][:9])


@pytest.mark.parametrize("partitions", [1, 3, 7])
@pytest.mark.parametrize("name,opts", [("tiny.txt", {}), ("tiny.csv", {}), ("tiny.gr", {}),
                                       ("tiny.mtx", {}), ("tiny.npz", {}), ("tiny.egr", {}),
                                       ("tiny_npy", {}),
                                       ("tiny.parquet", {"src": "u", "dst": "v", "weight": "cost"})])
def test_chunk_count_independence_small(client, name, opts, partitions):
    g = read(data(name), **opts)
    ref = g.to_arrays()
    parts = [g.sources[si].load(a, b) for si, a, b, _ in g.chunk_ranges(partitions)]
    for k in range(3):
        np.testing.assert_array_equal(np.concatenate([p[k] for p in parts]), ref[k])
    exp, _ = kruskal(g.n_vertices, *ref)
    res = mst_dist.minimum_spanning_forest(g, client, partitions=partitions)
    assert res.edge_ids.tolist() == exp.tolist()
    res = mst_dist.minimum_spanning_forest(g, client, partitions=partitions, stream="always")
    assert res.stats.streamed and res.edge_ids.tolist() == exp.tolist()
    np.testing.assert_array_equal(res.weight, ref[2][exp])


# --------------------------------------------------------------------------
# larger files: scan blocks, checkpoints, every format, partitions 1, 3, 7
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A 60k-edge graph written in every format (float weights with ties for the text ones)."""
    d = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(7)
    m, n = 60_000, 5_000
    s = rng.integers(0, n, m)
    t = rng.integers(0, n, m)
    w = rng.integers(1, 100, m)
    g = mst_dist.Graph.from_arrays(s, t, w, n_vertices=n)
    gf = mst_dist.Graph.from_arrays(s, t, w / 4.0, n_vertices=n)
    paths = {}
    for key, graph, fname in (("edgelist", gf, "g.txt"), ("gz", g, "g.txt"), ("gr", g, "g.gr"),
                              ("mtx", gf, "g.mtx"), ("npz", g, "g.npz"), ("parquet", g, "g.parquet"),
                              ("pqdir", g, "pq"), ("npy", gf, "npy"), ("egr", g, "g.egr")):
        p = str(d / fname) if key != "gz" else str(d / "gz.txt")
        kw = {"chunk_edges": 7_000} if key == "pqdir" else {}
        mst_dist.write_graph(graph, p, "npy" if key == "npy" else None, **kw)
        if key == "gz":
            with open(p, "rb") as f, gzip.open(p + ".gz", "wb") as z:
                shutil.copyfileobj(f, z)
            p += ".gz"
        paths[key] = (p, graph)
    return paths


@pytest.mark.parametrize("key", ["edgelist", "gz", "gr", "mtx", "npz", "parquet", "pqdir", "npy",
                                 "egr"])
def test_big_files_every_partition_count(client, big, key):
    path, graph = big[key]
    opts = {"blocksize": 100_000} if key in ("edgelist", "gr", "mtx") else {}
    g = read(path, n_vertices=graph.n_vertices, **opts)
    got = g.to_arrays()
    if key == "egr":  # CSR order: the same edges sorted by smaller endpoint, loops dropped
        s, d, w = graph.to_arrays()
        keep = s != d
        lo, hi = np.minimum(s, d)[keep], np.maximum(s, d)[keep]
        order = np.lexsort((hi, lo))
        assert sorted(zip(got[0].tolist(), got[1].tolist(), got[2].tolist())) == \
            sorted(zip(lo.tolist(), hi.tolist(), w[keep].tolist()))
        assert len(order) == g.n_edges
    else:
        for a, b in zip(got, graph.to_arrays()):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    if key in ("edgelist", "gr", "mtx"):
        assert len(g.sources[0].params["ck"]) > 3   # several scan blocks and checkpoints
    if key == "gz":
        assert not g.sources[0].splittable and len(g.chunk_ranges(7)) == 1
    exp, _ = kruskal(g.n_vertices, *got)
    for p in (1, 3, 7):
        res = mst_dist.minimum_spanning_forest(g, client, partitions=p)
        assert res.edge_ids.tolist() == exp.tolist(), p
    # streamed: every pass reads the file again (chunk by chunk), the rows come from the passes
    res = mst_dist.minimum_spanning_forest(g, client, partitions=3, stream="always")
    assert res.stats.streamed and len(res.stats.passes) >= 3
    assert res.edge_ids.tolist() == exp.tolist()
    for a, b in zip((res.src, res.dst, res.weight), got):
        np.testing.assert_array_equal(a, b[exp])


def test_blocksize_and_cuts_do_not_change_rows(big):
    path, graph = big["edgelist"]
    ref = graph.to_arrays()
    for bs in (50_000, 1 << 20):
        g = read(path, blocksize=bs, client=False)
        src = g.sources[0]
        cuts = [0, 1, 2, 999, 12345, 40000, 59999, g.n_edges]
        parts = [src.load(a, b) for a, b in zip(cuts[:-1], cuts[1:])]
        for k in range(3):
            np.testing.assert_array_equal(np.concatenate([p[k] for p in parts]), ref[k])


@pytest.mark.parametrize("opener,ext", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")])
def test_compressed(tmp_path, opener, ext):
    p = tmp_path / ("tiny.txt" + ext)
    with open(data("tiny.txt"), "rb") as f, opener(p, "wb") as z:
        z.write(f.read())
    g = read(p)
    for a, b in zip(g.to_arrays(), read(data("tiny.txt")).to_arrays()):
        np.testing.assert_array_equal(a, b)
    assert g.sources[0].splittable is False


def test_glob_and_list_in_natural_order(tmp_path):
    lines = ["0 1 5\n1 2 3\n", "2 3 4.5\n", "3 4 1\n4 0 2\n"]
    for i, name in enumerate(["part.2.txt", "part.10.txt", "part.1.txt"]):
        (tmp_path / name).write_text(lines[i])
    g = read(str(tmp_path / "part.*.txt"))
    assert [s.name for s in g.sources] == ["part.1.txt", "part.2.txt", "part.10.txt"]
    s, d, w = g.to_arrays()
    assert s.tolist() == [3, 4, 0, 1, 2] and w.dtype == np.float64
    assert w.tolist() == [1, 2, 5, 3, 4.5]
    g2 = read([tmp_path / "part.10.txt", tmp_path / "part.2.txt"])
    assert g2.to_arrays()[0].tolist() == [2, 0, 1] and g2.n_vertices == 4


def test_parquet_directory_and_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path / "parts"
    d.mkdir()
    pq.write_table(pa.table({"a": [0, 1], "b": [1, 2]}), d / "part.1.parquet")
    pq.write_table(pa.table({"a": [2], "b": [0]}), d / "part.0.parquet")
    (d / "_SUCCESS").write_text("")
    g = read(d, src="a", dst="b", weight=None)
    assert g.to_arrays()[0].tolist() == [2, 0, 1] and g.to_arrays()[2].tolist() == [1, 1, 1]
    with pytest.raises(GraphFormatError, match="no column 'src'"):
        read(d)
    with pytest.raises(GraphFormatError, match="no column 'w'"):
        read(d, src="a", dst="b", weight="w")


def test_parquet_without_statistics_scans(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "nostats.parquet"
    pq.write_table(pa.table({"src": [0, 5], "dst": [1, 2], "weight": [1.5, 2.5]}), p,
                   write_statistics=False)
    g = read(p, client=False)
    assert g.n_vertices == 6 and g.weight_dtype == np.float64


def test_options_checked():
    with pytest.raises(ValueError, match="unknown option.*header"):
        read(data("tiny.gr"), header=True)
    with pytest.raises(ValueError, match="dedupe_directions"):
        read(data("tiny.txt"), dedupe_directions=True)
    with pytest.raises(ValueError, match="weights must be"):
        read(data("tiny.txt"), weights="double")
    with pytest.raises(GraphFormatError, match="unknown format 'snap'"):
        read(data("tiny.txt"), format="snap")
    with pytest.raises(GraphFormatError, match="cannot tell the graph format"):
        read(data("make_binary.py"))
    with pytest.raises(FileNotFoundError):
        read(data("nothing-*.txt"))
    with pytest.raises(FileNotFoundError):
        read(data("missing.txt"))


def test_weights_option_and_header(tmp_path):
    p = tmp_path / "h.txt"
    p.write_text("1 2 3\n2 3 4\n")
    assert read(p, weights="float").weight_dtype == np.float64
    assert read(p, header=True).n_edges == 1
    p.write_text("u v w\n1 2 3.5\n")
    with pytest.raises(GraphFormatError, match="line 2: expected an integer weight"):
        read(p, weights="int")
    with pytest.raises(GraphFormatError, match="line 1: expected an integer as the source id, found 'u'"):
        read(p, header=False)


# --------------------------------------------------------------------------
# bad input: each names the file and the line (or row group and row)
# --------------------------------------------------------------------------

TEXT_ERRORS = [
    # (file name, content, line, words in the message)
    ("e.txt", "0 1 2\n1 x 3\n", 2, "expected an integer as the target id, found 'x'"),
    ("e.txt", "0 1 2\n1 2\n", 2, "expected 3 fields"),
    ("e.txt", "0 1 2\n1 2 3 4\n", 2, "found more"),
    ("e.txt", "0 1 2 3\n", 1, "expected 2 or 3 fields"),
    ("e.txt", "0 1\n1 2 3\n", 2, "expected 2 fields"),
    ("e.txt", "# c\n0 1 NaN\n", 2, "is NaN"),
    ("e.txt", "0 1 -inf\n", 1, "is infinite"),
    ("e.txt", "0 1 1.5\n0 1 1e999\n", 2, "'1e999' is infinite"),
    ("e.txt", "0 -1 1\n", 1, "negative"),
    ("e.txt", "0,,1\n", 1, "empty field"),
    ("e.txt", "0 1 2\n99999999999999999999 1 2\n", 2, "does not fit in int64"),
    ("e.txt", "0 1 2\n0 1 2\xe9\n", 2, "found"),
    ("e.txt", "0 1 2\n3 4", 2, "expected 3 fields"),           # truncated last line
    ("e.gr", "c x\np sp 3 2\na 1 2 1\na 0 2 1\n", 4, ">= 1 in this 1-based format"),
    ("e.gr", "p sp 3 2\na 1 2 1\na 1 4 1\n", 3, "exceeds N=3"),
    ("e.gr", "p sp 3 3\na 1 2 1\na 2 3 1\n", 1, "declares 3 arcs, the file has 2 (truncated?)"),
    ("e.gr", "p sp 3 1\na 1 2 1\na 2 3 1\n", 1, "declares 1 arcs, the file has 2"),
    ("e.gr", "c x\na 1 2 1\n", 2, "before the problem line"),
    ("e.gr", "c only comments\n", 1, "no problem line"),
    ("e.gr", "p sp 3 1\np sp 3 1\na 1 2 1\n", 2, "second problem line"),
    ("e.gr", "p max 3 1\n", 1, "expected the problem line"),
    ("e.gr", "p sp 3 1\nx 1 2 1\n", 2, "expected a 'c' comment or an 'a U V W'"),
    ("e.gr", "p sp 3 1\na 1 2\n", 2, "found 2 of its 3 numbers"),
    ("e.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1.0\n", 3, ">= 1"),
    ("e.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 -1 1.0\n", 3, ">= 1"),
    ("e.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 1\n1 3 1.0\n", 3, "column index 3 exceeds N=2"),
    ("e.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 1.5\n", 3, "integer weight"),
    ("e.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.5\n", 2, "declares 2 entries, the file has 1"),
    ("e.mtx", "%%MatrixMarket matrix coordinate real general\n% no size line\n", 2, "no size line"),
    ("e.mtx", "%%MatrixMarket matrix coordinate real general\n3 3\n", 2, "size line"),
    ("e.mtx", "%%MatrixMarket matrix array real general\n3 3\n", 1, "only 'matrix coordinate'"),
    ("e.mtx", "%%MatrixMarket matrix coordinate complex general\n", 1, "unsupported field 'complex'"),
    ("e.mtx", "%%MatrixMarket matrix coordinate real hermitian\n", 1, "unsupported symmetry"),
    ("e.mtx", "3 3 1\n1 2 1\n", 1, "expected the banner"),
    ("e.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 5\n", 3, "found more"),
]


@pytest.mark.parametrize("name,content,line,words", TEXT_ERRORS,
                         ids=[f"{e[0]}:{i}" for i, e in enumerate(TEXT_ERRORS)])
def test_text_errors_name_file_and_line(tmp_path, name, content, line, words):
    p = tmp_path / name
    p.write_bytes(content.encode("latin-1"))
    with pytest.raises(GraphFormatError) as ei:
        read(p, client=False)
    e = ei.value
    assert isinstance(e, ValueError) and isinstance(e, mst_dist.InvalidGraphError)
    assert e.path == str(p) and e.line == line, str(e)
    assert words in str(e) and str(e).startswith(f"{p}, line {line}: ")


def test_truncated_compressed(tmp_path):
    p = tmp_path / "t.txt.gz"
    raw = gzip.compress(b"0 1 2\n" * 5000)
    p.write_bytes(raw[:len(raw) // 2])
    with pytest.raises(GraphFormatError, match="truncated or corrupt"):
        read(p, client=False)


def test_text_that_starts_like_a_compression_magic(tmp_path):
    # only a whole fixed header makes a file compressed; a prefix stays text
    p = tmp_path / "e.txt"
    p.write_bytes(b"BZh 1 2.5\n1 2 1\n")
    with pytest.raises(GraphFormatError, match=r"e.txt, line 1: .*BZh"):
        read(p, client=False, header=False)
    g = read(p, client=False, header=True)
    assert g.n_edges == 1
    p.write_bytes(bz2.compress(b"0 1 2\n" * 5000)[:40])
    with pytest.raises(GraphFormatError, match=r"cannot decompress \(bz2\).*truncated or corrupt"):
        read(p, client=False)
    p.write_bytes(bz2.compress(b""))   # an empty stream is an empty graph (when allowed), not text
    with pytest.raises(GraphFormatError, match="no edges: .*e.txt holds no edge rows"):
        read(p, client=False)
    assert read(p, client=False, allow_empty=True).n_edges == 0


def test_binary_errors(tmp_path):
    p = tmp_path / "o.npz"
    np.savez(p, src=np.array([0, 1], dtype=object), dst=np.array([1, 0]))
    with pytest.raises(GraphFormatError, match="Python objects; refusing to unpickle"):
        read(p)
    np.savez(p, src=np.array([0, 1]), dst=np.array([1, 0, 2]))
    with pytest.raises(GraphFormatError, match="different lengths"):
        read(p)
    np.savez(p, src=np.array([0, 1, 4]), dst=np.array([1, 0, 2]), weight=np.array([1.0, np.nan, 2]))
    with pytest.raises(GraphFormatError, match=r"o.npz, row 1: weight is NaN"):
        read(p, client=False)
    np.savez(p, src=np.array([0, 1, -4]), dst=np.array([1, 0, 2]))
    with pytest.raises(GraphFormatError, match=r"row 2: negative vertex id"):
        read(p, client=False)
    p.write_bytes(b"not a zip")
    with pytest.raises(GraphFormatError, match="not a readable .npz"):
        read(p)
    e = tmp_path / "t.egr"
    e.write_bytes(open(data("tiny.egr"), "rb").read()[:-5])
    with pytest.raises(GraphFormatError, match="truncated"):
        read(e)
    e.write_bytes(b"\x01\x00")
    with pytest.raises(GraphFormatError, match="at least 8"):
        read(e)


def test_parquet_errors_name_row_group_and_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"src": [0, 1, 2, 3, 4], "dst": [1, 2, 3, 4, 0],
                             "weight": [1.0, 2.0, 3.0, math.inf, 1.0]}), p, row_group_size=2)
    with pytest.raises(GraphFormatError) as ei:
        read(p, client=False).to_arrays()
    assert (ei.value.row_group, ei.value.row) == (1, 1) and "infinite" in str(ei.value)
    pq.write_table(pa.table({"src": [0, None, 2], "dst": [1, 2, 3]}), p, row_group_size=2)
    with pytest.raises(GraphFormatError, match="row group 0, row 1: null in column 'src'"):
        read(p, client=False)
    pq.write_table(pa.table({"src": ["a"], "dst": [1]}), p)
    with pytest.raises(GraphFormatError, match="vertex ids must be integers"):
        read(p)


def test_error_pickles_intact():
    e = GraphFormatError("bad token", path="/x/g.txt", line=7)
    f = pickle.loads(pickle.dumps(e))
    assert type(f) is GraphFormatError and str(f) == str(e) == "/x/g.txt, line 7: bad token"
    assert (f.path, f.line, f.reason, f.source) == ("/x/g.txt", 7, "bad token", "/x/g.txt")
    g = pickle.loads(pickle.dumps(GraphFormatError("r", path="p", row_group=2, row=3)))
    assert (g.row_group, g.row) == (2, 3) and str(g) == "p, row group 2, row 3: r"


def test_error_at_load_reaches_the_caller(client, tmp_path):
    """A file changed after the scan: the load task's error (file, line) reaches the caller."""
    p = tmp_path / "changing.txt"
    p.write_text("".join(f"{i} {i + 1} {i % 7}\n" for i in range(200)))
    g = read(p)
    text = p.read_text().replace("150 151 3", "150 15x 3")
    p.write_text(text)
    with pytest.raises(GraphFormatError) as ei:
        mst_dist.minimum_spanning_forest(g, client, partitions=3)
    assert ei.value.line == 151 and ei.value.path == str(p)


@pytest.mark.processes
def test_reader_on_worker_processes(pclient, tmp_path):
    p = tmp_path / "p.txt"
    p.write_text("".join(f"{i} {(i * 7) % 300} {i % 5}.5\n" for i in range(3000)))
    g = read(p, blocksize=10_000, client=pclient)
    exp, _ = kruskal(g.n_vertices, *g.to_arrays())
    res = mst_dist.minimum_spanning_forest(g, pclient, partitions=4)
    assert res.edge_ids.tolist() == exp.tolist()
    p.write_text(p.read_text().replace("2000 ", "2000x", 1))
    with pytest.raises(GraphFormatError) as ei:
        mst_dist.minimum_spanning_forest(g, pclient, partitions=4)
    assert ei.value.line == 2001


# --------------------------------------------------------------------------
# fuzzing every text reader against a plain reference parse
# --------------------------------------------------------------------------

WS = b" \t\r\v\f"
SEP = re.compile(rb"[ \t\r\v\f]*,[ \t\r\v\f]*|[ \t\r\v\f]+")
WSRE = re.compile(rb"[ \t\r\v\f]+")
INT = re.compile(rb"[+-]?[0-9]+\Z")
FLT = re.compile(rb"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
I64 = 2 ** 63 - 1


class Bad(Exception):
    """The reference parse rejects the input at ``line``."""

    def __init__(self, line):
        super().__init__(line)
        self.line = line


def ref_lines(blob):
    lines = blob.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def ref_int(tok, k):
    if not INT.match(tok) or abs(int(tok)) > I64:
        raise Bad(k)
    return int(tok)


def ref_weight(tok, k, kind):
    """kind: 'auto'/'real' (int or float grammar) or 'int'."""
    if INT.match(tok) and abs(int(tok)) <= I64:
        return int(tok)
    if kind == "int" or not (FLT.match(tok) or INT.match(tok)):
        raise Bad(k)
    return float(tok)


def ref_finish(rows, n, all_int):
    s = np.array([r[0] for r in rows], np.int64)
    d = np.array([r[1] for r in rows], np.int64)
    if all_int:
        w = np.array([r[2] for r in rows], np.int64)
    else:
        w = np.array([float(r[2]) for r in rows], np.float64)
    return n, s, d, w


def ref_edgelist(blob, header="auto"):
    rows, ncols, header_done = [], None, header is False
    for k, raw in enumerate(ref_lines(blob), 1):
        s = raw.strip(WS)
        if not s or s[:1] in (b"#", b"%"):
            continue
        if not header_done:
            header_done = True
            if header is True or not (s[:1].isdigit() or s[:1] in (b"+", b"-", b".")):
                continue
        fields = SEP.split(s)
        if ncols is None:
            ncols = len(fields)
            if ncols not in (2, 3):
                raise Bad(k)
        if len(fields) != ncols or b"" in fields:
            raise Bad(k)
        u, v = ref_int(fields[0], k), ref_int(fields[1], k)
        w = ref_weight(fields[2], k, "auto") if ncols == 3 else 1
        if u < 0 or v < 0 or (isinstance(w, float) and not math.isfinite(w)):
            raise Bad(k)
        rows.append((u, v, w))
    n = max([max(r[0], r[1]) for r in rows] + [-1]) + 1
    return ref_finish(rows, n, all(isinstance(r[2], int) for r in rows))


def _words(b):
    b = b.strip(WS)
    return WSRE.split(b) if b else []


def ref_gr(blob, dedupe_directions=False):
    dedupe = dedupe_directions
    lines = ref_lines(blob)
    n = m = pline = None
    rows, raw = [], 0
    for k, line in enumerate(lines, 1):
        s = line.strip(WS)
        if not s:
            continue
        c0, sep = s[:1], len(s) == 1 or s[1:2] in WS
        if c0 == b"c" and sep:
            continue
        if pline is None:
            if c0 == b"p" and sep:
                try:
                    s.decode("ascii")
                except UnicodeDecodeError:
                    raise Bad(k)
                parts = _words(s)
                if len(parts) != 4 or parts[1] != b"sp" or not INT.match(parts[2]) \
                        or not INT.match(parts[3]) or int(parts[2]) < 0 or int(parts[3]) < 0:
                    raise Bad(k)
                n, m, pline = int(parts[2]), int(parts[3]), k
                continue
            raise Bad(k)
        if c0 == b"a" and sep:
            f = _words(s[1:])
            if len(f) != 3:
                raise Bad(k)
            u, v, w = ref_int(f[0], k) - 1, ref_int(f[1], k) - 1, ref_weight(f[2], k, "auto")
            if not (0 <= u < n and 0 <= v < n):
                raise Bad(k)
            raw += 1
            if dedupe and not u < v:
                continue
            if isinstance(w, float) and not math.isfinite(w):
                raise Bad(k)
            rows.append((u, v, w))
            continue
        raise Bad(k)
    if pline is None:
        raise Bad(len(lines) or None)
    if raw != m:
        raise Bad(pline)
    return ref_finish(rows, n, all(isinstance(r[2], int) for r in rows))


def ref_mtx(blob, dedupe_directions=False):
    dedupe = dedupe_directions
    lines = ref_lines(blob)
    if not lines:
        raise Bad(None)
    try:
        banner = [x.decode("ascii").lower() for x in _words(lines[0])]
    except UnicodeDecodeError:
        raise Bad(1)
    if len(banner) != 5 or banner[0] != "%%matrixmarket" or banner[1:3] != ["matrix", "coordinate"] \
            or banner[3] not in ("integer", "real", "pattern") or banner[4] not in ("general", "symmetric"):
        raise Bad(1)
    field, sym = banner[3], banner[4]
    size = None
    for k in range(2, len(lines) + 1):
        s = lines[k - 1].strip(WS)
        if not s or s[:1] == b"%":
            continue
        try:
            s.decode("ascii")
        except UnicodeDecodeError:
            raise Bad(k)
        parts = _words(s)
        if len(parts) != 3 or not all(INT.match(x) and int(x) >= 0 for x in parts):
            raise Bad(k)
        size = (k, *map(int, parts))
        break
    if size is None:
        raise Bad(len(lines))
    sline, M, N, nnz = size
    ncols = 2 if field == "pattern" else 3
    rows, raw = [], 0
    for k in range(sline + 1, len(lines) + 1):
        s = lines[k - 1].strip(WS)
        if not s or s[:1] == b"%":
            continue
        f = WSRE.split(s)
        if len(f) != ncols:
            raise Bad(k)
        i, j = ref_int(f[0], k) - 1, ref_int(f[1], k) - 1
        w = ref_weight(f[2], k, "int" if field == "integer" else "real") if ncols == 3 else 1
        if not (0 <= i < M and 0 <= j < N):
            raise Bad(k)
        raw += 1
        if dedupe and sym == "general" and not i < j:
            continue
        if field == "real":
            w = float(w)
        if isinstance(w, float) and not math.isfinite(w):
            raise Bad(k)
        rows.append((i, j, w))
    if raw != nnz:
        raise Bad(sline)
    return ref_finish(rows, max(M, N), field != "real")


NUMS = [b"0", b"1", b"2", b"3", b"7", b"12", b"+4", b"-0", b"007", b"-3",
        b"99999999999999999999", b"9223372036854775807"]
FLOATS = [b"1.5", b".5", b"5.", b"2e3", b"-2.5e-3", b"1E+2", b"1e999", b"0.1", b"3.0"]
BAD = [b"x", b"nan", b"inf", b"1_0", b"0x1", b"1.2.3", b"1e", b"+", b".", b"\xff", b"\x00", b"a"]
SEPS = [b" ", b"\t", b",", b", ", b" , ", b"  ", b",,", b"\t,"]


def tokens(good_weight=True):
    num = st.sampled_from(NUMS[:6] * 4 + NUMS[6:])
    w = st.sampled_from(NUMS[:6] * 3 + NUMS[6:] + FLOATS)
    return num, w


@st.composite
def edgelist_text(draw):
    num, w = tokens()
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["data"] * 6 + ["comment", "blank", "header", "bad", "noise"]))
        if kind == "data":
            k = draw(st.sampled_from([3, 3, 3, 2, 1, 4]))
            toks = [draw(num) for _ in range(min(k, 2))] + [draw(w) for _ in range(max(0, k - 2))]
            if draw(st.integers(0, 9)) == 0:
                toks[draw(st.integers(0, len(toks) - 1))] = draw(st.sampled_from(BAD))
            sep = draw(st.sampled_from(SEPS[:4] * 4 + SEPS[4:]))
            line = sep.join(toks)
            line = draw(st.sampled_from([b"", b" ", b"\t"])) + line + draw(st.sampled_from([b"", b" ", b"\r"]))
        elif kind == "comment":
            line = draw(st.sampled_from([b"# c", b"% x 1 2", b"  #", b"#\xff"]))
        elif kind == "blank":
            line = draw(st.sampled_from([b"", b"  ", b"\t\r"]))
        elif kind == "header":
            line = draw(st.sampled_from([b"src dst weight", b"from,to", b"a b c d"]))
        elif kind == "bad":
            line = draw(st.sampled_from(BAD))
        else:
            line = draw(st.binary(max_size=8)).replace(b"\n", b"")
        lines.append(line)
    blob = b"\n".join(lines)
    if lines and draw(st.booleans()):
        blob += b"\n"
    return blob


@st.composite
def gr_text(draw):
    num, w = tokens()
    n = draw(st.integers(0, 6))
    lines = [b"c road"] if draw(st.booleans()) else []
    arcs = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["arc"] * 6 + ["comment", "blank", "bad", "noise"]))
        if kind == "arc":
            u = draw(st.integers(0, n + 1)) if draw(st.integers(0, 4)) else draw(num)
            toks = [b"a", str(u).encode() if isinstance(u, int) else u,
                    str(draw(st.integers(1, max(1, n)))).encode(), draw(w)]
            if draw(st.integers(0, 9)) == 0:
                del toks[-1]
            if draw(st.integers(0, 9)) == 0:
                toks[draw(st.integers(1, len(toks) - 1))] = draw(st.sampled_from(BAD))
            arcs.append(b" ".join(toks))
        elif kind == "comment":
            arcs.append(draw(st.sampled_from([b"c", b"c x", b"cx"])))
        elif kind == "blank":
            arcs.append(b" ")
        elif kind == "bad":
            arcs.append(draw(st.sampled_from([b"p sp 2 2", b"x 1 2 3", b"a1 2 3", b"a 1,2 3"])))
        else:
            arcs.append(draw(st.binary(max_size=6)).replace(b"\n", b""))
    m = sum(1 for a in arcs if a.startswith(b"a ")) + draw(st.sampled_from([0, 0, 0, 1, -1]))
    plines = [f"p sp {n} {m}".encode(), f"p sp {n}".encode(), b"p max 1 1"]
    if draw(st.integers(0, 9)):
        lines.append(plines[0])
    else:
        lines.append(draw(st.sampled_from(plines[1:])))
    blob = b"\n".join(lines + arcs)
    if draw(st.booleans()):
        blob += b"\n"
    return blob


@st.composite
def mtx_text(draw):
    num, w = tokens()
    field = draw(st.sampled_from(["integer", "real", "pattern"]))
    sym = draw(st.sampled_from(["general", "symmetric"]))
    M, N = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    body = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["entry"] * 6 + ["comment", "blank", "noise"]))
        if kind == "entry":
            toks = [str(draw(st.integers(0, M + 1))).encode(), str(draw(st.integers(0, N + 1))).encode()]
            if field != "pattern":
                toks.append(draw(w))
            if draw(st.integers(0, 9)) == 0:
                toks[draw(st.integers(0, len(toks) - 1))] = draw(st.sampled_from(BAD + NUMS[6:]))
            if draw(st.integers(0, 14)) == 0:
                toks.append(b"1")
            body.append(draw(st.sampled_from([b" ", b"\t"])).join(toks))
        elif kind == "comment":
            body.append(b"% note")
        elif kind == "blank":
            body.append(b"")
        else:
            body.append(draw(st.binary(max_size=6)).replace(b"\n", b""))
    nnz = sum(1 for b in body if b[:1].isdigit()) + draw(st.sampled_from([0, 0, 0, 1, -1]))
    banner = f"%%MatrixMarket matrix coordinate {field} {sym}".encode()
    if draw(st.integers(0, 14)) == 0:
        banner = draw(st.sampled_from([b"%%MatrixMarket matrix array real general",
                                       b"%MatrixMarket matrix coordinate real general", b""]))
    lines = [banner, b"% comment", f"{M} {N} {nnz}".encode()] + body
    blob = b"\n".join(lines)
    if draw(st.booleans()):
        blob += b"\n"
    return blob


# Compressed-stream signatures, written out here rather than taken from the
# reader: a blob that starts with one is read through the decompressor.
SIGNATURES = [(re.compile(rb"\x1f\x8b\x08"), gzip.decompress),
              (re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)"), bz2.decompress),
              (re.compile(rb"\xfd7zXZ\x00"), lzma.decompress)]


def check_against_reference(path, blob, ref, cuts, **opts):
    path.write_bytes(blob)
    for sig, decompress in SIGNATURES:
        if sig.match(blob):
            try:
                blob = decompress(blob)
            except (EOFError, OSError, lzma.LZMAError, zlib.error):
                with pytest.raises(GraphFormatError, match="cannot decompress") as ei:
                    read(path, client=False, **opts)
                assert ei.value.path == str(path)
                return
            break
    try:
        n, s, d, w = ref(blob, **{k: v for k, v in opts.items() if k != "blocksize"})
    except Bad as bad:
        with pytest.raises(GraphFormatError) as ei:
            read(path, client=False, **opts)
        assert ei.value.line == bad.line, (str(ei.value), bad.line)
        assert ei.value.path == str(path)
        return
    if len(s) == 0:  # no edge at all: an error unless allowed
        with pytest.raises(GraphFormatError, match="no edges"):
            read(path, client=False, **opts)
    if vertex_memory(n) > os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"):
        # an id so large that its per-vertex state cannot be held: refused, naming the line
        with pytest.raises(GraphFormatError, match="per-vertex") as ei:
            read(path, client=False, **opts)
        assert ei.value.path == str(path) and ei.value.line is not None
        return
    g = read(path, client=False, allow_empty=True, **opts)
    assert g.n_vertices == n and g.n_edges == len(s)
    got = g.to_arrays()
    for a, b in zip(got, (s, d, w)):
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_array_equal(a, b)
    if g.n_edges:
        src = g.sources[0]
        cuts = sorted({0, g.n_edges, *[c % (g.n_edges + 1) for c in cuts]})
        parts = [src.load(a, b) for a, b in zip(cuts[:-1], cuts[1:])]
        for k in range(3):
            np.testing.assert_array_equal(np.concatenate([p[k] for p in parts]), got[k])


FUZZ = settings(max_examples=int(os.environ.get("MST_FUZZ_EXAMPLES", 250)), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@FUZZ
@given(blob=edgelist_text(), bs=st.integers(1, 64), header=st.sampled_from(["auto", "auto", True, False]),
       cuts=st.lists(st.integers(0, 50), max_size=3))
@example(blob=b"BZh\n0 0 x", bs=1, header="auto", cuts=[])   # starts like a bz2 header
@example(blob=b"\x1f\x8b 1 2", bs=1, header="auto", cuts=[])  # starts like a gzip header
@example(blob=b"\x1f\x8b\x08", bs=1, header=False, cuts=[])   # a gzip header, then nothing
def test_fuzz_edgelist(tmp_path, blob, bs, header, cuts):
    check_against_reference(tmp_path / "f.txt", blob, ref_edgelist, cuts, blocksize=bs, header=header)


@FUZZ
@given(blob=gr_text(), bs=st.integers(1, 64), dedupe=st.booleans(),
       cuts=st.lists(st.integers(0, 50), max_size=3))
def test_fuzz_gr(tmp_path, blob, bs, dedupe, cuts):
    check_against_reference(tmp_path / "f.gr", blob, ref_gr, cuts, blocksize=bs,
                            dedupe_directions=dedupe)


@FUZZ
@given(blob=mtx_text(), bs=st.integers(1, 64), dedupe=st.booleans(),
       cuts=st.lists(st.integers(0, 50), max_size=3))
def test_fuzz_mtx(tmp_path, blob, bs, dedupe, cuts):
    check_against_reference(tmp_path / "f.mtx", blob, ref_mtx, cuts, blocksize=bs,
                            dedupe_directions=dedupe)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=64))
def test_fuzz_raw_bytes_never_crash(tmp_path, blob):
    """Arbitrary bytes: a graph or a GraphFormatError, never another exception."""
    for name in ("r.txt", "r.gr", "r.mtx"):
        p = tmp_path / name
        p.write_bytes(blob)
        try:
            read(p, client=False).to_arrays()
        except GraphFormatError:
            pass


# -- checks before any work: ids too large for the workers, empty input, directories without data

def test_vertex_id_too_large_for_memory_names_the_line(tmp_path):
    p = tmp_path / "big.txt"
    p.write_text("# one stray id\n0 1 1\n1 1099511627776 2\n2 3 1\n")
    with pytest.raises(GraphFormatError) as ei:
        read(p, client=False)
    e = ei.value
    assert e.path == str(p) and e.line == 3
    msg = str(e)
    assert "vertex id 1099511627776" in msg and "n_vertices = 1099511627777" in msg
    assert "32.0 TiB" in msg and "relabel" in msg and "n_vertices" in msg
    # below the memory of a worker the same ids are fine
    p.write_text("0 1 1\n1 1000000 2\n")
    assert read(p, client=False).n_vertices == 1_000_001


def test_vertex_id_too_large_in_binary_and_declared_sizes(tmp_path):
    p = tmp_path / "big.npz"
    np.savez(p, src=np.array([0, 1, 2]), dst=np.array([1, 2, 2**40]), weight=np.array([1.0, 2.0, 3.0]))
    with pytest.raises(GraphFormatError, match=r"big.npz, row 2: vertex id 1099511627776 \(dst\)") as ei:
        read(p, client=False)
    assert ei.value.row == 2
    q = tmp_path / "big.gr"
    q.write_text("c a road graph\np sp 1099511627776 2\na 1 2 3\na 2 3 4\n")
    with pytest.raises(GraphFormatError, match="the problem line declares 1099511627776 vertices") as ei:
        read(q, client=False)
    assert ei.value.line == 2


@pytest.mark.parametrize("text", ["", "# only a comment\n\n", "src dst weight\n"])
def test_empty_input_is_an_error_unless_allowed(tmp_path, text, caplog):
    p = tmp_path / "e.txt"
    p.write_text(text)
    with pytest.raises(GraphFormatError, match="no edges: .*e.txt holds no edge rows.*allow_empty=True"):
        read(p, client=False)
    with caplog.at_level("WARNING", logger="mst_dist"):
        g = read(p, client=False, allow_empty=True)
    assert g.n_edges == 0
    assert "holds no edges" in caplog.text


def test_directory_without_data_files_says_what_it_holds(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "README").write_text("edges go here\n")
    (d / "notes.md").write_text("# notes\n")
    with pytest.raises(FileNotFoundError, match=r"it holds README, notes.md, none of them a Parquet file"):
        read(d, client=False)

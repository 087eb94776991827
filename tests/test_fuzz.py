"""Property-based tests of what users feed in: the readers, the run-config parser, URLs and their options.

Random and corrupted inputs give either the right forest (Kruskal's over what was read) or one of the
package's documented errors (:class:`mst_dist.MSTError`) naming what and where: never an error from
inside NumPy, Numba or pyarrow, never a hang.  The number of examples is bounded here (a few seconds
each test); ``python -m benchmarks.fuzz --minutes N`` runs the same properties for longer, with the
examples per test set by ``MST_FUZZ_EXAMPLES``.
"""
import os
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mst_dist
from mst_dist import ConfigError, MSTError
from mst_dist.io import urls
from support.naive import kruskal

EXAMPLES = int(os.environ.get("MST_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="MST_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])
#: For the properties whose every example runs the engine on a cluster (a second or so each here).
FUZZ_RUNS = settings(FUZZ, max_examples=max(5, EXAMPLES // 3))


@st.composite
def edge_lists(draw, max_n=12, max_m=30, weights="int"):
    n = draw(st.integers(1, max_n))
    m = draw(st.integers(0, max_m))
    ids = st.integers(0, n - 1)
    src = draw(st.lists(ids, min_size=m, max_size=m))
    dst = draw(st.lists(ids, min_size=m, max_size=m))
    if weights == "int":
        w = draw(st.lists(st.integers(-2**40, 2**40), min_size=m, max_size=m))
    else:
        w = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=64), min_size=m, max_size=m))
    return n, np.array(src, np.int64), np.array(dst, np.int64), np.array(w, np.int64 if weights == "int" else float)


def _solved_as_read(g, client):
    """Solve what was read and hold it to Kruskal over the same rows."""
    s, d, w = g.to_arrays()
    res = mst_dist.minimum_spanning_forest(g, client)
    want, comps = kruskal(g.n_vertices, s, d, w)
    np.testing.assert_array_equal(res.edge_ids, want)
    assert res.n_components == comps
    return s, d, w


def _refused_well(error, path):
    """A refusal is one of the package's errors, naming the file it read (or its line or edge)."""
    assert isinstance(error, MSTError), f"{type(error).__module__}.{type(error).__name__}: {error}"
    text = str(error)
    assert os.path.basename(str(path)) in text or "line" in text or "edge" in text, text


def _read_and_solve(path, client, **kw):
    try:
        g = mst_dist.read(path, client=client, **kw)
        return _solved_as_read(g, client)
    except Exception as e:  # noqa: BLE001 - the property is about which errors come out
        _refused_well(e, path)
        return None


# ---------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------

@FUZZ_RUNS
@given(edges=edge_lists(), sep=st.sampled_from([" ", "\t", "  "]), comment=st.booleans())
def test_text_edge_lists_read_exactly(client, tmp_path_factory, edges, sep, comment):
    n, s, d, w = edges
    path = tmp_path_factory.mktemp("fuzz") / "g.txt"
    lines = [f"{a}{sep}{b}{sep}{c}" for a, b, c in zip(s.tolist(), d.tolist(), w.tolist())]
    path.write_text(("# edges\n" if comment else "") + "\n".join(lines) + ("\n" if lines else ""))
    g = mst_dist.read(path, client=client, n_vertices=n, allow_empty=True)
    got = _solved_as_read(g, client)
    for a, b in zip(got, (s, d, w)):
        np.testing.assert_array_equal(a, b)


#: What corruption puts in a text graph: digits, signs, exponents, separators, comments, junk.
NOISE = st.binary(min_size=1, max_size=4) | st.sampled_from(
    [b"-", b".", b"e", b"e999", b"nan", b"inf", b"#", b"%", b"\n", b"\r\n", b"\t", b" ", b"\x00", b",",
     b"99999999999999999999999", b"-1", b"1.5", b"\xff\xfe"])


@st.composite
def corrupted(draw, text):
    data = bytearray(text)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["insert", "replace", "truncate"]))
        if how == "truncate":
            del data[at:]
        else:
            junk = draw(NOISE)
            data[at:at + (len(junk) if how == "replace" else 0)] = junk
    return bytes(data)


@FUZZ_RUNS
@given(data=st.data(), edges=edge_lists(max_m=15), fmt=st.sampled_from(["edgelist", "mtx", "gr"]),
       gz=st.booleans())
def test_corrupted_text_is_read_right_or_refused_naming_where(client, tmp_path_factory, data, edges, fmt, gz):
    n, s, d, w = edges
    rows = list(zip(s.tolist(), d.tolist(), w.tolist()))
    if fmt == "edgelist":
        text, name = "".join(f"{a} {b} {c}\n" for a, b, c in rows), "g.txt"
    elif fmt == "mtx":
        text = "%%MatrixMarket matrix coordinate integer general\n" + f"{n} {n} {len(rows)}\n" + \
            "".join(f"{a + 1} {b + 1} {c}\n" for a, b, c in rows)
        name = "g.mtx"
    else:
        text = f"p sp {n} {len(rows)}\n" + "".join(f"a {a + 1} {b + 1} {c}\n" for a, b, c in rows)
        name = "g.gr"
    raw = data.draw(corrupted(text.encode()))
    path = tmp_path_factory.mktemp("fuzz") / name
    if gz:
        import gzip

        path = path.with_name(name + ".gz")
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    _read_and_solve(path, client)


# ---------------------------------------------------------------------------
# binary formats and Parquet
# ---------------------------------------------------------------------------

ODD_VALUES = st.sampled_from([np.nan, np.inf, -np.inf, -1, 2**40, 2**63 - 1])


@st.composite
def odd_arrays(draw):
    """Edge columns of some dtype, now and then with a bad value put in."""
    n, s, d, w = draw(edge_lists(max_m=20, weights=draw(st.sampled_from(["int", "float"]))))
    wtype = draw(st.sampled_from([np.int64, np.int32, np.uint16, np.float64, np.float32, np.int8, np.bool_]))
    w = w.astype(wtype) if wtype is not np.bool_ else (w > 0)
    cols = {"src": s, "dst": d, "weight": w}
    if len(s) and draw(st.booleans()):
        col = draw(st.sampled_from(["src", "dst", "weight"]))
        at = draw(st.integers(0, len(s) - 1))
        value = draw(ODD_VALUES)
        arr = cols[col].astype(np.float64 if col == "weight" or not np.isfinite(value) else np.int64)
        arr[at] = value
        cols[col] = arr
    return n, cols


def _write(fmt, path, cols):
    if fmt == "npz":
        np.savez(path, **cols)
    elif fmt == "npy":
        path.mkdir()
        for k, v in cols.items():
            np.save(path / f"{k}.npy", v)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table(cols), path, row_group_size=7)


@FUZZ_RUNS
@given(case=odd_arrays(), fmt=st.sampled_from(["npz", "npy", "parquet"]))
def test_binary_columns_read_right_or_refused_naming_where(client, tmp_path_factory, case, fmt):
    n, cols = case
    path = tmp_path_factory.mktemp("fuzz") / {"npz": "g.npz", "npy": "g_npy", "parquet": "g.parquet"}[fmt]
    _write(fmt, path, cols)
    got = _read_and_solve(path, client, format=fmt, allow_empty=True)
    if got is not None:  # what was read is what was written
        for a, k in zip(got, ("src", "dst", "weight")):
            np.testing.assert_array_equal(a, cols[k].astype(a.dtype))


@FUZZ_RUNS
@given(data=st.data(), case=odd_arrays(), fmt=st.sampled_from(["npz", "parquet"]))
def test_corrupted_binary_files_read_right_or_refused(client, tmp_path_factory, data, case, fmt):
    n, cols = case
    path = tmp_path_factory.mktemp("fuzz") / f"g.{fmt}"
    _write(fmt, path, cols)
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    path.write_bytes(bytes(raw))
    _read_and_solve(path, client, format=fmt, allow_empty=True)


# ---------------------------------------------------------------------------
# the run-config parser
# ---------------------------------------------------------------------------

KEYS = ["graph", "input", "generate", "kind", "scale", "seed", "partitions", "stream", "output", "path", "format",
        "checkpoint", "resume", "cluster", "n_workers", "backend", "local_finish", "n_vertices", "placement",
        "throughput", "vertex_partition", "rows", "cols", "n", "m"]
LEAVES = (st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats(allow_nan=True)
          | st.sampled_from(["auto", "always", "never", "rmat", "grid", "cpu", "s3:/x", "", "npz", "ck"])
          | st.text(max_size=6))
CONFIGS = st.recursive(LEAVES, lambda inner: st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner,
                                                             max_size=4) | st.lists(inner, max_size=3), max_leaves=12)


@FUZZ
@given(raw=st.dictionaries(st.sampled_from(KEYS), CONFIGS, max_size=5))
def test_run_configs_are_valid_or_a_config_error_naming_the_key(raw):
    from mst_dist.cli.runconfig import validate_run_config

    try:
        cfg = validate_run_config(raw, source="fuzz.yaml", check_paths=False)
    except ConfigError as e:
        assert str(e).strip(), "an empty message"
        return
    assert isinstance(cfg, dict) and "graph" in cfg


@FUZZ
@given(text=st.text(string.printable, max_size=80))
def test_run_config_files_of_any_text(tmp_path_factory, text):
    from mst_dist.cli.runconfig import load_run_config

    path = tmp_path_factory.mktemp("fuzz") / "run.yaml"
    path.write_text(text)
    try:
        load_run_config(path)
    except ConfigError as e:
        assert "run.yaml" in str(e) or e.key, str(e)


# ---------------------------------------------------------------------------
# URLs and storage_options
# ---------------------------------------------------------------------------

SCHEMES = st.sampled_from(["s3", "gs", "gcs", "abfs", "memory", "file", "https", "s4", "c", "C", "x+y", "3d", ""])
PATHS = st.builds(lambda scheme, sep, rest: f"{scheme}{sep}{rest}", SCHEMES,
                  st.sampled_from(["://", ":/", ":", "", ":///", "//"]),
                  st.text(string.ascii_letters + string.digits + "/._-:", max_size=20))


@FUZZ
@given(path=PATHS | st.text(max_size=30), what=st.sampled_from(["checkpoint", "output", "path"]))
def test_a_path_is_local_a_known_url_or_refused_naming_the_protocols(path, what):
    try:
        checked = urls.check_path(path, what)
    except ConfigError as e:
        assert e.key == what and repr(path) in str(e) and "s3" in str(e)
        return
    assert checked == path
    if urls.is_url(path):  # a URL that passes names a protocol fsspec knows, written in full
        proto, rest = path.split("://", 1)
        assert proto.lower() in urls.known_protocols()


@FUZZ
@given(options=st.none() | st.dictionaries(st.text(max_size=5), LEAVES, max_size=3) | LEAVES
       | st.lists(LEAVES, max_size=2))
def test_storage_options_are_a_dict_or_refused(options):
    from mst_dist.engine.spec import RunSpec

    try:
        spec_ok = RunSpec.build(checkpoint="memory://fuzz/ck", storage_options=options)
    except ConfigError as e:
        assert not isinstance(options, dict) and "storage_options" in str(e)
        with pytest.raises(ConfigError, match="storage_options"):
            mst_dist.read("memory://fuzz/g.txt", storage_options=options)
        return
    assert options is None or isinstance(options, dict)
    assert spec_ok.storage_options == (None if options is None else dict(options))


@FUZZ_RUNS
@given(edges=edge_lists(max_m=12))
def test_text_behind_a_memory_url_reads_as_a_local_file(client, edges):
    """The same bytes behind ``memory://`` and on disk: the same graph and forest."""
    import fsspec

    n, s, d, w = edges
    text = "".join(f"{a} {b} {c}\n" for a, b, c in zip(s.tolist(), d.tolist(), w.tolist()))
    fs = fsspec.filesystem("memory")
    fs.pipe("/fuzz/g.txt", text.encode())
    g = mst_dist.read("memory://fuzz/g.txt", client=client, n_vertices=n, allow_empty=True)
    got = _solved_as_read(g, client)
    for a, b in zip(got, (s, d, w)):
        np.testing.assert_array_equal(a, b)


def test_a_damaged_parquet_page_is_a_format_error_naming_the_row_group(client, tmp_path):
    """What fuzzing found: a flipped byte in a row group's page header came out as pyarrow's OSError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": np.arange(50), "dst": np.arange(1, 51), "weight": np.arange(50)}), path,
                   row_group_size=10)
    raw = bytearray(path.read_bytes())
    raw[4] ^= 0xFF  # the first page header of row group 0
    path.write_bytes(bytes(raw))
    with pytest.raises(mst_dist.GraphFormatError, match=r"g\.parquet, row group 0: cannot be read \(OSError"):
        mst_dist.minimum_spanning_forest(mst_dist.read(path, client=client), client)


def test_a_vertex_id_whose_count_overflows_int64_is_named(client, tmp_path):
    """What fuzzing found: an id of 2**63 - 1 made the vertex count 2**63, an OverflowError from Numba."""
    path = tmp_path / "g.npz"
    np.savez(path, src=np.array([2**63 - 1, 0]), dst=np.array([0, 1]), weight=np.array([1, 2]))
    with pytest.raises(mst_dist.GraphFormatError, match=r"g\.npz: vertex id 9223372036854775807 is too large"):
        mst_dist.read(path, client=client)



@pytest.mark.parametrize("offset, value, said", [
    (8, 0x01, "is encrypted, password required"),  # the general-purpose flag's encryption bit
    (6, 64, "zip file version 6.4"),               # the version needed to extract
], ids=["encrypted-flag", "zip-version"])
def test_a_damaged_npz_directory_entry_is_a_format_error(tmp_path, offset, value, said):
    """What fuzzing found: one byte of a member's central-directory entry came out as zipfile's
    RuntimeError (a member flagged encrypted) or NotImplementedError (a zip version it lacks)."""
    path = tmp_path / "g.npz"
    np.savez(path, src=np.array([0, 1]), dst=np.array([1, 2]), weight=np.array([3, 4]))
    raw = bytearray(path.read_bytes())
    entry = [i for i in range(len(raw)) if raw[i:i + 4] == b"PK\x01\x02"][1]  # the 'dst.npy' member
    raw[entry + offset] = value
    path.write_bytes(bytes(raw))
    with pytest.raises(mst_dist.GraphFormatError, match=r"g\.npz: .*" + said):
        mst_dist.read(path, client=None)

SPEC_KEYS = ["partitions", "stream", "local_finish", "split_every", "light_factor", "min_degree", "throughput",
             "vertex_partition", "vertex_ranges", "vertex_base", "slice_edges", "local_contraction", "gather",
             "output", "checkpoint", "storage_options", "backend"]


@FUZZ
@given(kwargs=st.dictionaries(st.sampled_from(SPEC_KEYS), LEAVES | st.dictionaries(st.text(max_size=3), LEAVES,
                                                                                     max_size=2), max_size=4))
def test_entry_point_options_are_a_run_spec_or_a_config_error_naming_one(kwargs):
    """What ``minimum_spanning_forest(graph, **options)`` checks before any work: a spec, or a
    ConfigError whose key is one of the options given."""
    from mst_dist.engine.spec import RunSpec

    try:
        RunSpec.build(**kwargs)
    except ConfigError as e:
        assert e.key in kwargs or e.key in {"backend", "partitions"}, (e.key, str(e))

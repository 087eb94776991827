"""Object stores: reading graphs from ``s3://`` URLs and writing forests and labels there.

A real S3 API is served locally by moto's server (started here, on 127.0.0.1) and spoken to
through s3fs, exactly as a cluster in the cloud would: no mock of s3fs.  The workers are two
processes, which get the URLs and their ``storage_options`` pickled with the sources.
"""
import numpy as np
import pytest

import mst_dist
from support.naive import component_labels, kruskal
from support.objectstore import moto_s3
from support.oracle import assert_forest_file, assert_summary, expected

pytestmark = pytest.mark.processes

BUCKET = "graphs"


@pytest.fixture(scope="module")
def s3():
    """``(storage_options, s3fs file system)`` of a fresh bucket on a moto server of this process."""
    with moto_s3(BUCKET) as store:
        yield store


@pytest.fixture(scope="module")
def pclient():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="2GiB") as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def graph():
    g = mst_dist.generate("erdos_renyi", seed=9, n=2000, m=8000)
    s, d, w = g.to_arrays()
    exp, comps = kruskal(g.n_vertices, s, d, w)
    return (s, d, w), g.n_vertices, exp, comps


def _text(s, d, w):
    return "".join(f"{a} {b} {c}\n" for a, b, c in zip(s.tolist(), d.tolist(), w.tolist())).encode()


def test_read_text_and_parquet_from_s3(s3, pclient, graph):
    options, fs = s3
    (s, d, w), n, exp, _ = graph
    half = len(s) // 2
    fs.pipe(f"{BUCKET}/text/part-1.txt", _text(s[:half], d[:half], w[:half]))
    fs.pipe(f"{BUCKET}/text/part-2.txt", _text(s[half:], d[half:], w[half:]))
    g = mst_dist.read(f"s3://{BUCKET}/text/part-*.txt", storage_options=options, blocksize=16_384)
    assert g.n_edges == len(s)
    np.testing.assert_array_equal(mst_dist.minimum_spanning_forest(g, pclient, partitions=4).edge_ids, exp)

    import pyarrow as pa
    import pyarrow.parquet as pq

    with fs.open(f"{BUCKET}/pq/g.parquet", "wb") as f:
        pq.write_table(pa.table({"src": s, "dst": d, "weight": w}), f, row_group_size=1000)
    g = mst_dist.read(f"s3://{BUCKET}/pq/g.parquet", storage_options=options)
    assert g.n_edges == len(s)
    np.testing.assert_array_equal(mst_dist.minimum_spanning_forest(g, pclient, partitions=3).edge_ids, exp)


def test_missing_object(s3):
    options, _ = s3
    with pytest.raises(FileNotFoundError, match="no-such"):
        mst_dist.read(f"s3://{BUCKET}/no-such.txt", storage_options=options)


def test_output_and_labels_to_s3(s3, pclient, graph):
    options, fs = s3
    (s, d, w), n, exp, comps = graph
    g = mst_dist.Graph.from_arrays(s, d, w, n_vertices=n)
    fs.pipe(f"{BUCKET}/out/forest/stale.parquet", b"old")  # replaced, not mixed in
    res = mst_dist.minimum_spanning_forest(g, pclient, partitions=3, output=f"s3://{BUCKET}/out/forest",
                                           labels_output=f"s3://{BUCKET}/out/labels", storage_options=options)
    assert res.forest_edges == len(exp) and res.n_components == comps
    names = sorted(p.rsplit("/", 1)[1] for p in fs.find(f"{BUCKET}/out/forest"))
    assert names == [f"part.{i:05d}.parquet" for i in range(3)]
    import dask.dataframe as dd

    forest = dd.read_parquet(f"s3://{BUCKET}/out/forest", storage_options=options).compute()
    np.testing.assert_array_equal(forest["edge_id"].to_numpy(), exp)
    labels = dd.read_parquet(f"s3://{BUCKET}/out/labels", storage_options=options).compute()
    np.testing.assert_array_equal(labels["component"].to_numpy(), component_labels(n, s, d))
    # nothing temporary is left next to them
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"{BUCKET}/out")) == ["forest", "labels"]


def _fail_rows(start, stop):
    raise RuntimeError("this source cannot be read")


def test_failed_write_leaves_nothing(s3, pclient, graph, monkeypatch):
    options, fs = s3
    (s, d, w), n, exp, _ = graph
    from mst_dist.io import writers

    calls = []

    def broken(path, *parts):  # the second part fails after the first was written
        calls.append(path)
        if path.endswith("part.00001.parquet"):
            raise OSError("the store refused the part")
        return real(path, *parts)

    real = writers.write_forest_part
    monkeypatch.setattr(writers, "write_forest_part", broken)
    g = mst_dist.Graph.from_arrays(s, d, w, n_vertices=n)
    with pytest.raises(OSError, match="refused"):
        mst_dist.minimum_spanning_forest(g, pclient, partitions=3, output=f"s3://{BUCKET}/failed/forest",
                                         storage_options=options)
    fs.invalidate_cache()
    assert not fs.exists(f"{BUCKET}/failed/forest")
    assert [p for p in fs.find(f"{BUCKET}/failed") if ".tmp" in p] == []


def test_unwritable_bucket_refused_before_the_run(s3, graph):
    options, _ = s3
    (s, d, w), n, _, _ = graph
    with pytest.raises(PermissionError, match="output"):
        mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays(s, d, w), "embedded",
                                         output="s3://no-such-bucket/forest", storage_options=options)


def test_command_line_reads_a_url(s3, graph, tmp_path):
    """``mst-dist run --input s3://...``: the store's endpoint and keys from the environment, as s3fs reads them."""
    import json
    import os
    import subprocess
    import sys

    options, fs = s3
    (s, d, w), n, exp, _ = graph
    fs.pipe(f"{BUCKET}/cli/g.txt", _text(s, d, w))
    env = dict(os.environ, AWS_ACCESS_KEY_ID=options["key"], AWS_SECRET_ACCESS_KEY=options["secret"],
               AWS_DEFAULT_REGION=options["client_kwargs"]["region_name"],
               AWS_ENDPOINT_URL=options["client_kwargs"]["endpoint_url"])
    proc = subprocess.run([sys.executable, "-m", "mst_dist.cli", "run", "--input", f"s3://{BUCKET}/cli/g.txt",
                           "--json", "-o", "forest.npz"], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)["summary"]
    assert summary["edges"] == len(s)
    want = expected(n_vertices=n, src=s, dst=d, weight=w)
    assert_summary(summary, want)
    assert_forest_file(tmp_path / "forest.npz", want)  # the whole forest, by Kruskal


# ---------------------------------------------------------------------------
# checkpoints under an s3:// prefix
# ---------------------------------------------------------------------------

class Preempted(BaseException):
    """Stands for the signal that ends a job (raised from the progress callback, as Ctrl-C would be)."""


def _stop_at(**when):
    def progress(ev):
        if all(ev.get(k) == v for k, v in when.items()):
            raise Preempted(ev)
    return progress


def _names(fs, prefix):
    """Every name directly under ``prefix`` (objects and sub-prefixes, hidden ones included)."""
    fs.invalidate_cache()
    try:
        return sorted(p.rstrip("/").rsplit("/", 1)[1] for p in fs.ls(prefix, detail=False))
    except FileNotFoundError:
        return []


def _manifest(fs, prefix):
    import json

    from mst_dist.engine.checkpoint import MANIFEST

    fs.invalidate_cache()
    return json.loads(fs.cat_file(f"{prefix}/{MANIFEST}"))


def test_checkpoint_on_s3_stopped_after_round_2_and_resumed(s3, pclient):
    from mst_dist.engine.checkpoint import MANIFEST

    options, fs = s3
    g = mst_dist.generate("erdos_renyi", seed=9, n=2000, m=8000)
    exp, comps = kruskal(g.n_vertices, *g.to_arrays())
    ck, prefix = f"s3://{BUCKET}/ck/run1", f"{BUCKET}/ck/run1"
    opts = dict(partitions=3, local_finish=0, storage_options=options)
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, progress=_stop_at(phase="map", round=2), **opts)
    saved = _manifest(fs, prefix)
    assert saved["mode"] == "resident" and saved["round"] == 2 and not saved["complete"]
    # the manifest and the one state it names, whole; nothing temporary, no older state
    assert _names(fs, prefix) == [MANIFEST, saved["state"]]
    assert _names(fs, f"{prefix}/{saved['state']}") == ["forest.npy", "labels.npy"]
    assert _names(fs, f"{BUCKET}/ck") == ["run1"]  # no probe, no temporary prefix beside it

    # what a save killed part-way leaves under hidden names is removed by the next run
    fs.pipe(f"{prefix}/.state-000099.1a2b3c4d.tmp/labels.npy", b"half")
    fs.pipe(f"{prefix}/.{MANIFEST}.5e6f7a8b.tmp", b"{")
    events = []
    res = mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, progress=events.append, **opts)
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert res.n_components == comps
    assert res.stats.resumed_from == saved["round"] == 2
    rounds = [ev["round"] for ev in events if ev.get("phase") in ("map", "local")]
    assert rounds and min(rounds) == 2  # went on from the saved round, not from round 0
    assert _names(fs, prefix) == []  # a finished run removes its state, and nothing temporary is left
    assert _names(fs, f"{BUCKET}/ck") == []


def test_partitioned_checkpoint_on_s3_written_in_parts_by_the_workers(s3, pclient):
    """A partitioned run's state on an object store: each range of vertices' labels and each chunk's
    forest ids written by the worker that holds them, committed whole, and resumed to the same forest."""
    import dask

    options, fs = s3
    g = mst_dist.generate("erdos_renyi", seed=10, n=2000, m=6000)
    exp, comps = kruskal(g.n_vertices, *g.to_arrays())
    ck, prefix = f"s3://{BUCKET}/ck/part", f"{BUCKET}/ck/part"
    opts = dict(partitions=3, local_finish=0, storage_options=options, vertex_partition="always")
    with dask.config.set({"mst.vertex-base": 0, "mst.vertex-ranges": 4}):
        with pytest.raises(Preempted):
            mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, progress=_stop_at(phase="map", round=2),
                                             **opts)
        saved = _manifest(fs, prefix)
        assert saved["mode"] == "partitioned" and saved["round"] == 2 and saved["vertex_ranges"] == 4
        assert _names(fs, f"{prefix}/{saved['state']}") == sorted(
            [f"forest-{j}.npy" for j in range(3)] + [f"labels-{r}.npy" for r in range(4)])
        res = mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, **opts)
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert res.n_components == comps and res.stats.resumed_from == 2
    assert _names(fs, prefix) == []


def test_streamed_checkpoint_on_s3_resumes_after_a_pass(s3, pclient):
    options, fs = s3
    g = mst_dist.generate("rmat", seed=6, scale=11, edge_factor=8)
    exp, _ = kruskal(g.n_vertices, *g.to_arrays())
    ck, prefix = f"s3://{BUCKET}/ck/stream", f"{BUCKET}/ck/stream"
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, pclient, stream="always", checkpoint=ck, storage_options=options,
                                         progress=_stop_at(**{"pass": "pass 2"}))
    saved = _manifest(fs, prefix)
    assert saved["mode"] == "streaming" and saved["passes"] == 1 and saved["rows"]
    assert _names(fs, f"{prefix}/{saved['state']}") == sorted(
        ["forest.npy", "labels.npy", "rows-dst.npy", "rows-edge_id.npy", "rows-src.npy", "rows-weight.npy"])
    events = []
    res = mst_dist.minimum_spanning_forest(g, pclient, stream="always", checkpoint=ck, storage_options=options,
                                           progress=events.append)
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert res.stats.resumed_from is not None
    assert "pass 1" not in {ev.get("pass") for ev in events}  # the saved pass was not read again
    assert _names(fs, prefix) == []


def test_spread_streamed_checkpoint_on_s3_resumes_after_a_pass(s3, pclient):
    """A streaming run with its vertex map spread, checkpointed on S3: each range's labels and each chunk's
    forest ids and rows written by the workers under the prefix, and the resumed run Kruskal's forest."""
    import dask

    options, fs = s3
    rng = np.random.default_rng(9)
    n, m = 1500, 2000
    g = mst_dist.Graph.from_arrays(rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 50, m),
                                   n_vertices=n)
    want = expected(g)
    ck, prefix = f"s3://{BUCKET}/ck/spread", f"{BUCKET}/ck/spread"
    opts = dict(partitions=3, local_finish=0, vertex_partition="always", stream="always", storage_options=options)
    with dask.config.set({"mst.vertex-base": 300, "mst.vertex-ranges": 4, "mst.slice-edges": 700}):
        with pytest.raises(Preempted):
            mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, progress=_stop_at(**{"pass": "pass 2"}),
                                             **opts)
        saved = _manifest(fs, prefix)
        assert saved["mode"] == "spread-streaming" and saved["passes"] == 1 and saved["rows"]
        assert _names(fs, f"{prefix}/{saved['state']}") == sorted(
            [f"labels-{r}.npy" for r in range(4)] + [f"forest-{j}.npy" for j in range(3)] +
            [f"rows-{j}-{c}.npy" for j in range(3) for c in ("dst", "edge_id", "src", "weight")])
        events = []
        res = mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, progress=events.append, **opts)
    np.testing.assert_array_equal(res.edge_ids, want.edge_ids)
    np.testing.assert_array_equal(res.weight, want.weight)
    assert res.n_components == want.n_components and res.total_weight == want.total
    assert res.stats.kind == "spread-streaming" and res.stats.resumed_from is not None
    assert "pass 1" not in {ev.get("pass") for ev in events}  # the saved pass was not read again
    assert _names(fs, prefix) == []


def test_saved_rows_read_back_by_ranges_from_s3(s3, monkeypatch):
    """A large saved column is not read whole: a binary search of ranged reads finds the same rows."""
    from mst_dist.engine import checkpoint
    from mst_dist.io.urls import URL

    options, fs = s3
    rng = np.random.default_rng(3)
    eid = np.sort(rng.choice(100_000, 5000, replace=False)).astype(np.int64)
    src, dst = rng.integers(0, 900, 5000), rng.integers(0, 900, 5000)
    w = rng.random(5000)
    state = URL(f"s3://{BUCKET}/rows/state-000001", options)
    order = rng.permutation(5000)  # parts in any order: the state holds them sorted by edge id
    parts = [(eid[order[:2000]], src[order[:2000]], dst[order[:2000]], w[order[:2000]]),
             (eid[order[2000:]], src[order[2000:]], dst[order[2000:]], w[order[2000:]])]
    checkpoint.write_state(state, None, eid, *parts)
    np.testing.assert_array_equal(checkpoint.read_forest(state), eid)
    assert checkpoint.read_labels(state) is None  # none saved: the identity
    for lo, hi in [(0, 100_000), (eid[10], eid[4000]), (eid[10] + 1, eid[10] + 2), (200_000, 300_000)]:
        whole = checkpoint.read_rows(state, lo, hi, 900)
        monkeypatch.setattr(checkpoint, "WHOLE_READ_BYTES", 0)
        ranged = checkpoint.read_rows(state, lo, hi, 900)
        monkeypatch.undo()
        keep = (eid >= lo) & (eid < hi)
        for got in (whole, ranged):  # (edge_id, src, dst, weight)
            for col, want in zip(got, (eid, src, dst, w)):
                np.testing.assert_array_equal(col, want[keep])


def test_checkpoint_of_another_graph_on_s3_refused(s3, pclient):
    from mst_dist import CheckpointMismatchError

    options, fs = s3
    g = mst_dist.generate("erdos_renyi", seed=9, n=2000, m=8000)
    ck, prefix = f"s3://{BUCKET}/ck/run2", f"{BUCKET}/ck/run2"
    opts = dict(partitions=3, local_finish=0, storage_options=options)
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, progress=_stop_at(phase="map", round=1), **opts)
    saved = _manifest(fs, prefix)
    other = mst_dist.generate("erdos_renyi", seed=10, n=2000, m=8000)
    with pytest.raises(CheckpointMismatchError, match=r"another run \(graph sources") as e:
        mst_dist.minimum_spanning_forest(other, pclient, checkpoint=ck, **opts)
    assert ck in str(e.value) and "resume=False" in str(e.value)
    assert _manifest(fs, prefix) == saved  # refused, and left as it was
    assert _names(fs, prefix) == ["manifest.json", saved["state"]]
    res = mst_dist.minimum_spanning_forest(other, pclient, checkpoint=ck, resume=False, **opts)
    np.testing.assert_array_equal(res.edge_ids, kruskal(other.n_vertices, *other.to_arrays())[0])
    assert res.stats.resumed_from is None
    assert _names(fs, prefix) == []


def test_checkpoint_of_a_rewritten_object_refused(s3, pclient, graph):
    """An input object rewritten with the same size (same edges, other weights) no longer matches the
    saved state: the resumed run is refused, never run on the stale state."""
    from mst_dist import CheckpointMismatchError
    from mst_dist.engine.checkpoint import graph_fingerprint

    options, fs = s3
    (s, d, w), n, _, _ = graph
    heavier = np.where(w % 10 == 9, w - 1, w + 1)  # every weight changed, none gets another digit count
    assert len(_text(s, d, w)) == len(_text(s, d, heavier))
    fs.pipe(f"{BUCKET}/rw/g.txt", _text(s, d, w))
    url, ck = f"s3://{BUCKET}/rw/g.txt", f"s3://{BUCKET}/ck/rewritten"
    opts = dict(partitions=3, local_finish=0, storage_options=options)
    g = mst_dist.read(url, storage_options=options, n_vertices=n)
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, pclient, checkpoint=ck, progress=_stop_at(phase="map", round=1), **opts)
    saved = _manifest(fs, f"{BUCKET}/ck/rewritten")
    fs.pipe(f"{BUCKET}/rw/g.txt", _text(s, d, heavier))
    fs.invalidate_cache()
    again = mst_dist.read(url, storage_options=options, n_vertices=n)
    assert again.n_edges == g.n_edges and again.n_vertices == g.n_vertices
    assert graph_fingerprint(again)["sources"] != saved["graph"]["sources"]
    with pytest.raises(CheckpointMismatchError, match=r"graph sources") as e:
        mst_dist.minimum_spanning_forest(again, pclient, checkpoint=ck, **opts)
    assert ck in str(e.value)
    res = mst_dist.minimum_spanning_forest(again, pclient, checkpoint=ck, resume=False, **opts)
    np.testing.assert_array_equal(res.edge_ids, kruskal(n, s, d, heavier)[0])


def test_fingerprint_reads_the_store_not_just_the_size(s3):
    """The same object read twice has one fingerprint; a rewrite of the same length changes it (the
    store's ETag, and a checksum of sampled ranges), also for a file larger than the samples."""
    from mst_dist.engine import checkpoint
    from mst_dist.engine.checkpoint import graph_fingerprint

    options, fs = s3
    body = bytearray(_text(np.arange(40_000) % 997, np.arange(40_000) % 991 + 1, np.full(40_000, 5)))
    assert len(body) > 3 * checkpoint.SAMPLE_BYTES
    fs.pipe(f"{BUCKET}/fp/g.txt", bytes(body))
    url = f"s3://{BUCKET}/fp/g.txt"
    first = graph_fingerprint(mst_dist.read(url, storage_options=options))
    assert first == graph_fingerprint(mst_dist.read(url, storage_options=options))
    body[-2:-1] = b"6"  # the last edge's weight, in the sampled tail
    fs.pipe(f"{BUCKET}/fp/g.txt", bytes(body))
    fs.invalidate_cache()
    assert graph_fingerprint(mst_dist.read(url, storage_options=options))["sources"] != first["sources"]


def test_unwritable_checkpoint_bucket_refused_before_the_run(s3, graph):
    options, fs = s3
    (s, d, w), n, _, _ = graph
    events = []
    with pytest.raises(PermissionError, match=r"checkpoint 's3://no-such-bucket/ck': cannot write"):
        mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays(s, d, w), "embedded",
                                         checkpoint="s3://no-such-bucket/ck", storage_options=options,
                                         progress=events.append)
    assert events == []  # refused before any work
    fs.invalidate_cache()
    assert not fs.exists("no-such-bucket")  # and no bucket was made for it

"""The engine against the reference Kruskal: exact edge ids on every case and cluster shape."""
import os

import numpy as np
import pytest

import mst_dist
from support.cases import EngineCases
from support.naive import component_labels, kruskal
from support.oracle import assert_result, expected


class TestLocalSolve(EngineCases):
    """Default: the one-worker cluster finishes in a single task."""

    def run(self, g, request):
        return mst_dist.minimum_spanning_forest(g, request.getfixturevalue("client"))


class TestDistributedRounds(EngineCases):
    """Every round as Dask tasks (map, merge tree, contract), 7 chunks, fan-in 2."""

    def run(self, g, request):
        return mst_dist.minimum_spanning_forest(g, request.getfixturevalue("client"),
                                                partitions=7, local_finish=0, split_every=2)


class TestStreamed(EngineCases):
    """Streamed from the source in passes (sample, slices of the order), each slice solved locally."""

    def run(self, g, request):
        res = mst_dist.minimum_spanning_forest(g, request.getfixturevalue("client"), stream="always")
        assert res.stats.streamed and res.stats.passes[0].name == "sample"
        return res


class TestStreamedDistributed(EngineCases):
    """Streamed, every slice solved by distributed rounds over 5 chunks on two workers."""

    def run(self, g, request):
        return mst_dist.minimum_spanning_forest(g, request.getfixturevalue("client2"), stream="always",
                                                partitions=5, local_finish=0, split_every=2)


class TestTwoWorkers(EngineCases):
    """Two workers: chunks spread, distributed rounds, then a local finish part-way."""

    def run(self, g, request):
        return mst_dist.minimum_spanning_forest(g, request.getfixturevalue("client2"),
                                                partitions=3, local_finish=max(1, g.n_edges // 3))


@pytest.mark.parametrize("partitions", [1, 2, 3, 7, 16])
@pytest.mark.parametrize("local_finish", [0, "auto"])
def test_partition_counts_same_ids(client, partitions, local_finish):
    g = mst_dist.generate("rmat", seed=3, scale=11, edge_factor=8)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    res = mst_dist.minimum_spanning_forest(g, client, partitions=partitions, local_finish=local_finish)
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert res.stats.partitions >= partitions


def test_worker_counts_same_ids(client, client2):
    g = mst_dist.generate("erdos_renyi", seed=4, n=3000, m=20000)
    exp = expected(g)
    assert_result(mst_dist.minimum_spanning_forest(g, client, partitions=4, local_finish=0), exp)
    assert_result(mst_dist.minimum_spanning_forest(g, client2, partitions=4, local_finish=0), exp)
    assert_result(mst_dist.minimum_spanning_forest(g, client2), exp)


def test_embedded_default_cluster():
    """No client: an embedded cluster is started and used, without a dashboard, never the default client."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import logging, threading
        import distributed, mst_dist
        logging.basicConfig(level=logging.INFO)
        g = mst_dist.Graph.from_arrays([0, 1, 2], [1, 2, 0], [3, 1, 2])
        res = mst_dist.minimum_spanning_forest(g)
        assert res.edge_ids.tolist() == [1, 2], res.edge_ids
        try:
            distributed.get_client()
        except ValueError:
            print("no client left")
        print("threads", sorted(t.name for t in threading.enumerate() if 'Dask' in t.name or 'worker' in t.name.lower()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "no client left" in out.stdout  # the shared cluster's client is not the process's default
    assert "embedded Dask cluster: 1 worker(s)" in out.stderr  # logged once it started
    assert "dashboard at" not in out.stderr  # none unless mst.embedded.dashboard asks


def test_client_left_as_it_was(client):
    before = set(client.scheduler_info()["workers"])
    g = mst_dist.generate("grid", seed=1, rows=20, cols=20)
    mst_dist.minimum_spanning_forest(g, client, local_finish=0)
    assert set(client.scheduler_info()["workers"]) == before
    assert client.status == "running"
    assert not [k for k in client.futures if str(k).startswith("mst-")]


def test_stats_per_round_and_phase(client):
    g = mst_dist.generate("circulant", seed=2, n=5000, d=3)
    res = mst_dist.minimum_spanning_forest(g, client, partitions=4, local_finish=0)
    exp = expected(g)
    assert_result(res, exp)
    rounds = res.stats.rounds
    assert len(rounds) >= 2 and all(r.mode.startswith("distributed") for r in rounds)
    assert rounds[0].components_before == 5000 and rounds[-1].components_after == 0
    assert sum(r.forest_edges for r in rounds) == res.n_forest_edges == 4999
    for a, b in zip(rounds, rounds[1:]):
        assert b.components_before == a.components_after
        if a.mode == b.mode:  # a light pass's rounds see the light edges only
            assert b.edges_before == a.edges_after
    for r in rounds:
        assert set(r.phase_seconds) >= {"map", "merge", "contract"}
        assert r.wall_seconds >= sum(r.phase_seconds.values()) > 0
        assert r.bytes_moved == 0  # one worker: nothing crosses a worker boundary
    d = res.stats.to_dict()
    assert d["rounds"][0]["round"] == 0 and d["phase_totals"]["map"] > 0
    # one task finishing it: the local rounds are reported too
    res2 = mst_dist.minimum_spanning_forest(g, client)
    assert res2.stats.rounds and all(r.mode.startswith("local") for r in res2.stats.rounds)
    assert_result(res2, exp)


def test_progress_events(client):
    events = []
    g = mst_dist.generate("hypercube", seed=1, d=9)
    mst_dist.minimum_spanning_forest(g, client, local_finish=0, progress=events.append)
    phases = {e["phase"] for e in events}
    assert {"load", "map", "finish"} <= phases
    assert all({"round", "phase", "components", "edges", "elapsed"} <= set(e) for e in events)


def test_generated_graph_loads_on_workers(client):
    """A generator-backed graph is loaded by tasks (mst-load-...), not by the client."""
    g = mst_dist.generate("caveman", seed=9, g=30, k=7)
    assert not g.in_memory
    s, d, w = g.to_arrays()
    exp, comps = kruskal(g.n_vertices, s, d, w)
    res = mst_dist.minimum_spanning_forest(g, client, partitions=5, local_finish=0)
    np.testing.assert_array_equal(res.edge_ids, exp)
    np.testing.assert_array_equal(res.weight, w[exp])
    assert res.n_components == comps


def test_unknown_backend():
    g = mst_dist.Graph.from_arrays([0], [1], [1])
    with pytest.raises(ValueError, match="unknown backend 'fast'; choose one of"):
        mst_dist.minimum_spanning_forest(g, backend="fast")


def test_stream_forced_from_the_environment(client, environ, monkeypatch):
    """DASK_MST__STREAM=always streams any graph; the slices are real (several passes, few edges each)."""
    g = mst_dist.generate("erdos_renyi", n=3000, m=30000, seed=7)
    s, d, w = g.to_arrays()
    exp, comps = kruskal(g.n_vertices, s, d, w)
    environ(DASK_MST__STREAM="always")
    res = mst_dist.minimum_spanning_forest(g, client)
    monkeypatch.undo()
    mst_dist.config.refresh()
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert res.n_components == comps and res.stats.streamed
    names = [p.name for p in res.stats.passes]
    assert names[0] == "sample" and names[1:] == [f"pass {k}" for k in range(1, len(names))]
    assert len(names) >= 3  # a light slice, then the rest
    first = res.stats.passes[1]
    assert first.edges_read == g.n_edges and first.edges_kept < g.n_edges // 4  # ~1.5 n of 30k
    assert sum(p.edges_kept for p in res.stats.passes[1:]) < g.n_edges
    assert not mst_dist.minimum_spanning_forest(g, client).stats.streamed  # auto: small graphs stay resident


def test_config_refresh_never_leaves_the_configuration_empty(monkeypatch):
    """Another thread reading dask.config while it is re-read (an in-process worker's heartbeat, as in the
    run above) finds every key: Dask's own refresh empties it first, and such a worker closed on a KeyError."""
    import sys
    import threading

    import dask

    misses, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                dask.config.get("distributed.comm.retry.count")
            except KeyError as e:
                misses.append(e)

    monkeypatch.setenv("DASK_MST__STREAM", "always")
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns often: the window of an empty configuration shows
    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(500):
            mst_dist.config.refresh()
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(switch)
        monkeypatch.undo()
        mst_dist.config.refresh()
    assert not misses
    assert mst_dist.config.get("stream") == "auto"  # the environment re-read once more: back as it was


def test_stream_mode_checked():
    g = mst_dist.Graph.from_arrays([0], [1], [1])
    with pytest.raises(ValueError, match="unknown stream mode 'sometimes'; choose one of auto, always, never"):
        mst_dist.minimum_spanning_forest(g, stream="sometimes")


@pytest.mark.parametrize("stream", ["never", "always"])
@pytest.mark.parametrize("source", ["generated", "arrays"])
def test_output_dataset_written_by_the_workers(client2, tmp_path, stream, source):
    """output=: the forest rows as a Parquet dataset the workers write; the client gets counts only."""
    g = mst_dist.generate("rmat", scale=10, edge_factor=8, seed=4)
    if source == "arrays":
        g = mst_dist.Graph.from_arrays(*g.to_arrays(), n_vertices=g.n_vertices)
    s, d, w = g.to_arrays()
    exp, comps = kruskal(g.n_vertices, s, d, w)
    out, lab = tmp_path / "forest", tmp_path / "labels"
    res = mst_dist.minimum_spanning_forest(g, client2, partitions=3, stream=stream, output=out,
                                           labels_output=lab)
    assert res.edge_ids is None and res.labels is None and res.output == str(out)
    assert res.forest_edges == res.n_forest_edges == len(exp) and res.n_components == comps
    assert res.total_weight == int(w[exp].sum())
    parts = sorted(os.listdir(out))
    assert parts == [f"part.{i:05d}.parquet" for i in range(3)]
    ids, fs, fd, fw = mst_dist.read_forest(out)
    np.testing.assert_array_equal(ids, exp)
    np.testing.assert_array_equal(fs, s[exp])
    np.testing.assert_array_equal(fd, d[exp])
    np.testing.assert_array_equal(fw, w[exp])
    import pyarrow.parquet as pq

    t = pq.read_table(lab)
    np.testing.assert_array_equal(t.column("vertex").to_numpy(), np.arange(g.n_vertices))
    np.testing.assert_array_equal(t.column("component").to_numpy(), component_labels(g.n_vertices, s, d))
    assert sorted(os.listdir(tmp_path)) == ["forest", "labels"]  # no temporary left


def test_output_dataset_absent_after_a_failure(client, tmp_path, monkeypatch):
    """A part that fails to write leaves no dataset (and no temporary directory) behind, even where the
    other parts are still being written when it fails."""
    import time

    from mst_dist.io import writers

    real = writers.write_forest_part

    def flaky(path, *parts):
        if path.endswith("part.00001.parquet"):
            raise OSError("disk full (simulated)")
        time.sleep(0.5)  # the other parts end after the failure
        return real(path, *parts)

    monkeypatch.setattr(writers, "write_forest_part", flaky)
    g = mst_dist.generate("erdos_renyi", n=300, m=3000, seed=2)
    with pytest.raises(OSError, match="disk full"):
        mst_dist.minimum_spanning_forest(g, client, partitions=3, stream="always", output=tmp_path / "f")
    time.sleep(1.0)  # a part still being written would have landed by now
    assert os.listdir(tmp_path) == []

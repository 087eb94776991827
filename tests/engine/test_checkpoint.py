"""Checkpoints: a run stopped after round (or pass) k and run again goes on there, to the same forest.

A run is stopped the way Ctrl-C stops one: an exception that is not an
``Exception`` (``KeyboardInterrupt``'s kind) raised from the progress callback
when the driver announces the next step, after the checkpoint of the steps
before was saved.  The driver lets such an exception through; nothing else of
the run goes on.
"""
import json
import os

import numpy as np
import pytest

import mst_dist
from mst_dist import CheckpointMismatchError  # the top-level export
from mst_dist.engine.checkpoint import MANIFEST, graph_fingerprint
from support.cases import sorted_grid
from support.naive import kruskal
from support.oracle import assert_forest, assert_result, expected


class Preempted(BaseException):
    """Stands for the signal that ends a job."""


def stop_at(**when):
    """A progress callback raising :class:`Preempted` at the first event matching ``when``."""
    def progress(ev):
        if all(ev.get(k) == v for k, v in when.items()):
            raise Preempted(ev)
    return progress


def recorder(events):
    return lambda ev: events.append(dict(ev))


def manifest(path):
    with open(os.path.join(path, MANIFEST)) as f:
        return json.load(f)


def sparse_graph(seed=5, n=6000, m=5200):
    """Many components (some finish in the first rounds), integer weights with ties."""
    rng = np.random.default_rng(seed)
    return mst_dist.Graph.from_arrays(rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 50, m),
                                      n_vertices=n)


def reference(g):
    s, d, w = g.to_arrays()
    return kruskal(g.n_vertices, s, d, w)[0]


RESIDENT = {
    # graph, engine options, where the run is stopped, the rounds the checkpoint holds then
    "light-pass": (lambda: mst_dist.generate("rmat", seed=3, scale=11, edge_factor=8),
                   dict(partitions=5, local_finish=0, split_every=2), dict(phase="map", round=1), 1),
    "no-light-pass": (lambda: mst_dist.generate("rmat", seed=4, scale=11, edge_factor=8),
                      dict(partitions=4, local_finish=0, light_factor=0), dict(phase="map", round=3), 3),
    "finished-components": (sparse_graph, dict(partitions=3, local_finish=0), dict(phase="map", round=2), 2),
    "before-local-finish": (sparse_graph, dict(partitions=3, local_finish=1500), dict(phase="local"), None),
    "during-assembly": (lambda: mst_dist.generate("grid", rows=40, cols=50, seed=2),
                        dict(partitions=3, local_finish=0), dict(phase="finish"), None),
}


@pytest.mark.parametrize("case", list(RESIDENT))
def test_resident_run_stopped_and_resumed_same_forest(client2, tmp_path, case):
    make, opts, when, held = RESIDENT[case]
    g = make()
    exp = expected(g)
    full = mst_dist.minimum_spanning_forest(g, client2, **opts)
    assert_result(full, exp)
    ck = str(tmp_path / "ck")
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, progress=stop_at(**when), **opts)
    saved = manifest(ck)
    assert saved["mode"] == "resident"
    if held is not None:
        assert saved["round"] == held
    assert saved["round"] >= 1 and saved["complete"] == (when["phase"] == "finish")
    assert sorted(os.listdir(ck)) == [MANIFEST, saved["state"]]  # the older states are gone

    events = []
    res = mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, progress=recorder(events), **opts)
    assert_result(res, exp)  # ids, endpoints, weights, total, components, labels: the naive ones
    assert res.stats.resumed_from == saved["round"]
    rounds = [ev["round"] for ev in events if ev["phase"] in ("map", "local")]
    if saved["complete"]:
        assert rounds == []  # nothing left to solve
    else:
        assert min(rounds) == saved["round"]  # went on from the saved round, not from round 0
    assert not os.path.exists(os.path.join(ck, MANIFEST))  # a finished run leaves no state


STREAMED = {
    "local-solves": (lambda: mst_dist.generate("rmat", seed=6, scale=11, edge_factor=8), {}),
    "distributed-solves": (lambda: mst_dist.generate("rmat", seed=7, scale=11, edge_factor=8),
                           dict(partitions=5, local_finish=0, split_every=2)),
    "arrays": (lambda: mst_dist.Graph.from_arrays(*mst_dist.generate("rmat", seed=8, scale=10,
                                                                        edge_factor=8).to_arrays()), {}),
}


@pytest.mark.parametrize("case", list(STREAMED))
def test_streamed_run_stopped_after_a_pass_and_resumed(client2, tmp_path, case):
    make, opts = STREAMED[case]
    g = make()
    full = mst_dist.minimum_spanning_forest(g, client2, stream="always", output=tmp_path / "full", **opts)
    assert len(full.stats.passes) >= 3  # the sample and two passes at least
    ck = tmp_path / "ck"
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, client2, stream="always", checkpoint=ck,
                                         progress=stop_at(**{"pass": "pass 2"}), **opts)
    saved = manifest(ck)
    assert saved["mode"] == "streaming" and saved["passes"] == 1 and not saved["complete"]
    assert saved["threshold"] is not None and saved["rows"]
    if case == "local-solves":  # the name earlier saves of this release gave the kind: it resumes all the same
        with open(os.path.join(ck, MANIFEST), "w") as f:
            json.dump({**saved, "mode": "stream"}, f)

    events = []
    res = mst_dist.minimum_spanning_forest(g, client2, stream="always", checkpoint=ck,
                                           progress=recorder(events), **opts)
    exp = expected(g)
    assert_result(res, exp)
    assert "pass 1" not in {ev.get("pass") for ev in events}  # the first pass was not read again
    assert [p.name for p in res.stats.passes][1:2] == ["pass 2"]
    # the forest's rows of the saved pass come from the checkpoint: the dataset is the same
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, client2, stream="always", checkpoint=ck,
                                         progress=stop_at(**{"pass": "pass 2"}), **opts)
    out = mst_dist.minimum_spanning_forest(g, client2, stream="always", checkpoint=ck,
                                           output=tmp_path / "resumed", **opts)
    assert_forest(exp, *mst_dist.read_forest(tmp_path / "full"))  # edge_id, src, dst, weight
    assert_forest(exp, *mst_dist.read_forest(tmp_path / "resumed"))
    assert out.stats.resumed_from is not None


SPREAD = {
    # where the run is stopped, the passes the checkpoint holds then
    "after-pass-1": (dict(**{"pass": "pass 2"}), 1),
    "after-pass-2": (dict(**{"pass": "pass 3"}), 2),
    "after-the-last-pass": (dict(phase="finish"), None),
}


@pytest.mark.parametrize("case", list(SPREAD))
def test_spread_streamed_run_stopped_after_a_pass_and_resumed(client2, tmp_path, case):
    """A streaming run with its vertex map spread saves each pass as it holds it (labels per range of
    vertices, forest ids and rows per chunk) and goes on with the next pass: the same ids, rows, labels and
    components as Kruskal."""
    import dask

    when, held = SPREAD[case]
    g = sparse_graph(seed=9, n=1500, m=2000)
    exp = expected(g)
    opts = dict(partitions=3, local_finish=0, vertex_partition="always", stream="always")
    ck = str(tmp_path / "ck")
    # each pass partitioned until 300 components are left (then the base case)
    settings = {"mst.vertex-base": 300, "mst.vertex-ranges": 4, "mst.slice-edges": 700}
    with dask.config.set(settings):
        with pytest.raises(Preempted):
            mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, progress=stop_at(**when), **opts)
        saved = manifest(ck)
        assert saved["mode"] == "spread-streaming" and saved["rows"]
        assert saved["passes"] == held if held else saved["complete"] and saved["threshold"] is None
        assert saved["vertex_ranges"] == 4 and len(saved["chunk_bounds"]) == 4
        state = sorted(os.listdir(os.path.join(ck, saved["state"])))
        assert state == sorted([f"labels-{r}.npy" for r in range(4)] + [f"forest-{j}.npy" for j in range(3)] +
                               [f"rows-{j}-{c}.npy" for j in range(3) for c in ("edge_id", "src", "dst", "weight")])
        events = []
        res = mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, progress=recorder(events), **opts)
    assert_result(res, exp)  # the rows of the saved passes are the checkpoint's
    assert res.stats.kind == "spread-streaming" and res.stats.resumed_from == saved["round"]
    if held == 1:  # the passes after the first still start with more components than the base case takes
        assert "partitioned" in {r.mode for r in res.stats.rounds}
    read = {ev.get("pass") for ev in events}
    assert not read & {f"pass {k}" for k in range(1, saved["passes"] + 1)}  # the saved passes were not read again
    if saved["complete"]:
        assert not any(p.startswith("pass") for p in read if p)
    assert not os.path.exists(os.path.join(ck, MANIFEST))


def test_another_graph_or_options_refused_until_told_to_start_over(client2, tmp_path):
    g = mst_dist.generate("rmat", seed=3, scale=10, edge_factor=8)
    ck = tmp_path / "ck"
    opts = dict(partitions=3, local_finish=0)
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, progress=stop_at(phase="map", round=2), **opts)
    other = mst_dist.generate("rmat", seed=4, scale=10, edge_factor=8)
    with pytest.raises(CheckpointMismatchError, match=r"another run \(graph sources") as e:
        mst_dist.minimum_spanning_forest(other, client2, checkpoint=ck, **opts)
    assert "resume=False" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(CheckpointMismatchError, match="options partitions: 3 there, 4 here"):
        mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, partitions=4, local_finish=0)
    assert manifest(ck)["round"] == 2  # refused, and left as it was
    res = mst_dist.minimum_spanning_forest(other, client2, checkpoint=ck, resume=False, **opts)
    assert_result(res, expected(other))
    assert res.stats.resumed_from is None


@pytest.mark.parametrize("text", ["{not json", '{"format": "something else"}'])
def test_a_file_not_ours_is_refused_and_left_alone(client, tmp_path, text):
    (tmp_path / MANIFEST).write_text(text)
    g = mst_dist.generate("grid", rows=4, cols=5)
    for resume in (True, False):
        with pytest.raises(CheckpointMismatchError, match="is not an mst-dist checkpoint manifest"):
            mst_dist.minimum_spanning_forest(g, client, checkpoint=tmp_path, resume=resume)
    assert (tmp_path / MANIFEST).read_text() == text


def test_what_a_kill_while_saving_leaves_is_cleared(client, tmp_path):
    """A run killed while a worker wrote a state leaves a hidden half-written directory (and maybe
    a manifest's temporary file); the next run on the directory removes them."""
    g = mst_dist.generate("grid", rows=30, cols=30, seed=1)
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, client, checkpoint=tmp_path, local_finish=0,
                                         progress=stop_at(phase="map", round=2))
    saved = manifest(tmp_path)
    (tmp_path / ".state-000099.1a2b3c4d.tmp").mkdir()
    (tmp_path / ".state-000099.1a2b3c4d.tmp" / "labels.npy").write_bytes(b"half")
    (tmp_path / f".{MANIFEST}.5e6f7a8b.tmp").write_text("{")
    res = mst_dist.minimum_spanning_forest(g, client, checkpoint=tmp_path, local_finish=0)
    assert res.stats.resumed_from == saved["round"]
    np.testing.assert_array_equal(res.edge_ids, reference(g))
    assert os.listdir(tmp_path) == []


def test_fingerprint_follows_the_graph(tmp_path):
    a = graph_fingerprint(mst_dist.generate("rmat", seed=1, scale=8))
    assert a == graph_fingerprint(mst_dist.generate("rmat", seed=1, scale=8))
    assert a["sources"] != graph_fingerprint(mst_dist.generate("rmat", seed=2, scale=8))["sources"]
    s, d, w = np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0])
    b = graph_fingerprint(mst_dist.Graph.from_arrays(s, d, w))
    assert b == graph_fingerprint(mst_dist.Graph.from_arrays(s.copy(), d.copy(), w.copy()))
    assert b != graph_fingerprint(mst_dist.Graph.from_arrays(s, d, np.array([1.0, 3.0])))
    path = tmp_path / "g.txt"
    path.write_text("0 1 1\n1 2 2\n")
    c = graph_fingerprint(mst_dist.read(path))
    path.write_text("0 1 1\n1 2 3\n")  # same size, rewritten
    os.utime(path, ns=(1, 1))
    assert c["sources"] != graph_fingerprint(mst_dist.read(path))["sources"]


@pytest.mark.slow
def test_fingerprint_is_the_same_in_another_process(tmp_path):
    """A job started again is another process: the fingerprint must not depend on it."""
    import subprocess
    import sys

    from support.cli import cli_env

    (tmp_path / "g.txt").write_text("0 1 1\n1 2 2\n2 0 5\n")
    code = f"""
import json, numpy as np, mst_dist
from mst_dist.engine.checkpoint import graph_fingerprint
gs = [mst_dist.generate("rmat", seed=1, scale=8), mst_dist.read({str(tmp_path / "g.txt")!r}),
      mst_dist.Graph.from_arrays(np.arange(5), np.arange(1, 6), np.linspace(0, 1, 5))]
print(json.dumps([graph_fingerprint(g) for g in gs]))
"""
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(),
                           timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    mine = [graph_fingerprint(mst_dist.generate("rmat", seed=1, scale=8)),
            graph_fingerprint(mst_dist.read(tmp_path / "g.txt")),
            graph_fingerprint(mst_dist.Graph.from_arrays(np.arange(5), np.arange(1, 6), np.linspace(0, 1, 5)))]
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout) == mine


PARTITIONED = {
    # graph, ranges, components the centralised base case takes, where the run is stopped
    "partitioned-rounds": (sparse_graph, 4, 0, dict(phase="map", round=2)),
    "into-the-base-case": (lambda: mst_dist.generate("rmat", seed=3, scale=10, edge_factor=8), 5, 300,
                           dict(phase="map", round=1)),
    "grid": (lambda: mst_dist.generate("grid", rows=30, cols=40, seed=2), 3, 0, dict(phase="map", round=3)),
    # edges sorted by source: local contraction is round 0, saved before the first partitioned round
    "after-local-contraction": (lambda: mst_dist.Graph.from_arrays(*sorted_grid(30, 40)[1:], n_vertices=1200), 3, 0,
                                dict(phase="map", round=1)),
    # stopped as the forest is assembled: the state is the last partitioned round's, no edge left
    "after-the-last-round": (sparse_graph, 4, 0, dict(phase="finish")),
}


@pytest.mark.parametrize("case", list(PARTITIONED))
def test_partitioned_run_stopped_and_resumed_same_forest(client2, tmp_path, case):
    """A partitioned run saves each round as it holds it (labels per range of vertices, forest ids per
    chunk) and goes on from there: same ids, rows, labels and components as Kruskal."""
    import dask

    make, ranges, base, when = PARTITIONED[case]
    g = make()
    exp = expected(g)
    opts = dict(partitions=3, local_finish=0, vertex_partition="always")
    ck = str(tmp_path / "ck")
    with dask.config.set({"mst.vertex-base": base, "mst.vertex-ranges": ranges}):
        with pytest.raises(Preempted):
            mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, progress=stop_at(**when), **opts)
        saved = manifest(ck)
        last = when["phase"] == "finish"
        assert saved["mode"] == "partitioned"
        assert (saved["edges_left"] == 0) == last
        assert saved["round"] == when.get("round", saved["round"]) and saved["round"] >= 1
        assert saved["vertex_ranges"] == ranges and len(saved["chunk_bounds"]) == 4
        state = sorted(os.listdir(os.path.join(ck, saved["state"])))
        assert state == sorted([f"labels-{r}.npy" for r in range(ranges)] + [f"forest-{j}.npy" for j in range(3)])
        events = []
        res = mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, progress=recorder(events), **opts)
    assert_result(res, exp)
    assert res.stats.resumed_from == saved["round"]
    rounds = [ev["round"] for ev in events if ev["phase"] in ("map", "local")]
    if last:  # no partitioned round left to run: what is left of the forest is the base case's
        assert "partitioned" not in {r.mode for r in res.stats.rounds}
    else:
        assert min(rounds) == saved["round"] and res.stats.rounds[0].round == saved["round"]
    assert not os.path.exists(os.path.join(ck, MANIFEST))


def test_partitioned_resume_with_another_range_count(client2, tmp_path):
    """The labels are read back by the ranges of vertices they were saved in, whatever the range count of
    the run that goes on."""
    import dask

    g = sparse_graph(seed=8)
    exp = expected(g)
    ck = str(tmp_path / "ck")
    with dask.config.set({"mst.vertex-base": 0, "mst.vertex-ranges": 4}):
        with pytest.raises(Preempted):
            mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, partitions=3, local_finish=0,
                                             vertex_partition="always", progress=stop_at(phase="map", round=2))
    with dask.config.set({"mst.vertex-base": 0, "mst.vertex-ranges": 7}):
        res = mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, partitions=3, local_finish=0,
                                               vertex_partition="always", resume=True)
    assert_result(res, exp)
    assert res.stats.resumed_from == 2


def test_saved_forest_parts_are_cut_again_by_the_chunks_of_now(tmp_path):
    """A chunk of the resumed run takes the saved forest ids of its edge id range from every saved part."""
    from mst_dist.engine import checkpoint
    from mst_dist.engine.ranged import Block

    saved_bounds = [0, 10, 20, 30]
    ids = np.array([1, 4, 9, 10, 15, 19, 22, 29])
    for j in range(3):
        mine = ids[(ids >= saved_bounds[j]) & (ids < saved_bounds[j + 1])]
        checkpoint.write_forest_part(str(tmp_path), j, (Block(None, [mine[::-1][:1], np.sort(mine[::-1][1:])]), None))
    for lo, hi in [(0, 30), (5, 25), (10, 20), (29, 30), (30, 40)]:
        got = checkpoint.read_forest_part(str(tmp_path), saved_bounds, lo, hi)
        assert got.tolist() == [i for i in ids.tolist() if lo <= i < hi]


# ---------------------------------------------------------------------------
# failure paths: a save that fails part-way, another version, a missing state
# ---------------------------------------------------------------------------

#: Each kind of run: the file of its second save to fail, the settings and options that make the kind,
#: the files of a whole state.
FAILING_SAVES = {
    "resident": ("labels.npy", {}, dict(partitions=3, local_finish=0), ["forest.npy", "labels.npy"]),
    "partitioned": ("labels-2.npy", {"mst.vertex-base": 0, "mst.vertex-ranges": 4},
                    dict(partitions=3, local_finish=0, vertex_partition="always"),
                    [f"labels-{r}.npy" for r in range(4)] + [f"forest-{j}.npy" for j in range(3)]),
}


@pytest.mark.parametrize("kind", list(FAILING_SAVES))
def test_a_part_that_fails_to_write_leaves_the_last_whole_state(client2, tmp_path, monkeypatch, kind):
    """A save one of whose files cannot be written (for a partitioned run, the third range's labels only)
    fails the run with the writer's error; the manifest still names the state saved before, whole,
    nothing half-written is left beside it, and the next run goes on from it to Kruskal's forest."""
    import dask

    from mst_dist.engine import checkpoint

    failing, settings, opts, files = FAILING_SAVES[kind]
    g = sparse_graph(seed=11, n=3000, m=2600)
    real, states = checkpoint._save, []

    def broken(directory, name, a):
        if str(directory) not in states:
            states.append(str(directory))
        if name == failing and states.index(str(directory)) == 1:
            raise OSError(f"the disk refused {name} of the second save")
        return real(directory, name, a)

    ck = tmp_path / "ck"
    with dask.config.set(settings):
        monkeypatch.setattr(checkpoint, "_save", broken)
        with pytest.raises(OSError, match=f"refused {failing} of the second save"):
            mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, **opts)
        monkeypatch.undo()
        saved = manifest(ck)
        assert saved["saves"] == 1 and not saved["complete"]
        assert sorted(os.listdir(ck)) == [MANIFEST, saved["state"]]  # no hidden half-written state
        assert sorted(os.listdir(ck / saved["state"])) == sorted(files)
        res = mst_dist.minimum_spanning_forest(g, client2, checkpoint=ck, **opts)
    assert_result(res, expected(g))
    assert res.stats.resumed_from == saved["round"]


def _stopped(client, ck, g, **opts):
    with pytest.raises(Preempted):
        mst_dist.minimum_spanning_forest(g, client, checkpoint=ck, progress=stop_at(phase="map", round=2), **opts)
    return manifest(ck)


def test_a_checkpoint_of_another_version_is_refused_unless_started_over(client, tmp_path):
    g = mst_dist.generate("grid", rows=30, cols=30, seed=4)
    saved = _stopped(client, tmp_path, g, local_finish=0)
    (tmp_path / MANIFEST).write_text(json.dumps({**saved, "version": 99}))
    with pytest.raises(CheckpointMismatchError, match=r"written by another version of mst-dist \(format 99, "
                                                      r"this one reads 1\); start over with resume=False") as e:
        mst_dist.minimum_spanning_forest(g, client, checkpoint=tmp_path, local_finish=0)
    assert str(tmp_path) in str(e.value)
    assert json.loads((tmp_path / MANIFEST).read_text())["version"] == 99  # refused, and left as it was
    res = mst_dist.minimum_spanning_forest(g, client, checkpoint=tmp_path, local_finish=0, resume=False)
    assert_result(res, expected(g))
    assert res.stats.resumed_from is None and os.listdir(tmp_path) == []


def test_a_manifest_whose_state_is_missing_is_refused(client, tmp_path):
    import shutil

    g = mst_dist.generate("grid", rows=30, cols=30, seed=5)
    saved = _stopped(client, tmp_path, g, local_finish=0)
    shutil.rmtree(tmp_path / saved["state"])
    with pytest.raises(CheckpointMismatchError, match=rf"its manifest names '{saved['state']}', which is missing"):
        mst_dist.minimum_spanning_forest(g, client, checkpoint=tmp_path, local_finish=0)
    res = mst_dist.minimum_spanning_forest(g, client, checkpoint=tmp_path, local_finish=0, resume=False)
    assert_result(res, expected(g))

"""Partitioned runs: the per-vertex state cut into ranges of component ids, owned by tasks.

Every check is against the Kruskal oracle (edge ids, rows, total, components, labels), with the
partitioned rounds forced (``vertex_partition="always"``, ``mst.vertex-base: 0``) on small graphs.
"""
import os
import signal
import threading

import dask
import numpy as np
import pytest

import mst_dist
from mst_dist.engine.runs import choose_kind
from mst_dist.engine.spec import RunSpec
from mst_dist.errors import ConfigError, InvalidGraphError
from support.cases import ALL, HAND, check
from support.held import Held
from support.layouts import layout as _layout
from support.naive import kruskal
from support.oracle import assert_result, check_kept_per_range, check_written_per_range, expected


def partitioned(g, client, ranges=5, base=0, **kw):
    with dask.config.set({"mst.vertex-base": base, "mst.vertex-ranges": ranges}):
        res = mst_dist.minimum_spanning_forest(g, client, vertex_partition="always", **kw)
    vp = res.stats.vertex_partition
    assert (vp["ranges"], vp["base_components"]) == (ranges, base)
    if g.n_edges and base == 0 and kw.get("local_finish") == 0:
        assert res.stats.rounds[0].mode == ("local-contraction" if vp["local_contraction"] else "partitioned")
    return res


#: The cases a partitioned run is checked on: every hand case, and graphs of several families
#: (many components, a grid, R-MAT, float weights).  Each partitioned round is a few hundred small
#: tasks, so the families are fewer than the resident runs' (which are checked on all of them).
CASES = [c for c in ALL if c[0] in {h[0] for h in HAND} | {"erdos_renyi-1", "grid-6", "rmat-7", "erdos_renyi-float"}]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_partitioned_rounds(client2, case):
    """Every round partitioned: 3 ranges, 3 chunks, fan-in 2, two workers."""
    name, n, src, dst, w = case
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    check(partitioned(g, client2, ranges=3, partitions=3, local_finish=0, split_every=2), n, src, dst, w)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_partitioned_rounds_with_sparse_pointers(client2, case, monkeypatch):
    """Every range's pointers kept over its components present only (as where a round touches few of
    them), the absent ones finished: the same forest and labels."""
    from mst_dist.kernels import vertex_ranges

    monkeypatch.setattr(vertex_ranges, "SPARSE", 0)
    name, n, src, dst, w = case
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    check(partitioned(g, client2, ranges=3, partitions=3, local_finish=0, split_every=2), n, src, dst, w)


@pytest.mark.processes
@pytest.mark.parametrize("case", [c for c in ALL if c[0] in ("wikipedia", "int64-extremes", "erdos_renyi-1")],
                         ids=lambda c: c[0])
def test_partitioned_on_processes(pclient, case):
    """Two worker processes: candidates, requests and answers pickled between them."""
    name, n, src, dst, w = case
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    check(partitioned(g, pclient, ranges=3, partitions=3, local_finish=0), n, src, dst, w)


@pytest.mark.parametrize("case,ranges,base,partitions", [
    ("rmat-7", 1, 0, 1),            # one range: the exchanges talk to one owner
    ("wikipedia", 16, 0, 2),        # more ranges than components
    ("rmat-7", 4, 40, 3),           # the centralised rounds take over midway
    ("disconnected", 3, 10**9, 2),  # the base case at once
    # 32 ranges: a worker's owners bundled two by two (25 ids a range, 300 of them isolated: finished
    # in the first round; a graph of few rounds, as each round of 32 ranges is a thousand tasks)
    ("circulant-2", 32, 0, 3),
], ids=["one-range", "more-ranges-than-components", "base-case-midway", "base-at-once", "owners-grouped"])
def test_range_counts_and_base_case(client2, case, ranges, base, partitions):
    name, n, src, dst, w = next(c for c in ALL if c[0] == case)
    if ranges == 32:
        n += 300
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    res = partitioned(g, client2, ranges=ranges, base=base, partitions=partitions, local_finish=0)
    check(res, n, src, dst, w)
    modes = {r.mode for r in res.stats.rounds}
    assert bool(modes & {"partitioned", "local-contraction"}) == (base < n)
    if 0 < base < n:  # partitioned rounds, then the centralised ones
        assert modes - {"partitioned", "local-contraction"}


@pytest.mark.parametrize("contraction", ["auto", "never", "always"])
@pytest.mark.parametrize("case", ["erdos_renyi-1", "grid-6", "rmat-7"])
def test_straight_to_the_base_case(client2, case, contraction):
    """Edges that fit one worker from the start: the base case solves them over the original vertex ids
    and numbers the labels itself (no exchange of finished ids), whether the chunks were probed, loaded
    as they are, or looked at for interior vertices first."""
    name, n, src, dst, w = next(c for c in ALL if c[0] == case)
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    with dask.config.set({"mst.local-contraction": contraction}):
        res = partitioned(g, client2, ranges=3, partitions=3)
    check(res, n, src, dst, w)
    if not res.stats.vertex_partition.get("local_contraction"):  # no round before the base case: the shortcut ran
        assert not {r.mode for r in res.stats.rounds} & {"partitioned", "local-contraction"}


@pytest.mark.parametrize("gather", [True, False])
def test_straight_to_the_base_case_outputs(client2, tmp_path, gather):
    """The labels the base case numbered reach every output: written per range, kept on the workers."""
    g = mst_dist.generate("erdos_renyi", seed=7, n=3000, m=4000)
    with dask.config.set({"mst.local-contraction": "never"}):
        if gather:
            res = partitioned(g, client2, ranges=4, partitions=3, output=tmp_path / "forest",
                              labels_output=tmp_path / "labels")
            check_written_per_range(res, g, tmp_path / "forest", tmp_path / "labels", 4)
        else:
            res = partitioned(g, client2, ranges=4, partitions=3, gather=False)
            try:
                check_kept_per_range(client2, res, g, chunks=3, ranges=4)
            finally:
                res.kept.release()
    assert not {r.mode for r in res.stats.rounds} & {"partitioned", "local-contraction"}


def test_outputs_written_per_range(client2, tmp_path):
    """With output= and labels_output= the workers write the forest per chunk and the labels per range."""
    g = mst_dist.generate("erdos_renyi", seed=7, n=3000, m=4000)
    res = partitioned(g, client2, ranges=4, partitions=3, local_finish=0, output=tmp_path / "forest",
                      labels_output=tmp_path / "labels")
    check_written_per_range(res, g, tmp_path / "forest", tmp_path / "labels", 4)


def test_kept_on_the_workers(client2):
    """gather=False: each chunk's forest rows and each range's labels stay where they were computed."""
    g = mst_dist.generate("erdos_renyi", seed=11, n=2500, m=3500)  # many components
    res = partitioned(g, client2, ranges=4, partitions=3, local_finish=0, gather=False)
    try:
        check_kept_per_range(client2, res, g, chunks=3, ranges=4)
    finally:
        res.kept.release()


def test_default_ranges_follow_the_workers_memory(client2):
    """Without ``mst.vertex-ranges``: one range per worker thread (one per chunk where the workers'
    memory is not known) while each keeps 2**16 components, at least two, and more where a range's share
    of the per-vertex state would be over a sixteenth of the smallest worker."""
    from mst_dist.engine.runs.ranged_rounds import default_ranges

    assert default_ranges(2**27, 8, 2**30, 128) == 64 and default_ranges(2**25, 8, 2**30, 128) == 16
    assert default_ranges(2**25 + 1, 8, 2**30, 128) == 17 and default_ranges(2**20, 8, 2**30, 128) == 8
    assert default_ranges(2**18, 8, 2**30, 128) == 4 and default_ranges(2**18 + 1, 8, 2**30, 128) == 5
    assert default_ranges(1000, 8, 2**30, 128) == 2 and default_ranges(1000, 1, 2**30, 1) == 2
    assert default_ranges(2**20, 3, 0, 12) == 12 and default_ranges(2**20, 3, 0, 40) == 16
    assert default_ranges(1000, 3, 0, 12) == 2
    g = mst_dist.generate("erdos_renyi", seed=4, n=3000, m=6000)
    src, dst, w = g.to_arrays()
    with dask.config.set({"mst.vertex-base": 0}):
        res = mst_dist.minimum_spanning_forest(g, client2, vertex_partition="always", partitions=6, local_finish=0)
    check(res, g.n_vertices, src, dst, w)
    workers = client2.scheduler_info()["workers"].values()
    threads = sum(wk["nthreads"] for wk in workers)
    assert threads >= 2 and res.stats.vertex_partition["ranges"] == 2  # 3000 vertices: two ranges of 1500


def test_a_rounds_ranges_follow_its_components(client2, monkeypatch):
    """Without ``mst.vertex-ranges`` each partitioned round cuts its components into ``default_ranges``
    of their count (each range is a handful of tasks in every exchange): fewer ranges as the rounds
    contract.  The sixteenth of a worker made far smaller, so that 3000 vertices take many ranges."""
    from mst_dist.engine.runs import ranged_rounds as part

    from mst_dist.engine.plan import memory_budget

    workers = client2.scheduler_info()["workers"]
    # the two in-process workers share their process's limit: each is planned half of it
    memory = memory_budget(workers).smallest
    monkeypatch.setattr(part, "RANGE_SHARE", memory // (32 * 100))  # a range per 100 components
    g = mst_dist.generate("erdos_renyi", seed=4, n=3000, m=6000)
    src, dst, w = g.to_arrays()
    with dask.config.set({"mst.vertex-base": 0}):
        res = mst_dist.minimum_spanning_forest(g, client2, vertex_partition="always", partitions=6, local_finish=0)
    check(res, g.n_vertices, src, dst, w)
    rounds = [r for r in res.stats.rounds if r.mode in ("partitioned", "local-contraction")]
    assert res.stats.vertex_partition["ranges"] == rounds[0].ranges == 30
    # a range per 100 components (too few components for one per thread: at least two ranges)
    assert [r.ranges for r in rounds] == [max(2, -(-r.components_before // 100)) for r in rounds]
    assert rounds[-1].ranges < 10 and len(rounds) >= 3


def test_auto_partitions_when_vertices_do_not_fit_one_worker():
    g = mst_dist.generate("grid", seed=1, rows=100, cols=100)  # 10,000 vertices: 320 kB of state
    assert choose_kind(RunSpec.build(), g, _layout(2**30), None) == "resident"
    assert choose_kind(RunSpec.build(), g, _layout(2**20), None) == "partitioned"
    assert choose_kind(RunSpec.build(vertex_partition="always"), g, _layout(2**30), None) == "partitioned"
    with pytest.raises(InvalidGraphError, match="per-vertex arrays"):
        choose_kind(RunSpec.build(vertex_partition="never"), g, _layout(2**16), None)


def test_one_worker_is_not_partitioned_by_auto():
    """A one-worker cluster would hold every range itself: auto keeps its state whole (``always`` still cuts)."""
    g = mst_dist.generate("grid", seed=1, rows=100, cols=100)  # 320 kB of state
    assert choose_kind(RunSpec.build(), g, _layout(2**20, workers=1), None) == "resident"
    assert choose_kind(RunSpec.build(vertex_partition="always"), g, _layout(2**20, workers=1), None) == "partitioned"
    with pytest.raises(InvalidGraphError, match="per-vertex arrays"):
        choose_kind(RunSpec.build(), g, _layout(2**16, workers=1), None)


def test_vertices_beyond_the_whole_cluster_are_refused():
    g = mst_dist.Graph.from_arrays([0], [2**40], [1.0])
    with pytest.raises(InvalidGraphError, match="even spread over"):
        choose_kind(RunSpec.build(), g, _layout(2**30), None)


def test_unknown_mode_refused():
    with pytest.raises(ConfigError, match="unknown mode"):
        RunSpec.build(vertex_partition="sometimes")


@pytest.mark.processes
def test_worker_killed_in_a_partitioned_round(pclient):
    """SIGKILL a worker process as partitioned round 1 starts: Dask recomputes what it held, same ids."""
    g = mst_dist.generate("erdos_renyi", seed=21, n=5000, m=20000)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    pids = pclient.run(os.getpid)
    victim = sorted(pids)[0]
    killed = threading.Event()

    def progress(ev):
        if ev["round"] == 1 and ev["phase"] == "map" and not killed.is_set():
            os.kill(pids[victim], signal.SIGKILL)
            killed.set()

    res = partitioned(g, pclient, ranges=4, partitions=4, local_finish=0, progress=progress)
    assert killed.is_set()
    np.testing.assert_array_equal(res.edge_ids, exp)
    pclient.wait_for_workers(2, timeout=60)


@pytest.mark.parametrize("stream", ["never", "always"])
def test_no_task_output_holds_n_bytes(client2, stream):
    """With every round partitioned over 16 ranges, no mst-* task's result holds n bytes or more; nor with
    the edges streamed in slices of 2**14 (the vertex map spread too)."""
    from benchmarks.vertex_partition import LargestOutput, largest_output  # what the ceiling benchmark reports

    # a sparse graph: most vertices are isolated, and finish in the first round.  n is 64 times m: the
    # merged candidates of every chunk (a few int64 words per edge end) stay under n bytes even where
    # all the chunks land on one worker, while any array over all n vertices would not
    n = 2**21
    g = mst_dist.generate("erdos_renyi", seed=3, n=n, m=2**15)
    client2.register_plugin(LargestOutput())
    try:
        # 16 ranges: one int64 array of a range is n/2 bytes; 4 chunks (of m/4 edges) keep the
        # exchanges' task count (chunks x ranges, ranges x ranges) down
        with dask.config.set({"mst.slice-edges": 2**14}):
            res = partitioned(g, client2, ranges=16, partitions=4, local_finish=0, stream=stream)
        nbytes, key, seen = client2.run_on_scheduler(largest_output)
    finally:
        client2.unregister_scheduler_plugin(LargestOutput.name)
    assert seen > 500  # the plugin saw the run's tasks
    assert nbytes < n, f"{key} holds {nbytes} bytes"
    assert res.n_components > 1
    assert_result(res, expected(g))  # the whole forest, by the naive Kruskal, not only its edge count
    assert res.stats.streamed == (stream == "always") and len(res.stats.passes) == (3 if stream == "always" else 0)


class HeldInRound(Held):
    """Which ranges' merged candidates and hooked pairs are in memory as each filter assemble (a round's last
    step: each chunk relabelled) starts."""

    name = "mst-test-held-in-round"
    KEPT = ("cand-serve", "hook-assemble")
    AT = ("filter-assemble",)


def test_a_round_lets_its_candidates_and_hooked_pairs_go_once_used(client2):
    """The merged candidates and the hooked pairs (each an array over every component of a range) are let
    go once the hook and the parents and chosen ids taken out of the pairs have run, before the round's
    chunks are relabelled: they are not held to the end of the round."""
    g = mst_dist.generate("erdos_renyi", seed=7, n=4000, m=8000)
    src, dst, w = g.to_arrays()
    client2.register_plugin(HeldInRound())
    try:
        res = partitioned(g, client2, ranges=4, partitions=4, local_finish=0)
        seen = client2.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins[HeldInRound.name].seen)
    finally:
        client2.unregister_scheduler_plugin(HeldInRound.name)
    check(res, g.n_vertices, src, dst, w)
    rounds = {r.round for r in res.stats.rounds if r.mode == "partitioned"}
    assert len(rounds) >= 2 and {rnd for _, rnd, _, _ in seen} >= rounds, (rounds, seen)
    of_round = [(rnd, {p for p, r, _ in held if r == rnd}) for _, rnd, _, held in seen]
    assert not [(rnd, held) for rnd, held in of_round if held], of_round


@pytest.mark.processes
def test_bytes_moved_count_every_transfer():
    """Bytes moved per partitioned round are every transfer between the workers for its tasks: what
    Dask moved (its transfer log, kept whole here) and the pieces the exchanges' handlers handed out
    worker to worker, as the senders counted them."""
    from distributed import Client, LocalCluster

    from mst_dist.engine.keys import parse_key

    def logged(dask_worker):
        return [list(ev["keys"].items()) for ev in dask_worker.transfer_incoming_log]

    def sent(dask_worker):
        plugin = dask_worker.plugins.get("mst-exchange")  # registered by the first exchange
        return dict(plugin.sent) if plugin is not None else {}

    g = mst_dist.generate("erdos_renyi", seed=5, n=3000, m=12000)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    with dask.config.set({"distributed.admin.low-level-log-length": 10**6}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                         memory_limit="2GiB") as cluster, Client(cluster, set_as_default=False) as c:
        res = partitioned(g, c, ranges=4, partitions=4, local_finish=0)
        np.testing.assert_array_equal(res.edge_ids, exp)
        rounds = {r.round: r for r in res.stats.rounds if r.mode == "partitioned"}
        assert len(rounds) >= 3 and all(r.bytes_moved > 0 for r in rounds.values())
        events = [ev for log in c.run(logged).values() for ev in log]
        keys = [(parse_key(k), nb) for ev in events for k, nb in ev]
        by_log = sum(nb for k, nb in keys if k is not None and k.round in rounds)
        pulled = sum(nb for counts in c.run(sent).values() for at, nb in counts.items() if at[1] in rounds)
    assert pulled > 0 and sum(r.bytes_moved for r in rounds.values()) == by_log + pulled


def test_workers_without_a_memory_limit_take_a_partitioned_run():
    """In-process workers with no memory limit (``memory_limit=0``: unknown, never paused) plan nothing
    against memory: a partitioned run goes ahead, Kruskal's forest."""
    from distributed import Client, LocalCluster

    g = mst_dist.generate("erdos_renyi", seed=9, n=2000, m=6000)
    s, d, w = g.to_arrays()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, memory_limit=0,
                      dashboard_address=None) as cluster, Client(cluster, set_as_default=False) as c:
        res = partitioned(g, c, ranges=2, partitions=4, local_finish=0)
    check(res, g.n_vertices, s, d, w)

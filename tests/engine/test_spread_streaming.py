"""Streaming runs whose vertex map is spread: edges in passes, per-vertex state in ranges over the workers.

Checked against the Kruskal oracle (edge ids, rows, total, components, labels) with small slices
(``mst.slice-edges``: several passes on small graphs) and every round partitioned (``mst.vertex-base: 0``).
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
from support.oracle import check_kept_per_range, check_written_per_range


def spread(g, client, ranges=3, base=0, slices=3, **kw):
    """A spread streaming run, its slices about ``m / slices`` edges."""
    settings = {"mst.vertex-base": base, "mst.vertex-ranges": ranges, "mst.slice-edges": max(1, g.n_edges // slices)}
    with dask.config.set(settings):
        res = mst_dist.minimum_spanning_forest(g, client, vertex_partition="always", stream="always", **kw)
    assert res.stats.kind == "spread-streaming" and res.stats.streamed and res.stats.vertex_partition["ranges"] == ranges
    assert res.stats.passes[0].name == "sample"
    if g.n_edges > 2 * slices:
        assert len(res.stats.passes) >= 3  # the sample, then two slices or more
    return res


#: Every hand case (ties, self-loops, parallel edges, isolated vertices, no edge, one vertex, negative and
#: zero weights, every weight type and extreme); many components, a grid, R-MAT.  Each pass is partitioned
#: rounds of many small tasks: fewer families than the resident runs'.
NAMES = {name for name, *_ in HAND} | {"erdos_renyi-1", "grid-6"}
CASES = [c for c in ALL if c[0] in NAMES]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_spread_streaming_matches_kruskal(client2, case):
    """3 ranges of vertices, 3 chunks, slices of a third of the edges, two workers."""
    name, n, src, dst, w = case
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    check(spread(g, client2, partitions=3, local_finish=0, split_every=2), n, src, dst, w)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_spread_streaming_with_sparse_pointers(client2, case, monkeypatch):
    """Every range's pointers kept over the components its round touches only (what a pass's first round
    does where its slice touches few of the live components): the same forest and labels."""
    from mst_dist.kernels import vertex_ranges

    monkeypatch.setattr(vertex_ranges, "SPARSE", 0)
    name, n, src, dst, w = case
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    check(spread(g, client2, partitions=3, local_finish=0, split_every=2), n, src, dst, w)


def test_base_case_midway_and_many_ranges(client2):
    """The centralised rounds take over within a pass once few components are left (R-MAT); 6 ranges of 2
    chunks."""
    name, n, src, dst, w = next(c for c in ALL if c[0] == "rmat-7")
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    res = spread(g, client2, ranges=6, base=40, slices=2, partitions=2, local_finish=0)
    check(res, n, src, dst, w)
    modes = {r.mode for r in res.stats.rounds}
    assert "partitioned" in modes and modes - {"partitioned"}


def test_a_pass_wider_than_the_budget_reads_its_chunks_in_waves(client2):
    """Later slices are cut by the edges that still join two components, so their span of the order holds
    more edges than ``slice-edges``: such a pass reads its chunks in waves, each relabelled (the edges inside
    a component dropped) before the next is read.  Fewer passes than slices of ``slice-edges`` raw edges."""
    g = mst_dist.generate("erdos_renyi", seed=5, n=600, m=6000)  # dense: most edges end inside a component
    src, dst, w = g.to_arrays()
    slices = 4
    res = spread(g, client2, ranges=3, slices=slices, partitions=6, local_finish=0)
    check(res, g.n_vertices, src, dst, w)
    passes = res.stats.passes[1:]
    assert max(p.waves for p in passes) >= 2, [(p.waves, p.edges_kept) for p in passes]
    assert all(1 <= p.waves <= 6 and p.chunks == 6 for p in passes)
    assert len(passes) < slices  # each pass's slice cut by its raw edges would take one pass per slice or more


class SliceHeld(Held):
    """Which of the slices and the passes' first labels are in memory as each round's
    contract starts (range 0 serving the hooking) and as each range's labels follow a round (a labels assemble);
    ``first_rounds``: the rounds that begin a pass."""

    name = "mst-test-slice-held"
    KEPT = ("pass-relabel-assemble", "pass-close")
    AT = ("hook-serve", "labels-assemble")

    def __init__(self):
        super().__init__()
        self.first_rounds, self.fresh = set(), False

    def kept(self, k):
        self.fresh = self.fresh or k.name == "pass-relabel-assemble"  # a pass's slice read: a round 1 next

    def starting(self, k):
        if k.name == "hook-serve" and k.index == "0" and self.fresh:
            self.first_rounds.add(k.round)
            self.fresh = False


def test_a_pass_lets_its_slice_go_as_its_rounds_replace_it(client2):
    """The slice as the pass's read relabelled it is let go once the pass's first round has replaced it, not
    kept until the pass ends; the labels the pass began with are held until they follow the pass's round
    maps, composed, never beside another pass's."""
    g = mst_dist.generate("erdos_renyi", seed=13, n=3000, m=6000)
    src, dst, w = g.to_arrays()
    client2.register_plugin(SliceHeld())
    try:
        res = spread(g, client2, ranges=3, slices=4, partitions=3, local_finish=0)
        plugin = client2.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins[SliceHeld.name])
        seen, firsts = plugin.seen, sorted(plugin.first_rounds)
    finally:
        client2.unregister_scheduler_plugin(SliceHeld.name)
    check(res, g.n_vertices, src, dst, w)
    assert len(firsts) >= 3, firsts
    hooks = [(rnd, held) for phase, rnd, i, held in seen if phase == "hook-serve" and i == "0"]
    # each round's contract starts once its candidates are merged: the chunks of the round before are done
    assert any(rnd in firsts and any(p == "pass-relabel-assemble" for p, _, _ in held) for rnd, held in hooks)
    later = [(rnd, held) for rnd, held in hooks if rnd not in firsts]
    assert later and all(p != "pass-relabel-assemble" for rnd, held in later for p, _, _ in held), later
    # the labels do not follow every round: the round maps wait and are composed, and each range's labels
    # follow them once (here, at the end of each pass's rounds); as they do, the workers hold one generation
    # of the range's labels, those its pass began with (flipped from the pass before), never two passes'
    follows = [(rnd, i, held) for phase, rnd, i, held in seen if phase == "labels-assemble"]
    assert follows
    assert all(len({r for p, r, j in held if p == "pass-close" and j == i}) <= 1 for rnd, i, held in follows), follows
    assert any(any(p == "pass-close" and j == i for p, _, j in held) for rnd, i, held in follows)


def test_auto_base_case_is_an_eighth_of_a_worker(client2):
    """``mst.vertex-base: auto``: what fits an eighth of the smallest worker at 32 bytes a component (a
    partitioned run takes a quarter: a spread streaming run's workers also hold the vertex map, the slice
    and the forest rows)."""
    g = mst_dist.generate("erdos_renyi", seed=3, n=400, m=800)
    from mst_dist.engine.plan import memory_budget

    # the two in-process workers share their process's limit: each is planned half of it
    smallest = memory_budget(client2.scheduler_info()["workers"]).smallest
    bases = {}
    for stream in ("always", "never"):
        with dask.config.set({"mst.vertex-base": "auto", "mst.vertex-ranges": 2, "mst.slice-edges": 400}):
            res = mst_dist.minimum_spanning_forest(g, client2, vertex_partition="always", stream=stream)
        check(res, g.n_vertices, *g.to_arrays())  # the forest too, by Kruskal: not only the base case's size
        bases[res.stats.kind] = res.stats.vertex_partition["base_components"]
    assert bases == {"spread-streaming": smallest // 8 // 32, "partitioned": smallest // 4 // 32}


def test_outputs_written_per_chunk_and_range(client2, tmp_path):
    """output= and labels_output=: the forest written per chunk from the rows each pass kept, the labels per
    range of vertices; only counts reach the client."""
    g = mst_dist.generate("erdos_renyi", seed=7, n=800, m=1200)
    res = spread(g, client2, ranges=4, slices=2, partitions=3, output=tmp_path / "forest",
                 labels_output=tmp_path / "labels")
    check_written_per_range(res, g, tmp_path / "forest", tmp_path / "labels", 4)


def test_kept_on_the_workers(client2):
    """gather=False: each chunk's forest rows (those its passes kept) and each range's labels stay on the
    workers."""
    g = mst_dist.generate("erdos_renyi", seed=11, n=800, m=1100)  # many components
    res = spread(g, client2, ranges=4, slices=2, partitions=3, gather=False)
    try:
        check_kept_per_range(client2, res, g, chunks=3, ranges=4)
    finally:
        res.kept.release()


@pytest.mark.processes
def test_worker_killed_in_a_pass(pclient):
    """SIGKILL a worker process in the second pass's rounds: Dask recomputes what it held (the owners'
    labels from their lineage), the same ids."""
    g = mst_dist.generate("erdos_renyi", seed=21, n=1000, m=4000)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    pids = pclient.run(os.getpid)
    victim = sorted(pids)[0]
    killed = threading.Event()
    passes = []

    def progress(ev):
        if ev["phase"] == "pass" and ev["pass"] not in passes:
            passes.append(ev["pass"])
        if ev["phase"] == "map" and len(passes) >= 3 and not killed.is_set():  # sample, pass 1, pass 2
            os.kill(pids[victim], signal.SIGKILL)
            killed.set()

    res = spread(g, pclient, ranges=2, slices=2, partitions=2, local_finish=0, progress=progress)
    assert killed.is_set()
    np.testing.assert_array_equal(res.edge_ids, exp)
    pclient.wait_for_workers(2, timeout=60)


def test_kind_chosen():
    """``always`` with streaming spreads the vertex map; ``auto`` does where one worker cannot hold it."""
    g = mst_dist.generate("grid", seed=1, rows=100, cols=100)  # 10,000 vertices
    streamed = RunSpec.build(stream="always")
    assert choose_kind(RunSpec.build(vertex_partition="always", stream="always"), g, _layout(2**30), None) \
        == "spread-streaming"
    assert choose_kind(streamed, g, _layout(2**30), None) == "streaming"
    assert choose_kind(streamed, g, _layout(2**19), None) == "spread-streaming"  # 320 kB of vertex state
    with pytest.raises(InvalidGraphError, match="per-vertex arrays"):  # one worker: nothing to spread over
        choose_kind(streamed, g, _layout(2**19, workers=1), None)


def test_a_slice_of_no_edge_is_refused_before_work():
    with pytest.raises(ConfigError, match="slice_edges"):
        RunSpec.build(slice_edges=0)

"""The CPU kernels' scratch memory: sized from each worker's memory limit, given back when a run ends."""
import time

import pytest

import mst_dist
from mst_dist.engine import scratch
from mst_dist.engine.scratch import ARENA_SHARE, RELEASE_AFTER, arena_limit
from mst_dist.kernels.cpu.arena import ARENA, _Arena


def test_arena_limit_trims_free_buffers_and_release_gives_all_back():
    a = _Arena(limit=64 << 20)
    x = a.take(32 << 20)
    y = a.take(24 << 20)
    assert a.held == (32 << 20) + (24 << 20)
    del x
    a.set_limit(30 << 20)  # the free 32 MiB buffer goes; the one in use stays
    assert a.held == 24 << 20 and a.limit == 30 << 20
    big = a.take(40 << 20)  # larger than the whole arena: handed out, never kept
    assert big.nbytes == 40 << 20 and a.held == 24 << 20
    assert a.release() == 24 << 20 and a.held == 0
    assert y.nbytes == 24 << 20  # memory in use stays valid
    a.set_limit(None)
    assert a.limit == _Arena.default_limit()


def test_release_waits_for_an_unused_arena(monkeypatch):
    """Released only if no buffer was taken since the run ended (the next run keeps its buffers)."""
    a = _Arena(limit=64 << 20)
    monkeypatch.setattr(scratch, "ARENA", a)
    x = a.take(8 << 20)
    del x
    stamp = a.takes
    a.take(8 << 20)  # a new run began
    assert scratch._release_if_unused(stamp) == 0 and a.held > 0
    held = a.held
    assert held == 8 << 20  # the buffer was reused, not doubled
    assert scratch.release_scratch(delay=0) == held and a.held == 0
    assert ARENA is not a  # the process's arena untouched


def test_arena_limit_from_the_worker_memory_limit():
    assert arena_limit(None) is None and arena_limit(0) is None
    assert arena_limit(1 << 30) == int((1 << 30) * ARENA_SHARE)
    assert arena_limit(1 << 60) == _Arena.default_limit()  # never above the machine's default


def _arena():
    from mst_dist.kernels.cpu.arena import ARENA

    return ARENA.held, ARENA.limit


@pytest.mark.processes
def test_worker_arena_capped_and_emptied_after_a_run():
    """A 2 GiB worker process: its arena is capped at a quarter of that, and empty after a run.

    How much of the worker's memory comes back (its RSS) is a measure, not a
    pass/fail fact of a loaded machine: the memory benchmarks report it.
    """
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0",
                      memory_limit="2GiB") as cluster, Client(cluster) as c:
        mst_dist.minimum_spanning_forest(mst_dist.generate("grid", rows=30, cols=30), c)  # kernels loaded
        g = mst_dist.generate("erdos_renyi", seed=1, n=300_000, m=3_000_000)
        res = mst_dist.minimum_spanning_forest(g, c)
        deadline = time.monotonic() + RELEASE_AFTER + 120  # a bound on a hang, not a speed
        while True:  # released once the worker has not used the arena for RELEASE_AFTER s
            (held, limit), = c.run(_arena).values()
            if held == 0:
                break
            assert time.monotonic() < deadline, f"the arena still holds {held >> 20} MiB long after the run"
            time.sleep(0.5)
    assert res.forest_edges == g.n_vertices - res.n_components
    assert limit == (2 << 30) // 4

"""Real worker processes: the shared cases, pickling, transfers between workers, and a worker killed
mid-run."""
import os
import signal
import threading

import numpy as np
import pytest

import mst_dist
from support.cases import EngineCases
from support.naive import kruskal

pytestmark = pytest.mark.processes


class TestProcessRounds(EngineCases):
    """The shared hand and family cases on two worker processes (one module-scoped cluster): every
    round as tasks over 3 chunks, candidates and maps pickled between the processes."""

    def run(self, g, request):
        return mst_dist.minimum_spanning_forest(g, request.getfixturevalue("pclient"), partitions=3,
                                                local_finish=0, split_every=2)


class TestProcessStreamed(EngineCases):
    """The shared cases streamed on two worker processes: slices of the order, each solved by
    distributed rounds over 3 chunks."""

    def run(self, g, request):
        res = mst_dist.minimum_spanning_forest(g, request.getfixturevalue("pclient"), stream="always",
                                                partitions=3, local_finish=0, split_every=2)
        assert res.stats.streamed
        return res


@pytest.fixture(scope="module")
def graph():
    g = mst_dist.generate("erdos_renyi", seed=21, n=20_000, m=150_000)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    return g, (s, d, w), exp


def test_processes_same_ids(pclient, graph):
    g, (s, d, w), exp = graph
    res = mst_dist.minimum_spanning_forest(g, pclient, partitions=4, local_finish=0)
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert res.stats.workers == 2
    # candidates and round maps really crossed between the two processes
    assert res.stats.bytes_moved > 0
    res2 = mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays(s, d, w, n_vertices=g.n_vertices),
                                            pclient, partitions=3)
    np.testing.assert_array_equal(res2.edge_ids, exp)


@pytest.mark.parametrize("in_memory", [False, True], ids=["generated", "scattered"])
def test_worker_killed_in_round_2(pclient, graph, in_memory):
    """SIGKILL one worker process as round 2 starts: same edge ids at the end."""
    g, (s, d, w), exp = graph
    if in_memory:
        g = mst_dist.Graph.from_arrays(s, d, w, n_vertices=g.n_vertices)
    pids = pclient.run(os.getpid)
    victim = sorted(pids)[0]
    killed = threading.Event()

    def progress(ev):
        if ev["round"] == 2 and ev["phase"] == "map" and not killed.is_set():
            os.kill(pids[victim], signal.SIGKILL)
            killed.set()

    res = mst_dist.minimum_spanning_forest(g, pclient, partitions=4, local_finish=0, progress=progress)
    assert killed.is_set()
    np.testing.assert_array_equal(res.edge_ids, exp)
    pclient.wait_for_workers(2, timeout=60)

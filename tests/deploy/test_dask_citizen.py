"""mst-dist as Dask users call it: the current client, calls inside tasks, results kept on the
cluster, asynchronous clients, cancellation, and many runs on one scheduler.

Every test runs on one module-scoped LocalCluster of two worker processes of one thread each (the
scheduler in this process, so a scheduler plugin sees every task), and checks the forest against
the Kruskal oracle.
"""
import asyncio
import threading
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin

import mst_dist
from mst_dist.engine.keys import parse_key
from mst_dist.graph import FunctionSource, Graph
from support.naive import component_labels, kruskal

pytestmark = pytest.mark.processes

#: Seconds a call may take before the test calls it a deadlock (generous: two CPUs shared).
DEADLOCK = 180


class KeyLog(SchedulerPlugin):
    """Every task key the scheduler has seen, by run token (``mst-*`` keys) and all of them."""

    name = "test-key-log"

    def __init__(self):
        self.tokens = {}
        self.keys = set()
        self.lock = threading.Lock()

    def transition(self, key, start, finish, *args, **kwargs):
        with self.lock:
            self.keys.add(str(key))
            k = parse_key(key)
            if k is not None:
                self.tokens.setdefault(k.token, set()).add(k.name)

    def runs(self):
        """Tokens of the runs whose rounds ran here (a run loads chunks: ``load`` or ``stream`` tasks)."""
        with self.lock:
            return {t for t, phases in self.tokens.items() if phases & {"load", "local", "map"}}


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="2GiB") as c:
        log = KeyLog()
        c.scheduler.add_plugin(log)
        c.key_log = log
        yield c


@pytest.fixture
def client(cluster):
    """The test's default client (``Client(cluster)``: the current one, as for a new Dask user)."""
    with Client(cluster) as c:
        yield c


def _mst_keys(cluster):
    return [k for k in cluster.scheduler.tasks if str(k).startswith("mst-")]


def _wait_no_mst_keys(cluster, timeout=30):
    deadline = time.monotonic() + timeout
    while _mst_keys(cluster) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _mst_keys(cluster)


def _oracle(g):
    s, d, w = g.to_arrays()
    ids, comps = kruskal(g.n_vertices, s, d, w)
    return ids, comps, (s, d, w)


@pytest.fixture(scope="module")
def small():
    g = mst_dist.generate("erdos_renyi", seed=5, n=3000, m=9000)
    return g, _oracle(g)


# ---------------------------------------------------------------------------
# 1. the current client, and a way to force the embedded cluster
# ---------------------------------------------------------------------------

def test_default_client_runs_the_forest(cluster, client, small):
    g, (exp, comps, _) = small
    before = cluster.key_log.runs()
    res = mst_dist.minimum_spanning_forest(g, partitions=3)
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert res.n_components == comps
    assert len(cluster.key_log.runs() - before) == 1, "the run's tasks did not reach the default client's scheduler"
    assert res.stats.workers == 2


def test_embedded_forced(cluster, client, small):
    g, (exp, _, _) = small
    before = cluster.key_log.runs()
    res = mst_dist.minimum_spanning_forest(g, "embedded")
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert cluster.key_log.runs() == before


def test_bad_client_argument(small):
    with pytest.raises(TypeError, match="embedded"):
        mst_dist.minimum_spanning_forest(small[0], "local")


def test_read_and_solve_on_the_default_client(cluster, client, small, tmp_path):
    g, (exp, _, (s, d, w)) = small
    p = tmp_path / "g.txt"
    p.write_text("".join(f"{a} {b} {c}\n" for a, b, c in zip(s.tolist(), d.tolist(), w.tolist())))
    seen = set(cluster.key_log.keys)
    g2 = mst_dist.read(str(p), blocksize=16_384)
    assert any(k.startswith("mst-read-scan") for k in cluster.key_log.keys - seen)
    before = cluster.key_log.runs()
    res = mst_dist.minimum_spanning_forest(g2)
    np.testing.assert_array_equal(res.edge_ids, exp)
    assert len(cluster.key_log.runs() - before) == 1


# ---------------------------------------------------------------------------
# 2. calls inside tasks: the task's cluster, seceded, never a cluster in a worker
# ---------------------------------------------------------------------------

def _solve_in_task(seed):
    """A task: generate a graph, solve it with no client; the ids and whether an embedded cluster started."""
    from mst_dist.deploy import local

    g = mst_dist.generate("erdos_renyi", seed=seed, n=2000, m=6000)
    res = mst_dist.minimum_spanning_forest(g, partitions=2)
    return res.edge_ids, local._Shared.client is not None


def test_call_inside_a_task_runs_on_the_tasks_cluster(cluster, client):
    before = cluster.key_log.runs()
    # two at once on the two one-thread workers: each seceded while its run's tasks execute
    futs = [client.submit(_solve_in_task, seed, pure=False) for seed in (11, 12)]
    results = [f.result(timeout=DEADLOCK) for f in futs]
    for seed, (ids, started) in zip((11, 12), results):
        exp, _, _ = _oracle(mst_dist.generate("erdos_renyi", seed=seed, n=2000, m=6000))
        np.testing.assert_array_equal(ids, exp)
        assert not started, "an embedded cluster was started inside a worker"
    assert len(cluster.key_log.runs() - before) == 2


def _read_in_task(path):
    g = mst_dist.read(path, blocksize=8_192)
    return mst_dist.minimum_spanning_forest(g).edge_ids


def test_read_inside_a_task(cluster, client, small, tmp_path):
    g, (exp, _, (s, d, w)) = small
    p = tmp_path / "g.txt"
    p.write_text("".join(f"{a} {b} {c}\n" for a, b, c in zip(s.tolist(), d.tolist(), w.tolist())))
    ids = client.submit(_read_in_task, str(p), pure=False).result(timeout=DEADLOCK)
    np.testing.assert_array_equal(ids, exp)


# ---------------------------------------------------------------------------
# 3. results kept on the cluster
# ---------------------------------------------------------------------------

def test_kept_result(cluster, client, small):
    g, (exp, comps, (s, d, w)) = small
    res = mst_dist.minimum_spanning_forest(g, gather=False, partitions=3)
    assert res.kept is not None and "edge_ids" not in res.__dict__
    assert res.forest_edges == exp.shape[0] and res.n_components == comps
    assert res.total_weight == int(w[exp].sum())
    ddf = res.to_dask_dataframe()
    assert list(ddf.columns) == ["edge_id", "src", "dst", "weight"] and ddf.npartitions == 3
    df = ddf.compute()
    np.testing.assert_array_equal(df["edge_id"].to_numpy(), exp)
    np.testing.assert_array_equal(df["src"].to_numpy(), s[exp])
    np.testing.assert_array_equal(df["weight"].to_numpy(), w[exp])
    labels = res.to_dask_dataframe("labels").compute()
    np.testing.assert_array_equal(labels["component"].to_numpy(), component_labels(g.n_vertices, s, d))
    # reading a gathered-only field gathers it
    np.testing.assert_array_equal(res.edge_ids, exp)
    np.testing.assert_array_equal(res.dst, d[exp])
    gathered = res.gather()
    assert gathered.kept is None
    np.testing.assert_array_equal(gathered.labels, component_labels(g.n_vertices, s, d))
    # a gathered result gives the same collections
    np.testing.assert_array_equal(gathered.to_dask_dataframe().compute()["edge_id"].to_numpy(), exp)


def test_kept_result_streamed(cluster, client, small):
    g, (exp, _, _) = small
    res = mst_dist.minimum_spanning_forest(g, gather=False, stream="always", partitions=3, local_finish=0)
    assert res.stats.streamed
    np.testing.assert_array_equal(res.to_dask_dataframe().compute()["edge_id"].to_numpy(), exp)
    res.kept.release()
    assert not [k for k in _wait_no_mst_keys(cluster) if "kept" in str(k)]


def test_gather_and_output_refused(small, tmp_path):
    with pytest.raises(ValueError, match="gather"):
        mst_dist.minimum_spanning_forest(small[0], gather=False, output=str(tmp_path / "f"))


# ---------------------------------------------------------------------------
# 4. asynchronous clients
# ---------------------------------------------------------------------------

def test_asynchronous_client(cluster, small):
    g, (exp, _, _) = small

    async def main():
        async with Client(cluster.scheduler_address, asynchronous=True) as c:
            pending = mst_dist.minimum_spanning_forest(g, c, partitions=2)
            assert asyncio.iscoroutine(pending) or asyncio.isfuture(pending)
            res = await pending
            kept = await mst_dist.minimum_spanning_forest(g, c, gather=False)
            frame = kept.to_dask_dataframe()
            df = await c.compute(frame)
            kept.kept.release()
            return res, df

    res, df = asyncio.run(main())
    np.testing.assert_array_equal(res.edge_ids, exp)
    np.testing.assert_array_equal(df["edge_id"].to_numpy(), exp)


@pytest.mark.parametrize("later", [0.0, 0.4, 1.2])
def test_asynchronous_cancel_leaves_nothing(cluster, later):
    """Cancelled as soon as the run has tasks, or a little later (mid-round, between rounds).

    ``asyncio.run`` returns only once its executor's threads ended: a run's
    thread left waiting on a closed client would hang it here.
    """
    big = mst_dist.generate("erdos_renyi", seed=7, n=100_000, m=1_000_000)

    async def main():
        async with Client(cluster.scheduler_address, asynchronous=True) as c:
            task = asyncio.ensure_future(mst_dist.minimum_spanning_forest(big, c, partitions=8, local_finish=0))
            for _ in range(600):  # until the run has tasks on the scheduler
                await asyncio.sleep(0.05)
                if _mst_keys(cluster):
                    break
            assert _mst_keys(cluster), "the run never started"
            await asyncio.sleep(later)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    before = set(threading.enumerate())
    asyncio.run(main())  # waits for its executor's threads: one left waiting hangs here (the suite's timeout)
    left = [t.name for t in threading.enumerate() if t not in before and t.name.startswith("asyncio")]
    assert left == [], f"the cancelled run's threads outlived their awaiting task: {left}"
    assert _wait_no_mst_keys(cluster) == []


# ---------------------------------------------------------------------------
# 5. many runs on one scheduler
# ---------------------------------------------------------------------------

def _failing_rows(start, stop, *, fail_at):
    if start <= fail_at < stop:
        raise RuntimeError(f"rows {start}:{stop} cannot be read")
    rng = np.random.default_rng(start)
    n = stop - start
    return rng.integers(0, 500, n), rng.integers(0, 500, n), rng.integers(1, 100, n)


def test_concurrent_runs_and_a_failing_one(cluster, client, small):
    g, (exp, _, _) = small
    other = mst_dist.generate("grid", seed=3, rows=40, cols=50)
    exp_other, _, _ = _oracle(other)
    bad = Graph(n_vertices=500, sources=[FunctionSource(_failing_rows, {"fail_at": 2500}, 4000, name="bad")],
                weight_dtype=np.dtype(np.int64))
    out, errors = {}, {}

    def go(name, graph, c):
        try:
            out[name] = mst_dist.minimum_spanning_forest(graph, c, partitions=4, local_finish=0)
        except Exception as e:  # the failing run's error is checked below
            errors[name] = e

    with Client(cluster) as second:
        threads = [threading.Thread(target=go, args=("a", g, client)), threading.Thread(target=go, args=("b", other, second)),
                   threading.Thread(target=go, args=("bad", bad, client)),
                   threading.Thread(target=go, args=("a2", g, second))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLOCK)
        assert not any(t.is_alive() for t in threads), "a run did not finish"
    assert set(errors) == {"bad"} and "cannot be read" in str(errors["bad"])
    np.testing.assert_array_equal(out["a"].edge_ids, exp)
    np.testing.assert_array_equal(out["a2"].edge_ids, exp)
    np.testing.assert_array_equal(out["b"].edge_ids, exp_other)
    errors.clear()  # the traceback holds the failed run's frames: its futures must be gone anyway
    assert _wait_no_mst_keys(cluster) == []

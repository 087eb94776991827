"""Kind ``local`` and the embedded default: the workers' memory limit (``cluster.memory_limit``,
``mst.cluster.memory-limit``), threads or processes."""
import os

import pytest

from mst_dist.config import ConfigError
from mst_dist.deploy import memory_limit_value, open_cluster
from mst_dist.deploy._core import MIN_MEMORY_LIMIT
from mst_dist.deploy.local import embedded
from support.cli import cluster_of

GiB = 2**30


def limits(client):
    return sorted(w["memory_limit"] for w in client.scheduler_info()["workers"].values())


@pytest.mark.parametrize("value, expect", [
    ("auto", "auto"), (None, None), ("none", None), ("None", None), (0, None), ("0", None),
    ("4GiB", "4GiB"), (" 600 MiB ", " 600 MiB "), (600 * 2**20, 600 * 2**20), ("629145600", 629145600),
    (2e9, 2_000_000_000), ("2e9", 2_000_000_000), (0.5, 0.5), ("0.25", 0.25), (1, 1),
])
def test_memory_limit_values(value, expect):
    assert memory_limit_value(value) == expect
    assert type(memory_limit_value(value)) is type(expect)


@pytest.mark.parametrize("value, fragment", [
    ("lots", "expected 'auto', bytes (an integer or a size such as '4GiB'), a fraction of the machine's "
             "memory in (0, 1] or none; got 'lots'"),
    (-1, "got -1"), ("-1GiB", "got '-1GiB'"), (float("nan"), "got nan"), (float("inf"), "got inf"),
    (True, "got bool True"), ([1], "got list [1]"),
    ("100MiB", "'100MiB' (100.00 MiB) is too small for a worker: at least 256.00 MiB"),
    (MIN_MEMORY_LIMIT - 1, "is too small for a worker"),
])
def test_bad_memory_limit_values(value, fragment):
    with pytest.raises(ValueError) as info:
        memory_limit_value(value)
    assert fragment in str(info.value)


def test_smallest_memory_limit_accepted():
    assert memory_limit_value(MIN_MEMORY_LIMIT) == MIN_MEMORY_LIMIT
    assert memory_limit_value("256MiB") == "256MiB"


def test_local_kind_takes_memory_limit():
    c = cluster_of(kind="local", processes=True, n_workers=2, memory_limit="600MiB")
    assert c["memory_limit"] == "600MiB" and c["processes"] is True
    assert cluster_of(kind="local")["memory_limit"] == "auto"  # mst.cluster.memory-limit
    assert cluster_of(kind="local", memory_limit=None)["memory_limit"] is None
    with pytest.raises(ConfigError, match=r"^cluster.memory_limit: .*too small for a worker"):
        cluster_of(kind="local", memory_limit="1MiB")
    with pytest.raises(ConfigError, match=r"^cluster.memory_limit: only for kinds 'local', 'local-cuda', 'mpi'"):
        cluster_of(kind="address", address="tcp://h:1", memory_limit="1GiB")


def test_local_memory_limit_reaches_the_worker():
    """A threaded local cluster: its worker has the section's limit."""
    cfg = cluster_of(kind="local", threads_per_worker=1, memory_limit="3GiB", dashboard_address=None)
    with open_cluster(cfg) as client:
        assert limits(client) == [3 * GiB]


def test_embedded_memory_limit_from_the_environment(environ):
    environ(DASK_MST__CLUSTER__MEMORY_LIMIT="2GiB")
    with embedded(threads_per_worker=1, dashboard_address=None) as client:
        assert limits(client) == [2 * GiB]
    # the run config's section (and so --memory-limit) beats the environment
    with open_cluster(cluster_of(kind="local", threads_per_worker=1, memory_limit="3GiB",
                                 dashboard_address=None)) as client:
        assert limits(client) == [3 * GiB]


def test_auto_memory_limit_is_the_machines_over_the_workers():
    """``auto``: the machine's memory over the workers, whatever their threads.  A one-thread worker in
    this process (how a GPU worker is run) is the whole process, not its thread's share of the cores."""
    from distributed.system import MEMORY_LIMIT

    with embedded(n_workers=1, threads_per_worker=1, dashboard_address=None, memory_limit="auto") as client:
        assert limits(client) == [MEMORY_LIMIT]
    with embedded(n_workers=2, threads_per_worker=1, dashboard_address=None, memory_limit="auto") as client:
        assert limits(client) == [MEMORY_LIMIT // 2] * 2


def test_several_workers_are_processes_and_in_process_ones_share_one_budget():
    """Unset ``processes``: one worker is this process's threads, several are worker processes (each
    with a limit of its own).  Several in-process workers share this process: ``auto`` gives each the
    machine's memory (Dask measures the whole process against each one's limit), and the engine plans
    each half of it -- the budget the memory manager pauses them at, not twice it."""
    from distributed.system import MEMORY_LIMIT

    from mst_dist.deploy.local import as_processes
    from mst_dist.engine.plan import memory_budget

    assert (as_processes(1), as_processes(2), as_processes(2, False), as_processes(1, True)) == (
        False, True, False, True)
    with embedded(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as client:
        workers = client.scheduler_info()["workers"]
        assert limits(client) == [MEMORY_LIMIT] * 2
        budget = memory_budget(workers)
        assert budget.processes == 1 and budget.total == MEMORY_LIMIT // 2 * 2
        assert set(budget.per_worker.values()) == {MEMORY_LIMIT // 2}


def test_embedded_bad_memory_limit_names_the_setting(environ):
    environ(DASK_MST__CLUSTER__MEMORY_LIMIT="lots")
    with pytest.raises(ConfigError, match=r"^mst.cluster.memory-limit: expected 'auto'") as info:
        with embedded(dashboard_address=None):
            pass
    assert info.value.key == "mst.cluster.memory-limit"
    with pytest.raises(ConfigError, match=r"^memory_limit: .*too small"):
        with embedded(dashboard_address=None, memory_limit=1000):
            pass


@pytest.mark.slow
def test_local_processes_each_get_the_memory_limit():
    # warmup=False: workers that start without loading the kernels (the preload has a test of its own,
    # test_local_worker_processes_preload_the_warmup)
    cfg = cluster_of(kind="local", processes=True, n_workers=2, threads_per_worker=1, memory_limit="700MiB",
                     dashboard_address=None, warmup=False)
    with open_cluster(cfg) as client:
        client.wait_for_workers(2, timeout=60)
        assert limits(client) == [700 * 2**20, 700 * 2**20]
        pids = client.run(os.getpid)  # two worker processes, not threads of this one
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()


# ---------------------------------------------------------------------------
# the shared embedded cluster of calls without a client
# ---------------------------------------------------------------------------

def _tiny_graph():
    import mst_dist

    return mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])


def _status_code(client, path):
    import urllib.error
    import urllib.request

    port = client.cluster.scheduler.http_server.port
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_calls_without_a_client_share_one_cluster(environ):
    import mst_dist
    from mst_dist.deploy import local

    environ(DASK_MST__CLUSTER__THREADS_PER_WORKER="1")
    local.close_shared()
    first = mst_dist.minimum_spanning_forest(_tiny_graph())
    client = local._Shared.client
    assert client is not None and client.status == "running"
    # no dashboard by default: the scheduler's web server has no dashboard page
    assert _status_code(client, "/status") == 404
    for _ in range(3):
        again = mst_dist.minimum_spanning_forest(_tiny_graph())
        assert again.edge_ids.tolist() == first.edge_ids.tolist() == [1, 2, 3]
    assert local._Shared.client is client  # the same cluster served every call
    local.close_shared()
    assert client.status == "closed" and local._Shared.client is None


def test_shared_cluster_follows_the_settings(environ):
    from mst_dist.deploy import local

    environ(DASK_MST__CLUSTER__THREADS_PER_WORKER="1")
    local.close_shared()
    one = local.shared_client()
    assert local.shared_client() is one
    environ(DASK_MST__CLUSTER__THREADS_PER_WORKER="2")  # other settings: another cluster
    two = local.shared_client()
    assert two is not one and one.status == "closed"
    assert [w["nthreads"] for w in two.scheduler_info()["workers"].values()] == [2]
    local.close_shared()


def test_shared_cluster_dashboard_on_request(environ):
    from mst_dist.deploy import local

    environ(DASK_MST__EMBEDDED__DASHBOARD="True", DASK_MST__CLUSTER__THREADS_PER_WORKER="1")
    local.close_shared()
    client = local.shared_client()
    try:
        assert _status_code(client, "/status") == 200
        assert _status_code(client, "/mst") == 200
    finally:
        local.close_shared()


def test_no_reuse_starts_and_closes_a_cluster_per_call(environ, monkeypatch):
    import mst_dist
    from mst_dist.deploy import local

    environ(DASK_MST__EMBEDDED__REUSE="False", DASK_MST__CLUSTER__THREADS_PER_WORKER="1")
    local.close_shared()
    started = []
    real = local.embedded

    def spy(*a, **kw):
        started.append(kw)
        return real(*a, **kw)

    monkeypatch.setattr(local, "embedded", spy)
    for _ in range(2):
        assert mst_dist.minimum_spanning_forest(_tiny_graph()).edge_ids.tolist() == [1, 2, 3]
    assert len(started) == 2 and all(kw["dashboard_address"] is None for kw in started)
    assert local._Shared.client is None


@pytest.mark.slow
def test_local_worker_processes_preload_the_warmup():
    cfg = cluster_of(kind="local", processes=True, n_workers=1, threads_per_worker=1, dashboard_address=None)
    with open_cluster(cfg) as client:
        client.wait_for_workers(1, timeout=60)

        def loaded():
            import sys

            from numba.core.registry import CPUDispatcher

            from mst_dist.kernels.cpu import solve
            return "mst_dist.engine.warmup" in sys.modules and bool(solve._p_best.signatures) \
                and isinstance(solve._p_best, CPUDispatcher)

        assert all(client.run(loaded).values())
    cfg = cluster_of(kind="local", processes=True, n_workers=1, threads_per_worker=1, dashboard_address=None,
                     warmup=False)
    with open_cluster(cfg) as client:
        client.wait_for_workers(1, timeout=60)
        assert not any(client.run(lambda: bool(__import__("mst_dist.kernels.cpu.solve", fromlist=["x"])
                                              ._p_best.signatures)).values())


def test_shared_cluster_replaced_when_it_died(environ):
    import mst_dist
    from mst_dist.deploy import local

    environ(DASK_MST__CLUSTER__THREADS_PER_WORKER="1")
    local.close_shared()
    dead = local.shared_client()
    dead.cluster.close()  # its cluster went away under it
    dead.close()
    assert mst_dist.minimum_spanning_forest(_tiny_graph()).edge_ids.tolist() == [1, 2, 3]
    assert local._Shared.client is not dead and local._Shared.client.status == "running"
    local.close_shared()


def test_in_process_cluster_batches_its_messages_for_a_millisecond_at_most():
    """Client, scheduler and workers in one process: Dask's 2-10 ms batching saves no packet there."""
    from mst_dist.deploy.local import IN_PROCESS_BATCH_SECONDS

    with embedded(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as client:
        scheduler = client.cluster.scheduler
        streams = [client.scheduler_comm, *scheduler.stream_comms.values(), *scheduler.client_comms.values(),
                   *(w.batched_stream for w in client.cluster.workers.values())]
        assert len(streams) >= 5  # client, the scheduler's to 2 workers and to the client, 2 workers'
        assert all(s.interval <= IN_PROCESS_BATCH_SECONDS for s in streams)
        assert client.submit(lambda x: x + 1, 1).result() == 2


def test_worker_processes_keep_dasks_batching():
    from mst_dist.deploy.local import IN_PROCESS_BATCH_SECONDS

    with embedded(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as client:
        assert client.scheduler_comm.interval > IN_PROCESS_BATCH_SECONDS  # Dask's own, left alone

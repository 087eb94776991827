"""Faults: a worker killed in each phase, workers killed over and over, workers paused or gone, memory limits.

A run either gives the same edge ids as an undisturbed one, or stops within a
bound with :class:`mst_dist.ClusterStalledError` naming the cause: never a
silent wait.
"""
import threading

import dask
import numpy as np
import pytest

import mst_dist
from mst_dist.engine.watchdog import ADVICE, ClusterStalledError, Watchdog, _progress_state
from support.faults import KillAtPhase, within
from support.naive import kruskal
from support.oracle import assert_minimum_forest

#: The phases a worker is killed in: each one's task-key phase.
KILL_PHASES = {"load": "load", "prepare": "prepare", "map": "map", "merge": "merge", "contract": "contract",
               "light split": "filter", "local finish": "local"}


@pytest.fixture(scope="module")
def graph():
    """Dense enough for the light split; ``local_finish=20000`` leaves distributed rounds before the local finish."""
    g = mst_dist.generate("erdos_renyi", seed=21, n=20_000, m=150_000)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    return g, exp


@pytest.fixture
def kclient():
    """Two worker processes with nannies: a killed worker is restarted.

    A cluster of its own for each test: a worker killed in one test need not
    have come back for the next one.
    """
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="1GiB") as cluster, Client(cluster) as c:
        yield c


# -- the watchdog on its own ----------------------------------------------------------

class _Scheduler:
    """A client stand-in: ``scheduler_info`` answers what the test sets."""

    def __init__(self, workers):
        self.workers = workers
        self.futures = {}

    def scheduler_info(self):
        return {"workers": self.workers}


def _worker(status, executing=0, memory=None, limit=None):
    return {"status": status, "memory_limit": limit,
            "metrics": {"task_counts": {"executing": executing} if executing else {}, "memory": memory}}


def test_progress_state():
    assert _progress_state({}) == (False, "no-workers")
    assert _progress_state({"a": _worker("running"), "b": _worker("running")}) == (True, None)  # between tasks
    # a paused worker holding the run's next task, the other idle: nothing will run (seen in CI)
    assert _progress_state({"a": _worker("paused"), "b": _worker("running")}) == (False, "paused")
    assert _progress_state({"a": _worker("paused"), "b": _worker("running", executing=1)}) == (True, None)
    assert _progress_state({"a": _worker("paused"), "b": _worker("paused")}) == (False, "paused")
    # a paused worker still finishes the task it runs
    assert _progress_state({"a": _worker("paused", executing=1)}) == (True, None)
    assert _progress_state({"a": _worker("closing_gracefully")}) == (False, "paused")


def test_watchdog_trips_after_the_timeout_only():
    sched = _Scheduler({"a": _worker("paused", memory=450 << 20, limit=512 << 20)})
    dog = Watchdog(sched, "0123abcd", timeout=30)
    assert not dog.check(now=100.0)          # the clock starts
    assert not dog.check(now=129.0)
    sched.workers["a"] = _worker("running")  # progress again: the clock is reset
    assert not dog.check(now=131.0)
    sched.workers["a"] = _worker("paused", memory=450 << 20, limit=512 << 20)
    assert not dog.check(now=140.0)
    assert not dog.check(now=169.0)
    assert dog.error is None
    assert dog.check(now=171.0)
    err = dog.error
    assert isinstance(err, ClusterStalledError) and isinstance(err, RuntimeError)
    assert err.cause == "paused" and err.waited == pytest.approx(31.0)
    msg = str(err)
    assert "paused by the memory manager for 31 s" in msg and "450 of 512 MiB" in msg and ADVICE in msg


def test_watchdog_no_workers_and_off():
    dog = Watchdog(_Scheduler({}), "0123abcd", timeout=5)
    dog.check(now=0.0)
    assert dog.check(now=6.0) and dog.error.cause == "no-workers"
    assert "no worker has been connected to the scheduler for 6 s" in str(dog.error)
    assert Watchdog(_Scheduler({}), "x", timeout=0).timeout is None
    assert Watchdog(_Scheduler({}), "x", timeout=None).timeout is None
    assert mst_dist.ClusterStalledError is ClusterStalledError


# -- real clusters ------------------------------------------------------------------------

def _run_stopped(client, g, bound=300, **kw):
    """Run expecting ClusterStalledError, failing clearly if the run hangs past ``bound`` seconds."""
    with pytest.raises(ClusterStalledError) as info:
        within(bound, "the stalled run", mst_dist.minimum_spanning_forest, g, client, **kw)
    return info.value


def test_every_worker_paused_is_a_clear_error(graph, caplog):
    """All workers paused (as the memory manager does) once round 1 starts: the error within the bound,
    and stopping the run leaves no error in the scheduler's log."""
    from distributed import Client, LocalCluster
    from distributed.core import Status

    g, _ = graph
    with dask.config.set({"mst.stall-timeout": 3}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                         memory_limit=0) as cluster, Client(cluster) as c:
        paused = threading.Event()

        def pause(dask_worker):  # no memory limit: no memory manager resumes them
            dask_worker.status = Status.paused

        def progress(ev):
            if ev["round"] == 1 and ev["phase"] == "map" and not paused.is_set():
                paused.set()
                c.run(pause)

        err = _run_stopped(c, g, partitions=4, local_finish=0, light_factor=0, progress=progress)
        assert paused.is_set()
        assert err.cause == "paused" and "every worker (2) has been paused" in str(err)
        _forgotten(c, "mst-")  # nothing of the run left on the scheduler
    assert not [r for r in caplog.records if r.levelno >= 40], caplog.text[-3000:]


def _held(gate):
    """A task that runs until the event ``gate`` is set."""
    from distributed import Event

    Event(gate).wait(30)
    return 1


def _plus_one(x):
    return x + 1


def _wanted(key, dask_scheduler):
    """Whether the scheduler has no task ``key`` yet, or a client still wants it."""
    ts = dask_scheduler.tasks.get(key)
    return ts is None or bool(ts.who_wants)


def _tasks_of(token, dask_scheduler):
    return [str(k) for k in dask_scheduler.tasks if token in str(k)]


def _forgotten(client, token, timeout=10):
    """Wait until the scheduler holds no task whose key holds ``token``."""
    import time

    deadline = time.monotonic() + timeout
    while left := client.run_on_scheduler(_tasks_of, token):
        assert time.monotonic() < deadline, f"tasks stayed on the scheduler: {left[:5]}"
        time.sleep(0.05)


def test_stopping_a_run_forgets_its_tasks_without_a_scheduler_error(client, caplog):
    """A task between two of the run's futures, wanted by no client (an inner level of a merge tree):
    Client.cancel would have the scheduler cancel it as a dependent, failing its assertion
    ``ts.who_wants`` (a traceback, and the client's connection dropped).  cancel_run releases instead."""
    import time

    from distributed import Event

    from mst_dist.engine.watchdog import cancel_run

    gate = Event("mst-test-gate", client=client)
    first = client.submit(_held, "mst-test-gate", key="mst-test-0123abcd-first", pure=False)
    inner = client.submit(_plus_one, first, key="mst-test-0123abcd-inner")
    last = client.submit(_plus_one, inner, key="mst-test-0123abcd-last")
    del inner  # wanted by no client now: the scheduler keeps it for the last task
    deadline = time.monotonic() + 10
    while client.run_on_scheduler(_wanted, "mst-test-0123abcd-inner"):  # the scheduler saw it released
        assert time.monotonic() < deadline, "the inner future was not released"
        time.sleep(0.05)
    cancel_run(client, "0123abcd", "mst-dist: the run failed", "stopped")
    gate.set()
    assert first.cancelled() and last.cancelled()
    _forgotten(client, "0123abcd")
    cancel_run(client, "0123abcd", "again")  # nothing left of the run: nothing to do
    assert client.id in client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.clients))  # not dropped
    assert client.submit(lambda: 7, pure=False).result() == 7
    assert not [r for r in caplog.records if r.levelno >= 40], caplog.text[-3000:]


def test_no_worker_left_is_a_clear_error(graph):
    """Every worker gone after round 1 began (a nanny that gave up, a batch job that ended)."""
    from distributed import Client, LocalCluster

    g, _ = graph
    with dask.config.set({"mst.stall-timeout": 3}), \
            LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        gone = threading.Event()

        def progress(ev):
            if ev["round"] == 1 and ev["phase"] == "map" and not gone.is_set():
                gone.set()
                cluster.scale(0)

        err = _run_stopped(c, g, partitions=4, local_finish=0, light_factor=0, progress=progress)
        assert gone.is_set()
        assert err.cause == "no-workers" and "no worker has been connected" in str(err)


@pytest.mark.processes
@pytest.mark.parametrize("phase", list(KILL_PHASES), ids=[p.replace(" ", "-") for p in KILL_PHASES])
def test_worker_killed_in_each_phase(kclient, graph, phase, tmp_path):
    """SIGKILL the worker that starts the phase's first task: the same edge ids at the end."""
    g, exp = graph
    kclient.wait_for_workers(2, timeout=120)
    flag = tmp_path / "killed"
    kclient.register_plugin(KillAtPhase(KILL_PHASES[phase], once=str(flag)), name="mst-test-kill")
    try:
        res = mst_dist.minimum_spanning_forest(g, kclient, partitions=4, local_finish=20_000)
    finally:
        kclient.unregister_worker_plugin("mst-test-kill")
    assert flag.exists(), f"no {phase} task ran"  # a worker really died in that phase
    np.testing.assert_array_equal(res.edge_ids, exp)


@pytest.mark.processes
def test_workers_killed_over_and_over_is_a_clear_error(graph):
    """Every map task kills its worker: after allowed-failures the error names the task, within a bound."""
    from distributed import Client, LocalCluster

    g, _ = graph
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                         memory_limit="1GiB") as cluster, Client(cluster) as c:
        c.register_plugin(KillAtPhase("map"), name="mst-test-kill")
        err = _run_stopped(c, g, partitions=2, local_finish=0)
    # the map task, or a load task queued on the same workers when they died (a loaded machine)
    assert err.cause == "killed-worker" and err.key.startswith(("mst-map-", "mst-load-"))
    assert f"task {err.key} was running on" in str(err)
    assert "2 workers that all died" in str(err) and "memory" in str(err)


@pytest.mark.processes
@pytest.mark.parametrize("stream", ["never", "auto"])
def test_memory_limited_workers_finish_or_stop_clearly(stream):
    """Two 320 MiB workers and R-MAT scale 18 (4.2M edges): a minimum spanning forest, or the error
    naming the cause; never a hang.  (Measured on a loaded 2-core box: resident, the loads kill their
    workers and the run stops in ~90 s; streamed, it is refused before any work: its slices do not fit
    what Dask's pause leaves a 320 MiB worker process beside the memory it holds.)"""
    from distributed import Client, LocalCluster

    g = mst_dist.generate("rmat", scale=18, seed=3)
    err = None
    # a stall (every worker paused, nothing running) is as clear an end as a killed worker: 5 s tell it
    with dask.config.set({"mst.stall-timeout": 5, "distributed.scheduler.allowed-failures": 1}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                         memory_limit="320MiB") as cluster, Client(cluster) as c:
        try:
            res = within(600, "the memory-limited run", mst_dist.minimum_spanning_forest, g, c, stream=stream)
        except (ClusterStalledError, mst_dist.GraphTooLargeError) as e:
            err, res = e, None
    if isinstance(err, mst_dist.GraphTooLargeError):
        assert stream == "auto" and err.advice and "refused before any work" in str(err)
    elif res is None:
        assert err.cause in ("killed-worker", "paused", "no-workers") and ADVICE in str(err)
    else:  # 4.2M edges: SciPy's account of a minimum forest (the pure-Python Kruskal would take minutes)
        s, d, w = g.to_arrays()
        np.testing.assert_array_equal(res.weight, w[res.edge_ids])
        assert_minimum_forest(g.n_vertices, s, d, w, res.edge_ids, total=res.total_weight,
                              n_components=res.n_components)

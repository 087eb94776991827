import logging
import os

import dask
import pytest

# Dask's sampling profiler off in the tests' workers, here and in the processes they start: on Python 3.11
# its thread, walking other threads' frames every 10 ms, can crash a test process with a segmentation fault
# (no test reads its profiles)
os.environ["DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"] = "False"
dask.config.set({"distributed.worker.profile.enabled": False})

from mst_dist import config as mst_config

#: Markers of tests that start worker processes, subprocesses or system services: slow too.
SLOW_KINDS = ("processes", "mpi", "slurm")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Tests that start processes are ``slow`` as well, so ``-m "not slow"`` is a quick loop.

    Under pytest-xdist (``-n 2``, ``--dist loadgroup``) every SLURM test is in one group, so the
    single-node SLURMs of two modules never run at the same time on this host, and the tests of a
    module with module- or class-scoped fixtures (a cluster of processes, say) are one group, so
    those start on one worker only; other tests go wherever a worker is free.
    """
    for item in items:
        if any(item.get_closest_marker(k) for k in SLOW_KINDS) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("xdist_group"):
            continue
        if item.get_closest_marker("slurm"):
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif _shares_fixtures(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _shares_fixtures(item):
    """Whether ``item`` uses a fixture that outlives one test but not the session."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d.scope in ("module", "class", "package") for ds in defs for d in ds)


@pytest.fixture(scope="session")
def client():
    """One in-process cluster shared by the distributed tests (1 worker x 2 threads)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(scope="session")
def client2():
    """Two in-process workers (1 thread each): chunks and tasks spread over both."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(scope="module")
def pclient():
    """Two worker processes with nannies (real pickling, real transfers)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", memory_limit="4GiB") as cluster, Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(autouse=True)
def restore_logging():
    """The command line configures logging (handlers, levels, propagation): every test gets it back."""
    names = ("mst_dist", "distributed", "bokeh", "tornado")
    saved = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).propagate,
                 logging.getLogger(n).level) for n in names}
    yield
    for n, (handlers, propagate, level) in saved.items():
        lg = logging.getLogger(n)
        lg.handlers[:] = handlers
        lg.propagate = propagate
        lg.setLevel(level)


@pytest.fixture
def environ(monkeypatch):
    """Set ``DASK_*`` variables for one test: ``environ(NAME=value)``; dask.config re-read around it."""
    def setenv(**variables):
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        mst_config.refresh()

    yield setenv
    monkeypatch.undo()
    mst_config.refresh()

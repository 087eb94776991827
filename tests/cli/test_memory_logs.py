"""Dask's memory manager seen from the command line: its repeated warnings counted (one line), paused
workers said at once, and a run the watchdog stopped ending in one error line, with no scheduler traceback."""
import logging

import dask
import pytest

from mst_dist.cli import commands as cli
from mst_dist.cli import memorylogs


def _dask_says(name, msg, *args):
    logging.getLogger(name).warning(msg, *args)


def test_pause_and_memory_warnings_are_counted_not_printed(caplog, monkeypatch):
    for name in memorylogs.LOGGERS:  # a filter of this test only
        lg = logging.getLogger(name)
        monkeypatch.setattr(lg, "filters", [f for f in lg.filters if not isinstance(f, memorylogs.MemoryNoiseFilter)])
    found = memorylogs.install()
    assert memorylogs.install() is found  # once
    with caplog.at_level(logging.WARNING):
        for _ in range(37):  # Dask's own words (distributed/worker_memory.py)
            _dask_says("distributed.worker.memory", "Worker is at %d%% memory usage. Pausing worker.  "
                       "Process memory: %s -- Worker memory limit: %s", 81, "490 MiB", "600 MiB")
            _dask_says("distributed.worker.memory", "Worker is at %d%% memory usage. Resuming worker. "
                       "Process memory: %s -- Worker memory limit: %s", 59, "350 MiB", "600 MiB")
        _dask_says("distributed.worker.memory", "Unmanaged memory use is high. This may indicate a memory leak ...")
        _dask_says("distributed.nanny.memory", "Worker tcp://127.0.0.1:1 (pid=1) exceeded 95% memory budget. "
                   "Restarting...")
    shown = [r.getMessage() for r in caplog.records]
    assert shown == ["Worker tcp://127.0.0.1:1 (pid=1) exceeded 95% memory budget. Restarting..."]  # a restart shows
    assert memorylogs.counts() == {"paused": 37, "resumed": 37, "unmanaged": 1}
    assert memorylogs.cluster_counts() == memorylogs.counts()
    assert memorylogs.summary(memorylogs.counts()) == (
        "Dask's memory manager paused workers 37 time(s), resumed them 37 time(s), warned of high memory use "
        "1 time(s) during the run (its messages counted, not shown)")
    assert memorylogs.summary({}) is None


@pytest.mark.usefixtures("restore_logging")
def test_a_run_on_paused_workers_says_so_once_and_stops_in_one_line(tmp_path, monkeypatch, capsys):
    """Every worker paused (as the memory manager does) before the run starts: the log says so once,
    at once; the watchdog stops the run; stderr holds that line and the one-line error, no traceback."""
    from distributed import Client, LocalCluster
    from distributed.core import Status

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                           memory_limit=0)
    c = Client(cluster, set_as_default=False)

    def pause(dask_worker):  # no memory limit: no memory manager resumes them
        dask_worker.status = Status.paused

    def paused_cluster(spec, gpu=False):
        c.run(pause)
        return c, lambda: (c.close(), cluster.close())

    monkeypatch.setattr(cli, "make_client", paused_cluster)
    with dask.config.set({"mst.stall-timeout": 2}):
        rc = cli.main(["run", "--generate", "grid", "--rows", "20", "--cols", "20", "--local-finish", "0",
                       "--workers", "2"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert err.count("paused: 2 of 2 workers") == 1, err
    assert "Traceback" not in err and "AssertionError" not in err and "Pausing worker" not in err, err
    assert err.strip().splitlines()[-1].startswith("mst-dist: error: the cluster cannot make progress"), err

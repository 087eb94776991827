"""Cluster kinds: their sections in run configs, open_cluster's dispatch by kind, the extras they need."""
import contextlib
import sys

import dask.config
import pytest

from mst_dist.cli.runconfig import CLUSTER_KINDS, validate_run_config
from mst_dist.config import ConfigError
from mst_dist.deploy import CLUSTERS, clusters, cuda, jobqueue, mpi, open_cluster
from support.cli import GEN, cluster_of


def error_of(**section):
    with pytest.raises(ConfigError) as info:
        cluster_of(**section)
    return str(info.value)


# --------------------------------------------------------------------------
# cluster kinds in run configs
# --------------------------------------------------------------------------

def test_every_kind_validates():
    assert cluster_of(kind="local")["kind"] == "local"
    assert cluster_of(kind="address", address="tcp://h:1") == {"kind": "address", "address": "tcp://h:1",
                                                                "wait_timeout": 600}
    c = cluster_of(kind="slurm", cores=8, memory="16GB")
    assert c["jobs"] == 1 and c["processes"] is None and c["warmup"] is True and c["wait_timeout"] == 600
    assert cluster_of(kind="pbs", cores=8, memory="16GB", resource_spec="select=1:ncpus=8")["resource_spec"]
    m = cluster_of(kind="mpi", threads_per_worker=2)
    assert m["threads_per_worker"] == 2 and m["memory_limit"] == "auto" and "n_workers" not in m
    g = cluster_of(kind="local-cuda", cuda_visible_devices="0,1")
    assert g["cuda_visible_devices"] == "0,1" and g["n_workers"] is None


@pytest.mark.parametrize("section, expect", [
    ({"kind": "slurm", "memory": "1GB"}, "cluster.cores: missing: kind 'slurm' needs cores (per job); "
                                         "set it here or in the dask config jobqueue.slurm.cores"),
    ({"kind": "pbs", "cores": 4}, "cluster.memory: missing: kind 'pbs' needs memory"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "processes": True}, "cluster.processes: expected int or null"),
    ({"kind": "slurm", "cores": "4", "memory": "1GB"}, "cluster.cores: expected int or null, got str '4'"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "job_extra_directives": "--exclusive"},
     "cluster.job_extra_directives: expected list[str] or null, got str"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "worker_extra_args": ["--x", 3]},
     "cluster.worker_extra_args[1]: expected str, got int 3"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "jobs": 0}, "cluster.jobs: must be >= 1"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "resource_spec": "x"},
     "cluster.resource_spec: only for kind 'pbs' (this is kind 'slurm')"),
    ({"kind": "mpi", "n_workers": 3}, "cluster.n_workers: only for kinds 'local', 'local-cuda' (this is kind 'mpi')"),
    ({"kind": "local", "queue": "q"}, "cluster.queue: only for kinds 'slurm', 'pbs' (this is kind 'local')"),
    ({"kind": "mpi", "wait_timeout": -1}, "cluster.wait_timeout: must be >= 0"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "qeue": "q"}, "cluster.qeue: unknown key; allowed: kind, "),
    ({"kind": "kubernetes"}, "cluster.kind: expected one of local, local-cuda, address, slurm, pbs, mpi"),
])
def test_kind_errors_name_key_and_choices(section, expect):
    assert error_of(**section).startswith(expect)


def test_jobqueue_config_fills_missing_cores_and_memory():
    with dask.config.set({"jobqueue.slurm.cores": 4, "jobqueue.slurm.memory": "8GB"}):
        c = cluster_of(kind="slurm")
    assert c["cores"] is None and c["memory"] is None  # left to dask-jobqueue's own config


def test_kind_from_dask_config_and_env(monkeypatch):
    from mst_dist import config

    monkeypatch.setenv("DASK_MST__CLUSTER__KIND", "mpi")
    monkeypatch.setenv("DASK_MST__CLUSTER__WAIT_TIMEOUT", "30")
    config.refresh()
    try:
        c = validate_run_config(GEN)["cluster"]
        assert c["kind"] == "mpi" and c["wait_timeout"] == 30
    finally:
        monkeypatch.undo()
        config.refresh()


# --------------------------------------------------------------------------
# open_cluster
# --------------------------------------------------------------------------


def test_every_config_kind_opens():
    assert tuple(CLUSTERS) == CLUSTER_KINDS


def test_unknown_kind_lists_the_choices():
    with pytest.raises(ValueError, match=r"unknown kind 'yarn'; expected one of local, local-cuda, address, "
                                         r"slurm, pbs, mpi"):
        with open_cluster({"kind": "yarn"}):
            pass


def test_gpu_only_for_local(monkeypatch):
    seen = []

    @contextlib.contextmanager
    def fake(cfg, **kw):
        seen.append((cfg["kind"], kw))
        yield "client"

    monkeypatch.setitem(clusters.CLUSTERS, "local", fake)
    monkeypatch.setitem(clusters.CLUSTERS, "slurm", fake)
    with open_cluster({"kind": "local"}, gpu=True) as c:
        assert c == "client"
    with open_cluster({"kind": "slurm"}) as c:
        assert c == "client"
    assert seen == [("local", {"gpu": True}), ("slurm", {})]
    with pytest.raises(ValueError, match="gpu=True: only for cluster kind 'local'"):
        with open_cluster({"kind": "slurm"}, gpu=True):
            pass
    assert len(seen) == 2


def test_local_kind_runs_and_closes():
    cfg = cluster_of(kind="local", n_workers=1, threads_per_worker=2, dashboard_address=None)
    with open_cluster(cfg) as client:
        assert client.submit(sum, [1, 2]).result() == 3
        (w,) = client.scheduler_info()["workers"].values()
        assert w["nthreads"] == 2
    assert client.status == "closed"


def test_missing_extra_is_named(monkeypatch):
    for name in ("dask_jobqueue", "dask_cuda", "dask_mpi"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"cluster kind 'slurm' needs dask-jobqueue.*pip install 'mst-dist\[hpc\]'"):
        jobqueue.job_cluster(cluster_of(kind="slurm", cores=1, memory="1GB"))
    with pytest.raises(ImportError, match=r"needs dask-cuda.*pip install 'mst-dist\[gpu\]'"):
        cuda.local_cuda_cluster(cluster_of(kind="local-cuda"))
    with pytest.raises(ImportError, match=r"cluster kind 'mpi' needs dask-mpi"):
        mpi.mpi_client(cluster_of(kind="mpi"))


def test_waiting_for_workers_says_so_at_once_and_every_while(caplog):
    """No worker yet: what it waits for is said at once (a warning for a cluster already up, which the
    command line shows by default) and every ``every`` seconds, then a TimeoutError; none when they are there."""
    import logging

    from distributed import Client, LocalCluster

    from mst_dist.deploy._core import wait_for_workers

    caplog.set_level(logging.INFO, logger="mst_dist")
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cl, Client(cl) as c:
        with pytest.raises(TimeoutError, match="no worker joined within 2.5 s"):
            wait_for_workers(c, {"wait_timeout": 2.5}, "the cluster at X", level=logging.WARNING, every=1)
        said = [r.getMessage() for r in caplog.records if r.name == "mst_dist"]
        assert said[0] == "the cluster at X: waiting up to 2.5 s (cluster.wait_timeout) for 1 worker(s) to join; 0 so far"
        assert len(said) >= 2 and all(s.startswith("the cluster at X: still waiting for workers: 0 of 1 joined after ")
                                      for s in said[1:])
        assert {r.levelno for r in caplog.records if r.name == "mst_dist"} == {logging.WARNING}
        cl.scale(1)
        caplog.clear()
        c.wait_for_workers(1, timeout=60)
        wait_for_workers(c, {"wait_timeout": 5}, "the cluster at X")
        assert not [r for r in caplog.records if r.name == "mst_dist"]


@pytest.mark.parametrize("address, error, cause", [
    ("tcp://10.0.0.1:8786", ConnectionResetError("[Errno 104] Connection reset by peer"), "may speak TLS"),
    ("tcp://10.0.0.1:8786", MemoryError(), "may speak TLS"),
    ("tcp://10.0.0.1:8786", TimeoutError("Timed out trying to connect"), "--host <its address>"),
    ("tls://10.0.0.1:8786", ConnectionResetError("reset by peer"), "--host <its address>"),
    ("tcp://127.0.0.1:8786", TimeoutError("Timed out trying to connect"), "is the address right?"),
])
def test_a_failed_connection_names_its_likely_cause(address, error, cause):
    assert cause in clusters._likely_cause(address, error)


def test_a_scheduler_that_does_not_answer_is_one_line_naming_the_likely_cause():
    with dask.config.set({"mst.cluster.connect-timeout": 0.5}), \
            pytest.raises(ConnectionError, match=r"tcp://127.0.0.1:1 \(--scheduler\) within 0.5 s: .*is the "
                                                 r"address right\? \(the time allowed"):
        clusters.connect_client("tcp://127.0.0.1:1", where="--scheduler")

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
    cfg = cluster_of(kind="local", processes=True, n_workers=2, threads_per_worker=1, memory_limit="700MiB",
                     dashboard_address=None)
    with open_cluster(cfg) as client:
        client.wait_for_workers(2, timeout=60)
        assert limits(client) == [700 * 2**20, 700 * 2**20]
        pids = client.run(os.getpid)  # two worker processes, not threads of this one
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()

"""mst_dist.io.reach: loopback workers refused, the run's paths probed on every worker, before any work.

The real thing (hosts of their own, a worker blind to a directory) is in
tests/deploy/test_hosts.py, in network namespaces; here the rules and the
probes on one host.
"""
import os
import types

import pytest

import mst_dist
from mst_dist.cli.commands import exit_for
from mst_dist.errors import SharedStorageError, WorkerAddressError
from mst_dist.io import reach


@pytest.mark.parametrize("scheduler, workers, where, refused", [
    ("tcp://10.0.0.1:8786", ["tcp://127.0.0.1:4001", "tcp://10.0.0.3:4001"], None, ["tcp://127.0.0.1:4001"]),
    ("tcp://10.0.0.1:8786", ["tcp://10.0.0.2:4001", "tcp://10.0.0.3:4001"], None, []),
    ("tcp://127.0.0.1:8786", ["tcp://127.0.0.1:4001"], None, []),             # one host, all on loopback
    ("tls://[::1]:8786", ["tls://[::1]:4001"], None, []),
    ("tcp://10.0.0.1:8786", ["tcp://[::1]:4001"], None, ["tcp://[::1]:4001"]),
    ("tcp://10.0.0.1:8786", ["tcp://localhost:4001"], None, ["tcp://localhost:4001"]),
    # the scheduler on every interface, its workers on loopback beside it: one host, nothing refused
    ("tcp://10.0.0.1:8786", ["tcp://127.0.0.1:4001", "tcp://127.0.0.1:4002"],
     {"tcp://127.0.0.1:4001": True, "tcp://127.0.0.1:4002": True}, []),
    # ... but a worker of another host could not fetch from them
    ("tcp://10.0.0.1:8786", ["tcp://127.0.0.1:4001", "tcp://10.0.0.3:4001"],
     {"tcp://127.0.0.1:4001": True, "tcp://10.0.0.3:4001": False}, ["tcp://127.0.0.1:4001"]),
    ("tcp://10.0.0.1:8786", ["tcp://127.0.0.1:4001"], {"tcp://127.0.0.1:4001": False}, ["tcp://127.0.0.1:4001"]),
    ("inproc://10.0.0.1/1/1", ["inproc://10.0.0.1/1/2"], None, []),
])
def test_which_workers_are_refused(scheduler, workers, where, refused):
    assert reach.loopback_workers(scheduler, workers, where) == refused


class _Client:
    """What check_worker_addresses asks of a client: the scheduler's view, and one function run there."""

    def __init__(self, scheduler, workers, where=None):
        self.info = {"address": scheduler, "workers": {w: {"name": f"w{i}"} for i, w in enumerate(workers)}}
        self.where = where

    def scheduler_info(self, n_workers=0):
        return self.info

    def run_on_scheduler(self, func):
        if self.where is None:
            raise RuntimeError("this scheduler runs nothing")
        return self.where


def test_a_loopback_worker_on_a_remote_scheduler_is_refused_naming_it_and_how_to_start_it():
    client = _Client("tcp://10.77.0.1:8786", ["tcp://127.0.0.1:44245", "tcp://10.77.0.3:40001"])
    with pytest.raises(WorkerAddressError) as info:
        reach.check_worker_addresses(client)
    e = info.value
    assert (e.workers, e.scheduler) == (("tcp://127.0.0.1:44245",), "tcp://10.77.0.1:8786")
    text = str(e)
    assert text.startswith("1 of 2 worker(s) registered with a loopback address on the scheduler at "
                           "tcp://10.77.0.1:8786: tcp://127.0.0.1:44245 (name 'w0');")
    for hint in ("--interface", "--host", "host: 127.0.0.1", "interface: eth0", "workers/cpu-worker.yaml"):
        assert hint in text
    assert isinstance(e, ConnectionError) and exit_for(e)[0] == 1


def test_loopback_workers_beside_their_scheduler_pass():
    workers = ["tcp://127.0.0.1:4001", "tcp://127.0.0.1:4002"]
    reach.check_worker_addresses(_Client("tcp://10.77.0.1:8786", workers, {w: True for w in workers}))


@pytest.mark.processes
def test_the_scheduler_says_which_workers_run_on_its_host(pclient):
    where = pclient.run_on_scheduler(reach._on_scheduler_host)
    assert sorted(where) == sorted(pclient.scheduler_info()["workers"]) and all(where.values())
    reach.check_worker_addresses(pclient)


@pytest.mark.processes
def test_a_shared_directory_passes_and_the_probes_are_removed(pclient, tmp_path):
    reach.check_shared_directory(pclient, tmp_path / "ck", "checkpoint")        # not there yet: its parent
    (tmp_path / "ck").mkdir()
    reach.check_shared_directory(pclient, tmp_path / "ck", "checkpoint")
    reach.check_shared_directory(pclient, tmp_path / "forest", "output", beside=True)
    assert sorted(os.listdir(tmp_path)) == ["ck"] and os.listdir(tmp_path / "ck") == []


def test_a_worker_that_cannot_read_the_clients_probe_says_so(tmp_path):
    worker = types.SimpleNamespace(address="tcp://10.77.0.3:40001")
    assert reach._worker_probe(str(tmp_path), ".mst-dist-probe-x", "token", dask_worker=worker) == \
        (None, "cannot read the client's probe file (No such file or directory)")
    (tmp_path / ".mst-dist-probe-x").write_text("token")
    own, why = reach._worker_probe(str(tmp_path), ".mst-dist-probe-x", "token", dask_worker=worker)
    assert why is None and (tmp_path / own).read_text() == "token" + worker.address


@pytest.mark.processes
def test_an_input_every_worker_sees_passes_and_one_they_do_not_is_named(pclient, tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("0 1 4\n1 2 1\n2 0 2\n")
    reach.check_visible(pclient, [str(p)])
    with pytest.raises(SharedStorageError) as info:
        reach.check_visible(pclient, [str(p), str(tmp_path / "gone.txt")])
    assert info.value.path == str(tmp_path / "gone.txt")
    assert sorted(info.value.workers) == sorted(pclient.scheduler_info()["workers"])
    assert f"input {str(tmp_path / 'gone.txt')!r} is not visible on 2 of 2 worker(s)" in str(info.value)


@pytest.mark.processes
def test_read_and_the_solver_check_on_their_cluster(pclient, tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("0 1 4\n1 2 1\n2 0 2\n")
    g = mst_dist.read(str(p), client=pclient)
    res = mst_dist.minimum_spanning_forest(g, pclient, checkpoint=tmp_path / "ck", output=tmp_path / "out")
    assert res.n_forest_edges == 2
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".mst-dist-probe")]


def test_the_modules_examples():
    import doctest

    out = doctest.testmod(reach, verbose=False, report=False)
    assert out.attempted >= 4 and out.failed == 0, out

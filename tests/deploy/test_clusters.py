"""open_cluster: one entry for every cluster kind, dispatched by name."""
import contextlib

import pytest

from mst_dist.cli.runconfig import CLUSTER_KINDS, validate_run_config
from mst_dist.deploy import CLUSTERS, clusters, open_cluster

GEN = {"graph": {"generate": {"kind": "grid", "rows": 4, "cols": 4}}}


def cluster_of(**section):
    return validate_run_config({**GEN, "cluster": section})["cluster"]


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

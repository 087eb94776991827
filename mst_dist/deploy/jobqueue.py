"""SLURM and PBS clusters through dask-jobqueue (cluster kinds ``slurm`` and ``pbs``).

:func:`job_cluster` builds a ``SLURMCluster``/``PBSCluster`` (no job is
submitted until :func:`open_jobqueue` scales it); ``job_cluster(cfg).job_script()``
is the batch script that would be submitted.  Keys the run config leaves unset
come from dask-jobqueue's own configuration (``jobqueue.slurm``,
``jobqueue.pbs``: your ``~/.config/dask/jobqueue.yaml``, see ``cluster/``).
Without dask-jobqueue: an :class:`ImportError` saying ``pip install 'mst-dist[hpc]'``.
"""
from __future__ import annotations

import contextlib
import logging

from mst_dist.deploy._core import WARMUP, security_of, wait_for_workers
from mst_dist.environment import optional_import

__all__ = ["JOBQUEUE_KEYS", "job_cluster", "open_jobqueue"]

logger = logging.getLogger("mst_dist")

#: Keys of dask-jobqueue's cluster classes (passed on when set; else jobqueue.<kind> config).
JOBQUEUE_KEYS = ("cores", "memory", "processes", "queue", "account", "walltime", "job_name",
                 "resource_spec", "interface", "local_directory", "log_directory", "python",
                 "job_extra_directives", "job_script_prologue", "worker_extra_args")


def job_cluster(cfg):
    """The dask-jobqueue cluster of a ``slurm`` or ``pbs`` section (scheduler started, no jobs yet).

    With ``interface`` the scheduler and the workers listen on that network
    interface only (dask-jobqueue's ``--interface``); the dashboard on
    ``dashboard_address`` (loopback by default).  ``security``: the
    scheduler and the workers speak ``tls://`` with those certificates
    (the files must be readable on the compute nodes too).
    """
    kind = cfg["kind"]
    jq = optional_import("dask_jobqueue", extra="hpc", what=f"cluster kind {kind!r}")
    cls = {"slurm": jq.SLURMCluster, "pbs": jq.PBSCluster}[kind]
    kw = {k: cfg[k] for k in JOBQUEUE_KEYS if cfg.get(k) is not None}
    if cfg.get("warmup"):
        import dask

        args = kw.get("worker_extra_args")
        if args is None:
            args = dask.config.get(f"jobqueue.{kind}.worker-extra-args", None) or []
        if WARMUP not in args:
            kw["worker_extra_args"] = [*args, "--preload", WARMUP]
    kw["scheduler_options"] = {"dashboard_address": cfg.get("dashboard_address")}
    try:
        security = security_of(cfg.get("security"))
    except ValueError as e:
        from mst_dist.config import ConfigError

        raise ConfigError(f"cluster.{e}", key="cluster.security") from None
    if security is not None:
        # dask-jobqueue then speaks tls:// and gives the workers --tls-ca-file/--tls-cert/--tls-key
        kw["security"] = security
    return cls(**kw)


@contextlib.contextmanager
def open_jobqueue(cfg):
    """A client of ``cluster.jobs`` batch jobs' workers; the jobs are cancelled on exit.

    Waits up to ``cluster.wait_timeout`` for every worker of the jobs, and
    goes on with those that came when some did.
    """
    from distributed import Client

    from mst_dist.diagnostics import dashboard

    kind = cfg["kind"]
    with job_cluster(cfg) as cluster, Client(cluster) as client:
        dashboard.register(client)
        cluster.scale(jobs=cfg["jobs"])
        expected = cfg["jobs"] * cluster._dummy_job.worker_processes
        logger.info("submitted %d %s job(s) of %d worker(s); waiting for them; dashboard %s",
                    cfg["jobs"], kind, expected // cfg["jobs"], dashboard.dashboard_link(client) or "off")
        wait_for_workers(client, cfg, kind, expected)
        yield client

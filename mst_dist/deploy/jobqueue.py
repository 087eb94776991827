"""SLURM and PBS clusters through dask-jobqueue (cluster kinds ``slurm`` and ``pbs``).

:func:`job_cluster` builds a ``SLURMCluster``/``PBSCluster`` (no job is
submitted until :func:`open_jobqueue` scales it); :func:`job_script` renders
the batch script that would be submitted without starting a scheduler.
Keys the run config leaves unset come from dask-jobqueue's own configuration
(``jobqueue.slurm``, ``jobqueue.pbs``: your ``~/.config/dask/jobqueue.yaml``,
see ``cluster/``).
Without dask-jobqueue: an :class:`ImportError` saying ``pip install 'mst-dist[hpc]'``.
"""
from __future__ import annotations

import contextlib
import logging

from mst_dist.deploy._core import LOOPBACK, WARMUP, security_of, wait_for_workers
from mst_dist.environment import optional_import

__all__ = ["JOBQUEUE_KEYS", "ADDRESS_PLACEHOLDER", "job_cluster", "job_script", "open_jobqueue"]

logger = logging.getLogger("mst_dist")

#: Keys of dask-jobqueue's cluster classes (passed on when set; else jobqueue.<kind> config).
JOBQUEUE_KEYS = ("cores", "memory", "processes", "queue", "account", "walltime", "job_name",
                 "resource_spec", "interface", "local_directory", "log_directory", "python",
                 "job_extra_directives", "job_script_prologue", "worker_extra_args")


def job_cluster(cfg, asynchronous=False):
    """The dask-jobqueue cluster of a ``slurm`` or ``pbs`` section (scheduler started, no jobs yet).

    ``asynchronous=True`` within a running event loop: the cluster object
    only, nothing started until it is awaited (how :func:`job_script`
    renders a script).

    With ``interface`` the scheduler and the workers listen on that network
    interface only (dask-jobqueue's ``--interface``; the workers' web
    servers too, :func:`_worker_web_server_args`); the dashboard on
    ``dashboard_address`` (loopback by default).  ``security``: the
    scheduler and the workers speak ``tls://`` with those certificates
    (the files must be readable on the compute nodes too).
    """
    kind = cfg["kind"]
    jq = optional_import("dask_jobqueue", extra="hpc", what=f"cluster kind {kind!r}")
    cls = {"slurm": jq.SLURMCluster, "pbs": jq.PBSCluster}[kind]
    kw = {k: cfg[k] for k in JOBQUEUE_KEYS if cfg.get(k) is not None}
    if cfg.get("warmup"):
        args = _worker_args(kw, kind)
        if WARMUP not in args:
            kw["worker_extra_args"] = [*args, "--preload", WARMUP]
    listen = _worker_web_server_args(cfg, kw)
    if listen:
        kw["worker_extra_args"] = [*_worker_args(kw, kind), *listen]
    dash = cfg.get("dashboard_address")
    # without a dashboard the scheduler's web server (health, metrics) stays: on loopback, not :8787
    kw["scheduler_options"] = ({"dashboard_address": dash} if dash else
                               {"dashboard": False, "dashboard_address": f"{LOOPBACK}:0"})
    try:
        security = security_of(cfg.get("security"))
    except ValueError as e:
        from mst_dist.config import ConfigError

        raise ConfigError(f"cluster.{e}", key="cluster.security") from None
    if security is not None:
        # dask-jobqueue then speaks tls:// and gives the workers --tls-ca-file/--tls-cert/--tls-key
        kw["security"] = security
    return cls(asynchronous=asynchronous, **kw)


def _worker_args(kw, kind):
    """The workers' extra ``dask worker`` arguments: the run config's, else dask-jobqueue's setting."""
    import dask

    args = kw.get("worker_extra_args")
    if args is None:
        args = dask.config.get(f"jobqueue.{kind}.worker-extra-args", None) or []
    return list(args)


def _worker_web_server_args(cfg, kw):
    """``--dashboard-address IP:0`` for the jobs' workers when an interface is given, else ``[]``.

    ``dask worker --interface ib0`` puts the worker's comm port on that
    interface but its web server (``--dashboard-address``, default ``:0``)
    on every interface; the interface's address is known only on the node,
    so the job script asks the job's Python for it.
    """
    import re
    import sys

    import dask

    kind = cfg["kind"]
    interface = kw.get("interface") or dask.config.get(f"jobqueue.{kind}.interface", None)
    if not interface or "--dashboard-address" in _worker_args(kw, kind):
        return []
    if not re.fullmatch(r"[\w.:@-]+", interface):
        from mst_dist.config import ConfigError

        raise ConfigError(f"cluster.interface: {interface!r} is not a network interface name", key="cluster.interface")
    python = kw.get("python") or dask.config.get(f"jobqueue.{kind}.python", None) or sys.executable
    ip = f"""$({python} -c "from distributed.utils import get_ip_interface; print(get_ip_interface('{interface}'))")"""
    return ["--dashboard-address", f"{ip}:0"]


#: What dask-jobqueue writes for the scheduler's address in a script rendered before it starts.
ADDRESS_PLACEHOLDER = "<insert-scheduler-address-here>"


def job_script(cfg):
    """The batch script ``cfg``'s jobs would run, rendered without starting anything.

    dask-jobqueue builds the cluster object without starting its scheduler
    when it is made asynchronous inside a running event loop and never
    awaited; its ``job_script()`` then writes ``ADDRESS_PLACEHOLDER`` where a
    started cluster's scheduler address would be (that address exists only
    while the cluster runs: ``mst-dist run`` submits the jobs itself).  No
    port is opened, no dashboard served.  Call it from synchronous code.
    """
    import asyncio

    async def render():
        cluster = job_cluster(cfg, asynchronous=True)
        try:
            script = cluster.job_script()
            if "--protocol tls://" in script:  # the workers speak TLS; the placeholder says tcp://
                script = script.replace(f"tcp://{ADDRESS_PLACEHOLDER}", f"tls://{ADDRESS_PLACEHOLDER}")
            return script
        finally:
            await cluster.close()  # nothing was started: releases the object only

    return asyncio.run(render())


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

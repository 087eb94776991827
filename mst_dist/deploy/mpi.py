"""The ranks of an MPI job as a cluster through dask-mpi (cluster kind ``mpi``).

:func:`mpi_client` turns the ranks into a cluster: rank 0 the scheduler, rank 1
the client (it returns a client there), the others workers (it returns
``None`` there once the run is over).  Without dask-mpi or mpi4py: an
:class:`ImportError` saying ``pip install 'mst-dist[hpc]'``.
"""
from __future__ import annotations

import contextlib
import logging
import os

from mst_dist.deploy._core import LOOPBACK, WARMUP, protocol_of, security_of, wait_for_workers
from mst_dist.environment import optional_import

__all__ = ["listen_interface", "loopback_interface", "mpi_client", "open_mpi", "tls_settings"]

logger = logging.getLogger("mst_dist")


def mpi_client(cfg, comm=None):
    """Start dask-mpi on this MPI job's ranks: ``(client, close, n_workers)`` on rank 1, else ``None``.

    On ranks other than 1 this returns only once the cluster has shut down
    (``close()`` on rank 1 sends the shutdown).  The ranks listen on
    :func:`listen_interface` (loopback on one machine), the dashboard on
    ``dashboard_address`` (loopback by default); ``security``: ``tls://``
    with those certificates.
    """
    dm = optional_import("dask_mpi", extra="hpc", what="cluster kind 'mpi'")
    if comm is None:
        comm = optional_import("mpi4py.MPI", extra="hpc", what="cluster kind 'mpi'").COMM_WORLD
    if comm.Get_size() < 3:
        from mst_dist.config import ConfigError

        raise ConfigError(f"cluster.kind: 'mpi' needs at least 3 MPI ranks (rank 0 the scheduler, rank 1 "
                          f"the run, the others workers); this job has {comm.Get_size()}: start it with "
                          f"mpirun -n 4 mst-dist run --mpi CONFIG", key="cluster.kind")
    if comm.Get_rank() != 1:
        # only rank 1 (the run) writes to stdout: what the others would print (a colour reset that
        # Numba's colorama writes at exit) must not land in a --json report
        import os
        import sys

        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    import dask.config

    from mst_dist.config import ConfigError

    dash = cfg.get("dashboard_address")
    # a worker that cannot reach the scheduler (the run failed while it started) exits, so that
    # mpirun ends instead of hanging
    opts = {"death_timeout": 60}
    if cfg.get("warmup"):
        opts["preload"] = [WARMUP]
    try:
        security = security_of(cfg.get("security"))
    except ValueError as e:
        raise ConfigError(f"cluster.{e}", key="cluster.security") from None
    interface = listen_interface(cfg.get("interface"), comm)
    # dask-mpi's scheduler takes no security: every rank reads it from Dask's settings
    with dask.config.set(tls_settings(cfg.get("security"))):
        is_client = dm.initialize(interface=interface, nthreads=cfg.get("threads_per_worker") or 1,
                                  local_directory=cfg.get("local_directory"),
                                  memory_limit=cfg.get("memory_limit", "auto"), dashboard=bool(dash),
                                  dashboard_address=dash or f"{LOOPBACK}:0", protocol=protocol_of(security),
                                  worker_options=opts, comm=comm, exit=False)
    if not is_client:
        return None
    from distributed import Client

    client = Client(timeout=cfg.get("wait_timeout") or 600, security=security)

    def close():
        try:
            client.close()
        finally:
            with dask.config.set(tls_settings(cfg.get("security"))):  # its own client, from the settings
                dm.send_close_signal()

    return client, close, comm.Get_size() - 2


def loopback_interface():
    """The name of this machine's loopback network interface (``lo`` on Linux)."""
    import psutil

    for name, addresses in psutil.net_if_addrs().items():
        if any(a.address == LOOPBACK for a in addresses):
            return name
    raise RuntimeError(f"no network interface holds {LOOPBACK}")  # pragma: no cover


def listen_interface(interface, comm):
    """The network interface this rank's scheduler or worker listens on.

    ``interface`` when given (``cluster.interface``); else loopback when
    every rank runs on this machine; else ``None`` (Dask's default: every
    interface) with a warning to set ``cluster.interface``.  Collective:
    every rank calls it.
    """
    import socket

    hosts = comm.allgather(socket.gethostname())
    if interface:
        return interface
    if len(set(hosts)) == 1:
        return loopback_interface()
    if comm.Get_rank() == 1:
        logger.warning("the MPI ranks run on %d hosts and cluster.interface is unset: the scheduler and "
                       "the workers listen on every network interface; set cluster.interface (e.g. ib0) "
                       "to listen on one", len(set(hosts)))
    return None


def tls_settings(section):
    """Dask's ``distributed.comm.tls.*`` settings of a ``cluster.security`` section (``{}`` without one)."""
    section = {k: os.path.expanduser(v) if isinstance(v, str) else v
               for k, v in (section or {}).items() if v is not None}
    if not section.get("cert"):
        return {}
    out = {"distributed.comm.tls.ca-file": section["ca_file"],
           "distributed.comm.require-encryption": section.get("require_encryption", True)}
    for role in ("scheduler", "worker", "client"):
        out[f"distributed.comm.tls.{role}.cert"] = section["cert"]
        if section.get("key"):
            out[f"distributed.comm.tls.{role}.key"] = section["key"]
    return out


@contextlib.contextmanager
def open_mpi(cfg):
    """On rank 1 a client of the MPI job's workers; elsewhere ``None``, once the run is over.

    Closing on rank 1 shuts the scheduler and the workers down.
    """
    made = mpi_client(cfg)
    if made is None:
        yield None
        return
    from mst_dist.diagnostics import dashboard
    from mst_dist.engine.cluster_info import scheduler_workers

    client, close, n_workers = made
    try:
        wait_for_workers(client, cfg, "mpi", n_workers)  # every worker rank's worker
        dashboard.register(client)
        logger.info("dask-mpi cluster: %d worker(s); dashboard %s", len(scheduler_workers(client)),
                    dashboard.dashboard_link(client) or "off")
        yield client
    finally:
        close()

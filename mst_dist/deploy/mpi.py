"""The ranks of an MPI job as a cluster through dask-mpi (cluster kind ``mpi``).

:func:`mpi_client` turns the ranks into a cluster: rank 0 the scheduler, rank 1
the client (it returns a client there), the others workers (it returns
``None`` there once the run is over).  Without dask-mpi or mpi4py: an
:class:`ImportError` saying ``pip install 'mst-dist[hpc]'``.
"""
from __future__ import annotations

import contextlib
import logging

from mst_dist.deploy._core import WARMUP, wait_for_workers
from mst_dist.environment import optional_import

__all__ = ["mpi_client", "open_mpi"]

logger = logging.getLogger("mst_dist")


def mpi_client(cfg, comm=None):
    """Start dask-mpi on this MPI job's ranks: ``(client, close, n_workers)`` on rank 1, else ``None``.

    On ranks other than 1 this returns only once the cluster has shut down
    (``close()`` on rank 1 sends the shutdown).
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
    dash = cfg.get("dashboard_address")
    # a worker that cannot reach the scheduler (the run failed while it started) exits, so that
    # mpirun ends instead of hanging
    opts = {"death_timeout": 60}
    if cfg.get("warmup"):
        opts["preload"] = [WARMUP]
    is_client = dm.initialize(interface=cfg.get("interface"), nthreads=cfg.get("threads_per_worker") or 1,
                              local_directory=cfg.get("local_directory"),
                              memory_limit=cfg.get("memory_limit", "auto"), dashboard=bool(dash),
                              dashboard_address=dash or ":0", worker_options=opts, comm=comm, exit=False)
    if not is_client:
        return None
    from distributed import Client

    client = Client(timeout=cfg.get("wait_timeout") or 600)

    def close():
        try:
            client.close()
        finally:
            dm.send_close_signal()

    return client, close, comm.Get_size() - 2


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

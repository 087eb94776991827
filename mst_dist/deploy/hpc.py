"""Clusters beyond the embedded one: dask-cuda, dask-jobqueue (SLURM, PBS) and dask-mpi.

Each function takes a validated ``cluster`` section of a run config (see
:func:`mst_dist.cli.runconfig.validate_run_config`).  The optional dependencies are
imported inside the function that needs them; a missing one is an
:class:`ImportError` naming the extra to install.

- :func:`job_cluster` builds a ``SLURMCluster``/``PBSCluster`` (no job is
  submitted until :func:`open_cluster` scales it); ``job_cluster(cfg).job_script()``
  is the batch script that would be submitted.  Keys the run config leaves
  unset come from dask-jobqueue's own configuration (``jobqueue.slurm``,
  ``jobqueue.pbs``: your ``~/.config/dask/jobqueue.yaml``, see ``cluster/``).
- :func:`mpi_client` turns the ranks of an MPI job into a cluster: rank 0 the
  scheduler, rank 1 the client (it returns a client there), the others
  workers (it returns ``None`` there once the run is over).
- :func:`open_cluster` is the context manager the command line uses for every
  kind: ``with open_cluster(cfg) as client: ...``.
"""
from __future__ import annotations

import contextlib
import logging

from mst_dist.environment import optional_import

__all__ = ["job_cluster", "local_cuda_cluster", "mpi_client", "open_cluster", "JOBQUEUE_KEYS", "WARMUP"]

logger = logging.getLogger("mst_dist")

#: The worker preload that compiles the kernels at start (``dask worker --preload``).
WARMUP = "mst_dist.engine.warmup"

#: Keys of dask-jobqueue's cluster classes (passed on when set; else jobqueue.<kind> config).
JOBQUEUE_KEYS = ("cores", "memory", "processes", "queue", "account", "walltime", "job_name",
                 "resource_spec", "interface", "local_directory", "log_directory", "python",
                 "job_extra_directives", "job_script_prologue", "worker_extra_args")


def job_cluster(cfg):
    """The dask-jobqueue cluster of a ``slurm`` or ``pbs`` section (scheduler started, no jobs yet)."""
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
    return cls(**kw)


def local_cuda_cluster(cfg):
    """A dask-cuda ``LocalCUDACluster``: one worker process per visible GPU.

    Each worker advertises ``resources={"GPU": 1}`` (the engine runs the CuPy
    kernels on the chunks it places there), has ``threads_per_worker`` threads
    (default one: a thread drives the device) and, unless ``warmup`` is off,
    preloads :mod:`mst_dist.engine.warmup`, which compiles the kernels as it starts.
    Without dask-cuda: an :class:`ImportError` saying ``pip install 'mst-dist[gpu]'``.
    """
    dc = optional_import("dask_cuda", extra="gpu", what="cluster kind 'local-cuda'")
    kw = {"threads_per_worker": cfg.get("threads_per_worker") or 1,
          "memory_limit": cfg.get("memory_limit", "auto"),
          "dashboard_address": cfg.get("dashboard_address"),
          "resources": {"GPU": 1}}
    if cfg.get("n_workers") is not None:
        kw["n_workers"] = cfg["n_workers"]
    if cfg.get("cuda_visible_devices") is not None:
        kw["CUDA_VISIBLE_DEVICES"] = cfg["cuda_visible_devices"]
    if cfg.get("warmup"):
        kw["preload"] = [WARMUP]
    return dc.LocalCUDACluster(**kw)


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


def _ready(client, cfg, what, n=1):
    """Wait up to ``cluster.wait_timeout`` for ``n`` workers; with fewer but some, go on with those."""
    timeout = cfg.get("wait_timeout") or 600
    try:
        client.wait_for_workers(n, timeout=timeout)
    except TimeoutError:
        have = len(client.scheduler_info()["workers"])
        if not have:
            raise TimeoutError(f"{what}: no worker joined within {timeout:g} s (cluster.wait_timeout); "
                               "are the workers or their jobs still starting?") from None
        logger.warning("%s: %d of %d workers joined within %g s (cluster.wait_timeout); running on those",
                       what, have, n, timeout)


@contextlib.contextmanager
def open_cluster(cfg, gpu=False):
    """A client of the cluster a ``cluster`` section describes, closed (jobs cancelled) on exit.

    Yields ``None`` on the MPI ranks that served as scheduler or workers,
    after the run on rank 1 has finished.  Clusters mst-dist starts get the
    dashboard's MST page (:mod:`mst_dist.diagnostics.dashboard`).  ``gpu`` (kind
    ``local`` only): the in-process workers advertise ``resources={"GPU": 1}``
    and run the GPU kernels on this machine's device, as the engine's
    embedded default does where it can.
    """
    from distributed import Client

    from mst_dist.diagnostics import dashboard

    kind = cfg["kind"]
    if kind == "local":
        from mst_dist.deploy.local import embedded

        with embedded(n_workers=cfg.get("n_workers") or 1, threads_per_worker=cfg.get("threads_per_worker"),
                      processes=cfg.get("processes"), dashboard_address=cfg.get("dashboard_address"),
                      gpu=gpu) as c:
            yield c
        return
    if kind == "address":
        logger.info("connecting to the scheduler at %s", cfg["address"])
        with Client(cfg["address"]) as c:
            # the MST page, unless the scheduler has it (--preload mst_dist.diagnostics.dashboard) or cannot
            # import mst_dist
            dashboard.register(c, quiet=True)
            _ready(c, cfg, f"the cluster at {cfg['address']}")
            yield c
        return
    if kind == "mpi":
        made = mpi_client(cfg)
        if made is None:
            yield None
            return
        client, close, n_workers = made
        try:
            _ready(client, cfg, "mpi", n_workers)  # every worker rank's worker
            dashboard.register(client)
            logger.info("dask-mpi cluster: %d worker(s); dashboard %s",
                        len(client.scheduler_info()["workers"]),
                        dashboard.dashboard_link(client) or "off")
            yield client
        finally:
            close()
        return
    cluster = local_cuda_cluster(cfg) if kind == "local-cuda" else job_cluster(cfg)
    with cluster, Client(cluster) as client:
        dashboard.register(client)
        if kind in ("slurm", "pbs"):
            cluster.scale(jobs=cfg["jobs"])
            expected = cfg["jobs"] * cluster._dummy_job.worker_processes
            logger.info("submitted %d %s job(s) of %d worker(s); waiting for them; dashboard %s",
                        cfg["jobs"], kind, expected // cfg["jobs"], dashboard.dashboard_link(client) or "off")
            _ready(client, cfg, kind, expected)
        yield client

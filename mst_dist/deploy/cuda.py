"""This machine's GPUs as a cluster through dask-cuda (cluster kind ``local-cuda``)."""
from __future__ import annotations

import contextlib

from mst_dist.deploy._core import LOOPBACK, WARMUP, protocol_of, security_of
from mst_dist.environment import optional_import

__all__ = ["local_cuda_cluster", "open_local_cuda"]


def local_cuda_cluster(cfg):
    """A dask-cuda ``LocalCUDACluster``: one worker process per visible GPU.

    Each worker advertises ``resources={"GPU": 1}`` (the engine runs the CuPy
    kernels on the chunks it places there), has ``threads_per_worker`` threads
    (default one: a thread drives the device) and, unless ``warmup`` is off,
    preloads :mod:`mst_dist.engine.warmup`, which compiles the kernels as it starts.
    The scheduler and the worker processes listen on 127.0.0.1 (a
    ``LocalCluster``'s default), the dashboard on ``dashboard_address``;
    ``security`` makes them speak ``tls://``.
    Without dask-cuda: an :class:`ImportError` saying ``pip install 'mst-dist[gpu]'``.
    """
    dc = optional_import("dask_cuda", extra="gpu", what="cluster kind 'local-cuda'")
    kw = {"threads_per_worker": cfg.get("threads_per_worker") or 1,
          "memory_limit": cfg.get("memory_limit", "auto"),
          "dashboard_address": cfg.get("dashboard_address"), "host": LOOPBACK,
          "resources": {"GPU": 1}}
    if not kw["dashboard_address"]:  # the scheduler's web server (health, metrics) stays, on loopback
        kw["scheduler_kwargs"] = {"dashboard_address": f"{LOOPBACK}:0"}
    if cfg.get("n_workers") is not None:
        kw["n_workers"] = cfg["n_workers"]
    if cfg.get("cuda_visible_devices") is not None:
        kw["CUDA_VISIBLE_DEVICES"] = cfg["cuda_visible_devices"]
    if cfg.get("warmup"):
        kw["preload"] = [WARMUP]
    try:
        security = security_of(cfg.get("security"), temporary=True)
    except ValueError as e:
        from mst_dist.config import ConfigError

        raise ConfigError(f"cluster.{e}", key="cluster.security") from None
    if security is not None:
        kw.update(security=security, protocol=protocol_of(security) or "tcp")
    return dc.LocalCUDACluster(**kw)


@contextlib.contextmanager
def open_local_cuda(cfg):
    """A client of :func:`local_cuda_cluster`, the cluster closed on exit."""
    from distributed import Client

    from mst_dist.diagnostics import dashboard

    with local_cuda_cluster(cfg) as cluster, Client(cluster) as client:
        dashboard.register(client)
        yield client

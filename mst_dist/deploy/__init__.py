"""Clusters mst-dist starts or joins: embedded/local, local CUDA, SLURM/PBS (dask-jobqueue), MPI.

``with open_cluster(cfg) as client: ...`` opens any kind (see
:mod:`mst_dist.deploy.clusters`); one module per kind: :mod:`~mst_dist.deploy.local`,
:mod:`~mst_dist.deploy.cuda`, :mod:`~mst_dist.deploy.jobqueue`, :mod:`~mst_dist.deploy.mpi`.
"""
from mst_dist.deploy._core import memory_limit_value, security_of
from mst_dist.deploy.clusters import CLUSTERS, open_cluster

__all__ = ["CLUSTERS", "memory_limit_value", "open_cluster", "security_of"]

"""Cluster layouts for choosing a kind of run without a cluster."""
from mst_dist.engine.runs.connect import ClusterLayout


def layout(min_memory, max_memory=None, workers=2):
    """``workers`` CPU workers of ``min_memory`` bytes (the largest ``max_memory``), 16 GiB in all."""
    names = tuple(f"w{i}" for i in range(workers))
    return ClusterLayout(workers=names, threads=workers, kinds=dict.fromkeys(names, "cpu"), device_memory=None,
                         min_memory=min_memory, max_memory=min_memory if max_memory is None else max_memory,
                         total_memory=2**34, throughput=None, measured=None)

"""Cluster kind local-cuda (dask-cuda): the options that reach LocalCUDACluster, and the gpu extra."""
import os
import sys

from mst_dist.deploy import cuda
from support import ROOT
from support.cli import cluster_of


def test_local_cuda_options(monkeypatch):
    """What reaches dask-cuda's LocalCUDACluster (a stand-in module: no GPU here)."""
    import types

    seen = {}
    fake = types.ModuleType("dask_cuda")
    fake.LocalCUDACluster = lambda **kw: seen.update(kw) or "cluster"
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    assert cuda.local_cuda_cluster(cluster_of(kind="local-cuda", n_workers=2, cuda_visible_devices="0,1",
                                              memory_limit="8GiB")) == "cluster"
    assert seen == {"n_workers": 2, "CUDA_VISIBLE_DEVICES": "0,1", "threads_per_worker": 1,
                    "memory_limit": "8GiB", "dashboard_address": "127.0.0.1:0", "host": "127.0.0.1", "resources": {"GPU": 1},
                    "preload": ["mst_dist.engine.warmup"]}


def test_local_cuda_defaults(monkeypatch):
    """Unset keys: one thread per GPU worker, every visible GPU, the warm-up preload; warmup: false drops it."""
    import types

    seen = []
    fake = types.ModuleType("dask_cuda")
    fake.LocalCUDACluster = lambda **kw: seen.append(kw)
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    cuda.local_cuda_cluster(cluster_of(kind="local-cuda"))
    cuda.local_cuda_cluster(cluster_of(kind="local-cuda", warmup=False, threads_per_worker=2))
    assert seen[0] == {"threads_per_worker": 1, "memory_limit": "auto", "dashboard_address": "127.0.0.1:0",
                       "host": "127.0.0.1", "resources": {"GPU": 1}, "preload": ["mst_dist.engine.warmup"]}
    assert "preload" not in seen[1] and seen[1]["threads_per_worker"] == 2 and seen[1]["resources"] == {"GPU": 1}


def test_gpu_extra():
    """pip install 'mst-dist[gpu]' brings CuPy and dask-cuda; CI (no GPU) installs neither."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert extras["gpu"] == ["cupy-cuda12x", "dask-cuda"]
    assert not {"cupy-cuda12x", "dask-cuda"} & {d.split(">")[0].split("=")[0] for d in extras["test"]}
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        assert "gpu" not in f.read()

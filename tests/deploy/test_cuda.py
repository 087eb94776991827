"""Cluster kind local-cuda (dask-cuda): the options that reach LocalCUDACluster, and the gpu extra."""
import os
import sys

import pytest

from mst_dist.deploy import cuda
from support import ROOT
from support.cli import cluster_of
from support.dask_cuda_api import accepted, checked


def test_local_cuda_options(monkeypatch):
    """What reaches dask-cuda's LocalCUDACluster (a stand-in module: no GPU here)."""
    import types

    seen = {}
    fake = types.ModuleType("dask_cuda")
    fake.LocalCUDACluster = checked("LocalCUDACluster", lambda **kw: seen.update(kw) or "cluster")
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
    fake.LocalCUDACluster = checked("LocalCUDACluster", lambda **kw: seen.append(kw))
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    cuda.local_cuda_cluster(cluster_of(kind="local-cuda"))
    cuda.local_cuda_cluster(cluster_of(kind="local-cuda", warmup=False, threads_per_worker=2))
    assert seen[0] == {"threads_per_worker": 1, "memory_limit": "auto", "dashboard_address": "127.0.0.1:0",
                       "host": "127.0.0.1", "resources": {"GPU": 1}, "preload": ["mst_dist.engine.warmup"]}
    assert "preload" not in seen[1] and seen[1]["threads_per_worker"] == 2 and seen[1]["resources"] == {"GPU": 1}


def test_stand_in_takes_only_what_dask_cuda_takes():
    """The stand-ins above check their options against dask-cuda's signatures (the installed one's
    where present): a misspelled option fails as it would on a GPU machine."""
    assert {"CUDA_VISIBLE_DEVICES", "n_workers", "rmm_pool_size"} <= accepted("LocalCUDACluster")
    assert {"resources", "preload", "dashboard_address", "host"} <= accepted("LocalCUDACluster")
    fake = checked("LocalCUDACluster", lambda **kw: kw)
    assert fake(n_workers=1, threads_per_worker=1) == {"n_workers": 1, "threads_per_worker": 1}
    with pytest.raises(TypeError, match="unexpected keyword argument.*cuda_visible_devices"):
        fake(cuda_visible_devices="0")
    with pytest.raises(TypeError, match="rmm_pool"):
        fake(rmm_pool="24GB")


def test_gpu_worker_spec_options_are_cuda_workers():
    """workers/gpu-worker.yaml's options, the commented RMM ones too, are CUDAWorker's."""
    import re

    import yaml

    text = open(os.path.join(ROOT, "workers", "gpu-worker.yaml")).read()
    spec = yaml.safe_load(text)
    assert spec["cls"] == "dask_cuda.CUDAWorker"
    commented = set(re.findall(r"^  # ([a-z_]+): ", text, re.M))
    assert {"rmm_pool_size", "rmm_allocator_external_lib_list"} <= commented
    assert set(spec["opts"]) | commented <= accepted("CUDAWorker"), \
        (set(spec["opts"]) | commented) - accepted("CUDAWorker")


def test_gpu_extra():
    """pip install 'mst-dist[gpu]' brings CuPy and dask-cuda; CI (no GPU) installs neither."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert extras["gpu"] == ["cupy-cuda12x", "dask-cuda"]
    assert not {"cupy-cuda12x", "dask-cuda"} & {d.split(">")[0].split("=")[0] for d in extras["test"]}
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        assert "gpu" not in f.read()

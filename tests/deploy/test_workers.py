"""Workers started by hand: the worker specs in workers/ and the warm-up preload they run."""
import os
import subprocess
import sys

import pytest
import yaml

import mst_dist
from mst_dist.engine import warmup
from support import ROOT
from support.cli import cli_env
from support.dask_cuda_api import accepted
from support.oracle import assert_result, expected


#: The engine's task functions a run calls, which the warm-up must have run once.
RUN_TASKS = ("prepare", "map_round", "merge", "contract", "split_light", "solve_local", "labels", "forest_ids")


def test_warmup_runs_the_kernels(caplog, monkeypatch):
    """warm() runs every task function of a run, once per weight type it is given; the preload logs it."""
    from mst_dist.engine import tasks

    calls = []

    def spy(name, real):
        def call(*args, **kwargs):
            calls.append((name, args[0][2].dtype.name if name == "prepare" else None))
            return real(*args, **kwargs)
        return call

    for name in RUN_TASKS:
        monkeypatch.setattr(tasks, name, spy(name, getattr(tasks, name)))
    for dtype in ("int64", "float64"):
        calls.clear()
        seconds = warmup.warm(weight_dtypes=(dtype,))
        assert isinstance(seconds, float) and seconds > 0
        assert {name for name, _ in calls} == set(RUN_TASKS), dtype
        assert {dt for name, dt in calls if name == "prepare"} == {dtype}
    monkeypatch.undo()
    caplog.set_level("INFO", logger="mst_dist.engine.warmup")
    warmup.dask_setup(None)
    assert "kernels warmed up" in caplog.text and "failed" not in caplog.text


def spec_of(name):
    with open(os.path.join(ROOT, "workers", name)) as f:
        text = f.read()
    return yaml.safe_load(text), text


def flag_form(text):
    """The ``dask worker`` / ``dask cuda worker`` command in a spec's comments: ``{flag: value}``."""
    lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("#")]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("dask worker") or ln.startswith("dask cuda worker"))
    cmd = ""
    for ln in lines[start:]:
        cmd += " " + ln.rstrip("\\").strip()
        if not ln.endswith("\\"):
            break
    words = cmd.split()
    return {w: words[i + 1] for i, w in enumerate(words) if w.startswith("--")}


def resources_of(value):
    """Resources as the workers see them: a mapping, or ``--resources``' string ("GPU=1 CPU=2")."""
    if isinstance(value, dict):
        return {k: float(v) for k, v in value.items()}
    return {k: float(v) for k, v in (pair.split("=") for pair in value.replace(",", " ").split())}


#: Parameters of dask-cuda's CUDAWorker (26.x), and the Nanny options it passes on (**kwargs).
CUDA_WORKER_OPTIONS = {
    "host", "nthreads", "name", "memory_limit", "device_memory_limit", "enable_cudf_spill", "cudf_spill_stats",
    "rmm_pool_size", "rmm_maximum_pool_size", "rmm_managed_memory", "rmm_async",
    "rmm_allocator_external_lib_list", "rmm_release_threshold", "rmm_log_directory", "rmm_track_allocations",
    "pid_file", "resources", "dashboard", "dashboard_address", "local_directory", "shared_filesystem",
    "scheduler_file", "interface", "preload", "dashboard_prefix", "security", "enable_tcp_over_ucx",
    "enable_infiniband", "enable_nvlink", "enable_rdmacm", "jit_unspill", "worker_class", "pre_import",
    "death_timeout", "protocol",
}


def test_gpu_worker_spec():
    """workers/gpu-worker.yaml: dask-cuda's CUDAWorker, one thread, resources GPU=1, the warm-up preload."""
    spec, text = spec_of("gpu-worker.yaml")
    assert spec["cls"] == "dask_cuda.CUDAWorker"
    opts = spec["opts"]
    assert set(opts) <= CUDA_WORKER_OPTIONS, set(opts) - CUDA_WORKER_OPTIONS
    assert isinstance(opts["resources"], str)  # CUDAWorker takes --resources' string, not a mapping
    assert resources_of(opts["resources"]) == {"GPU": 1.0}
    assert opts["preload"] == ["mst_dist.engine.warmup"] and opts["nthreads"] == 1
    assert "dask spec tcp://SCHEDULER:8786 --spec-file workers/gpu-worker.yaml" in text
    assert "pip install 'mst-dist[gpu]'" in text


@pytest.mark.parametrize("name", ["cpu-worker.yaml", "gpu-worker.yaml"])
def test_worker_spec_flags_in_comments_match(name):
    """The flag form in a spec's comments starts the same worker as the spec."""
    spec, text = spec_of(name)
    opts = spec["opts"]
    flags = flag_form(text)
    assert set(flags) == {"--host", "--nthreads", "--memory-limit", "--resources", "--preload", "--death-timeout"}
    assert flags["--host"] == opts["host"] == "127.0.0.1"  # loopback unless edited for a cluster
    assert int(flags["--nthreads"]) == opts["nthreads"]
    assert flags["--memory-limit"] == str(opts["memory_limit"])
    assert resources_of(flags["--resources"]) == resources_of(opts["resources"])
    assert [flags["--preload"]] == opts["preload"]
    assert int(flags["--death-timeout"]) == opts["death_timeout"]


#: A stand-in for dask-cuda on a machine without GPUs: CUDAWorker as dask-cuda's, less the devices
#: (one Nanny per visible GPU, each pinned to its device), here one Nanny.  It takes only the options
#: the real CUDAWorker takes (ACCEPTED: support.dask_cuda_api), so a misspelled one fails here too.
STAND_IN_DASK_CUDA = '''
import asyncio

from distributed import Nanny

ACCEPTED = set(%r)
DEVICE_ONLY = {"device_memory_limit", "enable_cudf_spill", "cudf_spill_stats", "enable_tcp_over_ucx",
               "enable_infiniband", "enable_nvlink", "enable_rdmacm", "pre_import"}


class CUDAWorker:
    def __init__(self, scheduler=None, host=None, nthreads=1, name=None, memory_limit="auto",
                 resources=None, preload=(), **kwargs):
        unknown = sorted(set(kwargs) - ACCEPTED)
        if unknown:
            raise TypeError(f"CUDAWorker() got unexpected keyword argument(s) {unknown}")
        kwargs = {k: v for k, v in kwargs.items() if k not in DEVICE_ONLY and not k.startswith("rmm_")}
        if resources:  # as dask-cuda parses --resources
            pairs = resources.replace(",", " ").split()
            resources = {k: float(v) for k, v in (p.split("=") for p in pairs)}
        self.nannies = [Nanny(scheduler, host=host, nthreads=nthreads, name=name, memory_limit=memory_limit,
                              resources=resources, preload=list(preload), **kwargs)]

    def __await__(self):
        return self._wait().__await__()

    async def _wait(self):
        await asyncio.gather(*self.nannies)
        return self

    async def finished(self):
        await asyncio.gather(*[n.finished() for n in self.nannies])

    async def close(self, timeout=5):
        await asyncio.gather(*[n.close(timeout=timeout) for n in self.nannies])
'''


@pytest.mark.processes
@pytest.mark.slow
def test_gpu_worker_spec_starts_a_gpu_worker(tmp_path):
    """`dask spec ADDRESS --spec-file workers/gpu-worker.yaml` (dask-cuda's CUDAWorker; a stand-in of it
    here) joins with resources GPU=1 and the warm-up preloaded; a run places its chunks there and runs the
    GPU kernels (their numpy stand-in, mst.gpu.array-module: numpy, on this machine without a GPU)."""
    import dask.config
    from distributed import Client, LocalCluster

    (tmp_path / "standin" / "dask_cuda").mkdir(parents=True)
    stand_in = STAND_IN_DASK_CUDA % sorted(accepted("CUDAWorker"))
    (tmp_path / "standin" / "dask_cuda" / "__init__.py").write_text(stand_in)
    env = cli_env()
    env["PYTHONPATH"] = str(tmp_path / "standin") + os.pathsep + env["PYTHONPATH"]
    env["DASK_MST__GPU__ARRAY_MODULE"] = "numpy"
    # dashboard on a free port (None would mean Dask's default, :8787, which may be taken)
    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=":0") as cl, \
            Client(cl) as c, dask.config.set({"mst.gpu.array-module": "numpy"}):
        p = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_spec", cl.scheduler_address,
                              "--spec-file", os.path.join(ROOT, "workers", "gpu-worker.yaml")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            c.wait_for_workers(1, timeout=120)
            (w,) = c.scheduler_info()["workers"].values()
            assert w["nthreads"] == 1 and w["resources"] == {"GPU": 1}
            g = mst_dist.generate("grid", rows=30, cols=30, seed=2)
            res = mst_dist.minimum_spanning_forest(g, c, local_finish=0, backend="gpu")
            assert_result(res, expected(g))
        finally:
            p.terminate()
            _, err = p.communicate(timeout=60)
    assert "mst-dist kernels warmed up" in err


@pytest.mark.processes
@pytest.mark.slow
def test_cpu_worker_spec_starts_a_warm_worker(tmp_path):
    """`dask spec ADDRESS --spec-file workers/cpu-worker.yaml` joins with its threads, memory and
    resources, and has run the warm-up preload."""
    from distributed import Client, LocalCluster

    spec = yaml.safe_load(open(os.path.join(ROOT, "workers", "cpu-worker.yaml")))
    spec["opts"].update(nthreads=1, memory_limit="2GiB")  # this machine's size
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(spec))
    # dashboard on a free port (None would mean Dask's default, :8787, which may be taken)
    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=":0") as cl, \
            Client(cl) as c:
        p = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_spec", cl.scheduler_address,
                              "--spec-file", str(tmp_path / "w.yaml")], env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            c.wait_for_workers(1, timeout=120)
            (w,) = c.scheduler_info()["workers"].values()
            assert w["nthreads"] == 1 and w["memory_limit"] == 2 * 2**30 and w["resources"] == {"CPU": 1}
            g = mst_dist.generate("grid", rows=30, cols=30, seed=2)
            res = mst_dist.minimum_spanning_forest(g, c, local_finish=0)
            assert_result(res, expected(g))
        finally:
            p.terminate()
            _, err = p.communicate(timeout=60)
    assert "mst-dist kernels warmed up" in err


def test_the_systemd_unit_starts_the_hosts_spec_again_whenever_it_exits():
    """workers/mst-dist-worker.service: `dask spec` of a shipped spec, restarted whenever it exits (a worker
    that lost its scheduler closes, nanny and all), after the network is up; systemd's own check passes
    where systemd-analyze is installed."""
    import shlex
    import shutil

    path = os.path.join(ROOT, "workers", "mst-dist-worker.service")
    lines = [ln.strip() for ln in open(path) if ln.strip() and not ln.lstrip().startswith(("#", "["))]
    keys = [ln.split("=", 1) for ln in lines]
    one = {k: v for k, v in keys if k != "Environment"}
    env = dict(v.split("=", 1) for k, v in keys if k == "Environment")
    assert one["Restart"] == "always" and float(one["RestartSec"]) > 0
    assert "network-online.target" in one["After"] and "network-online.target" in one["Wants"]
    assert os.path.isfile(os.path.join(ROOT, "workers", os.path.basename(env["MST_WORKER_SPEC"])))
    script = shlex.split(one["ExecStart"])[-1]
    words = shlex.split(script.replace('"$MST_VENV/bin/dask"', "dask"))
    assert words == ["exec", "dask", "spec", "$MST_SCHEDULER", "--spec-file", "$MST_WORKER_SPEC"]
    if shutil.which("systemd-analyze"):
        p = subprocess.run(["systemd-analyze", "verify", path], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "mst-dist-worker.service" not in p.stderr, p.stderr


@pytest.mark.parametrize("name", ["cpu-worker.yaml", "gpu-worker.yaml"])
def test_the_hosts_variant_is_the_spec_without_its_loopback_host(name):
    """workers/*-hosts.yaml: the spec with its `host: 127.0.0.1` line gone (nothing else changed), and its
    commented TLS keys, uncommented, are Dask's: protocol tls and a security mapping of the worker's files."""
    spec, _ = spec_of(name)
    hosts, text = spec_of(name.replace(".yaml", "-hosts.yaml"))
    assert spec["opts"].pop("host") == "127.0.0.1"
    assert hosts == spec
    assert f"--spec-file workers/{name.replace('.yaml', '-hosts.yaml')}" in text
    lines = text.splitlines()
    start = lines.index("  # protocol: tls")
    tls = yaml.safe_load("\n".join(ln.replace("# ", "", 1) for ln in lines[start:start + 5]))
    assert tls["protocol"] == "tls"
    assert set(tls["security"]) == {"tls_ca_file", "tls_worker_cert", "tls_worker_key"}
    from distributed.security import Security

    Security(**{k: None for k in tls["security"]})  # Dask's own names (a Nanny turns the mapping into this)

"""Cluster kinds beyond the embedded one: SLURM/PBS job scripts (dask-jobqueue), a real
``mpirun`` run (dask-mpi), local-cuda's options, the worker spec and the warm-up preload."""
import json
import os
import shutil
import subprocess
import sys
import time

import dask.config
import numpy as np
import pytest
import yaml

import mst_dist
from mst_dist.deploy import cuda, jobqueue, mpi
from mst_dist.engine import warmup
from mst_dist.cli.runconfig import validate_run_config
from mst_dist.config import ConfigError
from support import ROOT
from support.naive import kruskal

GEN = {"graph": {"generate": {"kind": "grid", "rows": 4, "cols": 4}}}


def cluster_of(**section):
    return validate_run_config({**GEN, "cluster": section})["cluster"]


def error_of(**section):
    with pytest.raises(ConfigError) as info:
        cluster_of(**section)
    return str(info.value)


def env_with_root():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


# --------------------------------------------------------------------------
# cluster kinds in run configs
# --------------------------------------------------------------------------

def test_every_kind_validates():
    assert cluster_of(kind="local")["kind"] == "local"
    assert cluster_of(kind="address", address="tcp://h:1") == {"kind": "address", "address": "tcp://h:1",
                                                                "wait_timeout": 600}
    c = cluster_of(kind="slurm", cores=8, memory="16GB")
    assert c["jobs"] == 1 and c["processes"] is None and c["warmup"] is True and c["wait_timeout"] == 600
    assert cluster_of(kind="pbs", cores=8, memory="16GB", resource_spec="select=1:ncpus=8")["resource_spec"]
    m = cluster_of(kind="mpi", threads_per_worker=2)
    assert m["threads_per_worker"] == 2 and m["memory_limit"] == "auto" and "n_workers" not in m
    g = cluster_of(kind="local-cuda", cuda_visible_devices="0,1")
    assert g["cuda_visible_devices"] == "0,1" and g["n_workers"] is None


@pytest.mark.parametrize("section, expect", [
    ({"kind": "slurm", "memory": "1GB"}, "cluster.cores: missing: kind 'slurm' needs cores (per job); "
                                         "set it here or in the dask config jobqueue.slurm.cores"),
    ({"kind": "pbs", "cores": 4}, "cluster.memory: missing: kind 'pbs' needs memory"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "processes": True}, "cluster.processes: expected int or null"),
    ({"kind": "slurm", "cores": "4", "memory": "1GB"}, "cluster.cores: expected int or null, got str '4'"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "job_extra_directives": "--exclusive"},
     "cluster.job_extra_directives: expected list[str] or null, got str"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "worker_extra_args": ["--x", 3]},
     "cluster.worker_extra_args[1]: expected str, got int 3"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "jobs": 0}, "cluster.jobs: must be >= 1"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "resource_spec": "x"},
     "cluster.resource_spec: only for kind 'pbs' (this is kind 'slurm')"),
    ({"kind": "mpi", "n_workers": 3}, "cluster.n_workers: only for kinds 'local', 'local-cuda' (this is kind 'mpi')"),
    ({"kind": "local", "queue": "q"}, "cluster.queue: only for kinds 'slurm', 'pbs' (this is kind 'local')"),
    ({"kind": "mpi", "wait_timeout": -1}, "cluster.wait_timeout: must be >= 0"),
    ({"kind": "slurm", "cores": 4, "memory": "1GB", "qeue": "q"}, "cluster.qeue: unknown key; allowed: kind, "),
    ({"kind": "kubernetes"}, "cluster.kind: expected one of local, local-cuda, address, slurm, pbs, mpi"),
])
def test_kind_errors_name_key_and_choices(section, expect):
    assert error_of(**section).startswith(expect)


def test_jobqueue_config_fills_missing_cores_and_memory():
    with dask.config.set({"jobqueue.slurm.cores": 4, "jobqueue.slurm.memory": "8GB"}):
        c = cluster_of(kind="slurm")
    assert c["cores"] is None and c["memory"] is None  # left to dask-jobqueue's own config


def test_kind_from_dask_config_and_env(monkeypatch):
    from mst_dist import config

    monkeypatch.setenv("DASK_MST__CLUSTER__KIND", "mpi")
    monkeypatch.setenv("DASK_MST__CLUSTER__WAIT_TIMEOUT", "30")
    config.refresh()
    try:
        c = validate_run_config(GEN)["cluster"]
        assert c["kind"] == "mpi" and c["wait_timeout"] == 30
    finally:
        monkeypatch.undo()
        config.refresh()


# --------------------------------------------------------------------------
# SLURM and PBS: the job script that would be submitted
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dask_jobqueue():
    try:
        import dask_jobqueue
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("dask-jobqueue is missing in CI: .ci/run must install mst-dist[hpc]")
        pytest.skip("dask-jobqueue is not installed: pip install 'mst-dist[hpc]'")
    return dask_jobqueue


def test_slurm_job_script(dask_jobqueue):
    cfg = cluster_of(kind="slurm", cores=16, memory="64GiB", processes=4, queue="compute", account="proj7",
                     walltime="02:30:00", job_extra_directives=["--exclusive"], interface="lo",
                     job_script_prologue=["module load python/3.11"], worker_extra_args=["--resources", "CPU=1"],
                     dashboard_address=None)
    with jobqueue.job_cluster(cfg) as cluster:
        assert isinstance(cluster, dask_jobqueue.SLURMCluster)
        script = cluster.job_script()
        address = cluster.scheduler_address
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    for directive in ("#SBATCH -p compute", "#SBATCH -A proj7", "#SBATCH -n 1", "#SBATCH --cpus-per-task=16",
                      "#SBATCH --mem=64G", "#SBATCH -t 02:30:00", "#SBATCH --exclusive"):
        assert directive in lines, directive
    assert "module load python/3.11" in lines
    cmd = lines[-1]
    assert cmd.startswith(sys.executable) and "distributed.cli.dask_worker" in cmd
    assert address in cmd
    assert "--nworkers 4" in cmd and "--nthreads 4" in cmd
    assert "--resources CPU=1" in cmd and "--preload mst_dist.engine.warmup" in cmd


def test_pbs_job_script(dask_jobqueue):
    cfg = cluster_of(kind="pbs", cores=8, memory="32GB", queue="workq", walltime="00:20:00", jobs=3,
                     job_extra_directives=["-l place=excl"], warmup=False, dashboard_address=None)
    with jobqueue.job_cluster(cfg) as cluster:
        assert isinstance(cluster, dask_jobqueue.PBSCluster)
        script = cluster.job_script()
    lines = script.splitlines()
    for directive in ("#PBS -q workq", "#PBS -l select=1:ncpus=8:mem=30GB", "#PBS -l walltime=00:20:00",
                      "#PBS -l place=excl"):
        assert directive in lines, directive
    assert "--preload" not in lines[-1]  # warmup: false


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_example_jobqueue_yaml_layers_under_run_config(dask_jobqueue, kind):
    """cluster/jobqueue-<kind>.yaml is a valid dask config; the run config's keys win over it."""
    with open(os.path.join(ROOT, "cluster", f"jobqueue-{kind}.yaml")) as f:
        site = yaml.safe_load(f)
    assert set(site) == {"jobqueue"} and set(site["jobqueue"]) == {kind}
    # as ~/.config/dask/jobqueue.yaml would: merged key by key over dask-jobqueue's defaults
    with dask.config.set({f"jobqueue.{kind}.{k}": v for k, v in site["jobqueue"][kind].items()}):
        cfg = validate_run_config({**GEN, "cluster": {"kind": kind, "walltime": "00:05:00",
                                                      "dashboard_address": None}})["cluster"]
        with jobqueue.job_cluster(cfg) as cluster:
            script = cluster.job_script()
    lines = script.splitlines()
    assert "module load python/3.11" in lines
    assert any("00:05:00" in ln for ln in lines)  # the run config's walltime
    assert "--nworkers 4" in lines[-1] and "--nthreads 8" in lines[-1]  # 32 cores / 4 processes
    assert "--resources CPU=1" in lines[-1] and "--preload mst_dist.engine.warmup" in lines[-1]
    assert "--death-timeout 120" in lines[-1]


@pytest.mark.parametrize("name", ["example-slurm.yaml", "example-pbs.yaml"])
def test_job_script_command(tmp_path, dask_jobqueue, name):
    p = subprocess.run([sys.executable, "-m", "mst_dist.cli", "job-script", os.path.join(ROOT, "configs", name)],
                       capture_output=True, text=True, cwd=tmp_path, env=env_with_root(), timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("#!/usr/bin/env bash")
    assert ("#SBATCH" if "slurm" in name else "#PBS") in p.stdout
    assert "--preload mst_dist.engine.warmup" in p.stdout


def test_job_script_needs_batch_kind(tmp_path):
    p = subprocess.run([sys.executable, "-m", "mst_dist.cli", "job-script",
                        os.path.join(ROOT, "configs", "quickstart.yaml")],
                       capture_output=True, text=True, cwd=tmp_path, env=env_with_root(), timeout=120)
    assert p.returncode == 2
    assert "job-script needs kind 'slurm' or 'pbs', got 'local'" in p.stderr


def test_missing_extra_is_named(monkeypatch):
    for name in ("dask_jobqueue", "dask_cuda", "dask_mpi"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"cluster kind 'slurm' needs dask-jobqueue.*pip install 'mst-dist\[hpc\]'"):
        jobqueue.job_cluster(cluster_of(kind="slurm", cores=1, memory="1GB"))
    with pytest.raises(ImportError, match=r"needs dask-cuda.*pip install 'mst-dist\[gpu\]'"):
        cuda.local_cuda_cluster(cluster_of(kind="local-cuda"))
    with pytest.raises(ImportError, match=r"cluster kind 'mpi' needs dask-mpi"):
        mpi.mpi_client(cluster_of(kind="mpi"))


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
                    "memory_limit": "8GiB", "dashboard_address": "127.0.0.1:0", "resources": {"GPU": 1},
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
                       "resources": {"GPU": 1}, "preload": ["mst_dist.engine.warmup"]}
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


# --------------------------------------------------------------------------
# MPI: mpirun -n 4 mst-dist run --mpi CONFIG, for real
# --------------------------------------------------------------------------

def mpirun_or_skip():
    exe = shutil.which("mpirun")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("mpirun is missing in CI: .ci/run must apt-get install openmpi-bin libopenmpi-dev")
        pytest.skip("mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev); .ci/run installs it")
    try:
        import dask_mpi  # noqa: F401
        import mpi4py  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI"):
            pytest.fail(f"{e}: .ci/run must install mst-dist[hpc]")
        pytest.skip(f"{e}: pip install 'mst-dist[hpc]'")
    return exe


def mpirun(exe, n, *args, cwd, timeout=240):
    env = env_with_root()
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    cli = [shutil.which("mst-dist")] if shutil.which("mst-dist") else [sys.executable, "-m", "mst_dist.cli"]
    return subprocess.run([exe, "-n", str(n), "--oversubscribe", *cli, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.mpi
@pytest.mark.slow
def test_mpirun_run(tmp_path):
    """Four ranks: a scheduler, the run, two workers (warm-up preloaded); same forest as Kruskal."""
    exe = mpirun_or_skip()
    (tmp_path / "run.yaml").write_text(
        "graph:\n  generate: {kind: erdos_renyi, n: 3000, m: 12000, seed: 4}\n"
        "local_finish: 0\npartitions: 4\noutput: {path: forest.npz}\n"
        "cluster: {kind: mpi, threads_per_worker: 1, wait_timeout: 120}\n")
    t0 = time.monotonic()
    p = mpirun(exe, 4, "run", "--mpi", "run.yaml", "--json", "--report", "report.json", cwd=tmp_path)
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr[-4000:]
    rep = json.loads(p.stdout)  # only rank 1 writes to stdout
    assert rep == json.loads((tmp_path / "report.json").read_text()) | {"output": rep["output"]}
    assert rep["cluster"]["kind"] == "mpi" and rep["cluster"]["n_workers"] == 2
    assert sorted(w["name"] for w in rep["cluster"]["workers"]) == ["2", "3"]  # ranks 2 and 3
    assert rep["stats"]["workers"] == 2 and rep["stats"]["partitions"] == 4
    assert rep["cluster"]["dashboard"].endswith("/mst")
    assert "mst-dist kernels warmed up" in p.stderr  # the worker ranks ran the preload
    g = mst_dist.generate("erdos_renyi", n=3000, m=12000, seed=4)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    with np.load(tmp_path / "forest.npz") as z:
        np.testing.assert_array_equal(z["edge_id"], exp)
    assert rep["summary"]["forest_edges"] == len(exp)
    assert took < 200


@pytest.mark.mpi
def test_mpirun_too_few_ranks(tmp_path):
    exe = mpirun_or_skip()
    (tmp_path / "run.yaml").write_text("graph:\n  generate: {kind: hypercube, d: 3}\ncluster: {kind: mpi}\n")
    p = mpirun(exe, 2, "run", "--mpi", "run.yaml", cwd=tmp_path, timeout=120)
    assert p.returncode != 0
    assert "'mpi' needs at least 3 MPI ranks" in p.stderr and "this job has 2" in p.stderr


# --------------------------------------------------------------------------
# workers: the spec and the warm-up preload
# --------------------------------------------------------------------------

def test_warmup_runs_the_kernels(caplog):
    caplog.set_level("INFO", logger="mst_dist.engine.warmup")
    assert warmup.warm() >= 0
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
    assert set(flags) == {"--nthreads", "--memory-limit", "--resources", "--preload", "--death-timeout"}
    assert int(flags["--nthreads"]) == opts["nthreads"]
    assert flags["--memory-limit"] == str(opts["memory_limit"])
    assert resources_of(flags["--resources"]) == resources_of(opts["resources"])
    assert [flags["--preload"]] == opts["preload"]
    assert int(flags["--death-timeout"]) == opts["death_timeout"]


#: A stand-in for dask-cuda on a machine without GPUs: CUDAWorker as dask-cuda's, less the devices
#: (one Nanny per visible GPU, each pinned to its device), here one Nanny.
STAND_IN_DASK_CUDA = '''
import asyncio

from distributed import Nanny


class CUDAWorker:
    def __init__(self, scheduler=None, host=None, nthreads=1, name=None, memory_limit="auto",
                 device_memory_limit="default", rmm_pool_size=None, rmm_allocator_external_lib_list=None,
                 resources=None, preload=(), **kwargs):
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
def test_gpu_worker_spec_starts_a_gpu_worker(tmp_path):
    """`dask spec ADDRESS --spec-file workers/gpu-worker.yaml` (dask-cuda's CUDAWorker; a stand-in of it
    here) joins with resources GPU=1 and the warm-up preloaded; a run places its chunks there and runs the
    GPU kernels (their numpy stand-in, mst.gpu.array-module: numpy, on this machine without a GPU)."""
    import dask.config
    from distributed import Client, LocalCluster

    (tmp_path / "standin" / "dask_cuda").mkdir(parents=True)
    (tmp_path / "standin" / "dask_cuda" / "__init__.py").write_text(STAND_IN_DASK_CUDA)
    env = env_with_root()
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
            assert res.n_forest_edges == 899
        finally:
            p.terminate()
            _, err = p.communicate(timeout=60)
    assert "mst-dist kernels warmed up" in err


@pytest.mark.processes
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
                              "--spec-file", str(tmp_path / "w.yaml")], env=env_with_root(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            c.wait_for_workers(1, timeout=120)
            (w,) = c.scheduler_info()["workers"].values()
            assert w["nthreads"] == 1 and w["memory_limit"] == 2 * 2**30 and w["resources"] == {"CPU": 1}
            g = mst_dist.generate("grid", rows=30, cols=30, seed=2)
            res = mst_dist.minimum_spanning_forest(g, c, local_finish=0)
            assert res.n_forest_edges == 899
        finally:
            p.terminate()
            _, err = p.communicate(timeout=60)
    assert "mst-dist kernels warmed up" in err


# --------------------------------------------------------------------------
# a real single-node SLURM (Debian's slurm-wlm) running a dask-jobqueue run
# --------------------------------------------------------------------------

SLURM_BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """munged, slurmctld and slurmd of this machine as one SLURM node, for this module only.

    Everything lives in a temporary directory (keys, sockets, state, logs, ports chosen free);
    the daemons run in the foreground as children of the test and are stopped by their pids.
    """
    missing = [b for b in SLURM_BINARIES if shutil.which(b) is None and not os.path.exists(f"/usr/sbin/{b}")]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} missing in CI: .ci/run must apt-get install slurm-wlm munge")
        pytest.skip(f"SLURM is not installed ({', '.join(missing)}): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("starting slurmd here needs root")
    import socket

    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "munge", "logs"):
        (d / sub).mkdir()
    os.chmod(d, 0o755)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    sock = d / "munge" / "munge.socket"
    node = socket.gethostname().split(".")[0]
    mem_mb = int(open("/proc/meminfo").read().split()[1]) // 1024 // 2
    conf = d / "slurm.conf"
    conf.write_text(f"""ClusterName=msttest
SlurmctldHost={node}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/logs/slurmctld.log
SlurmdLogFile={d}/logs/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MpiDefault=none
NodeName={node} CPUs={os.cpu_count()} RealMemory={mem_mb} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    sbin = lambda b: shutil.which(b) or f"/usr/sbin/{b}"  # noqa: E731
    procs = []
    out = open(d / "logs" / "daemons.out", "w")
    try:
        procs.append(subprocess.Popen([sbin("munged"), "-F", "--force", f"--socket={sock}", f"--key-file={key}",
                                       f"--pid-file={d}/munge/munged.pid", f"--log-file={d}/logs/munged.log",
                                       f"--seed-file={d}/munge/munged.seed"], stdout=out, stderr=out))
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert procs[0].poll() is None and time.monotonic() < deadline, (d / "logs" / "munged.log").read_text()
            time.sleep(0.1)
        env = dict(os.environ, SLURM_CONF=str(conf))
        procs.append(subprocess.Popen([sbin("slurmctld"), "-D", "-c", "-f", str(conf)], env=env,
                                      stdout=out, stderr=out))
        procs.append(subprocess.Popen([sbin("slurmd"), "-D", "-f", str(conf)], env=env, stdout=out, stderr=out))
        deadline = time.monotonic() + 60
        while True:
            p = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
            if p.returncode == 0 and p.stdout.strip() == "idle":
                break
            assert all(q.poll() is None for q in procs) and time.monotonic() < deadline, \
                (d / "logs" / "daemons.out").read_text() + p.stderr
            time.sleep(0.5)
        yield {"conf": str(conf), "dir": d, "env": env}
    finally:
        for q in reversed(procs):
            q.terminate()
            try:
                q.wait(timeout=30)
            except subprocess.TimeoutExpired:
                q.kill()
                q.wait()
        out.close()


@pytest.mark.slurm
@pytest.mark.slow
def test_real_slurm_run(tmp_path, slurm, dask_jobqueue):
    """`mst-dist run` with cluster.kind slurm: two batch jobs of one worker each really run the forest,
    and are gone when it ends."""
    (tmp_path / "run.yaml").write_text(
        "graph:\n  generate: {kind: erdos_renyi, n: 5000, m: 20000, seed: 8}\n"
        "local_finish: 0\npartitions: 4\noutput: {path: forest.npz}\n"
        "cluster:\n  kind: slurm\n  jobs: 2\n  cores: 1\n  memory: 1GB\n  processes: 1\n"
        f"  walltime: '00:10:00'\n  log_directory: {tmp_path / 'jobs'}\n  wait_timeout: 180\n"
        "  warmup: false\n")
    env = dict(slurm["env"], PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "mst_dist.cli", "run", "run.yaml", "--json"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:] + (slurm["dir"] / "logs" / "slurmctld.log").read_text()[-2000:]
    rep = json.loads(p.stdout)
    assert rep["cluster"]["kind"] == "slurm" and rep["cluster"]["n_workers"] == 2
    assert sorted(w["name"] for w in rep["cluster"]["workers"]) == ["SLURMCluster-0", "SLURMCluster-1"]
    g = mst_dist.generate("erdos_renyi", n=5000, m=20000, seed=8)
    exp, _ = kruskal(g.n_vertices, *g.to_arrays())
    with np.load(tmp_path / "forest.npz") as z:
        np.testing.assert_array_equal(z["edge_id"], exp)
    # the workers ran as SLURM jobs (their logs), and the jobs were cancelled at the end
    assert len(list((tmp_path / "jobs").glob("*.err"))) == 2
    deadline = time.monotonic() + 30
    while subprocess.run(["squeue", "-h"], env=slurm["env"], capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline, "jobs left in the queue"
        time.sleep(0.5)

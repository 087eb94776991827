"""Cluster kind mpi (dask-mpi): ``mpirun -n 4 mst-dist run --mpi CONFIG``, for real."""
import json
import shutil
import subprocess

import pytest

import mst_dist
from support import needs
from support.cli import CLI, cli_env
from support.oracle import assert_forest_file, assert_summary, expected


def mpirun_or_skip():
    exe = needs.program("mpirun", "apt-get install openmpi-bin libopenmpi-dev")
    needs.module("dask_mpi", "pip install 'mst-dist[hpc]'")
    needs.module("mpi4py", "pip install 'mst-dist[hpc]'")
    return exe


def mpirun(exe, n, *args, cwd, timeout=240):
    env = cli_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                  OMPI_MCA_rmaps_base_oversubscribe="1")
    cli = [shutil.which("mst-dist")] if shutil.which("mst-dist") else CLI
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
    p = mpirun(exe, 4, "run", "--mpi", "run.yaml", "--json", "--report", "report.json", "-v", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-4000:]
    rep = json.loads(p.stdout)  # only rank 1 writes to stdout
    assert rep == json.loads((tmp_path / "report.json").read_text()) | {"output": rep["output"]}
    assert rep["cluster"]["kind"] == "mpi" and rep["cluster"]["n_workers"] == 2
    assert sorted(w["name"] for w in rep["cluster"]["workers"]) == ["2", "3"]  # ranks 2 and 3
    assert rep["stats"]["workers"] == 2 and rep["stats"]["partitions"] == 4
    assert rep["cluster"]["dashboard"].endswith("/mst")
    assert "mst-dist kernels warmed up" in p.stderr  # the worker ranks ran the preload
    exp = expected(mst_dist.generate("erdos_renyi", n=3000, m=12000, seed=4))
    assert_summary(rep["summary"], exp)
    assert_forest_file(tmp_path / "forest.npz", exp)


@pytest.mark.mpi
@pytest.mark.slow
def test_mpirun_too_few_ranks(tmp_path):
    exe = mpirun_or_skip()
    (tmp_path / "run.yaml").write_text("graph:\n  generate: {kind: hypercube, d: 3}\ncluster: {kind: mpi}\n")
    p = mpirun(exe, 2, "run", "--mpi", "run.yaml", cwd=tmp_path, timeout=120)
    assert p.returncode != 0
    assert "'mpi' needs at least 3 MPI ranks" in p.stderr and "this job has 2" in p.stderr

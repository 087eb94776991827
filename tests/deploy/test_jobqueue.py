"""Cluster kinds slurm and pbs (dask-jobqueue): the job scripts they would submit, and a real
single-node SLURM running a run."""
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import dask.config
import pytest
import yaml

import mst_dist
from mst_dist.cli.runconfig import validate_run_config
from mst_dist.deploy import jobqueue
from support import ROOT, needs
from support.cli import GEN, cli_env, cluster_of, run_cli
from support.oracle import assert_forest_file, assert_summary, expected


# --------------------------------------------------------------------------
# the job script that would be submitted
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dask_jobqueue():
    return needs.module("dask_jobqueue", "pip install 'mst-dist[hpc]'")


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


def test_job_script_starts_no_scheduler(dask_jobqueue):
    """job_script renders what a started cluster would submit, with dask-jobqueue's placeholder for the
    scheduler's address: no scheduler made, no port bound, no temporary address in the script."""
    from distributed import Scheduler

    cfg = cluster_of(kind="slurm", cores=4, memory="8GiB", processes=2, interface="lo",
                     dashboard_address="127.0.0.1:0")
    before = set(Scheduler._instances)
    script = jobqueue.job_script(cfg)
    assert set(Scheduler._instances) == before  # nothing started
    placeholder = f"tcp://{jobqueue.ADDRESS_PLACEHOLDER}:8786"
    cmd = script.splitlines()[-1]
    assert placeholder in cmd and "127.0.0.1" not in script
    # the same script a started cluster gives, but for its (temporary) address
    with jobqueue.job_cluster(cfg) as cluster:
        started, address = cluster.job_script(), cluster.scheduler_address
    assert set(Scheduler._instances) - before  # (the check above can see a scheduler)
    assert address not in script and script == started.replace(address, placeholder)


def test_job_script_with_tls_says_tls(dask_jobqueue, tmp_path):
    """With cluster.security the workers get the certificates and the placeholder reads tls://."""
    from support.tls import make_certs

    files = make_certs(tmp_path)
    cfg = cluster_of(kind="pbs", cores=2, memory="4GB", security=files, dashboard_address=None)
    cmd = jobqueue.job_script(cfg).splitlines()[-1]
    assert f"tls://{jobqueue.ADDRESS_PLACEHOLDER}:8786" in cmd and "tcp://" not in cmd
    assert "--protocol tls://" in cmd and f"--tls-ca-file {files['ca_file']}" in cmd


def test_cluster_readme_lists_the_cluster_keys_that_exist():
    """cluster/README.md's key table: every cluster key a run config takes, and no other."""
    import re

    from mst_dist.cli import runconfig

    with open(os.path.join(ROOT, "cluster", "README.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("| key | kinds | default |\n", 1)[1].split("\n\n", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    listed = {k for ln in rows for k in re.findall(r"`([a-z_]+)`", ln.split("|")[1])}
    keys = set(runconfig._CLUSTER_KEYS)
    assert listed - set(runconfig._SECURITY_KEYS) == keys
    # the keys the table says have a packaged default are in mst-dist.yaml's cluster section
    from mst_dist.config import DEFAULTS

    packaged = {k.replace("-", "_") for k in DEFAULTS["mst"]["cluster"]}
    said = {k for ln in rows if "`mst-dist.yaml`" in ln.split("|")[3]
            for k in re.findall(r"`([a-z_]+)`", ln.split("|")[1])}
    assert said and said <= packaged and not (keys - said) & packaged


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
@pytest.mark.slow
def test_job_script_command(tmp_path, dask_jobqueue, name):
    p = run_cli("job-script", os.path.join(ROOT, "configs", name), cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("#!/usr/bin/env bash")
    assert ("#SBATCH" if "slurm" in name else "#PBS") in p.stdout
    assert "--preload mst_dist.engine.warmup" in p.stdout
    # rendered without a scheduler: dask-jobqueue's placeholder, not a temporary address
    assert f"tcp://{jobqueue.ADDRESS_PLACEHOLDER}:8786" in p.stdout.rstrip().splitlines()[-1]


def test_job_script_needs_batch_kind(tmp_path):
    p = run_cli("job-script", os.path.join(ROOT, "configs", "quickstart.yaml"), cwd=tmp_path, timeout=120)
    assert p.returncode == 2
    assert "job-script needs kind 'slurm' or 'pbs', got 'local'" in p.stderr


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
        needs.unavailable(f"SLURM is not installed ({', '.join(missing)}): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        needs.unavailable("a single-node SLURM's slurmd and slurmctld run as root (SlurmUser=root): "
                          "run these tests as root, as .ci/run does")
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
    # cred_expire: a requeued job may start again that many seconds after its requeue (SLURM's
    # default, 120 s, would be most of the requeue test's time); bf_interval and sched_interval: the
    # schedulers look at the queue every second, so a job starts once it may (a requeued job's start
    # time passing wakes no scheduler: SLURM's defaults, 30 and 60 s, would leave it waiting)
    conf.write_text(f"""ClusterName=msttest
SlurmctldHost={node}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock},cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1
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
    p = run_cli("run", "run.yaml", "--json", cwd=tmp_path, env=cli_env(slurm["env"]), timeout=300)
    assert p.returncode == 0, p.stderr[-4000:] + (slurm["dir"] / "logs" / "slurmctld.log").read_text()[-2000:]
    rep = json.loads(p.stdout)
    assert rep["cluster"]["kind"] == "slurm" and rep["cluster"]["n_workers"] == 2
    assert sorted(w["name"] for w in rep["cluster"]["workers"]) == ["SLURMCluster-0", "SLURMCluster-1"]
    exp = expected(mst_dist.generate("erdos_renyi", n=5000, m=20000, seed=8))
    assert_summary(rep["summary"], exp)
    assert_forest_file(tmp_path / "forest.npz", exp)
    # the workers ran as SLURM jobs (their logs), and the jobs were cancelled at the end
    assert len(list((tmp_path / "jobs").glob("*.err"))) == 2
    deadline = time.monotonic() + 30
    while subprocess.run(["squeue", "-h"], env=slurm["env"], capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline, "jobs left in the queue"
        time.sleep(0.5)


@pytest.mark.slurm
@pytest.mark.slow
def test_requeue_job_script_goes_on_from_its_checkpoint(tmp_path, slurm):
    """cluster/mst-dist-requeue.sbatch: the time-limit warning (USR1 to the batch shell, as
    --signal=B:USR1 sends it) requeues the job; its second start goes on from the checkpoint to the
    forest of a run never stopped."""
    (tmp_path / "run.yaml").write_text(
        "graph:\n  generate: {kind: rmat, scale: 16, seed: 1}\n"
        "local_finish: 0\npartitions: 4\noutput: {path: forest.npz}\n")
    env = cli_env(slurm["env"])
    sub = subprocess.run(["sbatch", "--parsable", f"--chdir={tmp_path}", "--time=00:10:00",
                          os.path.join(ROOT, "cluster", "mst-dist-requeue.sbatch"), "run.yaml", "ck", "-q"],
                         env=env, capture_output=True, text=True)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(";")[0]
    log = tmp_path / f"mst-dist-{job}.out"
    manifest = tmp_path / "ck" / "manifest.json"

    def state():
        return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], env=env, capture_output=True,
                              text=True).stdout.strip()

    deadline = time.monotonic() + 300
    while not (manifest.exists() and json.loads(manifest.read_text())["round"] >= 2):
        assert time.monotonic() < deadline and state(), log.read_text() if log.exists() else "no log"
        time.sleep(0.02)
    held = json.loads(manifest.read_text())["round"]
    sig = subprocess.run(["scancel", "--signal=USR1", "--batch", job], env=env, capture_output=True, text=True)
    assert sig.returncode == 0, sig.stderr
    # the expected forest worked out while the requeued job waits out its credentials' lifetime
    with ThreadPoolExecutor(1) as pool:
        want = pool.submit(expected, mst_dist.generate("rmat", scale=16, seed=1))
        deadline = time.monotonic() + 420
        while state():  # requeued, started again, finished
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        text = log.read_text()
        assert "requeueing job" in text and "start 1" in text, text
        assert_forest_file(tmp_path / "forest.npz", want.result())
    rep = json.loads((tmp_path / f"mst-dist-{job}.json").read_text())
    assert rep["stats"]["resumed_from"] >= held

"""Where the clusters mst-dist starts listen: loopback unless an address or interface is given.

Read from the processes' own sockets (psutil: every listening TCP socket of a
process and its children), for the embedded default, the command line's local
clusters (threads and processes), the shipped worker spec, cluster/start-local.sh,
MPI ranks and SLURM jobs' workers given an interface; and the printed
dashboard links, fetched over HTTP.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest
import yaml

import mst_dist
from mst_dist.cli import commands as cli
from mst_dist.cli.report import cluster_shape
from mst_dist.deploy import open_cluster
from mst_dist.deploy.local import embedded
from support import ROOT, needs
from support.cli import CLI, cli_env, cluster_of
from support.oracle import assert_result, expected

LOOPBACK = {"127.0.0.1", "::1"}


def listening(pid):
    """``{(pid, ip, port)}``: the listening TCP sockets of process ``pid`` and all its descendants."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    out = set()
    for p in procs:
        try:
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    out.add((p.pid, c.laddr.ip, c.laddr.port))
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            pass
    return out


def assert_loopback(socks, at_least):
    assert len(socks) >= at_least, socks
    wide = sorted(s for s in socks if s[1] not in LOOPBACK)
    assert not wide, f"listening beyond loopback (pid, ip, port): {wide}"


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.read().decode("utf-8", "replace")


# -- clusters in this process --------------------------------------------------------------------------


@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["threads", "processes"])
@pytest.mark.parametrize("dashboard", ["127.0.0.1:0", None], ids=["dashboard", "no-dashboard"])
def test_embedded_default_listens_on_loopback(processes, dashboard):
    """The engine's embedded default: scheduler, dashboard (or the bare web server), every worker's comm
    port and web server on loopback."""
    before = listening(os.getpid())
    with embedded(n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=dashboard):
        socks = listening(os.getpid()) - before
    # threads: the scheduler's web server + each worker's; processes: + the scheduler's comm, and each
    # nanny's and worker's comm
    assert_loopback(socks, 3 if not processes else 7)


def test_api_default_cluster_listens_on_loopback():
    """minimum_spanning_forest(graph) without a client: the in-process cluster it starts (and keeps for
    the next call) listens on loopback only."""
    from mst_dist.deploy.local import close_shared

    close_shared()
    before = listening(os.getpid())
    try:
        g = mst_dist.generate("grid", rows=10, cols=10)
        assert_result(mst_dist.minimum_spanning_forest(g), expected(g))
        socks = listening(os.getpid()) - before
    finally:
        close_shared()
    assert_loopback(socks, 2)  # the scheduler's web server and the worker's


@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["threads", "processes"])
def test_cli_local_cluster_listens_on_loopback_and_links_to_it(processes):
    """Kind local as the command line opens it: loopback only, and the /mst link of the run report (and
    of the CLI's log line) is the address the dashboard listens on, and answers."""
    before = listening(os.getpid())
    cfg = cluster_of(kind="local", n_workers=2, threads_per_worker=1, processes=processes)
    with open_cluster(cfg) as client:
        socks = listening(os.getpid()) - before
        link = cluster_shape(client, "local")["dashboard"]
        status, page = fetch(link)
    assert_loopback(socks, 3)
    assert link.startswith("http://127.0.0.1:") and link.endswith("/mst")
    port = int(link.split(":")[2].split("/")[0])
    assert (os.getpid(), "127.0.0.1", port) in socks  # the link's port is the dashboard's socket
    assert status == 200 and "MST" in page


def test_printed_dashboard_link_answers(monkeypatch, capsys, tmp_path):
    """`mst-dist run -v`: the logged 'MST dashboard page: URL' and the report's cluster.dashboard are one
    URL, on loopback, and it answers over HTTP while the run goes."""
    import mst_dist.diagnostics.dashboard as dash

    real = mst_dist.api.solve
    seen = {}

    def run(graph, client, spec):
        seen["url"] = dash.dashboard_link(client)
        seen["status"], seen["page"] = fetch(seen["url"])
        return real(graph, client, spec)

    monkeypatch.setattr(mst_dist.api, "solve", run)
    report = tmp_path / "report.json"
    assert cli.main(["run", "--generate", "grid", "--rows", "20", "--cols", "20", "-v", "--report",
                     str(report)]) == 0
    err = capsys.readouterr().err
    url = json.loads(report.read_text())["cluster"]["dashboard"]
    assert url == seen["url"] and url.startswith("http://127.0.0.1:") and url.endswith("/mst")
    assert f"MST dashboard page: {url}" in " ".join(err.split())
    assert seen["status"] == 200 and "MST" in seen["page"]


# -- processes started by hand, and by MPI and SLURM ---------------------------------------------------


@pytest.mark.slow
def test_shipped_worker_spec_listens_on_loopback(tmp_path):
    """`dask spec ADDRESS --spec-file workers/cpu-worker.yaml`: the nanny, the worker and their web
    servers listen on loopback only (Dask's default is every interface)."""
    from distributed import Client, LocalCluster

    spec = yaml.safe_load(open(os.path.join(ROOT, "workers", "cpu-worker.yaml")))
    spec["opts"].update(nthreads=1, memory_limit="1GiB", preload=[])  # this machine's size; no warm-up
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(spec))
    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cl, Client(cl) as c:
        p = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_spec", cl.scheduler_address,
                              "--spec-file", str(tmp_path / "w.yaml")], env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            c.wait_for_workers(1, timeout=120)
            socks = listening(p.pid)
        finally:
            p.terminate()
            p.wait(timeout=60)
    assert len({pid for pid, _, _ in socks}) == 2  # the nanny and its worker process
    assert_loopback(socks, 3)


@pytest.mark.slow
def test_start_local_script(tmp_path):
    """cluster/start-local.sh: loopback only, a taken port falls back to a free one, workers sized to this
    machine (threads = its cores, memory a share of it, as Dask sees them), the printed dashboard link
    answers, a run goes through, and Ctrl-C leaves nothing behind."""
    from distributed import Client
    from distributed.system import MEMORY_LIMIT

    needs.program("dask", "pip install distributed (it installs the `dask` command)")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    env = cli_env(PYTHON=sys.executable, MST_SCHEDULER_PORT=str(taken.getsockname()[1]))
    p = subprocess.Popen(["bash", os.path.join(ROOT, "cluster", "start-local.sh"), "1"], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        printed = {}
        for line in p.stdout:
            key, _, value = line.partition(":")
            printed[key.strip()] = value.strip()
            if key == "run":
                break
        address = printed["scheduler"]
        assert address.startswith("tcp://127.0.0.1:") and not address.endswith(f":{taken.getsockname()[1]}")
        with Client(address, timeout=30) as c:
            c.wait_for_workers(1, timeout=120)
            (w,) = c.scheduler_info()["workers"].values()
            cores = len(os.sched_getaffinity(0))
            assert w["nthreads"] == cores
            assert w["memory_limit"] == int(MEMORY_LIMIT * 0.9)
            status, page = fetch(printed["dashboard"])
            assert status == 200 and "MST" in page
            socks = listening(p.pid)
            g = mst_dist.generate("grid", rows=20, cols=20, seed=1)
            assert_result(mst_dist.minimum_spanning_forest(g, c), expected(g))
        assert len({pid for pid, _, _ in socks}) == 3  # scheduler, nanny, worker
        assert_loopback(socks, 5)
        pids = {q.pid for q in psutil.Process(p.pid).children(recursive=True)}
    finally:
        p.send_signal(signal.SIGINT)
        # the script stops the workers, then the scheduler, each within MST_STOP_TIMEOUT (20 s), and kills
        # what is left: gone in well under this, however busy the box
        p.wait(timeout=120)
        taken.close()
    assert_gone(pids)


def assert_gone(pids, within=30):
    """No process of ``pids`` runs (zombies aside) ``within`` seconds from now."""
    def runs(pid):
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + within
    while running := [q for q in pids if runs(q)]:
        assert time.monotonic() < deadline, f"processes of start-local.sh left running: {running}"
        time.sleep(0.2)


def _cmdline(proc):
    try:
        return " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return ""


@pytest.mark.slow
def test_start_local_script_ctrl_c_while_the_worker_starts(tmp_path):
    """Ctrl-C while the worker is still starting (its warm-up compiling the kernels into an empty Numba
    cache, tens of seconds): start-local.sh stops the worker while the scheduler is still up, kills what
    has not stopped after MST_STOP_TIMEOUT seconds a step, and is gone with nothing left behind, well before
    a nanny whose scheduler left first would give up on its worker (its death_timeout, 120 s)."""
    needs.program("dask", "pip install distributed (it installs the `dask` command)")
    env = cli_env(PYTHON=sys.executable, MST_STOP_TIMEOUT="5", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    with open(tmp_path / "stderr", "w") as err:
        p = subprocess.Popen(["bash", os.path.join(ROOT, "cluster", "start-local.sh"), "1"], env=env,
                             stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:  # until the nanny has spawned its worker process
            procs = psutil.Process(p.pid).children(recursive=True)
            if any("spawn_main" in _cmdline(q) for q in procs):
                break
            assert p.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr").read_text()[-3000:]
            time.sleep(0.1)
        pids = {q.pid for q in psutil.Process(p.pid).children(recursive=True)}
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)  # 2 x 5 s and the kill; a nanny left to itself would wait out 120 s
    assert p.returncode == 130
    assert_gone(pids, within=5)


def _watch(p):
    """Every listening socket of ``p``'s descendants seen until it ends: ``{(pid, ip, port)}``."""
    seen = set()
    while p.poll() is None:
        seen |= {s for s in listening(p.pid) if s[0] != p.pid}
        time.sleep(0.2)
    return seen


@pytest.mark.mpi
@pytest.mark.slow
def test_mpi_ranks_listen_on_loopback(tmp_path):
    """`mpirun -n 4 mst-dist run --mpi`: every rank on this machine, so the scheduler, the workers and
    their web servers listen on the loopback interface.  (The sockets of the ranks are read; mpirun's own
    launcher is not mst-dist's, and MPI's messages go through shared memory: btl self,vader.)"""
    from test_mpi import mpirun_or_skip

    exe = mpirun_or_skip()
    (tmp_path / "run.yaml").write_text(
        "graph:\n  generate: {kind: erdos_renyi, n: 20000, m: 120000, seed: 4}\n"
        "local_finish: 0\npartitions: 4\n"
        "cluster: {kind: mpi, threads_per_worker: 1, wait_timeout: 120, warmup: false}\n")
    env = cli_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                  OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader")
    p = subprocess.Popen([exe, "-n", "4", "--oversubscribe", *CLI, "run", "--mpi", "run.yaml", "--json"],
                         cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import threading

    out = {}
    reader = threading.Thread(target=lambda: out.update(zip(("out", "err"), p.communicate(timeout=240))))
    reader.start()
    socks = _watch(p)
    reader.join()
    assert p.returncode == 0, out["err"][-3000:]
    rep = json.loads(out["out"])
    assert rep["cluster"]["scheduler"].startswith("tcp://127.0.0.1:")
    assert all(w["address"].startswith("tcp://127.0.0.1:") for w in rep["cluster"]["workers"])
    assert len({pid for pid, _, _ in socks}) >= 3  # the scheduler rank and both worker ranks
    assert_loopback(socks, 5)


@pytest.mark.slurm
@pytest.mark.slow
def test_slurm_workers_listen_on_the_given_interface(tmp_path, slurm, dask_jobqueue):
    """Kind slurm with cluster.interface: the scheduler here and the job's worker listen on that interface
    only (here the loopback one: a single-node SLURM)."""
    from mst_dist.deploy.mpi import loopback_interface

    (tmp_path / "run.yaml").write_text(
        "graph:\n  generate: {kind: erdos_renyi, n: 20000, m: 120000, seed: 8}\n"
        "local_finish: 0\npartitions: 4\n"
        f"cluster:\n  kind: slurm\n  jobs: 1\n  cores: 1\n  memory: 1GB\n  processes: 1\n"
        f"  interface: {loopback_interface()}\n  walltime: '00:10:00'\n  log_directory: {tmp_path / 'jobs'}\n"
        "  wait_timeout: 180\n  warmup: false\n")
    p = subprocess.Popen([*CLI, "run", "run.yaml", "--json"], cwd=tmp_path, env=cli_env(slurm["env"]),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import threading

    out = {}
    reader = threading.Thread(target=lambda: out.update(zip(("out", "err"), p.communicate(timeout=300))))
    reader.start()
    socks = set()
    while p.poll() is None:
        socks |= listening(p.pid)
        # the job's worker is a child of slurmd, not of mst-dist: find it by its command line
        for q in psutil.process_iter(["cmdline"]):
            if "distributed.cli.dask_worker" in " ".join(q.info["cmdline"] or ()):
                socks |= listening(q.pid)
        time.sleep(0.2)
    reader.join()
    assert p.returncode == 0, out["err"][-3000:]
    rep = json.loads(out["out"])
    assert rep["cluster"]["scheduler"].startswith("tcp://127.0.0.1:")
    assert len({pid for pid, _, _ in socks}) >= 3  # mst-dist (scheduler), the nanny, its worker
    assert_loopback(socks, 4)


from test_jobqueue import dask_jobqueue, slurm  # noqa: E402,F401  (the single-node SLURM fixture)

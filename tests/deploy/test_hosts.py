"""A cluster of several hosts for real: the scheduler, two workers and the client each in a network
namespace of its own (support.netns), joined by a bridge, with addresses 10.77.0.1 to .4.

The scheduler is ``dask scheduler`` with the MST page's preload, the workers are the shipped spec
files (sized to this machine, as cluster/start-local.sh sizes them), and the client is the Python
API, ``mst-dist submit`` and ``mst-dist run`` of a config naming the scheduler, on a host of their own.  Checked: a worker started from
workers/cpu-worker.yaml as shipped (loopback) on another host is refused before any work, by both;
with workers/cpu-worker-hosts.yaml the forest is Kruskal's; a checkpoint, an output and an input
in a directory one worker does not share (a tmpfs mounted over it in that worker's namespace) are
refused before any work, naming that worker.  Needs root and iproute2 (skips without them, fails
under CI, where .ci/run installs iproute2 and runs as root).  And, on this host, TLS workers as the
clusters guide makes them: its openssl commands, its worker spec, its scheduler and submit flags.
"""
import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml

import mst_dist
from support import ROOT
from support.cli import CLI, cli_env
from support.netns import Hosts, require, wait_for
from support.oracle import assert_forest, assert_forest_file, expected

pytestmark = [pytest.mark.processes, pytest.mark.slow]

GRID = {"rows": 30, "cols": 30, "seed": 5}
PORT = 8786

#: What the client host runs: the Python API against the scheduler, its answers as JSON on stdout.
CLIENT = r'''
import json, sys, urllib.request
import mst_dist
from distributed import Client

address, workers, private = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {}

def refused(call, error):
    try:
        call()
    except error as e:
        return {"error": type(e).__name__, "workers": list(e.workers), "message": str(e)}
    return None

with Client(address, timeout=30) as c:
    c.wait_for_workers(workers, timeout=90)
    g = mst_dist.generate("grid", **json.loads(sys.argv[4]))
    if private == "-":  # a worker at a loopback address: refused before any work
        out["api"] = refused(lambda: mst_dist.minimum_spanning_forest(g, c), mst_dist.WorkerAddressError)
    else:
        res = mst_dist.minimum_spanning_forest(g, c, partitions=4, local_finish=0)
        out["edge_ids"] = res.edge_ids.tolist()
        out["workers"] = res.stats.workers
        for what in ("checkpoint", "output"):
            out[what] = refused(lambda: mst_dist.minimum_spanning_forest(g, c, **{what: private + "/" + what}),
                                mst_dist.SharedStorageError)
        out["read"] = refused(lambda: mst_dist.read(private + "/g.txt", client=c), mst_dist.SharedStorageError)
        host = address.split("://")[1].rsplit(":", 1)[0]
        with urllib.request.urlopen(f"http://{host}:8787/mst", timeout=30) as page:
            out["page"] = [page.status, "MST" in page.read().decode()]
print(json.dumps(out))
'''


def _spec(tmp_path, name, **opts):
    """A shipped worker spec sized to this machine (one thread, 1 GiB), as cluster/start-local.sh sizes it."""
    with open(os.path.join(ROOT, "workers", name)) as f:
        spec = yaml.safe_load(f)
    spec["opts"].update(nthreads=1, memory_limit="1GiB", **opts)
    path = tmp_path / f"sized-{name}"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


@pytest.fixture
def hosts(tmp_path):
    require()
    net = Hosts(["scheduler", "worker1", "worker2", "client"])
    env = cli_env()
    try:
        info = tmp_path / "scheduler.json"
        net.start("scheduler", [sys.executable, "-m", "dask", "scheduler", "--host", net.address["scheduler"],
                                "--port", str(PORT), "--dashboard-address", f"{net.address['scheduler']}:8787",
                                "--scheduler-file", str(info), "--preload", "mst_dist.diagnostics.dashboard"],
                  env=env)
        wait_for(lambda: info.exists() and info.stat().st_size > 0, 60, "the scheduler's file")
        net.env = env
        net.scheduler = f"tcp://{net.address['scheduler']}:{PORT}"
        yield net
    finally:
        net.close()


def _worker(net, host, spec, private=None):
    argv = [sys.executable, "-m", "dask", "spec", net.scheduler, "--spec-file", spec]
    if private is not None:  # this host has its own directory there: a tmpfs over it, in its namespace only
        argv = ["sh", "-c", f'mount -t tmpfs tmpfs "{private}" && exec "$@"', "sh", *argv]
    return net.start(host, argv, env=net.env)


def _client(net, tmp_path, workers, private="-"):
    """The client script started on the client host; :func:`_finish` reads its JSON."""
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    return net.start("client", [sys.executable, str(script), net.scheduler, str(workers), str(private),
                                json.dumps(GRID)], env=net.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)


def _submit(net, tmp_path, *flags):
    """``mst-dist submit`` of the grid started on the client host."""
    return net.start("client", [*CLI, "submit", "--scheduler", net.scheduler, "--generate", "grid", "--rows",
                                str(GRID["rows"]), "--cols", str(GRID["cols"]), "--seed", str(GRID["seed"]), "-q",
                                *flags], env=net.env, cwd=tmp_path, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)


def _finish(p):
    """``(exit status, stdout, stderr)`` of a process :func:`_client` or :func:`_submit` started."""
    out, err = p.communicate(timeout=180)
    return p.returncode, out, err


def _answers(p):
    status, out, err = _finish(p)
    assert status == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_a_worker_on_loopback_is_refused_then_one_per_host_solves(hosts, tmp_path):
    exp = expected(mst_dist.generate("grid", **GRID))
    w2 = hosts.address["worker2"]

    # workers/cpu-worker.yaml as shipped (host: 127.0.0.1) on a host of its own, beside a worker of
    # workers/cpu-worker-hosts.yaml: refused before any work, by the Python API and by the command line
    # at once (the refused worker runs no task: its warm-up preload is left out)
    loopback = _worker(hosts, "worker1", _spec(tmp_path, "cpu-worker.yaml", preload=[]))
    private = tmp_path / "private"  # a directory the second worker's host has a tmpfs of its own over
    private.mkdir()
    (private / "g.txt").write_text("0 1 4\n1 2 1\n2 0 2\n")
    spec = _spec(tmp_path, "cpu-worker-hosts.yaml")
    _worker(hosts, "worker2", spec, private=private)
    api, cli = _client(hosts, tmp_path, 1), _submit(hosts, tmp_path)
    api = _answers(api)["api"]
    assert api is not None and api["error"] == "WorkerAddressError", api
    (worker,) = api["workers"]
    assert worker.startswith("tcp://127.0.0.1:")
    for said in (worker, hosts.scheduler, "--interface", "--host", "host: 127.0.0.1"):
        assert said in api["message"]
    status, _, err = _finish(cli)
    # (submit goes on once one worker has joined: the other may be still starting)
    assert status == 1 and re.match(r"mst-dist: error: 1 of [12] worker\(s\) registered with a loopback "
                                    r"address", err), err[-2000:]
    assert worker in err and "--interface" in err
    hosts.stop(loopback)

    # workers/cpu-worker-hosts.yaml on both hosts: the forest is Kruskal's, from Python and from
    # `mst-dist run` of a config naming the scheduler; a checkpoint, an output and an input where the second worker has its own
    # directory are refused, naming it; the MST page answers on the client's host
    _worker(hosts, "worker1", spec)
    config = tmp_path / "remote.yaml"  # `mst-dist run` of a run config naming the scheduler
    config.write_text(yaml.safe_dump({"graph": {"generate": {"kind": "grid", **GRID}},
                                      "output": {"path": str(tmp_path / "forest.npz")},
                                      "cluster": {"kind": "address", "address": hosts.scheduler}}))
    api = _client(hosts, tmp_path, 2, private)
    cli = hosts.start("client", [*CLI, "run", str(config), "-q"], env=hosts.env, cwd=tmp_path,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = _answers(api)
    assert out["workers"] == 2
    assert_forest(exp, np.asarray(out["edge_ids"], dtype=np.int64))
    for what in ("checkpoint", "output", "read"):
        refusal = out[what]
        assert refusal is not None and refusal["error"] == "SharedStorageError", (what, refusal)
        assert len(refusal["workers"]) == 1 and refusal["workers"][0].startswith(f"tcp://{w2}:"), (what, refusal)
    assert "object-store URL" in out["checkpoint"]["message"]
    assert "not visible on 1 of 2 worker(s)" in out["read"]["message"]
    assert out["page"] == [200, True]
    status, _, err = _finish(cli)
    assert status == 0, err[-3000:]
    assert_forest_file(str(tmp_path / "forest.npz"), exp)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".mst-dist-probe")]


def _doc_block(lang, holding):
    """The first ``lang`` block of docs/guide/clusters.md holding ``holding``."""
    text = open(os.path.join(ROOT, "docs", "guide", "clusters.md"), encoding="utf-8").read()
    for m in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.M | re.S):
        if m[1] == lang and holding in m[2]:
            return m[2]
    raise AssertionError(f"docs/guide/clusters.md: no {lang} block holding {holding!r}")


def test_tls_workers_as_the_guide_makes_them(tmp_path):
    """The guide's openssl commands, its TLS worker spec and its TLS `dask scheduler` and `submit` flags:
    a worker joins over tls:// and the forest is Kruskal's (on this host: Dask checks the chain, not the
    addresses the certificates carry)."""
    from support import needs

    needs.program("openssl", "apt-get install openssl")
    env = cli_env()
    certs = subprocess.run(["bash", "-c", "set -euo pipefail\n" + _doc_block("bash", "openssl req -x509")],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert certs.returncode == 0, certs.stderr[-2000:]
    spec = yaml.safe_load(_doc_block("yaml", "tls_worker_cert"))
    spec["opts"].update(nthreads=1, memory_limit="1GiB")
    spec["opts"]["security"] = {k: str(tmp_path / v) for k, v in spec["opts"]["security"].items()}
    (tmp_path / "worker-tls.yaml").write_text(yaml.safe_dump(spec))
    info = tmp_path / "scheduler.json"
    tls = ["--tls-ca-file", "ca.pem", "--tls-cert", "scheduler.pem", "--tls-key", "scheduler-key.pem"]
    started = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                 "--dashboard-address", "127.0.0.1:0", "--protocol", "tls", *tls,
                                 "--scheduler-file", str(info), "--preload", "mst_dist.diagnostics.dashboard"],
                                cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)]
    try:
        wait_for(lambda: info.exists() and info.stat().st_size > 0, 60, "the scheduler's file")
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tls://")
        started.append(subprocess.Popen([sys.executable, "-m", "dask", "spec", address, "--spec-file",
                                         "worker-tls.yaml"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True))
        p = subprocess.run([*CLI, "submit", "--scheduler", address, "--generate", "grid", "--rows", "20", "--cols",
                            "20", "--seed", "5", "-q", "--output", "forest.npz", "--tls-ca-file", "ca.pem",
                            "--tls-cert", "client.pem", "--tls-key", "client-key.pem"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr[-3000:]
        assert_forest_file(str(tmp_path / "forest.npz"), expected(mst_dist.generate("grid", rows=20, cols=20,
                                                                                    seed=5)))
        # plain tcp:// to it: the error says the scheduler may speak TLS
        p = subprocess.run([*CLI, "submit", "--scheduler", "tcp://" + address.split("://")[1], "--generate",
                            "grid", "--rows", "4", "--cols", "4", "-q"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=180)
        assert p.returncode == 1 and "the scheduler may speak TLS" in p.stderr, p.stderr[-2000:]
    finally:
        for proc in reversed(started):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)

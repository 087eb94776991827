"""A cluster of several hosts for real: the scheduler, the workers and the client each in a network
namespace of its own (support.netns), joined by a bridge, at the clusters guide's addresses 10.0.0.1
(scheduler), .2 and .3 (node1, node2), .4 (client), and node3 at .5.

One set of namespaces serves the module, and one cluster on them (the scheduler, a worker on node1
and on node2) the tests that need it, started again where a test killed part of it; what a test
starts itself is killed when it ends, and the namespaces are deleted by name after the last.  The
commands are the guide's ("Several machines" in docs/guide/clusters.md), read from it: its `dask
scheduler`, its `dask spec` of workers/cpu-worker-hosts.yaml (sized to this machine, as
cluster/start-local.sh sizes it), its `mst-dist submit`, its restart loop; its openssl commands, TLS
worker spec, TLS commands and certificate check.  Checked, against Kruskal's forest:

- a worker of workers/cpu-worker.yaml as shipped (loopback) on another host is refused before any
  work, by the Python API and `mst-dist submit`; with cpu-worker-hosts.yaml the Python API and
  `mst-dist run` of a config naming the scheduler solve; a checkpoint, an output and an input in a
  directory one worker does not share (a tmpfs over it in that worker's namespace) are refused
  before any work, naming that worker; the MST page in Chromium on the client's host draws the run;
- a worker's cable pulled for 3 s while a run goes: the run waits and ends on the same workers;
- a worker killed (SIGKILL, nanny and all) while a run waits between rounds, for a run with the
  vertex state on one worker and one with it in ranges over the workers; the restart loop brings the
  killed worker back;
- TLS between the hosts, each certificate checked against the address it is served at.

Needs root and iproute2 (skips without them, fails under CI, where .ci/run installs iproute2,
openssl and chromium and runs as root).
"""
import json
import os
import queue
import re
import shlex
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import yaml

import mst_dist
from support import ROOT, needs
from support.chromium import chromium_path
from support.cli import CLI, cli_env
from support.netns import Hosts, require, wait_for
from support.oracle import assert_forest, assert_forest_file, expected

pytestmark = [pytest.mark.processes, pytest.mark.slow]

GRID = {"rows": 30, "cols": 30, "seed": 5}
GUIDE = os.path.join(ROOT, "docs", "guide", "clusters.md")

#: What the client host runs: the Python API against the scheduler, its answers as JSON on stdout;
#: then, where a run was made, the MST page in headless Chromium on this host.
CLIENT = r'''
import json, sys, time
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
        end = time.monotonic() + 60  # the loopback worker stopped just before: gone from the scheduler
        while any("127.0.0.1" in w for w in c.scheduler_info()["workers"]) and time.monotonic() < end:
            time.sleep(0.2)
        res = mst_dist.minimum_spanning_forest(g, c, partitions=4, local_finish=0)
        out["edge_ids"] = res.edge_ids.tolist()
        out["workers"] = res.stats.workers
        out["rounds"] = [r.round for r in res.stats.rounds]
        for what in ("checkpoint", "output"):
            out[what] = refused(lambda: mst_dist.minimum_spanning_forest(g, c, **{what: private + "/" + what}),
                                mst_dist.SharedStorageError)
        out["read"] = refused(lambda: mst_dist.read(private + "/g.txt", client=c), mst_dist.SharedStorageError)
if private != "-" and sys.argv[5] == "browser":  # the page, as a browser of this host draws it
    from support.chromium import Chromium
    host = address.split("://")[1].rsplit(":", 1)[0]
    status = "Bokeh.documents[0].get_model_by_name('mst-status').text"
    ready = ("window.Bokeh !== undefined && Bokeh.documents.length > 0 "
             "&& Bokeh.documents[0].get_model_by_name('mst-rounds') !== null "
             "&& Bokeh.documents[0].get_model_by_name('mst-rounds').data.round.length > 0 "
             f"&& {status}.includes('finished')")
    probe = (f"JSON.stringify({{status: {status}, "
             "rounds: Array.from(Bokeh.documents[0].get_model_by_name('mst-rounds').data.round)})")
    with Chromium() as browser:
        out["page"] = json.loads(browser.page(f"http://{host}:8787/mst", ready, probe, settle=0.2))
print(json.dumps(out))
'''

#: What the client host runs for the faults: runs of the Python API, each stopped between its round 0
#: and round 1 (the driver waits for a line on stdin: the test harms a host meanwhile); one JSON line
#: on stdout as each run waits (``held``) and ends (``edge_ids``, ``workers``, ``seconds`` after the hold).
FAULTS = r'''
import json, sys, time
import mst_dist
from distributed import Client

address, graph, runs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
g = mst_dist.generate("grid", **graph)

def say(**what):
    print(json.dumps(what), flush=True)

with Client(address, timeout=30) as c:
    for name, workers, options in runs:  # (a bound on a loaded machine, not a measure)
        c.wait_for_workers(workers, timeout=300)
        released = []

        def progress(ev):
            if ev["round"] == 1 and not released:
                say(held=name, workers=sorted(c.scheduler_info()["workers"]))
                sys.stdin.readline()
                released.append(time.monotonic())

        res = mst_dist.minimum_spanning_forest(g, c, partitions=4, local_finish=0, progress=progress, **options)
        say(run=name, edge_ids=res.edge_ids.tolist(), workers=res.stats.workers,
            seconds=time.monotonic() - released[0])
'''


# --------------------------------------------------------------------------
# the guide's commands
# --------------------------------------------------------------------------

def _guide_block(lang, holding):
    """The first ``lang`` block of docs/guide/clusters.md holding ``holding``."""
    text = open(GUIDE, encoding="utf-8").read()
    for m in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.M | re.S):
        if m[1] == lang and holding in m[2]:
            return m[2]
    raise AssertionError(f"docs/guide/clusters.md: no {lang} block holding {holding!r}")


def _guide_command(holding, spec=None):
    """The guide's bash command holding ``holding``, as an argv to start here: ``dask`` and ``mst-dist`` as
    this Python's, the spec file replaced by ``spec`` (the guide says to edit it to the node)."""
    for block in re.finditer(r"^```bash\n(.*?)^```", open(GUIDE, encoding="utf-8").read(), re.M | re.S):
        for line in block[1].replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv and argv[0] in ("dask", "mst-dist", "openssl") and holding in " ".join(argv):
                head = {"dask": [sys.executable, "-m", "dask"], "mst-dist": list(CLI)}.get(argv[0], argv[:1])
                if "<" in argv:  # stdin: the caller's
                    argv = argv[:argv.index("<")]
                return head + [spec if a.endswith("worker-hosts.yaml") and spec else a for a in argv[1:]]
    raise AssertionError(f"docs/guide/clusters.md: no bash command holding {holding!r}")


def _spec(tmp_path, name, **opts):
    """A shipped worker spec sized to this machine (one thread, 1 GiB), as cluster/start-local.sh sizes it."""
    with open(os.path.join(ROOT, "workers", name)) as f:
        spec = yaml.safe_load(f)
    spec["opts"].update(nthreads=1, memory_limit="1GiB", **opts)
    path = tmp_path / f"sized-{name}"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


# --------------------------------------------------------------------------
# the hosts
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hosts():
    """The namespaces of the module: scheduler (10.0.0.1), node1, node2, client (10.0.0.4), node3 (.5)."""
    require()
    net = Hosts(["scheduler", "node1", "node2", "client", "node3"])
    try:
        net.env = cli_env()
        yield net
    finally:
        net.close()


def _scheduler(net, root, holding, **kwargs):
    """The guide's scheduler command holding ``holding`` started on the scheduler's host (with a scheduler
    file in ``root``, to wait for); ``(its address, the process)``."""
    info = root / "scheduler.json"
    if info.exists():
        info.unlink()
    p = net.start("scheduler", _guide_command(holding) + ["--scheduler-file", str(info)], env=net.env, **kwargs)
    wait_for(lambda: info.exists() and info.stat().st_size > 0, 120, "the scheduler's file")
    return json.loads(info.read_text())["address"], p


def _worker(net, host, spec, private=None, **kwargs):
    """The guide's worker command with ``spec`` started on ``host`` (its log: ``<host>.log`` beside ``spec``)."""
    argv = _guide_command("dask spec tcp://10.0.0.1:8786", spec)
    if private is not None:  # this host has its own directory there: a tmpfs over it, in its namespace only
        argv = ["sh", "-c", f'mount -t tmpfs tmpfs "{private}" && exec "$@"', "sh", *argv]
    with open(os.path.join(os.path.dirname(spec), f"{host}.log"), "a") as log:
        return net.start(host, argv, env=net.env, stderr=log, **kwargs)


class _Cluster:
    """The guide's cluster on the module's hosts: its scheduler, and a worker of cpu-worker-hosts.yaml
    (sized) on node1 and on node2, node2 with a directory of its own at ``private`` (holding ``g.txt``).
    The tests share it (a worker start is seconds of compiled kernels loaded); :meth:`up` starts again
    whatever of it a test killed."""

    def __init__(self, hosts, root):
        self.hosts, self.root = hosts, root
        self.private = root / "private"
        self.private.mkdir()
        (self.private / "g.txt").write_text("0 1 4\n1 2 1\n2 0 2\n")
        self.spec = _spec(root, "cpu-worker-hosts.yaml")
        self.procs = {}
        self.address = None

    def up(self):
        if "scheduler" not in self.procs or self.procs["scheduler"].poll() is not None:
            self.down()
            self.address, self.procs["scheduler"] = _scheduler(
                self.hosts, self.root, "dask scheduler --host 10.0.0.1 --port 8786", lasting=True)
        for host in ("node1", "node2"):
            if host not in self.procs or self.procs[host].poll() is not None:
                self.procs[host] = _worker(self.hosts, host, self.spec, lasting=True,
                                           private=self.private if host == "node2" else None)
        self.hosts.scheduler = self.address
        return self

    def down(self):
        for p in self.procs.values():
            self.hosts.kill(p)
        self.procs.clear()


@pytest.fixture(scope="module")
def cluster(hosts, tmp_path_factory):
    c = _Cluster(hosts, tmp_path_factory.mktemp("cluster"))
    try:
        yield c
    finally:
        c.down()


@pytest.fixture
def net(hosts, cluster):
    """The module's hosts with the cluster up (``net.scheduler``: its address); what the test starts is
    killed after it."""
    cluster.up()
    assert hosts.scheduler == f"tcp://{hosts.address['scheduler']}:8786"
    with hosts.scope():
        yield hosts


def _client(net, tmp_path, workers, private="-"):
    """The client script started on the client host; :func:`_finish` reads its JSON."""
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = dict(net.env, PYTHONPATH=os.path.join(ROOT, "tests") + os.pathsep + net.env["PYTHONPATH"])
    browser = "browser" if chromium_path() is not None else "-"
    return net.start("client", [sys.executable, str(script), net.scheduler, str(workers), str(private),
                                json.dumps(GRID), browser], env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)


def _finish(p):
    """``(exit status, stdout, stderr)`` of a client process started with captured output."""
    out, err = p.communicate(timeout=180)
    return p.returncode, out, err


def _answers(p):
    status, out, err = _finish(p)
    assert status == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_a_worker_on_loopback_is_refused_then_one_per_host_solves(net, cluster, tmp_path):
    exp = expected(mst_dist.generate("grid", **GRID))
    w2 = net.address["node2"]

    # workers/cpu-worker.yaml as shipped (host: 127.0.0.1) on a host of its own, beside the workers of
    # workers/cpu-worker-hosts.yaml: refused before any work, by the Python API and by the guide's
    # `mst-dist submit` at once (the refused worker runs no task: its warm-up preload is left out)
    loopback = _worker(net, "node3", _spec(tmp_path, "cpu-worker.yaml", preload=[]))
    api = _client(net, tmp_path, 3)
    cli = net.start("client", _guide_command("mst-dist submit --scheduler tcp://10.0.0.1"), env=net.env, cwd=tmp_path,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    api = _answers(api)["api"]
    assert api is not None and api["error"] == "WorkerAddressError", api
    (worker,) = api["workers"]
    assert worker.startswith("tcp://127.0.0.1:")
    for said in (worker, net.scheduler, "--interface", "--host", "host: 127.0.0.1"):
        assert said in api["message"]
    status, _, err = _finish(cli)
    # (submit goes on once one worker has joined: the others may be still starting)
    assert status == 1 and re.search(r"^mst-dist: error: 1 of [123] worker\(s\) registered with a loopback "
                                     r"address", err, re.M), err[-2000:]
    assert worker in err and "--interface" in err
    assert not (tmp_path / "forest.npz").exists()
    net.stop(loopback)

    # cpu-worker-hosts.yaml on both hosts: the forest is Kruskal's, from Python and from `mst-dist run`
    # of a config naming the scheduler; a checkpoint, an output and an input where the second worker
    # has its own directory are refused, naming it; the MST page, in Chromium on the client's host,
    # draws the run to its end
    config = tmp_path / "remote.yaml"  # `mst-dist run` of a run config naming the scheduler
    config.write_text(yaml.safe_dump({"graph": {"generate": {"kind": "grid", **GRID}},
                                      "output": {"path": str(tmp_path / "forest.npz")},
                                      "cluster": {"kind": "address", "address": net.scheduler}}))
    api = _client(net, tmp_path, 2, cluster.private)
    cli = net.start("client", [*CLI, "run", str(config), "-q"], env=net.env, cwd=tmp_path,
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
    status, _, err = _finish(cli)
    assert status == 0, err[-3000:]
    assert_forest_file(str(tmp_path / "forest.npz"), exp)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".mst-dist-probe")]
    # the page (the last run of the two clients: the same graph, so the same forest either way)
    if "page" not in out:
        needs.unavailable("chromium is not installed (the MST page in a browser): apt-get install chromium")
    page = out["page"]
    assert "finished" in page["status"] and f"{len(exp.edge_ids):,} forest edges" in page["status"], page
    assert page["rounds"] == list(range(len(page["rounds"]))) and len(page["rounds"]) >= 2, page


# --------------------------------------------------------------------------
# faults: a cable pulled, a worker killed
# --------------------------------------------------------------------------

class _Lines:
    """The JSON lines a started process writes, read on a thread of their own (a read that can time out)."""

    def __init__(self, p):
        self.p, self._q = p, queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            if line.startswith("{"):
                self._q.put(json.loads(line))
        self._q.put(None)

    def next(self, timeout=360):
        try:
            got = self._q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the client said nothing within {timeout} s") from None
        if got is None:
            raise AssertionError(f"the client ended ({self.p.wait(10)}): {self.p.stderr.read()[-3000:]}")
        return got

    def go(self):
        self.p.stdin.write("\n")
        self.p.stdin.flush()

    def end(self):
        assert self.p.wait(60) == 0, self.p.stderr.read()[-3000:]


def _start_faults(net, tmp_path, runs):
    """The fault client started on the client host for ``runs`` (``[name, workers to wait for, options]``)."""
    script = tmp_path / "faults.py"
    script.write_text(FAULTS)
    return _Lines(net.start("client", [sys.executable, str(script), net.scheduler, json.dumps(GRID), json.dumps(runs)],
                            env=net.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True))


def test_a_cable_pulled_mid_run(net, tmp_path):
    """node1's cable pulled (its port on the switch down) for 3 s as a run goes on from its round 0, well
    within the workers' death timeout and Dask's TCP timeout: the run waits for it and ends on both workers
    with Kruskal's forest; the cluster keeps both (the next run finds the same two)."""
    exp = expected(mst_dist.generate("grid", **GRID))
    client = _start_faults(net, tmp_path, [["cut", 2, {}], ["after", 2, {}]])
    held = client.next()
    assert held["held"] == "cut" and len(held["workers"]) == 2, held
    net.link("node1", False)
    client.go()
    time.sleep(3)
    net.link("node1", True)
    done = client.next()
    assert done["run"] == "cut" and done["workers"] == 2, done
    assert done["seconds"] >= 2.5, done  # it waited for node1 (its chunks are there)
    assert_forest(exp, np.asarray(done["edge_ids"], dtype=np.int64))
    again = client.next()
    assert again["held"] == "after" and again["workers"] == held["workers"], again
    client.go()
    done = client.next()
    assert done["run"] == "after" and done["workers"] == 2, done
    assert_forest(exp, np.asarray(done["edge_ids"], dtype=np.int64))
    client.end()


def _restart_loop(net, host, spec):
    """The guide's restart loop (``while true; do dask spec ...; sleep 5; done``) with ``spec`` started on
    ``host`` (its log: ``<host>.log`` beside ``spec``)."""
    block = _guide_block("bash", "while true; do dask spec")
    line = next(ln for ln in block.splitlines() if ln.startswith("while true"))
    env = dict(net.env, PATH=os.path.dirname(sys.executable) + os.pathsep + net.env["PATH"])  # this Python's dask
    with open(os.path.join(os.path.dirname(spec), f"{host}.log"), "a") as log:
        return net.start(host, ["bash", "-c", line.replace("workers/cpu-worker-hosts.yaml", spec)], env=env,
                         stderr=log)


def _kill_below(p):
    """Every process ``p`` started (a worker and its nanny), not ``p`` itself, killed at once (SIGKILL)."""
    import psutil

    below = psutil.Process(p.pid).children(recursive=True)
    for q in below:
        q.kill()
    psutil.wait_procs(below, timeout=10)
    assert below


def test_a_worker_killed_mid_run_then_a_partitioned_run(net, cluster, tmp_path):
    """A third worker, on node3 under the guide's restart loop, killed (SIGKILL, nanny and all: the host's
    worker gone) while a run waits between its rounds 0 and 1: the run ends on the two left with Kruskal's
    forest (Dask computes the lost chunks again), and the loop brings node3's worker back; then node2's
    killed the same way during a run with the vertex state cut into ranges over the workers
    (``vertex_partition="always"``): it ends on node1 and node3 with Kruskal's forest too."""
    exp = expected(mst_dist.generate("grid", **GRID))
    # (its spec without the warm-up preload: the loop's second start joins sooner, the kernels load when
    # a task needs them)
    node3 = _restart_loop(net, "node3", _spec(tmp_path, "cpu-worker-hosts.yaml", preload=[]))
    client = _start_faults(net, tmp_path, [["resident", 3, {"vertex_partition": "never"}],
                                           ["partitioned", 3, {"vertex_partition": "always"}]])

    held = client.next()
    assert held["held"] == "resident" and len(held["workers"]) == 3, held
    (gone,) = [w for w in held["workers"] if w.startswith(f"tcp://{net.address['node3']}:")]
    _kill_below(node3)
    client.go()
    done = client.next()
    assert done["run"] == "resident", done
    assert_forest(exp, np.asarray(done["edge_ids"], dtype=np.int64))

    held = client.next()  # (the run waited for 3 workers: node3's again, a new worker, the loop's)
    assert held["held"] == "partitioned" and len(held["workers"]) == 3 and gone not in held["workers"], held
    assert any(w.startswith(f"tcp://{net.address['node3']}:") for w in held["workers"]), held
    net.kill(cluster.procs["node2"])
    client.go()
    done = client.next()
    assert done["run"] == "partitioned", done
    assert_forest(exp, np.asarray(done["edge_ids"], dtype=np.int64))
    client.end()


# --------------------------------------------------------------------------
# TLS between the hosts
# --------------------------------------------------------------------------

#: The scheduler's identity (its page's JSON) once it lists ``argv[2]`` workers (within 300 s).
# Dask's identity page can answer 500 while a worker is joining or leaving (its handler reads the workers'
# state as it changes): asked again until the deadline, then the error stands
IDENTITY = """import json, sys, time, urllib.error, urllib.request
end = time.monotonic() + 300
while True:
    try:
        ident = json.load(urllib.request.urlopen(sys.argv[1], timeout=30))
    except urllib.error.HTTPError as e:
        if e.code != 500 or time.monotonic() > end:
            raise
        time.sleep(0.5)
        continue
    if len(ident["workers"]) >= int(sys.argv[2]) or time.monotonic() > end:
        break
    time.sleep(0.5)
print(json.dumps(ident))
"""


def _verify(net, tmp_path, address, as_ip):
    """The guide's ``openssl s_client`` from the client host to ``address`` (host:port): the chain to ca.pem
    and the certificate's IP SAN checked against ``as_ip``; the finished process."""
    guide = "openssl s_client -connect 10.0.0.1:8786"
    argv = [{"10.0.0.1:8786": address, "10.0.0.1": as_ip}.get(a, a) for a in _guide_command(guide)]
    return net.run("client", argv, cwd=tmp_path, input="", errors="replace", timeout=60)


def test_tls_between_the_hosts_as_the_guide_makes_it(hosts, cluster, tmp_path):
    """The guide's openssl commands (certificates for its addresses, the namespaces' own), its TLS scheduler,
    its TLS worker spec on node1 and node2 with their certificates, its TLS `mst-dist submit` on the client's
    host: the forest is Kruskal's; each certificate passes a check of its chain and of the address it is
    served at (Dask checks only the chain), and fails one against another host's address; plain tcp:// to
    the scheduler is told that it may speak TLS."""
    needs.program("openssl", "apt-get install openssl")
    certs = subprocess.run(["bash", "-c", "set -euo pipefail\n" + _guide_block("bash", "openssl req -x509")],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert certs.returncode == 0, certs.stderr[-2000:]
    spec = yaml.safe_load(_guide_block("yaml", "tls_worker_cert"))
    spec["opts"].update(nthreads=1, memory_limit="1GiB")
    for host in ("node1", "node2"):
        security = {k: str(tmp_path / v.replace("node1", host)) for k, v in spec["opts"]["security"].items()}
        (tmp_path / f"worker-tls-{host}.yaml").write_text(yaml.safe_dump({**spec, "opts": {**spec["opts"],
                                                                                          "security": security}}))
    cluster.down()  # its port is the guide's TLS scheduler's too (a later test starts it again)
    with hosts.scope():
        address, _ = _scheduler(hosts, tmp_path, "--protocol tls", cwd=tmp_path)
        assert address == f"tls://{hosts.address['scheduler']}:8786"
        worker = _guide_command("dask spec tls://")
        for host in ("node1", "node2"):
            hosts.start(host, [*worker[:-1], str(tmp_path / f"worker-tls-{host}.yaml")], env=hosts.env)
        p = hosts.run("client", _guide_command("mst-dist submit --scheduler tls://"),
                      cwd=tmp_path, env=hosts.env, timeout=180)
        assert p.returncode == 0, p.stderr[-3000:]
        assert_forest_file(str(tmp_path / "forest.npz"), expected(mst_dist.generate("grid", **GRID)))
        # the certificate each host serves, checked against the address it serves it at
        ident = hosts.run("client", [sys.executable, "-c", IDENTITY, f"http://{hosts.address['scheduler']}:8787"
                                     "/json/identity.json", "2"], timeout=330)  # (submit ran once one had joined)
        assert ident.returncode == 0, ident.stderr[-2000:]
        served = [address] + sorted(json.loads(ident.stdout)["workers"])
        assert [a.split("://")[1].rsplit(":", 1)[0] for a in served] == [hosts.address[h] for h in
                                                                          ("scheduler", "node1", "node2")], served
        for a in served:
            ip = a.split("://")[1].rsplit(":", 1)[0]
            ok = _verify(hosts, tmp_path, a.split("://")[1], ip)
            assert ok.returncode == 0 and "Verification: OK" in ok.stderr, (a, ok.stderr[-2000:])
            wrong = _verify(hosts, tmp_path, a.split("://")[1], hosts.address["client"])
            assert wrong.returncode != 0 and "IP address mismatch" in wrong.stderr, (a, wrong.stderr[-2000:])
        # plain tcp:// to it: the error says the scheduler may speak TLS
        p = hosts.run("client", [*CLI, "submit", "--scheduler", "tcp://" + address.split("://")[1], "--generate",
                                 "grid", "--rows", "4", "--cols", "4", "-q"], cwd=tmp_path, env=hosts.env, timeout=180)
        assert p.returncode == 1 and "the scheduler may speak TLS" in p.stderr, p.stderr[-2000:]

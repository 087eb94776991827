"""Hosts of their own on one machine: Linux network namespaces joined by a bridge.

:class:`Hosts` makes one namespace per host, each with an ``eth0`` holding a
private address (``10.0.0.1``, ``.2``, ...: the addresses the clusters guide
uses), and a switch namespace holding the bridge their cables (veth pairs)
plug into; nothing is added to this machine's own network, so no traffic
leaves the namespaces and those addresses meet nothing outside them.
Processes run in a host with :meth:`Hosts.run` and :meth:`Hosts.start`; a
host's cable is pulled and plugged back with :meth:`Hosts.link`;
:meth:`Hosts.scope` kills what a block started (one test on a module's
hosts); :meth:`Hosts.close` kills those started (their process groups) and
deletes every namespace by name, also after a failure.  Needs root and
iproute2's ``ip``.
"""
import contextlib
import os
import signal
import subprocess
import time

from support import needs

#: The network the hosts share (a private range, inside the namespaces only).
SUBNET = "10.0.0"


def require():
    """Skip (fail under ``CI``) where namespaces cannot be made: not root, or no ``ip``."""
    if os.geteuid() != 0:
        needs.unavailable("making network namespaces (ip netns) needs root: run the tests as root "
                          "(as .ci/run does)")
    needs.program("ip", "apt-get install iproute2")


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


class Hosts:
    """Namespaces named ``<tag>-<host>``, host ``i`` (from 1) at ``10.0.0.<i>``; see the module docstring."""

    def __init__(self, names, tag=None):
        self.tag = tag or f"mst{os.getpid() % 100000}"
        self.names = list(names)
        self.address = {n: f"{SUBNET}.{i}" for i, n in enumerate(self.names, 1)}
        self._made = []
        self._procs = []
        self._down = set()
        try:
            self._make()
        except BaseException:
            self.close()
            raise

    def ns(self, name):
        return f"{self.tag}-{name}"

    def _make(self):
        for ns in [self.ns(n) for n in ("switch", *self.names)]:  # left by an earlier process of this id
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        switch = self.ns("switch")
        _ip("netns", "add", switch)
        self._made.append(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        for i, name in enumerate(self.names, 1):
            ns = self.ns(name)
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("link", "add", f"port{i}", "netns", switch, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", switch, "link", "set", f"port{i}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{self.address[name]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def _argv(self, host, argv):
        return ["ip", "netns", "exec", self.ns(host), *argv]

    def run(self, host, argv, timeout=120, **kwargs):
        """``argv`` run to its end on ``host``; the finished process (text ``stdout``/``stderr``)."""
        return subprocess.run(self._argv(host, argv), capture_output=True, text=True, timeout=timeout, **kwargs)

    def start(self, host, argv, lasting=False, **kwargs):
        """``argv`` started on ``host`` in a process group of its own (killed by :meth:`stop`, :meth:`close`,
        and, unless ``lasting``, at the end of the :meth:`scope` it is started in)."""
        kwargs.setdefault("stdout", subprocess.DEVNULL)
        kwargs.setdefault("stderr", subprocess.DEVNULL)
        p = subprocess.Popen(self._argv(host, argv), start_new_session=True, **kwargs)
        p.lasting = lasting
        self._procs.append(p)
        return p

    def kill(self, p):
        """``p`` and its process group killed at once (SIGKILL: a host's worker gone without a word)."""
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            pass

    def link(self, host, up):
        """``host``'s cable pulled (``up=False``: its port on the bridge down) or plugged back in."""
        port = f"port{self.names.index(host) + 1}"
        _ip("-n", self.ns("switch"), "link", "set", port, "up" if up else "down")
        (self._down.discard if up else self._down.add)(host)

    @contextlib.contextmanager
    def scope(self):
        """A block whose processes (but the ``lasting`` ones) are killed, and cables plugged back in, when
        it ends (a test on a module's hosts)."""
        mark = len(self._procs)
        try:
            yield self
        finally:
            ended = [p for p in self._procs[mark:] if not p.lasting]
            for p in ended:
                self.kill(p)
            self._procs = self._procs[:mark] + [p for p in self._procs[mark:] if p.lasting]
            for host in list(self._down):
                self.link(host, True)

    def stop(self, p, timeout=10):
        """Stop ``p`` and its group: TERM, then KILL after ``timeout`` seconds."""
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                p.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # the group may outlive its leader (a nanny's worker process)
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self):
        """Every process started killed (its group, at once: nothing of a test cluster is worth keeping),
        every namespace deleted (by name)."""
        for p in self._procs:
            self.kill(p)
        self._procs.clear()
        for ns in reversed(self._made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        self._made.clear()


def wait_for(predicate, timeout, what):
    """Poll ``predicate()`` every 0.1 s until true; ``AssertionError`` naming ``what`` after ``timeout`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s")


__all__ = ["Hosts", "SUBNET", "require", "wait_for"]

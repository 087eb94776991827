"""What every worker of a cluster reaches, checked before any work: each other, and the run's paths.

A cluster of several hosts fails late, and in other libraries' words, when a
worker registered at an address nothing else can connect to (the shipped
specs' ``host: 127.0.0.1`` on a node of its own), or when a local path of the
run is a different directory, or none, on some hosts.  These checks ask the
cluster once, before a run's first task:

- :func:`check_worker_addresses`: no worker at a loopback address on a
  scheduler of other hosts (:class:`~mst_dist.WorkerAddressError`);
- :func:`check_visible`: input files seen by every worker (they read them);
- :func:`check_shared_directory`: a directory the workers write and the
  client commits (``checkpoint``, ``output``, ``labels_output``): a probe file
  the client writes there is read back by every worker, and each worker's
  probe by the client (:class:`~mst_dist.SharedStorageError`, naming the
  workers).

URLs of object stores are shared by nature and not probed; ``file://`` URLs
are local paths.  A cluster in this process (``inproc://`` workers) shares
everything and is not asked.
"""
from __future__ import annotations

import glob
import hashlib
import ipaddress
import os
import uuid

from mst_dist.errors import SharedStorageError, WorkerAddressError
from mst_dist.io import urls

__all__ = ["check_worker_addresses", "check_visible", "check_shared_directory", "is_loopback", "host_of",
           "loopback_workers"]

#: How many workers a message names before it says "and N more".
_NAMED = 3

_HOW_TO_START = (
    "start each worker on the address the scheduler and the other workers reach it at: "
    "`dask worker SCHEDULER --interface eth0` (the network they share: eth0, ib0, ...) or "
    "`--host ADDRESS`; in a spec file (workers/cpu-worker.yaml, workers/gpu-worker.yaml) replace "
    "`host: 127.0.0.1` by `interface: eth0` or `host: ADDRESS`")

_SHARE_IT = ("give a directory on a filesystem the client and every worker mount at the same path "
             "(NFS, Lustre, GPFS, ...), or an object-store URL (s3://bucket/prefix, gs://..., abfs://... "
             "with storage_options)")


def host_of(address):
    """The host of a Dask address (``tcp://10.0.0.2:4001`` -> ``10.0.0.2``; ``[::1]`` unbracketed)."""
    rest = address.split("://", 1)[-1]
    if rest.startswith("["):
        return rest[1:].split("]", 1)[0]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def is_loopback(host):
    """Whether ``host`` is a loopback name or address (``localhost``, ``127.x.y.z``, ``::1``).

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("10.0.0.2"), is_loopback("node1")
    (True, True, False, False)
    """
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _networked(address):
    return address.split("://", 1)[0] in ("tcp", "tls", "ws", "wss") if "://" in address else True


def loopback_workers(scheduler, workers, on_scheduler_host=None):
    """The workers of ``workers`` that nothing but their own host can reach, in order.

    ``scheduler`` is the scheduler's address, ``workers`` the workers'
    addresses; ``on_scheduler_host`` maps a worker's address to whether its
    connection to the scheduler comes from the scheduler's own host (``None``:
    not known).  A worker at a loopback address is unreachable when the
    scheduler listens on another address, unless every worker is known to run
    on the scheduler's host (one machine, the scheduler on all interfaces).

    >>> loopback_workers("tcp://10.0.0.1:8786", ["tcp://127.0.0.1:4001", "tcp://10.0.0.3:4001"])
    ['tcp://127.0.0.1:4001']
    >>> loopback_workers("tcp://127.0.0.1:8786", ["tcp://127.0.0.1:4001"])
    []
    >>> loopback_workers("tcp://10.0.0.1:8786", ["tcp://127.0.0.1:4001"], {"tcp://127.0.0.1:4001": True})
    []
    """
    if not _networked(scheduler) or is_loopback(host_of(scheduler)):
        return []
    loop = [w for w in workers if _networked(w) and is_loopback(host_of(w))]
    if loop and on_scheduler_host is not None and all(on_scheduler_host.get(w) for w in workers):
        return []
    return loop


def _on_scheduler_host(dask_scheduler=None):
    """On the scheduler: ``{worker address: whether its connection comes from this host}`` (``None``: unknown).

    A peer address this host can bind to is one of its own.  Self-contained (no
    module-level name): it is pickled by value, so a scheduler that cannot
    import mst_dist runs it too.
    """
    import socket

    out = {}
    for address, stream in list(dask_scheduler.stream_comms.items()):
        peer = getattr(getattr(stream, "comm", None), "peer_address", None) or ""
        host = peer.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
        if not host:
            out[address] = None
            continue
        try:
            with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
                s.bind((host, 0))
            out[address] = True
        except OSError:
            out[address] = False
    return out


def _scheduler_info(client):
    try:
        return client.scheduler_info(n_workers=-1)
    except TypeError:  # distributed versions that list every worker unasked
        return client.scheduler_info()


def _named(workers, info=None):
    def one(w):
        name = (info or {}).get(w, {}).get("name")
        return f"{w} (name {name!r})" if name is not None and str(name) != w else w

    shown = ", ".join(one(w) for w in workers[:_NAMED])
    return shown + (f" and {len(workers) - _NAMED} more" if len(workers) > _NAMED else "")


def check_worker_addresses(client):
    """Refuse, before any work, workers at a loopback address on a scheduler of other hosts.

    Raises :class:`~mst_dist.WorkerAddressError` naming them and saying how
    to start them (``--interface``, ``--host``, the spec's ``host:`` key).
    Asks the scheduler only (never a worker, which could not be reached).
    """
    info = _scheduler_info(client)
    scheduler, workers = info.get("address", ""), list(info.get("workers", {}))
    loop = loopback_workers(scheduler, workers)
    if not loop:
        return
    try:  # one host after all? (the scheduler on every interface, its workers on loopback)
        where = client.run_on_scheduler(_on_scheduler_host)
    except Exception:  # noqa: BLE001 - an old or locked-down scheduler: the address rule alone
        where = None
    loop = loopback_workers(scheduler, workers, where)
    if loop:
        raise WorkerAddressError(
            f"{len(loop)} of {len(workers)} worker(s) registered with a loopback address on the scheduler at "
            f"{scheduler}: {_named(loop, info['workers'])}; the scheduler and the workers of other hosts "
            f"cannot connect to it, and a run would wait for it until it times out. {_HOW_TO_START}",
            workers=loop, scheduler=scheduler)


def _cluster_of_processes(client):
    """Whether ``client``'s workers may run elsewhere (not threads of this process: ``inproc://``)."""
    return client is not None and not str(getattr(client.scheduler, "address", "")).startswith("inproc://")


def _blind_to(paths):
    """On a worker: the first of ``paths`` it cannot see (a file, a directory or a glob), else ``None``."""
    for p in paths:
        if not (os.path.exists(p) or glob.glob(p)):
            return p
    return None


def check_visible(client, paths, what="input"):
    """Refuse, before any work, local input ``paths`` that some worker of ``client`` cannot see.

    The workers read the input, so each must see every file at the same path.
    Raises :class:`~mst_dist.SharedStorageError` naming the workers (and a
    path each lacks); URLs are not checked (the workers reach the store).
    """
    local = [os.fspath(urls.local_path(p)) for p in paths if not urls.is_url(p)]
    if not local or not _cluster_of_processes(client):
        return
    check_worker_addresses(client)
    seen = client.run(_blind_to, local)
    blind = sorted(w for w, missing in seen.items() if missing is not None)
    if blind:
        first = seen[blind[0]]
        raise SharedStorageError(
            f"{what} {first!r} is not visible on {len(blind)} of {len(seen)} worker(s) ({_named(blind)}); "
            f"the workers read the input: give a path on a filesystem they all mount at the same path "
            f"(NFS, Lustre, ...) or an object-store URL (s3://..., gs://...)", path=first, workers=blind)


def _probe_directory(path):
    """The directory a probe of ``path`` is written in: ``path`` itself, else its nearest existing parent."""
    path = os.path.abspath(path)
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _worker_probe(directory, name, token, dask_worker=None):
    """On a worker: read the client's probe back, write its own; ``(its probe's name or None, what went wrong)``."""
    try:
        with open(os.path.join(directory, name)) as f:
            if f.read() != token:
                return None, "reads another file at the client's probe's path"
    except OSError as e:
        return None, f"cannot read the client's probe file ({e.strerror or e})"
    own = f"{name}-{hashlib.sha1(dask_worker.address.encode()).hexdigest()[:12]}"
    try:
        with open(os.path.join(directory, own), "w") as f:
            f.write(token + dask_worker.address)
    except OSError as e:
        return None, f"cannot write there ({e.strerror or e})"
    return own, None


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _worker_cleanup(directory, names):
    for n in names:
        _remove(os.path.join(directory, n))


def _read_back(directory, own, expected):
    try:
        with open(os.path.join(directory, own)) as f:
            return f.read() == expected
    except OSError:
        return False


def check_shared_directory(client, path, what, beside=False):
    """Refuse, before any work, a local ``path`` that the client and the workers of ``client`` do not share.

    ``path`` is a directory the workers write in and the client commits
    (``checkpoint``) or the target of one (``output``, ``labels_output``):
    the probe goes in it (``beside``: in its parent), else in the nearest
    existing parent.  The client
    writes a probe file there, every worker reads it back and writes its own,
    and the client reads those back; every file is removed after.  Raises
    :class:`~mst_dist.SharedStorageError` naming the workers that failed and
    why, and pointing to shared filesystems and object-store URLs.  Object-store
    URLs are not probed.
    """
    if path is None or urls.is_url(path) or not _cluster_of_processes(client):
        return
    local = os.fspath(urls.local_path(os.fspath(path)))
    directory = _probe_directory(os.path.dirname(os.path.abspath(local)) if beside else local)
    token = uuid.uuid4().hex
    name = f".mst-dist-probe-{token[:16]}"
    try:
        with open(os.path.join(directory, name), "w") as f:
            f.write(token)
    except OSError:  # the client cannot write there: the writability checks say so in their words
        return
    check_worker_addresses(client)
    try:
        answers = client.run(_worker_probe, directory, name, token)
        failed, strays = {}, {}
        for worker, (own, why) in sorted(answers.items()):
            if own is None:
                failed[worker] = why
            elif _read_back(directory, own, token + worker):
                _remove(os.path.join(directory, own))
            else:
                failed[worker] = "writes files the client cannot see"
                strays[worker] = own
    finally:
        _remove(os.path.join(directory, name))
    if failed:
        for worker, own in strays.items():  # each removes the probe it wrote where only it sees it
            client.run(_worker_cleanup, directory, [own], workers=[worker])
        workers = list(failed)
        detail = "; ".join(f"{w}: {failed[w]}" for w in workers[:_NAMED])
        more = f"; and {len(workers) - _NAMED} more" if len(workers) > _NAMED else ""
        raise SharedStorageError(
            f"{what} {os.fspath(path)!r}: {directory!r} is not shared by the client and {len(workers)} of "
            f"{len(answers)} worker(s) ({detail}{more}); the workers write there and the client reads "
            f"what they write: {_SHARE_IT}", path=os.fspath(path), workers=workers)

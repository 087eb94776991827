"""One entry for every cluster kind: ``with open_cluster(cfg) as client: ...``.

``cfg`` is a validated ``cluster`` section of a run config (see
:func:`mst_dist.cli.runconfig.validate_run_config`); its ``kind`` picks the
function from :data:`CLUSTERS`, each a context manager taking the section and
yielding a client:

- ``local``: an in-process cluster (:func:`mst_dist.deploy.local.open_local`);
- ``address``: a scheduler that is already up (:func:`connect`);
- ``local-cuda``: one worker per GPU here (:func:`mst_dist.deploy.cuda.open_local_cuda`);
- ``slurm``, ``pbs``: batch jobs' workers (:func:`mst_dist.deploy.jobqueue.open_jobqueue`);
- ``mpi``: the ranks of an MPI job (:func:`mst_dist.deploy.mpi.open_mpi`).

The optional dependencies of a kind are imported when it opens; a missing one
is an :class:`ImportError` naming the extra to install.
"""
from __future__ import annotations

import contextlib
import logging

from mst_dist.deploy._core import wait_for_workers
from mst_dist.io.reach import check_worker_addresses
from mst_dist.deploy.cuda import open_local_cuda
from mst_dist.deploy.jobqueue import open_jobqueue
from mst_dist.deploy.local import open_local
from mst_dist.deploy.mpi import open_mpi

__all__ = ["CLUSTERS", "connect", "open_cluster"]

logger = logging.getLogger("mst_dist")


def connect_client(address, security=None, where="the scheduler"):
    """A ``distributed.Client`` of the scheduler at ``address``, within ``mst.cluster.connect-timeout`` seconds.

    A scheduler that does not answer in time (none listening, a wrong
    address, a firewall) is a :class:`ConnectionError` naming the address and
    ``where`` it came from: one line for the command line, not a traceback
    after Dask's 30 s.
    """
    from distributed import Client

    from mst_dist import config

    timeout = config.get("cluster.connect-timeout", None, 10)
    try:
        return Client(address, security=security, timeout=timeout)
    except (OSError, MemoryError) as e:  # OSError (TimeoutError) once distributed's connect timeout passes;
        # MemoryError: something that is no Dask scheduler answered, and its bytes read as a huge frame
        raise ConnectionError(f"cannot connect to the scheduler at {address} ({where}) within {timeout} s: "
                              f"{e or type(e).__name__}; {_likely_cause(address, e)} (the time allowed: "
                              f"mst.cluster.connect-timeout, DASK_MST__CLUSTER__CONNECT_TIMEOUT)") from None


def _likely_cause(address, error):
    """What a failed connection to the scheduler at ``address`` most likely means, and what to do.

    >>> _likely_cause("tcp://10.0.0.1:8786", ConnectionResetError("Connection reset by peer"))[:44]
    'the scheduler may speak TLS (it resets plain'
    """
    from mst_dist.io.reach import host_of, is_loopback

    scheme = address.split("://", 1)[0] if "://" in address else "tcp"
    text = str(error).lower()
    if scheme == "tcp" and (isinstance(error, MemoryError) or "reset by peer" in text or "stream is closed" in text):
        return ("the scheduler may speak TLS (it resets plain tcp:// connections): give its tls:// address and "
                "the certificates (--tls-ca-file, --tls-cert, --tls-key; cluster.security); or something other "
                "than a Dask scheduler listens there")
    if is_loopback(host_of(address)):
        return "is it running, and is the address right?"
    return ("is it running, and listening on that address? A scheduler started with --host 127.0.0.1 (as "
            "cluster/start-local.sh starts it) is reached from its own host only: start it with --host <its "
            "address> for other hosts; and is its port open in the firewall between the hosts?")


@contextlib.contextmanager
def connect(cfg):
    """A client of the scheduler at ``cluster.address`` (the cluster is left running on exit).

    Waits up to ``cluster.wait_timeout`` for a worker; a worker at a loopback
    address on a scheduler of other hosts is then a
    :class:`~mst_dist.WorkerAddressError`.  ``cluster.security``
    gives the TLS certificates (else Dask's ``distributed.comm.tls.*``); a
    ``tls://`` address without any is a :class:`~mst_dist.ConfigError`
    saying what to give, before connecting.
    """
    from mst_dist.config import ConfigError
    from mst_dist.deploy._core import check_address_security, security_of
    from mst_dist.diagnostics import dashboard

    try:
        security = security_of(cfg.get("security"))
    except ValueError as e:
        raise ConfigError(f"cluster.{e}", key="cluster.security") from None
    check_address_security(cfg["address"], security)
    logger.info("connecting to the scheduler at %s", cfg["address"])
    with connect_client(cfg["address"], security, "cluster.address or --scheduler") as client:
        # the MST page, unless the scheduler has it (--preload mst_dist.diagnostics.dashboard) or cannot
        # import mst_dist
        dashboard.register(client, quiet=True)
        # said at once and every 30 s, at the level the command line shows by default
        wait_for_workers(client, cfg, f"the cluster at {cfg['address']}", level=logging.WARNING)
        # a worker nothing can connect back to (a loopback address on a scheduler of other hosts) would
        # hang the first task that needs it: refused now, naming it
        check_worker_addresses(client)
        yield client


#: Cluster kind -> context manager of a ``cluster`` section, yielding a client.
CLUSTERS = {
    "local": open_local,
    "local-cuda": open_local_cuda,
    "address": connect,
    "slurm": open_jobqueue,
    "pbs": open_jobqueue,
    "mpi": open_mpi,
}


@contextlib.contextmanager
def open_cluster(cfg, gpu=False):
    """A client of the cluster a ``cluster`` section describes, closed (jobs cancelled) on exit.

    Yields ``None`` on the MPI ranks that served as scheduler or workers,
    after the run on rank 1 has finished.  Clusters mst-dist starts get the
    dashboard's MST page (:mod:`mst_dist.diagnostics.dashboard`).  ``gpu`` (kind
    ``local`` only): the in-process workers advertise ``resources={"GPU": 1}``
    and run the GPU kernels on this machine's device, as the engine's
    embedded default does where it can.

    Raises :class:`ValueError` for a kind not in :data:`CLUSTERS` (the message
    lists them) and for ``gpu`` with a kind other than ``local``.
    """
    kind = cfg["kind"]
    try:
        opener = CLUSTERS[kind]
    except KeyError:
        raise ValueError(f"cluster.kind: unknown kind {kind!r}; expected one of "
                         f"{', '.join(CLUSTERS)}") from None
    if gpu and kind != "local":
        raise ValueError(f"gpu=True: only for cluster kind 'local' (this is {kind!r}); the GPU "
                         "workers of other kinds advertise resources GPU=1 themselves")
    with (opener(cfg, gpu=True) if gpu else opener(cfg)) as client:
        yield client

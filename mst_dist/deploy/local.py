"""In-process clusters: the engine's embedded default and cluster kind ``local``.

``embedded()`` is a ``LocalCluster`` sized to the machine, its dashboard on
127.0.0.1 with the link logged, shut down on exit: one worker whose threads
are this process's (the kernels release the GIL), or several worker
processes, each with its own memory limit (:func:`as_processes`).  :func:`open_local` is the same cluster
for a run config's ``cluster`` section.  :func:`shared_client` is the default
when an API call gets no client: one such cluster, without a dashboard unless
``mst.embedded.dashboard`` asks for one, started by the first call and reused
by the later ones until the process exits (or :func:`close_shared`).
Everything it starts listens on loopback: the scheduler and worker processes'
comm ports, the dashboard (unless ``dashboard_address`` says otherwise) and
every worker's web server (Dask's default for in-process workers is every
interface).
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading

__all__ = ["as_processes", "embedded", "in_process_latency", "local_gpu", "open_local", "shared_client", "close_shared"]

logger = logging.getLogger("mst_dist")


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


_UNSET = object()


def local_gpu(backend):
    """Whether an in-process cluster started here should get this machine's GPU.

    ``"auto"`` and ``"gpu"``: yes where the GPU kernels can run here (CuPy and
    a CUDA device, or the ``mst.gpu.array-module: numpy`` stand-in).  ``"gpu"``
    where they cannot raises :class:`~mst_dist.GPUUnavailableError` saying why
    and how to install the extra, before any cluster starts; ``"auto"`` logs
    that the CPU kernels run.
    """
    if backend == "cpu":
        return False
    from mst_dist import config
    from mst_dist.kernels import GPU_INSTALL_HINT, GPUUnavailableError, ready

    ok, reason = ready("gpu", config.get("gpu.array-module", None, "cupy"))
    if ok:
        return True
    if backend == "gpu":
        hint = "" if GPU_INSTALL_HINT in reason else f"; install the GPU extra: {GPU_INSTALL_HINT}"
        raise GPUUnavailableError(f"backend='gpu' needs a CUDA GPU and CuPy, and this machine cannot run "
                                  f"them: {reason}{hint}. Or give a cluster with GPU workers (cluster kind "
                                  "local-cuda, or a scheduler address), or use backend 'auto' or 'cpu'")
    logger.info("no usable GPU here (%s): the CPU kernels run", reason)
    return False


def _loopback_worker(scheduler, dashboard_address=None, **kwargs):
    """An in-process Dask worker whose web server listens on loopback.

    ``LocalCluster`` leaves an in-process worker's ``dashboard_address``
    unset, and Dask then binds its web server (health, metrics) to every
    interface; asking for a worker dashboard instead would import Bokeh.
    """
    from distributed import Worker

    from mst_dist.deploy._core import LOOPBACK

    return Worker(scheduler, dashboard_address=dashboard_address or f"{LOOPBACK}:0", **kwargs)


#: How long a message waits to be batched with others between the client, scheduler and
#: workers of an in-process cluster (Dask's defaults: 10 ms client to scheduler, 5 ms
#: scheduler to worker, 2 ms back).
IN_PROCESS_BATCH_SECONDS = 0.001


def _in_process_latency(client, cluster):
    """Shorten the batching intervals of an in-process cluster's streams to :data:`IN_PROCESS_BATCH_SECONDS`.

    Dask batches the small messages of a stream (a submitted task, a task
    done) for a few milliseconds to save network packets.  Between a client,
    scheduler and workers that are objects of one process no packet is
    saved, and every task the engine waits on pays the batching up to four
    times: a run on a small graph waits on a few in turn, so the batching is
    much of a small call's time.  The streams are Dask's own
    ``BatchedSend`` objects; an attribute a version lacks is left alone.
    """
    streams = [getattr(client, "scheduler_comm", None)]
    scheduler = getattr(cluster, "scheduler", None)
    for name in ("stream_comms", "client_comms"):
        streams.extend(getattr(scheduler, name, {}).values())
    for worker in getattr(cluster, "workers", {}).values():
        streams.append(getattr(worker, "batched_stream", None))
    for stream in streams:
        if stream is not None and isinstance(getattr(stream, "interval", None), float):
            stream.interval = min(stream.interval, IN_PROCESS_BATCH_SECONDS)


class _Shortened:
    """Streams whose batching interval a run shortened, with the interval to give back and the runs using it."""

    lock = threading.Lock()
    streams = {}  # id(stream) -> [stream, interval before, runs]


def _in_process_streams(client):
    """The batched streams between ``client``, its cluster's scheduler and workers, where all are in this process.

    Empty unless ``client`` was made from a cluster object
    (``Client(LocalCluster(processes=False))``) whose scheduler and every
    worker are objects of this process: between processes the batching
    saves packets and is left alone.
    """
    cluster = getattr(client, "cluster", None)
    scheduler = getattr(cluster, "scheduler", None)
    workers = list(getattr(cluster, "workers", {}).values())
    if scheduler is None or not hasattr(scheduler, "stream_comms") or not workers \
            or not all(hasattr(w, "batched_stream") for w in workers):
        return []
    streams = [getattr(client, "scheduler_comm", None)]
    for name in ("stream_comms", "client_comms"):
        streams.extend(getattr(scheduler, name, {}).values())
    streams.extend(getattr(w, "batched_stream", None) for w in workers)
    return [st for st in streams if st is not None and isinstance(getattr(st, "interval", None), float)]


@contextlib.contextmanager
def in_process_latency(client):
    """For the length of a run on ``client``: the in-process streams batched at :data:`IN_PROCESS_BATCH_SECONDS`.

    A user's in-process cluster (``Client(LocalCluster(processes=False))``)
    batches its messages as a networked one would (Dask's defaults: 10 ms
    client to scheduler, 5 ms scheduler to worker, 2 ms back), and every
    task a run waits on in turn pays it up to four times, where
    :func:`embedded` shortens them for good (see :func:`_in_process_latency`).
    Here they are shortened while at least one run uses them and given back
    after the last, so the cluster is left as it was.  Any other cluster:
    nothing changes.
    """
    mine = []
    with _Shortened.lock:
        for st in _in_process_streams(client):
            entry = _Shortened.streams.get(id(st))
            if entry is None or entry[0] is not st:
                entry = _Shortened.streams[id(st)] = [st, st.interval, 0]
            entry[2] += 1
            st.interval = min(entry[1], IN_PROCESS_BATCH_SECONDS)
            mine.append(entry)
    try:
        yield
    finally:
        with _Shortened.lock:
            for entry in mine:
                entry[2] -= 1
                if entry[2] == 0:
                    entry[0].interval = entry[1]
                    _Shortened.streams.pop(id(entry[0]), None)


def as_processes(n_workers, processes=None):
    """Whether a local cluster of ``n_workers`` starts its workers as processes.

    ``processes`` as given, else ``mst.cluster.processes``; unset (``None``,
    the default): one worker is threads of this process, several are
    processes.  Threads of one process share its memory, and Dask's memory
    manager pauses each of them when the whole process nears that worker's
    limit: several in-process workers would pause on memory their siblings
    hold, where worker processes each have a limit of their own.
    """
    from mst_dist import config

    chosen = config.get("cluster.processes", processes, None)
    return n_workers > 1 if chosen is None else bool(chosen)


@contextlib.contextmanager
def embedded(n_workers=None, threads_per_worker=None, processes=None,
             dashboard_address=_UNSET, memory_limit=_UNSET, gpu=False, security=None, set_as_default=True,
             **kwargs):
    """An in-process Dask cluster and its client, closed on exit.

    Unset arguments come from the ``mst.cluster`` configuration: one worker
    with a thread per core by default, so every chunk lives in this process
    and nothing is pickled or copied between tasks.  Several workers are
    processes unless ``processes`` (or ``mst.cluster.processes``) says
    otherwise (see :func:`as_processes`).  With ``gpu``, the worker
    advertises ``resources={"GPU": 1}`` and runs the GPU kernels on this
    process's current CUDA device (edge arrays already there stay there).

    ``memory_limit`` is each worker's (``mst.cluster.memory-limit``; see
    :func:`~mst_dist.deploy.memory_limit_value`): ``"auto"`` (the default:
    the machine's memory over the worker processes), bytes, a size such as
    ``"4GiB"``, a fraction, or ``None``.  Workers that are threads of this
    process share one budget: Dask measures the whole process against each
    one's limit, so ``"auto"`` gives each the machine's memory and the engine
    plans each a share of it (:func:`~mst_dist.engine.plan.memory_budget`).  The engine streams a
    graph whose resident chunks would not fit in the workers' limits
    (``mst.stream: auto``).  A bad value is a :class:`~mst_dist.config.ConfigError`
    naming the setting.

    ``set_as_default``: whether the client becomes the process's default
    (``distributed.get_client()``, ``dask.compute``) while it is open.

    ``security`` (a :class:`distributed.security.Security`, see
    :func:`~mst_dist.deploy._core.security_of`): worker processes, or
    ``require_encryption``, talk ``tls://`` with its certificates.  The
    scheduler, worker processes and web servers listen on 127.0.0.1.
    """
    from distributed import Client, LocalCluster

    from mst_dist import config
    from mst_dist.deploy._core import LOOPBACK, memory_limit_value, protocol_of

    n_workers = config.get("cluster.n-workers", n_workers) or 1
    threads_per_worker = config.get("cluster.threads-per-worker", threads_per_worker)
    processes = as_processes(n_workers, processes)
    if dashboard_address is _UNSET:
        dashboard_address = config.get("cluster.dashboard-address")
    where = "memory_limit"
    if memory_limit is _UNSET:
        memory_limit, where = config.get("cluster.memory-limit", None, "auto"), "mst.cluster.memory-limit"
    try:
        memory_limit = memory_limit_value(memory_limit)
    except ValueError as e:
        raise config.ConfigError(f"{where}: {e}", key=where) from None
    if threads_per_worker is None:
        threads_per_worker = max(1, _cores() // max(1, n_workers))
    if memory_limit == "auto":
        # the machine's memory (as Dask reads it: cgroup and rlimit too) over the worker processes;
        # Dask's own "auto" gives each worker its threads' share of the cores, which leaves a
        # one-thread GPU worker 1/16 of a 16-core machine.  Workers that are threads of this process
        # share it: each one's memory manager measures the whole process against its own limit
        from distributed.system import MEMORY_LIMIT

        memory_limit = MEMORY_LIMIT // max(1, n_workers) if processes else MEMORY_LIMIT
    if gpu:
        kwargs.setdefault("resources", {"GPU": 1})
    if processes:
        kwargs.setdefault("host", LOOPBACK)
        # worker processes log no louder than Dask's logger here (mst-dist -q: errors not at all)
        kwargs.setdefault("silence_logs", max(logging.WARNING, logging.getLogger("distributed").getEffectiveLevel()))
    else:
        kwargs.setdefault("worker_class", _loopback_worker)
    if not dashboard_address:
        # without a dashboard the scheduler's web server (health, metrics) stays: Dask puts it on
        # :8787, every interface for an in-process scheduler
        kwargs["scheduler_kwargs"] = {"dashboard_address": f"{LOOPBACK}:0", **kwargs.get("scheduler_kwargs", {})}
    if security is None:
        security = _from_dask_settings()
    if security is not None:
        kwargs["security"] = security
        if processes or security.require_encryption:
            kwargs.setdefault("protocol", protocol_of(security) or "tcp://")
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                           processes=processes, dashboard_address=dashboard_address,
                           memory_limit=memory_limit, **kwargs)
    try:
        client = Client(cluster, set_as_default=set_as_default)
        try:
            if not processes:
                _in_process_latency(client, cluster)
            if dashboard_address:
                from mst_dist.diagnostics.dashboard import register

                register(client)  # the dashboard's MST page
            link = _dashboard_link(client, dashboard_address)
            logger.info("embedded Dask cluster: %d worker%s x %d thread(s)%s%s%s", n_workers,
                        " process(es)" if processes else "(s)", threads_per_worker,
                        " with a GPU" if gpu else "", _memory_text(client),
                        f", dashboard at {link}" if link else "")
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


@contextlib.contextmanager
def open_local(cfg, gpu=False):
    """A client of the in-process cluster a ``local`` section describes, closed on exit.

    Unset keys as :func:`embedded` (one worker by default; several are
    processes unless ``processes`` is false); ``memory_limit`` is each
    worker's (in-process workers share it).  Worker processes preload
    :mod:`mst_dist.engine.warmup` unless ``warmup`` is false.  ``gpu``: the workers advertise
    ``resources={"GPU": 1}`` and run the GPU kernels on this machine's
    device (see :func:`local_gpu`).
    """
    from mst_dist import config
    from mst_dist.config import ConfigError
    from mst_dist.deploy._core import WARMUP, security_of

    memory = {"memory_limit": cfg["memory_limit"]} if "memory_limit" in cfg else {}
    n_workers = cfg.get("n_workers") or config.get("cluster.n-workers", None, None) or 1
    processes = as_processes(n_workers, cfg.get("processes"))
    if processes and config.get("cluster.warmup", cfg.get("warmup")):
        # worker processes load the kernels as they start, not in the first round
        memory["preload"] = [WARMUP]
    try:
        security = security_of(cfg.get("security"), temporary=True)
    except ValueError as e:
        raise ConfigError(f"cluster.{e}", key="cluster.security") from None
    with embedded(n_workers=n_workers, threads_per_worker=cfg.get("threads_per_worker"),
                  processes=processes, dashboard_address=cfg.get("dashboard_address"),
                  gpu=gpu, security=security, **memory) as client:
        yield client


class _Shared:
    """The process's reused embedded cluster: its settings, context and client."""

    lock = threading.RLock()
    key = None
    context = None
    client = None
    exit_hook = False


def _shared_settings(gpu):
    """What makes two embedded clusters interchangeable: the settings they would start with."""
    from mst_dist import config

    dash = config.get("cluster.dashboard-address") if config.get("embedded.dashboard", None, False) else None
    return (config.get("cluster.n-workers"), config.get("cluster.threads-per-worker"),
            config.get("cluster.processes", None, None), config.get("cluster.memory-limit", None, "auto"),
            dash, bool(gpu))


def _alive(client):
    """Whether the shared cluster's client still runs and has workers (a dead one is replaced)."""
    if client is None or client.status != "running":
        return False
    try:
        return bool(client.scheduler_info().get("workers"))
    except Exception:  # a scheduler gone away
        return False


def shared_client(gpu=False):
    """The client of this process's reused embedded cluster, started on first use.

    One in-process cluster (threads, as :func:`embedded`) serves every API
    call without a client, so a loop over many small graphs starts it once.
    It has no dashboard unless ``mst.embedded.dashboard`` is true (then at
    ``mst.cluster.dashboard-address``): one costs about a second to start.
    When the settings it was started with change (``mst.cluster.*``, or
    ``gpu``), or it has died, the next call closes it and starts another.  It is closed when the process exits, or by
    :func:`close_shared`.  Thread-safe.
    """
    key = _shared_settings(gpu)
    with _Shared.lock:
        if _Shared.key != key or not _alive(_Shared.client):
            close_shared()
            # a library's cluster: Dask's own warnings (an event loop slowed by the kernels) stay quiet
            # nor does it become the process's default client (dask.compute and get_client ignore it)
            cm = embedded(dashboard_address=key[4], gpu=gpu, silence_logs=logging.ERROR, set_as_default=False)
            client = cm.__enter__()
            _Shared.key, _Shared.context, _Shared.client = key, cm, client
            if not _Shared.exit_hook:
                atexit.register(close_shared)
                _Shared.exit_hook = True
        return _Shared.client


def close_shared():
    """Close this process's reused embedded cluster, if one runs (the next call starts another)."""
    with _Shared.lock:
        cm, _Shared.context, _Shared.client, _Shared.key = _Shared.context, None, None, None
        if cm is not None:
            try:
                cm.__exit__(None, None, None)
            except Exception:  # pragma: no cover - a cluster already gone
                logger.debug("closing the embedded cluster failed", exc_info=True)


def _from_dask_settings():
    """Dask's TLS settings for a cluster started here: ``None`` (Dask's own), or temporary certificates
    when ``distributed.comm.require-encryption`` is on without any (Dask would fail with ``TypeError:
    TLS expects a ssl_context``)."""
    from distributed.security import Security

    from mst_dist.config import ConfigError
    from mst_dist.deploy._core import protocol_of, security_of

    default = Security()
    if not default.require_encryption or protocol_of(default):
        return None
    try:
        return security_of({"require_encryption": True}, temporary=True)
    except ValueError as e:
        raise ConfigError(f"distributed.comm.require-encryption (dask config): {e}") from None


def _memory_text(client):
    """``", 4.00 GiB each"``: the workers' memory limit as the scheduler has it ("" without one)."""
    from dask.utils import format_bytes

    try:
        limits = {w.get("memory_limit") for w in client.scheduler_info()["workers"].values()}
    except Exception:  # pragma: no cover - a scheduler that cannot tell
        return ""
    if len(limits) != 1 or not next(iter(limits)):
        return ""
    return f", {format_bytes(next(iter(limits)))} each"


def _dashboard_link(client, dashboard_address):
    """The dashboard's URL on the address its server listens on (not the host's public name)."""
    if not dashboard_address:
        return None
    from mst_dist.diagnostics.dashboard import PAGE, dashboard_link

    link = dashboard_link(client)
    return link[: -len(PAGE)] + "/status" if link else None

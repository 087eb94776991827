"""Bounded waiting: notice a cluster on which no task can make progress, and say why.

A run waits on futures; Dask waits as long as it takes.  When no worker can
run anything -- none left (a nanny gave up, a batch job ended), or nothing
executing anywhere while a worker paused by its memory manager holds the
run's next tasks -- or when a task has
killed more workers than ``distributed.scheduler.allowed-failures`` allows,
waiting longer helps nobody.  :class:`Watchdog` polls the scheduler from a
background thread while a run waits; once no worker has been able to make
progress for ``mst.stall-timeout`` seconds it cancels the run's futures, and
the driver raises the :class:`ClusterStalledError` it left, naming the cause
and what to change.  :func:`stalled_from_killed` turns Dask's
``KilledWorker`` into the same error.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from mst_dist.engine.cluster_info import scheduler_workers
from mst_dist.errors import ClusterStalledError  # defined with the package's other errors

logger = logging.getLogger("mst_dist")

__all__ = ["ClusterStalledError", "Watchdog", "MemoryPause", "memory_pause", "cancel_run", "stalled_from_killed",
           "ADVICE"]

#: What to change when a run runs out of workers or memory (every message ends with it).
ADVICE = ("give each worker more memory (--memory-limit, cluster.memory_limit, or the workers' own "
          "--memory-limit), cut the graph into more partitions (--partitions, partitions=), or stream "
          "the edges from their source (--stream, stream='always')")

#: Worker states (the scheduler's ``WorkerState.status``) in which a worker starts new tasks.
_RUNNING = ("running",)


def stalled_from_killed(exc):
    """A :class:`ClusterStalledError` for Dask's ``KilledWorker`` ``exc`` (the task named)."""
    key = getattr(exc, "task", None)
    if key is None and exc.args:
        key = exc.args[0]
    allowed = getattr(exc, "allowed_failures", None)
    if allowed is None:
        import dask.config

        allowed = dask.config.get("distributed.scheduler.allowed-failures", None)
    times = f"{allowed + 1} " if isinstance(allowed, int) else ""
    return ClusterStalledError(
        f"task {key!s} was running on {times}workers that all died (distributed.scheduler.allowed-failures = "
        f"{allowed}): most often a worker killed for using more than its memory limit; {ADVICE}",
        "killed-worker", key=key)


@dataclass(frozen=True)
class MemoryPause:
    """Workers paused by Dask's memory manager, as the scheduler last reported them.

    ``memory`` and ``limit``: process memory and memory limits in bytes,
    summed over every worker that reports both (``None`` where none does).
    """

    paused: int
    workers: int
    memory: int | None = None
    limit: int | None = None


def memory_pause(workers):
    """A :class:`MemoryPause` of the scheduler's worker identities ``workers``, or ``None`` when none is paused."""
    paused = sum(1 for w in workers.values() if w.get("status") == "paused")
    if not paused:
        return None
    memory = limit = None
    for w in workers.values():
        used, cap = (w.get("metrics") or {}).get("memory"), w.get("memory_limit")
        if used is not None and cap:
            memory, limit = (memory or 0) + int(used), (limit or 0) + int(cap)
    return MemoryPause(paused, len(workers), memory, limit)


def _progress_state(workers):
    """``(progress possible, cause)`` from the scheduler's worker identities.

    Progress is possible while a task executes somewhere, or while every
    worker runs (between tasks).  With nothing executing anywhere and a
    worker paused by its memory manager, the run's next tasks may be held by
    that worker, which will not start them (a running worker does not take
    them over): that, lasting the stall timeout, is a stall too.
    """
    if not workers:
        return False, "no-workers"
    paused = False
    for w in workers.values():
        counts = (w.get("metrics") or {}).get("task_counts") or {}
        if counts.get("executing", 0) or counts.get("long-running", 0):
            return True, None  # a paused worker still finishes the tasks it runs
        if w.get("status") not in _RUNNING:
            paused = True
    return (False, "paused") if paused else (True, None)


def _message(cause, waited, workers):
    if cause == "no-workers":
        head = f"no worker has been connected to the scheduler for {waited:.0f} s"
        hint = ("workers that died over and over (their logs say why; memory is the usual cause) or a batch "
                "job or nanny that ended")
    else:
        mem = []
        for w in workers.values():
            limit = w.get("memory_limit")
            used = (w.get("metrics") or {}).get("memory")
            if limit and used is not None:
                mem.append(f"{used / 2**20:.0f} of {limit / 2**20:.0f} MiB")
        n_paused = sum(1 for w in workers.values() if w.get("status") not in _RUNNING)
        who = f"every worker ({len(workers)}) has" if n_paused == len(workers) else \
            f"{n_paused} of {len(workers)} workers, holding the run's next tasks, have"
        head = (f"{who} been paused by the memory manager for {waited:.0f} s "
                f"with no task running" + (f" (process memory {', '.join(mem)})" if mem else ""))
        hint = "the workers hold more than distributed.worker.memory.pause of their memory limit"
    return f"the cluster cannot make progress: {head}; {hint}. To go on, {ADVICE}."


class Poller:
    """A daemon thread that calls :meth:`poll` every ``interval`` seconds inside a ``with`` block (the
    first call at once where ``poll_first``); a failed poll (a closing client) is logged and the next
    one tried."""

    thread_name = "mst-poller"
    poll_first = False

    def _start_polling(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def _loop(self):
        first = self.poll_first
        while first or not self._stop.wait(self.interval):
            first = False
            try:
                self.poll()
            except Exception:  # a closing client: the run's own waits say so
                logger.debug("%s: could not reach the scheduler", self.thread_name, exc_info=True)

    def __exit__(self, *exc):
        if getattr(self, "_thread", None) is not None:
            self._stop.set()
            self._thread.join(timeout=10)
        return False


class Watchdog(Poller):
    """Polls the scheduler while a run waits; cancels the run's futures once it has stalled.

    Parameters
    ----------
    client : distributed.Client
    token : str
        The run's token: futures whose key holds it are the run's.
    timeout : float
        Seconds without a worker able to make progress before the run is
        stopped (``mst.stall-timeout``); ``None`` or ``<= 0``: never.
    interval : float, optional
        Seconds between polls (default: a tenth of ``timeout``, 0.5 to 5 s).

    Use as a context manager around the waiting; :attr:`error` is the
    :class:`ClusterStalledError` once it fired (``None`` before).
    """

    def __init__(self, client, token, timeout, interval=None):
        self.client = client
        self.token = token
        self.timeout = None if timeout is None or timeout <= 0 else float(timeout)
        if interval is None:
            interval = min(5.0, max(0.5, (self.timeout or 10.0) / 10))
        self.interval = interval
        self.error = None
        self._since = None
        self._thread = None

    thread_name = "mst-watchdog"

    def __enter__(self):
        if self.timeout is not None:
            self._start_polling()
        return self

    def poll(self):
        self.check()

    def check(self, now=None) -> bool:
        """Poll once; ``True`` when the run has stalled (the error set, the futures cancelled).

        Once stalled, every poll cancels the run's futures again (those the
        driver submitted since included), so no wait of the run outlasts it.
        """
        if self.error is not None:
            self._cancel()
            return True
        now = time.monotonic() if now is None else now
        workers = scheduler_workers(self.client)
        ok, cause = _progress_state(workers)
        if ok:
            self._since = None
            return False
        if self._since is None:
            self._since = now
            logger.debug("watchdog: no worker can make progress (%s)", cause)
            return False
        waited = now - self._since
        if waited < self.timeout:
            return False
        self.error = ClusterStalledError(_message(cause, waited, workers), cause, waited=waited)
        logger.debug("watchdog: %s", self.error)
        self._cancel()
        return True

    def _cancel(self):
        """Cancel every future of the run this client holds: the driver's waits return."""
        cancel_run(self.client, self.token, "mst-dist: the cluster stalled", str(self.error))


def cancel_run(client, token, reason, msg=None):
    """Stop every future ``client`` holds of the run ``token``: the scheduler forgets their tasks.

    Also how a failed or interrupted run leaves none of its tasks behind
    (an exception's traceback may hold the run's futures long after).

    The run's futures are released, not cancelled through the scheduler:
    ``Client.cancel`` has the scheduler cancel each key's dependents as well,
    and a dependent no client wants (a task between two of the run's
    futures, such as an inner level of a merge tree) fails its assertion
    ``ts.who_wants`` -- a scheduler traceback on the user's terminal, and the
    client's connection dropped.  Releasing every future of the run is
    Dask's ordinary forgetting: tasks no client wants any more are released
    and forgotten, running ones stopped on their workers, and the futures
    are marked cancelled here, so the driver's waits on them return.
    Calling it again (the watchdog polls on) finds only the futures
    submitted since.
    """
    keys = [k for k in list(client.futures) if token in str(k)]
    if keys:
        client.sync(_release, client, keys, reason, msg)


async def _release(client, keys, reason, msg):
    """On the client's event loop: mark the futures of ``keys`` cancelled, and release them on the scheduler."""
    held = []
    for key in keys:
        state = client.futures.pop(key, None)
        if state is not None:
            state.cancel(reason=reason, msg=msg)
            held.append(key)
    if held and client.status not in ("closing", "closed"):
        client._send_to_scheduler({"op": "client-releases-keys", "keys": held, "client": client.id})

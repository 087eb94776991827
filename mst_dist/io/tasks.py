"""Small tasks on the cluster for the input side: the readers' scans, the generators' counting passes.

Building a graph sometimes needs one pass over the input before any run (a
text file's rows and largest id, a random geometric graph's edge count).
:func:`map_tasks` runs such a pass as tasks ``mst-<prefix>-*`` on the current
``distributed`` client, else on threads of this process, and
:func:`current_client` is how every input function finds that client.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

__all__ = ["EMBEDDED", "Choice", "choose", "current_client", "find", "in_task", "map_tasks", "seceded"]

# ---------------------------------------------------------------------------
# The one client rule of every entry point (documented in mst_dist.deploy.current)
# ---------------------------------------------------------------------------

#: ``client=EMBEDDED``: the embedded in-process cluster, even where a current client exists.
EMBEDDED = "embedded"


@dataclass(frozen=True)
class Choice:
    """What :func:`choose` found: ``kind`` and the client (``None`` for ``task`` and ``embedded``).

    ``kind`` is ``"given"`` (the caller's client), ``"current"`` (the
    current or default client), ``"task"`` (inside a task: the worker's
    client, opened by :func:`using`) or ``"embedded"``.
    """

    kind: str
    client: object = None

    @property
    def asynchronous(self) -> bool:
        """Whether the client is an asynchronous one (its calls return awaitables)."""
        return bool(getattr(self.client, "asynchronous", False))


def in_task() -> bool:
    """Whether this thread runs a task of a ``distributed`` worker."""
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def _current():
    try:
        from distributed import Client

        return Client.current()
    except (ImportError, ValueError):
        return None


def choose(client=None) -> Choice:
    """The cluster a call given ``client`` runs on (see the module docstring).

    Raises ``TypeError`` for a ``client`` that is neither ``None``,
    :data:`EMBEDDED` nor a ``distributed.Client``.
    """
    if client is None:
        if in_task():
            return Choice("task")
        current = _current()
        if current is not None and getattr(current, "status", "running") not in ("closed", "closing"):
            return Choice("current", current)
        return Choice("embedded")
    if isinstance(client, str):
        if client == EMBEDDED:
            return Choice("embedded")
        raise TypeError(f"client: expected a distributed.Client, None (the current client) or "
                        f"{EMBEDDED!r} (the embedded cluster), got the string {client!r}")
    if not hasattr(client, "submit") or not hasattr(client, "scheduler"):
        raise TypeError(f"client: expected a distributed.Client, None (the current client) or "
                        f"{EMBEDDED!r} (the embedded cluster), got {type(client).__name__}")
    return Choice("given", client)


def find(client=None):
    """The client the input side runs its small tasks on, or ``None`` for threads of this process.

    The same rule as :func:`choose`, except that where it would pick the
    embedded cluster (nothing current, or ``client="embedded"``) the tasks
    run on threads here; ``client=False`` too, and an asynchronous client
    (whose calls return awaitables).  Inside a task this is the
    worker's client: run on it through :func:`using` (it secedes).
    """
    if client is False:
        return None
    choice = choose(client)
    if choice.asynchronous:  # its calls return awaitables: the input side's small passes run here
        return None
    if choice.kind == "task":
        from distributed import get_client

        return get_client()
    return choice.client



def current_client(client=None):
    """The client to run on: ``client`` itself, else the current one, else ``None`` (see :func:`find`).

    ``client=False`` means none (threads of this process).
    """
    return find(client)


@contextlib.contextmanager
def seceded(client):
    """Inside a task, the worker's client with the task seceded from the thread pool; else ``client``."""
    if client is not None and in_task():
        from distributed import worker_client

        with worker_client() as c:
            yield c
    else:
        yield client


def map_tasks(func, arglist, client, prefix):
    """``[func(*args) for args in arglist]`` as tasks ``mst-<prefix>-*``.

    On the client's cluster (``client``, else the current one; see
    :func:`current_client`), else on local threads (also with
    ``client=False``).  Results come back in ``arglist`` order; the futures are
    released once gathered.
    """
    if not arglist:
        return []
    client = current_client(client)
    if client is None:
        if len(arglist) == 1:
            return [func(*arglist[0])]
        with ThreadPoolExecutor(max_workers=min(len(arglist), os.cpu_count() or 1)) as ex:
            return list(ex.map(lambda a: func(*a), arglist))
    token = uuid.uuid4().hex[:8]
    with seceded(client) as client:
        futs = [client.submit(func, *a, key=f"mst-{prefix}-{token}-{i}", pure=False)
                for i, a in enumerate(arglist)]
        try:
            return client.gather(futs)
        finally:
            for f in futs:
                f.release()

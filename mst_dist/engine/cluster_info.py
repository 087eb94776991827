"""What the scheduler knows of its workers, read the same way by the engine and the command line."""
from __future__ import annotations

import inspect

__all__ = ["scheduler_workers"]


def _takes_n_workers(client):
    """Whether ``client.scheduler_info`` has ``n_workers`` (newer distributed lists only a few without it)."""
    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):  # pragma: no cover - a C callable or a mock without a signature
        return False


def scheduler_workers(client):
    """Every worker of the client's cluster: ``{address: info}``, as ``scheduler_info()["workers"]``.

    Each ``info`` holds the worker's ``name``, ``nthreads``, ``memory_limit``,
    ``resources``, ``host`` ... .  Distributed versions whose
    ``Client.scheduler_info`` takes ``n_workers`` list only the first few
    workers unless asked for all (``n_workers=-1``); this asks for all where
    it can.
    """
    if _takes_n_workers(client):
        info = client.scheduler_info(n_workers=-1)
    else:
        info = client.scheduler_info()
    return info.get("workers", {})

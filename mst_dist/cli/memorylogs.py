"""Dask's memory manager, told once: its repeated warnings counted, not printed each time.

A worker near its memory limit makes Dask's memory manager log "Worker is at
81% memory usage. Pausing worker." and "... Resuming worker." each time it
crosses the line, and "Unmanaged memory use is high" as it goes: dozens of
lines for one run.  The command line says it once instead: the live progress
line shows the paused workers while they are paused
(:class:`mst_dist.diagnostics.progress.PauseMonitor`), one log line tells of
the first pause where there is no live line, and one line at the end counts
what Dask said.  :class:`MemoryNoiseFilter` drops those records and counts
them, in this process (in-process workers, nannies) and, through
:class:`WorkerLogFilters`, in worker processes, restarted ones included.
"""
from __future__ import annotations

import logging
import os
from collections import Counter

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["MemoryNoiseFilter", "WorkerLogFilters", "install", "counts", "cluster_counts", "summary"]

#: Loggers of Dask's memory manager: the workers' and the nannies'.
LOGGERS = ("distributed.worker.memory", "distributed.nanny.memory")

#: What each counted message starts or ends with, by kind.
_KINDS = (("paused", "Pausing worker."), ("resumed", "Resuming worker."),
          ("unmanaged", "Unmanaged memory use is high"), ("no-spill", "Memory use is high but worker has no data"))


def _kind(message):
    for kind, text in _KINDS:
        if text in message:
            return kind
    return None


class MemoryNoiseFilter(logging.Filter):
    """Drops Dask's memory manager's pause, resume and high-memory warnings, counting them by kind.

    Other records of those loggers (a worker restarted for exceeding its
    limit, say) pass: they are rare, and each one matters.
    """

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def filter(self, record):
        try:
            kind = _kind(str(record.msg))
        except Exception:  # a record whose message cannot be read is not one of ours
            return True
        if kind is None:
            return True
        self.counts[kind] += 1
        return False


def install():
    """Put a :class:`MemoryNoiseFilter` on this process's memory-manager loggers (idempotent); it."""
    found = None
    for name in LOGGERS:
        log = logging.getLogger(name)
        mine = [f for f in log.filters if isinstance(f, MemoryNoiseFilter)]
        if found is None and mine:
            found = mine[0]
    found = found or MemoryNoiseFilter()
    for name in LOGGERS:
        log = logging.getLogger(name)
        if found not in log.filters:
            log.addFilter(found)
    return found


def counts():
    """What this process's filter counted: ``{kind: n}`` (empty without one)."""
    for f in logging.getLogger(LOGGERS[0]).filters:
        if isinstance(f, MemoryNoiseFilter):
            return dict(f.counts)
    return {}


def _counts_of_process():
    return os.getpid(), counts()


def cluster_counts(client=None):
    """What the filters of this process and of ``client``'s workers counted, each process once."""
    seen = {os.getpid(): counts()}
    if client is not None and client.status == "running":
        try:
            seen.update(dict(v for v in client.run(_counts_of_process, on_error="return").values()
                             if isinstance(v, tuple)))
        except Exception:  # workers gone with the run: their counts with them
            pass
    totals = Counter()
    for c in seen.values():
        totals.update(c)
    return dict(totals)


class WorkerLogFilters(WorkerPlugin):
    """A Dask worker plugin: each worker (restarted ones too) counts Dask's memory warnings instead of
    logging them (:func:`install`), and runs ``also`` (a module-level function: the command line's other
    log filters), so that it logs as the command line's process does."""

    name = "mst-dist-log-filters"

    def __init__(self, also=None):
        self.also = also

    def setup(self, worker):
        install()
        if self.also is not None:
            self.also()


def summary(totals):
    """The one line for the counts ``totals`` (``{kind: n}``), or ``None`` when nothing was counted."""
    parts = []
    if totals.get("paused"):
        parts.append(f"paused workers {totals['paused']} time(s)")
    if totals.get("resumed"):
        parts.append(f"resumed them {totals['resumed']} time(s)")
    high = totals.get("unmanaged", 0) + totals.get("no-spill", 0)
    if high:
        parts.append(f"warned of high memory use {high} time(s)")
    if not parts:
        return None
    return f"Dask's memory manager {', '.join(parts)} during the run (its messages counted, not shown)"

"""A run stopped by Ctrl-C: the noise Dask makes about it afterwards, left out.

When a run is interrupted, its tasks may still be executing on the workers
of a cluster this process closes at exit; each one then logs "Async
instruction ... ended with CancelledError", and the client's interrupted
gather leaves asyncio tasks that fail with ``AllExit`` ("Task exception was
never retrieved").  The person who pressed Ctrl-C learns nothing from
either: :func:`quiet_after_interrupt` drops exactly those records.
"""
from __future__ import annotations

import logging

__all__ = ["InterruptNoise", "quiet_after_interrupt"]

#: The loggers that report an interrupted run's leftovers.
LOGGERS = ("distributed.worker.state_machine", "asyncio")


class InterruptNoise(logging.Filter):
    """Drops a worker's "ended with CancelledError" and asyncio's never-retrieved ``AllExit``."""

    def filter(self, record):
        try:
            msg = record.getMessage()
        except Exception:  # a record that cannot format is someone else's business
            return True
        if "ended with CancelledError" in msg and "Async instruction" in msg:
            return False
        return not ("exception was never retrieved" in msg and "AllExit" in msg)


def quiet_after_interrupt():
    """Install :class:`InterruptNoise` on :data:`LOGGERS` (once per process)."""
    for name in LOGGERS:
        log = logging.getLogger(name)
        if not any(isinstance(f, InterruptNoise) for f in log.filters):
            log.addFilter(InterruptNoise())

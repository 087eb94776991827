"""What the cluster kinds share: the warm-up preload, workers' memory limits, waiting for workers."""
from __future__ import annotations

import logging

__all__ = ["WARMUP", "MIN_MEMORY_LIMIT", "memory_limit_value", "wait_for_workers"]

logger = logging.getLogger("mst_dist")

#: The worker preload that compiles the kernels at start (``dask worker --preload``).
WARMUP = "mst_dist.engine.warmup"

#: The smallest memory limit in bytes a worker may get: below it a Dask worker pauses (at 80 % of
#: its limit) on its own start-up memory and the run cannot go on.
MIN_MEMORY_LIMIT = 256 * 2**20


def memory_limit_value(value):
    """A worker memory limit checked and normalised, as ``LocalCluster`` and ``dask worker`` take it.

    ``"auto"`` (the machine's memory over the workers), bytes (an int, or a
    string such as ``"4GiB"``, ``"600 MB"``, ``"2e9"``), a fraction of the
    machine's memory (a number in ``(0, 1]``), or ``None`` / ``0`` / ``"none"``
    for no limit.  Raises :class:`ValueError` saying what is allowed.

    >>> memory_limit_value("4GiB"), memory_limit_value("600000000"), memory_limit_value(0.5)
    ('4GiB', 600000000, 0.5)
    >>> memory_limit_value("lots")
    Traceback (most recent call last):
    ...
    ValueError: expected 'auto', bytes (an integer or a size such as '4GiB'), a fraction of the machine's memory in (0, 1] or none; got 'lots'
    """
    import math

    from dask.utils import format_bytes, parse_bytes

    allowed = ("expected 'auto', bytes (an integer or a size such as '4GiB'), a fraction of the machine's "
               "memory in (0, 1] or none")
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("none", "null", ""):
            return None
        if text == "auto":
            return "auto"
        try:
            number = float(text)
        except ValueError:
            try:
                nbytes = parse_bytes(text)
            except ValueError:
                raise ValueError(f"{allowed}; got {value!r}") from None
            if nbytes < 0:
                raise ValueError(f"{allowed}; got {value!r}")
            if nbytes < MIN_MEMORY_LIMIT:
                raise ValueError(f"{value!r} ({format_bytes(nbytes)}) is too small for a worker: at least "
                                 f"{format_bytes(MIN_MEMORY_LIMIT)} (or 'auto', or none for no limit)")
            return value
        value = int(number) if number.is_integer() and number > 1 else number
    elif value is None:
        return None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{allowed}; got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{allowed}; got {value!r}")
    if value == 0:
        return None
    if value > 1 and value < MIN_MEMORY_LIMIT:
        raise ValueError(f"{value!r} bytes ({format_bytes(int(value))}) is too small for a worker: at least "
                         f"{format_bytes(MIN_MEMORY_LIMIT)} (or 'auto', or none for no limit)")
    return int(value) if value > 1 else value


def wait_for_workers(client, cfg, what, n=1):
    """Wait up to ``cluster.wait_timeout`` for ``n`` workers; with fewer but some, go on with those.

    Raises :class:`TimeoutError` when none joined in time.
    """
    from mst_dist.engine.cluster_info import scheduler_workers

    timeout = cfg.get("wait_timeout") or 600
    try:
        client.wait_for_workers(n, timeout=timeout)
    except TimeoutError:
        have = len(scheduler_workers(client))
        if not have:
            raise TimeoutError(f"{what}: no worker joined within {timeout:g} s (cluster.wait_timeout); "
                               "are the workers or their jobs still starting?") from None
        logger.warning("%s: %d of %d workers joined within %g s (cluster.wait_timeout); running on those",
                       what, have, n, timeout)

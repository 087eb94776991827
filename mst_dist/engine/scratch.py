"""The CPU kernels' scratch memory on the workers: sized from each worker's memory limit, released after a run.

The Numba kernels reuse large scratch buffers (the CPU backend's ``scratch``):
memory a Dask worker's memory manager sees only as unmanaged and cannot spill.
The kernels know nothing of Dask, so the engine passes the budget down:

- :class:`ScratchPlugin`, a worker plugin the driver registers, caps the arena
  of every worker (those that join or restart later included) at
  :data:`ARENA_SHARE` of the worker's own ``memory_limit``;
- :func:`release_scratch`, run on the workers when a run ends, forgets the
  arena's buffers and hands freed heap memory back to the system, so a
  worker's memory after a run is back near where it started -- once the
  worker has not used the arena for :data:`RELEASE_AFTER` seconds: runs
  back to back (a benchmark's repeats, a loop over graphs) keep reusing the
  buffers, where releasing at once would make the next run fault every page
  in afresh.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import threading

from distributed.diagnostics.plugin import WorkerPlugin

from mst_dist.kernels import backend as kernel_backend

#: The CPU kernels' scratch arena (:class:`mst_dist.kernels.contract.Scratch`).
ARENA = kernel_backend("cpu").scratch

logger = logging.getLogger("mst_dist")

__all__ = ["ARENA_SHARE", "ScratchPlugin", "arena_limit", "fit_arena", "release_scratch", "PLUGIN_NAME",
           "RELEASE_AFTER"]

#: Share of a worker's memory limit the scratch arena may keep between tasks.
ARENA_SHARE = 0.25
#: Name the plugin is registered under (registering again replaces it).
PLUGIN_NAME = "mst-scratch"
#: Seconds without a new scratch buffer after a run before the arena is released.
RELEASE_AFTER = 2.0


def arena_limit(memory_limit):
    """Bytes the arena may keep on a worker with ``memory_limit`` (``None`` or 0: no limit; the arena's default)."""
    if not memory_limit:
        return None
    return min(int(memory_limit * ARENA_SHARE), ARENA.default_limit())


def _worker_memory_limit(worker):
    mm = getattr(worker, "memory_manager", None)
    return getattr(mm, "memory_limit", None) if mm is not None else getattr(worker, "memory_limit", None)


def fit_arena(dask_worker=None):
    """Cap this worker's arena from its memory limit; the cap in bytes (``None``: the default)."""
    if dask_worker is None:
        from distributed import get_worker

        dask_worker = get_worker()
    limit = arena_limit(_worker_memory_limit(dask_worker))
    ARENA.set_limit(limit)
    return limit


class ScratchPlugin(WorkerPlugin):
    """Caps the CPU scratch arena of each worker at :data:`ARENA_SHARE` of its memory limit."""

    name = PLUGIN_NAME
    idempotent = True

    def setup(self, worker):
        fit_arena(worker)


@functools.cache
def _libc():
    """The C library, looked for once a process (``find_library`` runs ``ldconfig``: a subprocess each call)."""
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def _malloc_trim():
    """Give the C heap's free memory back to the system (glibc); ``False`` where there is no ``malloc_trim``."""
    try:
        return bool(_libc().malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


def _release_if_unused(takes):
    """Forget the arena's buffers and trim the heap, unless a buffer was taken since ``takes``; the bytes forgotten."""
    if ARENA.takes != takes:  # the next run has begun: its buffers stay
        return 0
    n = ARENA.release()
    _malloc_trim()
    return n


def release_scratch(delay=None):
    """Run on the workers when a run ends: release the arena once unused for ``delay`` s (:data:`RELEASE_AFTER`).

    ``delay=0`` releases now and returns the bytes forgotten; otherwise a
    timer thread does it later and ``None`` is returned.
    """
    delay = RELEASE_AFTER if delay is None else delay
    if delay <= 0:
        return _release_if_unused(ARENA.takes)
    timer = threading.Timer(delay, _release_if_unused, (ARENA.takes,))
    timer.daemon = True
    timer.start()
    return None

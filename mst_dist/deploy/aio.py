"""Runs for asynchronous clients: an awaitable of the result, cancelled with the awaiting task.

The engine is synchronous code: it waits on futures with ``.result()``.  An
asynchronous client (``Client(asynchronous=True)``: web services, Prefect,
Jupyter's ``await``) cannot wait that way on its own event loop, so
:func:`solve_async` returns an awaitable (through ``client.sync``, the
convention of Dask's own libraries) that

1. opens a synchronous client of the same scheduler, with the same security
   (its own connection and thread, so the caller's event loop never blocks),
2. runs the engine with it in a thread of the loop's executor, and
3. when the awaiting task is cancelled, marks the client abandoned (the
   engine does not start the run again, as it would after a lost worker),
   cancels every future of that client -- they are exactly the run's, as
   the client is the run's alone -- asks the workers to release the
   kernels' scratch, waits for the engine's thread to stop at its next
   wait, and closes the client, so that within moments the scheduler holds
   none of the run's tasks and no thread of the run is left behind (an
   event loop's executor can shut down).

Other clients of the scheduler, and their runs, are left alone.  A result
kept on the workers (``gather=False``) keeps the run's client open until it
is released (:meth:`~mst_dist.engine.runs.kept.KeptForest.release`) or
garbage collected.
"""
from __future__ import annotations

import asyncio
import logging
import weakref

__all__ = ["abandoned", "solve_async"]

logger = logging.getLogger("mst_dist")

#: seconds a cancelled run's thread is given to stop before its client is closed under it
STOP_WAIT = 60.0

_ABANDONED: "weakref.WeakSet" = weakref.WeakSet()


def abandoned(client) -> bool:
    """Whether ``client`` is the client of a run whose awaiting task was cancelled."""
    try:
        return client in _ABANDONED
    except TypeError:  # pragma: no cover - an object without weak references
        return False


def _twin(client):
    """A synchronous client of ``client``'s scheduler, with the same security, not the default one."""
    from distributed import Client

    address = client.scheduler.address
    return Client(address, security=getattr(client, "security", None), set_as_default=False,
                  name="mst-dist-run", timeout=30)


def _cancel_all(twin):
    """Cancel every future ``twin`` holds and release the workers' scratch (a cancelled run)."""
    from mst_dist.engine.scratch import release_scratch
    from mst_dist.engine.watchdog import cancel_run

    try:
        cancel_run(twin, "", "mst-dist: the awaiting task was cancelled")  # every future it holds
        twin.run(release_scratch, None)
    except Exception:  # a scheduler gone: nothing of the run is left there either
        logger.debug("cancelling the run's futures failed", exc_info=True)


async def _abandon(loop, twin, work):
    """Stop a run whose awaiting task was cancelled: no retry, no futures, its thread ended, its client closed.

    The client is closed only after the engine's thread stopped: a
    synchronous call of a client whose loop closes under it never returns.
    """
    _ABANDONED.add(twin)
    await loop.run_in_executor(None, _cancel_all, twin)
    try:
        await asyncio.wait_for(asyncio.shield(work), STOP_WAIT)
    except asyncio.TimeoutError:
        logger.warning("a cancelled run's thread did not stop within %.0f s; closing its client", STOP_WAIT)
    except BaseException:  # the engine stopped with the cancellation's error, as expected
        pass
    else:
        await loop.run_in_executor(None, _cancel_all, twin)  # it finished before it saw the cancellation
    await loop.run_in_executor(None, twin.close)


async def _run(solve, graph, client, spec):
    loop = asyncio.get_running_loop()
    twin = await loop.run_in_executor(None, _twin, client)
    work = loop.run_in_executor(None, solve, graph, twin, spec)
    try:
        result = await asyncio.shield(work)
    except asyncio.CancelledError:
        work.add_done_callback(_quiet)  # the engine's thread ends at its next wait; its error is expected
        await asyncio.shield(_abandon(loop, twin, work))
        raise
    except BaseException:
        await loop.run_in_executor(None, twin.close)
        raise
    if result.kept is not None:
        result.kept._owner = twin  # the kept parts are the twin's futures: it lives as long as they do
    else:
        await loop.run_in_executor(None, twin.close)
    return result


def _quiet(fut):
    if not fut.cancelled() and fut.exception() is not None:
        logger.debug("a cancelled run stopped: %r", fut.exception())


def solve_async(solve, graph, client, spec):
    """An awaitable of ``solve(graph, c, spec)``, ``c`` a synchronous client of the asynchronous ``client``'s scheduler.

    ``solve`` is :func:`mst_dist.api.solve` (passed in: this layer is below the API's).
    """
    return client.sync(_run, solve, graph, client, spec)

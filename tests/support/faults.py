"""Fault injection for the tests: kill a worker process the moment a task of one phase starts on it."""
import os
import signal

from distributed.diagnostics.plugin import WorkerPlugin

from mst_dist.engine.keys import parse_key


class KillAtPhase(WorkerPlugin):
    """SIGKILL the worker process when a task named ``name`` (a key's name: ``map``, ``local``, ``hook-serve``, ...)
    starts.

    With ``once`` (a path), only the first such task anywhere kills its
    worker: the file is created before the kill, and a worker that finds it
    (the restarted one included) runs on.  Without it, every such task kills
    its worker, so the task never finishes.
    """

    def __init__(self, name, once=None):
        self.task_name = name
        self.once = once

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing":
            return
        k = parse_key(key)
        if k is None or k.name != self.task_name:
            return
        if self.once is not None:
            try:
                fd = os.open(self.once, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(fd, f"{key} {os.getpid()}\n".encode())
            os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)


def within(seconds, what, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on a thread of its own: its result, or the exception it raised.

    A bound on a hang, not a measure of speed: if the call is still running after
    ``seconds`` (generous, for a loaded machine), the test fails saying ``what`` hung.
    """
    import threading

    import pytest

    out = {}

    def call():
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as e:  # handed to the caller
            out["error"] = e

    t = threading.Thread(target=call, name=f"bounded: {what}", daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"{what} still running after {seconds} s: it hangs instead of finishing or stopping "
                    f"with an error", pytrace=False)
    if "error" in out:
        raise out["error"]
    return out["value"]

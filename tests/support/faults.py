"""Fault injection for the tests: kill a worker process the moment a task of one phase starts on it."""
import os
import signal

from distributed.diagnostics.plugin import WorkerPlugin

from mst_dist.engine.keys import parse_key


class KillAtPhase(WorkerPlugin):
    """SIGKILL the worker process when a task of ``phase`` (a key's phase: ``map``, ``local``, ...) starts.

    With ``once`` (a path), only the first such task anywhere kills its
    worker: the file is created before the kill, and a worker that finds it
    (the restarted one included) runs on.  Without it, every such task kills
    its worker, so the task never finishes.
    """

    def __init__(self, phase, once=None):
        self.phase = phase
        self.once = once

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing":
            return
        k = parse_key(key)
        if k is None or k.phase != self.phase:
            return
        if self.once is not None:
            try:
                fd = os.open(self.once, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(fd, f"{key} {os.getpid()}\n".encode())
            os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)

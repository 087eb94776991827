"""Ctrl-C in the middle of a run: a KeyboardInterrupt for the caller, no noise from Dask after it."""
import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from mst_dist.engine.interrupt import InterruptNoise
from support.cli import cli_env


def record(name, msg, *args):
    return logging.LogRecord(name, logging.WARNING, __file__, 1, msg, args, None)


def test_the_leftovers_of_an_interrupted_run_are_dropped():
    f = InterruptNoise()
    assert not f.filter(record("distributed.worker.state_machine",
                               "Async instruction for %s ended with CancelledError",
                               "<Task cancelled name=\"execute('mst-load-r0-d13d4f9c-0')\">"))
    assert not f.filter(record("asyncio", "Task exception was never retrieved\nfuture: <Task finished "
                                          "coro=<Client._gather.<locals>.wait()> exception=AllExit()>"))
    # anything else passes
    assert f.filter(record("distributed.worker.state_machine", "Async instruction for %s ended with %r",
                           "x", ValueError("boom")))
    assert f.filter(record("asyncio", "Task exception was never retrieved\nfuture: <Task exception=OSError()>"))


SCRIPT = """
import sys
import mst_dist
g = mst_dist.generate("rmat", scale=21, seed=1)  # seconds of distributed rounds: still running at the Ctrl-C
def progress(ev):
    if ev.get("phase") == "load":
        print("started", flush=True)
try:
    mst_dist.minimum_spanning_forest(g, local_finish=0, progress=progress)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.slow
def test_ctrl_c_in_the_api_prints_no_cancelled_error(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "started"
        time.sleep(0.5)  # the load tasks running
        os.kill(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert out.strip() == "interrupted"
    assert "CancelledError" not in err and "never retrieved" not in err, err[-3000:]

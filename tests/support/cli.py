"""The command line in a subprocess: ``python -m mst_dist.cli`` with the repository importable."""
import os
import re
import subprocess
import sys
import time

from support import ROOT

#: The command that starts ``mst-dist`` in a subprocess.
CLI = (sys.executable, "-m", "mst_dist.cli")


def cli_env(base=None, **extra):
    """An environment for a subprocess: ``base`` (default: this process's), ROOT first on PYTHONPATH, ``extra``."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_cli(*args, cwd, timeout=300, env=None):
    """Run ``mst-dist ARGS`` in ``cwd`` (environment: :func:`cli_env` unless given); the finished process.

    Its ``stdout`` and ``stderr`` are captured as text.
    """
    return subprocess.run([*CLI, *args], cwd=cwd, env=cli_env() if env is None else env,
                          capture_output=True, text=True, timeout=timeout)


#: A run config's graph where only its cluster section matters.
GEN = {"graph": {"generate": {"kind": "grid", "rows": 4, "cols": 4}}}


def cluster_of(**section):
    """The validated ``cluster`` section of a run config with this section."""
    from mst_dist.cli.runconfig import validate_run_config

    return validate_run_config({**GEN, "cluster": section})["cluster"]


#: ANSI control sequences (colours, cursor moves) and carriage returns.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def on_a_terminal(*args, cwd, columns=160, lines=40, timeout=300):
    """Run ``mst-dist ARGS`` with stdout and stderr on a pseudo-terminal ``columns`` wide.

    Returns ``(exit status, everything it drew)``, ANSI sequences stripped.
    """
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    p = subprocess.Popen([*CLI, *args], cwd=cwd, stdin=slave, stdout=slave, stderr=slave,
                         env=cli_env(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines)),
                         close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    os.close(master)
    rc = p.wait(timeout=60)
    return rc, ANSI.sub("", b"".join(chunks).decode(errors="replace"))

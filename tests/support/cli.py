"""The command line in a subprocess: ``python -m mst_dist.cli`` with the repository importable."""
import os
import subprocess
import sys

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

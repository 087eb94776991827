"""A refusal's advice as commands: the ``mst-dist run`` the user typed, with the flags each shape changes.

:class:`~mst_dist.GraphTooLargeError` carries :class:`~mst_dist.errors.Advice`
(keywords of the call, settings of the cluster); :func:`advised_commands`
turns each into the command line that runs it: the arguments as given, less
the flags the advice sets, plus its flags.
"""
from __future__ import annotations

import shlex

from mst_dist.errors import size_text

__all__ = ["advised_commands", "advice_flags"]

#: Keyword or cluster setting -> the flag that sets it (every flag takes a value but --processes).
FLAGS = {"vertex_partition": "--vertex-partition", "stream": "--stream", "n_workers": "--workers",
         "threads_per_worker": "--threads", "memory_limit": "--memory-limit", "processes": "--processes"}
#: Flags without a value.
_SWITCHES = ("--processes", "--no-processes")


def advice_flags(advice, local=True):
    """The flags of one :class:`~mst_dist.errors.Advice`, or ``None`` where it needs a cluster the
    command line does not start (``local`` false: a scheduler's address, MPI)."""
    if advice.cluster and not local:
        return None
    flags = []
    for name, value in (*advice.keywords, *advice.cluster):
        if name == "processes":
            flags.append("--processes" if value else "--no-processes")
        elif name == "memory_limit":
            flags += [FLAGS[name], size_text(value)]
        else:
            flags += [FLAGS[name], str(value)]
    return flags


def _without(argv, flags):
    """``argv`` less every occurrence of ``flags`` (``--flag value``, ``--flag=value``, switches)."""
    names = set(flags)
    if "--processes" in names:
        names.add("--no-processes")
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        head = arg.partition("=")[0]
        if head in names:
            skip = "=" not in arg and head not in _SWITCHES
            continue
        out.append(arg)
    return out


def _fits_machine(advice, machine, n_workers):
    """Whether the local cluster ``advice`` asks for (``n_workers`` unless it says) fits ``machine`` bytes."""
    settings = dict(advice.cluster)
    limit = settings.get("memory_limit")
    return not (machine and limit) or settings.get("n_workers", n_workers) * limit <= machine


def advised_commands(advice, argv, local=True, machine=None, n_workers=1):
    """``mst-dist ...`` for each advice that the command line can follow (see :func:`advice_flags`).

    ``machine``: this machine's memory; a local cluster whose workers' limits add up to more is left
    out (a limit past the machine's memory stalls or swaps; ``n_workers``: the workers now)."""
    commands = []
    for a in advice:
        flags = advice_flags(a, local)
        if flags is None or (local and not _fits_machine(a, machine, n_workers)):
            continue
        args = _without(list(argv), [f for f in flags if f.startswith("--")]) + flags
        commands.append("mst-dist " + shlex.join(args))
    return commands

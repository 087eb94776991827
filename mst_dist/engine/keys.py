"""Task keys and the event topic: the one codec every part of mst-dist uses.

A task key reads ``mst-<phase>-r<round>-<run token>[-s<submission>][-<index>]``:

- ``phase`` groups work on the dashboard and in progress bars (``map``,
  ``merge``, ``contract``, ``local``, ``load``, ...);
- ``round`` is the Borůvka round the task belongs to;
- ``token`` identifies the run (8 hex digits), so runs sharing a cluster never
  share keys;
- ``submission`` (``s<n>``) tells apart the tasks of a round submitted ahead
  and dropped from those that replace it;
- ``index`` is the chunk index (``3``), or the position in the merge tree
  (``<depth>.<j>``).

:func:`task_key` builds a key and :func:`parse_key` reads one back; nothing
else in the package formats or parses keys.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

#: The scheduler event topic the driver publishes run, phase and round records on.
EVENT_TOPIC = "mst-dist"
#: Every mst-dist task key starts with this.
PREFIX = "mst-"

_KEY = re.compile(r"^mst-(?P<phase>[a-z]+(?:-[a-z]+)*)-r(?P<round>\d+)-(?P<token>[0-9a-f]+)"
                  r"(?:-s(?P<submission>\d+))?(?:-(?P<index>\d+(?:\.\d+)*))?$")


@dataclass(frozen=True)
class TaskKey:
    """The parts of a task key (see the module docstring)."""

    phase: str
    round: int
    token: str
    submission: int | None = None
    index: str | None = None

    @property
    def chunk(self) -> int | None:
        """The edge chunk the task worked on, for per-chunk phases (``None`` otherwise)."""
        return int(self.index) if self.index is not None and self.index.isdigit() else None

    def __str__(self):
        return task_key(self.phase, self.round, self.token, self.submission, self.index)


def new_token() -> str:
    """A fresh run token (8 hex digits)."""
    return uuid.uuid4().hex[:8]


def task_key(phase: str, rnd: int, token: str, submission: int | None = None, index=None) -> str:
    """Build the key of one task; the inverse of :func:`parse_key`."""
    k = f"{PREFIX}{phase}-r{int(rnd)}-{token}"
    if submission is not None:
        k = f"{k}-s{int(submission)}"
    return k if index is None else f"{k}-{index}"


def parse_key(key) -> TaskKey | None:
    """The parts of an mst-dist task key, or ``None`` for any other key."""
    if not isinstance(key, str) or not key.startswith(PREFIX):
        return None
    m = _KEY.match(key)
    if m is None:
        return None
    sub = m["submission"]
    return TaskKey(phase=m["phase"], round=int(m["round"]), token=m["token"],
                   submission=None if sub is None else int(sub), index=m["index"])

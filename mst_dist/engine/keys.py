"""Task keys and the event topic: the one codec every part of mst-dist uses.

A task key reads ``mst-<name>-r<round>-<run token>[-s<submission>][-<index>]``:

- ``name`` is the task's :class:`~mst_dist.phases.Step` (``map``, ``merge``,
  ``contract``, ``local``, ``load``, ...), or for a task of an exchange its
  step and :class:`~mst_dist.phases.ExchangeStage` (``hook-serve``); the
  step's :class:`~mst_dist.phases.Phase` groups work on the dashboard and in
  the statistics;
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

from mst_dist.phases import ExchangeStage, Phase, Step

#: The scheduler event topic the driver publishes run, phase and round records on.
EVENT_TOPIC = "mst-dist"
#: Every mst-dist task key starts with this.
PREFIX = "mst-"

_KEY = re.compile(r"^mst-(?P<name>[a-z]+(?:-[a-z]+)*)-r(?P<round>\d+)-(?P<token>[0-9a-f]+)"
                  r"(?:-s(?P<submission>\d+))?(?:-(?P<index>\d+(?:\.\d+)*))?$")


@dataclass(frozen=True)
class TaskKey:
    """The parts of a task key (see the module docstring)."""

    step: Step
    round: int
    token: str
    submission: int | None = None
    index: str | None = None
    stage: ExchangeStage | None = None

    @property
    def name(self) -> str:
        """The key's name: the step, or ``<step>-<stage>`` for a task of an exchange."""
        return self.step.value if self.stage is None else f"{self.step}-{self.stage}"

    @property
    def phase(self) -> Phase:
        """The phase the task belongs to."""
        return self.step.phase

    @property
    def chunk(self) -> int | None:
        """The edge chunk the task worked on, for per-chunk phases (``None`` otherwise)."""
        return int(self.index) if self.index is not None and self.index.isdigit() else None

    def __str__(self):
        return task_key(self.step, self.round, self.token, self.submission, self.index, self.stage)


def new_token() -> str:
    """A fresh run token (8 hex digits)."""
    return uuid.uuid4().hex[:8]


def task_key(step: Step | str, rnd: int, token: str, submission: int | None = None, index=None,
             stage: ExchangeStage | str | None = None) -> str:
    """Build the key of one task; the inverse of :func:`parse_key`.

    ``step`` (and ``stage``, for a task of an exchange) must be members of
    :class:`~mst_dist.phases.Step` (:class:`~mst_dist.phases.ExchangeStage`)
    or their values: a ``ValueError`` otherwise.
    """
    name = Step(step).value if stage is None else f"{Step(step)}-{ExchangeStage(stage)}"
    k = f"{PREFIX}{name}-r{int(rnd)}-{token}"
    if submission is not None:
        k = f"{k}-s{int(submission)}"
    return k if index is None else f"{k}-{index}"


def _name(name):
    """``(step, stage)`` of a key's name, or ``None`` where it names no step."""
    if name in _STEPS:
        return Step(name), None
    head, _, tail = name.rpartition("-")
    if head in _STEPS and tail in _STAGES:
        return Step(head), ExchangeStage(tail)
    return None


_STEPS = frozenset(s.value for s in Step)
_STAGES = frozenset(s.value for s in ExchangeStage)


def parse_key(key) -> TaskKey | None:
    """The parts of an mst-dist task key, or ``None`` for any other key."""
    if not isinstance(key, str) or not key.startswith(PREFIX):
        return None
    m = _KEY.match(key)
    named = None if m is None else _name(m["name"])
    if named is None:
        return None
    sub = m["submission"]
    return TaskKey(step=named[0], round=int(m["round"]), token=m["token"],
                   submission=None if sub is None else int(sub), index=m["index"], stage=named[1])

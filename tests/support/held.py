"""A scheduler plugin for tests: which outputs of some phases are in memory as tasks of other phases start."""
from distributed.diagnostics.plugin import SchedulerPlugin

from mst_dist.engine.keys import parse_key


class Held(SchedulerPlugin):
    """As each task of a phase of ``AT`` starts, the ``mst-*`` outputs of the phases of ``KEPT`` in memory:
    ``seen`` holds ``(phase, round, index, frozenset of the (phase, round, index) held)``.  A subclass names
    the phases (and a ``name`` of its own); :meth:`kept` hears each kept output as it lands."""

    name = "mst-test-held"
    KEPT: tuple = ()
    AT: tuple = ()

    def __init__(self):
        self.held, self.seen = set(), []

    def kept(self, k):
        """An output of a phase of ``KEPT`` is in memory (``k``: its parsed key)."""

    def transition(self, key, start, finish, *args, **kwargs):
        k = parse_key(key)
        if k is None:
            return
        if finish == "memory" and k.name in self.KEPT:
            self.held.add((k.name, k.round, k.index))
            self.kept(k)
        elif start == "memory":
            self.held.discard((k.name, k.round, k.index))
        if finish == "processing" and k.name in self.AT:
            self.starting(k)
            self.seen.append((k.name, k.round, k.index, frozenset(self.held)))

    def starting(self, k):
        """A task of a phase of ``AT`` starts, before ``seen`` records it."""

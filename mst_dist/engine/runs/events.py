"""What a run tells as it goes: records on the scheduler's event topic, and the caller's ``progress``.

One :class:`RunEvents` per run.  :meth:`RunEvents.publish` sends a small
record (``run-start``, ``phase``, ``round``, ``run-end``) to the scheduler's
``mst-dist`` topic, which the dashboard and logs read; :meth:`RunEvents.emit`
sends a ``phase`` record and hands it to ``progress`` too.  The single-task
solve tells its rounds from inside its task: :meth:`RunEvents.task_progress`
forwards those to ``progress`` while it runs.
"""
from __future__ import annotations

import contextlib
import logging
import time
import weakref

from mst_dist.engine.keys import EVENT_TOPIC
from mst_dist.phases import plain

logger = logging.getLogger("mst_dist")

#: client -> {run token: hook}: the progress hooks of the runs on a client, behind one subscription.
_HOOKS = weakref.WeakKeyDictionary()


def _topic_hooks(client):
    """The progress hooks of ``client``'s runs (subscribes to the event topic on first use).

    The subscription stays for the client's life: unsubscribing at the end
    of a run would leave the events still on their way (the solve's last
    rounds, the run's own records) to a client with no handler, which
    distributed logs as an error; concurrent runs on one client each keep
    their own hook.
    """
    hooks = _HOOKS.get(client)
    if hooks is None:
        hooks = {}

        def dispatch(event):
            for hear in list(hooks.values()):
                hear(event)

        client.subscribe_topic(EVENT_TOPIC, dispatch)
        _HOOKS[client] = hooks
    return hooks


class RunEvents:
    """The event records and progress calls of one run (``token``) on ``client``."""

    def __init__(self, client, token, *, progress=None, publish=True, t_start=None):
        self.client = client
        self.token = token
        self.progress = progress
        self.enabled = publish
        self.t_start = time.perf_counter() if t_start is None else t_start

    def publish(self, event, **payload):
        """Send a small record to the scheduler's event topic (dashboard, logs)."""
        if not self.enabled:
            return
        try:
            self.client.log_event(EVENT_TOPIC, plain({"event": event, "run": self.token, **payload}))
        except Exception:  # an old scheduler or a closing client must not break a run
            logger.debug("could not publish %s", event, exc_info=True)

    def emit(self, **ev):
        """A ``phase`` record: published, and handed to ``progress`` with the time elapsed."""
        ev["elapsed"] = time.perf_counter() - self.t_start
        self.publish("phase", **ev)
        self._call(ev)

    def _call(self, ev):
        if self.progress is None:
            return
        try:
            self.progress(ev)
        except Exception:  # a broken progress display must not break a run
            logger.exception("progress callback failed")

    @contextlib.contextmanager
    def task_progress(self):
        """While inside: the ``phase`` events this run's tasks send (``source="task"``) go to ``progress``.

        The single-task solve tells each round it ends on the event topic
        (:func:`mst_dist.engine.tasks.round_reporter`); the client hears them
        through a topic subscription.
        """
        if self.progress is None:
            yield
            return

        def hear(event):
            msg = event[1] if isinstance(event, tuple) and len(event) == 2 else event
            if not (isinstance(msg, dict) and msg.get("run") == self.token and msg.get("source") == "task"):
                return
            ev = {k: v for k, v in msg.items() if k not in ("event", "run", "source")}
            ev["elapsed"] = time.perf_counter() - self.t_start
            self._call(ev)

        try:
            hooks = _topic_hooks(self.client)
        except Exception:  # an old scheduler: progress moves per task only
            logger.debug("no event subscription", exc_info=True)
            yield
            return
        hooks[self.token] = hear
        try:
            yield
        finally:
            hooks.pop(self.token, None)

"""Live progress of a run on a terminal (rich), fed by the engine's ``progress=`` callback.

The driver calls ``progress(event)`` with its ``phase`` records (``round``,
``phase``, ``components``, ``edges``, ``elapsed``): the same records it
publishes to the dashboard.  The single-task solve (phase ``local``) tells each
of its rounds as it ends, with its ``step``: ``light`` (a light-edge pass,
counting light edges only), ``heavy`` (the heavy edges relabelled) or
``main``, so the line moves during a solve that is one task.  The first run
after install starts with a ``compile`` step (``compiling kernels — once after
install``), kept on the screen with its time once done.  :class:`LiveProgress` shows the latest one as a
status line, with the elapsed time ticking between events, and the rounds
done so far.  It draws only on a terminal; ``mst-dist run`` turns it off when
stdout is not one, and with ``--quiet``.

Workers paused by Dask's memory manager stop a run without an event:
:class:`PauseMonitor` polls the scheduler while a run waits and tells of each
change, and :meth:`LiveProgress.pause` puts it under the status line
(:func:`format_pause`: ``paused: 2 of 2 workers, memory 10.1 of 12.0 GiB;
waiting for memory``).
"""
from __future__ import annotations

import threading
import time

from mst_dist.engine.watchdog import Poller
from mst_dist.phases import Phase

__all__ = ["LiveProgress", "PauseMonitor", "format_event", "format_pause"]


def _pass_line(ev):
    gib = (ev.get("bytes_read") or 0) / 2**30
    return (f"{ev.get('pass', 'pass')}  {ev.get('chunks_done', 0):,}/{ev.get('chunks_total', 0):,} chunks  "
            f"{gib:,.2f} GiB read  {ev.get('edges', 0):,} edges kept")


def _compile_line(ev):
    """The one-time compilation step (a ``compile`` event of :func:`mst_dist.engine.warmup.ensure_compiled`)."""
    from mst_dist.engine.warmup import COMPILE_STEP

    return "kernels compiled (once after install)" if ev.get("done") else COMPILE_STEP


#: What a single-task solve's step adds to its phase's name.
_STEPS = {"light": "light edges", "heavy": "heavy edges"}


def phase_label(ev):
    """The phase of an event as shown: ``local``, or ``local, light edges`` for a step of the solve."""
    phase = str(ev.get("phase", "?"))
    step = _STEPS.get(ev.get("step"))
    return f"{phase}, {step}" if step else phase


def format_event(ev, elapsed=None):
    """One line for a phase event: ``round 3  map  12,345 components  67,890 edges  2.1 s``.

    A streaming run's pass reads ``pass 1  12/67 chunks  3.10 GiB read  9,876 edges kept  2.1 s``.
    """
    el = ev.get("elapsed", 0.0) if elapsed is None else elapsed
    if ev.get("phase") == Phase.PASS:
        return f"{_pass_line(ev)}  {el:8.1f} s"
    if ev.get("phase") == Phase.COMPILE:
        return f"{_compile_line(ev)}  {el:8.1f} s"
    return (f"round {ev.get('round', 0)}  {phase_label(ev):<6} "
            f"{ev.get('components', 0):>14,} components {ev.get('edges', 0):>16,} edges left  "
            f"{el:8.1f} s")


def format_pause(pause):
    """One line for a :class:`~mst_dist.engine.watchdog.MemoryPause`:
    ``paused: 2 of 2 workers, memory 10.1 of 12.0 GiB; waiting for memory``."""
    mem = ""
    if pause.memory is not None and pause.limit:
        mem = f", memory {pause.memory / 2**30:.1f} of {pause.limit / 2**30:.1f} GiB"
    return f"paused: {pause.paused} of {pause.workers} workers{mem}; waiting for memory"


class PauseMonitor(Poller):
    """Polls the scheduler from a thread while a run waits; calls ``on_change(pause)`` when the workers
    paused by Dask's memory manager change.

    ``pause`` is a :class:`~mst_dist.engine.watchdog.MemoryPause`, or ``None``
    once no worker is paused any more.  The first poll is at once: a run that
    starts on paused workers says so.  A context manager; ``interval``:
    seconds between polls.
    """

    thread_name = "mst-pause-monitor"
    poll_first = True

    def __init__(self, client, on_change, interval=1.0):
        self.client = client
        self.on_change = on_change
        self.interval = interval
        self.pause = None
        self._thread = None

    def poll(self):
        """Ask the scheduler once; tell ``on_change`` when the paused workers (their number) changed."""
        from mst_dist.engine.cluster_info import scheduler_workers
        from mst_dist.engine.watchdog import memory_pause

        pause = memory_pause(scheduler_workers(self.client))
        changed = (pause is None) != (self.pause is None) or (
            pause is not None and (pause.paused, pause.workers) != (self.pause.paused, self.pause.workers))
        self.pause = pause
        if changed or pause is not None:  # the memory moves while paused: the line follows it
            self.on_change(pause)
        return pause

    def __enter__(self):
        self._start_polling()
        return self


class LiveProgress:
    """A rich ``Live`` status display; call it with phase events, use it as a context manager.

    ``console``: a ``rich.console.Console`` (default: stdout).  The display is
    transient: it disappears when the run ends, leaving the summary alone.
    """

    def __init__(self, console=None, refresh_per_second=4):
        from rich.console import Console

        self.console = console or Console()
        self.refresh_per_second = refresh_per_second
        self.event = None
        self.events = []
        self._t0 = time.perf_counter()
        self._seen_at = self._t0
        self._lock = threading.Lock()
        self._live = None
        self.paused = None  # a MemoryPause while workers are paused (PauseMonitor)

    # rich calls this on each refresh: the elapsed time moves between events
    def __rich__(self):
        from rich.console import Group

        grid = self._status()
        with self._lock:
            paused = self.paused
        if paused is None:
            return grid
        return Group(grid, f"[bold yellow]{format_pause(paused)}[/]")

    def pause(self, paused):
        """Workers paused by the memory manager (a ``MemoryPause``), or ``None``: shown under the status line."""
        with self._lock:
            self.paused = paused
        if self._live is not None:
            self._live.refresh()

    def _status(self):
        from rich.spinner import Spinner
        from rich.table import Table

        with self._lock:
            ev = self.event
            since = time.perf_counter() - self._seen_at
        grid = Table.grid(padding=(0, 1))
        if ev is None:
            grid.add_row(Spinner("dots"), "starting the cluster and loading the graph ...")
            return grid
        elapsed = ev.get("elapsed", 0.0) + since
        if ev.get("phase") == Phase.PASS:
            grid.add_row(Spinner("dots"), "[bold]streaming[/]", f"[cyan]{_pass_line(ev)}[/]",
                         f"[dim]{elapsed:.1f} s[/]")
            return grid
        if ev.get("phase") == Phase.COMPILE:
            if ev.get("done"):  # the run goes on: the cluster and the graph come next
                grid.add_row(Spinner("dots"), "starting the cluster and loading the graph ...")
            else:
                grid.add_row(Spinner("dots"), f"[bold]{_compile_line(ev)}[/]", f"[dim]{elapsed:.1f} s[/]")
            return grid
        grid.add_row(Spinner("dots"), f"[bold]round {ev.get('round', 0)}[/]",
                     f"[cyan]{phase_label(ev)}[/]",
                     f"{ev.get('components', 0):,} components", f"{ev.get('edges', 0):,} edges left",
                     f"[dim]{elapsed:.1f} s[/]")
        return grid

    def __call__(self, event):
        with self._lock:
            self.event = dict(event)
            self.events.append(self.event)
            self._seen_at = time.perf_counter()
        if event.get("phase") == Phase.COMPILE and event.get("done"):
            # the one-time step stays on the screen once the live line has gone
            self.console.print(f"[dim]{_compile_line(event)} in {event.get('elapsed', 0.0):.1f} s[/]")
        if self._live is not None:
            self._live.refresh()

    def __enter__(self):
        from rich.live import Live

        self._live = Live(self, console=self.console, refresh_per_second=self.refresh_per_second,
                          transient=True)
        self._live.__enter__()
        return self

    def __exit__(self, *exc):
        live, self._live = self._live, None
        if live is not None:
            live.__exit__(*exc)
        return False

"""The live progress line: what it says of each event, and the rounds a one-task solve reports as it goes."""
import logging
import time

from rich.console import Console

import mst_dist
from support.oracle import assert_result, expected
from mst_dist.diagnostics.progress import LiveProgress, format_event, phase_label
from mst_dist.phases import Phase


def test_a_step_of_the_solve_is_named():
    assert phase_label({"phase": "map"}) == "map"
    assert phase_label({"phase": "local", "step": "main"}) == "local"
    assert phase_label({"phase": "local", "step": "light"}) == "local, light edges"
    assert phase_label({"phase": "local", "step": "heavy"}) == "local, heavy edges"
    line = format_event({"round": 3, "phase": "local", "step": "light", "components": 1234, "edges": 56789,
                         "elapsed": 2.5})
    assert line.startswith("round 3  local, light edges ")
    assert "1,234 components" in line and "56,789 edges left" in line and line.endswith("2.5 s")


def test_each_phase_is_shown_by_its_name():
    """The line names the phase of the event, a member of the one enum: a round's phases by name, a pass
    and the compile step by their own lines."""
    for phase in Phase:
        line = format_event({"round": 1, "phase": phase, "components": 5, "edges": 7, "elapsed": 1.0,
                             "pass": "pass 2", "chunks_done": 1, "chunks_total": 3})
        if phase is Phase.PASS:
            assert line.startswith("pass 2  1/3 chunks")
        elif phase is Phase.COMPILE:
            assert "compil" in line and "round" not in line
        else:
            assert line.startswith(f"round 1  {phase.value}") and phase_label({"phase": phase}) == phase.value


def test_the_live_line_shows_the_latest_event():
    console = Console(record=True, width=120, color_system=None)
    live = LiveProgress(console=console)
    live({"round": 0, "phase": "local", "components": 100, "edges": 400, "elapsed": 0.1})
    live({"round": 2, "phase": "local", "step": "heavy", "components": 40, "edges": 90, "elapsed": 0.2})
    console.print(live)
    text = console.export_text()
    assert "round 2" in text and "local, heavy edges" in text and "40 components" in text
    assert "90 edges left" in text and len(live.events) == 2


def test_a_one_task_solve_reports_each_round_as_it_ends(client):
    g = mst_dist.generate("rmat", scale=12, seed=7)
    heard = []
    res = mst_dist.minimum_spanning_forest(g, client, progress=lambda ev: heard.append((time.perf_counter(), ev)))
    local = [r for r in res.stats.rounds if r.mode.startswith("local")]
    assert len(local) > 2 and len(local) == len(res.stats.rounds)  # the whole forest in one task
    told = [ev for _, ev in heard if ev.get("phase") == "local" and "step" in ev]
    # every round of the task, in order, with its counts, between the task's start and the run's end
    assert [ev["round"] for ev in told] == [r.round for r in local]
    assert [ev["components"] for ev in told] == [r.components_after for r in local]
    assert [ev["edges"] for ev in told] == [r.edges_after for r in local]
    assert {ev["step"] for ev in told} == {"light", "heavy", "main"}
    phases = [ev["phase"] for _, ev in heard]
    start, end = phases.index("local"), phases.index("finish")
    assert all(start < i < end for i, (_, ev) in enumerate(heard) if "step" in ev)
    # the elapsed time moves with them (the driver's clock)
    elapsed = [ev["elapsed"] for ev in told]
    assert elapsed == sorted(elapsed)
    from mst_dist.engine.runs.events import _HOOKS
    assert not _HOOKS.get(client)  # the run's hook ends with the run


def test_events_after_a_run_are_not_an_error(client, caplog):
    """A task's last events may reach the client after its run ended: heard by nobody, logged by nobody."""
    g = mst_dist.generate("rmat", scale=10, seed=3)
    with caplog.at_level(logging.ERROR, logger="distributed.client"):
        for _ in range(2):
            mst_dist.minimum_spanning_forest(g, client, progress=lambda ev: None)
        client.log_event("mst-dist", {"event": "phase", "run": "gone", "source": "task"})
        time.sleep(0.5)
    assert not [r for r in caplog.records if "event handler" in r.getMessage()]


def test_no_progress_callback_no_subscription(client):
    g = mst_dist.generate("grid", rows=20, cols=20)
    subscribed = []
    client.subscribe_topic = lambda *a: subscribed.append(a)  # noqa: the driver must not call it
    try:
        assert_result(mst_dist.minimum_spanning_forest(g, client), expected(g))
    finally:
        del client.subscribe_topic
    assert subscribed == []  # the driver subscribes only for a progress callback


# -- workers paused by Dask's memory manager ---------------------------------------------------

def _worker(status, memory=None, limit=None):
    return {"status": status, "memory_limit": limit, "metrics": {"memory": memory}}


def test_paused_workers_in_one_line():
    from mst_dist.diagnostics.progress import format_pause
    from mst_dist.engine.watchdog import MemoryPause, memory_pause

    assert memory_pause({}) is None and memory_pause({"a": _worker("running")}) is None
    pause = memory_pause({"a": _worker("paused", int(5.05 * 2**30), 6 * 2**30),
                          "b": _worker("paused", int(5.05 * 2**30), 6 * 2**30)})
    assert pause == MemoryPause(2, 2, int(5.05 * 2**30) * 2, 12 * 2**30)
    assert format_pause(pause) == "paused: 2 of 2 workers, memory 10.1 of 12.0 GiB; waiting for memory"
    # workers without a memory limit report no memory figure; a closing worker is not paused
    pause = memory_pause({"a": _worker("paused", 100), "b": _worker("closing_gracefully"), "c": _worker("running")})
    assert format_pause(pause) == "paused: 1 of 3 workers; waiting for memory"


class _Cluster:
    """A client stand-in: ``scheduler_info`` answers the workers the test sets."""

    def __init__(self, workers):
        self.workers = workers

    def scheduler_info(self, **kw):
        return {"workers": self.workers}


def test_the_pause_is_on_the_live_line_while_it_lasts():
    from mst_dist.diagnostics.progress import PauseMonitor

    cluster = _Cluster({"a": _worker("running", 1 << 30, 2 << 30)})
    console = Console(record=True, width=120, force_terminal=False)
    live = LiveProgress(console=console)
    live({"round": 2, "phase": "map", "components": 10, "edges": 20, "elapsed": 1.0})
    told = []
    monitor = PauseMonitor(cluster, lambda p: (told.append(p), live.pause(p)))
    assert monitor.poll() is None and told == []  # nothing paused: nothing said
    cluster.workers["a"] = _worker("paused", int(1.7 * 2**30), 2 << 30)
    monitor.poll()
    console.print(live)
    text = console.export_text()
    assert "round 2" in text and "paused: 1 of 1 workers, memory 1.7 of 2.0 GiB; waiting for memory" in text
    cluster.workers["a"] = _worker("running", 1 << 30, 2 << 30)
    monitor.poll()
    assert told[-1] is None and live.paused is None
    console.print(live)
    assert "paused" not in console.export_text()  # gone from the line once the worker runs again
    # as a thread: the first poll is at once
    cluster.workers["a"] = _worker("paused", 1, 2)
    seen = []
    with PauseMonitor(cluster, seen.append, interval=60):
        deadline = time.monotonic() + 10
        while not seen:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert seen[0].paused == 1

"""The dashboard's MST page: its plugin state, its registration, and the page in a real browser."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

import mst_dist
from mst_dist.diagnostics import dashboard, figures
from mst_dist.engine.keys import task_key
from mst_dist.phases import ExchangeStage, Phase, Step
from mst_dist.result import PHASES
from mst_dist.deploy.local import embedded
from support.chromium import Chromium, chromium_path
from support import ROOT, needs



def round_rec(r, comps, edges, wall=1.0, moved=100, mode="distributed"):
    return {"round": r, "mode": mode, "components_before": comps, "components_after": comps // 2,
            "edges_before": edges, "edges_after": edges // 3, "forest_edges": comps // 2,
            "phase_seconds": {"map": 0.5, "merge": 0.1, "contract": 0.2}, "wall_seconds": wall,
            "bytes_moved": moved, "tasks": 7}


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.read().decode()


# --------------------------------------------------------------------------
# columns (no Bokeh, no cluster)
# --------------------------------------------------------------------------

def test_round_columns_stack_and_overhead():
    cols = figures.round_columns([round_rec(1, 50, 300, wall=2.0), round_rec(0, 100, 900)])
    assert cols["round"] == [0, 1]
    assert cols["map"] == [0.5, 0.5] and cols["filter-edges"] == [0.0, 0.0]
    assert cols["overhead"] == pytest.approx([0.2, 1.2])
    assert cols["bytes_moved"] == [100, 100]
    assert set(figures.STACK) <= set(cols)


def test_remaining_columns_live_round_and_no_zero():
    rounds = [round_rec(0, 100, 900), round_rec(1, 50, 300)]
    cols = figures.remaining_columns(rounds)
    assert cols == {"round": [0, 1, 2], "components": [100, 50, 25], "edges": [900, 300, 100]}
    # the phase event of a round under way adds it before its record arrives
    live = figures.remaining_columns(rounds[:1], {"round": 1, "phase": "map", "components": 49,
                                                  "edges": 301})
    assert live["round"] == [0, 1] and live["components"] == [100, 50]  # the record wins
    last = round_rec(2, 1, 3)
    last.update(components_after=0, edges_after=0)
    assert figures.remaining_columns([last])["round"] == [2]  # zero: not on a log scale


def test_worker_columns_chunks_and_share():
    cols = figures.worker_columns(["tcp://a:1", "tcp://b:2"], {0: "tcp://a:1", 1: "tcp://b:2", 2: "tcp://a:1",
                                                               3: "tcp://a:1", 5: "tcp://a:1"},
                                  {"tcp://a:1": {"map": 3.0, "load": 1.0}, "tcp://b:2": {"map": 1.0}},
                                  {"tcp://b:2": "GPU"})
    assert cols["label"] == ["a:1", "b:2"]
    assert cols["chunks"] == [4, 1] and cols["chunk_ids"] == ["0, 2-3, 5", "1"]
    assert cols["map_share"] == [75.0, 25.0]
    assert cols["kind"] == ["CPU", "GPU"]
    assert cols["load"] == [1.0, 0.0]


def test_status_html():
    assert "No mst-dist run" in figures.status_html(None)
    html = figures.status_html({"run": "ab12", "state": "running", "graph": "g", "round": 3, "phase": "map",
                                "components": 1234, "edges": 56789, "elapsed": 2.5, "n_vertices": 10,
                                "n_edges": 20, "partitions": 4, "n_workers": 2})
    assert "round 3, phase map" in html and "1,234 components" in html and "56,789 edges" in html
    done = figures.status_html({"run": "ab12", "state": "finished", "graph": "g", "n_vertices": 10,
                                "n_edges": 20, "partitions": 1, "n_workers": 1, "rounds": 1,
                                "total_seconds": 0.5, "forest_edges": 9, "n_components": 1})
    assert "1 chunk on 1 worker<" in done and "1 round in" in done and ", 1 component<" in done


def legend_labels(fig):
    return [item.label.value for lg in fig.legend for item in lg.items]


def test_static_figures_as_published():
    """A finished run's figures for a file or an image: no toolbar drawn, legends beside the data,
    GPU entries and empty panels left out, no empty cell beside the last panel."""
    needs.module("bokeh", "the figures need Bokeh: pip install \'mst-dist[dashboard]\'")
    # one worker, CPU only: nothing moved, nothing copied to a GPU: no bytes panel
    cpu = [dict(round_rec(r, 100 >> r, 900 >> r, moved=0), h2d_bytes=0, d2h_bytes=0) for r in range(3)]
    data = {"rounds": figures.round_columns(cpu), "remaining": figures.remaining_columns(cpu),
            "workers": figures.worker_columns([], {}, {}), "status": None}
    root, _, parts = figures.build(data, sizing_mode=None, width=500, with_workers=False, static=True)
    assert parts["bytes"] is None and parts["workers"] is None and parts["table"] is None
    figs = [parts["remaining"], parts["phases"]]
    assert [len(r.children) for r in root.children[1:]] == [2]  # one full row
    for fig in figs:
        assert fig.toolbar.autohide  # tools only under the mouse: none in a screenshot
        assert fig.legend[0] in fig.right  # beside the plot, not over the data
    assert parts["remaining"].yaxis[0].formatter.code == figures._COUNT_TICKS
    # two workers on a CPU cluster: measured bytes, no estimate, no GPU entries; the odd panel
    # takes the whole row
    moved = [dict(r, bytes_moved=1000 * (r["round"] + 1)) for r in cpu]
    data["rounds"] = figures.round_columns(moved)
    root, _, parts = figures.build(data, sizing_mode=None, width=500, with_workers=False, static=True)
    assert legend_labels(parts["bytes"]) == ["between workers"]
    assert [len(r.children) for r in root.children[1:]] == [2, 1] and parts["bytes"].width == 1000
    # GPU copies: their entries come back
    gpu = [dict(r, h2d_bytes=10) for r in moved]
    data["rounds"] = figures.round_columns(gpu)
    _, _, parts = figures.build(data, sizing_mode=None, width=500, with_workers=False, static=True)
    assert legend_labels(parts["bytes"]) == ["between workers", "host → GPU", "GPU → host"]
    # the live page: estimate and measured bars, each labelled, no GPU entries on a CPU cluster
    _, _, parts = figures.build(data, gpu=False)
    assert legend_labels(parts["bytes"]) == ["between workers, estimate", "between workers, measured"]
    assert "estimate while a run goes, measured when it ends" in parts["bytes"].title.text
    assert not parts["phases"].toolbar.autohide


def test_page_has_gpu_bars_where_the_cluster_has_gpu_workers():
    needs.module("bokeh", "the page needs Bokeh: pip install \'mst-dist[dashboard]\'")
    from types import SimpleNamespace

    def page(resources):
        sched = SimpleNamespace(plugins={}, workers={"tcp://w:1": SimpleNamespace(resources=resources)})
        return dashboard.MSTPage(sched, dashboard.MSTDashboard())

    assert "host → GPU" in legend_labels(page({"GPU": 1}).parts["bytes"])
    assert "host → GPU" not in legend_labels(page({}).parts["bytes"])


@pytest.mark.slow
def test_count_ticks_in_chromium(tmp_path):
    """The log axis labels counts as 1, 100, 10k, 1M, 2.5M, 1B (not 1.000e+6), run by the browser."""
    need_chromium()
    needs.module("bokeh", "the figures need Bokeh: pip install \'mst-dist[dashboard]\'")
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    rounds = [round_rec(0, 10**6, 10**9), round_rec(1, 1000, 10**5)]
    page = tmp_path / "plot.html"
    page.write_text(file_html(figures.standalone(rounds), INLINE, title="ticks"))
    ticks = [1, 100, 10**4, 10**6, 2.5e6, 10**9, 0.5]
    probe = ("JSON.stringify(%s.map(tick => (function (tick) {%s})(tick)))"
             % (json.dumps(ticks), figures._COUNT_TICKS))
    with Chromium() as browser:
        got = json.loads(browser.page(page.as_uri(), "window.Bokeh !== undefined", probe, settle=0.1))
    assert got == ["1", "100", "10k", "1M", "2.5M", "1B", "0.5"]


# --------------------------------------------------------------------------
# the plugin's state, fed by hand
# --------------------------------------------------------------------------

def test_plugin_records_events_and_transitions():
    p = dashboard.MSTDashboard()
    p.log_event("other-topic", {"event": "run-start", "run": "x"})
    assert p.runs == {}
    p.log_event("mst-dist", {"event": "run-start", "run": "aa11", "graph": "g", "n_vertices": 100,
                             "n_edges": 900, "partitions": 2, "workers": ["tcp://w:1"], "time": time.time()})
    p.log_event("mst-dist", {"event": "phase", "run": "aa11", "round": 0, "phase": "map",
                             "components": 100, "edges": 900, "elapsed": 0.1})
    ss = [{"action": "compute", "start": 10.0, "stop": 12.5}, {"action": "transfer", "start": 9, "stop": 10}]
    # the driver's own keys: a map task carries its submission number before the chunk index
    p.transition(task_key("map", 0, "aa11", submission=0, index=1), "processing", "memory",
                 worker="tcp://w:1", startstops=ss, stimulus_id="s")
    p.transition(task_key("load", 0, "aa11", index=0), "processing", "memory", worker="tcp://w:2",
                 startstops=[{"action": "compute", "start": 0, "stop": 1}], stimulus_id="s")
    p.transition("mst-map-r0-aa11-0", "waiting", "processing", stimulus_id="s")  # not finished
    p.transition("mst-map-r0-ffff-0", "processing", "memory", worker="tcp://w:1", stimulus_id="s")  # other run
    p.transition(("tuple", 0), "processing", "memory", worker="tcp://w:1", stimulus_id="s")
    d = p.data()
    assert d["status"]["state"] == "running" and d["status"]["phase"] == "map"
    assert d["remaining"]["round"] == [0]
    w = dict(zip(d["workers"]["worker"], zip(d["workers"]["chunk_ids"], d["workers"]["map"],
                                             d["workers"]["load"])))
    assert w["tcp://w:1"] == ("1", 2.5, 0.0) and w["tcp://w:2"] == ("0", 0.0, 1.0)
    p.log_event("mst-dist", {"event": "round", "run": "aa11", **round_rec(0, 100, 900, moved=5)})
    # a live round's bytes are the driver's estimate: their own column, nothing measured yet
    assert p.data()["rounds"]["bytes_estimate"] == [5] and p.data()["rounds"]["bytes_moved"] == [0]
    final = [round_rec(0, 100, 900, moved=77), round_rec(1, 50, 300)]
    p.log_event("mst-dist", {"event": "run-end", "run": "aa11", "total_seconds": 1.5, "n_rounds": 2,
                             "forest_edges": 99, "n_components": 1, "bytes_moved": 177, "rounds": final})
    d = p.data()
    assert d["status"]["state"] == "finished" and d["status"]["forest_edges"] == 99
    # the measured bytes arrive with the run's end; the estimate stays what it was
    assert d["rounds"]["round"] == [0, 1] and d["rounds"]["bytes_moved"] == [77, 100]
    assert d["rounds"]["bytes_estimate"] == [5, 0]
    # a new run becomes the current one; the last runs are kept, up to max_runs
    for i in range(10):
        p.log_event("mst-dist", {"event": "run-start", "run": f"{i:04x}", "workers": []})
    assert p.current == "0009" and len(p.runs) == p.max_runs


def test_worker_time_is_grouped_by_the_phase_each_task_key_names():
    """Every task's seconds go to the page's group of its step's phase (:data:`figures.WORK_PHASES`), and
    the groups are phases: one enum from the task keys to the page."""
    grouped = [p for ps in figures.WORK_PHASES.values() for p in ps]
    assert len(grouped) == len(set(grouped)) and all(isinstance(p, Phase) for p in grouped)
    assert set(figures.WORK) == {g.value for g in figures.WORK_PHASES} and set(PHASES) <= set(grouped)
    for step in Step:
        p = dashboard.MSTDashboard()
        p.log_event("mst-dist", {"event": "run-start", "run": "aa11", "workers": ["tcp://w:1"]})
        for stage in (None, ExchangeStage.SERVE):
            p.transition(task_key(step, 1, "aa11", index=0, stage=stage), "processing", "memory",
                         worker="tcp://w:1", startstops=[{"action": "compute", "start": 0, "stop": 2}],
                         stimulus_id="s")
        workers = p.data()["workers"]
        seconds = {g: workers[g][0] for g in figures.WORK}
        group = next((g.value for g, ps in figures.WORK_PHASES.items() if step.phase in ps), None)
        assert seconds == {g: (4.0 if g == group else 0.0) for g in figures.WORK}, step
        assert p.runs["aa11"]["tasks"] == {step.value: 1, f"{step.value}-serve": 1}


def test_the_live_phase_is_read_as_the_enum():
    p = dashboard.MSTDashboard()
    ev = {"round": 0, "phase": Phase.PASS, "components": 10, "edges": 4, "elapsed": 1.0, "pass": "pass 1",
          "chunks_done": 1, "chunks_total": 2, "bytes_read": 8}
    p.log_event("mst-dist", {"event": "run-start", "run": "aa11", "workers": []})
    p.log_event("mst-dist", {"event": "phase", "run": "aa11", **ev})
    assert p.status()["phase"] == "pass" and p.status()["chunks_total"] == 2
    assert figures.remaining_columns([], {**ev, "phase": Phase.MAP})["round"] == [0]
    assert figures.remaining_columns([], {**ev, "phase": Phase.LOAD})["round"] == []


def test_plugin_pickles_without_state():
    import pickle

    p = dashboard.MSTDashboard(max_runs=3)
    p.log_event("mst-dist", {"event": "run-start", "run": "aa11"})
    q = pickle.loads(pickle.dumps(p))
    assert q.runs == {} and q.max_runs == 3


# --------------------------------------------------------------------------
# registration
# --------------------------------------------------------------------------

def test_embedded_registers_page_and_menu():
    g = mst_dist.generate("grid", rows=20, cols=20, seed=1)
    with embedded(n_workers=1, threads_per_worker=2, dashboard_address="127.0.0.1:0") as c:
        sched = c.cluster.scheduler
        plugin = sched.plugins[dashboard.NAME]
        assert plugin.page
        res = mst_dist.minimum_spanning_forest(g, c)
        base = f"http://127.0.0.1:{sched.http_server.port}"
        status, html = fetch(base + "/mst")
        assert status == 200 and 'href="mst"' in html
        # the request made a Bokeh session whose document holds the run's rounds
        app = next(a for a in sched.http_application.applications
                   if dashboard.PAGE in getattr(a, "_applications", {}))
        doc = app.get_sessions(dashboard.PAGE)[-1].document
        assert doc.title == "Dask: MST"
        assert list(doc.get_model_by_name("mst-rounds").data["round"]) == [r.round for r in res.stats.rounds]
        _, menu = fetch(base + "/status")
        # listed in the dashboard's menu, by its name (not the top bar's title-cased "Mst")
        assert '<a href="mst">MST (minimum spanning forest)</a>' in menu and ">Mst<" not in menu
        d = plugin.data()
        assert d["rounds"]["round"] == [r.round for r in res.stats.rounds]
        assert d["status"]["state"] == "finished"
        # registering again (another client, a preload) is a no-op
        assert dashboard.register(c)
        assert sched.plugins[dashboard.NAME] is plugin
        assert dashboard.dashboard_link(c).endswith("/mst")


def test_no_dashboard_no_page():
    with embedded(n_workers=1, threads_per_worker=1, dashboard_address=None) as c:
        assert dashboard.NAME not in c.cluster.scheduler.plugins
        assert dashboard.add_page(c.cluster.scheduler) is False


@pytest.mark.processes
def test_preload_on_hand_started_scheduler(tmp_path):
    """``dask scheduler --preload mst_dist.diagnostics.dashboard``: page, menu and the rounds of a run."""
    from distributed import Client

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    sf = tmp_path / "scheduler.json"
    dask_cli = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    sched = subprocess.Popen([*dask_cli, "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
                              "127.0.0.1:0", "--scheduler-file", str(sf), "--preload", "mst_dist.diagnostics.dashboard"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not sf.exists() or not sf.read_text().strip():
            assert sched.poll() is None and time.monotonic() < deadline, "scheduler did not start"
            time.sleep(0.1)
        address = json.loads(sf.read_text())["address"]
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                   "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1",
                                   "--dashboard-address", "127.0.0.1:0"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with Client(address) as c:
            c.wait_for_workers(1, timeout=60)
            assert c.run_on_scheduler(lambda dask_scheduler: dashboard.NAME in dask_scheduler.plugins)
            port = c.scheduler_info()["services"]["dashboard"]
            g = mst_dist.generate("erdos_renyi", n=2000, m=8000, seed=3)
            res = mst_dist.minimum_spanning_forest(g, c, local_finish=0, partitions=2)
            rounds = c.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.plugins["mst-dist"].data()["rounds"]["round"])
            assert rounds == [r.round for r in res.stats.rounds]
        status, html = fetch(f"http://127.0.0.1:{port}/mst")
        assert status == 200 and 'href="mst"' in html
        assert 'href="mst"' in fetch(f"http://127.0.0.1:{port}/workers")[1]
    finally:
        for p in (worker, sched):
            if p is not None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()


# --------------------------------------------------------------------------
# the page in a real browser
# --------------------------------------------------------------------------

READY = ("window.Bokeh !== undefined && Bokeh.documents.length > 0 && Object.keys(Bokeh.index).length > 0 "
         "&& Bokeh.documents[0].get_model_by_name('mst-rounds') !== null "
         "&& Bokeh.documents[0].get_model_by_name('mst-rounds').data.round.length >= {n}")
PROBE = ("JSON.stringify({rounds: Array.from(Bokeh.documents[0].get_model_by_name('mst-rounds').data.round), "
         "status: Bokeh.documents[0].get_model_by_name('mst-status').text})")


def need_chromium():
    if chromium_path() is None:
        needs.unavailable("chromium is not installed: apt-get install chromium")


def count_color(png, hex_color, tol=8):
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("RGB"), dtype=np.int16)
    want = np.array([int(hex_color[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int((np.abs(rgb - want).max(axis=2) <= tol).sum())


@pytest.mark.slow
def test_page_in_chromium_during_a_run(tmp_path):
    """Chromium loads /mst while a run is between rounds; the page shows the plots with data,
    then follows the run to its end; the plugin's sources hold exactly the run's rounds."""
    need_chromium()
    g = mst_dist.generate("rmat", scale=14, edge_factor=8, seed=11)
    gate, at_gate, out = threading.Event(), threading.Event(), {}

    def progress(ev):  # hold the run at the start of round 3 until the page is captured
        if ev["round"] == 3 and ev["phase"] == "map" and not at_gate.is_set():
            at_gate.set()
            gate.wait(120)

    with embedded(n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0") as c:
        sched = c.cluster.scheduler
        url = f"http://127.0.0.1:{sched.http_server.port}/mst"

        def run():
            try:
                out["res"] = mst_dist.minimum_spanning_forest(g, c, partitions=4, local_finish=0,
                                                              progress=progress)
            except BaseException as e:  # pragma: no cover - reported below
                out["err"] = e
            finally:
                at_gate.set()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        png = str(tmp_path / "mst-dashboard.png")
        try:
            assert at_gate.wait(120)
            assert "err" not in out, out.get("err")
            with Chromium() as browser:
                mid = json.loads(browser.page(url, READY.format(n=2), PROBE, png=png))
                gate.set()
                t.join(120)
                assert "res" in out, out.get("err")
                res = out["res"]
                n = len(res.stats.rounds)
                done = READY.format(n=n) + (" && Bokeh.documents[0].get_model_by_name('mst-status')"
                                            ".text.includes('finished')")
                end = json.loads(browser.page(None, done, PROBE, settle=0.2))
        finally:
            gate.set()
            t.join(120)
        # mid-run: the rounds done so far drawn (0-2; the driver may publish round 2 late), the
        # header says round 3 is under way
        assert mid["rounds"] == list(range(len(mid["rounds"]))) and len(mid["rounds"]) >= 2
        assert "running" in mid["status"] and "round 3, phase map" in mid["status"]
        # the open page followed the run to its end (live updates)
        assert end["rounds"] == [r.round for r in res.stats.rounds]
        assert "finished" in end["status"] and f"{res.n_forest_edges:,} forest edges" in end["status"]
        # the plugin's data sources hold the rounds of that run (one source of truth)
        d = sched.plugins[dashboard.NAME].data()
        rs = res.stats.rounds
        assert d["rounds"]["round"] == [r.round for r in rs]
        assert d["rounds"]["components_before"] == [r.components_before for r in rs]
        assert d["rounds"]["edges_after"] == [r.edges_after for r in rs]
        assert d["rounds"]["bytes_moved"] == [r.bytes_moved for r in rs]  # measured, at the end
        assert d["rounds"]["map"] == pytest.approx([r.phase_seconds.get("map", 0.0) for r in rs])
        assert sum(d["workers"]["chunks"]) == res.stats.partitions
        assert len(d["workers"]["worker"]) == 2 and sum(d["workers"]["map"]) > 0
    # the screenshot shows the plots with data: bars and lines in their colours
    assert count_color(png, figures.COLORS["map"]) > 200       # time per phase, map part
    assert count_color(png, "#cab2d6") > 2000                   # bytes moved bars (the live estimate)
    assert count_color(png, "#d62728") > 50                     # components line
    assert count_color(png, figures.WORK_COLORS["load"]) > 500  # worker bars
    keep = os.environ.get("MST_DIST_SCREENSHOTS")
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(png, os.path.join(keep, "mst-dashboard.png"))


def test_streaming_pass_shown_on_the_page_and_the_terminal():
    """A streaming run's passes: pass name, chunks read of all, bytes read; on the page and the live line."""
    from mst_dist.diagnostics.progress import format_event

    p = dashboard.MSTDashboard()
    p.log_event("mst-dist", {"event": "run-start", "run": "bb22", "graph": "rmat", "n_vertices": 10,
                             "n_edges": 100, "partitions": 8, "workers": ["tcp://w:1"], "time": time.time(),
                             "kind": "spread-streaming"})
    ev = {"round": 0, "phase": "pass", "components": 10, "edges": 42, "elapsed": 1.5, "pass": "pass 1",
          "chunks_done": 3, "chunks_total": 8, "bytes_read": 3 * 2**20}
    p.log_event("mst-dist", {"event": "phase", "run": "bb22", **ev})
    st = p.status()
    assert (st["pass"], st["chunks_done"], st["chunks_total"], st["bytes_read"]) == ("pass 1", 3, 8, 3 * 2**20)
    html = figures.status_html(st)
    assert "streaming, pass 1" in html and "3 of 8 chunks read (3.0 MiB)" in html and "42 edges kept" in html
    assert "on 1 worker, a spread-streaming run<" in html  # the kind of run, as the run-start record names it
    line = format_event(ev)
    assert line.startswith("pass 1  3/8 chunks") and "42 edges kept" in line


#: The worker table's rows as the browser draws them (cell texts of SlickGrid's rows).
TABLE_ROWS = """JSON.stringify((() => {
  const tables = [];
  const walk = (v) => {
    if (v.model && v.model.name === 'mst-worker-table') {
      const root = v.shadow_el || v.el;
      tables.push(Array.from(root.querySelectorAll('.slick-row'))
        .map(r => Array.from(r.querySelectorAll('.slick-cell')).map(c => c.textContent)));
    }
    for (const c of (v.child_views || [])) walk(c);
  };
  for (const v of Object.values(Bokeh.index)) walk(v);
  return tables;
})())"""


@pytest.mark.slow
def test_worker_table_redrawn_for_a_second_run_in_chromium():
    """A page left open over two runs on the same workers: its worker table shows the second run's
    rows only (as many rows as before, other chunks: BokehJS alone would keep the old cells)."""
    need_chromium()
    g = mst_dist.generate("erdos_renyi", n=2000, m=8000, seed=3)
    with embedded(n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0") as c:
        sched = c.cluster.scheduler
        url = f"http://127.0.0.1:{sched.http_server.port}/mst"

        def chunk_ids():
            d = sched.plugins[dashboard.NAME].data()["workers"]
            return sorted(zip(d["label"], d["chunk_ids"]))

        def drawn(rows):
            return sorted((r[0].split("://", 1)[-1], r[3]) for r in rows)

        mst_dist.minimum_spanning_forest(g, c, partitions=6, local_finish=0)
        first = chunk_ids()
        ready = READY.format(n=1)
        with Chromium() as browser:
            (rows,) = json.loads(browser.page(url, ready, TABLE_ROWS))
            assert drawn(rows) == first and sum(int(r[2]) for r in rows) == 6
            mst_dist.minimum_spanning_forest(g, c, partitions=2, local_finish=0)
            second = chunk_ids()
            assert second != first
            # once the page's source holds the second run (it polls twice a second), the table
            # must show it
            ids = json.dumps(sorted(i for _, i in second), separators=(",", ":"))
            updated = (ready + " && JSON.stringify(Array.from(Bokeh.documents[0].get_model_by_name("
                       "'mst-workers').data.chunk_ids).sort()) === '%s'" % ids)
            (rows,) = json.loads(browser.page(None, updated, TABLE_ROWS, settle=1.0))
        assert len(rows) == 2 and drawn(rows) == second, rows
        assert sum(int(r[2]) for r in rows) == 2  # chunks held: the second run's two, no row of the first

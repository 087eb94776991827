"""The ``MST`` page of the Dask dashboard (``/mst``) and the scheduler plugin behind it.

The driver publishes small records on the scheduler's ``mst-dist`` event topic
(``run-start``, ``phase``, ``round``, ``run-end``: the same per-round
``RoundStats`` a result holds).  :class:`MSTDashboard`, a scheduler plugin,
keeps those of the last runs (its ``log_event`` hook) and, from the
scheduler's task transitions, which worker ran and holds which edge chunk and
how long its tasks took, grouped by the phase their keys name
(:data:`mst_dist.diagnostics.figures.WORK_PHASES`).  The page draws from that state (plugins hold state,
pages render it); it updates twice a second while a run goes and keeps the
last run's figures after it ends.

How the plugin gets onto a scheduler:

- mst-dist's own clusters (:func:`mst_dist.deploy.local.embedded`, the command
  line's local, SLURM, PBS and MPI clusters) register it when they start;
- a scheduler started by hand loads it with
  ``dask scheduler --preload mst_dist.diagnostics.dashboard`` (:func:`dask_setup`);
- any client can add it with :func:`register` (idempotent).

The page is added to the scheduler's dashboard (its routing HTTP application)
as one more Bokeh application and listed in the dashboard's "More..." menu as
"MST (minimum spanning forest)".  That uses
``distributed.dashboard`` internals (``BokehApplication``,
``template_variables``), checked against distributed 2026.8 by
``tests/diagnostics/test_dashboard.py``; without Bokeh, or with the dashboard off, the
plugin still records runs and there is no page.
"""
from __future__ import annotations

import logging
import time
from collections import OrderedDict

from distributed.diagnostics.plugin import SchedulerPlugin

from mst_dist.diagnostics import figures
from mst_dist.engine.keys import EVENT_TOPIC, parse_key
from mst_dist.phases import Phase, Step

__all__ = ["MSTDashboard", "NAME", "PAGE", "register", "install", "dask_setup", "add_page", "dashboard_link",
           "http_address"]

logger = logging.getLogger("mst_dist.diagnostics.dashboard")

#: The plugin's name on the scheduler, and the event topic the driver publishes on.
NAME = "mst-dist"
TOPIC = EVENT_TOPIC
#: Where the page is served (below the dashboard's prefix).
PAGE = "/mst"

#: The fields of a ``phase`` event the page keeps (a streaming run's passes add the last four).
PHASE_FIELDS = ("round", "phase", "components", "edges", "elapsed", "pass", "chunks_done", "chunks_total",
                "bytes_read")
#: A task's phase -> its per-worker time group on the page.
_GROUP = {p: group.value for group, phases in figures.WORK_PHASES.items() for p in phases}
#: Tasks whose result is (a version of) edge chunk ``index``: where they ran, the chunk is.
_CHUNK_STEPS = frozenset({Step.LOAD, Step.PREPARE, Step.MAP, Step.FILTER, Step.PASS})


class MSTDashboard(SchedulerPlugin):
    """Scheduler plugin: the state of the last mst-dist runs, for the ``/mst`` page.

    ``runs`` maps a run token to its record (newest last, at most
    ``max_runs``); ``current`` is the token of the latest run started.
    A run's record holds its published ``rounds`` (a round's ``bytes_moved``
    as the workers measured it once the run ends, ``bytes_estimate`` as the
    driver estimated it during the run), the latest ``phase``
    event, ``chunks`` (chunk index -> worker), ``seconds`` (worker -> task
    seconds by group) and ``tasks`` (tasks finished, by key name).
    :meth:`data` gives the page's columns for a run.
    """

    name = NAME
    idempotent = True

    def __init__(self, max_runs=8):
        self.max_runs = int(max_runs)
        self.runs = OrderedDict()
        self.current = None
        self.version = 0
        self.scheduler = None
        self.page = False

    def __getstate__(self):  # sent to the scheduler by Client.register_plugin: no live state
        return {"max_runs": self.max_runs}

    def __setstate__(self, state):
        self.__init__(state.get("max_runs", 8))

    # -- scheduler hooks -----------------------------------------------------

    async def start(self, scheduler):
        self.scheduler = scheduler
        self.page = add_page(scheduler)

    def log_event(self, topic, msg):
        if topic != TOPIC or not isinstance(msg, dict) or "run" not in msg:
            return
        event = msg.get("event")
        run = self._run(msg["run"], create=event == "run-start")
        if run is None:
            return
        now = time.time()
        if event == "run-start":
            run.update(state="running", started=msg.get("time", now), graph=msg.get("graph"),
                       n_vertices=msg.get("n_vertices"), n_edges=msg.get("n_edges"),
                       partitions=msg.get("partitions"), workers=list(msg.get("workers") or []),
                       kind=msg.get("kind"))
            self.current = msg["run"]
        elif event == "phase":
            run["phase"] = {k: msg.get(k) for k in PHASE_FIELDS if k in msg}
            run["phase_at"] = now
        elif event == "round":
            rec = {k: v for k, v in msg.items() if k not in ("event", "run")}
            # while the run goes, a round's bytes moved are the driver's estimate; the
            # workers' transfer logs measure them when it ends: two columns, never one
            # that changes its meaning
            rec["bytes_estimate"] = rec.pop("bytes_moved", 0) or 0
            rec["bytes_moved"] = 0
            run["rounds"][rec["round"]] = rec
        elif event == "run-end":
            run["state"] = "finished"
            run["end"] = {k: v for k, v in msg.items() if k not in ("event", "run", "rounds")}
            # the final per-round stats (measured bytes moved) replace the live ones
            for rec in msg.get("rounds") or ():
                live = run["rounds"].get(rec["round"]) or {}
                run["rounds"][rec["round"]] = {**rec, "bytes_estimate": live.get("bytes_estimate", 0)}
        else:
            return
        self.version += 1

    def transition(self, key, start, finish, *args, **kwargs):
        if finish != "memory" or start != "processing":
            return
        k = parse_key(key)
        if k is None:
            return
        run = self._run(k.token)
        worker = kwargs.get("worker")
        if run is None or worker is None:
            return
        run["tasks"][k.name] = run["tasks"].get(k.name, 0) + 1
        group = _GROUP.get(k.phase)
        if group is not None:
            secs = sum(s["stop"] - s["start"] for s in kwargs.get("startstops") or ()
                       if s.get("action") == "compute")
            w = run["seconds"].setdefault(worker, {})
            w[group] = w.get(group, 0.0) + secs
        if k.step in _CHUNK_STEPS and k.chunk is not None:
            run["chunks"][k.chunk] = worker
        self.version += 1

    def remove_worker(self, scheduler, worker, **kwargs):
        for run in self.runs.values():
            for i in [i for i, w in run["chunks"].items() if w == worker]:
                del run["chunks"][i]  # recomputed elsewhere (Dask lineage) or lost
        self.version += 1

    # -- state -----------------------------------------------------------------

    def _run(self, token, create=True):
        run = self.runs.get(token)
        if run is None and create:
            run = self.runs[token] = {"run": token, "state": "running", "started": time.time(),
                                      "rounds": {}, "chunks": {}, "seconds": {}, "phase": None,
                                      "workers": [], "tasks": {}}
            while len(self.runs) > self.max_runs:
                self.runs.popitem(last=False)
            if self.current is None:
                self.current = token
        return run

    def status(self, token=None):
        """The header's facts about a run (default: the latest)."""
        run = self.runs.get(token or self.current)
        if run is None:
            return None
        ph = run["phase"] or {}
        st = {"run": run["run"], "state": run["state"], "graph": run.get("graph"),
              "n_vertices": run.get("n_vertices"), "n_edges": run.get("n_edges"),
              "partitions": run.get("partitions"), "n_workers": len(run.get("workers") or ()),
              "kind": run.get("kind"),
              "round": ph.get("round", 0), "phase": ph.get("phase", "start"),
              "components": ph.get("components", run.get("n_vertices") or 0),
              "edges": ph.get("edges", run.get("n_edges") or 0),
              "elapsed": time.time() - run["started"], "rounds": len(run["rounds"])}
        if ph.get("phase") == Phase.PASS:  # a streaming run's pass over the source
            st.update({k: ph.get(k) for k in ("pass", "chunks_done", "chunks_total", "bytes_read")})
        if run["state"] == "finished":
            end = run.get("end") or {}
            st.update(total_seconds=end.get("total_seconds", 0.0), forest_edges=end.get("forest_edges"),
                      n_components=end.get("n_components"), rounds=end.get("n_rounds", len(run["rounds"])))
        return st

    def data(self, token=None):
        """The page's columns for a run (default: the latest): ``rounds``,
        ``remaining``, ``workers`` (column dicts) and ``status``."""
        run = self.runs.get(token or self.current)
        if run is None:
            return {"rounds": figures.round_columns([]), "remaining": figures.remaining_columns([]),
                    "workers": figures.worker_columns([], {}, {}), "status": None}
        rounds = list(run["rounds"].values())
        kinds = {}
        if self.scheduler is not None:
            for addr, ws in self.scheduler.workers.items():
                kinds[addr] = "GPU" if (ws.resources or {}).get("GPU") else "CPU"
        live = run["phase"] if run["state"] == "running" else None
        return {"rounds": figures.round_columns(rounds),
                "remaining": figures.remaining_columns(rounds, live),
                "workers": figures.worker_columns(run.get("workers") or [], run["chunks"], run["seconds"],
                                                  kinds),
                "status": self.status(token)}


# --------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------

class MSTPage:
    """One browser session's figures, refreshed from the plugin's state."""

    def __init__(self, scheduler, plugin=None):
        self.scheduler = scheduler
        self._plugin = plugin
        self.seen = None
        # host/GPU copy bars where the cluster has GPU workers (or the run copied to a GPU)
        gpu = any((ws.resources or {}).get("GPU") for ws in getattr(scheduler, "workers", {}).values())
        self.root, self.sources, self.parts = figures.build(self.plugin_data(), gpu=gpu or None)

    @property
    def plugin(self):
        return self.scheduler.plugins.get(NAME) or self._plugin

    def plugin_data(self):
        p = self.plugin
        return p.data() if p is not None else MSTDashboard().data()

    def update(self):
        p = self.plugin
        if p is None:
            return
        running = p.current in p.runs and p.runs[p.current]["state"] == "running"
        if self.seen == (p.current, p.version) and not running:
            return
        data = p.data()
        self.parts["status"].text = figures.status_html(data["status"])
        if self.seen != (p.current, p.version):
            for name, src in self.sources.items():
                if src.data != data[name]:
                    src.data = dict(data[name])
                    if name == "workers":
                        self._redraw_table()
            self.parts["workers"].y_range.factors = list(data["workers"]["label"])
        self.seen = (p.current, p.version)


    def _redraw_table(self):
        """Make the browser redraw the worker table from its source.

        BokehJS redraws a ``DataTable`` when its view's row indices change;
        new data with as many rows as before (the same workers, another run)
        leaves the old cells on screen.  Any change to the table model makes
        its view render again: a counter in its ``tags``.
        """
        table = self.parts["table"]
        table.tags = [int(table.tags[0]) + 1 if table.tags else 1]


def _mst_doc(scheduler, extra, doc):
    from distributed.dashboard.components import add_periodic_callback
    from distributed.dashboard.components.scheduler import BOKEH_THEME, env

    page = MSTPage(scheduler)
    page.update()
    doc.title = "Dask: MST"
    doc.add_root(page.root)
    doc.template = env.get_template("simple.html")
    doc.template_variables.update(extra)
    doc.theme = BOKEH_THEME
    add_periodic_callback(doc, page, 500)


def _bokeh_apps(scheduler):
    try:
        from bokeh.server.server import BokehTornado
    except ImportError:
        return None
    http = getattr(scheduler, "http_application", None)
    if http is None:
        return None
    return [a for a in http.applications if isinstance(a, BokehTornado)]


def add_page(scheduler):
    """Serve the ``MST`` page on ``scheduler``'s dashboard and list it in its menu ("More...").

    Returns whether the page is there: ``False`` when the scheduler runs no
    Bokeh dashboard (dashboard off, or Bokeh not installed).  Safe to call twice.
    Must run on the scheduler's event loop.
    """
    apps = _bokeh_apps(scheduler)
    if not apps:
        return False
    if any(PAGE in getattr(a, "_applications", {}) for a in apps):
        return True
    from tornado.ioloop import IOLoop

    from distributed.dashboard import scheduler as dash
    from distributed.dashboard.core import BokehApplication

    tv = dash.template_variables(scheduler)  # memoized: the dict every page renders its menu from
    # listed under "More...", by its own name: the top bar writes each page's url through
    # Jinja's ``title`` filter, which would show "Mst"
    if not any(p.get("url") == "mst" for p in tv["plots"]):
        tv["plots"].insert(0, {"url": "mst", "name": "MST (minimum spanning forest)"})
    prefix = getattr(apps[0], "_prefix", "") or ""
    app = BokehApplication({PAGE: _mst_doc}, scheduler, prefix=prefix, template_variables=tv)
    scheduler.http_application.add_application(app)
    app.initialize(IOLoop.current())
    app.start()
    logger.debug("MST dashboard page at %s%s", prefix, PAGE)
    return True


def install(scheduler):
    """Add the plugin (and its page) to a scheduler in this process; returns the plugin."""
    plugin = scheduler.plugins.get(NAME)
    if plugin is None:
        plugin = MSTDashboard()
        scheduler.add_plugin(plugin, name=NAME)
    plugin.scheduler = scheduler
    plugin.page = add_page(scheduler)
    return plugin


async def dask_setup(scheduler):
    """``dask scheduler --preload mst_dist.diagnostics.dashboard``: the plugin and its page on start."""
    install(scheduler)


def register(client, quiet=False):
    """Register the plugin on ``client``'s scheduler (a no-op where it is already there).

    The scheduler must be able to import ``mst_dist``.  Returns ``True`` on
    success; a scheduler that cannot take it is logged (at debug level with
    ``quiet``), never an error: the run goes on without a page.
    """
    try:
        client.register_plugin(MSTDashboard(), name=NAME)
        return True
    except Exception as e:  # e.g. a scheduler without mst_dist installed
        (logger.debug if quiet else logger.warning)(
            "could not add the MST dashboard page to the scheduler: %s", e)
        return False


def http_address(dask_scheduler):
    """``(host, port)`` the scheduler's web server listens on (``None`` without one); run on the scheduler."""
    server = getattr(dask_scheduler, "http_server", None)
    if server is None or "dashboard" not in getattr(dask_scheduler, "services", {}):
        return None
    return server.address, server.port


def dashboard_link(client):
    """The ``/mst`` page's URL for a client's cluster, or ``None`` without a dashboard.

    The host is the address the web server listens on (Dask's own link names
    the machine's outward address even when the server listens on 127.0.0.1
    only); a server on every interface (``0.0.0.0``, ``::``) is reached at
    the scheduler's host.  Dask's ``distributed.dashboard.link`` template
    still shapes the URL.
    """
    from distributed.utils import format_dashboard_link

    link = getattr(client, "dashboard_link", None)
    if not link:
        return None
    scheduler = getattr(getattr(client, "cluster", None), "scheduler", None)
    try:
        bound = (http_address(scheduler) if scheduler is not None
                 else client.run_on_scheduler(http_address))
    except Exception:  # pragma: no cover - a scheduler that cannot run our function
        bound = None
    if bound is not None:
        host, port = bound
        if host in ("0.0.0.0", "::", ""):
            address = client.scheduler.address
            host = address.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
            if address.startswith("inproc://"):
                host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        link = format_dashboard_link(host, port)
    return link.rsplit("/", 1)[0] + PAGE

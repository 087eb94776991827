"""Figures of a run's rounds: the dashboard's ``/mst`` page and ``mst-dist run --plot``.

One set of builders serves both views.  The ``*_columns`` functions turn the
driver's published records (the ``RoundStats.to_dict()`` of each round, the
``phase`` events, the per-worker task times gathered by the dashboard plugin)
into plain column dicts; they import nothing but the standard library, so the
scheduler plugin can hold them without Bokeh.  :func:`build` makes the Bokeh
figures over ``ColumnDataSource`` objects holding those columns (Bokeh is
imported there, on use: ``pip install mst-dist[dashboard]``).
"""
from __future__ import annotations

from mst_dist.result import PHASES

__all__ = ["STACK", "COLORS", "round_columns", "remaining_columns", "worker_columns",
           "status_html", "build", "standalone"]

#: What the time-per-phase bars stack: the five phases, then the rest of the
#: round's wall time (scheduling, transfers: ``wall - sum(phases)``).
STACK = (*PHASES, "overhead")

#: One colour per stacked part (Category10 for the phases, grey for overhead).
COLORS = {"map": "#1f77b4", "merge": "#ff7f0e", "contract": "#2ca02c", "filter-edges": "#d62728",
          "filter-nodes": "#9467bd", "overhead": "#bdbdbd"}

#: Per-worker task time groups (keys of :func:`worker_columns`), with colours.
WORK = ("load", "map", "merge", "local")
WORK_COLORS = {"load": "#8c564b", "map": "#1f77b4", "merge": "#ff7f0e", "local": "#17becf"}
WORK_LABELS = {"load": "load + prepare", "map": "map", "merge": "merge + contract",
               "local": "single-task solve"}


def round_columns(rounds):
    """Columns of the per-round bars: one row per round record, in round order."""
    rounds = sorted(rounds, key=lambda r: r["round"])
    cols = {"round": [], "mode": [], "components_before": [], "components_after": [],
            "edges_before": [], "edges_after": [], "forest_edges": [], "wall_seconds": [],
            "bytes_moved": [], "tasks": [], "h2d_bytes": [], "d2h_bytes": [], **{p: [] for p in STACK}}
    for r in rounds:
        ps = r.get("phase_seconds") or {}
        for k in ("round", "mode", "components_before", "components_after", "edges_before",
                  "edges_after", "forest_edges", "wall_seconds", "bytes_moved", "tasks",
                  "h2d_bytes", "d2h_bytes"):
            cols[k].append(r.get(k, 0))
        for p in PHASES:
            cols[p].append(float(ps.get(p, 0.0)))
        cols["overhead"].append(max(0.0, float(r.get("wall_seconds", 0.0)) - sum(ps.values())))
    return cols


def remaining_columns(rounds, phase=None):
    """Components and edges left at the start of each round (log-scale lines).

    ``phase`` (the latest ``phase`` event) adds the round under way before its
    record arrives, so the lines move while a round runs.  Counts of zero are
    left out (a log scale has no zero).
    """
    rounds = sorted(rounds, key=lambda r: r["round"])
    pts = {r["round"]: (r["components_before"], r["edges_before"]) for r in rounds}
    if rounds:
        last = rounds[-1]
        pts.setdefault(last["round"] + 1, (last["components_after"], last["edges_after"]))
    if phase and isinstance(phase.get("round"), int) and phase.get("phase") in ("map", "local"):
        pts.setdefault(phase["round"], (phase.get("components", 0), phase.get("edges", 0)))
    cols = {"round": [], "components": [], "edges": []}
    for k in sorted(pts):
        c, e = pts[k]
        if c <= 0 and e <= 0:
            continue
        cols["round"].append(k)
        cols["components"].append(c if c > 0 else float("nan"))
        cols["edges"].append(e if e > 0 else float("nan"))
    return cols


def _ranges(ids):
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2, 5, 7-8"``."""
    ids = sorted(ids)
    out, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ", ".join(out)


def worker_columns(workers, chunks, seconds, kinds=None):
    """One row per worker: its kind, the chunks it holds, its task seconds by group.

    ``workers`` lists addresses; ``chunks`` maps chunk index -> worker;
    ``seconds`` maps worker -> {group: seconds} (groups of :data:`WORK`);
    ``kinds`` maps worker -> "CPU"/"GPU".
    """
    kinds = kinds or {}
    names = list(dict.fromkeys([*workers, *chunks.values(), *seconds]))
    held = {w: [] for w in names}
    for i, w in chunks.items():
        held[w].append(i)
    total_map = sum(s.get("map", 0.0) for s in seconds.values())
    cols = {"worker": [], "label": [], "kind": [], "chunks": [], "chunk_ids": [], "map_share": [],
            **{g: [] for g in WORK}}
    for w in names:
        s = seconds.get(w, {})
        cols["worker"].append(w)
        cols["label"].append(w.split("://", 1)[-1])
        cols["kind"].append(kinds.get(w, "CPU"))
        cols["chunks"].append(len(held[w]))
        cols["chunk_ids"].append(_ranges(held[w]))
        for g in WORK:
            cols[g].append(float(s.get(g, 0.0)))
        cols["map_share"].append(100.0 * s.get("map", 0.0) / total_map if total_map else 0.0)
    return cols


def _n(x):
    return f"{x:,}" if isinstance(x, int) else str(x)


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


def status_html(status):
    """The page's header: the run, its current round and phase, or its result."""
    if not status:
        return ("<h3 style='margin:4px 0'>MST: minimum spanning forest</h3>"
                "<p>No mst-dist run on this cluster yet.</p>")
    state = status.get("state", "running")
    head = (f"<h3 style='margin:4px 0'>MST: run {status.get('run', '?')} on "
            f"{status.get('graph', 'graph')} &mdash; {state}</h3>")
    facts = [f"{_n(status.get('n_vertices', '?'))} vertices, {_n(status.get('n_edges', '?'))} edges, "
             f"{_n(status.get('partitions', '?'))} chunks on {_n(status.get('n_workers', '?'))} worker(s)"]
    if state == "running" and status.get("phase") == "pass":
        facts.append(f"<b>streaming, {status.get('pass', 'pass')}</b>: {_n(status.get('chunks_done', 0))} of "
                     f"{_n(status.get('chunks_total', 0))} chunks read ({_bytes(status.get('bytes_read') or 0)}), "
                     f"{_n(status.get('edges', 0))} edges kept; {status.get('elapsed', 0.0):.1f} s elapsed")
    elif state == "running":
        facts.append(f"<b>round {status.get('round', 0)}, phase {status.get('phase', '?')}</b>: "
                     f"{_n(status.get('components', 0))} components, {_n(status.get('edges', 0))} edges "
                     f"left; {status.get('elapsed', 0.0):.1f} s elapsed")
    else:
        facts.append(f"<b>{_n(status.get('rounds', 0))} rounds in "
                     f"{status.get('total_seconds', 0.0):.2f} s</b>: "
                     f"{_n(status.get('forest_edges', 0))} forest edges, "
                     f"{_n(status.get('n_components', 0))} components")
    return head + "".join(f"<p style='margin:2px 0'>{f}</p>" for f in facts)


def _sources(data):
    from bokeh.models import ColumnDataSource

    return {name: ColumnDataSource(data=dict(cols), name=f"mst-{name}") for name, cols in data.items()}


def build(data, *, sizing_mode="stretch_width", height=300, width=700, with_workers=True):
    """The figures over ``ColumnDataSource`` objects of ``data``.

    ``data`` holds ``rounds``, ``remaining`` and ``workers`` column dicts and a
    ``status`` dict.  Returns ``(root, sources, parts)``: the layout, the sources
    by name (update their ``.data`` to move the figures) and the models by name
    (``status`` Div, ``remaining``, ``phases``, ``bytes``, ``workers``
    figures, ``table``).  ``with_workers=False`` leaves the per-worker figure
    and table out of the layout.
    """
    from bokeh.layouts import column, row
    from bokeh.models import (BasicTicker, BasicTickFormatter, DataTable, Div, FactorRange, HoverTool,
                              NumberFormatter, NumeralTickFormatter, TableColumn)
    from bokeh.plotting import figure

    sources = _sources({k: data[k] for k in ("rounds", "remaining", "workers")})
    size = dict(height=height, sizing_mode=sizing_mode) if sizing_mode else dict(height=height, width=width)

    status = Div(text=status_html(data.get("status")), name="mst-status",
                 sizing_mode=sizing_mode or "fixed", **({} if sizing_mode else {"width": 2 * width}))

    rem = figure(title="Components and edges left, by round (log scale)", y_axis_type="log",
                 x_axis_label="round", tools="pan,box_zoom,wheel_zoom,reset,save", **size)
    for field, color in (("edges", "#1f77b4"), ("components", "#d62728")):
        rem.line("round", field, source=sources["remaining"], color=color, line_width=2,
                 legend_label=field)
        rem.scatter("round", field, source=sources["remaining"], color=color, size=7,
                    legend_label=field)
    rem.yaxis.formatter = BasicTickFormatter(use_scientific=True)
    rem.add_tools(HoverTool(tooltips=[("round", "@round"), ("components", "@components{0,0}"),
                                      ("edges", "@edges{0,0}")]))
    rem.legend.location = "top_right"

    ph = figure(title="Time per phase, by round (s); overhead = wall - phases",
                x_axis_label="round", y_axis_label="seconds",
                tools="pan,box_zoom,wheel_zoom,reset,save", **size)
    ph.vbar_stack(list(STACK), x="round", width=0.8, source=sources["rounds"],
                  color=[COLORS[p] for p in STACK], legend_label=list(STACK))
    ph.add_tools(HoverTool(tooltips=[("round", "@round (@mode)"), ("wall", "@wall_seconds{0.000} s"),
                                     *[(p, "@{%s}{0.000}" % p) for p in STACK]]))
    ph.add_layout(ph.legend[0], "right")
    ph.y_range.start = 0

    by = figure(title="Bytes moved between workers, and to/from GPUs, by round", x_axis_label="round",
                tools="pan,box_zoom,wheel_zoom,reset,save", **size)
    by.vbar_stack(["bytes_moved", "h2d_bytes", "d2h_bytes"], x="round", width=0.8, source=sources["rounds"],
                  color=["#6a3d9a", "#33a02c", "#b2df8a"],
                  legend_label=["between workers", "host → GPU", "GPU → host"])
    by.yaxis.formatter = NumeralTickFormatter(format="0.0 b")
    by.y_range.start = 0
    by.add_tools(HoverTool(tooltips=[("round", "@round"), ("moved", "@bytes_moved{0.0 b}"),
                                     ("to GPU", "@h2d_bytes{0.0 b}"), ("from GPU", "@d2h_bytes{0.0 b}")]))
    by.add_layout(by.legend[0], "right")

    wk = figure(title="Task seconds per worker (chunks held: table below)", x_axis_label="seconds",
                y_range=FactorRange(factors=list(data["workers"]["label"])),
                tools="pan,box_zoom,wheel_zoom,reset,save", **size)
    wk.hbar_stack(list(WORK), y="label", height=0.7, source=sources["workers"],
                  color=[WORK_COLORS[g] for g in WORK], legend_label=[WORK_LABELS[g] for g in WORK])
    wk.add_tools(HoverTool(tooltips=[("worker", "@worker (@kind)"), ("chunks", "@chunks: @chunk_ids"),
                                     ("map share", "@map_share{0.0} %"),
                                     *[(WORK_LABELS[g], "@{%s}{0.000} s" % g) for g in WORK]]))
    wk.add_layout(wk.legend[0], "right")
    wk.x_range.start = 0
    for fig in (rem, ph, by):
        fig.xaxis.ticker = BasicTicker(min_interval=1, desired_num_ticks=10)  # whole rounds
        fig.xaxis.minor_tick_line_color = None

    secs = NumberFormatter(format="0.000")
    table = DataTable(source=sources["workers"], index_position=None, height=140,
                      sizing_mode=sizing_mode or "fixed", **({} if sizing_mode else {"width": 2 * width}),
                      columns=[TableColumn(field="worker", title="worker"),
                               TableColumn(field="kind", title="kind", width=50),
                               TableColumn(field="chunks", title="chunks", width=60),
                               TableColumn(field="chunk_ids", title="chunk ids"),
                               TableColumn(field="map", title="map s", formatter=secs, width=80),
                               TableColumn(field="map_share", title="map share %",
                                           formatter=NumberFormatter(format="0.0"), width=90),
                               TableColumn(field="load", title="load s", formatter=secs, width=80),
                               TableColumn(field="merge", title="merge s", formatter=secs, width=80),
                               TableColumn(field="local", title="solve s", formatter=secs, width=80)])
    if with_workers:
        root = column(status, row(rem, ph, sizing_mode=sizing_mode), row(by, wk, sizing_mode=sizing_mode),
                      table, sizing_mode=sizing_mode)
    else:
        root = column(status, row(rem, ph, sizing_mode=sizing_mode), by, sizing_mode=sizing_mode)
    parts = {"status": status, "remaining": rem, "phases": ph, "bytes": by, "workers": wk, "table": table}
    return root, sources, parts


def standalone(rounds, status=None, workers=None):
    """The figures of a finished run as a layout for an HTML file (``--plot``)."""
    data = {"rounds": round_columns(rounds), "remaining": remaining_columns(rounds),
            "workers": workers or worker_columns([], {}, {}), "status": status}
    root, _, _ = build(data, sizing_mode=None, height=320, width=620, with_workers=workers is not None)
    return root

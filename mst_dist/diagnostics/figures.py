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

from mst_dist.phases import Phase
from mst_dist.result import PHASES

__all__ = ["STACK", "COLORS", "round_columns", "remaining_columns", "worker_columns",
           "status_html", "build", "standalone"]

#: What the time-per-phase bars stack (as plain strings, Bokeh's column names): the five phases, then the
#: rest of the round's wall time (scheduling, transfers: ``wall - sum(phases)``).
STACK = (*(p.value for p in PHASES), "overhead")

#: One colour per stacked part (Category10 for the phases, grey for overhead).
COLORS = {Phase.MAP: "#1f77b4", Phase.MERGE: "#ff7f0e", Phase.CONTRACT: "#2ca02c", Phase.FILTER_EDGES: "#d62728",
          Phase.FILTER_NODES: "#9467bd", "overhead": "#bdbdbd"}

#: Per-worker task time groups (keys of :func:`worker_columns`), each named by its first phase: the
#: phases whose tasks' seconds it adds up.
WORK_PHASES = {Phase.LOAD: (Phase.LOAD, Phase.PASS), Phase.MAP: (Phase.MAP,),
               Phase.MERGE: (Phase.MERGE, Phase.CONTRACT, Phase.FILTER_EDGES, Phase.FILTER_NODES),
               Phase.LOCAL: (Phase.LOCAL,)}
WORK = tuple(g.value for g in WORK_PHASES)
WORK_COLORS = {Phase.LOAD: "#8c564b", Phase.MAP: "#1f77b4", Phase.MERGE: "#ff7f0e", Phase.LOCAL: "#17becf"}
WORK_LABELS = {Phase.LOAD: "load + prepare", Phase.MAP: "map", Phase.MERGE: "merge + contract",
               Phase.LOCAL: "single-task solve"}


def round_columns(rounds):
    """Columns of the per-round bars: one row per round record, in round order.

    ``bytes_moved`` is what the workers' transfer logs measured (a run's
    final records); ``bytes_estimate`` is the driver's estimate published
    while the run went (the dashboard keeps it; 0 where there was none).
    """
    rounds = sorted(rounds, key=lambda r: r["round"])
    cols = {"round": [], "mode": [], "components_before": [], "components_after": [],
            "edges_before": [], "edges_after": [], "forest_edges": [], "wall_seconds": [],
            "bytes_moved": [], "bytes_estimate": [], "tasks": [], "h2d_bytes": [], "d2h_bytes": [],
            **{p: [] for p in STACK}}
    for r in rounds:
        ps = r.get("phase_seconds") or {}
        for k in ("round", "mode", "components_before", "components_after", "edges_before",
                  "edges_after", "forest_edges", "wall_seconds", "bytes_moved", "bytes_estimate",
                  "tasks", "h2d_bytes", "d2h_bytes"):
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
    if phase and isinstance(phase.get("round"), int) and phase.get("phase") in (Phase.MAP, Phase.LOCAL):
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
    total_map = sum(s.get(Phase.MAP, 0.0) for s in seconds.values())
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
        cols["map_share"].append(100.0 * s.get(Phase.MAP, 0.0) / total_map if total_map else 0.0)
    return cols


def _n(x):
    return f"{x:,}" if isinstance(x, int) else str(x)


def _count(x, noun, plural=None):
    """``1 component``, ``2 components``, ``? components``."""
    return f"{_n(x)} {noun if x == 1 else (plural or noun + 's')}"


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
    facts = [f"{_count(status.get('n_vertices', '?'), 'vertex', 'vertices')}, "
             f"{_count(status.get('n_edges', '?'), 'edge')}, {_count(status.get('partitions', '?'), 'chunk')} "
             f"on {_count(status.get('n_workers', '?'), 'worker')}"
             + (f", a {status['kind']} run" if status.get("kind") else "")]
    if state == "running" and status.get("phase") == Phase.PASS:
        facts.append(f"<b>streaming, {status.get('pass', 'pass')}</b>: {_n(status.get('chunks_done', 0))} of "
                     f"{_n(status.get('chunks_total', 0))} chunks read ({_bytes(status.get('bytes_read') or 0)}), "
                     f"{_n(status.get('edges', 0))} edges kept; {status.get('elapsed', 0.0):.1f} s elapsed")
    elif state == "running":
        facts.append(f"<b>round {status.get('round', 0)}, phase {status.get('phase', '?')}</b>: "
                     f"{_count(status.get('components', 0), 'component')}, "
                     f"{_count(status.get('edges', 0), 'edge')} left; {status.get('elapsed', 0.0):.1f} s elapsed")
    else:
        facts.append(f"<b>{_count(status.get('rounds', 0), 'round')} in "
                     f"{status.get('total_seconds', 0.0):.2f} s</b>: "
                     f"{_count(status.get('forest_edges', 0), 'forest edge')}, "
                     f"{_count(status.get('n_components', 0), 'component')}")
    return head + "".join(f"<p style='margin:2px 0'>{f}</p>" for f in facts)


def _sources(data):
    from bokeh.models import ColumnDataSource

    return {name: ColumnDataSource(data=dict(cols), name=f"mst-{name}") for name, cols in data.items()}


#: Tick labels of the log-scale counts: ``1``, ``100``, ``10k``, ``1M``, ``1B``.
_COUNT_TICKS = """
const a = Math.abs(tick);
for (const [v, s] of [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "k"]]) {
    if (a >= v) { return (tick / v).toLocaleString("en-US", {maximumFractionDigits: 1}) + s; }
}
return tick.toLocaleString("en-US", {maximumFractionDigits: 2});
"""


def _any(cols, *names):
    return any(v for n in names for v in cols.get(n, ()) if v == v)  # NaN is not "some"


def build(data, *, sizing_mode="stretch_width", height=300, width=700, with_workers=True, static=False,
          gpu=None):
    """The figures over ``ColumnDataSource`` objects of ``data``.

    ``data`` holds ``rounds``, ``remaining`` and ``workers`` column dicts and a
    ``status`` dict.  Returns ``(root, sources, parts)``: the layout, the sources
    by name (update their ``.data`` to move the figures) and the models by name
    (``status`` Div, ``remaining``, ``phases``, ``bytes``, ``workers``
    figures, ``table``; a panel left out is ``None``).  ``with_workers=False``
    leaves the per-worker figure and table out of the layout.

    ``static=True`` draws a finished run for a file or an image: toolbars
    show only under the mouse (none in a screenshot), the bytes panel is left
    out when nothing moved, the estimate bars when there is no estimate, and
    an odd panel out takes the whole row.  ``gpu`` says whether the bytes panel
    has host/GPU copy bars (default: when ``data`` has any).
    """
    from bokeh.layouts import column, row
    from bokeh.models import BasicTicker, Div

    rounds = data["rounds"]
    if gpu is None:
        gpu = _any(rounds, "h2d_bytes", "d2h_bytes") or "GPU" in data["workers"].get("kind", ())
    estimate = not static or _any(rounds, "bytes_estimate")
    with_bytes = not static or gpu or _any(rounds, "bytes_moved", "bytes_estimate")

    sources = _sources({k: data[k] for k in ("rounds", "remaining", "workers")})
    size = dict(height=height, sizing_mode=sizing_mode) if sizing_mode else dict(height=height, width=width)
    wide = {} if sizing_mode else {"width": 2 * width}
    status = Div(text=status_html(data.get("status")), name="mst-status",
                 sizing_mode=sizing_mode or "fixed", **wide)
    rem = _remaining_figure(sources, size)
    ph = _phases_figure(sources, size)
    by = _bytes_figure(sources, size, estimate=estimate, gpu=gpu) if with_bytes else None
    wk = _workers_figure(sources, size, data["workers"]["label"])
    for fig in (rem, ph, by):
        if fig is not None:
            fig.xaxis.ticker = BasicTicker(min_interval=1, desired_num_ticks=10)  # whole rounds
            fig.xaxis.minor_tick_line_color = None
    if static:
        for fig in (rem, ph, by, wk):
            if fig is not None:
                fig.toolbar.autohide = True  # tools under the mouse in the file; none in an image
    table = _worker_table(sources, sizing_mode, wide)
    panels = [f for f in (rem, ph, by, wk if with_workers else None) if f is not None]
    if len(panels) % 2 and not sizing_mode:
        panels[-1].width = 2 * width  # no empty cell beside the last panel
    rows = [row(*panels[i:i + 2], sizing_mode=sizing_mode) for i in range(0, len(panels), 2)]
    root = column(status, *rows, *([table] if with_workers else []), sizing_mode=sizing_mode)
    parts = {"status": status, "remaining": rem, "phases": ph, "bytes": by,
             "workers": wk if with_workers else None, "table": table if with_workers else None}
    return root, sources, parts


_TOOLS = "pan,box_zoom,wheel_zoom,reset,save"


def _legend_right(fig):
    """Put the figure's legend beside the plot, never over the data; a click hides a series."""
    fig.add_layout(fig.legend[0], "right")
    fig.legend[0].click_policy = "hide"


def _remaining_figure(sources, size):
    """Components and edges left after each round, on a log scale."""
    from bokeh.models import CustomJSTickFormatter, HoverTool
    from bokeh.plotting import figure

    rem = figure(title="Components and edges left, by round (log scale)", y_axis_type="log",
                 x_axis_label="round", tools=_TOOLS, **size)
    for field, color in (("edges", "#1f77b4"), ("components", "#d62728")):
        rem.line("round", field, source=sources["remaining"], color=color, line_width=2,
                 legend_label=field)
        rem.scatter("round", field, source=sources["remaining"], color=color, size=7,
                    legend_label=field)
    rem.yaxis.formatter = CustomJSTickFormatter(code=_COUNT_TICKS)
    rem.add_tools(HoverTool(tooltips=[("round", "@round"), ("components", "@components{0,0}"),
                                      ("edges", "@edges{0,0}")]))
    _legend_right(rem)
    return rem


def _phases_figure(sources, size):
    """Seconds per phase of each round, stacked."""
    from bokeh.models import HoverTool
    from bokeh.plotting import figure

    ph = figure(title="Time per phase, by round (s); overhead = wall - phases",
                x_axis_label="round", y_axis_label="seconds", tools=_TOOLS, **size)
    ph.vbar_stack(list(STACK), x="round", width=0.8, source=sources["rounds"],
                  color=[COLORS[p] for p in STACK], legend_label=list(STACK))
    ph.add_tools(HoverTool(tooltips=[("round", "@round (@mode)"), ("wall", "@wall_seconds{0.000} s"),
                                     *[(p, "@{%s}{0.000}" % p) for p in STACK]]))
    _legend_right(ph)
    ph.y_range.start = 0
    return ph


def _bytes_figure(sources, size, *, estimate, gpu):
    """Bytes moved between workers per round: the live estimate, the measure, host/GPU copies."""
    from bokeh.models import AdaptiveTicker, HoverTool, NumeralTickFormatter
    from bokeh.plotting import figure

    title = "Bytes moved between workers, by round"
    if estimate:
        title += ": estimate while a run goes, measured when it ends"
    if gpu:
        title += "; host/GPU copies"
    by = figure(title=title, x_axis_label="round", tools=_TOOLS, **size)
    tips = [("round", "@round")]
    if estimate:  # the driver's live estimate (candidates + round maps), a wide pale bar behind
        by.vbar(x="round", top="bytes_estimate", width=0.8, source=sources["rounds"], color="#cab2d6",
                legend_label="between workers, estimate")
        tips.append(("estimate", "@bytes_estimate{0.0 b}"))
    stack, colors = ["bytes_moved"], ["#6a3d9a"]
    labels = ["between workers, measured" if estimate else "between workers"]
    if gpu:
        stack += ["h2d_bytes", "d2h_bytes"]
        colors += ["#33a02c", "#b2df8a"]
        labels += ["host → GPU", "GPU → host"]
        tips += [("to GPU", "@h2d_bytes{0.0 b}"), ("from GPU", "@d2h_bytes{0.0 b}")]
    by.vbar_stack(stack, x="round", width=0.5 if estimate else 0.8, source=sources["rounds"],
                  color=colors, legend_label=labels)
    tips.insert(1, ("measured", "@bytes_moved{0.0 b}"))
    by.yaxis.ticker = AdaptiveTicker(base=2, mantissas=[1], min_interval=1, desired_num_ticks=6)
    by.yaxis.formatter = NumeralTickFormatter(format="0 b")  # powers of two: 64 KiB, 128 KiB
    by.y_range.start = 0
    by.add_tools(HoverTool(tooltips=tips))
    _legend_right(by)
    return by


def _workers_figure(sources, size, labels):
    """Task seconds of each worker, stacked by kind of work."""
    from bokeh.models import FactorRange, HoverTool
    from bokeh.plotting import figure

    wk = figure(title="Task seconds per worker (chunks held: table below)", x_axis_label="seconds",
                y_range=FactorRange(factors=list(labels)), tools=_TOOLS, **size)
    wk.hbar_stack(list(WORK), y="label", height=0.7, source=sources["workers"],
                  color=[WORK_COLORS[g] for g in WORK], legend_label=[WORK_LABELS[g] for g in WORK])
    wk.add_tools(HoverTool(tooltips=[("worker", "@worker (@kind)"), ("chunks", "@chunks: @chunk_ids"),
                                     ("map share", "@map_share{0.0} %"),
                                     *[(WORK_LABELS[g], "@{%s}{0.000} s" % g) for g in WORK]]))
    _legend_right(wk)
    wk.x_range.start = 0
    return wk


def _worker_table(sources, sizing_mode, wide):
    """The table of workers: chunks held and seconds per kind of work."""
    from bokeh.models import DataTable, NumberFormatter, TableColumn

    secs = NumberFormatter(format="0.000")
    return DataTable(source=sources["workers"], index_position=None, height=140, name="mst-worker-table",
                     sizing_mode=sizing_mode or "fixed", **wide,
                     columns=[TableColumn(field="worker", title="worker"),
                              TableColumn(field="kind", title="kind", width=50),
                              TableColumn(field="chunks", title="chunks", width=60),
                              TableColumn(field="chunk_ids", title="chunk ids"),
                              TableColumn(field=Phase.MAP.value, title="map s", formatter=secs, width=80),
                              TableColumn(field="map_share", title="map share %",
                                          formatter=NumberFormatter(format="0.0"), width=90),
                              TableColumn(field=Phase.LOAD.value, title="load s", formatter=secs, width=80),
                              TableColumn(field=Phase.MERGE.value, title="merge s", formatter=secs, width=80),
                              TableColumn(field=Phase.LOCAL.value, title="solve s", formatter=secs, width=80)])


def standalone(rounds, status=None, workers=None):
    """The figures of a finished run as a layout for an HTML file or an image (``--plot``)."""
    data = {"rounds": round_columns(rounds), "remaining": remaining_columns(rounds),
            "workers": workers or worker_columns([], {}, {}), "status": status}
    root, _, _ = build(data, sizing_mode=None, height=320, width=620, with_workers=workers is not None,
                       static=True)
    return root

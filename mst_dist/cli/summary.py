"""The run's summary, its passes (a streamed run) and per-round table, as ``mst-dist run`` prints them.

The round table groups a run's rounds by the pass they belong to, so that
no count appears to go backwards:

- ``light``: the rounds on the lightest edges only (a light-edge pass; the
  heavy edges wait, and are counted in ``edges left``);
- ``heavy``: the heavy edges relabelled once by the light pass's result, the
  ones inside a component dropped;
- ``main``: the rounds on every edge left;
- ``pass 1``, ``pass 2``, ...: a streamed run's passes over the source, each
  solving the slice of the order it kept.

``components`` is the number of trees of the forest found so far (vertices
less forest edges), so it only falls, and the last row's count is the
summary's.  ``edges left`` counts the edges still to be looked at in the pass
(light and waiting heavy edges alike).  The compact table (the default) fits
100 columns; ``wide=True`` (``mst-dist run --wide``) adds every phase's
seconds, the overhead, each step's own counts and the host/device copies.
Columns that do not fit the console are left out, last ones first; a number is
never cut.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["print_summary", "passes_table", "round_table", "round_rows", "RoundRow"]


def _seconds(s):
    return f"{s:.3f}"


def _gib(n):
    return f"{n / 2**30:.3f}"


def passes_table(passes):
    """The passes of a streamed run (:class:`~mst_dist.result.PassStats`) as a rich table.

    One row per pass (the sample, then ``pass 1``, ...): chunks read, edges
    and GiB read from the source, edges kept for the pass's solve, seconds;
    a total row under them.
    """
    from rich.table import Table

    t = Table(title="passes", title_justify="left", show_edge=False, header_style="bold")
    t.add_column("pass", justify="left", no_wrap=True)
    for col in ("chunks", "edges read", "GiB read", "edges kept", "seconds"):
        t.add_column(col, justify="right", no_wrap=True)
    for p in passes:
        t.add_row(p.name, f"{p.chunks:,}", f"{p.edges_read:,}", _gib(p.bytes_read), f"{p.edges_kept:,}",
                  _seconds(p.seconds))
    t.add_section()
    t.add_row("total", f"{sum(p.chunks for p in passes):,}", f"{sum(p.edges_read for p in passes):,}",
              _gib(sum(p.bytes_read for p in passes)), f"{sum(p.edges_kept for p in passes):,}",
              _seconds(sum(p.seconds for p in passes)))
    return t


@dataclass
class RoundRow:
    """One row of the round table: a round's record and where it stands in the run.

    ``group``: the pass it belongs to (``light``, ``heavy``, ``main``, or a
    streamed run's ``pass 1``, ``pass 1 light``, ...); ``components``: trees
    of the forest after it (vertices less forest edges so far);
    ``edges_left``: edges of the pass still to look at after it (a light
    round counts the heavy edges waiting for it).
    """

    group: str
    stats: object
    components: int
    edges_left: int


def _kind(r):
    if r.mode == "local-filter":
        return "filter"
    return "light" if r.mode.endswith("-light") else "main"


def _passes(rounds, streamed):
    """A streamed run's rounds split by pass: each pass's solve ends with no component left."""
    if not streamed:
        return [list(rounds)]
    out = [[]]
    for r in rounds:
        out[-1].append(r)
        if r.components_after == 0 and r.mode not in ("local-filter",):
            out.append([])
    return [p for p in out if p]


def round_rows(stats, n_vertices):
    """The rows of the round table (:class:`RoundRow`), grouped by pass (see the module docstring)."""
    rows = []
    forest = 0
    passes = _passes(stats.rounds, stats.streamed)
    for k, rounds in enumerate(passes, 1):
        prefix = f"pass {k}" if stats.streamed else ""
        kinds = [_kind(r) for r in rounds]
        # a filter right after light rounds relabels the heavy edges; any other is the pending
        # filter-edges of the round before it (part of the main rounds)
        groups = []
        for i, kd in enumerate(kinds):
            if kd == "filter":
                kd = "heavy" if i and kinds[i - 1] == "light" else "main"
            groups.append(kd)
        for i, (r, g) in enumerate(zip(rounds, groups)):
            waiting = 0
            if g == "light":
                # the heavy edges wait for the light pass: the first row after it starts from them
                j = next((j for j in range(i + 1, len(rounds)) if groups[j] != "light"), None)
                waiting = rounds[j].edges_before if j is not None else 0
            forest += r.forest_edges
            name = g if not prefix else (prefix if g == "main" else f"{prefix} {g}")
            rows.append(RoundRow(name, r, n_vertices - forest, r.edges_after + waiting))
    return rows


def _columns(wide, device, moved):
    """``(header, justify, cell(row) -> str)`` of the round table, most important first."""
    from dask.utils import format_bytes

    from mst_dist.result import PHASES

    cols = [("round", "right", lambda w: str(w.stats.round)),
            ("components", "right", lambda w: f"{w.components:,}"),
            ("edges left", "right", lambda w: f"{w.edges_left:,}"),
            ("forest edges", "right", lambda w: f"{w.stats.forest_edges:,}")]
    if wide:
        cols += [(f"{p} s", "right", (lambda p: lambda w: _seconds(w.stats.phase_seconds[p])
                                      if p in w.stats.phase_seconds else "-")(p)) for p in PHASES]
        cols += [("wall s", "right", lambda w: _seconds(w.stats.wall_seconds)),
                 ("overhead s", "right",
                  lambda w: _seconds(w.stats.wall_seconds - sum(w.stats.phase_seconds.values())))]
    else:
        cols += [("seconds", "right", lambda w: _seconds(w.stats.wall_seconds))]
    if wide or moved:
        cols.append(("moved", "right", lambda w: format_bytes(w.stats.bytes_moved)))
    if device:
        cols += [("to GPU", "right", lambda w: format_bytes(w.stats.h2d_bytes)),
                 ("from GPU", "right", lambda w: format_bytes(w.stats.d2h_bytes))]
    if wide:  # the records as the engine wrote them: live components and the step's own edges
        cols += [("mode", "left", lambda w: w.stats.mode),
                 ("active components", "right",
                  lambda w: f"{w.stats.components_before:,} → {w.stats.components_after:,}"),
                 ("edges", "right", lambda w: f"{w.stats.edges_before:,} → {w.stats.edges_after:,}")]
    return cols


def _totals(stats, rows, header):
    """The total row's cell under ``header`` ('' where a total means nothing)."""
    from dask.utils import format_bytes

    from mst_dist.result import PHASES

    tot = stats.phase_totals()
    if header == "components":
        return f"{rows[-1].components:,}" if rows else ""
    if header == "edges left":
        return f"{rows[-1].edges_left:,}" if rows else ""
    if header == "forest edges":
        return f"{sum(w.stats.forest_edges for w in rows):,}"
    if header in ("seconds", "wall s"):
        return _seconds(sum(r.wall_seconds for r in stats.rounds))
    if header == "overhead s":
        return _seconds(stats.overhead_seconds)
    if header.endswith(" s") and header[:-2] in PHASES:
        return _seconds(tot.get(header[:-2], 0.0))
    if header == "moved":
        return format_bytes(stats.bytes_moved)
    if header == "to GPU":
        return format_bytes(stats.h2d_bytes)
    if header == "from GPU":
        return format_bytes(stats.d2h_bytes)
    return ""


def _table(stats, rows, cols):
    from rich.table import Table

    t = Table(title="rounds", title_justify="left", show_edge=False, header_style="bold")
    t.add_column("pass", justify="left", no_wrap=True)
    for header, justify, _ in cols:
        t.add_column(header, justify=justify, no_wrap=True)
    last = None
    for w in rows:
        if last is not None and w.group != last:
            t.add_section()
        t.add_row(w.group if w.group != last else "", *[cell(w) for _, _, cell in cols])
        last = w.group
    t.add_section()
    t.add_row("total", *[_totals(stats, rows, header) for header, _, _ in cols])
    return t


def _width(console, table):
    from rich.measure import Measurement

    # measured without the console's limit: its natural width
    return Measurement.get(console, console.options.update_width(1 << 16), table).maximum


def round_table(stats, n_vertices, console, wide=False):
    """The per-round table (a rich ``Table``) at most as wide as ``console``.

    Compact by default (pass, round, components, edges left, forest edges,
    seconds, and bytes moved when any crossed workers); ``wide``: every
    column.  Columns that would not fit are dropped from the right (the
    first four always stay), so no cell is ever cut.
    """
    device = bool(stats.h2d_bytes or stats.d2h_bytes)
    rows = round_rows(stats, n_vertices)
    cols = _columns(wide, device, bool(stats.bytes_moved))
    t = _table(stats, rows, cols)
    dropped = []
    while len(cols) > 4 and _width(console, t) > console.width:
        dropped.insert(0, cols.pop()[0])
        t = _table(stats, rows, cols)
    if dropped:
        t.caption = f"left out at {console.width} columns: {', '.join(dropped)}"
        t.caption_justify = "left"
    return t


def print_summary(result, wall_seconds, output=None, console=None, wide=False):
    """The run's summary, its passes when it streamed, and the per-round table, with rich.

    ``console``: where to print (default: stdout; a file or a pipe gets a
    wide console, so that nothing is folded).  ``wide``: every column of the
    round table (see :func:`round_table`).
    """
    from dask.utils import format_bytes
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=1000)  # a file or a pipe: nothing folded, no column left out
    s = result.summary()
    st = result.stats
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold", no_wrap=True)
    head.add_column(justify="right")
    rows = [
        ("vertices", f"{s['vertices']:,}"),
        ("edges", f"{s['edges']:,}"),
        ("forest edges", f"{s['forest_edges']:,}"),
        ("total weight", f"{s['total_weight']:,}" if isinstance(s["total_weight"], int)
         else repr(s["total_weight"])),
        ("components", f"{s['components']:,}"),
        ("rounds", f"{s['rounds']}"),
        ("engine time", f"{st.total_seconds:.3f} s (setup {st.setup_seconds:.3f}, "
                        f"rounds {st.solve_seconds:.3f}, finish {st.finish_seconds:.3f})"),
        ("wall time", f"{wall_seconds:.3f} s"),
        ("cluster", f"{st.workers} worker(s), {st.threads} thread(s), {st.partitions} partition(s)"),
        ("kernels", {"cpu": "CPU (Numba)", "gpu": "GPU (CuPy)", "mixed": "CPU (Numba) and GPU (CuPy)"}
         .get(st.backend, st.backend)),
    ]
    if st.streamed:
        n = sum(1 for p in st.passes if p.name != "sample")
        rows.append(("streamed", f"yes: {n} pass{'es' if n != 1 else ''} over the source, after a sample"))
    else:
        rows.append(("streamed", "no: every chunk resident"))
    if st.resumed_from is not None:
        rows.append(("resumed", f"from a checkpoint, after round {st.resumed_from}: the table starts there"))
    if st.h2d_bytes or st.d2h_bytes:
        rows.append(("host ↔ device", f"{format_bytes(st.h2d_bytes)} to, {format_bytes(st.d2h_bytes)} from "
                                      "the GPUs"))
    for w, p in sorted(st.placement.items()):
        rows.append((f"chunks on {w}", f"{p['chunks']} ({p['edges']:,} edges), {p['kind'].upper()}, "
                                       f"throughput {p['throughput']:,.3g}"))
    if output:
        rows.append(("forest written to", output))
    for k, v in rows:
        head.add_row(k, v)
    console.print(head)
    if st.streamed and st.passes:
        console.print(passes_table(st.passes))
    console.print(round_table(st, s["vertices"], console, wide=wide))

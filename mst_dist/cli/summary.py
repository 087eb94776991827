"""The run's summary, its passes (a streamed run) and per-round table, as ``mst-dist run`` prints them."""
from __future__ import annotations

__all__ = ["print_summary", "passes_table"]


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
    t.add_column("pass", justify="left")
    for col in ("chunks", "edges read", "GiB read", "edges kept", "seconds"):
        t.add_column(col, justify="right")
    for p in passes:
        t.add_row(p.name, f"{p.chunks:,}", f"{p.edges_read:,}", _gib(p.bytes_read), f"{p.edges_kept:,}",
                  _seconds(p.seconds))
    t.add_section()
    t.add_row("total", f"{sum(p.chunks for p in passes):,}", f"{sum(p.edges_read for p in passes):,}",
              _gib(sum(p.bytes_read for p in passes)), f"{sum(p.edges_kept for p in passes):,}",
              _seconds(sum(p.seconds for p in passes)))
    return t


def print_summary(result, wall_seconds, output=None, console=None):
    """The run's summary, its passes when it streamed, and the per-round table, with rich."""
    from dask.utils import format_bytes
    from rich.console import Console
    from rich.table import Table

    from mst_dist.result import PHASES

    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=200)  # a file or a pipe: don't fold the table
    s = result.summary()
    st = result.stats
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
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
    device = bool(st.h2d_bytes or st.d2h_bytes)
    if device:
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

    t = Table(title="rounds", title_justify="left", show_edge=False, header_style="bold")
    for col in ("round", "mode", "components", "edges", "forest"):
        t.add_column(col, justify="left" if col == "mode" else "right")
    for p in PHASES:
        t.add_column(f"{p} s", justify="right")
    for col in ("wall s", "overhead s", "moved") + (("to GPU", "from GPU") if device else ()):
        t.add_column(col, justify="right")
    for r in st.rounds:
        ps = r.phase_seconds
        t.add_row(
            str(r.round), r.mode,
            f"{r.components_before:,} → {r.components_after:,}",
            f"{r.edges_before:,} → {r.edges_after:,}",
            f"{r.forest_edges:,}",
            *[_seconds(ps[p]) if p in ps else "-" for p in PHASES],
            _seconds(r.wall_seconds),
            _seconds(r.wall_seconds - sum(ps.values())),
            format_bytes(r.bytes_moved),
            *((format_bytes(r.h2d_bytes), format_bytes(r.d2h_bytes)) if device else ()),
        )
    tot = st.phase_totals()
    t.add_section()
    t.add_row("total", "", "", "", f"{s['forest_edges']:,}",
              *[_seconds(tot.get(p, 0.0)) for p in PHASES],
              _seconds(sum(r.wall_seconds for r in st.rounds)), _seconds(st.overhead_seconds),
              format_bytes(st.bytes_moved),
              *((format_bytes(st.h2d_bytes), format_bytes(st.d2h_bytes)) if device else ()))
    console.print(t)

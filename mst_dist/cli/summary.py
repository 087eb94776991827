"""The run's summary and per-round table, as ``mst-dist run`` prints them (rich)."""
from __future__ import annotations

__all__ = ["print_summary"]


def _seconds(s):
    return f"{s:.3f}"


def print_summary(result, wall_seconds, output=None, console=None):
    """The run's summary and per-round table, with rich."""
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

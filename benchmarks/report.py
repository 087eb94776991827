"""The benchmark's summary (ratios, geometric means, targets' verdicts) and its markdown report.

:func:`summarise` turns a run's report (what ``bench.json`` holds) into
per-graph rows and the verdicts of the targets
(:data:`~benchmarks.config.DEFAULT_TARGETS`, and
:data:`~benchmarks.config.GPU_TARGETS` when the config lists a GPU method), for the min and
the median times; :func:`format_report` writes ``bench.md``: the machine, the
CPU table (and the GPU table), the targets and the engine's per-round details.
"""
from __future__ import annotations

import math

from benchmarks.config import GPU_METHODS
from benchmarks.timing import done
from mst_dist.phases import Phase

__all__ = ["summarise", "format_report"]


def _gmean(xs):
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _get(meths, meth, stat, key):
    m = meths.get(meth)
    if not done(m):
        return None
    return m[stat].get(key)


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def summarise(report):
    """Per-graph ratios, geometric means and the targets' verdicts (min and median times)."""
    tg = report["config"]["targets"]
    out = {}
    for stat in ("min", "median"):
        rows = []
        for g in report["graphs"]:
            M = g["methods"]
            eng = _get(M, "engine", stat, "total")
            nc = _get(M, "engine-no-client", stat, "total")
            rows.append({
                "graph": g["name"],
                "engine": eng,
                "kernels": _get(M, "kernels-loop", stat, "total"),
                "scipy": _get(M, "scipy", stat, "total"),
                "rx_call": _get(M, "rustworkx", stat, "call"),
                "rx_total": _get(M, "rustworkx", stat, "total"),
                "engine_over_kernels": _ratio(eng, _get(M, "kernels-loop", stat, "total")),
                "speedup_scipy": _ratio(_get(M, "scipy", stat, "total"), eng),
                "speedup_rx_call": _ratio(_get(M, "rustworkx", stat, "call"), eng),
                "speedup_rx_total": _ratio(_get(M, "rustworkx", stat, "total"), eng),
                "engine_nc": nc,
                "speedup_scipy_nc": _ratio(_get(M, "scipy", stat, "total"), nc),
                "speedup_rx_call_nc": _ratio(_get(M, "rustworkx", stat, "call"), nc),
            })
        gm = {k: _gmean([r[k] for r in rows]) for k in rows[0] if k != "graph"} if rows else {}
        targets = []

        def verdict(name, desc, vals, ok):
            vals = [v for v in vals if v is not None]
            targets.append({"target": name, "description": desc,
                            "pass": (bool(vals) and ok(vals)) if vals else None})
            if tg.get("informational"):  # reported beside the target, not judged
                targets[-1].update({"pass": None, "informational": True})

        calls = [("", "", "")]
        if "engine-no-client" in report["config"]["methods"]:
            # the same targets for the call a script makes: no client (the shared embedded cluster)
            calls.append(("no_client_", "_nc", "without a client: "))
        for name, col, say in calls:
            sc = [r["speedup_scipy" + col] for r in rows]
            verdict(name + "scipy_geomean", f"{say}>= {tg['scipy_geomean']:g}x faster than scipy build+call "
                    f"(geometric mean): {_fmt_x(gm.get('speedup_scipy' + col))}",
                    [gm.get("speedup_scipy" + col)], lambda v: v[0] >= tg["scipy_geomean"])
            verdict(name + "scipy_each", f"{say}>= {tg['scipy_each']:g}x faster than scipy build+call on each "
                    f"graph: min {_fmt_x(min([x for x in sc if x is not None], default=None))}",
                    sc, lambda v: len(v) == len(rows) and min(v) >= tg["scipy_each"])
            rc = [r["speedup_rx_call" + col] for r in rows]
            verdict(name + "rustworkx_call_each", f"{say}faster than rustworkx's call alone on each graph: "
                    f"min {_fmt_x(min([x for x in rc if x is not None], default=None))}",
                    rc, lambda v: len(v) == len(rows) and min(v) > tg["rustworkx_call_each"])
        kr = [r["engine_over_kernels"] for r in rows]
        verdict("kernels_ratio_max", f"within {tg['kernels_ratio_max']:g}x of the kernels in a plain loop "
                f"on each graph: max {_fmt_r(max([x for x in kr if x is not None], default=None))}",
                kr, lambda v: len(v) == len(rows) and max(v) <= tg["kernels_ratio_max"])
        out[stat] = {"rows": rows, "geomean": gm, "targets": targets}
        if any(m in GPU_METHODS for m in report["config"]["methods"]):
            gpu_rows = _gpu_rows(report, stat)
            out[stat]["gpu_rows"] = gpu_rows
            out[stat]["gpu_targets"] = _gpu_targets(report, gpu_rows)
            if tg.get("informational"):
                for t in out[stat]["gpu_targets"]:
                    t.update({"pass": None, "informational": True})
    out["all_agree"] = all(g.get("agree") for g in report["graphs"])
    return out


def _gpu_rows(report, stat):
    rows = []
    for g in report["graphs"]:
        M = g["methods"]
        eg = _get(M, "engine-gpu", stat, "total")
        cg = _get(M, "cugraph", stat, "total")
        cpu = _get(M, "engine", stat, "total")
        rows.append({
            "graph": g["name"],
            "engine_gpu": eg,
            "kernel": _get(M, "engine-gpu", stat, "kernel"),
            "engine_cpu": cpu,
            "cugraph": cg,
            "cugraph_build": _get(M, "cugraph", stat, "build"),
            "cugraph_call": _get(M, "cugraph", stat, "call"),
            "speedup_cugraph": _ratio(cg, eg),
            "speedup_cpu": _ratio(cpu, eg),
        })
    return rows


def _why_missing(report, meth, graph=None):
    """Why a method has no time (on a graph): unavailable, failed, or not configured."""
    if meth not in report["config"]["methods"]:
        return f"{meth} is not among the config's methods"
    if meth in (report.get("unavailable") or {}):
        return f"{meth} unavailable here"  # the reason: listed above and in report["unavailable"]
    for g in report["graphs"]:
        if graph in (None, g["name"]) and "error" in g["methods"].get(meth, {}):
            return f"{meth} failed on {g['name']}"
    return f"no {meth} result"


def _gpu_targets(report, rows):
    """Verdicts of :data:`GPU_TARGETS`: ``pass`` is True, False or None (not measured, with ``note``)."""
    tg = report["config"]["targets"]
    out = []
    # engine-gpu >= cugraph_each x faster than cuGraph build+call on each graph
    t = tg["cugraph_each"]
    sp = {r["graph"]: r["speedup_cugraph"] for r in rows}
    measured = [v for v in sp.values() if v is not None]
    missing = [g for g, v in sp.items() if v is None]
    note = None
    if measured and min(measured) < t:
        ok = False
    elif missing or not rows:
        ok = None
        why = []
        for g in missing or [None]:
            for m in ("engine-gpu", "cugraph"):
                if g is None or not done(_graph(report, g)["methods"].get(m)):
                    w = _why_missing(report, m, g)
                    if w not in why:
                        why.append(w)
        note = "; ".join(why) or "no graph run"
    else:
        ok = True
    out.append({"target": "cugraph_each", "pass": ok, "note": note,
                "description": f">= {t:g}x faster than cuGraph build+call on each graph: min "
                               f"{_fmt_x(min(measured, default=None))}"
                               + (f" (measured on {len(measured)} of {len(rows)} graphs)"
                                  if missing else "")})
    # end to end and kernel time on the circulant graph
    name = tg.get("gpu_graph")
    row = next((r for r in rows if r["graph"] == name), None)
    for key, col, what in (("circulant_total_s", "engine_gpu", "end to end from device-resident arrays"),
                           ("circulant_kernel_s", "kernel", "kernel time (phase seconds summed)")):
        t = tg[key]
        v = row[col] if row else None
        if name is None:
            note = "no targets.gpu_graph in the config"
        elif row is None:
            note = f"graph {name} was not run"
        elif v is None:
            note = _why_missing(report, "engine-gpu", name)
        else:
            note = None
        out.append({"target": key, "pass": None if v is None else v < t, "note": note,
                    "description": f"engine-gpu {what} on {name or 'the gpu_graph'} under {t:g} s: "
                                   f"{_fmt_s(v)} s"})
    return out


def _graph(report, name):
    return next((g for g in report["graphs"] if g["name"] == name), {"methods": {}})


def _fmt_s(x):
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _fmt_x(x):
    if x is None:
        return "–"
    return f"{x:.2f}×" if x < 2 else (f"{x:.1f}×" if x < 100 else f"{x:.0f}×")


def _fmt_r(x):
    return "–" if x is None else f"{x:.2f}"


def _load1(la):
    return "–" if not la else f"{la[0]:.1f}"


def _fmt_m(m):
    return f"{m / 1e6:.1f}M" if m >= 1e6 else (f"{m / 1e3:.0f}k" if m >= 1e3 else str(m))


#: Methods of the CPU table; a config with GPU methods and none of these shows the GPU table only.
_CPU_TABLE_METHODS = ("engine-distributed", "kernels-loop", "kernels-loop-dedupe", "scipy", "rustworkx")


def _md_header(lines, hdr):
    """A markdown table's header: first and last columns left-aligned, the numbers right."""
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 2) + ["---"]) + "|")


def _md_targets(lines, mins, medians, unknown):
    """One line per target: its verdict on min times, and on medians.

    ``unknown`` names a target that could not be judged (``pass`` is None):
    ``"n/a"`` for the CPU targets, ``"not measured"`` for GPU ones whose
    methods were unavailable (with the reason in ``note``).  A target of a
    config whose targets are informational is listed as ``INFO``, its
    measured value beside it.
    """
    med = {t["target"]: t for t in medians}
    for t in mins:
        if t.get("informational"):
            why = f"; {t['note']}" if t.get("note") else ""
            lines.append(f"- **INFO** {t['description']} (min times; not checked: the config's targets "
                         f"are informational{why})")
            continue
        if t["pass"] is None and t.get("note"):
            lines.append(f"- **{unknown.upper()}** {t['description']} ({t['note']})")
            continue
        verdict = {True: "PASS", False: "FAIL", None: unknown.upper()}[t["pass"]]
        mv = {True: "pass", False: "fail", None: unknown}[med[t["target"]]["pass"]]
        lines.append(f"- **{verdict}** {t['description']} (min times; with medians: {mv})")


def _md_agreement(report, s, lines):
    lines.append(f"- total weights agree on every graph: **{'yes' if s['all_agree'] else 'NO'}**")
    for g in report["graphs"]:
        for p in g.get("problems", []):
            lines.append(f"  - {g['name']}: {p}")


def _md_cpu(report, s, lines):
    """The CPU table (engine against the kernels, scipy and rustworkx) and its targets."""
    lines.append("")
    lines.append("Times in seconds, from int64 arrays in memory to the result in hand; min of the timed runs "
                 "(median in brackets for the engine).")
    lines.append("")
    hdr = ["graph", "m", "engine s", "kernels-loop s", "engine / kernels", "scipy build+call s",
           "vs scipy", "rustworkx call s", "vs rx call", "rustworkx build+call s",
           "engine-distributed s (Dask rounds, median Dask overhead / round)", "weights agree"]
    no_client = "engine-no-client" in report["config"]["methods"]
    if no_client:
        hdr[3:3] = ["engine without a client s", "vs scipy (no client)"]
    _md_header(lines, hdr)
    rows = {r["graph"]: r for r in s["min"]["rows"]}
    for g in report["graphs"]:
        r = rows[g["name"]]
        M = g["methods"]
        eng_med = _get(M, "engine", "median", "total")
        dist = M.get("engine-distributed")
        if dist and "error" not in dist:
            st = dist.get("stats", {})
            ov = st.get("dask_overhead_median")
            dcell = (f"{_fmt_s(dist['min']['total'])} ({st.get('distributed_rounds')} rounds, "
                     f"{'–' if ov is None else f'{ov * 1000:.0f} ms'})")
        else:
            dcell = "–" if not dist else "failed"
        cells = [
            g["name"], _fmt_m(g["m"]),
            f"{_fmt_s(r['engine'])}" + (f" ({_fmt_s(eng_med)})" if eng_med is not None else ""),
            _fmt_s(r["kernels"]), _fmt_r(r["engine_over_kernels"]),
            _fmt_s(r["scipy"]), _fmt_x(r["speedup_scipy"]),
            _fmt_s(r["rx_call"]), _fmt_x(r["speedup_rx_call"]), _fmt_s(r["rx_total"]),
            dcell, "yes" if g.get("agree") else "**NO**",
        ]
        if no_client:
            cells[3:3] = [_fmt_s(r["engine_nc"]), _fmt_x(r["speedup_scipy_nc"])]
        lines.append("| " + " | ".join(cells) + " |")
    gm = s["min"]["geomean"]
    if report["graphs"]:
        cells = [
            "**geometric mean**", "", _fmt_s(gm.get("engine")), _fmt_s(gm.get("kernels")),
            _fmt_r(gm.get("engine_over_kernels")), _fmt_s(gm.get("scipy")),
            f"**{_fmt_x(gm.get('speedup_scipy'))}**", _fmt_s(gm.get("rx_call")),
            _fmt_x(gm.get("speedup_rx_call")), _fmt_s(gm.get("rx_total")), "", "",
        ]
        if no_client:
            cells[3:3] = [_fmt_s(gm.get("engine_nc")), f"**{_fmt_x(gm.get('speedup_scipy_nc'))}**"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("## Targets (engine on the embedded default)")
    lines.append("")
    if report["config"]["targets"].get("informational"):
        lines.append("Informational: the targets are set for the full-size graphs (benchmarks/configs/bench-cpu.yaml); "
                     "on this config's graphs fixed costs weigh more, so each ratio is shown beside its "
                     "target without a verdict.")
        lines.append("")
    _md_targets(lines, s["min"]["targets"], s["median"]["targets"], "n/a")
    _md_agreement(report, s, lines)


def _md_gpu_header(report, lines):
    """The GPU, the one-GPU-worker cluster and the methods that could not run here."""
    gi = report["machine"].get("gpu") or {}
    devs = gi.get("devices") or []
    v = report["versions"]
    lines.append("")
    if devs:
        lines.append("GPU: " + ", ".join(f"{d['name']} ({d['memory_bytes'] / 2**30:.0f} GiB, "
                                         f"compute {d['compute_capability']})" for d in devs)
                     + f"; CUDA driver {gi.get('driver_version')}, runtime {gi.get('runtime_version')}; "
                     + ", ".join(f"{k} {v[k]}" for k in ("cupy", "pylibcugraph", "dask_cuda") if v.get(k))
                     + ".  ")
    else:
        lines.append("GPU: none visible to CuPy in this process.  ")
    gc_ = report.get("gpu_cluster")
    if gc_:
        stop = gc_.get("stop_seconds")
        lines.append(f"One-GPU-worker cluster (in process, 1 worker × 1 thread, resources GPU=1): start "
                     f"{gc_['start_seconds']:.2f} s, stop {'–' if stop is None else f'{stop:.2f} s'}, "
                     "not included in the engine-gpu times.  ")
    unavailable = report.get("unavailable") or {}
    if unavailable:
        lines.append("")
        lines.append("**Unavailable here** (not run; their targets are not measured):")
        lines.append("")
        for m, reason in unavailable.items():
            lines.append(f"- `{m}`: {reason}")


def _gpu_cell(M, meth, text):
    """``text`` when ``meth`` ran; else why not, in one word."""
    m = M.get(meth)
    if done(m):
        return text
    if not m:
        return "–"
    return "unavailable" if "unavailable" in m else "failed"


def _md_gpu(report, s, lines, agreement):
    """The GPU table (engine-gpu, the engine on the CPU workers, cuGraph) and the GPU targets."""
    lines.append("")
    lines.append("## GPU: engine-gpu (one GPU worker) against the CPU workers and cuGraph")
    lines.append("")
    lines.append("Seconds, min of the timed runs (median in brackets).  engine-gpu: from edge arrays already "
                 "on the device (`Graph.from_arrays` + `minimum_spanning_forest(backend=\"gpu\")`); kernel: "
                 "its phase seconds summed over rounds; H2D / D2H: bytes the run copied host to device "
                 "and back.  engine: the CPU workers (embedded default, `backend=\"cpu\"`) from host "
                 "arrays.  "
                 "cuGraph: `pylibcugraph.minimum_spanning_tree`, build (both directions, `SGGraph`) and "
                 "call, on its simple input made beforehand (not timed).")
    lines.append("")
    hdr = ["graph", "m", "engine-gpu s", "kernel s", "H2D / D2H MB", "engine (CPU workers) s",
           "GPU vs CPU workers", "cuGraph build s", "cuGraph call s", "cuGraph build+call s",
           "vs cuGraph", "cuGraph input: edges (self-loops, parallel dropped)", "weights agree"]
    _md_header(lines, hdr)
    rows = {r["graph"]: r for r in s["min"]["gpu_rows"]}
    for g in report["graphs"]:
        r = rows[g["name"]]
        M = g["methods"]
        eg = M.get("engine-gpu") or {}
        med = _get(M, "engine-gpu", "median", "total")

        def mb(x):
            return "?" if x is None else f"{x / 1e6:.1f}"

        cg = M.get("cugraph") or {}
        prep = cg.get("prep") or {}
        lines.append("| " + " | ".join([
            g["name"], _fmt_m(g["m"]),
            _gpu_cell(M, "engine-gpu",
                      _fmt_s(r["engine_gpu"]) + (f" ({_fmt_s(med)})" if med is not None else "")),
            _gpu_cell(M, "engine-gpu", _fmt_s(r["kernel"])),
            _gpu_cell(M, "engine-gpu", f"{mb(eg.get('h2d_bytes'))} / {mb(eg.get('d2h_bytes'))}"),
            _gpu_cell(M, "engine", _fmt_s(r["engine_cpu"])), _fmt_x(r["speedup_cpu"]),
            _gpu_cell(M, "cugraph", _fmt_s(r["cugraph_build"])),
            _gpu_cell(M, "cugraph", _fmt_s(r["cugraph_call"])),
            _gpu_cell(M, "cugraph", _fmt_s(r["cugraph"])), _fmt_x(r["speedup_cugraph"]),
            _gpu_cell(M, "cugraph", f"{_fmt_m(prep.get('edges', 0))} ({prep.get('self_loops', 0):,}, "
                                    f"{prep.get('parallel', 0):,})"),
            "yes" if g.get("agree") else "**NO**",
        ]) + " |")
    lines.append("")
    lines.append("## GPU targets (engine-gpu on one GPU worker)")
    lines.append("")
    _md_targets(lines, s["min"]["gpu_targets"], s["median"]["gpu_targets"], "not measured")
    if agreement:
        _md_agreement(report, s, lines)


def _md_section(lines, heading, text):
    """A heading and its paragraph, a blank line around each."""
    lines.extend(["", heading, "", text, ""])


def _md_cold(report, lines):
    """The ``cold`` method's table: a fresh process per run against the warm call in one process."""
    rows = [(g, g["methods"]["cold"]) for g in report["graphs"] if done(g["methods"].get("cold"))]
    if not rows:
        return
    _md_section(lines, "## Cold start (a fresh Python process per run)",
                "Each run is a new interpreter that loads the arrays (untimed), then is timed from before "
                "its first import to the result in hand: mst-dist `import` + `Graph.from_arrays` + "
                "`minimum_spanning_forest(g)` without a client (embedded default), or scipy's import + "
                "CSR build + `minimum_spanning_tree`; engine and scipy runs interleaved.  Min of the runs "
                "(median in brackets); *process*: the whole process, interpreter start and exit included.  "
                "*Floor*: what any engine of Numba kernels on an in-process Dask cluster pays before it "
                "touches a graph, timed the same way without mst-dist: `import numba`, the first call of one "
                "cached parallel kernel (Numba's start and the kernel's load), `import distributed` and a "
                "one-worker in-process `LocalCluster` with its client.")
    _md_header(lines, ["graph", "m", "engine fresh s (import / graph / solve)", "engine warm s",
                       "fresh − warm s", "floor s (numba / kernel / dask)", "scipy fresh s", "vs scipy (fresh)",
                       "engine process s", "scipy process s", "weights agree"])
    for g, c in rows:
        warm = _get(g["methods"], "engine", "min", "total")
        sc = c.get("scipy") or {}
        e_min, e_med = c["min"], c["median"]
        s_min = sc.get("min", {})
        f_min = (c.get("floor") or {}).get("min")
        floor = "–" if not f_min else (f"{_fmt_s(f_min['total'])}: {_fmt_s(f_min['numba'])} / "
                                        f"{_fmt_s(f_min['kernel'])} / {_fmt_s(f_min['dask'])}")
        lines.append("| " + " | ".join([
            g["name"], _fmt_m(g["m"]),
            f"{_fmt_s(e_min['total'])} ({_fmt_s(e_med['total'])}): {_fmt_s(e_min.get('import'))} / "
            f"{_fmt_s(e_min.get('graph'))} / {_fmt_s(e_min.get('solve'))}",
            _fmt_s(warm), _fmt_s(None if warm is None else e_min["total"] - warm), floor,
            f"{_fmt_s(s_min.get('total'))} ({_fmt_s(sc.get('median', {}).get('total'))})",
            _fmt_x(_ratio(s_min.get("total"), e_min["total"])),
            _fmt_s(e_min.get("process")), _fmt_s(s_min.get("process")),
            "yes" if g.get("agree") else "**NO**",
        ]) + " |")
    if any(c.get("printed") for _, c in rows):
        lines.append("")
        lines.append("**The engine's fresh processes wrote to stderr** (the library should print nothing).")
    cli = [(g, c["cli"]) for g, c in rows if done(c.get("cli"))]
    if not cli:
        return
    _md_section(lines, "### The command line on the same graph, generated on its workers",
                "`mst-dist run` on a run config that generates the graph (CPU kernels, nothing written), "
                "a fresh process per run, interleaved with the runs above: the engine time its report "
                "gives (setup: generating the chunks and preparing them; solve; finish), against the "
                "warm engine call from arrays (`engine` above).  Min of the runs (median in brackets).")
    _md_header(lines, ["graph", "CLI engine s (setup / solve / finish)", "engine warm s", "CLI / warm",
                       "CLI wall s", "CLI process s"])
    for g, c in cli:
        warm = _get(g["methods"], "engine", "min", "total")
        mi, me = c["min"], c["median"]
        lines.append("| " + " | ".join([
            g["name"],
            f"{_fmt_s(mi['total'])} ({_fmt_s(me['total'])}): {_fmt_s(mi['setup'])} / {_fmt_s(mi['solve'])} / "
            f"{_fmt_s(mi['finish'])}",
            _fmt_s(warm), _fmt_x(_ratio(mi["total"], warm)), _fmt_s(mi["wall"]), _fmt_s(mi["process"]),
        ]) + " |")


def format_report(report):
    """The markdown report: main table, targets, engine details."""
    s = report.get("summary") or summarise(report)
    mi = report["machine"]
    lines = []
    lines.append("# mst-dist benchmark")
    lines.append("")
    mem = mi.get("memory_total_bytes")
    v = report["versions"]
    lines.append(f"Machine: {mi.get('cpu_model')}, {mi.get('cpu_count')} CPUs"
                 f"{f', {mem / 2**30:.1f} GiB' if mem else ''}; {mi.get('platform')}; Python {mi.get('python')}.  ")
    lines.append("Versions: " + ", ".join(f"{k} {v[k]}" for k in
                                          ("mst_dist", "numpy", "numba", "dask", "scipy", "rustworkx")
                                          if v.get(k)) +
                 f"; numba threads {v.get('numba_threads')}"
                 + (f"; commit {v['git_commit'][:10]}{' (with local edits)' if v.get('git_dirty') else ''}"
                    if v.get("git_commit") else "") + ".  ")
    lines.append(f"Runs: {report['config']['warmup']} warm-up + {report['config']['repeat']} timed per method "
                 f"({report['config'].get('schedule', 'sequential')}); "
                 f"load average at start {mi.get('loadavg_start')}, at end {mi.get('loadavg_end')}.")
    cl = report.get("cluster")
    if cl:
        lines.append("")
        lines.append(f"Embedded default cluster ({cl['workers']} worker × {cl['threads']} threads): start "
                     f"{cl['start_seconds']:.2f} s, stop {cl['stop_seconds']:.2f} s, paid once by a call "
                     "without a client and not included in the engine times below.")
    methods = report["config"]["methods"]
    gpu = any(m in GPU_METHODS for m in methods)
    if gpu:
        _md_gpu_header(report, lines)
    cpu_table = not gpu or any(m in _CPU_TABLE_METHODS for m in methods)
    if cpu_table:
        _md_cpu(report, s, lines)
    if gpu:
        _md_gpu(report, s, lines, agreement=not cpu_table)
    if "cold" in methods:
        _md_cold(report, lines)
    lines.append("")
    lines.append("## Engine details (best run)")
    lines.append("")
    lines.append("| graph | n | forest edges | components | total weight | validate s | engine rounds (modes) "
                 "| map | merge | contract | filter-edges | setup s | overhead s | kernels-loop prepare / solve / finish s "
                 "| distributed: Dask rounds, mean round wall, Dask overhead mean, round 0, mean of the others "
                 "| engine CPU / wall | load avg |")
    lines.append("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|")
    for g in report["graphs"]:
        M = g["methods"]
        e = M.get("engine")
        if not e or "error" in e:
            continue
        st = e["stats"]
        pt = st.get("phase_totals", {})
        modes = ", ".join(f"{k} {v}" for k, v in st.get("round_modes", {}).items())
        kl = M.get("kernels-loop")
        kcell = "–"
        if kl and "error" not in kl:
            kcell = " / ".join(_fmt_s(kl["min"].get(x)) for x in ("prepare", "solve", "finish"))
        d = M.get("engine-distributed")
        dcell = "–"
        if d and "error" not in d:
            ds = d["stats"]
            def ms(x):
                return "–" if x is None else f"{x * 1000:.0f} ms"

            dcell = (f"{ds.get('distributed_rounds')}, {ms(ds.get('distributed_round_wall_mean'))}, "
                     f"{ms(ds.get('dask_overhead_mean'))}, {ms(ds.get('dask_overhead_first'))}, "
                     f"{ms(ds.get('dask_overhead_mean_after_first'))}")
        lines.append("| " + " | ".join([
            g["name"], f"{g['n']:,}", f"{g.get('forest_edges') or 0:,}", f"{e.get('components', 0):,}",
            f"{g.get('total_weight')}", _fmt_s(e["min"].get("validate")),
            f"{st.get('n_rounds')} ({modes})",
            *(_fmt_s(pt.get(p, 0.0)) for p in (Phase.MAP, Phase.MERGE, Phase.CONTRACT, Phase.FILTER_EDGES)),
            _fmt_s(st.get("setup_seconds")), _fmt_s(st.get("overhead_seconds")), kcell, dcell,
            _fmt_r(_ratio(e.get("best", {}).get("cpu"), e.get("best", {}).get("total"))),
            f"{_load1(g.get('loadavg_start'))} → {_load1(g.get('loadavg_end'))}",
        ]) + " |")
    lines.append("")
    lines.append("Dask overhead of a round: its wall time as the driver saw it minus the kernel time of its "
                 "phases (engine-distributed, `local_finish=0`); round 0 also holds the chunks' preparation.  ")
    lines.append("CPU / wall: process CPU time over wall time of the engine's best run (up to the "
                 "number of cores when nothing else competes).  load avg: 1-minute load average "
                 "when the graph's runs started and ended; above the core count, other processes "
                 "shared the machine and the times are noisy.")
    lines.append("")
    return "\n".join(lines)

"""The scale benchmark's summary (per-run memory and time, the targets' verdicts) and its markdown.

Memory columns, all from the RSS of the run's process tree (the process that
runs the method and its worker processes, if any), sampled every
``sample_interval`` seconds during the timed runs:

- *peak RSS*: the absolute peak of the tree (Python, the cluster and
  everything else included);
- *above baseline*: the peak minus the tree's RSS before the graph existed
  (cluster started, kernels primed);
- *bytes/edge*: the absolute peak / m, and the peak above the baseline / m;
- *engine's own bytes/edge beyond the arrays* (graphs from arrays only):
  ``(peak - RSS with the caller's arrays loaded) / m``; *of which the result*:
  the bytes of what the call returns (forest ids and rows, component labels)
  / m, which the peak necessarily includes.
"""
from __future__ import annotations

__all__ = ["summarise_scale", "format_scale_report", "cluster_text"]

GIB = 2**30


def cluster_text(c):
    """A cluster section in a few words ("embedded default", "2 worker processes, memory_limit 4GiB each")."""
    if not c:
        return "embedded default"
    n = c.get("n_workers") or 1
    words = [f"{n} worker process{'es' if n > 1 else ''}" if c.get("processes")
             else f"{n} in-process worker{'s' if n > 1 else ''}"]
    t = c.get("threads_per_worker")
    if t:
        words.append(f"{t} thread{'s' if t > 1 else ''} each")
    if c.get("memory_limit"):
        words.append(f"memory_limit {c['memory_limit']} each")
    return ", ".join(words)


def _row(g, meth, r):
    """One table row: a method's result on a graph, with the derived memory numbers."""
    m = r.get("m") or g.get("m")
    ok = r.get("status") == "ok"
    peak, base, arr = r.get("peak_bytes"), r.get("baseline_bytes"), r.get("arrays_bytes")
    best = r.get("best") or {}
    passes = [p for p in best.get("passes", []) if p["name"] != "sample"]

    def per_edge(x):
        return None if x is None or not m else x / m

    return {
        "graph": g["name"], "method": meth, "m": m, "source": g["source"], "cluster": cluster_text(g["cluster"]),
        "status": r.get("status"), "note": r.get("note"),
        "seconds": r.get("seconds") if ok else None,
        "peak_gib": None if peak is None else peak / GIB,
        "above_baseline_gib": None if peak is None or base is None else (peak - base) / GIB,
        "bytes_per_edge": per_edge(peak),
        "above_baseline_per_edge": per_edge(None if peak is None or base is None else peak - base),
        "engine_bytes_per_edge": per_edge(None if peak is None or arr is None else peak - arr),
        "result_bytes_per_edge": per_edge(best.get("result_bytes")),
        "streamed": best.get("streamed"),
        "passes": len(passes),
        "edges_kept": sum(p["edges_kept"] for p in passes) if best.get("streamed") else None,
        "agree": r.get("agree"),
        "workers_restarted": r.get("workers_restarted"),
        "lifetime_peak_gib": (r.get("lifetime_peak_bytes") or 0) / GIB,
    }


def _verdicts(t, rows, report):
    """The PASS/FAIL lines of one target: ``[{"target", "description", "pass", "note"}]``."""
    g, meth = t["graph"], t["method"]
    r = rows.get((g, meth))
    who = f"{g} {meth}"
    out = []

    def line(check, desc, ok, note=None):
        out.append({"target": f"{who}: {check}", "description": f"{who}: {desc}", "pass": ok, "note": note})

    def unmet(check, desc):
        if r is None:
            line(check, desc, None, "not run")
        else:
            line(check, desc, False, f"{r['status']}: {r['note']}")

    done = r is not None and r["status"] == "ok"
    if "max_peak_gib" in t:
        x = t["max_peak_gib"]
        desc = f"peak RSS of the process tree <= {x:g} GiB"
        if done:
            line("max_peak_gib", f"{desc}: {r['peak_gib']:.2f} GiB", r["peak_gib"] <= x)
        else:
            unmet("max_peak_gib", desc)
    if "max_bytes_per_edge" in t:
        x = t["max_bytes_per_edge"]
        desc = f"peak RSS / m <= {x:g} bytes per edge"
        if done:
            line("max_bytes_per_edge", f"{desc}: {r['bytes_per_edge']:.1f}", r["bytes_per_edge"] <= x)
        else:
            unmet("max_bytes_per_edge", desc)
    if "max_engine_bytes_per_edge" in t:
        x = t["max_engine_bytes_per_edge"]
        desc = f"engine's own peak beyond the caller's arrays <= {x:g} bytes per edge"
        if done and r["engine_bytes_per_edge"] is not None:
            line("max_engine_bytes_per_edge", f"{desc}: {r['engine_bytes_per_edge']:.1f}",
                 r["engine_bytes_per_edge"] <= x)
        else:
            unmet("max_engine_bytes_per_edge", desc)
    if "max_seconds" in t:
        x = t["max_seconds"]
        desc = f"completes in <= {x:g} s"
        if done:
            line("max_seconds", f"{desc}: {r['seconds']:.1f} s", r["seconds"] <= x)
        else:
            unmet("max_seconds", desc)
    if "versus" in t:
        v = rows.get((g, t["versus"]))
        for key, col, what, fmt in (("max_time_ratio", "seconds", "time", "{:.2f}x"),
                                    ("max_peak_ratio", "peak_gib", "peak RSS", "{:.2f}x")):
            if key not in t:
                continue
            x = t[key]
            desc = f"{what} within {x:g}x of {t['versus']}'s"
            if not done:
                unmet(key, desc)
            elif v is None or v["status"] != "ok":
                line(key, desc, None, f"{t['versus']} " + ("not run" if v is None else
                                                            f"{v['status']}: {v['note']}"))
            else:
                ratio = r[col] / v[col] if v[col] else None
                line(key, f"{desc}: {r[col]:.2f} / {v[col]:.2f} = " + ("–" if ratio is None else fmt.format(ratio)),
                     ratio is not None and ratio <= x)
    if t.get("completes"):
        desc = "completes, no worker restarted"
        if done:
            n = r["workers_restarted"] or 0
            line("completes", f"{desc}: {n} restarted", n == 0)
        else:
            unmet("completes", desc)
    if "same_edges_as" in t:
        other = t["same_edges_as"]
        desc = f"same forest edge ids as {other}"
        theirs = [x for (gg, _), x in rows.items() if gg == other and x["status"] == "ok"]
        if not done:
            unmet("same_edges_as", desc)
        elif not theirs:
            line("same_edges_as", desc, None, f"no run of {other} completed")
        else:
            mine = _answer(report, g, meth)
            diff = [x["method"] for x in theirs if _answer(report, other, x["method"]) != mine]
            line("same_edges_as", desc + (f": differs from {', '.join(diff)}" if diff else
                                          f" ({', '.join(x['method'] for x in theirs)})"), not diff)
    return out


def _answer(report, graph, meth):
    for g in report["graphs"]:
        if g["name"] == graph:
            r = g["methods"][meth]
            return r.get("total_weight"), r.get("forest_edges"), r.get("edge_ids_crc32")
    return None


def summarise_scale(report):
    """The table's rows and the targets' verdicts of a scale run (what ``bench.json`` keeps as ``summary``)."""
    rows = {}
    for g in report["graphs"]:
        for meth, r in g["methods"].items():
            rows[(g["name"], meth)] = _row(g, meth, r)
    targets = [v for t in report["config"]["targets"] for v in _verdicts(t, rows, report)]
    return {"rows": list(rows.values()), "targets": targets, "all_agree": report.get("all_agree", True)}


def _fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def _fmt_s(x):
    if x is None:
        return "–"
    return f"{x:.0f}" if x >= 100 else (f"{x:.1f}" if x >= 10 else f"{x:.2f}")


def _fmt_m(m):
    if not m:
        return "–"
    return f"{m / 1e9:.2f}G" if m >= 1e9 else (f"{m / 1e6:.1f}M" if m >= 1e6 else f"{m / 1e3:.0f}k")


_STATUS_CELL = {"timeout": "timeout", "oom": "out of memory", "error": "failed", "killed": "killed"}


def format_scale_report(report):
    """The markdown report: machine, the table, the targets, failures and details."""
    s = report.get("summary") or summarise_scale(report)
    cfg = report["config"]
    mi, v = report["machine"], report["versions"]
    mem = mi.get("memory_total_bytes")
    lines = ["# mst-dist scale benchmark", ""]
    if cfg.get("description"):
        lines += [cfg["description"], ""]
    lines.append(f"Machine: {mi.get('cpu_model')}, {mi.get('cpu_count')} CPUs"
                 f"{f', {mem / GIB:.1f} GiB' if mem else ''}; {mi.get('platform')}; Python {mi.get('python')}.  ")
    lines.append("Versions: " + ", ".join(f"{k} {v[k]}" for k in ("mst_dist", "numpy", "numba", "dask",
                                                                   "distributed") if v.get(k))
                 + (f"; commit {v['git_commit'][:10]}{' (with local edits)' if v.get('git_dirty') else ''}"
                    if v.get("git_commit") else "") + ".  ")
    lines.append(f"Runs: each method on each graph in a process of its own (its cluster started, the kernels "
                 f"primed on a tiny graph), {cfg['warmup']} warm-up + {cfg['repeat']} timed run(s), "
                 f"timeout {cfg['timeout']:g} s per run; RSS of the process tree sampled every "
                 f"{cfg['sample_interval'] * 1000:g} ms; load average at start {mi.get('loadavg_start')}, "
                 f"at end {mi.get('loadavg_end')}.")
    lines.append("")
    lines.append("Seconds: the timed run, from making the graph (`mst_dist.generate`, `mst_dist.read`, "
                 "`Graph.from_arrays`) to the forest in hand (min of the timed runs).  Memory: the RSS of the "
                 "run's process tree (the process running the method and its worker processes), peak over "
                 "the timed runs; *baseline*: the tree before the graph existed (cluster up, kernels "
                 "primed); *arrays*: with the caller's arrays loaded (graphs from arrays).  engine: "
                 "`stream=\"never\"`; engine-stream: `stream=\"always\"`.")
    lines.append("")
    hdr = ["graph", "m", "method", "cluster", "seconds", "peak RSS GiB (tree, absolute)",
           "peak above baseline GiB", "bytes/edge (absolute peak / m)", "bytes/edge (above baseline)",
           "engine's own bytes/edge beyond the arrays", "of which the result", "edges kept by passes", "agree"]
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "|".join(["---", "---:", "---", "---"] + ["---:"] * (len(hdr) - 5) + ["---"]) + "|")
    for r in s["rows"]:
        ok = r["status"] == "ok"
        secs = _fmt_s(r["seconds"]) if ok else f"**{_STATUS_CELL.get(r['status'], r['status'])}**"
        if ok:
            mem_cells = [_fmt(r["peak_gib"]), _fmt(r["above_baseline_gib"]), _fmt(r["bytes_per_edge"], 1),
                         _fmt(r["above_baseline_per_edge"], 1), _fmt(r["engine_bytes_per_edge"], 1),
                         _fmt(r["result_bytes_per_edge"], 1) if r["engine_bytes_per_edge"] is not None else "–"]
        else:  # what the tree reached before it ended
            mem_cells = [f"({r['lifetime_peak_gib']:.2f} seen)", "–", "–", "–", "–", "–"]
        kept = "–" if r["edges_kept"] is None else f"{_fmt_m(r['edges_kept'])} in {r['passes']} pass" + (
            "es" if r["passes"] != 1 else "")
        agree = {True: "yes", False: "**NO**", None: "–"}[r["agree"]]
        lines.append("| " + " | ".join([r["graph"], _fmt_m(r["m"]), r["method"], r["cluster"], secs,
                                        *mem_cells, kept, agree]) + " |")
    lines.append("")
    lines.append("agree: same total weight, forest edge count and edge ids (CRC-32) as the first completed run "
                 "of the same generated graph (– : no other run to compare with).")
    if s["targets"]:
        lines += ["", "## Targets", ""]
        for t in s["targets"]:
            verdict = {True: "PASS", False: "FAIL", None: "NOT MEASURED"}[t["pass"]]
            lines.append(f"- **{verdict}** {t['description']}" + (f" ({t['note']})" if t.get("note") else ""))
    lines.append("")
    lines.append(f"- runs of one graph agree: **{'yes' if s['all_agree'] else 'NO'}**")
    for p in report.get("problems", []):
        lines.append(f"  - {p}")
    failed = [r for r in s["rows"] if r["status"] != "ok"]
    if failed:
        lines += ["", "## Runs that did not complete", ""]
        for r in failed:
            res = _result(report, r["graph"], r["method"])
            lines.append(f"- {r['graph']} {r['method']}: **{r['status']}**: {r['note']}"
                         + (f" (log: `{res['log']}`)" if res.get("log") else ""))
    lines += ["", "## Details (best run)", ""]
    lines.append("| graph | method | n | forest edges | components | total weight | passes: edges read → kept "
                 "(s) | rounds | setup / solve / finish s | cluster start s | baseline GiB | peak RSS not "
                 "file-backed GiB | workers restarted | load avg |")
    lines.append("|---|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---|")
    for g in report["graphs"]:
        for meth, res in g["methods"].items():
            b = res.get("best")
            if not b:
                continue
            passes = "; ".join(f"{p['name']}: {_fmt_m(p['edges_read'])} "
                               + ("read" if p["name"] == "sample" else f"→ {_fmt_m(p['edges_kept'])}")
                               + f" ({_fmt_s(p['seconds'])})" for p in b["passes"]) or "–"
            la = g.get("loadavg_start"), g.get("loadavg_end")
            lines.append("| " + " | ".join([
                g["name"], meth, f"{b['n_vertices']:,}", f"{b['forest_edges']:,}", f"{b['components']:,}",
                f"{b['total_weight']}", passes, str(b["n_rounds"]),
                " / ".join(_fmt_s(b[k]) for k in ("setup_seconds", "solve_seconds", "finish_seconds")),
                _fmt_s(res.get("cluster_seconds")),
                _fmt((res.get("baseline_bytes") or 0) / GIB),
                _fmt((res.get("peak_anon_bytes") or 0) / GIB),
                str(res.get("workers_restarted", 0)),
                " → ".join("–" if not x else f"{x[0]:.1f}" for x in la),
            ]) + " |")
    lines.append("")
    lines.append("Peak RSS not file-backed: the tree's RSS less its pages of mapped files and shared memory "
                 "(an input read through a memory map counts in RSS while its pages are mapped, and the system "
                 "can drop them).")
    lines.append("")
    return "\n".join(lines)


def _result(report, graph, meth):
    for g in report["graphs"]:
        if g["name"] == graph:
            return g["methods"].get(meth, {})
    return {}

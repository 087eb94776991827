"""The run report (JSON) and the plot of a run's rounds (HTML, or PNG through Chromium).

:func:`run_report` is what ``mst-dist run --json`` prints and ``--report PATH``
writes: the validated config, package versions, the cluster's shape, the
per-round statistics (``MSFResult.stats``: the same records the dashboard
draws), the timings and the result's summary.  :func:`write_plot` draws the
rounds with the dashboard's own figures (:mod:`mst_dist.diagnostics.figures`) into a
standalone HTML file (Bokeh's JS inlined: it opens offline); a ``.png`` path
renders that file with headless Chromium.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

from mst_dist.environment import versions
from mst_dist.io.writers import atomic_path

__all__ = ["run_report", "cluster_shape", "versions", "write_report", "write_plot", "PLOT_FORMATS"]

PLOT_FORMATS = (".html", ".png")


def cluster_shape(client, kind=None):
    """The cluster a run used: scheduler, dashboard and each worker's threads, memory, resources."""
    if client is None:
        return {"kind": kind}
    from mst_dist.engine.cluster_info import scheduler_workers

    workers = []
    for addr, w in sorted(scheduler_workers(client).items()):
        workers.append({"address": addr, "name": str(w.get("name")), "nthreads": w.get("nthreads"),
                        "memory_limit": w.get("memory_limit"), "resources": w.get("resources") or {},
                        "host": w.get("host")})
    from mst_dist.diagnostics.dashboard import dashboard_link

    return {"kind": kind, "scheduler": client.scheduler.address, "dashboard": dashboard_link(client),
            "n_workers": len(workers), "threads": sum(w["nthreads"] or 0 for w in workers),
            "workers": workers}


def _redacted(value):
    """``storage_options`` with every value hidden (they hold credentials); nested mappings keep their keys."""
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    return "***"


def run_report(cfg, result, wall_seconds, output=None, cluster=None):
    """The JSON-able report of a run (a dict); the values of ``storage_options`` are not in it."""
    st = result.stats
    if cfg.get("storage_options"):
        cfg = {**cfg, "storage_options": _redacted(cfg["storage_options"])}
    return {
        "config": cfg,
        "versions": versions(),
        "cluster": cluster if cluster is not None else {"kind": (cfg.get("cluster") or {}).get("kind")},
        "summary": result.summary(),
        "timings": {"wall_seconds": wall_seconds, "engine_seconds": st.total_seconds,
                    "setup_seconds": st.setup_seconds, "rounds_seconds": st.solve_seconds,
                    "finish_seconds": st.finish_seconds, "overhead_seconds": st.overhead_seconds,
                    "phase_totals": st.phase_totals()},
        "stats": st.to_dict(),
        "wall_seconds": wall_seconds,
        "output": output,
    }


def _jsonable(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dumps(report):
    return json.dumps(report, indent=2, default=_jsonable)


def write_report(report, path):
    """Write a run report as JSON (atomically)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(dumps(report))
        f.write("\n")
    return os.fspath(path)


def plot_format(path):
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in PLOT_FORMATS:
        raise ValueError(f"plot {os.fspath(path)!r}: unknown file type {ext or '(none)'!r}; "
                         f"supported: {', '.join(PLOT_FORMATS)}")
    return ext[1:]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _html(result, title, tmp):
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    from mst_dist.diagnostics import figures

    s = result.summary()
    status = {"run": "report", "state": "finished", "graph": title, "n_vertices": s["vertices"],
              "n_edges": s["edges"], "partitions": result.stats.partitions,
              "n_workers": result.stats.workers, "total_seconds": result.stats.total_seconds,
              "forest_edges": s["forest_edges"], "n_components": s["components"], "rounds": s["rounds"]}
    root = figures.standalone([r.to_dict() for r in result.stats.rounds], status=status)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(file_html(root, INLINE, title=f"mst-dist: {title}"))


def write_plot(result, path, title="run"):
    """Draw a run's rounds to ``path``: ``.html`` (standalone) or ``.png`` (needs Chromium)."""
    fmt = plot_format(path)
    if fmt == "html":
        with atomic_path(path) as tmp:
            _html(result, title, tmp)
        return os.fspath(path)
    exe = chromium()
    if exe is None:
        raise RuntimeError(f"plot {os.fspath(path)!r}: a PNG is rendered with headless Chromium, which is "
                           "not installed (apt-get install chromium); or write an .html plot")

    def write(tmp):
        with tempfile.TemporaryDirectory(prefix="mst-plot-", ignore_cleanup_errors=True) as d:
            page = os.path.join(d, "plot.html")
            _html(result, title, page)
            shot = os.path.join(d, "plot.png")
            cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   f"--user-data-dir={os.path.join(d, 'profile')}", f"--screenshot={shot}",
                   "--window-size=1300,900", "--hide-scrollbars", "--virtual-time-budget=10000",
                   "file://" + page]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if p.returncode != 0 or not os.path.exists(shot):
                raise RuntimeError(f"chromium could not render the plot (exit {p.returncode}): "
                                   f"{p.stderr.strip()[-500:]}")
            shutil.copyfile(shot, tmp)

    with atomic_path(path) as tmp:
        write(tmp)
    return os.fspath(path)

"""Run a scale config: every method on every graph, each in a process of its own, watched.

For each graph of the config, in order: a ``written`` or ``arrays`` graph is
first generated into a file (once per generator spec and format, not timed,
in a process of its own; deleted once no later graph needs it); then each of
the graph's methods runs in a fresh process (:mod:`benchmarks.scale.isolated`)
on the graph's cluster.  This process watches it:

- its events (baseline, each run's start and end, its record);
- the RSS of its whole process tree over its lifetime (a
  :class:`~benchmarks.memory.TreeSampler`), for the report of a run that
  does not finish;
- the time of its current step: past the config's ``timeout`` the process
  and its worker processes are killed, and the method is reported as
  ``timeout``.

A method that raises ``MemoryError``, or whose process the system kills
(SIGKILL) after its tree grew past 70% of the machine's memory, is reported
as ``oom``; other failures as ``error`` or ``killed``, with the tail of the
process's log.  The other methods and graphs go on.

Runs of graphs with the same generator spec must agree on the total weight,
the number of forest edges and the edge ids (their CRC-32); a disagreement is
recorded, and :func:`run_scale` raises
:class:`~benchmarks.runner.BenchMismatch` after writing the reports.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import psutil  # a dependency of distributed

from benchmarks.memory import TreeSampler
from benchmarks.runner import BenchMismatch, log_to_stderr, select_graphs
from benchmarks.scale.config import (
    STREAM_OF, generator_spec, graph_spec_key, source_of, validate_scale_config,
)
from benchmarks.scale.report import format_scale_report, summarise_scale
from mst_dist.config import ConfigError
from mst_dist.environment import loadavg, machine_info, versions
from mst_dist.generators import generate

__all__ = ["run_scale", "classify", "STATUSES"]

#: What a method's result may say: it ran; it was past its timeout; out of
#: memory; it failed otherwise; its process was killed by a signal.
STATUSES = ("ok", "timeout", "oom", "error", "killed")

#: Suffix of a written graph's path, by format (directories for npy and parquet).
_SUFFIX = {"edgelist": ".txt", "csv": ".csv", "gr": ".gr", "mtx": ".mtx", "npz": ".npz", "npy": ".npy",
           "egr": ".egr", "parquet": ".parquet.d"}

#: Share of the machine's memory past which a SIGKILL is taken for the out-of-memory killer's.
_OOM_SHARE = 0.7


def _with_overrides(cfg, repeat, only, methods):
    """The validated config with the command line's ``--repeat``, ``--only`` and ``--methods``."""
    if repeat is not None:
        cfg["repeat"] = max(1, int(repeat))
    if only:
        cfg["graphs"] = select_graphs(cfg["graphs"], only)
    if methods is not None:
        bad = [m for m in methods if m not in STREAM_OF]
        if bad:
            raise ConfigError(f"--methods: a scale config runs {', '.join(STREAM_OF)}; not "
                              f"{', '.join(bad)}", key="methods")
        for g in cfg["graphs"]:
            g["methods"] = [m for m in g["methods"] if m in methods]
        cfg["graphs"] = [g for g in cfg["graphs"] if g["methods"]]
    return cfg


class _Events:
    """Reads the JSON lines a child appends, as they come."""

    def __init__(self, path):
        self.path, self.offset, self.items, self._rest = path, 0, [], ""

    def poll(self):
        """The events appended since the last call."""
        try:
            with open(self.path, encoding="utf-8") as f:
                f.seek(self.offset)
                data = f.read()
                self.offset = f.tell()
        except FileNotFoundError:
            return []
        data = self._rest + data
        lines = data.split("\n")
        self._rest = lines.pop()  # a line not finished yet
        new = [json.loads(s) for s in lines if s.strip()]
        self.items.extend(new)
        return new


def _kill_tree(proc):
    """Kill a child process we started and every process it started (by their ids)."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    for p in [*kids]:
        try:
            p.kill()
        except psutil.Error:
            pass
    try:
        proc.kill()
    except OSError:
        pass
    proc.wait()
    psutil.wait_procs(kids, timeout=10)


def _tail(path, n=3000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _child_env():
    """This process's environment with the repository's root on ``PYTHONPATH`` (``benchmarks`` importable)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


def _isolated(step, spec, work, name, timeout, interval, log):
    """Run one step in a child process.

    Returns ``(status, events, note, lifetime peak bytes, wall seconds, log
    path, pids)``: ``pids`` the processes of its tree the sampler saw.
    """
    spec_path = os.path.join(work, f"{name}.spec.json")
    events_path = os.path.join(work, f"{name}.events.jsonl")
    log_path = os.path.join(work, f"{name}.log")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    _remove(events_path)  # the child appends: start from none
    events = _Events(events_path)
    t_start = time.perf_counter()
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks.scale.isolated", step, spec_path,
                                 events_path], stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=_child_env())
    sampler = TreeSampler(pid=proc.pid, interval=interval)
    try:
        sampler.start()
    except Exception:  # the child ended before the first sample
        sampler = None
    timed_out = False
    try:
        step_start = time.perf_counter()
        while proc.poll() is None:
            for ev in events.poll():
                if ev["event"] in ("run-start", "run-end", "baseline"):
                    step_start = time.perf_counter()
                    if ev["event"] == "run-start":
                        log(f"   {name}: run {ev['run']}{' (warm-up)' if ev['warmup'] else ''} ...")
            if time.perf_counter() - step_start > timeout:
                timed_out = True
                _kill_tree(proc)
                break
            time.sleep(0.1)
    except BaseException:
        _kill_tree(proc)
        raise
    finally:
        if sampler is not None:
            sampler.stop()
    events.poll()
    wall = time.perf_counter() - t_start
    peak = sampler.peak if sampler is not None else 0
    evs = events.items
    err = next((e for e in evs if e["event"] == "error"), None)
    status, note = classify(proc.returncode, err, timed_out, peak, psutil.virtual_memory().total, timeout)
    if status in ("error", "killed") and err is None:
        note += ": " + _tail(log_path, 600).strip()[-600:]
    pids = sampler.pids if sampler is not None else {proc.pid}
    return status, evs, note, peak, wall, log_path, pids


def classify(returncode, error, timed_out, peak, memory_total, timeout):
    """How a child ended: ``(status, note)``, the status one of :data:`STATUSES`.

    Parameters
    ----------
    returncode : int
        The child's exit status (negative: the signal that ended it).
    error : dict or None
        Its ``error`` event (``type``, ``message``, ``oom``), if it sent one.
    timed_out : bool
        Whether the runner killed it for going past ``timeout``.
    peak : int
        The largest RSS its process tree reached, in bytes.
    memory_total : int
        The machine's memory, in bytes.
    timeout : float
        The timeout, in seconds, for the note.
    """
    if timed_out:
        return "timeout", f"past the {timeout:g} s timeout: killed"
    if error is not None:
        return ("oom" if error.get("oom") else "error"), f"{error['type']}: {error['message']}"
    if returncode == 0:
        return "ok", None
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode).name
        except ValueError:
            sig = f"signal {-returncode}"
        if -returncode == signal.SIGKILL and peak >= _OOM_SHARE * memory_total:
            return "oom", (f"killed by {sig} with its process tree at {peak / 2**30:.1f} GiB of "
                           f"{memory_total / 2**30:.1f} GiB: out of memory")
        return "killed", f"killed by {sig}"
    return "error", f"exit status {returncode}"


def _method_result(status, evs, note, lifetime_peak, wall, log_path, pids):
    """A method's result from its child's events: runs, peak, baseline, answers."""
    res = {"status": status, "note": note, "lifetime_peak_bytes": lifetime_peak, "wall_seconds": wall,
           "log": log_path, "pids": sorted(pids)}
    for ev in evs:
        if ev["event"] == "cluster":
            res["cluster_seconds"] = ev["seconds"]
            res["workers"] = ev["workers"]
        elif ev["event"] == "baseline":
            res["baseline_bytes"] = ev["bytes"]
            res["prime_seconds"] = ev["prime_seconds"]
        elif ev["event"] == "arrays":
            res["arrays_bytes"] = ev["bytes"]
            res["arrays_nbytes"] = ev["nbytes"]
    ends = [{k: v for k, v in ev.items() if k not in ("event", "time")} for ev in evs if ev["event"] == "run-end"]
    res["warmup_runs"] = [r for r in ends if r["warmup"]]
    runs = res["runs"] = [r for r in ends if not r["warmup"]]
    if status != "ok" and not runs:
        res["tail"] = _tail(log_path)
        return res
    if status != "ok":
        res["tail"] = _tail(log_path)
    if runs:
        best = min(runs, key=lambda r: r["times"]["total"])
        res["seconds"] = best["times"]["total"]
        res["best"] = best
        res["peak_bytes"] = max(r["peak_bytes"] for r in runs)
        res["peak_anon_bytes"] = max(r["peak_anon_bytes"] for r in runs)
        res["workers_restarted"] = sum(r["workers_restarted"] + r["workers_pids_changed"] for r in runs)
        for key in ("m", "n_vertices", "total_weight", "forest_edges", "components", "edge_ids_crc32"):
            vals = [r[key] for r in res["warmup_runs"] + runs]
            res[key] = vals[0]
            if any(v != vals[0] for v in vals):
                res.setdefault("inconsistent", []).append(key)
    return res


def _check_agreement(report):
    """Runs of the same generator spec agree (weight, forest edges, edge ids); returns the problems."""
    groups = {}
    for g in report["graphs"]:
        for meth, r in g["methods"].items():
            r["agree"] = None
            if r["status"] == "ok":
                groups.setdefault(g["spec_key"], []).append((g["name"], meth, r))
    problems = []
    for runs in groups.values():
        ref = runs[0][2]
        answer = (ref["total_weight"], ref["forest_edges"], ref["edge_ids_crc32"])
        for name, meth, r in runs:
            if r.get("inconsistent"):
                problems.append(f"{name} {meth}: runs disagree on {', '.join(r['inconsistent'])}")
            if len(runs) > 1:
                r["agree"] = (r["total_weight"], r["forest_edges"], r["edge_ids_crc32"]) == answer
                if not r["agree"]:
                    problems.append(f"{name} {meth}: total weight {r['total_weight']}, "
                                    f"{r['forest_edges']:,} forest edges, edge ids {r['edge_ids_crc32']:08x}; "
                                    f"{runs[0][0]} {runs[0][1]}: {answer[0]}, {answer[1]:,}, {answer[2]:08x}")
    report["problems"] = problems
    report["all_agree"] = not problems
    return problems


def _prepare_file(g, runs, scratch, files, cfg, log):
    """The file behind a written or arrays graph, written once per spec and format: ``(entry, note)``."""
    kind = source_of(g)
    fmt = g["written"]["format"] if kind == "written" else "npy"
    key = (graph_spec_key(g), fmt)
    if key in files:
        return files[key]
    path = os.path.join(scratch, f"graph-{len(files)}{_SUFFIX[fmt]}")
    spec = {"generate": generator_spec(g), "path": path, "format": fmt}
    log(f"== {g['name']}: writing {spec['generate']} as {fmt} (not timed)")
    status, evs, note, peak, wall, _, _ = _isolated("write", spec, runs, f"write-{len(files)}", cfg["timeout"],
                                                    cfg["sample_interval"], log)
    done = next((e for e in evs if e["event"] == "written"), None)
    entry = {"path": path, "format": fmt, "status": status, "note": note, "seconds": wall,
             "peak_bytes": peak}
    if done is not None and status == "ok":
        entry.update(n_vertices=done["n_vertices"], m=done["m"])
        log(f"   written in {wall:.1f} s")
    else:
        log(f"   writing FAILED: {note}")
    files[key] = entry
    return entry


def _run_graph(g, cfg, runs, scratch, files, log):
    """Every method of one graph; its report entry."""
    kind = source_of(g)
    gen = dict(generator_spec(g))
    lazy = generate(gen.pop("kind"), **gen)  # its size; nothing generated here
    gres = {"name": g["name"], "source": kind, "generate": generator_spec(g), "spec_key": graph_spec_key(g),
            "n_vertices": int(lazy.n_vertices), "m": int(lazy.n_edges), "cluster": g["cluster"], "methods": {},
            "loadavg_start": loadavg()}
    spec = {"source": kind, "generate": generator_spec(g), "cluster": g["cluster"], "repeat": cfg["repeat"],
            "warmup": cfg["warmup"], "interval": cfg["sample_interval"]}
    if kind != "generate":
        f = _prepare_file(g, runs, scratch, files, cfg, log)
        gres["file"] = {k: f[k] for k in ("format", "status", "seconds", "peak_bytes") if k in f}
        if f["status"] != "ok":
            for meth in g["methods"]:
                gres["methods"][meth] = {"status": "error", "note": f"writing the graph failed: {f['note']}"}
            return gres
        spec.update(path=f["path"], format=f["format"], n_vertices=f["n_vertices"])
    log(f"== {g['name']}: {kind} {generator_spec(g)}"
        + (f" on {g['cluster']}" if g["cluster"] else " on the embedded default"))
    for meth in g["methods"]:
        name = f"{g['name']}-{meth}"
        out = _isolated("run", {**spec, "stream": STREAM_OF[meth]}, runs, name, cfg["timeout"],
                        cfg["sample_interval"], log)
        res = gres["methods"][meth] = _method_result(*out)
        if res["status"] == "ok":
            log(f"   {meth:<14} {res['seconds']:8.2f} s  peak {res['peak_bytes'] / 2**30:6.2f} GiB  "
                f"weight {res['total_weight']}")
        else:
            log(f"   {meth:<14} {res['status'].upper()}: {res['note']}")
    gres["loadavg_end"] = loadavg()
    return gres


def _last_use(graphs):
    """For each file key, the index of the last graph that reads it."""
    last = {}
    for i, g in enumerate(graphs):
        kind = source_of(g)
        if kind != "generate":
            fmt = g["written"]["format"] if kind == "written" else "npy"
            last[(graph_spec_key(g), fmt)] = i
    return last


def _remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.remove(path)


def run_scale(config, out_dir, *, repeat=None, only=None, methods=None, log=None, strict=True) -> dict:
    """Run a scale benchmark config; write ``bench.json`` and ``bench.md`` in ``out_dir``.

    Parameters
    ----------
    config : dict
        A scale config (as YAML-loaded; validated here, see
        :mod:`benchmarks.scale.config`).
    out_dir : path
        Created if needed; each run's log and events go to ``out_dir/runs``.
    repeat : int, optional
        Timed runs per method (overrides the config).
    only : str or list of str, optional
        Graph names to run (comma-separated string or list).
    methods : list of str, optional
        Methods to run (a subset of each graph's).
    log : callable, optional
        Progress lines (default: printed to stderr).
    strict : bool
        Raise :class:`~benchmarks.runner.BenchMismatch` (after writing
        the reports) when runs of one generated graph disagree.

    Returns
    -------
    dict
        What ``bench.json`` holds, plus ``"markdown"``: the report's text.
    """
    cfg = _with_overrides(validate_scale_config(config), repeat, only, methods)
    log = log or log_to_stderr

    os.makedirs(out_dir, exist_ok=True)
    runs_dir = os.path.join(out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    report = {"benchmark": "scale", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "command": " ".join(sys.argv), "machine": machine_info(), "versions": versions(),
              "config": cfg, "graphs": []}
    report["machine"]["loadavg_start"] = loadavg()

    def write():
        report["machine"]["loadavg_end"] = loadavg()
        _check_agreement(report)
        report["summary"] = summarise_scale(report)
        md = format_scale_report(report)
        with open(os.path.join(out_dir, "bench.json"), "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
        with open(os.path.join(out_dir, "bench.md"), "w", encoding="utf-8") as f:
            f.write(md)
        return md

    scratch = tempfile.mkdtemp(prefix="mst-bench-scale-", dir=cfg["scratch"])
    files, last = {}, _last_use(cfg["graphs"])
    try:
        for i, g in enumerate(cfg["graphs"]):
            report["graphs"].append(_run_graph(g, cfg, runs_dir, scratch, files, log))
            for key, entry in files.items():
                if last.get(key) == i:
                    _remove(entry["path"])
            write()  # partial results survive a crash
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    md = write()
    print(md)
    report["markdown"] = md
    if report["problems"] and strict:
        raise BenchMismatch("runs of one graph disagree: " + "; ".join(report["problems"]))
    return report

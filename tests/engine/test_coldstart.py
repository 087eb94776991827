"""Cold start: a fresh process prints nothing, the first run after install compiles as a visible step
(once, into a cache that persists, per user where the package folder cannot be written)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mst_dist import environment
from mst_dist.kernels import compile as kernel_compile
from mst_dist.diagnostics.progress import LiveProgress, format_event
from mst_dist.engine import warmup
from support import needs


def _python(code, env=None, timeout=600):
    """Run ``code`` in a fresh interpreter; the finished process (text output)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


@pytest.mark.slow
def test_fresh_process_calling_the_api_prints_nothing():
    """No logging configured: nothing on stdout or stderr, repeated calls and exit included."""
    proc = _python("""
        import numpy as np
        import mst_dist
        rng = np.random.default_rng(0)
        s, d = rng.integers(0, 2000, 20000), rng.integers(0, 2000, 20000)
        g = mst_dist.Graph.from_arrays(s, d, rng.random(20000))
        first = mst_dist.minimum_spanning_forest(g)
        for _ in range(3):
            assert mst_dist.minimum_spanning_forest(g).edge_ids.tolist() == first.edge_ids.tolist()
        # a bad input is an exception for the caller, not a message on the terminal
        try:
            mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays([0, -1], [1, 2], [1.0, 2.0]))
        except ValueError:
            pass
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""


@pytest.mark.slow
def test_without_reuse_a_fresh_process_prints_nothing_either():
    proc = _python("""
        import mst_dist
        g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])
        for _ in range(2):
            assert mst_dist.minimum_spanning_forest(g).edge_ids.tolist() == [1, 2, 3]
    """, env={"DASK_MST__EMBEDDED__REUSE": "False"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""


#: Put on PYTHONPATH, this makes every interpreter a read-only install (the compile processes a
#: run starts included): Numba's in-tree locator is refused, so the user's cache folder
#: ($XDG_CACHE_HOME) must take the kernels.
_READ_ONLY_SITECUSTOMIZE = """
from numba.core import caching
caching.InTreeCacheLocator.from_function = classmethod(lambda cls, f, p: None)
"""

#: A run on a read-only install; it also records how the compile step was split over processes:
#: what the engine's split returned, and which kernels of the one-worker path this process compiled
#: and which it loaded (from what the other process compiled) while the step ran.  The raw-edge
#: group's witnesses are its slices and rows: the graph's own validation compiles the validation
#: kernel here before the run, so that one is in memory before the step.
_READ_ONLY_INSTALL = """
    import json, os
    import numpy as np
    import mst_dist
    from mst_dist.engine import warmup
    from mst_dist.kernels.cpu import finish, slicing, solve
    kernels = {"slice": slicing._mark, "rows": finish._take_rows, "map": solve._p_best,
               "contract": solve._p_reduce_contract}
    split = {}
    split_over_processes = warmup._compile_in_processes

    def counted(jobs):
        split["jobs"], split["procs"] = jobs, split_over_processes(jobs)
        return split["procs"]

    warmup._compile_in_processes = counted
    events, at_start = [], {}

    def seen(event):
        events.append(event)
        if event.get("phase") != "compile":
            return
        counts = {k: (sum(d.stats.cache_misses.values()), sum(d.stats.cache_hits.values()))
                  for k, d in kernels.items()}
        if not event.get("done"):
            at_start.update(counts)
        else:
            split["compiled_here"] = {k: counts[k][0] - at_start[k][0] for k in kernels}
            split["loaded_here"] = {k: counts[k][1] - at_start[k][1] for k in kernels}

    g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], np.array([4, 1, 2, 7], np.int64))
    res = mst_dist.minimum_spanning_forest(g, progress=seen)
    print(json.dumps({"ids": res.edge_ids.tolist(), "cache": warmup.cache_dir(), "cores": os.cpu_count(),
                      "compile": [e for e in events if e.get("phase") == "compile"], "split": split}))
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_first_run_compiles_as_a_step_into_a_per_user_cache_that_persists(tmp_path):
    """The first run compiles as a step, split over processes, into the user's cache; the next loads it.

    The one cold compile of this module: it also shows the groups of the one-worker path compiling
    at once, one in a process of its own, one in the run's process.
    """
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_READ_ONLY_SITECUSTOMIZE)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "NUMBA_CACHE_DIR": "",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    first = _python(_READ_ONLY_INSTALL, env=env, timeout=1700)
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["ids"] == [1, 2, 3]
    assert out["cache"].startswith(str(tmp_path / "cache" / "numba"))
    # the step: announced before, done after, with its time
    assert [e.get("done", False) for e in out["compile"]] == [False, True]
    assert out["compile"][1]["elapsed"] > 0
    assert any(name.endswith(".nbi") for name in os.listdir(out["cache"]))
    # the next process finds every kernel compiled: no step, the same cache
    second = _python(_READ_ONLY_INSTALL, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["ids"] == [1, 2, 3] and again["cache"] == out["cache"] and again["compile"] == []
    assert again["split"] == {}
    # the first compilation was split over processes
    split = out["split"]
    if out["cores"] < 2:
        needs.unavailable("one core: the kernels compile in the calling process, nothing to split")
    assert split["jobs"] == [["int64", "local"]]
    assert len(warmup.GROUPS["local"]) == 2 and split["procs"] == 1
    # the raw-edge group compiled in the other process (into the same per-user cache), loaded here;
    # the solve group compiled here
    assert split["compiled_here"] == {"slice": 0, "rows": 0, "map": 1, "contract": 1}, split
    assert split["loaded_here"]["slice"] >= 1 and split["loaded_here"]["rows"] >= 1, split


def test_kernel_cache_dir_falls_back_to_a_per_user_temporary_folder(monkeypatch, tmp_path):
    """Neither the package folder nor the user's cache folder writable: NUMBA_CACHE_DIR is set."""
    import numba

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    refused = []

    def writable(path):
        if str(path).startswith(str(tmp_path)):
            return True
        refused.append(path)
        return False

    monkeypatch.setattr(kernel_compile, "_writable", writable)
    got = environment.kernel_cache_dir()
    assert got == str(tmp_path / f"mst-dist-numba-{os.getuid()}")
    assert os.environ["NUMBA_CACHE_DIR"] == got and numba.config.CACHE_DIR == got
    assert refused[0].endswith(os.path.join("kernels", "cpu", "__pycache__"))
    assert refused[1].endswith("numba")
    # a folder the caller chose wins
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert environment.kernel_cache_dir() == str(tmp_path / "mine")


def test_kernel_cache_dir_is_the_package_folder_where_writable(monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    got = environment.kernel_cache_dir(fallback=False)
    if os.access(os.path.dirname(os.path.dirname(got)), os.W_OK):
        assert got.endswith(os.path.join("mst_dist", "kernels", "cpu", "__pycache__"))
    assert "NUMBA_CACHE_DIR" not in os.environ


def test_ensure_compiled_does_nothing_once_cached():
    """In a process whose kernels are compiled and stamped, no step is shown again."""
    warmup.ensure_compiled("int64")  # compiles or loads, and stamps
    assert warmup.kernels_cached("int64")
    events = []
    assert warmup.ensure_compiled("int64", progress=events.append) is None
    assert warmup.ensure_compiled(np.dtype(np.int32), progress=events.append) is None  # same kind
    assert events == []


def test_stamp_follows_the_kernel_sources(monkeypatch):
    warmup.ensure_compiled("int64")
    assert warmup.kernels_cached("int64")
    monkeypatch.setattr(warmup, "_fingerprint", lambda: "other sources")
    assert not warmup.kernels_cached("int64")


def test_stamp_checks_each_kernels_cache_index(monkeypatch):
    warmup.ensure_compiled("int64")
    disps = warmup._dispatchers()
    name = next(iter(sorted(disps)))
    monkeypatch.setattr(disps[name]._cache._cache_file, "_load_index", lambda: {})
    stamped = open(warmup._stamp_path("int64", "local")).read().split()[1:]
    assert warmup.kernels_cached("int64") == (name not in stamped)


def test_compile_step_on_the_terminal():
    from rich.console import Console

    start = {"phase": "compile", "round": None, "elapsed": 0.0}
    end = {"phase": "compile", "round": None, "elapsed": 3.25, "done": True}
    assert format_event(start).startswith("compiling kernels \u2014 once after install")
    assert format_event(end).startswith("kernels compiled (once after install)")
    console = Console(record=True, width=100, force_terminal=False)
    live = LiveProgress(console=console)
    live(start)
    live(end)
    text = console.export_text()
    assert "kernels compiled (once after install) in 3.2 s" in text

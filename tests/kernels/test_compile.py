"""The CPU kernels' compile policy: the cache's folder, the dispatchers, the fingerprint, the stamps,
the groups of kernels and the processes that compile them side by side.

The cold start as a user meets it (a fresh process, a read-only install,
``mst-dist warmup``) is tested in tests/engine/test_coldstart.py and
tests/cli/test_warmup_command.py.
"""
import os
import textwrap

import pytest

from mst_dist.kernels import compile as kc


def test_the_package_folder_holds_the_cache_where_writable(monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(kc, "_writable", lambda path: True)
    assert kc.cache_location(fallback=False) == os.path.join(kc._CPU_DIR, "__pycache__")


def test_the_users_cache_folder_holds_it_for_a_read_only_install(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(kc, "_writable", lambda path: str(path).startswith(str(tmp_path)))
    assert kc.cache_location(fallback=False) == str(tmp_path / "numba")
    assert "NUMBA_CACHE_DIR" not in os.environ


def test_a_folder_the_caller_chose_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert kc.cache_location() == str(tmp_path)


def test_nowhere_to_write_is_none_without_the_fallback(monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(kc, "_writable", lambda path: False)
    assert kc.cache_location(fallback=False) is None
    assert kc.cache_location(fallback=True) is None  # the temporary folder cannot be written either
    assert "NUMBA_CACHE_DIR" not in os.environ


def test_dispatchers_are_the_backends_cached_kernels():
    disps = kc.dispatchers()
    assert "mst_dist.kernels.cpu.chunk._first_invalid" in disps
    assert "mst_dist.kernels.cpu.solve._p_best" in disps
    assert all(name.startswith("mst_dist.kernels.cpu.") for name in disps)
    assert {d.stats.cache_path for d in disps.values()} == {kc.cache_dir()}


def test_other_layers_add_their_kernel_modules():
    from mst_dist.generators import families

    mods = kc.kernel_modules("mst_dist.generators.families")
    assert mods[-1] is families and len(mods) == len(kc.BACKEND_MODULES) + 1
    assert any(n.startswith("mst_dist.generators.families.") for n in kc.dispatchers(mods))


def test_the_fingerprint_follows_the_sources_it_covers(tmp_path, monkeypatch):
    base = kc.fingerprint()
    assert base == kc.fingerprint() and len(base) == 64
    extra = tmp_path / "extra_kernels_mod.py"
    extra.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mods = kc.kernel_modules("extra_kernels_mod")
    with_extra = kc.fingerprint(mods)
    assert with_extra != base
    extra.write_text("X = 2\n")
    assert kc.fingerprint(mods) != with_extra


def _compiled_first_invalid():
    kc.exercise("raw", "int64")
    return kc.dispatchers()["mst_dist.kernels.cpu.chunk._first_invalid"]


def test_index_fresh_reads_numbas_index():
    assert kc.index_fresh(_compiled_first_invalid())


def test_index_fresh_falls_back_to_the_index_file_without_numbas_private_loader(monkeypatch):
    """Where Numba's cache object lacks the private index loader, the index file's presence answers."""
    d = _compiled_first_invalid()
    monkeypatch.delattr(d._cache, "_cache_file")
    assert kc.index_fresh(d)
    # and a kernel whose index is not there: no
    monkeypatch.setattr(d.py_func, "__qualname__", "_no_such_kernel")
    assert not kc.index_fresh(d)


def test_stamps_hold_for_their_fingerprint_and_fresh_indexes(tmp_path, monkeypatch):
    d = _compiled_first_invalid()
    disps = {"mst_dist.kernels.cpu.chunk._first_invalid": d}
    path = str(tmp_path / "mst-dist-warm-test.stamp")
    assert not kc.stamp_holds(path, "fp", disps)  # no stamp yet
    assert kc.write_stamp(path, "fp", disps)
    assert open(path).read().split() == ["fp", "mst_dist.kernels.cpu.chunk._first_invalid"]
    assert kc.stamp_holds(path, "fp", disps)
    assert not kc.stamp_holds(path, "other sources", disps)
    assert not kc.stamp_holds(path, "fp", {})  # a kernel the stamp names is gone
    # without Numba's private index loader the stamp still holds (the index files are there)
    monkeypatch.delattr(d._cache, "_cache_file")
    assert kc.stamp_holds(path, "fp", disps)
    assert not kc.write_stamp(str(tmp_path / "no-such-dir" / "x.stamp"), "fp", disps)
    assert not kc.write_stamp(None, "fp", disps)


def test_stamp_path_is_beside_the_cache():
    assert kc.stamp_path("local-int64") == os.path.join(kc.cache_dir(), "mst-dist-warm-local-int64.stamp")


def test_exercise_names_its_groups():
    with pytest.raises(ValueError, match="raw, solve, labels"):
        kc.exercise("everything")
    kc.exercise("solve", "float64")
    assert kc.dispatchers()["mst_dist.kernels.cpu.solve._p_best"].signatures


def test_compile_in_processes_runs_each_call_once(tmp_path, monkeypatch):
    (tmp_path / "mark_calls.py").write_text(textwrap.dedent("""
        import os
        def mark(path):
            with open(path, "a") as f:
                f.write(str(os.getpid()) + "\\n")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    calls = [(("mark_calls", "mark"), [str(a)]), (("mark_calls", "mark"), [str(b), str(b)])]
    assert kc.compile_in_processes(calls, cores=2) == 1
    assert a.read_text().split() != [str(os.getpid())]  # in a process of its own
    assert b.read_text().split() == [str(os.getpid())] * 2  # the last call: here, once per argument
    # one core, or one call: nothing started
    assert kc.compile_in_processes(calls, cores=1) == 0
    assert kc.compile_in_processes(calls[:1], cores=4) == 0


def test_a_failed_compile_process_is_reported_not_raised(tmp_path, monkeypatch):
    (tmp_path / "mark_calls2.py").write_text("def mark(path):\n    open(path, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    failures = []
    calls = [(("no_such_module_here", "f"), ["x"]), (("mark_calls2", "mark"), [str(tmp_path / "b")])]
    assert kc.compile_in_processes(calls, cores=2, on_failure=lambda code, err: failures.append((code, err))) == 1
    assert len(failures) == 1 and failures[0][0] != 0 and "no_such_module_here" in failures[0][1]
    assert (tmp_path / "b").exists()

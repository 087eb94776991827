"""mst_dist.errors: one base class, each error also its builtin, exported at the top, one exit status each."""
import importlib
import inspect
import pathlib
import pickle

import dask.config
import pytest

import mst_dist
from mst_dist import errors
from mst_dist.cli import commands
from mst_dist.errors import (Advice, CheckpointMismatchError, ClusterStalledError, ConfigError, ExchangeLostError,
                             GPUUnavailableError,
                             GraphFormatError, GraphTooLargeError, InvalidGraphError, MSTError, SharedStorageError,
                             WorkerAddressError)
from support import ROOT

DATA = pathlib.Path(ROOT) / "tests" / "data"

#: Each class of mst_dist.errors, the builtin it refines and the command line's exit status for it.
REFINES = {
    "MSTError": (Exception, None),
    "ConfigError": (ValueError, 2),
    "InvalidGraphError": (ValueError, 2),
    "GraphFormatError": (ValueError, 2),
    "GraphTooLargeError": (ValueError, 2),
    "CheckpointMismatchError": (ValueError, 2),
    "ClusterStalledError": (RuntimeError, 1),
    "ExchangeLostError": (RuntimeError, 1),
    "GPUUnavailableError": (RuntimeError, 2),
    "WorkerAddressError": (ConnectionError, 1),
    "SharedStorageError": (OSError, 2),
}

#: One instance of each error raised, with every attribute its raise sites give it.
INSTANCES = [
    ConfigError("cluster.n_workers: expected int, got str 'x'", key="cluster.n_workers", source="run.yaml"),
    InvalidGraphError("edge 3: weight is NaN", edge=3, source="g.txt"),
    GraphFormatError("expected 3 columns, found 2", path="g.txt", line=4, edge=2),
    GraphFormatError("weight is infinite", path="g.parquet", row_group=1, row=7),
    CheckpointMismatchError("checkpoint 'ck' holds the state of another run"),
    GraphTooLargeError("n_vertices = 9 would need about 1 GiB", source="g.txt", advice=(
        Advice("one thread per worker", cluster=(("threads_per_worker", 1),)),)),
    ClusterStalledError("every worker (2) has been paused for 31 s", "paused", waited=31.0),
    ClusterStalledError("task mst-map-r0-ab-1 killed its workers", "killed-worker", key="mst-map-r0-ab-1"),
    GPUUnavailableError("backend='gpu' needs GPU workers"),
    ExchangeLostError("exchange outputs ['mst-hook-serve-r1-ab-s3-0'] are on no worker",
                      keys=["mst-hook-serve-r1-ab-s3-0"]),
    WorkerAddressError("worker tcp://127.0.0.1:4001 registered with a loopback address",
                       workers=["tcp://127.0.0.1:4001"], scheduler="tcp://10.0.0.1:8786"),
    SharedStorageError("checkpoint '/tmp/ck' is not shared with 1 of 2 worker(s)", path="/tmp/ck",
                       workers=["tcp://10.0.0.3:4001"]),
]

#: Where each error was defined before mst_dist.errors: importing it from there still works.
OLD_HOMES = [
    ("mst_dist.config", "ConfigError"),
    ("mst_dist.graph", "InvalidGraphError"),
    ("mst_dist.io.formats", "GraphFormatError"),
    ("mst_dist.engine.checkpoint", "CheckpointMismatchError"),
    ("mst_dist.engine.watchdog", "ClusterStalledError"),
    ("mst_dist.kernels.gpu", "GPUUnavailableError"),
    ("mst_dist.kernels.gpu.device", "GPUUnavailableError"),
]


def _attributes(exc):
    return type(exc), str(exc), vars(exc)


# ---------------------------------------------------------------------------
# the classes
# ---------------------------------------------------------------------------

def test_every_class_of_the_module_is_listed():
    defined = sorted(n for n, v in vars(errors).items()
                     if inspect.isclass(v) and issubclass(v, BaseException) and v.__module__ == errors.__name__)
    assert defined == sorted(errors.__all__) == sorted(REFINES)


@pytest.mark.parametrize("name", sorted(REFINES))
def test_each_error_is_an_mst_error_and_its_builtin(name):
    cls = getattr(errors, name)
    builtin, _ = REFINES[name]
    assert issubclass(cls, MSTError) and issubclass(cls, builtin)
    assert MSTError.__bases__ == (Exception,)
    assert cls.__doc__ and len(cls.__doc__.split("\n\n")) > 1, f"{name}: say when it is raised and what to do"


def test_graph_format_error_is_an_invalid_graph_error():
    assert issubclass(GraphFormatError, InvalidGraphError)


def test_an_error_is_caught_as_its_builtin():
    with pytest.raises(ValueError, match="edge 3"):
        raise InvalidGraphError("edge 3: weight is NaN", edge=3)
    with pytest.raises(MSTError, match="paused"):
        raise ClusterStalledError("paused", "paused")


@pytest.mark.parametrize("exc", INSTANCES, ids=lambda e: type(e).__name__)
def test_errors_pickle_with_their_attributes(exc):
    assert _attributes(pickle.loads(pickle.dumps(exc))) == _attributes(exc)


def test_graph_format_error_keeps_its_location():
    e = GraphFormatError("bad token", path="/x/g.txt", line=7)
    assert (str(e), e.reason, e.path, e.line, e.source) == ("/x/g.txt, line 7: bad token", "bad token",
                                                            "/x/g.txt", 7, "/x/g.txt")


def _raise(exc):
    raise exc


@pytest.mark.parametrize("exc", INSTANCES, ids=lambda e: type(e).__name__)
def test_an_error_raised_in_a_task_reaches_the_caller_as_itself(client, exc):
    """Dask re-raises a task's exception on the client: same class, same attributes."""
    with pytest.raises(type(exc)) as info:
        client.submit(_raise, exc, key=f"mst-test-raise-{id(exc)}").result()
    assert _attributes(info.value) == _attributes(exc)


# ---------------------------------------------------------------------------
# where they are imported from
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(REFINES))
def test_every_error_is_exported_at_the_top(name):
    assert getattr(mst_dist, name) is getattr(errors, name)
    assert name in mst_dist.__all__ and name in dir(mst_dist)


@pytest.mark.parametrize("module, name", OLD_HOMES)
def test_the_old_homes_give_the_same_class(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


# ---------------------------------------------------------------------------
# the command line: one exit status per class
# ---------------------------------------------------------------------------

#: A command that gets as far as starting its cluster (a scheduler address: nothing to compile first).
SUBMIT = ["submit", "--scheduler", "tcp://127.0.0.1:1", "--generate", "grid", "--rows", "4", "--cols", "4", "-q"]


class _AnotherError(MSTError, LookupError):
    """An error of the package that no row of the command line's table names."""


@pytest.mark.parametrize("exc, status", [
    *[(e, REFINES[type(e).__name__][1]) for e in INSTANCES],
    (ConfigError("cluster.memory_limit: expected bytes,\ngot 'lots'", key="cluster.memory_limit"), 2),
    (_AnotherError("no such thing"), 1),
    (ImportError("dask_jobqueue is not installed: pip install 'mst-dist[hpc]'"), 2),
    (ConnectionError("cannot connect to the scheduler at tcp://127.0.0.1:1 within 2 s"), 1),
    (TimeoutError("no worker joined within 60 s"), 1),
], ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else f"status-{v}")
def test_each_error_ends_a_command_with_its_status(monkeypatch, capsys, exc, status):
    def fail(cluster, gpu=False):
        raise exc

    monkeypatch.setattr(commands, "make_client", fail)
    assert mst_dist.cli.main(SUBMIT) == status
    assert capsys.readouterr().err == "mst-dist: error: " + " ".join(str(exc).split("\n")) + "\n"


def test_an_interrupted_command_ends_with_130(monkeypatch, capsys):
    def interrupted(cluster, gpu=False):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "make_client", interrupted)
    assert mst_dist.cli.main(SUBMIT) == 130
    assert capsys.readouterr().err == "mst-dist: interrupted\n"


def test_an_error_of_no_row_is_a_bug_and_keeps_its_traceback(monkeypatch):
    def broken(cluster, gpu=False):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(commands, "make_client", broken)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        mst_dist.cli.main(SUBMIT)


@pytest.mark.parametrize("name", sorted(set(REFINES) - {"MSTError"}))
def test_each_docstring_states_the_exit_status(name):
    status = REFINES[name][1]
    assert f"exits with status {status}" in " ".join(getattr(errors, name).__doc__.split())


def test_a_bad_run_config_exits_2(tmp_path, capsys):
    (tmp_path / "run.yaml").write_text("graph: {generate: {kind: grid, rows: 4, cols: 4}}\n")
    assert mst_dist.cli.main(["job-script", str(tmp_path / "run.yaml")]) == 2  # a local cluster has no script
    err = capsys.readouterr().err
    assert err.startswith("mst-dist: error: ") and "cluster.kind" in err and err.count("\n") == 1


def test_gpu_backend_where_no_gpu_can_run_exits_2(capsys):
    with dask.config.set({"mst.gpu.array-module": "no-such-array-module"}):  # unusable on any machine
        assert mst_dist.cli.main(["run", "--generate", "hypercube", "--d", "2", "--backend", "gpu", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mst-dist: error: backend='gpu'") and "no-such-array-module" in err
    assert err.count("\n") == 1


def test_a_bad_file_read_on_a_worker_exits_2(tmp_path, capsys):
    """The reader raises GraphFormatError in a task on the cluster's worker: the same one-line error."""
    rows = (DATA / "tiny.txt").read_text().splitlines()
    assert rows[5] == "1\t2\t1"
    rows[5] = "1\t2\tx"  # the third edge row: its weight is no number
    (tmp_path / "g.txt").write_text("\n".join(rows) + "\n")
    assert mst_dist.cli.main(["run", "--input", str(tmp_path / "g.txt"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mst-dist: error: {tmp_path / 'g.txt'}, line 6: ") and "'x'" in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("exc", INSTANCES, ids=lambda e: type(e).__name__)
def test_workers_do_not_log_a_task_error_the_command_reports(exc):
    """Dask logs a failed task's exception as its repr: reports of mst-dist's tasks failing with its own errors are dropped."""
    import logging

    f = commands.EngineErrorFilter(commands._reported_errors())
    record = logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1,
                               "Compute Failed\nKey:       %s\nState:     %s\nTask:  %s\nException: %r\n"
                               "Traceback: %r\n", ("mst-load-r0-0123abcd-3", "executing", "load(...)",
                                                   repr(exc), "  File ..."), None)
    assert not f.filter(record)
    record.args = ("mst-load-r0-0123abcd-3", "executing", "load(...)", repr(ValueError(str(exc))), "")
    assert f.filter(record)

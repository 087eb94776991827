"""A refusal's advice runs: each shape a :class:`~mst_dist.GraphTooLargeError` advises, followed as the
command line prints it (and as the Python keywords name it), completes with Kruskal's forest.

Small graphs under memory limits of a few MiB force the refusals of large ones; Dask's memory manager
is off (its limits are then only what the engine plans against: a Python process alone is more than
these), and the command line's least limit per worker is lowered to match.
"""
from __future__ import annotations

import shlex

import dask
import distributed  # noqa: F401  (its config defaults in place before a test sets some of them)
import pytest

import mst_dist
from mst_dist.cli import commands as cli
from mst_dist.errors import GraphTooLargeError
from support.oracle import assert_forest_file, assert_result, expected

#: Dask's memory manager off (a worker's limit is what the engine plans against, nothing more); no dashboard.
MANAGER_OFF = {**{f"distributed.worker.memory.{k}": False for k in ("target", "spill", "pause", "terminate")},
               "mst.cluster.dashboard-address": None}

#: The graphs: 4,096 vertices streamed (about 200 KiB on a worker of 180 KiB, whatever its threads), 4,096
#: resident (128 KiB of per-vertex state).
STREAMED = ("--generate", "rmat", "--scale", "12", "--edge-factor", "2", "--seed", "1")
RESIDENT = ("--generate", "rmat", "--scale", "12", "--edge-factor", "4", "--seed", "2")


@pytest.fixture
def tiny_limits(monkeypatch):
    """Memory limits of a few MiB, as the engine sees them, and Dask's manager off."""
    monkeypatch.setattr("mst_dist.deploy._core.MIN_MEMORY_LIMIT", 2**16)
    with dask.config.set(MANAGER_OFF):
        yield


def _graph(flags):
    return mst_dist.generate("rmat", scale=int(flags[3]), edge_factor=int(flags[5]), seed=int(flags[7]))


def _refused(argv, capsys):
    """The ``try:`` commands a refused ``mst-dist`` prints (it exits with status 2)."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "mst-dist: error: n_vertices = " in err and "It fits: " in err, err
    return [shlex.split(line.partition("try: ")[2])[1:] for line in err.splitlines() if "try: mst-dist " in line]


def _follows(commands, graph, tmp_path, capsys):
    exp = expected(graph)
    for i, command in enumerate(commands):
        out = tmp_path / f"forest-{i}.npz"
        assert cli.main([*command, "-o", str(out)]) == 0, (command, capsys.readouterr().err)
        assert_forest_file(out, exp)


@pytest.mark.usefixtures("tiny_limits", "restore_logging")
def test_a_streaming_refusals_commands_each_complete(tmp_path, capsys):
    """One in-process worker of 2 threads and 180 KiB cannot solve 4,096 vertices' slices: two worker
    processes with the vertex map spread, or 1 MiB: each printed command completes."""
    base = ["run", *STREAMED, "--stream", "always", "--threads", "2", "--memory-limit", "180KiB", "-q"]
    commands = _refused(base, capsys)
    graph = ["run", *STREAMED, "--stream", "always"]
    assert commands == [
        [*graph, "-q", "--vertex-partition", "always", "--workers", "2", "--threads", "1", "--processes",
         "--memory-limit", "1MiB"],
        [*graph, "--threads", "2", "-q", "--memory-limit", "1MiB"]]
    _follows(commands, _graph(STREAMED), tmp_path, capsys)


@pytest.mark.usefixtures("tiny_limits", "restore_logging")
def test_a_resident_refusals_commands_each_complete(tmp_path, capsys):
    """4,096 vertices' state (128 KiB) on one worker of 100 KiB, edges resident: spread over worker
    processes, or more memory."""
    commands = _refused(["run", *RESIDENT, "--stream", "never", "--memory-limit", "100KiB", "-q"], capsys)
    graph = ["run", *RESIDENT, "--stream", "never"]
    assert commands == [
        [*graph, "-q", "--vertex-partition", "always", "--workers", "3", "--threads", "1", "--processes",
         "--memory-limit", "1MiB"],
        [*graph, "-q", "--memory-limit", "1MiB"]]
    _follows(commands, _graph(RESIDENT), tmp_path, capsys)


@pytest.mark.usefixtures("tiny_limits", "restore_logging")
def test_in_process_workers_share_one_budget_and_the_advice_is_processes(tmp_path, capsys):
    """Two workers that are threads of this process share its limit (Dask pauses each on the whole
    process): the spread over them is refused where two worker processes of that limit hold it, and the
    advice is worker processes."""
    argv = ["run", *RESIDENT, "--stream", "never", "--vertex-partition", "always", "--workers", "2",
            "--threads", "1", "--no-processes", "--memory-limit", "200KiB", "-q"]
    commands = _refused(argv, capsys)
    # worker processes: the command the resident refusal advises too, and follows to Kruskal's forest
    assert commands[0] == ["run", *RESIDENT, "--stream", "never", "-q", "--vertex-partition", "always",
                           "--workers", "3", "--threads", "1", "--processes", "--memory-limit", "1MiB"]
    # the same two workers as processes: no refusal
    out = tmp_path / "processes.npz"
    processes = [a for a in argv if a != "--no-processes"]
    assert cli.main([*processes, "-o", str(out)]) == 0, capsys.readouterr().err
    assert_forest_file(out, expected(_graph(RESIDENT)))


@pytest.mark.usefixtures("tiny_limits")
def test_the_python_advice_names_keywords_that_complete():
    """From Python: the refusal's message names the keywords and cluster settings; each, given to a
    ``LocalCluster`` and the call, completes with Kruskal's forest."""
    from distributed import Client, LocalCluster

    graph = _graph(STREAMED)
    shape = {"n_workers": 1, "threads_per_worker": 2, "processes": False, "memory_limit": 180 * 2**10}
    with LocalCluster(dashboard_address=":0", **shape) as cluster, Client(cluster, set_as_default=False) as client:
        with pytest.raises(GraphTooLargeError) as info:
            mst_dist.minimum_spanning_forest(graph, client, stream="always")
    advice = info.value.advice
    assert len(advice) == 2 and all(a.describe() in str(info.value) for a in advice)
    assert "vertex_partition='always'" in str(info.value)
    exp = expected(graph)
    for a in advice:
        settings = {**shape, **dict(a.cluster)}
        with LocalCluster(dashboard_address=":0", **settings) as cluster, \
                Client(cluster, set_as_default=False) as client:
            assert_result(mst_dist.minimum_spanning_forest(graph, client, stream="always", **dict(a.keywords)), exp)


def test_advice_on_a_cluster_the_command_line_does_not_start_keeps_only_its_keywords():
    """On a scheduler's cluster (``--scheduler``) a shape of workers is not a flag: only advice that
    changes the call's keywords is printed; flags given as ``--flag=value`` are replaced too."""
    from mst_dist.cli.advice import advised_commands
    from mst_dist.errors import Advice

    spread = Advice("spread", keywords=(("vertex_partition", "always"),))
    workers = Advice("more workers", cluster=(("n_workers", 3), ("processes", True)))
    argv = ["run", "x.yaml", "--vertex-partition=never", "--no-processes"]
    assert advised_commands((spread, workers), argv, local=False) == [
        "mst-dist run x.yaml --no-processes --vertex-partition always"]
    assert advised_commands((spread, workers), argv, local=True) == [
        "mst-dist run x.yaml --no-processes --vertex-partition always",
        "mst-dist run x.yaml --vertex-partition=never --workers 3 --processes"]


def test_advice_past_this_machines_memory_is_not_printed_as_a_command():
    """A local cluster whose workers' limits add up to more than this machine has would stall or swap:
    that advice stays in the message (for a cluster elsewhere) but is not a command here."""
    from mst_dist.cli.advice import advised_commands
    from mst_dist.errors import Advice

    more = Advice("more memory per worker", cluster=(("memory_limit", 48 * 2**30),))
    spread = Advice("spread", keywords=(("vertex_partition", "always"),),
                    cluster=(("n_workers", 2), ("memory_limit", 12 * 2**30)))
    argv = ["run", "--generate", "rmat", "--scale", "28"]
    assert advised_commands((more, spread), argv, machine=24 * 2**30) == [
        "mst-dist run --generate rmat --scale 28 --vertex-partition always --workers 2 --memory-limit 12GiB"]
    assert len(advised_commands((more, spread), argv, machine=64 * 2**30)) == 2
    assert advised_commands((spread,), argv, machine=20 * 2**30) == []

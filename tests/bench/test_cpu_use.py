"""The CPU accounting of the ceiling benchmark (benchmarks/vertex_partition.py ``CpuUse``): the workers'
processes, this process, and the CPU Dask meters inside the tasks' functions; and the transport benchmark
built on it (Dask's own CPU per GiB and per task)."""
import json
import time

import pytest

from benchmarks.vertex_partition import CpuUse

distributed = pytest.importorskip("distributed")


def _burn(seconds):
    t = time.thread_time()
    x = 0
    while time.thread_time() - t < seconds:
        x += 1
    return x


def test_cpu_of_tasks_workers_and_this_process():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as c:
        c.run(lambda: None)
        with CpuUse(c) as cpu:
            futures = [c.submit(_burn, 0.4, key=f"mst-burn-{i}", pure=False) for i in range(2)]
            c.gather(futures)
            _burn(0.3)  # this process's own
        s = cpu.summary()
    workers, me = s["parts"]["workers"], s["parts"]["this process"]
    assert 0.75 <= s["tasks_cpu"] < 2.0, s  # two tasks of 0.4 s of thread CPU each, metered by Dask
    assert set(s["tasks_by_prefix"]) == {"mst-burn"}
    assert workers["user"] + workers["system"] >= 0.75  # the tasks ran in the worker processes
    assert me["user"] + me["system"] >= 0.28
    assert s["cpu"] == pytest.approx(sum(p["user"] + p["system"] for p in s["parts"].values()))
    assert s["wall"] > 0 and "the tasks' functions on the workers" in cpu.line()


def test_one_process_alone():
    with CpuUse() as cpu:
        _burn(0.2)
    s = cpu.summary()
    assert s["tasks_cpu"] == 0 and "this process" in s["parts"]
    assert s["parts"]["this process"]["user"] + s["parts"]["this process"]["system"] >= 0.18


def test_transport_benchmark(tmp_path, capsys):
    from benchmarks import vertex_partition

    out = tmp_path / "transport.json"
    vertex_partition.main(["transport", "--workers", "2", "--sizes", "64KiB,256KiB", "--rounds", "2",
                           "--out", str(out)])
    assert "a GiB" in capsys.readouterr().out
    runs = json.loads(out.read_text())["runs"]
    assert [r["size"] for r in runs] == [65536, 262144]
    for r in runs:
        assert r["bytes_crossed"] == 2 * 2 * 1 * r["size"] and r["tasks"] == 2 * (2 + 2)
        assert r["workers_outside_tasks_per_gib"] > 0 and r["scheduler_ms_per_task"] > 0
        assert set(r["cpu"]["tasks_by_prefix"]) <= {"mst-tblock", "mst-ttake"}

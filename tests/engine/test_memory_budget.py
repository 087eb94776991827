"""The memory a run plans against is the memory Dask's manager lets each worker use: workers that are
threads of one process share its limit (:func:`mst_dist.engine.plan.memory_budget`)."""
from __future__ import annotations

from mst_dist.engine.plan import memory_budget

GIB = 2**30


def test_worker_processes_each_have_their_limit():
    workers = {"tcp://127.0.0.1:4001": {"memory_limit": 4 * GIB}, "tcp://127.0.0.1:4002": {"memory_limit": 2 * GIB}}
    budget = memory_budget(workers, fraction=None)
    assert budget.processes == 2
    assert (budget.smallest, budget.largest, budget.total) == (2 * GIB, 4 * GIB, 6 * GIB)


def test_threads_of_one_process_share_the_smallest_limit():
    """Two in-process workers of 4 GiB pause when their process nears 4 GiB: 2 GiB each is planned; a
    worker of another process keeps its own."""
    workers = {"inproc://10.0.0.1/7061/4": {"memory_limit": 4 * GIB},
               "inproc://10.0.0.1/7061/6": {"memory_limit": 5 * GIB},
               "inproc://10.0.0.1/8000/1": {"memory_limit": 3 * GIB}}
    budget = memory_budget(workers, fraction=None)
    assert budget.processes == 2
    assert budget.per_worker == {"inproc://10.0.0.1/7061/4": 2 * GIB, "inproc://10.0.0.1/7061/6": 2 * GIB,
                                 "inproc://10.0.0.1/8000/1": 3 * GIB}
    assert budget.total == 7 * GIB and budget.room == budget.per_worker  # no pause: the limits are the room


def test_no_limit_is_unknown():
    budget = memory_budget({"inproc://h/1/1": {"memory_limit": 0}, "inproc://h/1/2": {"memory_limit": GIB}})
    assert budget.smallest == budget.total == 0


def test_the_room_is_below_the_pause_less_what_the_process_holds():
    """Dask pauses a worker when its process holds 80% of its limit: a process of 4 GiB holding 1 GiB
    already leaves a run 2.2 GiB, shared by its two in-process workers."""
    workers = {"inproc://h/1/1": {"memory_limit": 4 * GIB, "metrics": {"memory": GIB}},
               "inproc://h/1/2": {"memory_limit": 4 * GIB, "metrics": {"memory": GIB}},
               "tcp://h:2": {"memory_limit": GIB, "metrics": {"memory": GIB}}}
    budget = memory_budget(workers, fraction=0.8)
    share = (int(4 * GIB * 0.8) - GIB) // 2
    assert budget.room == {"inproc://h/1/1": share, "inproc://h/1/2": share, "tcp://h:2": 0}
    assert (budget.held, budget.fraction) == (GIB, 0.8)


def test_the_pause_is_dasks_setting():
    import dask

    from mst_dist.engine.plan import pause_fraction

    with dask.config.set({"distributed.worker.memory.pause": 0.7}):
        assert pause_fraction() == 0.7
    with dask.config.set({"distributed.worker.memory.pause": False, "distributed.worker.memory.terminate": 0.9}):
        assert pause_fraction() == 0.9
    with dask.config.set({"distributed.worker.memory.pause": False, "distributed.worker.memory.terminate": False}):
        assert pause_fraction() is None

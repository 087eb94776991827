"""Tasks sent as one graph (mst_dist.engine.batch): the same results and placement as ``submit``."""
import operator

import pytest

from mst_dist.engine.batch import Batch
from mst_dist.engine.placement import pin


def where(*_):
    from distributed import get_worker

    return get_worker().address


def total(*values, extra=()):
    return sum(values) + sum(extra)


def test_a_batch_computes_what_submit_would_where_its_pins_say(client2):
    workers = sorted(client2.scheduler_info()["workers"])
    with Batch(client2) as b:
        leaves = [b.submit(operator.mul, i, 10, key=f"mst-test-batch-leaf-{i}", **pin(workers[i % 2]))
                  for i in range(6)]
        # futures of the same batch as arguments, and nested in a keyword's list
        top = b.submit(total, leaves[0], leaves[1], extra=leaves[2:], key="mst-test-batch-top", **pin(workers[1]))
        placed = [b.submit(where, leaves[i], key=f"mst-test-batch-where-{i}", **pin(workers[i % 2]))
                  for i in range(6)]
        assert not client2.run_on_scheduler(lambda dask_scheduler: "mst-test-batch-top" in dask_scheduler.tasks)
    assert top.result() == 150
    assert client2.gather(placed) == [workers[i % 2] for i in range(6)]
    # a later batch and a plain submit build on the futures handed back
    with Batch(client2) as b:
        again = b.submit(total, top, leaves[5], key="mst-test-batch-again")
    assert again.result() == 200
    assert client2.submit(operator.add, again, 1, key="mst-test-batch-plain").result() == 201


def test_a_failing_block_sends_nothing(client2):
    with pytest.raises(RuntimeError, match="stop"):
        with Batch(client2) as b:
            b.submit(operator.add, 1, 2, key="mst-test-batch-unsent")
            raise RuntimeError("stop")
    assert not client2.run_on_scheduler(lambda dask_scheduler: "mst-test-batch-unsent" in dask_scheduler.tasks)


def test_a_task_error_reaches_the_future(client2):
    with Batch(client2) as b:
        bad = b.submit(operator.truediv, 1, 0, key="mst-test-batch-div")
        after = b.submit(operator.add, bad, 1, key="mst-test-batch-after")
    with pytest.raises(ZeroDivisionError):
        after.result()


def test_what_a_task_takes_is_held_until_the_graph_is_sent(client2):
    """A caller may let go of a task's argument once it is submitted to a batch (``parts = [b.submit(f,
    *parts)]``): the scheduler keeps it until the graph that needs it comes, however late the flush."""
    import time

    dep = client2.submit(operator.mul, 6, 7, key="mst-test-batch-dep")
    assert dep.result() == 42
    b = Batch(client2)
    parts = [dep]
    parts = [b.submit(operator.add, *parts, 1, key="mst-test-batch-dependent")]
    del dep
    deadline = time.monotonic() + 2  # the client's release of the argument (had it let go) reaches the scheduler
    while time.monotonic() < deadline and client2.run_on_scheduler(
            lambda dask_scheduler: "mst-test-batch-dep" in dask_scheduler.tasks):
        time.sleep(0.05)
    b.flush()
    assert parts[0].result() == 43

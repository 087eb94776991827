"""Many small tasks sent to the scheduler as one graph.

``client.submit`` sends one graph message per task, and the scheduler takes
each message in turn: a few milliseconds a task.  A partitioned round is
hundreds of small tasks (the exchanges' splits, serves and assembles, and
the steps between them), so that cost is most of a round on graphs of modest size.  A
:class:`Batch` takes the same calls, hands back each task's
:class:`~distributed.Future` at once, and sends the tasks in one
:class:`~dask.highlevelgraph.HighLevelGraph` when it is flushed (one layer
per placement, its ``workers``/``allow_other_workers`` as the layer's
annotations, which the scheduler applies to each key as it would the
keywords of ``submit``).  ``python -m benchmarks.submit_batch`` measures
both ways on 2 in-process workers (see docs/benchmarks.md).

The futures handed back name keys the scheduler does not know until the
flush: use a batch as a context manager (it flushes on leaving) and wait on
nothing it handed back inside it before calling :meth:`flush`.  The futures a task takes are held until
the flush too: a caller may let them go once submitted.  With a Dask older
than its task specification (``dask._task_spec``, Dask 2025.1), each call is
a plain ``submit``.
"""
from __future__ import annotations

import uuid

from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from distributed import Future
from distributed.client import futures_of

try:
    from dask._task_spec import Task, parse_input
except ImportError:  # pragma: no cover - Dask before 2025.1: tasks are submitted one by one
    Task = None


class Batch:
    """``submit`` as :meth:`distributed.Client.submit` (a ``key`` always given), sent on :meth:`flush`."""

    def __init__(self, client):
        self.client = client
        self._tasks = {}
        self._where = {}
        self._handles = []

    def submit(self, func, *args, key, workers=None, allow_other_workers=False, **kwargs):
        """A future of ``func(*args, **kwargs)`` under ``key``, placed as ``submit``'s keywords say."""
        if Task is None:
            return self.client.submit(func, *args, key=key, workers=workers,
                                      allow_other_workers=allow_other_workers, **kwargs)
        if key in self._tasks or key in self.client.futures:
            return Future(key, self.client)  # as ``submit`` does for a key it has already sent
        self._tasks[key] = Task(key, func, *(parse_input(a) for a in args),
                                **{k: parse_input(v) for k, v in kwargs.items()})
        self._where[key] = (tuple(workers or ()), bool(allow_other_workers and workers))
        fut = Future(key, self.client)
        self._handles.append(fut)  # holds the key until the graph is sent
        # and the futures it takes: a caller may let them go before the flush (``parts = [b.submit(f, *parts)]``),
        # and the scheduler must not forget them before the graph that needs them comes
        self._handles.extend(futures_of((args, kwargs)))
        return fut

    def flush(self):
        """Send the tasks submitted since the last flush as one graph."""
        if not self._tasks:
            return
        by_place = {}
        for k, place in self._where.items():
            by_place.setdefault(place, {})[k] = self._tasks[k]
        layers = {}
        for (workers, loose), tasks in by_place.items():
            annotations = {"workers": list(workers), "allow_other_workers": loose} if workers else None
            layers[f"mst-batch-{uuid.uuid4().hex}"] = MaterializedLayer(tasks, annotations=annotations)
        keys = list(self._tasks)
        self.client.get(HighLevelGraph(layers, {name: set() for name in layers}), keys, sync=False)
        self._tasks, self._where, self._handles = {}, {}, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.flush()
        else:  # nothing sent: let the handles go
            self._tasks, self._where, self._handles = {}, {}, []
        return False

"""Which cluster a call runs on: the one rule every entry point follows.

``client=None`` means the current ``distributed`` client where there is one,
as everywhere in Dask (``dask.compute``, ``dask.dataframe``):

1. inside a task (``distributed.get_worker()`` answers), the cluster the task
   runs on, through :func:`distributed.worker_client`: the task secedes from
   its worker's thread pool while the run's own tasks execute, so a call made
   in a task works on workers of one thread and cannot deadlock, and no
   cluster is ever started inside a worker;
2. else the current client (the one a ``with client.as_current():`` block
   names, else the process's default client: the last ``Client`` made);
3. else none: the solver's embedded in-process cluster
   (:func:`mst_dist.deploy.local.shared_client`), the readers' and
   generators' threads of this process.

``client="embedded"`` (:data:`EMBEDDED`) forces the embedded cluster even
where a current client exists.  A given ``Client`` is used as it is; an
asynchronous one (``Client(asynchronous=True)``) makes the solver return an
awaitable (:mod:`mst_dist.deploy.aio`).

:func:`choose` applies the rule and says which case it found;
:func:`using` opens what it chose (the worker's client seceded, or the
embedded cluster) for the length of a call; :func:`find` is the rule for the
input side (readers, generators), whose "none" is threads of this process.
The rule is written once, in :mod:`mst_dist.io.tasks` (the input layer
below this one uses it too), and re-exported here.
"""
from __future__ import annotations

import contextlib

# the rule itself sits in the input layer, which the readers and generators import too
from mst_dist.io.tasks import EMBEDDED, Choice, choose, find, in_task

__all__ = ["EMBEDDED", "Choice", "choose", "find", "in_task", "using"]

@contextlib.contextmanager
def using(choice: Choice, *, embedded=None):
    """The client of ``choice`` for the length of the block.

    ``task``: the worker's client, the task seceded from the thread pool
    (rejoined after); ``embedded``: ``embedded()`` (a callable returning a
    client, or a context manager of one), else the process's shared
    embedded cluster; otherwise the chosen client itself.
    """
    if choice.kind == "task":
        from distributed import worker_client

        with worker_client() as c:
            yield c
        return
    if choice.kind == "embedded":
        if embedded is None:
            from mst_dist.deploy.local import shared_client

            embedded = shared_client
        opened = embedded()
        if hasattr(opened, "__enter__"):
            with opened as c:
                yield c
        else:
            yield opened
        return
    yield choice.client

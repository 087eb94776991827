"""Small tasks on the cluster for the input side: the readers' scans, the generators' counting passes.

Building a graph sometimes needs one pass over the input before any run (a
text file's rows and largest id, a random geometric graph's edge count).
:func:`map_tasks` runs such a pass as tasks ``mst-<prefix>-*`` on the current
``distributed`` client, else on threads of this process, and
:func:`current_client` is how every input function finds that client.
"""
from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor

__all__ = ["current_client", "map_tasks"]


def current_client(client=None):
    """The client to run on: ``client`` itself, else the current ``distributed`` one, else ``None``.

    ``client=False`` means none (threads of this process).
    """
    if client is False:
        return None
    if client is not None:
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def map_tasks(func, arglist, client, prefix):
    """``[func(*args) for args in arglist]`` as tasks ``mst-<prefix>-*``.

    On the client's cluster (``client``, else the current one; see
    :func:`current_client`), else on local threads (also with
    ``client=False``).  Results come back in ``arglist`` order; the futures are
    released once gathered.
    """
    if not arglist:
        return []
    client = current_client(client)
    if client is None:
        if len(arglist) == 1:
            return [func(*arglist[0])]
        with ThreadPoolExecutor(max_workers=min(len(arglist), os.cpu_count() or 1)) as ex:
            return list(ex.map(lambda a: func(*a), arglist))
    token = uuid.uuid4().hex[:8]
    futs = [client.submit(func, *a, key=f"mst-{prefix}-{token}-{i}", pure=False)
            for i, a in enumerate(arglist)]
    try:
        return client.gather(futs)
    finally:
        for f in futs:
            f.release()

"""Batched request/reply between tasks: how the owners of vertex ranges answer the tasks that ask.

Pregel's request-respond over Dask futures.  ``J`` requesters each hold
some ids (a chunk's endpoints, a range's parents); ``R`` owners each hold the
values of one range of ids.  :func:`exchange` submits, with no wait::

    split     J tasks   a requester's ids, sorted and cut by owner (each id once)
    serve     R tasks   an owner answers the ids every requester sent it
    assemble  J tasks   a requester puts its answers back in its ids' order

plus the ``getitem`` tasks that route each part (``J x R`` each way), so
every byte moved is a requested id or its answer: bytes per round follow the
active ids, not the number of workers.  The functions that run on the
workers are in :mod:`mst_dist.engine.ranged`.
"""
from __future__ import annotations

import operator


def exchange(client, key, requests, owners, *, serve, assemble, split, pins=None, owner_pins=None,
             assemble_kwargs=None):
    """Submit one exchange; futures of the ``J`` assembled answers (one per request, in order).

    ``requests``: futures (or values) the ``split`` function takes first;
    ``owners``: the ``R`` owners' states, ``serve(owner, *parts)`` answers
    them with one answer per requester; ``assemble(request, split_out,
    *answers, **assemble_kwargs[j])`` gives the requester's result (the
    keyword values may hold futures).  ``key(stage, index)`` names the tasks.
    """
    R = len(owners)
    pins = pins or [{}] * len(requests)
    owner_pins = owner_pins or [{}] * R
    splits = [client.submit(split, req, key=key("split", j), **pins[j]) for j, req in enumerate(requests)]
    parts = [[client.submit(_part, s, r, key=key("ask", f"{j}.{r}")) for r in range(R)]
             for j, s in enumerate(splits)]
    served = [client.submit(serve, owners[r], *[parts[j][r] for j in range(len(requests))], key=key("serve", r),
                            **owner_pins[r])
              for r in range(R)]
    answers = [[client.submit(operator.getitem, served[r], j, key=key("reply", f"{r}.{j}")) for r in range(R)]
               for j in range(len(requests))]
    kwargs = assemble_kwargs or [{}] * len(requests)
    return [client.submit(assemble, req, splits[j], *answers[j], key=key("assemble", j), **pins[j], **kwargs[j])
            for j, req in enumerate(requests)]


def _part(split_out, r):
    """The ids a requester sends to owner ``r`` (a :class:`~mst_dist.kernels.vertex_ranges.Split`)."""
    return split_out.part(r)

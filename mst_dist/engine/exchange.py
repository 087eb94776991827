"""Batched request/reply between tasks: how the owners of vertex ranges answer the tasks that ask.

Pregel's request-respond over Dask futures.  ``J`` requesters each hold
some ids (a chunk's endpoints, a range's parents); ``R`` owners each hold the
values of one range of ids.  :func:`exchange` submits, with no wait::

    split     J tasks   a requester's ids, sorted and cut by owner (each id once)
    ask       G x R     the parts of one worker's requesters for one owner
    serve     R tasks   an owner answers the ids every requester sent it
    reply     R x G     one owner's answers for one worker's requesters
    assemble  J tasks   a requester puts its answers back in its ids' order

Requesters are grouped by the worker they are pinned to (``G`` groups; a
requester pinned nowhere is a group of its own), so an exchange's bundles
number ``G x R`` each way, not ``J x R``: with 16 chunks and 16 ranges on 2
workers, 32 asks and 32 replies instead of 256 of each.  Owners stay one by
one, so that no bundle holds more than one owner's share of the requests
(bundling the owners of a worker as well would make a bundle of ``n / P^2``
ids, more than ``n`` bytes on two workers).  Every byte moved is still a
requested id or its answer: bytes per round follow the active ids, not the
number of tasks.  The functions that run on the workers are in
:mod:`mst_dist.engine.ranged`.
"""
from __future__ import annotations

import operator


def exchange(client, key, requests, owners, *, serve, assemble, split, pins=None, owner_pins=None,
             assemble_kwargs=None):
    """Submit one exchange; futures of the ``J`` assembled answers (one per request, in order).

    ``requests``: futures (or values) the ``split`` function takes first;
    ``owners``: the ``R`` owners' states, ``serve(owner, *parts)`` answers
    them with one answer per requester (parts in requester order);
    ``assemble(request, split_out, *answers, **assemble_kwargs[j])`` gives
    the requester's result from the owners' answers in owner order (the
    keyword values may hold futures).  ``pins``/``owner_pins``: the
    ``submit`` keywords placing each requester/owner (see
    :func:`~mst_dist.engine.placement.pin`); ``key(stage, index)`` names the
    tasks.
    """
    J, R = len(requests), len(owners)
    pins = pins or [{}] * J
    owner_pins = owner_pins or [{}] * R
    kwargs = assemble_kwargs or [{}] * J
    groups = by_worker(pins)  # lists of requesters j, one per worker
    sizes, order = [len(js) for js in groups], [j for js in groups for j in js]
    splits = [client.submit(split, req, key=key("split", j), **pins[j]) for j, req in enumerate(requests)]
    asks = [[client.submit(_ask, r, *[splits[j] for j in js], key=key("ask", f"{g}.{r}"), **pins[js[0]])
             for r in range(R)]
            for g, js in enumerate(groups)]
    served = [client.submit(_serve, serve, owners[r], sizes, order, *[asks[g][r] for g in range(len(groups))],
                            key=key("serve", r), **owner_pins[r])
              for r in range(R)]
    replies = [[client.submit(operator.getitem, served[r], g, key=key("reply", f"{r}.{g}"), **owner_pins[r])
                for g in range(len(groups))]
               for r in range(R)]
    out = [None] * J
    for g, js in enumerate(groups):
        for i, j in enumerate(js):
            out[j] = client.submit(_assemble, assemble, requests[j], splits[j], i, *[replies[r][g] for r in range(R)],
                                   key=key("assemble", j), **pins[j], **kwargs[j])
    return out


def by_worker(pins):
    """Indices grouped by the worker their ``pin`` names (in order of first appearance); unpinned: alone."""
    groups, at = [], {}
    for i, p in enumerate(pins):
        workers = tuple(p.get("workers") or ())
        if not workers:
            groups.append([i])
            continue
        if workers not in at:
            at[workers] = len(groups)
            groups.append([])
        groups[at[workers]].append(i)
    return groups


def _ask(r, *splits):
    """The parts of ``splits`` (one worker's requesters) for owner ``r``."""
    return [s.part(r) for s in splits]


def _serve(serve, owner, sizes, order, *asks):
    """An owner answers its parts in requester order; the answers cut by requester group.

    ``asks[g]``: the parts of group ``g``'s requesters (``sizes[g]`` of them);
    ``order``: the requesters of the groups, in turn.
    """
    parts = [None] * len(order)
    for j, p in zip(order, (p for bundle in asks for p in bundle)):
        parts[j] = p
    answers = serve(owner, *parts)
    out, k = [], 0
    for size in sizes:
        out.append([answers[j] for j in order[k:k + size]])
        k += size
    return out


def _assemble(assemble, request, split_out, i, *replies, **kwargs):
    """The requester ``i``-th in its group: its answer from each owner's reply, then ``assemble``."""
    return assemble(request, split_out, *[reply[i] for reply in replies], **kwargs)

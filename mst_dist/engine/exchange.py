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
    groups = by_worker(pins)  # requesters: lists of j
    # owners one by one: a bundle then holds what one owner is asked and answers (no more than its
    # serve task's output), however few the workers
    owner_groups = [[r] for r in range(R)]
    splits = [client.submit(split, req, key=key("split", j), **pins[j]) for j, req in enumerate(requests)]
    asks = [[client.submit(_ask, rs, *[splits[j] for j in js], key=key("ask", f"{g}.{h}"), **pins[js[0]])
             for h, rs in enumerate(owner_groups)]
            for g, js in enumerate(groups)]
    where = {}  # r -> (its group, its place in the group)
    for h, rs in enumerate(owner_groups):
        for i, r in enumerate(rs):
            where[r] = (h, i)
    served = []
    for r in range(R):
        h, i = where[r]
        served.append(client.submit(_serve, serve, owners[r], i, [len(js) for js in groups],
                                    [j for js in groups for j in js], *[asks[g][h] for g in range(len(groups))],
                                    key=key("serve", r), **owner_pins[r]))
    replies = [[client.submit(_reply, g, *[served[r] for r in rs],
                              key=key("reply", f"{h}.{g}"), **owner_pins[rs[0]])
                for g in range(len(groups))]
               for h, rs in enumerate(owner_groups)]
    out = [None] * J
    for g, js in enumerate(groups):
        for i, j in enumerate(js):
            out[j] = client.submit(_assemble, assemble, requests[j], splits[j], i, [len(rs) for rs in owner_groups],
                                   [r for rs in owner_groups for r in rs],
                                   *[replies[h][g] for h in range(len(owner_groups))],
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


def _ask(owners, *splits):
    """For each owner of ``owners`` (one worker's), the parts of each split (one worker's requesters)."""
    return [[s.part(r) for s in splits] for r in owners]


def _serve(serve, owner, i, sizes, order, *asks):
    """Owner answers its parts, in requester order; returns them cut by requester group.

    ``asks[g][i]``: the parts of group ``g``'s requesters for this owner (the
    ``i``-th of its worker's owners); ``order``: the requesters of the groups,
    in turn.
    """
    parts = [None] * len(order)
    k = 0
    for bundle in asks:
        for p in bundle[i]:
            parts[order[k]] = p
            k += 1
    answers = serve(owner, *parts)
    out, k = [], 0
    for size in sizes:
        out.append([answers[order[k + t]] for t in range(size)])
        k += size
    return out


def _reply(g, *served):
    """Group ``g``'s answers from each owner of one worker: ``[owner][requester of g]``."""
    return [s[g] for s in served]


def _assemble(assemble, request, split_out, i, owner_sizes, owner_order, *replies, **kwargs):
    """The requester ``i``-th in its group: its answers in owner order, then ``assemble``."""
    answers = [None] * len(owner_order)
    k = 0
    for reply, size in zip(replies, owner_sizes):
        for t in range(size):
            answers[owner_order[k]] = reply[t][i]
            k += 1
    return assemble(request, split_out, *answers, **kwargs)

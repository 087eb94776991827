"""Batched request/reply between tasks: how the owners of vertex ranges answer the tasks that ask.

Pregel's request-respond over Dask futures.  ``J`` requesters each hold
some ids (a chunk's endpoints, a range's parents); ``R`` owners each hold the
values of one range of ids.  :func:`exchange` submits, with no wait::

    split     J tasks   a requester's ids, sorted and cut by owner (each id once)
    ask       G x H     the parts of one worker's requesters for one worker's owners
    serve     R tasks   an owner answers the ids every requester sent it
    reply     H x G     the answers of one worker's owners for one worker's requesters
    assemble  J tasks   a requester puts its answers back in its ids' order

Requesters are grouped by the worker they are pinned to (``G`` groups), and
so are owners (``H`` groups, of at most ``owner_group`` owners each); a task
pinned nowhere is a group of its own.  An exchange's bundles number
``G x H`` each way, not ``J x R``: with 16 chunks and 16 ranges on 2
workers, 4 asks and 4 replies instead of 256 of each.  ``owner_group``
bounds what one bundle holds (a bundle holds about ``owner_group / R`` of
what a worker's requesters ask).  Every byte moved is still a requested id
or its answer: bytes per round follow the active ids, not the number of
tasks.  The functions that run on the workers are in
:mod:`mst_dist.engine.ranged`.
"""
from __future__ import annotations

from mst_dist.engine.batch import Batch
from mst_dist.kernels.vertex_ranges import narrow


def exchange(client, key, requests, owners, *, serve, assemble, split, pins=None, owner_pins=None,
             assemble_kwargs=None, owner_group=None):
    """Submit one exchange; futures of the ``J`` assembled answers (one per request, in order).

    ``requests``: futures (or values) the ``split`` function takes first;
    ``owners``: the ``R`` owners' states, ``serve(owner, *parts)`` answers
    them with one answer per requester (parts in requester order);
    ``assemble(request, split_out, *answers, **assemble_kwargs[j])`` gives
    the requester's result from the owners' answers in owner order (the
    keyword values may hold futures).  ``pins``/``owner_pins``: the
    ``submit`` keywords placing each requester/owner (see
    :func:`~mst_dist.engine.placement.pin`); ``owner_group``: at most this
    many owners of a worker share a bundle (default: all of them);
    ``key(stage, index)`` names the tasks.
    """
    J, R = len(requests), len(owners)
    pins = pins or [{}] * J
    owner_pins = owner_pins or [{}] * R
    kwargs = assemble_kwargs or [{}] * J
    groups = by_worker(pins)  # lists of requesters j, one per worker
    ogroups = [hs[i:i + (owner_group or len(hs))] for hs in by_worker(owner_pins)
               for i in range(0, len(hs), owner_group or len(hs))]
    sizes, order = [len(js) for js in groups], [j for js in groups for j in js]
    where = {r: (h, i) for h, rs in enumerate(ogroups) for i, r in enumerate(rs)}
    with Batch(client) as b:  # one graph for the exchange's five stages
        splits = [b.submit(split, req, key=key("split", j), **pins[j]) for j, req in enumerate(requests)]
        asks = [[b.submit(_ask, rs, *[splits[j] for j in js], key=key("ask", f"{g}.{h}"), **pins[js[0]])
                 for h, rs in enumerate(ogroups)]
                for g, js in enumerate(groups)]
        served = [b.submit(_serve, serve, owners[r], sizes, order, where[r][1],
                           *[asks[g][where[r][0]] for g in range(len(groups))], key=key("serve", r),
                           **owner_pins[r])
                  for r in range(R)]
        replies = [[b.submit(_reply, g, *[served[r] for r in rs], key=key("reply", f"{h}.{g}"), **owner_pins[rs[0]])
                    for g in range(len(groups))]
                   for h, rs in enumerate(ogroups)]
        slots = [where[r] for r in range(R)]
        out = [None] * J
        for g, js in enumerate(groups):
            for i, j in enumerate(js):
                out[j] = b.submit(_assemble, assemble, requests[j], splits[j], i, slots,
                                  *[replies[h][g] for h in range(len(ogroups))],
                                  key=key("assemble", j), **pins[j], **kwargs[j])
    return out


def by_requester(key, ids):
    """``key`` (see :func:`exchange`) naming each requester's own tasks (split, assemble) by ``ids[j]``, the
    chunk or range requester ``j`` is, where the requesters are some of them."""
    return lambda stage, index=None: key(stage, ids[index] if stage in ("split", "assemble") else index)


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
    """The parts of ``splits`` (one worker's requesters) for each owner of ``owners`` (one worker's)."""
    return [[s.part(r) for s in splits] for r in owners]


def _serve(serve, owner, sizes, order, slot, *asks):
    """An owner answers its parts in requester order; the answers cut by requester group.

    ``asks[g]``: the bundle of group ``g``'s requesters (``sizes[g]`` of
    them) for this owner's group, its parts at ``slot``; ``order``: the
    requesters of the groups, in turn.
    """
    parts = [None] * len(order)
    for j, p in zip(order, (p for bundle in asks for p in bundle[slot])):
        parts[j] = p
    answers = [narrow(a) for a in serve(owner, *parts)]  # int32 on the wire where they fit; assembled as int64
    out, k = [], 0
    for size in sizes:
        out.append([answers[j] for j in order[k:k + size]])
        k += size
    return out


def _reply(g, *served):
    """Requester group ``g``'s answers from each of one worker's owners."""
    return [s[g] for s in served]


def _assemble(assemble, request, split_out, i, slots, *replies, **kwargs):
    """The requester ``i``-th in its group: its answer from each owner (at ``slots[r]`` of the replies),
    then ``assemble``."""
    return assemble(request, split_out, *[replies[h][s][i] for h, s in slots], **kwargs)

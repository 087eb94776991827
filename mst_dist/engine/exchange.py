"""Batched request/reply between tasks: how the owners of vertex ranges answer the tasks that ask.

Pregel's request-respond as one all-to-all whose task count grows with the
number of workers ``P``, never with pairs of them.  ``J`` requesters each
hold some ids (a chunk's endpoints, a range's parents); ``R`` owners each
hold the values of one range of ids.  :func:`exchange` submits::

    split     J tasks   a requester's ids, sorted and cut by owner (each id once)
    serve     R tasks   an owner pulls its part of every split and answers it
    assemble  J tasks   a requester pulls its answer from every owner, in its ids' order

``2J + R`` tasks, whatever the number of pairs; ``J + R`` where the task
that made a request cut it already (a pointer jump's parents carry the
next jump's split as ``asks``: ``split=None``).  The parts do not travel
as task outputs (that would take one task per pair of workers, or ship
whole splits to every owner): a ``serve`` task asks each worker holding
splits for its own part of them, worker to worker over Dask's comm
(:class:`ExchangePlugin`'s handler), and an ``assemble`` task asks each
owner's worker for its answer.  Between the stages the client waits for
the stage before and asks the scheduler once where its outputs are; the
next stage's tasks are handed those addresses (a barrier as two tasks per
stage and one per worker costs the scheduler more than the client's wait,
and more as the workers grow).  So the scheduler sees every stage (its
task stream, the dashboard's phases), and the bytes moved are the
requested ids and their answers.

Every output stays a Dask key the scheduler owns: a split is kept by its
``assemble`` task, which takes it; the owners' answers by the exchange's
futures of them, held until the last ``assemble`` has finished.  A pull
that does not find a key where the exchange left it asks the scheduler
where it is now; a key no worker holds (lost with a worker) cannot be
recomputed by Dask from the task graph alone, so the task raises
:class:`~mst_dist.errors.ExchangeLostError` and the run starts again from
its checkpoint, or from the start (:func:`~mst_dist.engine.runs.execute`).  The same
all-to-all (:func:`pull_all`) takes each range's share of the chunks'
candidates to the range.  The functions that run on the workers for each
kind of exchange are in :mod:`mst_dist.engine.ranged`.
"""
from __future__ import annotations

import asyncio
import functools
import weakref

from dask.sizeof import sizeof
from distributed import WorkerPlugin, get_worker, wait
from distributed.protocol import to_serialize
from distributed.core import Status
from distributed.utils import sync
from distributed.worker import Worker, thread_state

from mst_dist.engine.accounting import TALLY_NAME
from mst_dist.engine.batch import Batch
from mst_dist.engine.keys import parse_key
from mst_dist.errors import ExchangeLostError
from mst_dist.kernels.vertex_ranges import narrow

#: The workers' handler that hands out one requester's or one owner's piece of exchange outputs.
TAKE_OP = "mst_exchange_take"
#: Seconds a pull waits for a worker to take its first connection before asking the scheduler where the
#: keys are (see :func:`_take`)
QUICK_CONNECT = 5

_registered = weakref.WeakKeyDictionary()  # client -> its scheduler's address, the plugin registered there


def exchange(client, key, requests, owners, *, serve, assemble, split, pins=None, owner_pins=None,
             assemble_kwargs=None, items=None, item_pins=None, item_how="item"):
    """Submit one exchange (waiting for each stage before the next); futures of the ``J`` assembled
    answers (one per request, in order).

    ``requests``: futures (or values) the ``split`` function takes first;
    ``split=None``: each request carries its split as ``asks`` (cut by the
    task that made it: no split stage, ``J + R`` tasks); ``owners``: the ``R`` owners' states, ``serve(owner, *parts)``
    answers them with one answer per requester (parts in requester order);
    ``assemble(request, split_out, *answers, **assemble_kwargs[j])`` gives
    the requester's result from the owners' answers in owner order (the
    keyword values may hold futures).  ``items``: futures of which
    requester ``j`` takes its own piece (``item[j]``, or ``item.routed(j)``
    with ``item_how="routed"``) as the ``items`` keyword of ``assemble``
    (pulled as the answers are; placed by ``item_pins``).
    ``pins``/``owner_pins``: the ``submit`` keywords placing each
    requester/owner (see :func:`~mst_dist.engine.placement.pin`);
    ``key(stage, index)`` names the tasks.
    """
    J, R = len(requests), len(owners)
    pins = pins or [{}] * J
    owner_pins = owner_pins or [{}] * R
    kwargs = assemble_kwargs or [{}] * J
    items = list(items or ())
    with Batch(client) as b:  # one graph a stage (pull_all flushes the stage before it waits)
        carried = split is None
        splits = requests if carried else [b.submit(split, req, key=key("split", j), **pins[j])
                                           for j, req in enumerate(requests)]
        served = pull_all(b, key, splits, pins, functools.partial(_serve, serve, J), [(o,) for o in owners],
                          owner_pins, how="asks" if carried else "part", stage="serve")
        out = pull_all(b, key, served + items, owner_pins + list(item_pins or [{}] * len(items)),
                       functools.partial(_assemble, assemble, R, bool(items), carried),
                       [(requests[j], splits[j]) for j in range(J)], pins, how=["item"] * R + [item_how] * len(items),
                       stage="assemble", kwargs=kwargs)
    return out


def pull_all(b, key, sources, source_pins, consume, args, pins, *, how, stage, kwargs=None):
    """Submit to batch ``b`` one task per entry of ``args``: task ``i`` calls
    ``consume(*args[i], *pieces, **kwargs[i])``, ``pieces`` its own piece of each of ``sources``
    in order, pulled from the workers holding them; futures of the results.  Which piece
    (:data:`PIECES`): ``how``, one for all sources or a list with one per source.

    The all-to-all under every exchange.  ``b`` is flushed and the sources
    waited for here (their tasks' errors raised), then the tasks of ``args``
    (``key(stage, i)``, placed by ``pins``) are handed where each source is.
    The sources are held until every result is in.  ``source_pins`` are
    where the sources were put: a pinned source is looked for there first.
    """
    ensure_plugin(b.client)
    kwargs = kwargs or [{}] * len(args)
    b.flush()
    where = [(*at, how if isinstance(how, str) else how[at[0]]) for at in located(b.client, sources, source_pins)]
    out = [b.submit(_consume, consume, i, where, *a, key=key(stage, i), **pins[i], **kwargs[i])
           for i, a in enumerate(args)]
    _hold_until_done(list(sources), out)
    return out


def located(client, sources, source_pins=None):
    """``(index, key, address)`` of every one of the futures ``sources``, once all are in memory; the
    error of a source's task raised as the task's own."""
    with client.as_current():  # ``wait`` asks the current client
        wait(sources)  # no data moved
    for f in sources:
        if f.status != "finished":
            f.result()  # raises the task's error as its own (or that it was cancelled)
    who = client.who_has(sources)
    where = []
    for i, f in enumerate(sources):
        holders = who.get(f.key) or ()
        pinned = source_pins[i].get("workers") or () if source_pins else ()
        at = next((w for w in pinned if w in holders), holders[0] if holders else None)
        if at is None:
            raise ExchangeLostError(f"exchange output {f.key!r} is on no worker: lost with a worker "
                                    f"before the next stage began", keys=[f.key])
        where.append((i, f.key, at))
    return where


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


def ensure_plugin(client):
    """Register :class:`ExchangePlugin` on ``client``'s cluster (once per client and scheduler)."""
    address = getattr(client.scheduler, "address", None)
    if _registered.get(client) == address:
        return
    client.register_plugin(ExchangePlugin(), name=ExchangePlugin.name)
    _registered[client] = address


def _hold_until_done(served, out):
    """Keep the owners' answers until every requester has taken its own: the futures of ``served`` live
    as long as one of ``out`` is unfinished."""
    left = [len(out)]

    def one_done(_):
        left[0] -= 1
        if left[0] == 0:
            served.clear()

    for fut in out:
        fut.add_done_callback(one_done)
    if not out:
        served.clear()


class ExchangePlugin(WorkerPlugin):
    """The worker side of an exchange: a handler giving a piece of exchange outputs held in this worker's memory.

    ``take(keys, index, how)`` answers ``{"data": {key: piece}, "missing": [...]}``;
    the piece (:data:`PIECES`) of a split is ``split.part(index)`` (what owner ``index`` is
    asked), of an owner's answers ``answers[index]`` (requester ``index``'s).
    ``sent`` counts the bytes handed out, per ``(run token, round)`` of the keys.
    """

    name = "mst-exchange"
    idempotent = True

    def setup(self, worker):
        self.worker = worker
        self.sent = {}
        worker.handlers[TAKE_OP] = self.take

    def teardown(self, worker):
        worker.handlers.pop(TAKE_OP, None)

    def take(self, keys, index, how):
        data, missing = _pieces(self.worker, keys, index, how)
        for k, v in data.items():
            parsed = parse_key(k)
            if parsed is not None:
                at = (parsed.token, parsed.round)
                self.sent[at] = self.sent.get(at, 0) + sizeof(v)
        return {"data": {k: to_serialize(v) for k, v in data.items()}, "missing": missing}


def _pieces(worker, keys, index, how):
    """The pieces of ``keys`` held by ``worker`` (see :class:`ExchangePlugin`), and the keys it does not hold."""
    data, missing = {}, []
    for k in keys:
        try:
            value = worker.data[k]
        except KeyError:
            missing.append(k)
            continue
        data[k] = _piece(value, index, how)
    return data, missing


# -- on the workers --------------------------------------------------------------------------------------------


def _consume(consume, i, where, *args, **kwargs):
    """Task ``i`` of :func:`pull_all`: its piece of every source, pulled, then ``consume``."""
    got = _pull(where, i)
    return consume(*args, *[got[k] for _, k, _, _ in where], **kwargs)


def _serve(serve, J, owner, *parts):
    """An owner answers its part of every split (``J`` of them), in requester order."""
    answers = serve(owner, *parts)
    if len(answers) != J:
        raise RuntimeError(f"an owner answered {len(answers)} requesters of {J}")
    return [narrow(a) for a in answers]  # int32 on the wire where they fit; assembled as int64


def _assemble(assemble, R, with_items, carried, request, split_out, *pieces, **kwargs):
    """A requester's answers from the ``R`` owners (then its items), assembled; ``carried``: its split is
    the request's ``asks``."""
    if carried:
        split_out = request.asks
    if with_items:
        kwargs["items"] = pieces[R:]
    return assemble(request, split_out, *pieces[:R], **kwargs)


def _pull(located, index):
    """``{key: piece}`` of every key of ``located`` (``(i, key, address, how)``), from the workers holding them;
    keys not found there are looked for where the scheduler says they are now (a copy Dask moved), and
    one no worker holds (lost with a worker: the run starts again, see
    :func:`~mst_dist.engine.runs.execute`) is :class:`~mst_dist.errors.ExchangeLostError`."""
    worker = get_worker()
    where, how = {}, {}
    for _, k, address, h in located:
        where.setdefault((address, h), []).append(k)
        how[k] = h
    got, missing, nbytes = _take_all(worker, where, index, quick=True)
    if missing:
        who = sync(worker.loop, worker.scheduler.who_has, keys=missing)
        lost = [k for k in missing if not who.get(k)]
        where = {}
        for k in missing:
            if who.get(k):
                where.setdefault((who[k][0], how[k]), []).append(k)
        more, still, nb = _take_all(worker, where, index)
        got.update(more)
        nbytes += nb
        if lost or still:
            lost += still
            raise ExchangeLostError(f"exchange outputs {lost[:3]} are on no worker ({len(lost)} in all): "
                                    f"lost with a worker before every task took its part", keys=lost)
    _tally(worker, nbytes)
    return got


def _take_all(worker, where, index, quick=False):
    """``(got, missing, bytes from other workers)`` of the keys of ``where`` (``(address, how)`` -> keys):
    this worker's and its siblings' (:func:`_siblings`) read here, the others' asked over the comm at once
    (``quick``: see :func:`_take`)."""
    siblings = _siblings(worker)
    got, missing, nbytes, remote = {}, [], 0, {}
    for (address, how), keys in where.items():
        holder = siblings.get(address)
        if holder is None:
            remote[address, how] = keys
            continue
        data, lost = _pieces(holder, keys, index, how)
        got.update(data)
        missing += lost
        nbytes += sum(sizeof(v) for v in data.values()) if holder is not worker else 0
    if remote:
        results = sync(worker.loop, _ask_all, worker, remote, index, quick)
        for data, lost in results:
            got.update(data)
            missing += lost
            nbytes += sum(sizeof(v) for v in data.values())
    return got, missing, nbytes


async def _ask_all(worker, where, index, quick):
    return await asyncio.gather(*(_take(worker, a, ks, index, how, quick) for (a, how), ks in where.items()))


#: The pieces a task takes of another's output (``how``): a split's part for owner ``index`` (of a
#: request that carries its split, its ``asks``' part), an owner's
#: answer to requester ``index`` (``value[index]``), a range's forest edges of chunk ``index``, a range's
#: counts (the same for every ``index``).
PIECES = {
    "part": lambda value, index: value.part(index),
    "asks": lambda value, index: value.asks.part(index),
    "item": lambda value, index: value[index],
    "routed": lambda value, index: value.routed(index),
    "summary": lambda value, index: value.summary(),
}


def _piece(value, index, how):
    return PIECES[how](value, index)


async def _take(worker, address, keys, index, how, quick):
    """``(data, missing)`` of ``keys`` at another worker's ``address``; all missing where that worker cannot
    be reached.  ``quick``: a worker that does not take the connection within :data:`QUICK_CONNECT`
    seconds is taken as gone (a dead worker's port refuses connections, which Dask retries for the whole
    connect timeout); :func:`_pull` then asks the scheduler where the keys are and pulls them from there
    with Dask's own timeout."""
    try:
        if quick:
            worker.rpc.reuse(address, await worker.rpc.connect(address, timeout=QUICK_CONNECT))
        resp = await worker.rpc(address).mst_exchange_take(keys=keys, index=index, how=how)
    except Exception:  # the worker is gone, or has no handler: ask the scheduler where the keys are now
        return {}, list(keys)
    return resp["data"], resp["missing"]


def _siblings(worker):
    """``{address: worker}`` of the running workers of this process, ``worker`` among them.

    Workers of one process (an in-process cluster) read each other's memory
    directly from the task's thread (Dask's worker memory is thread-safe):
    over a comm, ``P`` workers pulling from each other are ``P**2`` messages
    through the one event loop they share.
    """
    found = {w.address: w for w in list(Worker._instances) if w.status == Status.running}
    found[worker.address] = worker
    return found


def _tally(worker, nbytes):
    """Count the bytes a pull brought from other workers for the running task's round and phase."""
    tally = worker.plugins.get(TALLY_NAME)
    k = parse_key(thread_state.key) if isinstance(getattr(thread_state, "key", None), str) else None
    if not nbytes or tally is None or k is None or not hasattr(tally, "received"):
        return
    at = (k.token, k.round, k.phase)
    tally.received[at] = tally.received.get(at, 0) + nbytes

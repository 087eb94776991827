"""The batched request/reply of partitioned runs: answers in each requester's order, bundles per worker."""
import itertools
from typing import NamedTuple

import numpy as np
import pytest

from mst_dist.engine.exchange import by_worker, exchange
from mst_dist.engine.placement import pin
from mst_dist.kernels.vertex_ranges import Split, cut_sorted, even_bounds


def test_by_worker_groups_pinned_requesters_and_leaves_the_rest_alone():
    pins = [pin("a"), {}, pin("b"), pin("a"), {}, pin("b"), pin("a")]
    assert by_worker(pins) == [[0, 3, 6], [1], [2, 5], [4]]
    assert by_worker([]) == []


def _split(ids, bounds):
    return cut_sorted(np.unique(ids), bounds)


def _serve(table, *parts):
    lo, values = table
    return [values[p - lo] for p in parts]


def _assemble(ids, split_out, *answers, offset=0):
    got = np.concatenate([np.asarray(a, np.int64) for a in answers]) if answers else np.zeros(0, np.int64)
    return got[np.searchsorted(split_out.ids, ids)] + offset


@pytest.mark.parametrize("owners_pinned", [False, True])
def test_exchange_answers_every_requester_in_its_own_order(client2, owners_pinned):
    """Requesters pinned to both workers and unpinned, owners of uneven ranges unpinned or pinned to the
    workers in turn: each requester gets exactly its lookups, in tasks that grow with the requesters
    and owners, not with their pairs."""
    rng = np.random.default_rng(5)
    n = 1000
    values = rng.permutation(n).astype(np.int64) * 7
    bounds = even_bounds(n, 7)
    owners = [(int(lo), values[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    requests = [rng.integers(0, n, size) for size in (50, 0, 300, 1, 120, 999)]
    workers = sorted(client2.scheduler_info()["workers"])
    pins = [pin(w) if w else {} for w in itertools.islice(itertools.cycle([*workers, None]), len(requests))]
    owner_pins = [pin(workers[r % 2]) for r in range(len(owners))] if owners_pinned else None
    keys = itertools.count()
    names = []

    def key(stage, index=None):
        names.append(stage)
        return f"test-exchange-{stage}-{index}-{next(keys)}"

    out = exchange(client2, key, [client2.scatter(r) for r in requests], [client2.scatter(o, hash=False) for o in owners],
                   serve=_serve, assemble=_assemble, split=lambda ids: _split(ids, bounds), pins=pins,
                   owner_pins=owner_pins,
                   assemble_kwargs=[{"offset": j} for j in range(len(requests))])
    got = client2.gather(out)
    for j, (req, ans) in enumerate(zip(requests, got)):
        np.testing.assert_array_equal(ans, values[req] + j)
    assert names.count("split") == names.count("assemble") == len(requests)
    assert names.count("serve") == len(owners)
    assert len(names) == 2 * len(requests) + len(owners)


class _Asking(NamedTuple):
    """A request cut by the task that made it (its split carried as ``asks``), with pieces for other
    requesters."""

    ids: np.ndarray
    asks: Split
    pieces: list

    def routed(self, j):
        return self.pieces[j]


def _assemble_with_items(req, split_out, *answers, items):
    assert split_out is req.asks
    return _assemble(req.ids, split_out, *answers), [int(x) for x in items]


def test_requests_that_are_their_own_splits_and_items_taken_by_method(client2):
    """``split=None``: each request carries its split (``J + R`` tasks, no split stage); items taken as
    ``item.routed(j)`` reach requester ``j`` in item order, from workers other than its own too."""
    rng = np.random.default_rng(8)
    n, J = 500, 5
    values = rng.permutation(n).astype(np.int64)
    bounds = even_bounds(n, 4)
    owners = [(int(lo), values[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    requests = [rng.integers(0, n, size) for size in (40, 0, 7, 260, 33)]
    asking = [_Asking(r, _split(r, bounds), [100 * j + i for i in range(J)]) for j, r in enumerate(requests)]
    workers = sorted(client2.scheduler_info()["workers"])
    pins = [pin(workers[j % 2]) for j in range(J)]
    names = []

    def key(stage, index=None):
        names.append(stage)
        return f"test-asking-{stage}-{index}-{len(names)}"

    held = [client2.scatter([a], workers=[workers[j % 2]])[0] for j, a in enumerate(asking)]
    out = exchange(client2, key, held, [client2.scatter(o, hash=False) for o in owners], serve=_serve,
                   assemble=_assemble_with_items, split=None, pins=pins, items=held[:3], item_how="routed",
                   item_pins=pins[:3])
    for j, (ans, items) in enumerate(client2.gather(out)):
        np.testing.assert_array_equal(ans, values[requests[j]])
        assert items == [j, 100 + j, 200 + j]
    assert names.count("split") == 0 and names.count("assemble") == J and names.count("serve") == len(owners)


def test_a_run_that_lost_an_exchange_starts_again_then_gives_up(monkeypatch):
    """``execute`` makes a run again when it lost parts of an exchange with a worker, up to
    ``mst.exchange-attempts`` times in all; a refusal is raised at once."""
    import dask

    from mst_dist.engine import runs
    from mst_dist.engine.spec import RunSpec
    from mst_dist.errors import ExchangeLostError, InvalidGraphError

    calls = []

    def once(graph, client, spec, fail):
        calls.append(spec.resume)
        if len(calls) <= fail:
            raise ExchangeLostError("exchange outputs ['k'] are on no worker", keys=["k"])
        return "forest"

    monkeypatch.setattr(runs, "_workers", lambda client: {"w"})
    spec = RunSpec.build(checkpoint="memory://ck", resume=False)
    with dask.config.set({"mst.exchange-attempts": 3}):
        monkeypatch.setattr(runs, "_execute_once", lambda g, c, s: once(g, c, s, fail=2))
        assert runs.execute(None, None, spec) == "forest"
        assert calls == [False, True, True]  # later attempts go on from the checkpoint
        calls.clear()
        monkeypatch.setattr(runs, "_execute_once", lambda g, c, s: once(g, c, s, fail=5))
        with pytest.raises(ExchangeLostError, match="in each of 3 attempts"):
            runs.execute(None, None, spec)
        assert len(calls) == 3
        calls.clear()

        def refused(g, c, s):
            calls.append(s)
            raise InvalidGraphError("edge 3: weight is NaN", edge=3)

        monkeypatch.setattr(runs, "_execute_once", refused)
        with pytest.raises(InvalidGraphError):
            runs.execute(None, None, spec)
        assert len(calls) == 1


def test_a_pull_from_a_worker_gone_gives_up_in_seconds(client2, monkeypatch):
    """A dead worker's port refuses connections, which Dask retries for its whole connect timeout: a pull
    waits ``QUICK_CONNECT`` seconds for it, then counts its keys as missing (and asks the scheduler)."""
    import socket
    import time

    import dask

    from mst_dist.engine import exchange as ex

    monkeypatch.setattr(ex, "QUICK_CONNECT", 1)  # the workers are in this process
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def pull(dask_worker):
        t = time.perf_counter()
        got = await ex._take(dask_worker, f"tcp://127.0.0.1:{port}", ["k"], 0, "item", quick=True)
        return got, time.perf_counter() - t

    assert dask.config.get("distributed.comm.timeouts.connect") in ("30s", 30)  # what it would wait
    for got, took in client2.run(pull).values():
        assert got == ({}, ["k"])
        assert took < 10, took

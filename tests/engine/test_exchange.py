"""The batched request/reply of partitioned runs: answers in each requester's order, bundles per worker."""
import itertools

import numpy as np
import pytest

from mst_dist.engine.exchange import by_worker, exchange
from mst_dist.engine.placement import pin
from mst_dist.kernels.vertex_ranges import cut_sorted, even_bounds


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


@pytest.mark.parametrize("owners_pinned,owner_group", [(False, None), (True, None), (True, 2), (True, 1)])
def test_exchange_answers_every_requester_in_its_own_order(client2, owners_pinned, owner_group):
    """Requesters pinned to both workers and unpinned, owners of uneven ranges unpinned or pinned to the
    workers in turn (bundled by worker, whole or in groups): each requester gets exactly its lookups."""
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
                   owner_pins=owner_pins, owner_group=owner_group,
                   assemble_kwargs=[{"offset": j} for j in range(len(requests))])
    got = client2.gather(out)
    for j, (req, ans) in enumerate(zip(requests, got)):
        np.testing.assert_array_equal(ans, values[req] + j)
    # 4 requester groups (2 workers, 2 unpinned); owner groups: 7 alone, 2 workers, 4 + 3 split in 2s, or 7
    owner_groups = {(False, None): 7, (True, None): 2, (True, 2): 4, (True, 1): 7}[owners_pinned, owner_group]
    assert names.count("ask") == names.count("reply") == 4 * owner_groups

"""Local contraction first: each chunk contracts the vertices only it touches, before the partitioned rounds.

The kernel is checked against the Kruskal oracle chunk by chunk (what it chooses is in the minimum
spanning forest, what it drops is not, what it leaves joins only vertices other chunks touch), and
whole runs against the oracle on every hand case and family, with the edges sorted by source so that
most vertices are interior.
"""
import dask
import numpy as np
import pyarrow.parquet as pq
import pytest

import mst_dist
from mst_dist.engine.spec import RunSpec
from mst_dist.errors import ConfigError
from mst_dist.kernels import backend
from support.cases import ALL, HAND, by_source, check, sorted_grid
from support.naive import component_labels, kruskal


def run(g, client, mode="always", ranges=3, partitions=3, **kw):
    with dask.config.set({"mst.vertex-base": 0, "mst.vertex-ranges": ranges, "mst.local-contraction": mode}):
        return mst_dist.minimum_spanning_forest(g, client, vertex_partition="always", partitions=partitions,
                                                local_finish=0, **kw)


def _chunks(n, src, dst, w, parts):
    """Each chunk's edges as the engine holds them (no self-loop, in the (weight, id) order) and which of
    its vertices no other chunk touches."""
    eids = np.arange(src.shape[0])
    cuts = np.linspace(0, src.shape[0], parts + 1).astype(int)
    touched = [np.unique(np.concatenate([src[a:b], dst[a:b]])) for a, b in zip(cuts[:-1], cuts[1:])]
    count = np.zeros(n, int)
    for t in touched:
        count[t] += 1
    for (a, b), ids in zip(zip(cuts[:-1], cuts[1:]), touched):
        e = eids[a:b][src[a:b] != dst[a:b]]
        e = e[np.lexsort((e, w[e]))]
        yield ids, np.searchsorted(ids, src[e]), np.searchsorted(ids, dst[e]), e, count[ids] == 1


@pytest.mark.parametrize("seed", range(12))
def test_kernel_chooses_only_forest_edges_and_drops_none(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    m = int(rng.integers(1, 4 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(0, 6, m)  # ties everywhere: the edge id decides
    src, dst, w = by_source(src, dst, w) if seed % 2 else (src, dst, w)
    forest = set(kruskal(n, src, dst, w)[0].tolist())
    kern = backend("cpu")
    for ids, lu, lv, e, interior in _chunks(n, src, dst, w, int(rng.integers(1, 5))):
        keep, chosen, rep = kern.contract_interior(lu, lv, interior)
        assert set(e[chosen].tolist()) <= forest                        # the cut property held
        assert forest & set(e.tolist()) <= set(e[chosen].tolist()) | set(e[keep].tolist())  # none lost
        assert np.all(np.diff(keep) > 0) and np.all(np.diff(chosen) > 0)
        assert np.array_equal(rep[~interior], np.flatnonzero(~interior))  # a touched-elsewhere vertex stays
        assert np.array_equal(rep[rep], rep)
        ru, rv = rep[lu[keep]], rep[lv[keep]]
        assert not interior[ru].any() and not interior[rv].any() and np.all(ru != rv)
        for r in np.unique(rep[interior]):  # a set of interior vertices only is named by its smallest
            if interior[r]:
                assert r == np.flatnonzero(rep == r).min()


#: Every hand case, and the families with locality (and one without): each run is a few hundred tasks.
CASES = [c for c in ALL if c[0] in {h[0] for h in HAND}
         | {"grid-6", "random_geometric-9", "caveman-4", "connected_caveman-5", "rmat-7", "erdos_renyi-float"}]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_contracted_first_same_forest(client2, case):
    """Every hand case and families, their edges sorted by source, contracted first: Kruskal's forest."""
    name, n, src, dst, w = case
    src, dst, w = by_source(src, dst, w)
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    res = run(g, client2)
    check(res, n, src, dst, w)
    if g.n_edges and res.stats.vertex_partition["interior_vertices"]:
        assert res.stats.rounds[0].mode == "local-contraction"


@pytest.mark.parametrize("partitions,ranges", [(1, 1), (2, 7), (5, 3), (9, 6)])
def test_grid_shapes(client2, partitions, ranges):
    """A lattice sorted by source (a road network's file): most vertices interior, one chunk solves it alone."""
    n, src, dst, w = sorted_grid(60, 17, seed=partitions)
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    res = run(g, client2, mode="auto", ranges=ranges, partitions=partitions)
    check(res, n, src, dst, w)
    first = res.stats.rounds[0]
    assert first.mode == "local-contraction" and res.stats.vertex_partition["local_contraction"]
    assert first.components_after < n / 3 and first.edges_after < g.n_edges / 2
    if partitions == 1:  # one chunk touches every vertex alone: the whole forest is local
        assert first.forest_edges == n - 1 and first.edges_after == 0


def test_auto_leaves_a_random_graph_alone(client2):
    """Hardly a vertex of a random graph is interior to one of its chunks: auto estimates it from a sample
    of the vertices and goes on with the rounds (never does not even ask)."""
    g = mst_dist.generate("erdos_renyi", seed=4, n=8000, m=32000)
    res = run(g, client2, mode="auto")
    vp = res.stats.vertex_partition
    assert not vp["local_contraction"] and vp["interior_estimate"] < 8000 / 8 and "interior_vertices" not in vp
    assert res.stats.rounds[0].mode == "partitioned"
    exact = run(g, client2, mode="always")  # counted in full: few, as estimated
    assert exact.stats.vertex_partition["interior_vertices"] < 8000 / 8
    ref = run(g, client2, mode="never")
    assert "interior_estimate" not in ref.stats.vertex_partition
    np.testing.assert_array_equal(exact.edge_ids, ref.edge_ids)
    np.testing.assert_array_equal(res.edge_ids, ref.edge_ids)


@pytest.mark.processes
def test_contracted_on_processes(pclient):
    n, src, dst, w = sorted_grid(20, 30, seed=5)
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    res = run(g, pclient, partitions=4, ranges=4)
    check(res, n, src, dst, w)
    assert res.stats.rounds[0].mode == "local-contraction"


def test_outputs_and_kept_results_after_contraction(client2, tmp_path):
    n, src, dst, w = sorted_grid(15, 15, seed=1)
    g = mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n)
    res = run(g, client2, output=str(tmp_path / "forest"), labels_output=str(tmp_path / "labels"))
    exp_ids, _ = kruskal(n, src, dst, w)
    ids, fsrc, fdst, fw = mst_dist.read_forest(str(tmp_path / "forest"))
    np.testing.assert_array_equal(ids, exp_ids)
    np.testing.assert_array_equal(fw, w[exp_ids])
    labels = pq.read_table(str(tmp_path / "labels")).sort_by("vertex")
    np.testing.assert_array_equal(labels.column("component").to_numpy(), component_labels(n, src, dst))
    assert res.n_components == 1 and res.stats.rounds[0].mode == "local-contraction"


def test_the_setting_is_checked():
    with pytest.raises(ConfigError, match="local_contraction"):
        RunSpec(local_contraction="sometimes")
    with dask.config.set({"mst.local-contraction": "never"}):
        assert RunSpec.build().local_contraction == "never"

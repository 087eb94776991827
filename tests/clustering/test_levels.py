"""Borůvka levels from the forest: textbook Borůvka rounds on the whole graph, nested, ending at the components."""
import numpy as np
import pytest

import mst_dist


def boruvka_rounds_on_graph(n, src, dst, w):
    """Reference: Borůvka's rounds on every edge of the graph, order (weight, edge id); labels per round."""
    comp = np.arange(n)
    levels = []
    while True:
        best = {}
        for e in range(len(src)):
            a, b = comp[src[e]], comp[dst[e]]
            if a == b:
                continue
            for c in (a, b):
                if c not in best or (w[e], e) < (w[best[c]], best[c]):
                    best[c] = e
        if not best:
            return levels
        parent = list(range(n))

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x

        for e in best.values():
            ra, rb = find(comp[src[e]]), find(comp[dst[e]])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        roots = [find(comp[v]) for v in range(n)]
        names = {}
        comp = np.array([names.setdefault(r, len(names)) for r in roots])
        levels.append(comp.copy())


@pytest.mark.parametrize("seed", range(8))
def test_levels_are_boruvka_rounds_on_the_graph(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 120))
    m = int(rng.integers(0, 4 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(0, 10, m) if seed % 2 else rng.uniform(size=m)
    res = mst_dist.minimum_spanning_forest(mst_dist.Graph.from_arrays(src, dst, w, n_vertices=n))
    got = res.levels()
    want = boruvka_rounds_on_graph(n, src, dst, w)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    if got:
        np.testing.assert_array_equal(got[-1], res.labels)
    for fine, coarse in zip(got, got[1:]):
        # nested: each cluster of a level lies inside one cluster of the next, and they coarsen
        pairs = np.unique(np.c_[fine, coarse], axis=0)
        assert np.unique(pairs[:, 0]).shape[0] == pairs.shape[0]
        assert coarse.max() < fine.max()


def test_levels_written_as_parquet(tmp_path):
    import pyarrow.parquet as pq

    g = mst_dist.Graph.from_arrays([0, 1, 2, 3], [1, 2, 3, 4], [1, 5, 1, 9])
    res = mst_dist.minimum_spanning_forest(g)
    levels = res.levels(levels_output=tmp_path / "levels")
    want = boruvka_rounds_on_graph(5, [0, 1, 2, 3], [1, 2, 3, 4], [1, 5, 1, 9])
    assert [lab.tolist() for lab in levels] == [lab.tolist() for lab in want]
    files = sorted(p.name for p in (tmp_path / "levels").iterdir())
    assert files == ["level-001.parquet", "level-002.parquet"]
    for lab, name in zip(want, files):
        t = pq.read_table(tmp_path / "levels" / name)
        assert t.column("vertex").to_pylist() == list(range(5))
        assert t.column("cluster").to_pylist() == lab.tolist()


@pytest.mark.processes
def test_levels_of_a_kept_forest_written_by_a_worker(pclient, tmp_path):
    """gather=False: a task on a worker reads the kept forest, computes the levels and writes them; the
    forest stays on the workers, and the files hold the levels of the same forest gathered."""
    import pyarrow.parquet as pq

    g = mst_dist.generate("erdos_renyi", seed=4, n=3000, m=9000, weights="float")
    res = mst_dist.minimum_spanning_forest(g, pclient, partitions=3, gather=False)
    try:
        assert res.levels(levels_output=tmp_path / "levels") >= 2
        assert "edge_ids" not in res.__dict__ and "labels" not in res.__dict__  # nothing gathered here

        def prefixes(dask_scheduler):
            return [p for p in dask_scheduler.task_prefixes if p.startswith("mst-levels")]

        assert pclient.run_on_scheduler(prefixes) == ["mst-levels"]
        want = boruvka_rounds_on_graph(g.n_vertices, *g.to_arrays())  # the reference, not the engine again
    finally:
        if res.kept is not None:
            res.kept.release()
    files = sorted(p.name for p in (tmp_path / "levels").iterdir())
    assert files == [f"level-{r:03d}.parquet" for r in range(1, len(want) + 1)]
    for lab, name in zip(want, files):
        t = pq.read_table(tmp_path / "levels" / name)
        np.testing.assert_array_equal(t.column("vertex").to_numpy(), np.arange(g.n_vertices))
        np.testing.assert_array_equal(t.column("cluster").to_numpy(), lab)


def test_levels_written_to_an_object_store(tmp_path):
    """levels_output= a URL: the level files under it, nothing temporary beside them (a real S3 API)."""
    import io

    import pyarrow.parquet as pq

    from support.objectstore import moto_s3

    g = mst_dist.generate("grid", seed=2, rows=20, cols=30)
    res = mst_dist.minimum_spanning_forest(g)
    want = boruvka_rounds_on_graph(g.n_vertices, *g.to_arrays())
    with moto_s3("levels") as (options, fs):
        got = res.levels(levels_output="s3://levels/run/levels", storage_options=options)
        assert [lab.tolist() for lab in got] == [lab.tolist() for lab in want]
        fs.invalidate_cache()
        assert fs.ls("levels/run", detail=False) == ["levels/run/levels"]
        names = sorted(p.rsplit("/", 1)[1] for p in fs.find("levels/run/levels"))
        assert names == [f"level-{r:03d}.parquet" for r in range(1, len(got) + 1)]
        for lab, name in zip(got, names):
            t = pq.read_table(io.BytesIO(fs.cat(f"levels/run/levels/{name}")))
            np.testing.assert_array_equal(t.column("cluster").to_numpy(), lab)

"""The cluster-growth benchmark: tasks and wall time of one partitioned solve per cluster size."""
import json

import numpy as np

import mst_dist
from benchmarks import cluster_growth
from support.naive import kruskal


def test_cluster_growth_counts_tasks_and_checks_the_forest(tmp_path, capsys):
    out = tmp_path / "growth.json"
    cluster_growth.main(["--workers", "1,3", "--n", "600", "--m", "2400", "--chunks", "4", "--dask-baseline",
                         "--baseline-waves", "2", "--local-finish", "0", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [r["workers"] for r in rows] == [1, 3]
    g = mst_dist.generate("erdos_renyi", seed=1, n=600, m=2400)
    s, d, w = g.to_arrays()
    exp, _ = kruskal(g.n_vertices, s, d, w)
    for r in rows:
        assert r["tasks"] > 10 and r["wall_s"] > 0 and r["dask_s"] > 0 and r["forest_edges"] == exp.size
        assert r["partitioned_rounds"] >= 1  # --local-finish 0: the rounds are partitioned ones
    assert rows[0]["ids_hash"] == int(np.bitwise_xor.reduce(exp * 2654435761 % 2**61))
    assert [r["ranges"] for r in rows] == [2, 2]  # 600 components: two ranges, however many workers
    printed = capsys.readouterr().out
    assert "P=   3" in printed and "tasks" in printed and "dask alone" in printed
    cluster_growth.main(["--workers", "3", "--n", "600", "--m", "2400", "--chunks", "4", "--local-finish", "0",
                         "--range-per-worker", "--out", str(out)])
    (row,) = json.loads(out.read_text())["rows"]
    assert row["ranges"] == 3 and row["forest_edges"] == exp.size
    assert row["ids_hash"] == rows[0]["ids_hash"]

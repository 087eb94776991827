"""``mst-dist run --linkage``, ``--clusters``, ``--maximum``."""
import json

import numpy as np

import mst_dist
from mst_dist import cli
from support.naive import kruskal, numbered_by_smallest_vertex, single_linkage


def test_linkage_and_clusters_written(tmp_path, capsys):
    """The written linkage is single linkage by Kruskal's merges over the graph's edges, and the clusters
    SciPy's ``fcluster`` of it: independent of the engine."""
    from scipy.cluster.hierarchy import fcluster

    Zpath, lpath = tmp_path / "Z.npy", tmp_path / "labels.npy"
    assert cli.main(["run", "--generate", "rmat", "--scale", "7", "--seed", "3", "-q", "--json",
                     "--linkage", str(Zpath), "--clusters", "200", "--clusters-output", str(lpath)]) == 0
    rep = json.loads(capsys.readouterr().out)
    g = mst_dist.generate("rmat", scale=7, seed=3)
    Z = single_linkage(g.n_vertices, *g.to_arrays())
    np.testing.assert_array_equal(np.load(Zpath), Z)
    want = numbered_by_smallest_vertex(fcluster(Z, 200, "distance"))
    np.testing.assert_array_equal(np.load(lpath), want)
    assert rep["clusters"]["clusters"] == int(want.max()) + 1


def test_maximum_forest(capsys):
    """The maximum forest's total, by Kruskal over a stable sort by decreasing weight."""
    assert cli.main(["run", "--generate", "rmat", "--scale", "7", "--seed", "3", "-q", "--json",
                     "--maximum"]) == 0
    rep = json.loads(capsys.readouterr().out)
    g = mst_dist.generate("rmat", scale=7, seed=3)
    src, dst, w = g.to_arrays()
    assert w.dtype.kind == "i"
    ids, comps = kruskal(g.n_vertices, src, dst, -w)
    assert rep["summary"]["total_weight"] == sum(int(x) for x in w[ids].tolist())
    assert rep["summary"]["forest_edges"] == len(ids)


def test_clusters_output_without_clusters_is_a_config_error(tmp_path, capsys):
    code = cli.main(["run", "--generate", "rmat", "--scale", "5", "-q",
                     "--clusters-output", str(tmp_path / "l.npy")])
    assert code != 0
    assert "--clusters-output" in capsys.readouterr().err

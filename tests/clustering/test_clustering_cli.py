"""``mst-dist run --linkage``, ``--clusters``, ``--maximum``."""
import json

import numpy as np

import mst_dist
from mst_dist import cli


def test_linkage_and_clusters_written(tmp_path, capsys):
    Zpath, lpath = tmp_path / "Z.npy", tmp_path / "labels.npy"
    assert cli.main(["run", "--generate", "rmat", "--scale", "7", "--seed", "3", "-q", "--json",
                     "--linkage", str(Zpath), "--clusters", "200", "--clusters-output", str(lpath)]) == 0
    rep = json.loads(capsys.readouterr().out)
    res = mst_dist.minimum_spanning_forest(mst_dist.generate("rmat", scale=7, seed=3))
    np.testing.assert_array_equal(np.load(Zpath), res.linkage())
    np.testing.assert_array_equal(np.load(lpath), res.clusters(threshold=200))
    assert rep["clusters"]["clusters"] == int(res.clusters(threshold=200).max()) + 1


def test_maximum_forest(capsys):
    assert cli.main(["run", "--generate", "rmat", "--scale", "7", "--seed", "3", "-q", "--json",
                     "--maximum"]) == 0
    rep = json.loads(capsys.readouterr().out)
    want = mst_dist.maximum_spanning_forest(mst_dist.generate("rmat", scale=7, seed=3))
    assert rep["summary"]["total_weight"] == want.total_weight


def test_clusters_output_without_clusters_is_a_config_error(tmp_path, capsys):
    code = cli.main(["run", "--generate", "rmat", "--scale", "5", "-q",
                     "--clusters-output", str(tmp_path / "l.npy")])
    assert code != 0
    assert "--clusters-output" in capsys.readouterr().err

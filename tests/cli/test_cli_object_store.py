"""``mst-dist run`` with object-store paths: the input, the forest and the checkpoint as s3:// URLs,
the store's options from ``--storage-options`` or the run config's ``storage_options``."""
import io
import json

import numpy as np
import pytest
import yaml

import mst_dist
from mst_dist.cli import commands as cli
from support.naive import kruskal
from support.objectstore import moto_s3

BUCKET = "cli"


@pytest.fixture(scope="module")
def s3():
    with moto_s3(BUCKET) as store:
        yield store


@pytest.fixture(scope="module")
def graph(s3):
    """An ER graph as a text object in the bucket, and its Kruskal forest."""
    _, fs = s3
    g = mst_dist.generate("erdos_renyi", seed=4, n=1500, m=6000)
    s, d, w = g.to_arrays()
    fs.pipe(f"{BUCKET}/in/g.txt", "".join(f"{a} {b} {c}\n" for a, b, c in zip(s.tolist(), d.tolist(),
                                                                                w.tolist())).encode())
    exp, comps = kruskal(g.n_vertices, s, d, w)
    return (s, d, w), exp


def _read_forest(fs, key):
    import pyarrow.parquet as pq

    with fs.open(f"{BUCKET}/{key}", "rb") as f:
        return pq.read_table(io.BytesIO(f.read()))


@pytest.mark.usefixtures("restore_logging")
def test_run_reads_and_writes_urls_with_storage_options_flag(s3, graph, tmp_path, monkeypatch, capsys):
    options, fs = s3
    (s, d, w), exp = graph
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", "--input", f"s3://{BUCKET}/in/g.txt", "-o", f"s3://{BUCKET}/out/forest.parquet",
                     "--storage-options", json.dumps(options), "--json", "-q"])
    assert code == 0
    rep = json.loads(capsys.readouterr().out)
    t = _read_forest(fs, "out/forest.parquet")
    ids = t.column("edge_id").to_numpy()
    np.testing.assert_array_equal(ids, exp)
    np.testing.assert_array_equal(t.column("src").to_numpy(), s[ids])
    np.testing.assert_array_equal(t.column("weight").to_numpy(), w[ids])
    # the credentials are not in the report; nothing temporary is left beside the forest
    assert rep["config"]["storage_options"] == {"key": "***", "secret": "***",
                                                "client_kwargs": {"endpoint_url": "***", "region_name": "***"}}
    assert "testing" not in json.dumps(rep["config"])
    fs.invalidate_cache()
    assert fs.ls(f"{BUCKET}/out", detail=False) == [f"{BUCKET}/out/forest.parquet"]


@pytest.mark.usefixtures("restore_logging")
def test_run_config_storage_options(s3, graph, tmp_path, monkeypatch, capsys):
    """The run config's ``storage_options``, written in YAML, serve the input and a CSV forest."""
    options, fs = s3
    (s, d, w), exp = graph
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({
        "graph": {"input": f"s3://{BUCKET}/in/g.txt"}, "partitions": 3, "local_finish": 0,
        "output": {"path": f"s3://{BUCKET}/out2/forest.csv"}, "storage_options": options}))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "run.yaml", "-q"]) == 0
    text = fs.cat(f"{BUCKET}/out2/forest.csv").decode().splitlines()
    assert text[0].replace('"', "") == "edge_id,src,dst,weight"
    np.testing.assert_array_equal([int(line.split(",")[0]) for line in text[1:]], exp)


@pytest.mark.usefixtures("restore_logging")
def test_unwritable_output_url_refused_before_the_run(s3, graph, tmp_path, monkeypatch, capsys):
    options, fs = s3
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(cli, "make_client", lambda *a, **k: seen.append(a) or (_ for _ in ()).throw(
        AssertionError("a cluster was started")))
    code = cli.main(["run", "--input", f"s3://{BUCKET}/in/g.txt", "-o", "s3://no-such-bucket/forest.parquet",
                     "--storage-options", json.dumps(options), "-q"])
    assert code != 0 and not seen
    err = capsys.readouterr().err
    assert "--output" in err and "no-such-bucket" in err


@pytest.mark.parametrize("text, why", [("[1, 2]", "JSON object"), ("{key: 1}", "JSON object")])
def test_storage_options_flag_must_be_a_json_object(text, why, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "--generate", "grid", "--storage-options", text])
    assert e.value.code == 2
    assert why in capsys.readouterr().err


def test_failed_forest_write_leaves_nothing(s3, monkeypatch):
    """The forest's writer fails midway: neither the target nor a temporary object is left in the store."""
    from types import SimpleNamespace

    from mst_dist.io import writers

    options, fs = s3

    def broken(cols, tmp):
        open(tmp, "wb").write(b"half a forest")
        raise OSError("disk full")

    monkeypatch.setitem(writers._WRITERS, "parquet", broken)
    r = SimpleNamespace(edge_ids=np.array([0, 2]), src=np.array([0, 1]), dst=np.array([1, 2]),
                        weight=np.array([5, 7]))
    with pytest.raises(OSError, match="disk full"):
        writers.write_forest(r, f"s3://{BUCKET}/failed/forest.parquet", storage_options=options)
    fs.invalidate_cache()
    assert not fs.exists(f"{BUCKET}/failed") or fs.find(f"{BUCKET}/failed") == []


def test_storage_options_in_a_run_config_must_be_a_mapping():
    from mst_dist.cli.runconfig import validate_run_config
    from mst_dist.errors import ConfigError

    with pytest.raises(ConfigError, match="storage_options: expected mapping"):
        validate_run_config({"graph": {"generate": {"kind": "grid", "rows": 3, "cols": 3}},
                             "storage_options": "anon"})


@pytest.mark.usefixtures("restore_logging")
def test_run_with_a_checkpoint_url(s3, graph, tmp_path, monkeypatch, capsys):
    """``--checkpoint s3://...``: the run saves its rounds there (the store's options from the flag) and,
    finished, leaves nothing under the prefix; the forest is Kruskal's."""
    options, fs = s3
    (s, d, w), exp = graph
    monkeypatch.chdir(tmp_path)
    saved = []
    from mst_dist.engine import checkpoint

    real = checkpoint.Checkpoint.saving

    def spy(self, **where):
        saved.append(self.path)
        return real(self, **where)

    monkeypatch.setattr(checkpoint.Checkpoint, "saving", spy)
    code = cli.main(["run", "--input", f"s3://{BUCKET}/in/g.txt", "--checkpoint", f"s3://{BUCKET}/ck/run",
                     "-o", f"s3://{BUCKET}/ck-out/forest.parquet", "--partitions", "3", "--local-finish", "0",
                     "--storage-options", json.dumps(options), "-q"])
    assert code == 0
    np.testing.assert_array_equal(_read_forest(fs, "ck-out/forest.parquet").column("edge_id").to_numpy(), exp)
    assert saved and all(str(p).startswith("s3://") for p in saved)
    fs.invalidate_cache()
    assert fs.find(f"{BUCKET}/ck") == []

"""The readers' benchmark (benchmarks/iobench.py) on a tiny graph: every format written, read and loaded."""
import json

from benchmarks import iobench


def test_iobench_tiny(tmp_path, capsys):
    out = tmp_path / "io.json"
    rc = iobench.main(["--edges", "2000", "--dir", str(tmp_path / "files"), "--repeat", "1", "--workers", "0",
                       "--out", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["edges"] == 2000 and data["machine"]["cpu_count"] >= 1
    assert [r["input"] for r in data["rows"]] == [key for key, *_ in iobench.FILES]
    for r in data["rows"]:
        assert r["edges"] == 2000, r["input"]
        assert r["read_s"] >= 0 and r["load_s_1_thread"] >= 0 and "cluster_s" not in r  # ms, rounded
    assert "pyarrow_csv_MB_s_1_thread" in data["rows"][0]
    table = capsys.readouterr().out
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(iobench.FILES) and rows[-1].endswith("| – |")  # no cluster column

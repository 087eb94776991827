"""The generators' throughput benchmark (benchmarks/generators.py) on a small range."""
import json

from benchmarks import generators as gen_bench


def test_generators_benchmark_measures_and_tabulates(tmp_path, capsys):
    out = tmp_path / "gen.json"
    assert gen_bench.main(["--edges", "20000", "--repeat", "1", "--threads", "1",
                           "--only", "erdos_renyi", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["case"], r["version"], r["threads"], r["edges"]) for r in rows] == \
        [("erdos_renyi", "now", 1, 20000)]
    assert rows[0]["seconds"] > 0 and rows[0]["per_core"] > 0
    table = capsys.readouterr().out.splitlines()
    assert table[-1].startswith("| erdos_renyi | – | ") and table[-3].startswith("| family")

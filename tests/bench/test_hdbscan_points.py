"""benchmarks/hdbscan_points.py: HDBSCAN from points, each method in its own process, compared by ARI."""
import json
import subprocess
import sys

from support.needs import module

FIELDS = {"method", "n", "dims", "fit_s", "fit_cpu_s", "warmup_s", "peak_rss_bytes", "n_clusters",
          "noise_fraction", "ari_vs_fast_hdbscan", "time_vs_fast_hdbscan"}


def test_tiny_run_reports_every_method(tmp_path):
    """3,000 blob points: one JSON line per method, phases timed, ours agreeing with fast_hdbscan."""
    module("fast_hdbscan", "pip install fast-hdbscan (the bench extra)")
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.hdbscan_points", "--points", "3000", "--dims", "2",
                           "--methods", "mst_dist,fast_hdbscan", "--warmup", "0", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert rows == [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["method"] for r in rows] == ["fast_hdbscan", "mst_dist"]  # the reference first
    by = {r["method"]: r for r in rows}
    for r in rows:
        assert FIELDS <= set(r), r
        assert (r["n"], r["dims"]) == (3000, 2)
        assert -1 <= r["ari_vs_fast_hdbscan"] <= 1
        assert r["fit_s"] > 0 and r["peak_rss_bytes"] > 10 * 2**20
        assert r["n_clusters"] == 10  # ten well-separated blobs
    ours = by["mst_dist"]
    assert {"knn_s", "joins_s", "join_rounds_s", "hdbscan_s"} <= set(ours)
    assert 0 <= ours["join_rounds_s"] <= ours["joins_s"]
    assert 0 < ours["knn_s"] < ours["fit_s"] and ours["hdbscan_s"] > 0
    assert abs(ours["knn_s"] + ours["joins_s"] + ours["hdbscan_s"] - ours["fit_s"]) < 0.01
    assert ours["ari_vs_fast_hdbscan"] >= 0.9
    assert by["fast_hdbscan"]["ari_vs_fast_hdbscan"] == 1.0


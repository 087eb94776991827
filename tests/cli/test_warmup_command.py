"""``mst-dist warmup``: every kernel compiled ahead into Numba's cache; runs (and clustering) then compile nothing."""
import pytest

from mst_dist.cli import commands as cli
from mst_dist.cli.parser import build_parser
from mst_dist.clustering import warmup as clustering_warmup
from mst_dist.engine import warmup


def test_parser_knows_warmup():
    args = build_parser().parse_args(["warmup", "-q"])
    assert args.command == "warmup" and args.quiet and not args.gpu


def test_warmup_compiles_every_part_and_says_where(capsys):
    assert cli.main(["warmup"]) == 0
    out = capsys.readouterr().out
    assert f"Numba's cache: {warmup.cache_dir()}" in out
    assert all(warmup.kernels_cached(k, p) for k in ("int64", "float64") for p in warmup.PARTS)
    assert clustering_warmup.kernels_cached()
    # a second time there is nothing to compile
    assert cli.main(["warmup"]) == 0
    assert capsys.readouterr().out.startswith("kernels already compiled; Numba's cache: ")
    assert cli.main(["warmup", "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_run_after_warmup_compiles_nothing(monkeypatch, capsys):
    cli.main(["warmup", "-q"])

    def fail(*args, **kwargs):
        raise AssertionError("a run after mst-dist warmup compiled kernels")

    monkeypatch.setattr(warmup, "warm", fail)
    assert cli.main(["run", "--generate", "grid", "--rows", "8", "--cols", "8", "--json", "-q"]) == 0
    assert '"forest_edges": 63' in capsys.readouterr().out.replace(" ", "").replace('":', '": ')


#: A new process clusters points as a user would (other sizes and parameters than the warm-up's), then
#: prints the clustering kernels it compiled rather than loaded from the cache.
CLUSTERING = """
import numpy as np, mst_dist
from mst_dist.clustering import approximate_predict, knn_graph, warmup
from mst_dist.kernels import compile as kernel_compile

X = np.random.default_rng(7).normal(size=(400, 6))
X[200:] += 6
model = mst_dist.HDBSCAN(min_cluster_size=12, min_samples=6, prediction_data=True).fit(X)
approximate_predict(model, X[:5] + 0.1)
mst_dist.HDBSCAN(min_cluster_size=12, exact=True).fit(X)
mst_dist.HDBSCAN(min_cluster_size=12, approximate_knn=True).fit(X)
mst_dist.hdbscan(knn_graph(X, 10, metric="chebyshev"), 12, cluster_selection_method="leaf")
knn_graph(X, 10, approximate=True, metric="cosine", symmetrize="mutual")
compiled = sorted(name for name, d in kernel_compile.dispatchers(warmup._modules()).items()
                  if sum(d.stats.cache_misses.values()))
print("compiled:", " ".join(compiled))
"""


def test_clustering_after_warmup_compiles_nothing():
    import subprocess
    import sys

    cli.main(["warmup", "-q"])
    out = subprocess.run([sys.executable, "-c", CLUSTERING], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-1].split() == ["compiled:"], out.stdout


@pytest.mark.parametrize("done", [False, True])
def test_compile_event_logged_as_a_step(caplog, done):
    import logging

    with caplog.at_level(logging.INFO, logger="mst_dist"):
        cli._progress({"phase": "compile", "round": None, "elapsed": 1.5, "done": done})
    text = caplog.records[-1].getMessage()
    assert text.startswith("kernels compiled (once after install)" if done
                           else "compiling kernels \u2014 once after install")


def test_warmup_gpu_without_a_gpu_says_what_to_install(capsys, monkeypatch):
    from mst_dist.kernels import gpu

    monkeypatch.setattr(gpu, "gpu_ready", lambda xp: (False, "CuPy is not installed (test)"))
    assert cli.main(["warmup", "--gpu"]) == 2
    err = capsys.readouterr().err
    assert "warmup --gpu: this machine cannot run the GPU kernels: CuPy is not installed (test)" in err
    assert "mst-dist[gpu]" in err

"""The public surface, called: every name of ``mst_dist.__all__``, the package's doctest, and every
subcommand and flag of the command line (each one a test passes, none only listed)."""
import argparse
import doctest
import glob
import json
import os
import re

import numpy as np
import pytest

import mst_dist
from mst_dist.cli import commands as cli
from mst_dist.cli.parser import build_parser
from support import ROOT, needs
from support.oracle import assert_forest, assert_forest_file, assert_result, expected


def test_every_name_of_all_resolves_and_is_documented():
    """``__all__`` walked: each name is there (the lazy ones too), documented, and ``import *`` gives
    exactly these; every error class shares the one base."""
    names = mst_dist.__all__
    assert len(names) == len(set(names))
    assert set(names) <= set(dir(mst_dist))
    for name in names:
        value = getattr(mst_dist, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"mst_dist.{name} has no docstring"
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, mst_dist.MSTError), name
    space = {}
    exec("from mst_dist import *", space)
    assert set(space) - {"__builtins__"} == set(names)
    with pytest.raises(AttributeError, match="has no attribute 'write_foerst'"):
        mst_dist.write_foerst  # noqa: B018


def test_package_doctest():
    """The example at the top of the package runs and prints what it says."""
    import importlib

    fresh = importlib.import_module("mst_dist")
    out = doctest.testmod(fresh, verbose=False, report=False)
    assert out.attempted >= 4 and out.failed == 0, out


@pytest.fixture(scope="module")
def solved(client):
    g = mst_dist.generate("erdos_renyi", n=300, m=1500, seed=3)
    return g, mst_dist.minimum_spanning_forest(g, client), expected(g)


@pytest.mark.parametrize("ext", ["npz", "parquet", "csv"])
def test_top_level_write_forest_and_labels(tmp_path, solved, ext):
    """mst_dist.write_forest and mst_dist.write_labels (lazy exports) write the forest and labels of a run."""
    g, res, exp = solved
    assert_result(res, exp)
    path = mst_dist.write_forest(res, tmp_path / f"forest.{ext}")
    assert path == str(tmp_path / f"forest.{ext}")
    assert_forest_file(path, exp)
    lab = mst_dist.write_labels(res, tmp_path / "labels.parquet")
    import pyarrow.parquet as pq

    t = pq.read_table(lab)
    np.testing.assert_array_equal(t.column("vertex").to_numpy(), np.arange(g.n_vertices))
    np.testing.assert_array_equal(t.column("component").to_numpy(), exp.labels)


def test_top_level_write_forest_with_labels_in_the_npz(tmp_path, solved):
    _, res, exp = solved
    mst_dist.write_forest(res, tmp_path / "f.npz", labels=True)
    assert_forest_file(tmp_path / "f.npz", exp)  # the labels array too


def test_top_level_write_graph_and_read_forest(tmp_path, client, solved):
    g, _, exp = solved
    mst_dist.write_graph(g, tmp_path / "g.parquet")
    back = mst_dist.read(str(tmp_path / "g.parquet"))
    res = mst_dist.minimum_spanning_forest(back, client, output=tmp_path / "forest")
    assert res.edge_ids is None
    assert_forest(exp, *mst_dist.read_forest(tmp_path / "forest"))


def test_top_level_graph_format_error(tmp_path):
    """A malformed input file: mst_dist.GraphFormatError (a ValueError), naming the file and the line."""
    (tmp_path / "bad.txt").write_text("0 1 5\n1 two 3\n")
    with pytest.raises(mst_dist.GraphFormatError, match="bad.txt") as e:
        mst_dist.read(str(tmp_path / "bad.txt")).to_arrays()
    assert isinstance(e.value, ValueError) and isinstance(e.value, mst_dist.MSTError)
    assert "2" in str(e.value)  # the line


# ---------------------------------------------------------------------------
# the command line: every subcommand and flag
# ---------------------------------------------------------------------------

def subcommands():
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def test_every_subcommand_has_help_and_every_flag_says_what_it_does(capsys):
    for name, parser in subcommands().items():
        with pytest.raises(SystemExit) as e:
            cli.main([name, "--help"])
        assert e.value.code == 0, name
        text = capsys.readouterr().out
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"{name} {action.option_strings}: no help"
            assert any(o in text for o in action.option_strings), (name, action.option_strings)


def test_every_flag_is_passed_by_some_test():
    """Each subcommand's long flags appear in a test that passes them (a flag no test passes is surface
    never called)."""
    text = "\n".join(open(f).read() for f in glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True))
    missing = []
    for name, parser in subcommands().items():
        if not re.search(rf"[\"']{re.escape(name)}[\"']", text):
            missing.append(name)
        for action in parser._actions:
            for o in action.option_strings:
                if o.startswith("--") and o != "--help" and not re.search(rf"[\"']{re.escape(o)}[\"'= ]", text):
                    missing.append(f"{name} {o}")
    assert not missing, f"flags no test passes: {missing}"


#: Each generator's flags on the command line and the parameters they stand for.
GENERATOR_FLAGS = [
    ("erdos_renyi", ["--n", "40", "--m", "200"], dict(n=40, m=200)),
    ("gnp", ["--n", "40", "--p", "0.2"], dict(n=40, p=0.2)),
    ("circulant", ["--n", "30", "--d", "3"], dict(n=30, d=3)),
    ("grid", ["--rows", "5", "--cols", "6"], dict(rows=5, cols=6)),
    ("hypercube", ["--d", "5"], dict(d=5)),
    ("caveman", ["--g", "4", "--k", "5"], dict(g=4, k=5)),
    ("connected_caveman", ["--g", "4", "--k", "5"], dict(g=4, k=5)),
    ("rmat", ["--scale", "7", "--edge-factor", "4", "--a", "0.5", "--b", "0.2", "--c", "0.2"],
     dict(scale=7, edge_factor=4, a=0.5, b=0.2, c=0.2)),
    ("random_geometric", ["--n", "200", "--radius", "0.15"], dict(n=200, radius=0.15)),
    ("ssca2", ["--n", "120", "--max-clique", "6", "--inter", "2"], dict(n=120, max_clique=6, inter=2)),
]


@pytest.mark.parametrize("kind,flags,params", GENERATOR_FLAGS, ids=[g[0] for g in GENERATOR_FLAGS])
def test_generate_flags_are_the_generators_parameters(tmp_path, kind, flags, params):
    """mst-dist generate KIND with its flags (and --seed, --weights, --wmin, --wmax) writes the graph
    mst_dist.generate makes of those parameters."""
    out = tmp_path / "g.npz"
    assert cli.main(["generate", kind, *flags, "--seed", "4", "--weights", "int", "--wmin", "-5", "--wmax", "9",
                     "-o", str(out), "-q"]) == 0
    want = mst_dist.generate(kind, seed=4, weights="int", wmin=-5, wmax=9, **params)
    got = mst_dist.read(str(out))
    assert got.n_vertices == want.n_vertices
    for a, b in zip(got.to_arrays(), want.to_arrays()):
        np.testing.assert_array_equal(a, b)
    assert want.to_arrays()[2].min() >= -5 and want.to_arrays()[2].max() <= 9


@pytest.mark.usefixtures("restore_logging")
def test_run_generator_flags_solve_to_kruskal(tmp_path, capsys):
    """mst-dist run --generate with a family's flags, --verbose and --no-processes: Kruskal's forest."""
    out = tmp_path / "f.npz"
    assert cli.main(["run", "--generate", "ssca2", "--n", "150", "--max-clique", "5", "--inter", "2",
                     "--seed", "2", "--wmin", "3", "--wmax", "40", "--no-processes", "--workers", "1",
                     "--verbose", "--json", "-o", str(out)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["config"]["cluster"]["processes"] is False
    assert_forest_file(out, expected(mst_dist.generate("ssca2", n=150, max_clique=5, inter=2, seed=2,
                                                       wmin=3, wmax=40)))


def test_generate_both_directions_writes_two_arcs_per_edge(tmp_path, client):
    """--both-directions: a .gr of two arcs per edge, as the DIMACS road networks; its forest weighs
    the same as the one-arc graph's."""
    g = mst_dist.generate("grid", rows=6, cols=7, seed=5)
    assert cli.main(["generate", "grid", "--rows", "6", "--cols", "7", "--seed", "5", "-o",
                     str(tmp_path / "two.gr"), "--both-directions", "-q"]) == 0
    assert cli.main(["generate", "grid", "--rows", "6", "--cols", "7", "--seed", "5", "-o",
                     str(tmp_path / "one.gr"), "-q"]) == 0
    s, d, w = g.to_arrays()
    two = mst_dist.read(str(tmp_path / "two.gr"))
    ts, td, tw = two.to_arrays()
    assert two.n_edges == 2 * g.n_edges
    arcs = sorted(zip(ts.tolist(), td.tolist(), tw.tolist()))
    both = sorted([*zip(s.tolist(), d.tolist(), w.tolist()), *zip(d.tolist(), s.tolist(), w.tolist())])
    assert arcs == both
    one = mst_dist.read(str(tmp_path / "one.gr"))
    assert one.n_edges == g.n_edges
    res = mst_dist.minimum_spanning_forest(two, client)
    assert_result(res, expected(two))
    assert res.total_weight == expected(g).total


def test_require_encryption_flags_reach_the_security_section(tmp_path):
    """--require-encryption and --no-require-encryption set cluster.security.require_encryption, for run,
    submit and generate alike."""
    from mst_dist.cli.parser import run_config_from_args
    from support.tls import make_certs

    needs.module("cryptography", "the test makes its certificates with it: pip install 'mst-dist[test]'")
    certs = make_certs(tmp_path)
    tls = ["--tls-ca-file", certs["ca_file"], "--tls-cert", certs["cert"], "--tls-key", certs["key"]]
    p = build_parser()
    for flag, want in (("--require-encryption", True), ("--no-require-encryption", False)):
        run = run_config_from_args(p.parse_args(["run", "--generate", "grid", "--rows", "2", "--cols", "2", flag]))
        assert run["cluster"]["security"]["require_encryption"] is want, flag
        sub = run_config_from_args(p.parse_args(["submit", "--generate", "grid", "--rows", "2", "--cols", "2",
                                                 "--scheduler", "tls://127.0.0.1:1", *tls, flag]))
        assert sub["cluster"]["security"]["require_encryption"] is want, flag
        gen = p.parse_args(["generate", "grid", "-o", str(tmp_path / "g.npz"), flag])
        assert gen.require_encryption is want
    assert p.parse_args(["generate", "grid", "-o", "x.npz"]).require_encryption is None

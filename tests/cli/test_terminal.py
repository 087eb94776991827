"""What ``mst-dist run`` shows a person: the round table at 80, 100 and 120 columns, and the logs.

The numbers are checked against the run's own JSON report: every one whole
(none cut to "262,…"), the table's last row agreeing with the summary, and
counts that never go back up.
"""
import json
import logging
import re
import sys

import pytest
from rich.console import Console

import mst_dist
from mst_dist.cli import commands as cli
from mst_dist.cli.summary import print_summary, round_rows
from mst_dist.result import RoundStats, RunStats
from support.cli import on_a_terminal, run_cli

NUMBER = re.compile(r"^-?[\d,]+(\.\d+)?$")


def summary_block(screen):
    """The summary and tables a run printed last (after the live display)."""
    return screen[screen.rindex("vertices"):]


def table_rows(text):
    """The round table's body rows as lists of cells (the header and rules left out)."""
    lines = text[re.search(r"\nrounds *\n", text).start():].splitlines()[2:]  # after the table's title
    header = next(i for i, line in enumerate(lines) if "┃" in line)
    cols = [c.strip() for c in lines[header].split("┃")]
    rows = []
    for line in lines[header + 1:]:
        if "│" not in line:
            if rows and not set(line.strip()) <= set("━╇─┼"):
                break
            continue
        rows.append(dict(zip(cols, [c.strip() for c in line.split("│")])))
    return rows


def check_numbers(text, report, width):
    """Every summary number whole; the table's rows those of the report; nothing wider than the screen."""
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    s = report["summary"]
    for label, key in (("vertices", "vertices"), ("edges", "edges"), ("forest edges", "forest_edges"),
                       ("total weight", "total_weight"), ("components", "components")):
        line = next(line for line in text.splitlines() if line.startswith(label + " "))
        assert line.split()[-1] == f"{s[key]:,}", line
    rows = table_rows(text)
    body, total = rows[:-1], rows[-1]
    assert total["pass"] == "total"
    rounds = report["stats"]["rounds"]
    assert [int(r["round"]) for r in body] == [r["round"] for r in rounds]
    assert [r["forest edges"] for r in body] == [f"{r['forest_edges']:,}" for r in rounds]
    assert total["forest edges"] == f"{s['forest_edges']:,}"
    # the last row and the summary agree; counts never go back up
    comps = [int(r["components"].replace(",", "")) for r in body]
    left = [int(r["edges left"].replace(",", "")) for r in body]
    assert comps[-1] == s["components"] == int(total["components"].replace(",", ""))
    assert comps == sorted(comps, reverse=True)
    # edges left: over the whole run; a streamed run's passes each solve a slice of their own
    groups, last = [], ""
    for r in body:
        last = r["pass"] or last
        groups.append(last.split()[1] if last.startswith("pass ") else "")
    for g in set(groups):
        mine = [n for n, h in zip(left, groups) if h == g]
        assert mine == sorted(mine, reverse=True)
    for r in body:
        assert all(NUMBER.match(r[c]) for c in ("round", "components", "edges left", "forest edges", "seconds"))
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_run_reads_whole_at_ordinary_widths(tmp_path, width):
    rc, screen = on_a_terminal("run", "--generate", "rmat", "--scale", "12", "--seed", "2",
                               "--report", "run.json", cwd=tmp_path, columns=width)
    assert rc == 0, screen[-3000:]
    report = json.loads((tmp_path / "run.json").read_text())
    rows = check_numbers(summary_block(screen), report, width)
    # a dense graph: its light edges first, then the heavy ones relabelled (as often as it pays), then the rest
    groups = [r["pass"] for r in rows if r["pass"]]
    assert groups[:2] == ["light", "heavy"] and groups[-2:] == ["main", "total"]
    assert set(groups[2:-2]) <= {"light", "heavy"}
    assert "INFO" not in screen  # warnings and errors only by default


# --------------------------------------------------------------------------
# the table from the records (in-process): grouping, widths, --wide
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs(client2):
    """A dense graph solved in one task, in distributed rounds, and streamed."""
    g = mst_dist.generate("rmat", scale=12, seed=4)
    return {
        "local": mst_dist.minimum_spanning_forest(g, client2),
        "distributed": mst_dist.minimum_spanning_forest(g, client2, local_finish=0, partitions=4),
        "streamed": mst_dist.minimum_spanning_forest(g, client2, stream="always"),
    }


def rendered(result, width, wide=False):
    console = Console(record=True, width=width, color_system=None)
    print_summary(result, 1.0, console=console, wide=wide)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("kind", ["local", "distributed", "streamed"])
def test_the_table_fits_and_keeps_every_number(runs, kind, width):
    res = runs[kind]
    report = json.loads(json.dumps({"summary": res.summary(), "stats": res.stats.to_dict()}))
    text = rendered(res, width)
    rows = check_numbers(text, report, width)
    groups = [r["pass"] for r in rows if r["pass"]]
    if kind == "streamed":
        assert groups[0] == "pass 1" and groups[-1] == "total"
        assert all(g.startswith("pass ") for g in groups[:-1])
    else:
        # one task relabels the heavy edges in a step of its own (after each light pass it makes: a graph
        # still dense after one takes another); distributed rounds in their next map
        if kind == "local":
            light = groups[:-2]
            assert light and light == ["light", "heavy"] * (len(light) // 2) and groups[-2:] == ["main", "total"]
        else:
            assert groups == ["light", "main", "total"]


def test_edges_left_count_the_heavy_edges_that_wait(runs):
    rows = round_rows(runs["distributed"].stats, runs["distributed"].n_vertices)
    light = [w for w in rows if w.group == "light"]
    first_main = next(w for w in rows if w.group == "main")
    assert light and all(w.edges_left >= first_main.stats.edges_before for w in light)
    assert light[-1].edges_left == first_main.stats.edges_before  # the light edges used up


@pytest.mark.parametrize("width", [80, 100, 120, 1000])
def test_wide_shows_every_column_that_fits_and_names_the_others(runs, width):
    text = rendered(runs["distributed"], width, wide=True)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    header = next(line for line in text.splitlines() if "┃" in line)
    shown = [c.strip() for c in header.split("┃")]
    every = ["map s", "merge s", "contract s", "filter-edges s", "filter-nodes s", "wall s", "overhead s", "moved",
             "mode", "active components", "edges"]
    missing = [c for c in every if c not in shown]
    if width == 1000:
        assert not missing
    else:
        assert missing and f"left out at {width} columns: {', '.join(missing)}" in " ".join(text.split())
    # the compact table has none of them but seconds
    compact = rendered(runs["distributed"], width)
    assert "overhead s" not in compact and "map s" not in compact


def test_no_overhead_shown_negative(runs):
    text = rendered(runs["distributed"], 1000, wide=True)
    rows = table_rows(text)
    assert rows and all(not r["overhead s"].startswith("-") for r in rows)


def test_the_summary_and_last_row_agree_on_a_forest_of_many_trees():
    """Isolated vertices and several trees: components count trees, not live components."""
    rounds = [RoundStats(round=0, mode="local", components_before=6, components_after=2, edges_before=9,
                         edges_after=3, forest_edges=4),
              RoundStats(round=1, mode="local", components_before=2, components_after=0, edges_before=3,
                         edges_after=0, forest_edges=1)]
    rows = round_rows(RunStats(rounds=rounds), 10)
    assert [w.components for w in rows] == [6, 5]  # 10 vertices less 4, then 5 forest edges
    assert [w.group for w in rows] == ["main", "main"]


# --------------------------------------------------------------------------
# logs
# --------------------------------------------------------------------------

GRID = ("run", "--generate", "grid", "--rows", "30", "--cols", "30")


@pytest.mark.slow
def test_piped_logs_are_plain_whole_lines(tmp_path):
    quiet = run_cli(*GRID, cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert "INFO" not in quiet.stderr and "no usable GPU" not in quiet.stderr  # warnings and errors only
    assert "components" in quiet.stdout and "\x1b[" not in quiet.stdout
    for flags in (["-v"], ["--log-level", "info"]):
        p = run_cli(*GRID, *flags, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert "\x1b[" not in p.stderr
        # one line per record, in Dask's log format, never folded at 80 columns
        (line,) = [ln for ln in p.stderr.splitlines() if "graph grid(" in ln]
        assert re.match(r"^\d{4}-\d\d-\d\d [\d:,]+ - mst_dist\.cli - INFO - graph grid\(.*\): 900 vertices, "
                        r"[\d,]+ edges$", line), line
        assert len(line) > 80


def test_log_levels_from_the_flags():
    parse = cli.build_parser().parse_args
    assert cli._log_level(parse(["run"])) == logging.WARNING
    assert cli._log_level(parse(["run", "-v"])) == logging.INFO
    assert cli._log_level(parse(["run", "-vv"])) == logging.DEBUG
    assert cli._log_level(parse(["run", "-q"])) == logging.ERROR
    assert cli._log_level(parse(["run", "-q", "--log-level", "INFO"])) == logging.INFO
    assert cli._log_level(parse(["generate", "grid", "-o", "x.gr", "--log-level", "debug"])) == logging.DEBUG


def test_mpi_ranks_log_plain_lines(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    console = Console(force_terminal=True)
    cli._setup_logging(cli.build_parser().parse_args(["run", "-v"]), console)
    (handler,) = logging.getLogger("mst_dist").handlers
    assert type(handler) is logging.StreamHandler
    assert handler.formatter._fmt == "%(asctime)s - %(name)s - %(levelname)s - %(message)s"


def test_mpi_ranks_draw_no_live_line(monkeypatch):
    args = cli.build_parser().parse_args(["run"])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    console = Console(force_terminal=True)
    assert cli._live_progress(args, console) is not None
    monkeypatch.setenv("PMI_RANK", "1")
    assert cli._live_progress(args, console) is None


def compute_failed(key, exc):
    """A record as Dask's worker logger writes it for a failed task."""
    return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1,
                             "Compute Failed\nKey:       %s\nState:     %s\nTask:  %s\nException: %r\n"
                             "Traceback: %r\n", (key, "executing", "load(...)", exc, "  File ..."), None)


def test_per_task_reports_of_errors_the_cli_reports_are_dropped():
    f = cli.EngineErrorFilter(cli._reported_errors())
    assert not f.filter(compute_failed("mst-load-r0-0123abcd-3", "GraphFormatError('g.txt, line 4: ...')"))
    assert not f.filter(compute_failed("mst-load-r0-0123abcd-3", "InvalidGraphError('edge 3: ...')"))
    # another error, another library's task, another message: kept
    assert f.filter(compute_failed("mst-load-r0-0123abcd-3", "MemoryError()"))
    assert f.filter(compute_failed("inc-123", "GraphFormatError('x')"))
    assert f.filter(logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, "other %s", ("x",), None))


@pytest.mark.slow
def test_a_bad_input_is_one_error_line(tmp_path):
    lines = [f"{i % 97} {(i * 7) % 89} {i % 13 + 1}" for i in range(40000)]
    lines[30000] = "1 2 x"
    (tmp_path / "g.txt").write_text("\n".join(lines) + "\n")
    p = run_cli("run", "--input", "g.txt", "--partitions", "4", cwd=tmp_path)
    assert p.returncode == 2
    assert "Compute Failed" not in p.stderr and "Traceback" not in p.stderr
    (err,) = p.stderr.strip().splitlines()
    assert err.startswith("mst-dist: error: g.txt, line 30001:") and "'x'" in err


def test_plot_without_bokeh_fails_before_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "bokeh", None)  # as if the dashboard extra were not installed

    def no_cluster(*a, **k):
        raise AssertionError("a cluster started before the options were checked")

    monkeypatch.setattr(cli, "make_client", no_cluster)
    rc = cli.main(["run", *GRID[1:], "--plot", str(tmp_path / "rounds.html")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "Bokeh" in err and "pip install 'mst-dist[dashboard]'" in err
    assert list(tmp_path.iterdir()) == []

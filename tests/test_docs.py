"""The documentation: it builds with warnings as errors, its references are complete, its examples run.

- The Sphinx build (``-W -n``: every warning, and every internal reference that
  does not resolve, is an error) of ``docs/``.
- The API reference holds every name of ``mst_dist.__all__``; the configuration
  reference lists exactly the keys the run-config loader accepts (asked of the
  loader itself, through the keys its errors say are allowed).
- Every code block of the pages (``docs/**/*.md`` and ``README.md``) is checked:
  ``python`` blocks run, page by page in a fresh interpreter (a ``text`` block
  right after one is the output it must print); ``yaml`` blocks parse, and those
  that are run configs pass the loader; shell blocks marked ``<!-- run -->`` run,
  and every ``mst-dist`` command of the others parses with the command line's own
  parser, every benchmark command (``python -m benchmarks...``) with its module's own.
  A block that cannot run here says why, in a ``<!-- not run: REASON -->``
  line right above it.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from support.needs import module

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts) + [ROOT / "README.md"]

# --------------------------------------------------------------------------
# Code blocks
# --------------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
_MARK = re.compile(r"<!--\s*(?P<what>run|not run:(?P<reason>[^>]*))\s*-->\s*$")
SHELL = ("bash", "sh", "shell", "console")


class Block:
    """One fenced code block of a page: language, text, line, and the marker above it."""

    def __init__(self, page, lang, code, line, mark, reason):
        self.page, self.lang, self.code, self.line = page, lang, code, line
        self.mark, self.reason = mark, reason

    def __repr__(self):
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks(page):
    """The fenced blocks of a Markdown page, in order."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        info = m["info"].strip()
        lang = info.split()[0] if info else ""
        if lang.startswith("{"):  # a MyST directive (toctree, include): not code
            continue
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        out.append(Block(page, lang, m["body"], text.count("\n", 0, m.start()) + 1,
                         mark and ("run" if mark["what"] == "run" else "not run"),
                         mark and (mark["reason"] or "").strip()))
    return out


def python_steps(page):
    """The Python blocks of a page to run, each with the output it must print (or ``None``)."""
    found = blocks(page)
    steps = []
    for i, b in enumerate(found):
        if b.lang != "python" or b.mark == "not run":
            continue
        nxt = found[i + 1] if i + 1 < len(found) else None
        expected = None
        if nxt is not None and nxt.lang == "text":
            text = page.read_text(encoding="utf-8")
            between = "\n".join(text.splitlines()[b.line + b.code.count("\n") + 1:nxt.line - 1])
            if len(between.split()) <= 2:  # only blank lines, or "prints" / "gives"
                expected = nxt.code
        steps.append((b, expected))
    return steps


_RUNNER = textwrap.dedent("""
    import contextlib, io, json, sys, traceback
    steps = json.load(open(sys.argv[1]))
    ns = {"__name__": "__main__"}
    results = []
    for code in steps:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, "<doc block>", "exec"), ns)
        except BaseException:
            results.append({"ok": False, "out": out.getvalue(), "error": traceback.format_exc()})
            break
        results.append({"ok": True, "out": out.getvalue()})
    json.dump(results, open(sys.argv[2], "w"))
""")


def _page_id(page):
    return str(page.relative_to(ROOT))


def test_every_block_marked_not_run_says_why():
    """A ``<!-- not run -->`` block names its reason, so that a skipped example is a decision."""
    for page in PAGES:
        for b in blocks(page):
            if b.mark == "not run":
                assert b.reason, f"{b}: `<!-- not run: REASON -->` needs a reason"


@pytest.mark.parametrize("page", [p for p in PAGES if python_steps(p)], ids=_page_id)
def test_python_blocks_run(page, tmp_path):
    """Each page's Python blocks run in order, in a fresh interpreter, printing what the page shows."""
    steps = python_steps(page)
    (tmp_path / "steps.json").write_text(json.dumps([b.code for b, _ in steps]))
    (tmp_path / "runner.py").write_text(_RUNNER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_MST__")}
    proc = subprocess.run([sys.executable, "runner.py", "steps.json", "results.json"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads((tmp_path / "results.json").read_text())
    for (block, expected), res in zip(steps, results):
        assert res["ok"], f"{block} fails:\n{res['error']}"
        if expected is not None:
            assert res["out"].strip() == expected.strip(), (
                f"{block} prints\n{res['out']}\nwhere the page shows\n{expected}")
    assert len(results) == len(steps)


def _mst_dist_commands(code):
    """The ``mst-dist`` commands of a shell block, as argument lists (comments, prompts, ``mpirun`` dropped)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            if "mst-dist" in words:
                commands.append(words[words.index("mst-dist") + 1:])
    return commands


def test_shell_commands_parse():
    """Every ``mst-dist`` command of the pages is one the command line accepts (flags, choices, types)."""
    from mst_dist.cli.parser import build_parser

    checked = 0
    for page in PAGES:
        for b in blocks(page):
            if b.lang not in SHELL:
                continue
            for argv in _mst_dist_commands(b.code):
                try:
                    build_parser().parse_args(argv)
                except SystemExit as e:
                    pytest.fail(f"{b}: `mst-dist {' '.join(argv)}` is refused by the parser (exit {e.code})")
                checked += 1
    assert checked > 0


def _benchmark_commands(code):
    """The benchmark commands of a shell block (``python -m benchmarks...``, ``python benchmarks/NAME.py``),
    as ``(module, argv)`` pairs; leading ``VAR=value`` settings dropped."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                words.pop(0)
            if words[:2] == ["python", "-m"] and len(words) > 2 and words[2].split(".")[0] == "benchmarks":
                commands.append((words[2], words[3:]))
            elif words[:1] == ["python"] and len(words) > 1 and re.fullmatch(r"benchmarks/\w+\.py", words[1]):
                commands.append((words[1][:-3].replace("/", "."), words[2:]))
    return commands


class _Parsed(Exception):
    """Raised in place of running a benchmark, once its command line has parsed."""


def test_benchmark_commands_parse(monkeypatch):
    """Every benchmark command of the pages is a module of ``benchmarks/`` whose own parser accepts it;
    ``python -m benchmarks CONFIG`` names a config that exists, with its graphs for ``--only`` and
    known methods for ``--methods``."""
    import argparse
    import importlib

    from benchmarks.config import ALL_METHODS
    from benchmarks.scale import SCALE_METHODS

    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        raise _Parsed(parse(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    checked = 0
    for page in PAGES:
        for b in blocks(page):
            if b.lang not in SHELL:
                continue
            for name, argv in _benchmark_commands(b.code):
                command = f"`python -m {name} {' '.join(argv)}`"
                try:
                    module = importlib.import_module(name)
                except ImportError as e:
                    pytest.fail(f"{b}: {command} names no benchmark module ({e})")
                entry = module.cli if name == "benchmarks" else module.main
                try:
                    entry(argv)
                except _Parsed as parsed:
                    args = parsed.args[0]
                except SystemExit as e:
                    pytest.fail(f"{b}: {command} is refused by its parser (exit {e.code})")
                else:
                    pytest.fail(f"{b}: {command} ran without parsing a command line")
                if name == "benchmarks":
                    config = ROOT / args.config
                    assert config.is_file(), f"{b}: {command}: no config {args.config}"
                    graphs = {g["name"] for g in yaml.safe_load(config.read_text())["graphs"]}
                    for graph in (args.only.split(",") if args.only else []):
                        assert graph in graphs, f"{b}: {command}: no graph {graph} in {args.config}"
                    for method in (args.methods.split(",") if args.methods else []):
                        assert method in ALL_METHODS + tuple(SCALE_METHODS), f"{b}: {command}: no method {method}"
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("block", [b for p in PAGES for b in blocks(p) if b.lang in SHELL and b.mark == "run"],
                         ids=repr)
def test_marked_shell_blocks_run(block, tmp_path):
    """Shell blocks marked ``<!-- run -->`` run as given, each command exiting 0."""
    script = tmp_path / "block.sh"
    script.write_text("set -euo pipefail\n" + block.code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_MST__")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"{block}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


def test_yaml_blocks_load():
    """YAML blocks parse; those that are run configs (a ``graph`` key) pass the loader."""
    from mst_dist.cli.runconfig import validate_run_config

    configs = 0
    for page in PAGES:
        for b in blocks(page):
            if b.lang not in ("yaml", "yml"):
                continue
            data = yaml.safe_load(b.code)
            if isinstance(data, dict) and "graph" in data:
                validate_run_config(data, source=repr(b), check_paths=False)
                configs += 1
    assert configs > 0


# --------------------------------------------------------------------------
# The build and the generated references
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def html(tmp_path_factory):
    """The HTML site, built as CI builds it: ``python -m sphinx -W -n -b html`` (warnings are errors)."""
    module("sphinx", "pip install -e '.[docs]'")
    module("myst_parser", "pip install -e '.[docs]'")
    module("sphinxarg", "pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("html")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / ".doctrees"), str(DOCS), str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"the docs do not build:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return out


def test_docs_build_strict(html):
    """The site builds with ``-W -n`` and has every page of its table of contents."""
    for page in ("index", "getting-started", "reference/api", "reference/configuration", "reference/cli",
                 "reference/exit-codes", "changelog"):
        assert (html / f"{page}.html").is_file(), page


def test_api_reference_has_every_public_name(html):
    """Every name of ``mst_dist.__all__`` and ``mst_dist.clustering.__all__`` is in the API reference."""
    import mst_dist
    import mst_dist.clustering

    page = (html / "reference" / "api.html").read_text(encoding="utf-8")
    missing = [f"{module.__name__}.{name}" for module in (mst_dist, mst_dist.clustering)
               for name in module.__all__ if f'id="{module.__name__}.{name}"' not in page]
    assert not missing, f"not in the API reference: {missing}"


def _loader_allowed(raw, section):
    """The keys the run-config loader accepts in ``section``, from its error on an unknown key there."""
    from mst_dist.cli.runconfig import validate_run_config
    from mst_dist.config import ConfigError

    with pytest.raises(ConfigError) as info:
        validate_run_config(raw, check_paths=False)
    message = str(info.value)
    prefix = f"{section}.zz_unknown" if section else "zz_unknown"
    assert message.startswith(prefix + ": unknown key; allowed: "), message
    return {f"{section}.{k}" if section else k for k in message.split("allowed: ", 1)[1].split(", ")}


def loader_keys():
    """Every key path the run-config loader accepts, asked of the loader section by section."""
    from mst_dist.generators import GENERATORS

    def grid(**extra):
        return {"graph": {"generate": {"kind": "grid", "rows": 2, "cols": 2}}, **extra}

    bad = {"zz_unknown": 1}
    keys = _loader_allowed({**grid(), **bad}, "")
    keys |= _loader_allowed({"graph": {"input": "g.gr", **bad}}, "graph")
    for kind in GENERATORS:
        keys |= _loader_allowed({"graph": {"generate": {"kind": kind, **bad}}}, "graph.generate")
    keys |= _loader_allowed(grid(output={"path": "f.parquet", **bad}), "output")
    keys |= _loader_allowed(grid(checkpoint={"path": "ckpt", **bad}), "checkpoint")
    keys |= _loader_allowed(grid(placement=bad), "placement")
    keys |= _loader_allowed(grid(cluster=bad), "cluster")
    keys |= _loader_allowed(grid(cluster={"security": bad}), "cluster.security")
    return keys


def test_configuration_reference_lists_every_loader_key(html):
    """The run-config table lists exactly the keys the loader accepts; the settings table every setting."""
    page = (html / "reference" / "configuration.html").read_text(encoding="utf-8")
    sections = re.split(r'<section id="', page)
    run_section = next(s for s in sections if s.startswith("run-config-keys"))
    settings_section = next(s for s in sections if s.startswith("engine-settings"))

    def first_column(section):
        keys = set()
        for row in re.findall(r"<tr[^>]*>\s*<td>(.*?)</td>", section, re.S):
            keys |= set(re.findall(r'<span class="pre">([^<]+)</span>', row)[:1])
        return keys

    listed = first_column(run_section)
    accepted = loader_keys()
    assert listed == accepted, (f"listed, not accepted: {sorted(listed - accepted)}; "
                                f"accepted, not listed: {sorted(accepted - listed)}")

    from mst_dist.config import DEFAULTS

    def leaves(d, prefix):
        for k, v in d.items():
            if isinstance(v, dict) and v:
                yield from leaves(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}"

    settings = set(leaves(DEFAULTS, ""))
    assert settings <= first_column(settings_section), sorted(settings - first_column(settings_section))


def test_cli_reference_has_every_command(html):
    """The CLI reference is the parser's: every command and every flag of ``run``."""
    from mst_dist.cli.parser import build_parser

    page = (html / "reference" / "cli.html").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        assert name in page, name
    for action in sub.choices["run"]._actions:
        for flag in action.option_strings:
            if flag not in ("-h", "--help"):  # argparse's own, on every command
                assert flag in page, flag


def test_exit_code_table_is_the_command_lines(html):
    """The exit-code page lists every class and status of the command line's own table."""
    from mst_dist.cli.commands import EXITS

    page = (html / "reference" / "exit-codes.html").read_text(encoding="utf-8")
    for classes, status, _ in EXITS:
        for cls in classes:
            assert cls.__name__ in page, cls.__name__
        assert f'<span class="pre">{status}</span>' in page, status

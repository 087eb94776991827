"""Sphinx extension of the mst-dist docs: the configuration reference, generated.

Two directives, used by ``docs/reference/configuration.rst``:

``.. mst-settings::``
    Every engine setting of the packaged ``mst_dist/mst-dist.yaml``: its
    ``dask.config`` key, environment variable, default and meaning (the
    comment above it in that file).
``.. mst-run-config::``
    Every key a run config (``mst-dist run CONFIG``) may hold, from the
    loader's own schema in :mod:`mst_dist.cli.runconfig`: its type, default,
    the cluster kinds it applies to and its meaning.

The tables are built from the files the package reads, so they cannot drift
from them; a key the loader accepts without a description here (or a
description of a key it no longer accepts) stops the build.
:func:`settings_rows` and :func:`run_config_rows` are what
``tests/test_docs.py`` compares with the loader.
"""
from __future__ import annotations

import os
import re

import yaml
from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList

import mst_dist

SETTINGS_FILE = os.path.join(os.path.dirname(mst_dist.__file__), "mst-dist.yaml")

# --------------------------------------------------------------------------
# Engine settings: mst_dist/mst-dist.yaml, comments included
# --------------------------------------------------------------------------

_KEY_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z0-9_-]+):(?P<rest>.*)$")


def settings_rows(path=SETTINGS_FILE):
    """The engine settings of a defaults file: ``[(key, default, is_section, meaning)]``.

    ``key`` is the dotted ``dask.config`` key (``mst.filter.light-factor``);
    ``meaning`` is the comment block right above the key, joined into one
    paragraph.  Sections (keys whose value is a mapping) are listed too.
    """
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    defaults = yaml.safe_load("\n".join(lines))
    rows, stack, comment = [], [], []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            comment = []
            continue
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
            continue
        m = _KEY_LINE.match(line)
        if m is None:
            raise ValueError(f"{path}: cannot read the line {line!r}")
        depth = len(m["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack.append((depth, m["key"]))
        key = ".".join(k for _, k in stack)
        value = defaults
        for part in key.split("."):
            value = value[part]
        rows.append((key, value, isinstance(value, dict), " ".join(comment)))
        comment = []
    return rows


def settings_defaults(path=SETTINGS_FILE):
    """The packaged defaults, ``{dotted key: value}`` (leaves only)."""
    return {key: value for key, value, section, _ in settings_rows(path) if not section}


def env_name(key):
    """The environment variable of a ``dask.config`` key: ``mst.split-every`` -> ``DASK_MST__SPLIT_EVERY``."""
    return "DASK_" + "__".join(part.upper().replace("-", "_") for part in key.split("."))


def _literal(value):
    if value is None:
        return "``null``"
    if isinstance(value, bool):
        return f"``{str(value).lower()}``"
    if isinstance(value, str):
        return f'``"{value}"``'
    return f"``{value}``"


# --------------------------------------------------------------------------
# Run configs: the loader's schema (mst_dist.cli.runconfig)
# --------------------------------------------------------------------------

#: Meaning of the run-config keys that are not an engine setting of their own (those take
#: the comment of their setting in mst-dist.yaml).
RUN_CONFIG_TEXT = {
    "graph": "The graph: exactly one of ``graph.generate`` (a generated graph) and ``graph.input`` "
             "(a file). Required.",
    "graph.generate": "A graph generated on the workers, chunk by chunk "
                      "(:func:`mst_dist.generate`): ``kind`` and that family's parameters.",
    "graph.generate.kind": "The generator family.",
    "graph.input": "A file, a glob or a directory, read on the workers (:func:`mst_dist.read`); "
                   "or a URL (``s3://``, ``gs://``, ``abfs://``, ``https://``), with ``storage_options``.",
    "graph.format": "The input's format; default: from the file name.",
    "graph.options": "Reader options given to :func:`mst_dist.read`: ``dedupe_directions``, "
                     "``allow_empty`` and each format's own (see :doc:`/io`).",
    "n_vertices": "Vertex count of an input file (ids in ``[0, n_vertices)``); default: the "
                  "largest id + 1. Only with ``graph.input``: a generator sets its own.",
    "output": "Where the forest (``edge_id, src, dst, weight``) is written; absent: it is not "
              "written.",
    "output.path": "The file; its directory must exist. Or a URL (``s3://bucket/forest.parquet``), "
                   "with ``storage_options``. Required in ``output``.",
    "output.format": "The file's format; default: from the extension.",
    "checkpoint": "Save the run's state after each round or pass, so that the same run started "
                  "again goes on from there; absent: no checkpoint.",
    "checkpoint.path": "The directory (created if missing), on storage the workers and the client "
                       "share, or a URL with ``storage_options``. Required in ``checkpoint``.",
    "checkpoint.resume": "Go on from the state found in ``checkpoint.path`` (``false``: discard it "
                         "and start over).",
    "storage_options": "Options of the file system of URL paths (``graph.input``, ``output.path``, "
                       "``checkpoint.path``): credentials, endpoint, as ``dask.dataframe`` takes them. "
                       "``--storage-options JSON`` is merged over it. Their values never appear in the "
                       "run report.",
    "placement": "Where edge chunks go on a cluster that mixes CPU and GPU workers.",
    "cluster": "The cluster the run starts or connects to (see :doc:`/guide/clusters`).",
    "cluster.cuda_visible_devices": "The GPUs a ``local-cuda`` cluster uses (``\"0,1\"``); "
                                    "default: every visible one.",
    "cluster.cores": "Cores per batch job (or the dask config ``jobqueue.<kind>.cores``). Required "
                     "for slurm and pbs.",
    "cluster.memory": "Memory per batch job, such as ``\"64GiB\"`` (or "
                      "``jobqueue.<kind>.memory``). Required for slurm and pbs.",
    "cluster.queue": "The batch queue or partition.",
    "cluster.account": "The account jobs are charged to.",
    "cluster.walltime": "The jobs' time limit, such as ``\"02:00:00\"``.",
    "cluster.job_name": "The jobs' name.",
    "cluster.resource_spec": "PBS resource request (``select=1:ncpus=32:mem=64gb``).",
    "cluster.interface": "The network interface workers and scheduler listen on (``ib0``); "
                         "default: loopback for what runs on one host.",
    "cluster.local_directory": "Scratch directory of the workers.",
    "cluster.log_directory": "Where batch jobs write their logs.",
    "cluster.python": "The Python the jobs run (default: this one).",
    "cluster.job_extra_directives": "Extra ``#SBATCH``/``#PBS`` lines.",
    "cluster.job_script_prologue": "Shell lines run before the worker starts (``module load``, "
                                   "``source venv/bin/activate``).",
    "cluster.worker_extra_args": "Extra arguments of ``dask worker``.",
    "cluster.security": "TLS for every connection of the cluster (see :doc:`/guide/clusters`); "
                        "absent: Dask's own TLS settings, if any.",
    "cluster.security.ca_file": "The certificate authority (PEM) that signed the cluster's "
                                "certificates.",
    "cluster.security.cert": "This side's certificate (PEM).",
    "cluster.security.key": "Its private key (PEM).",
    "cluster.security.require_encryption": "Refuse unencrypted connections (default: on with "
                                           "certificates; a local cluster without certificates "
                                           "makes temporary ones).",
}


def _runconfig():
    from mst_dist.cli import runconfig

    return runconfig


def accepted_run_config_keys():
    """Every key path the run-config loader accepts, from its schema tables.

    Generator parameters appear once each as ``graph.generate.<name>``, whichever
    families take them.
    """
    rc = _runconfig()
    keys = set(rc._TOP_KEYS)
    keys |= {f"graph.{k}" for k in rc._GRAPH_KEYS}
    keys |= {"graph.generate.kind"} | {f"graph.generate.{p}" for params in rc.GENERATOR_PARAMS.values()
                                       for p in params}
    keys |= {f"graph.generate.{p}" for p in rc._COMMON_GENERATE}
    keys |= {f"output.{k}" for k in rc._OUTPUT_KEYS}
    keys |= {f"checkpoint.{k}" for k in rc._CHECKPOINT_KEYS}
    keys |= {f"placement.{k}" for k in rc._PLACEMENT_KEYS}
    keys |= {f"cluster.{k}" for k in rc._CLUSTER_KEYS}
    keys |= {f"cluster.security.{k}" for k in rc._SECURITY_KEYS}
    return keys


def run_config_rows():
    """The run-config reference: ``[(key, type, default, applies_to, meaning)]`` in file order.

    Raises ``ValueError`` when a key the loader accepts has no meaning here or
    in ``mst-dist.yaml``, or a meaning names a key the loader does not accept.
    """
    from mst_dist.generators import GENERATORS, parameters
    from mst_dist.io.formats import FOREST_FORMATS, FORMATS

    rc = _runconfig()
    defaults = settings_defaults()
    meanings = {key[len("mst."):]: text for key, _, _, text in settings_rows()}
    top_settings = {"backend": "backend", "partitions": "partitions", "local_finish": "local-finish",
                    "stream": "stream", "vertex_partition": "vertex-partition"}
    top_types = {"graph": "mapping", "n_vertices": "int|null", "backend": "str", "partitions": "int|null",
                 "local_finish": "str|int", "stream": "str", "vertex_partition": "str", "placement": "mapping",
                 "output": "mapping|null", "checkpoint": "mapping|null", "cluster": "mapping",
                 "storage_options": "mapping|null"}
    choices = {"backend": rc.BACKENDS, "stream": rc.STREAM_MODES, "vertex_partition": rc.VERTEX_PARTITION_MODES,
               "local_finish": ("auto", "an integer"),
               "graph.generate.kind": tuple(GENERATORS), "graph.format": FORMATS,
               "output.format": FOREST_FORMATS, "cluster.kind": rc.CLUSTER_KINDS}
    rows = []

    def add(key, typ, default, applies="", meaning=None, setting=None):
        if meaning is None:
            meaning = RUN_CONFIG_TEXT.get(key)
            if meaning is None and setting is not None:
                meaning = meanings.get(setting)
                if meaning:
                    meaning += f" (engine setting ``mst.{setting}``.)"
        if not meaning:
            raise ValueError(f"docs/_ext/mst_docs.py: run-config key {key!r} has no description: add it "
                             f"to RUN_CONFIG_TEXT")
        if key in choices:
            meaning += " One of: " + ", ".join(f"``{c}``" if c != "an integer" else c
                                                for c in choices[key]) + "."
        rows.append((key, typ.replace("|", " or "), default, applies, meaning))

    for key in rc._TOP_KEYS:
        setting = top_settings.get(key)
        default = _literal(defaults["mst." + setting]) if setting else (
            "required" if key == "graph" else "``null``" if key in ("n_vertices", "output", "checkpoint",
                                                                     "storage_options")
            else "see below")
        add(key, top_types[key], default, setting=setting)
        if key == "graph":
            add("graph.generate", "mapping", "")
            add("graph.generate.kind", "str", "required")
            seen = {}
            for kind in GENERATORS:
                for p in parameters(kind):
                    if not p.shared:
                        seen.setdefault(p.name, []).append((kind, p))
            for name, pairs in seen.items():
                typ = rc.GENERATOR_PARAMS[pairs[0][0]][name][0]
                texts = {}
                for kind, p in pairs:
                    what = p.help.rstrip(".")
                    if p.required:
                        what += " (required)"
                    elif p.default is not None:
                        what += f" (default {p.default})"
                    texts.setdefault(what, []).append(kind)
                meaning = "; ".join(f"{', '.join(kinds)}: {text}" for text, kinds in texts.items()) + "."
                add(f"graph.generate.{name}", typ, "", ", ".join(k for k, _ in pairs), meaning=meaning)
            from mst_dist.generators import shared_parameters

            for p in shared_parameters():
                typ, default = rc._COMMON_GENERATE[p.name]
                add(f"graph.generate.{p.name}", typ, _literal(default), "every family",
                    meaning=p.help.rstrip(".") + ".")
            for sub in rc._GRAPH_KEYS:
                if sub != "generate":
                    add(f"graph.{sub}", {"input": "str", "format": "str|null", "options": "mapping|null"}[sub],
                        "required" if sub == "input" else "``null``", "")
        elif key == "output":
            add("output.path", "str", "required")
            add("output.format", "str|null", "from the extension")
        elif key == "checkpoint":
            add("checkpoint.path", "str", "required")
            add("checkpoint.resume", "bool", "``true``")
        elif key == "placement":
            for name, (typ, setting) in rc._PLACEMENT_KEYS.items():
                add(f"placement.{name}", typ, _literal(defaults["mst." + setting]), setting=setting)
        elif key == "cluster":
            for name, (typ, setting, kinds) in rc._CLUSTER_KEYS.items():
                default = _literal(defaults["mst." + setting]) if setting else "``null``"
                applies = "every kind" if tuple(kinds) == tuple(rc.CLUSTER_KINDS) else ", ".join(kinds)
                add(f"cluster.{name}", typ, default, applies, setting=setting)
                if name == "security":
                    for sec, sec_type in rc._SECURITY_KEYS.items():
                        add(f"cluster.security.{sec}", sec_type, "``null``", "every kind")
    listed = {row[0] for row in rows}
    accepted = accepted_run_config_keys()
    unknown = set(RUN_CONFIG_TEXT) - accepted
    if listed != accepted or unknown:
        raise ValueError(f"docs/_ext/mst_docs.py: the run-config reference and the loader differ: "
                         f"not listed {sorted(accepted - listed)}, not accepted "
                         f"{sorted((listed - accepted) | unknown)}")
    return rows


# --------------------------------------------------------------------------
# Directives
# --------------------------------------------------------------------------

def _escape(text):
    return text.replace("*", r"\*").replace("|", r"\|")


def _list_table(header, rows, widths):
    out = [".. list-table::", "   :header-rows: 1", f"   :widths: {' '.join(map(str, widths))}", ""]
    for row in [header, *rows]:
        first = True
        for cell in row:
            out.append(("   * - " if first else "     - ") + (cell or ""))
            first = False
    return out


class _Generated(Directive):
    has_content = False

    def lines(self):
        raise NotImplementedError

    def run(self):
        node = nodes.container()
        self.state.nested_parse(StringList(self.lines(), source="mst_docs"), self.content_offset, node)
        return node.children


class SettingsDirective(_Generated):
    """``.. mst-settings::``: the engine settings table."""

    def lines(self):
        rows = []
        for key, value, section, meaning in settings_rows():
            if key == "mst":
                continue
            if section:
                rows.append((f"``{key}``", "", "", "*section:* " + _escape(meaning)))
            else:
                rows.append((f"``{key}``", f"``{env_name(key)}``", _literal(value), _escape(meaning)))
        return _list_table(("key", "environment variable", "default", "meaning"), rows, (20, 24, 8, 48))


class RunConfigDirective(_Generated):
    """``.. mst-run-config::``: the run-config keys table."""

    def lines(self):
        rows = [(f"``{key}``", typ, default, applies, meaning)
                for key, typ, default, applies, meaning in run_config_rows()]
        return _list_table(("key", "type", "default", "applies to", "meaning"), rows, (20, 9, 9, 14, 48))


def public_names(module=mst_dist):
    """A module's ``__all__`` sorted into the API reference's sections: ``{section: [name]}``."""
    import inspect

    sections = {"Errors": [], "Classes": [], "Functions": [], "Data": []}
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            sections["Errors"].append(name)
        elif inspect.isclass(obj):
            sections["Classes"].append(name)
        elif callable(obj):
            sections["Functions"].append(name)
        else:
            sections["Data"].append(name)
    return sections


class APIDirective(_Generated):
    """``.. mst-api:: SECTION``: the names of a module's ``__all__`` of one kind (:func:`public_names`).

    ``SECTION`` is ``Errors``, ``Classes``, ``Functions``, ``Data`` or ``All``; the
    ``:module:`` option names the module (default ``mst_dist``).
    """

    required_arguments = 1
    option_spec = {"module": str}

    def lines(self):
        import importlib

        name = self.options.get("module", "mst_dist")
        module = importlib.import_module(name)
        directive = {"Errors": "autoexception", "Classes": "autoclass", "Functions": "autofunction",
                     "Data": "autodata"}
        section = self.arguments[0]
        if section not in (*directive, "All"):
            raise self.error(f"mst-api: unknown section {section!r}; one of {', '.join(directive)}, All")
        out = [f".. currentmodule:: {name}", ""]
        for kind, names in public_names(module).items():
            if section not in (kind, "All"):
                continue
            for attr in names:
                out.append(f".. {directive[kind]}:: {name}.{attr}")
                if kind in ("Errors", "Classes"):
                    out += ["   :members:", "   :show-inheritance:"]
                out.append("")
        return out


#: When the builtin exceptions of the command line's exit table are raised (mst-dist's own
#: errors say it in their docstrings' first line).
BUILTIN_EXIT_TEXT = {
    ImportError: "An optional dependency of what was asked for is missing (the message names the extra).",
    ConnectionError: "No scheduler answered within ``mst.cluster.connect-timeout`` seconds.",
    TimeoutError: "No workers came within ``cluster.wait_timeout`` seconds.",
    KeyboardInterrupt: "Interrupted (Ctrl-C): the run's tasks are cancelled, no output is left half-written.",
}


def exit_rows():
    """The command line's exit table, row by row: ``[(classes, status, stderr line, when)]``.

    From ``mst_dist.cli.commands.EXITS``, in its order (the first row whose classes
    an error is an instance of decides).  Raises ``ValueError`` for a builtin class
    without a description in :data:`BUILTIN_EXIT_TEXT`.
    """
    from mst_dist.cli.commands import EXITS

    rows = []
    for classes, status, line in EXITS:
        names, whens = [], []
        for cls in classes:
            if cls is mst_dist.MSTError:
                names.append(":class:`mst_dist.MSTError`")
                whens.append("Any other error mst-dist raises on purpose (the base class of its errors).")
            elif cls.__module__.startswith("mst_dist") and cls.__name__ in mst_dist.__all__:
                names.append(f":class:`mst_dist.{cls.__name__}`")
                whens.append((cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " "))
            else:
                names.append(f"``{cls.__name__}``")
                if cls not in BUILTIN_EXIT_TEXT:
                    raise ValueError(f"docs/_ext/mst_docs.py: {cls.__name__} of the CLI's exit table has no "
                                     f"description in BUILTIN_EXIT_TEXT")
                whens.append(BUILTIN_EXIT_TEXT[cls])
        said = (line.__doc__ or "").strip().split("\n")[0]
        rows.append((", ".join(names), status, said, " ".join(whens)))
    return rows


class ExitCodesDirective(_Generated):
    """``.. mst-exit-codes::``: the command line's exit statuses, from its own table."""

    def lines(self):
        rows = [("(none)", "``0``", "", "The command did what it was asked.")]
        rows += [(names, f"``{status}``", said, _escape(when)) for names, status, said, when in exit_rows()]
        rows.append(("(arguments)", "``2``", "argparse's usage line",
                     "A flag the command does not take, or a bad value of one; ``mst-dist`` without a command."))
        return _list_table(("raised", "exit status", "stderr", "when"), rows, (22, 8, 20, 50))


def _source_tree_link(app, env, node, contnode):
    """A Markdown link from a page to a file of the source tree outside ``docs/`` (``../configs/x.yaml``).

    Such a file is no page of the site: the link is kept as its text when the file exists,
    and left unresolved (a warning, an error under ``-W``) when it does not.
    """
    if node.get("reftype") != "myst":
        return None
    target = node.get("reftarget", "").split("#", 1)[0]
    if not target or "://" in target:
        return None
    here = os.path.dirname(env.doc2path(node.get("refdoc", env.docname)))
    path = os.path.normpath(os.path.join(here, target))
    srcdir = os.path.normpath(str(app.srcdir))
    if os.path.commonpath([path, srcdir]) != srcdir and os.path.exists(path):
        return contnode
    return None


def _optional_pages(app, docname, source):
    """Drop from the root page's tables of contents the ``mst_optional_pages`` not written yet."""
    if docname != app.config.root_doc:
        return
    srcdir = str(app.srcdir)
    absent = {page for page in app.config.mst_optional_pages
              if not any(os.path.exists(os.path.join(srcdir, page + ext)) for ext in (".md", ".rst"))}
    if absent:
        source[0] = "\n".join(line for line in source[0].split("\n") if line.strip() not in absent)


def _no_class_doc_for_data(app, what, name, obj, options, lines):
    """A data value without a comment of its own shows no docstring of its type (numpy's ``dtype``)."""
    import inspect

    if what != "data" or not lines:
        return
    type_doc = inspect.getdoc(type(obj)) or ""
    if type_doc and "\n".join(lines).strip().startswith(type_doc.strip().splitlines()[0]):
        lines[:] = []


def setup(app):
    app.connect("autodoc-process-docstring", _no_class_doc_for_data)
    app.add_config_value("mst_optional_pages", [], "env")
    app.connect("source-read", _optional_pages)
    app.connect("missing-reference", _source_tree_link)
    app.add_directive("mst-exit-codes", ExitCodesDirective)
    app.add_directive("mst-api", APIDirective)
    app.add_directive("mst-settings", SettingsDirective)
    app.add_directive("mst-run-config", RunConfigDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": mst_dist.__version__}

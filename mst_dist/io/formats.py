"""The vocabulary of graph files that the readers and the writers share: format names, options, errors.

- :data:`FORMATS`, :func:`format_of_path`, :func:`detect_format`: the graph
  formats :func:`mst_dist.read` reads and how a file name selects one.
- :data:`GRAPH_FORMATS`, :func:`graph_format`: the formats
  :func:`~mst_dist.io.writers.write_graph` writes (those, plus ``csv``).
- :data:`FOREST_FORMATS`, :func:`forest_format`: the formats of a forest
  (and of component labels).
- :func:`check_options`: the one check that refuses a keyword option a format
  does not take.
- :class:`GraphFormatError`: a graph file that cannot be read, naming the file
  and the line or row.
"""
from __future__ import annotations

import os

from mst_dist.errors import GraphFormatError  # defined with the package's other errors

__all__ = ["GraphFormatError", "FORMATS", "format_of_path", "detect_format", "GRAPH_FORMATS",
           "graph_format", "FOREST_FORMATS", "forest_format", "check_options"]


# ---------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------

def check_options(fmt, opts, allowed):
    """Refuse keyword options that format *fmt* does not take (readers and writers).

    >>> check_options("gr", {"weights": "int"}, {"weights", "blocksize"})
    >>> check_options("gr", {"header": True}, {"weights"})
    Traceback (most recent call last):
    ...
    ValueError: gr: unknown option(s) header; gr takes weights
    """
    unknown = sorted(set(opts) - set(allowed))
    if unknown:
        raise ValueError(f"{fmt}: unknown option(s) {', '.join(unknown)}; "
                         f"{fmt} takes {', '.join(sorted(allowed)) or 'none'}")


# ---------------------------------------------------------------------------
# graph formats read
# ---------------------------------------------------------------------------

#: Formats :func:`mst_dist.read` knows.
FORMATS = ("edgelist", "gr", "mtx", "npz", "npy", "egr", "parquet")

_EXTENSIONS = {
    ".txt": "edgelist", ".edges": "edgelist", ".edgelist": "edgelist", ".el": "edgelist",
    ".tsv": "edgelist", ".csv": "edgelist", ".snap": "edgelist",
    ".gr": "gr",
    ".mtx": "mtx", ".mm": "mtx",
    ".npz": "npz",
    ".npy": "npy",
    ".egr": "egr",
    ".parquet": "parquet", ".pq": "parquet",
}

#: Suffixes of compressed text files, looked through by :func:`format_of_path`.
COMPRESSED_EXTENSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}


def format_of_path(path):
    """The format a file or directory name asks for, or ``None`` when it does not tell.

    >>> format_of_path("roads/USA-road-d.NY.gr.gz"), format_of_path("g.parquet")
    ('gr', 'parquet')
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "src.npy")):
            return "npy"
        return "parquet"
    base = os.path.basename(path).lower()
    stem, ext = os.path.splitext(base)
    if ext in COMPRESSED_EXTENSIONS:
        ext = os.path.splitext(stem)[1]
    return _EXTENSIONS.get(ext)


def detect_format(path):
    """The format of ``path`` (see :data:`FORMATS`), or a :class:`GraphFormatError` listing them."""
    fmt = format_of_path(path)
    if fmt is None:
        known = ", ".join(sorted(_EXTENSIONS))
        raise GraphFormatError(
            f"cannot tell the graph format from the name; give format= (one of "
            f"{', '.join(FORMATS)}) or use a known extension ({known}, optionally with .gz/.bz2/.xz)",
            path=path)
    return fmt


# ---------------------------------------------------------------------------
# graph formats written
# ---------------------------------------------------------------------------

#: Formats :func:`~mst_dist.io.writers.write_graph` writes (those :func:`mst_dist.read` reads, plus ``csv``).
GRAPH_FORMATS = ("edgelist", "csv", "gr", "mtx", "npz", "npy", "egr", "parquet")

_GRAPH_EXTENSIONS = {
    ".txt": "edgelist", ".edges": "edgelist", ".edgelist": "edgelist", ".el": "edgelist",
    ".tsv": "edgelist", ".snap": "edgelist", ".csv": "csv", ".gr": "gr", ".mtx": "mtx",
    ".mm": "mtx", ".npz": "npz", ".egr": "egr", ".parquet": "parquet", ".pq": "parquet",
}


def graph_format(path):
    """The graph format a target name asks for: by extension; a directory name
    (no extension, or a trailing separator) is Parquet part files.

    >>> graph_format("g.gr"), graph_format("g.txt"), graph_format("parts/")
    ('gr', 'edgelist', 'parquet')
    """
    p = os.fspath(path)
    if p.endswith(("/", os.sep)):
        return "parquet"
    ext = os.path.splitext(p)[1].lower()
    if ext in _GRAPH_EXTENSIONS:
        return _GRAPH_EXTENSIONS[ext]
    if ext == "" or os.path.isdir(p):
        return "parquet"
    raise ValueError(f"cannot tell the graph format of {p!r} from its extension {ext!r}; give "
                     f"format= (one of {', '.join(GRAPH_FORMATS)})")


# ---------------------------------------------------------------------------
# forest formats
# ---------------------------------------------------------------------------

#: Formats :func:`~mst_dist.io.writers.write_forest` and ``write_labels`` write, by name.
FOREST_FORMATS = ("parquet", "csv", "npz")

_FOREST_EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".npz": "npz",
}


def forest_format(path):
    """The forest format a file name asks for, from its extension.

    >>> forest_format("out/msf.parquet"), forest_format("msf.CSV"), forest_format("f.npz")
    ('parquet', 'csv', 'npz')
    """
    ext = os.path.splitext(os.fspath(path))[1].lower()
    try:
        return _FOREST_EXTENSIONS[ext]
    except KeyError:
        raise ValueError(
            f"cannot tell the forest format of {os.fspath(path)!r} from its extension "
            f"{ext or '(none)'!r}; known: {', '.join(sorted(_FOREST_EXTENSIONS))}"
        ) from None

"""Graph readers: files in the formats of the field, read in chunks on the workers.

:func:`read` returns a :class:`~mst_dist.graph.Graph` whose sources are file
loaders (:class:`~mst_dist.graph.FunctionSource` with a module-level row
function): the driver's ``mst-load-*`` tasks read and parse their own rows on
the workers, so the client never holds the edge list.  Edge ids are the
rows' positions in file order, then row order, however the edges are
chunked (the id the forest's ties are broken by).

Formats
-------
=============  ==========================================  ========================
format         files                                       notes
=============  ==========================================  ========================
``edgelist``   ``.txt .edges .edgelist .el .tsv .csv       SNAP style; see below
               .snap`` (also ``.gz``/``.bz2``/``.xz``)
``gr``         ``.gr`` (DIMACS 9th challenge)              1-based; arcs as edges
``mtx``        ``.mtx .mm`` (Matrix Market coordinate)     1-based
``npz``        ``.npz`` holding ``src``, ``dst``,          never unpickles
               optional ``weight``
``npy``        a directory of ``src.npy``, ``dst.npy``,    never unpickles
               optional ``weight.npy``
``egr``        ``.egr`` (ECL binary CSR)                   both directions stored
``parquet``    ``.parquet .pq``, a directory or a glob     row groups
=============  ==========================================  ========================

A glob (``"parts/*.txt"``), a directory or a list of paths gives one source
per file, in natural name order (``part.2`` before ``part.10``) or list order.

Each format's reader lives in its own module, all with one signature
``(paths, client, n_vertices, opts) -> (sources, n_vertices, weight dtype, meta)``:
:mod:`~mst_dist.io.readers.text` (edge list, ``.gr``, ``.mtx``; their grammar
and the scan-then-load scheme), :mod:`~mst_dist.io.readers.binary` (``.npz``,
``.npy``, ``.egr``) and :mod:`~mst_dist.io.readers.parquet`.  :func:`read`
finds the files and the format and dispatches by name.

Errors
------
Every bad input -- unknown format, truncated file, non-numeric token, wrong or
missing header, declared counts that disagree with the body, an id below the
base or above ``n``, a NaN or infinite weight -- raises
:class:`GraphFormatError` (an :class:`~mst_dist.graph.InvalidGraphError`, so a
``ValueError``) naming the file and the line (text), or the row group and row
(Parquet), or the row (binary), and what was expected.
"""
from __future__ import annotations

import glob as _glob
import logging
import os
import re

import numpy as np

from mst_dist.graph import VERTEX_BYTES, Graph, human_bytes, vertex_memory
from mst_dist.io.formats import (  # noqa: F401  (re-exported: the readers' vocabulary)
    FORMATS, GraphFormatError, check_options, detect_format, format_of_path,
)
from mst_dist.io import reach, urls
from mst_dist.io.readers import binary, parquet, text
from mst_dist.io.tasks import current_client

__all__ = ["read", "GraphFormatError", "FORMATS", "detect_format", "format_of_path"]

logger = logging.getLogger("mst_dist")

#: The reader of each format: ``(paths, client, n_vertices, opts) -> (sources, n, dtype, meta)``.
_READERS = {
    "edgelist": text.read_edgelist,
    "gr": text.read_gr,
    "mtx": text.read_mtx,
    "npz": binary.read_npz,
    "npy": binary.read_npy,
    "egr": binary.read_egr,
    "parquet": parquet.read_parquet,
}

#: Options each format takes (besides ``client``, ``n_vertices``, ``name``).
_OPTIONS = {**text.OPTIONS, **binary.OPTIONS, **parquet.OPTIONS}


# ---------------------------------------------------------------------------
# paths
# ---------------------------------------------------------------------------

def _natural_key(path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", os.fspath(path))]


def _is_parquet(path):
    """Whether ``path`` starts with Parquet's magic bytes."""
    try:
        with urls.open_binary(path) as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _expand_url(p, fmt):
    """:func:`_expand` for a URL (a :class:`~mst_dist.io.urls.URL`): its file, its glob's, its prefix's."""
    if any(ch in p.split("://", 1)[1] for ch in "*?["):
        paths = sorted(urls.glob(p), key=_natural_key)
        if not paths:
            raise FileNotFoundError(f"no file matches {str(p)!r}")
        return paths
    if urls.isdir(p) and fmt != "npy":
        paths = sorted((q for q in urls.list_files(p) if not q.endswith((".crc", ".json"))), key=_natural_key)
        if not paths:
            raise FileNotFoundError(f"no data files under {str(p)!r}")
        return paths
    if not urls.exists(p):
        raise FileNotFoundError(f"no such file or directory: {str(p)!r}")
    return [p]


def _expand(path_or_glob, fmt):
    """The list of files (or npy directories) to read, in edge id order."""
    if isinstance(path_or_glob, (list, tuple)) and any(urls.is_url(p) for p in path_or_glob):
        return [q for p in path_or_glob for q in _expand_url(p, fmt)]
    if urls.is_url(path_or_glob):
        return _expand_url(path_or_glob, fmt)
    if isinstance(path_or_glob, (list, tuple)):
        paths = [os.fspath(p) for p in path_or_glob]
        if not paths:
            raise ValueError("an empty list of paths")
        for p in paths:
            if not os.path.exists(p):
                raise FileNotFoundError(f"no such file: {p!r}")
        return paths
    p = os.fspath(path_or_glob)
    if any(ch in p for ch in "*?["):
        paths = sorted((q for q in _glob.glob(p) if not os.path.isdir(q) or fmt == "npy"),
                       key=_natural_key)
        if not paths:
            raise FileNotFoundError(f"no file matches {p!r}")
        return paths
    if not os.path.exists(p):
        raise FileNotFoundError(f"no such file or directory: {p!r}")
    if os.path.isdir(p) and fmt != "npy":
        paths = []
        for root, dirs, names in os.walk(p):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            for name in names:
                if name.startswith((".", "_")) or name.endswith((".crc", ".json")):
                    continue
                paths.append(os.path.join(root, name))
        paths.sort(key=_natural_key)
        if not paths:
            raise FileNotFoundError(f"no data files in directory {p!r}")
        if fmt == "parquet" and not any(_is_parquet(q) for q in paths):
            found = [os.path.relpath(q, p) for q in paths]
            shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
            raise FileNotFoundError(
                f"no data files in directory {p!r}: it holds {shown}, none of them a Parquet file; a "
                f"directory is read as Parquet files or as src.npy/dst.npy[/weight.npy] columns (name "
                f"a file of another format itself)")
        return paths
    return [p]


def _worker_memory(client):
    """The memory the per-vertex state may take, in bytes: the largest worker's, or (unless
    ``mst.vertex-partition`` is ``never``: the state is then spread over the workers) half the
    cluster's; this machine's without a cluster."""
    from mst_dist import config

    c = current_client(client)
    mem = 0
    if c is not None:
        try:
            limits = [(w.get("memory_limit") or 0) for w in c.scheduler_info()["workers"].values()] + [0]
            mem = max(limits) if config.get("vertex-partition", None, "auto") == "never" else sum(limits) // 2
        except Exception:  # a closed or asynchronous client: this machine's memory
            logger.debug("could not read the workers' memory", exc_info=True)
    if not mem:
        try:
            mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover
            mem = 0
    return mem


def _source_path(source):
    params = getattr(source, "params", {})
    path = params.get("path")
    if path is None and params.get("files"):
        path = os.path.dirname(os.fspath(params["files"]["src"] if isinstance(params["files"], dict)
                                         else params["files"][0]))
    return None if path is None else os.fspath(path)


def _find_id_at_least(source, limit, step=1 << 22):
    """Where a (binary or Parquet) source first holds a vertex id ``>= limit``: ``(row, reason)``, or ``None``."""
    for a in range(0, source.n_edges, step):
        s, d, _ = (np.asarray(x) for x in source.load(a, min(source.n_edges, a + step)))
        big = np.flatnonzero((s >= limit) | (d >= limit))
        if big.size:
            i = int(big[0])
            col, v = ("src", s[i]) if s[i] >= limit else ("dst", d[i])
            return a + i, f"vertex id {int(v)} ({col})"
    return None


def _check_vertex_memory(sources, n, client):
    """Refuse a largest id whose per-vertex state would not fit in a worker, naming where it is.

    ``n_vertices`` defaults to ``max id + 1``: one stray huge id (``2**40``)
    would make every run allocate terabytes.  The message names the file and
    the line (text) or row (binary, Parquet) and what to do instead.
    """
    mem = _worker_memory(client)
    if not mem or vertex_memory(n) <= mem:
        return
    limit = mem // VERTEX_BYTES
    found = None
    for src in sources:
        if getattr(src, "func", None) is text.text_rows:
            hit = text.find_id_at_least(src, limit)
            if hit is not None:
                found = {"path": _source_path(src), "line": hit[0]}, hit[1]
        else:
            hit = _find_id_at_least(src, limit)
            if hit is not None:
                found = {"path": _source_path(src), "row": hit[0]}, hit[1]
        if found is not None:
            break
    where, what = found if found is not None else ({}, f"largest vertex id {n - 1}")
    raise GraphFormatError(
        f"{what}: n_vertices = {n} would need about {human_bytes(vertex_memory(n))} of per-vertex "
        f"arrays, more than the cluster can hold ({human_bytes(mem)}); "
        f"relabel the vertex ids to 0..n-1 (e.g. numpy.unique(ids, return_inverse=True)), or, if the graph "
        f"really has that many vertices, give n_vertices (read(..., n_vertices=N), a run config's n_vertices) and workers with that memory", **where)


def read(path_or_glob, format=None, *, client=None, n_vertices=None, name=None, allow_empty=False,
         storage_options=None, **opts) -> Graph:
    """Read a graph from files, in chunks on the workers.

    Parameters
    ----------
    path_or_glob : str, os.PathLike or list of them
        A file, a glob (``"edges/part-*.txt.gz"``), a directory (Parquet files,
        or ``src.npy``/``dst.npy``/``weight.npy`` column files) or a list of
        paths.  Several files are one graph: edge ids run through them in
        natural name order (list order for a list).  A URL (``s3://bucket/edges/*.txt``,
        ``gs://...``, ``abfs://...``, ``https://...``) is read through
        fsspec, on the workers, by byte ranges and row groups as a local file.
    format : str, optional
        One of :data:`FORMATS`; default from the extension (a ``.gz``,
        ``.bz2`` or ``.xz`` suffix is looked through).
    client : distributed.Client or False, optional
        Where the scan tasks run (text formats; binary ones without
        ``n_vertices`` when they have no statistics): default the current
        ``distributed`` client (inside a task, the worker's), else threads
        of this process; ``False``: threads of this process.  The loads run wherever the graph is
        computed.
    n_vertices : int, optional
        Number of vertices (default: ``max id + 1``, or the size the file
        declares); larger values add isolated vertices, smaller ones are an
        error.
    name : str, optional
        The graph's name (default: the file name).
    allow_empty : bool
        Input without a single edge is an error unless this is true (then a
        warning is logged and the graph has no edges).
    storage_options : dict, optional
        Options of the file system of a URL (credentials, endpoint), as
        ``dask.dataframe.read_parquet`` takes them; they travel with the
        paths to the workers.
    **opts
        Format options: ``header`` (edge list: ``"auto"``, ``True``,
        ``False``); ``weights`` (text: ``"auto"``, ``"int"``, ``"float"``);
        ``dedupe_directions`` (gr, mtx, egr: keep only ``u < v``);
        ``blocksize`` (text: bytes per scan task; default about four blocks
        per worker thread, between 4 and 64 MiB); ``src``,
        ``dst``, ``weight`` (npz, npy, parquet: column names;
        ``weight=None`` for weight 1).  An option the format does not take is
        an error.

    Returns
    -------
    Graph
        Its sources load rows on demand; ``graph.meta`` records the format
        and the files.

    Raises
    ------
    GraphFormatError
        Unknown format or bad content, naming the file and line or row; no
        edges at all (unless ``allow_empty``); a largest vertex id whose
        per-vertex state (``n_vertices = max id + 1``) would not fit in the
        memory of a worker (relabel the ids, or give ``n_vertices``).
    FileNotFoundError
        No such file, or a glob that matches nothing.
    SharedStorageError
        On a cluster of several processes or hosts: a local file that some
        workers cannot see (they read it), naming them.
    WorkerAddressError
        A worker at a loopback address on a scheduler of other hosts.

    Examples
    --------
    >>> import os, tempfile, mst_dist
    >>> p = os.path.join(tempfile.mkdtemp(), "g.txt")
    >>> _ = open(p, "w").write("# a triangle\\n0 1 4\\n1 2 1\\n2 0 2\\n")
    >>> g = mst_dist.read(p)
    >>> g.n_vertices, g.n_edges, g.weight_dtype.name
    (3, 3, 'int64')
    >>> mst_dist.minimum_spanning_forest(g).edge_ids.tolist()
    [1, 2]
    """
    if isinstance(path_or_glob, (list, tuple)):
        path_or_glob = [urls.url(os.fspath(p), storage_options) for p in path_or_glob]
    elif isinstance(path_or_glob, (str, os.PathLike)):
        path_or_glob = urls.url(os.fspath(path_or_glob), storage_options)
    if format is None:
        first = path_or_glob[0] if isinstance(path_or_glob, (list, tuple)) and path_or_glob \
            else path_or_glob
        fmt = detect_format(first) if not any(ch in os.fspath(first) for ch in "*?[") \
            and not (urls.is_url(first) and urls.isdir(first)) else None
        if fmt is None and urls.is_url(first):  # a glob or a prefix: the format of its first file
            matches = _expand_url(first, None)
            fmt = detect_format(matches[0])
        elif fmt is None:  # a glob: the format of its first match
            matches = sorted(_glob.glob(os.fspath(first)), key=_natural_key)
            if not matches:
                raise FileNotFoundError(f"no file matches {os.fspath(first)!r}")
            fmt = detect_format(matches[0])
    else:
        fmt = format
    reader = _READERS.get(fmt) if isinstance(fmt, str) else None
    if reader is None:
        raise GraphFormatError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    check_options(fmt, opts, _OPTIONS[fmt])
    if n_vertices is not None:
        if isinstance(n_vertices, bool) or int(n_vertices) != n_vertices or n_vertices < 0:
            raise ValueError(f"n_vertices must be a non-negative integer, got {n_vertices!r}")
        n_vertices = int(n_vertices)
    paths = _expand(path_or_glob, fmt)
    # the workers read the files: each must see them (named if not), and be reachable
    reach.check_visible(current_client(client), paths)
    sources, n, wdt, meta = reader(paths, client, n_vertices, dict(opts))
    if n > np.iinfo(np.int64).max:  # the largest id + 1: ids are int64, and so is their count
        raise GraphFormatError(f"vertex id {n - 1} is too large: ids go up to {np.iinfo(np.int64).max - 1} "
                               f"(their count, the largest + 1, is an int64)",
                               path=str(paths[0]) if len(paths) == 1 else None)
    if n_vertices is None:
        _check_vertex_memory(sources, n, client)
    if name is None:
        if isinstance(path_or_glob, (list, tuple)):
            name = os.path.basename(os.fspath(paths[0])) + (
                f" (+{len(paths) - 1} files)" if len(paths) > 1 else "")
        else:
            name = os.path.basename(os.fspath(path_or_glob).rstrip("/" + os.sep))
    meta = {"format": fmt, "files": [os.fspath(p) for p in paths], **meta}
    if sum(src.n_edges for src in sources) == 0:
        what = paths[0] if len(paths) == 1 else f"{len(paths)} files ({paths[0]}, ...)"
        if not allow_empty:
            raise GraphFormatError(f"no edges: {what} holds no edge rows (only blank or comment lines, or "
                                   f"nothing); allow_empty=True (mst-dist --allow-empty) reads it as a graph "
                                   f"without edges")
        logger.warning("%s holds no edges: the forest is empty", what)
    g = Graph(n_vertices=n, sources=sources, weight_dtype=wdt, validated=True, name=name, meta=meta)
    logger.debug("read %s: %s", fmt, g)
    return g

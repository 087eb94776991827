"""Writing forests, component labels and graphs (reading is :mod:`mst_dist.io.readers`).

The format names and the extensions that select them are in :mod:`mst_dist.io.formats`.

Forest writers
--------------
:func:`write_forest` writes a result's edges as four columns ``edge_id``,
``src``, ``dst``, ``weight`` to Parquet, CSV or ``.npz``; with ``labels=`` it
also writes the component labels (columns ``vertex``, ``component``), into the
same ``.npz`` (array ``labels``) or to a second file.  :func:`write_labels`
writes the labels alone.

Graph writers
-------------
:func:`write_graph` writes any :class:`~mst_dist.graph.Graph` in every format
:func:`mst_dist.read` reads -- edge list text, CSV, DIMACS ``.gr``, Matrix
Market ``.mtx``, ``.npz``, a directory of ``.npy`` column files, ECL ``.egr``,
Parquet (a file, or a directory of part files) -- streaming it chunk by chunk
(loaded on the workers when a client is given), so the graph is never whole in
memory except for ``.egr``'s per-vertex counters.  Reading the file back
gives the same edges in the same order (same edge ids), except ``.egr``: a
CSR lists arcs vertex by vertex, so its edges come back sorted by their
smaller endpoint (same edge set, same forest weight).

Atomic writes
-------------
Every write is atomic: the file (or directory) is written under a temporary
name next to the target and renamed over it only once complete, so a reader
never sees half a file and a failed write leaves nothing behind.
"""
from __future__ import annotations

import os
import secrets

import numpy as np

from mst_dist.io.formats import (
    FOREST_FORMATS, GRAPH_FORMATS, check_options, forest_format, graph_format,
)

__all__ = ["write_forest", "write_labels", "write_graph", "forest_format", "graph_format",
           "FOREST_FORMATS", "GRAPH_FORMATS", "atomic_path", "atomic_dir", "write_forest_part",
           "write_labels_part", "read_forest_dataset", "DATASET_PART", "check_writable", "dataset_dir"]

_COLUMNS = ("edge_id", "src", "dst", "weight")


class atomic_path:
    """Context manager giving a temporary path next to ``path``, renamed onto it on success.

    On an exception the temporary file is removed and ``path`` is untouched.
    The file gets the permissions a plain ``open(path, "w")`` would give.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> with atomic_path(os.path.join(d, "x.txt")) as tmp:
    ...     _ = open(tmp, "w").write("hi")
    >>> os.listdir(d)
    ['x.txt']
    """

    def __init__(self, path):
        self.path = os.path.abspath(os.fspath(path))
        self.tmp = None

    def __enter__(self):
        directory, name = os.path.split(self.path)
        # os.open with mode 0o666 lets the umask apply, as for a plain open();
        # tempfile.mkstemp would leave the file at 0o600.
        for _ in range(100):
            tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            os.close(fd)
            self.tmp = tmp
            return tmp
        raise FileExistsError(f"no free temporary name next to {self.path!r}")

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                os.replace(self.tmp, self.path)
            except BaseException:
                _remove(self.tmp)
                raise
        else:
            _remove(self.tmp)
        return False


def check_writable(path, what="output", storage_options=None):
    """Check, before any work, that ``path`` can be written as :class:`atomic_path` will write it.

    A hidden file is created and removed in ``path``'s directory (the only
    sure test: permissions, read-only mounts and quotas all show), and an
    existing ``path`` must be of the kind that will replace it.  Raises an
    :class:`OSError` naming ``what`` and the path; returns the absolute path.
    A URL (``s3://...``, with ``storage_options``): a hidden object is
    written and removed next to it.
    """
    from mst_dist.io import urls

    if urls.is_url(path):
        return urls.check_writable_url(path, what, storage_options)
    full = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(full)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{what} {os.fspath(path)!r}: directory {directory!r} does not exist")
    try:
        with atomic_path(full) as tmp:
            raise _Probe(tmp)
    except _Probe:
        pass
    except OSError as e:
        raise PermissionError(f"{what} {os.fspath(path)!r}: cannot write in {directory!r} ({e.strerror or e})") from None
    return full


class _url_file:
    """:class:`atomic_path` for a URL: a local temporary file, uploaded by :func:`mst_dist.io.urls.atomic_url_file`.

    The writers write local files; on success the file goes up as a hidden
    object beside the target and is moved onto it; on an exception neither
    the target nor anything temporary is left.  ``path`` is the URL written.
    """

    def __init__(self, path, storage_options=None):
        self.path = str(path)
        self._options = storage_options
        self._local = None

    def __enter__(self):
        import tempfile

        fd, self._local = tempfile.mkstemp(prefix=".mst-dist-", suffix=".tmp")
        os.close(fd)
        return self._local

    def __exit__(self, exc_type, exc, tb):
        from mst_dist.io import urls

        try:
            if exc_type is None:
                with urls.atomic_url_file(self.path, self._options) as tmp:
                    fs, p = urls.filesystem(tmp)
                    fs.put_file(self._local, p)
        finally:
            _remove(self._local)
        return False


def _atomic_target(path, storage_options=None):
    """Where a single-file writer writes: :class:`atomic_path`, or :class:`_url_file` for a URL."""
    from mst_dist.io import urls

    if urls.is_url(path):
        return _url_file(path, storage_options)
    return atomic_path(path)


class _Probe(Exception):
    """Ends :func:`check_writable`'s trial write without renaming it into place."""


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _forest_columns(result):
    """The forest's four columns as NumPy arrays (host memory)."""
    cols = {
        "edge_id": np.asarray(result.edge_ids, dtype=np.int64),
        "src": np.asarray(result.src),
        "dst": np.asarray(result.dst),
        "weight": np.asarray(result.weight),
    }
    n = cols["edge_id"].shape[0]
    for name, a in cols.items():
        if a.ndim != 1 or a.shape[0] != n:
            raise ValueError(f"forest column {name} has shape {a.shape}, expected ({n},)")
    return cols


def _write_parquet(cols, tmp):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(cols), tmp)


def _write_csv(cols, tmp):
    import pyarrow as pa
    import pyarrow.csv as pcsv

    pcsv.write_csv(pa.table(cols), tmp)


def _write_npz(cols, tmp):
    # Through a file object: np.savez would append ".npz" to a bare name.
    with open(tmp, "wb") as f:
        np.savez(f, **cols)


_WRITERS = {"parquet": _write_parquet, "csv": _write_csv, "npz": _write_npz}


def write_forest(result, path, format=None, *, labels=None, storage_options=None):
    """Write a forest's edges (``edge_id, src, dst, weight``) to a file, atomically.

    Parameters
    ----------
    result : MSFResult
        The forest (its ``edge_ids``, ``src``, ``dst``, ``weight``).
    path : str or os.PathLike
        Target file; its directory must exist.  An existing file is replaced.
        A URL (``s3://bucket/forest.parquet``, ...) is written through
        fsspec with ``storage_options``: uploaded beside the target, then
        moved onto it.
    format : {"parquet", "csv", "npz"}, optional
        Default: from the extension (``.parquet``/``.pq``, ``.csv``, ``.npz``).
    labels : bool or path, optional
        Also write the component labels (``result.labels``): ``True`` puts
        them in the same ``.npz`` as an array ``labels`` (``.npz`` only); a
        path writes them to that file with :func:`write_labels`, after the
        forest.

    Returns the absolute path written.  Weights keep their dtype; ``.npz``
    files hold plain arrays (``np.load(path)`` needs no pickle).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(edge_ids=np.array([0, 2]), src=np.array([0, 1]),
    ...                     dst=np.array([1, 2]), weight=np.array([5, 7]))
    >>> p = write_forest(r, os.path.join(tempfile.mkdtemp(), "f.npz"))
    >>> np.load(p)["weight"].tolist()
    [5, 7]
    """
    if format is None:
        format = forest_format(path)
    if format not in _WRITERS:
        raise ValueError(f"unknown forest format {format!r}; known: {', '.join(FOREST_FORMATS)}")
    cols = _forest_columns(result)
    extra = None
    if labels is True:
        if format != "npz":
            raise ValueError("labels=True puts the labels in the forest's .npz; for "
                             f"{format} give labels=PATH (a second file)")
        extra = _labels_array(result)
    elif labels is not None and labels is not False:
        _labels_array(result)  # fail before writing anything
    target = _atomic_target(path, storage_options)
    with target as tmp:
        if extra is not None:
            _write_npz({**cols, "labels": extra}, tmp)
        else:
            _WRITERS[format](cols, tmp)
    if labels is not None and labels is not False and labels is not True:
        write_labels(result, labels, storage_options=storage_options)
    return target.path


def _labels_array(result):
    labels = getattr(result, "labels", None)
    if labels is None:
        raise ValueError("the result has no component labels")
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels have shape {labels.shape}, expected one label per vertex")
    return labels.astype(np.int64, copy=False)


def write_labels(result, path, format=None, *, storage_options=None):
    """Write the component labels (columns ``vertex``, ``component``) to a file, atomically.

    ``format``, a URL ``path`` and ``storage_options`` as in :func:`write_forest`
    (the format by default from the extension).
    ``component`` numbers components ``0..k-1`` by their smallest vertex.

    >>> import numpy as np, tempfile, os
    >>> from types import SimpleNamespace
    >>> p = write_labels(SimpleNamespace(labels=np.array([0, 0, 1])),
    ...                  os.path.join(tempfile.mkdtemp(), "labels.csv"))
    >>> open(p).read().split()
    ['"vertex","component"', '0,0', '1,0', '2,1']
    """
    if format is None:
        format = forest_format(path)
    if format not in _WRITERS:
        raise ValueError(f"unknown labels format {format!r}; known: {', '.join(FOREST_FORMATS)}")
    labels = _labels_array(result)
    cols = {"vertex": np.arange(labels.shape[0], dtype=np.int64), "component": labels}
    target = _atomic_target(path, storage_options)
    with target as tmp:
        _WRITERS[format](cols, tmp)
    return target.path


# ---------------------------------------------------------------------------
# graphs
# ---------------------------------------------------------------------------

_CHUNK_EDGES = 1 << 22


def _graph_chunks(graph, client=None, chunk_edges=_CHUNK_EDGES, window=4):
    """Yield ``(src, dst, weight)`` chunks of ``graph`` in edge id order.

    With a client the chunks are loaded by tasks on its workers, ``window`` at
    a time, and fetched in order; without one they are loaded here.
    """
    ranges = []
    for s in graph.sources:
        if getattr(s, "splittable", True):
            for a in range(0, s.n_edges, chunk_edges):
                ranges.append((s, a, min(s.n_edges, a + chunk_edges)))
        elif s.n_edges:
            ranges.append((s, 0, s.n_edges))
    if client is None:
        for s, a, b in ranges:
            yield _load_chunk(s, a, b)
        return
    import uuid

    token = uuid.uuid4().hex[:8]
    futs = {}
    for i in range(len(ranges)):
        for j in range(i, min(len(ranges), i + window)):
            if j not in futs:
                s, a, b = ranges[j]
                futs[j] = client.submit(_load_chunk, s, a, b, key=f"mst-write-load-{token}-{j}",
                                        pure=False)
        f = futs.pop(i)
        out = f.result()
        f.release()
        yield out


def _load_chunk(source, a, b):
    s, d, w = source.load(a, b)
    return np.asarray(s), np.asarray(d), np.asarray(w)


class atomic_dir(atomic_path):
    """Like :class:`atomic_path`, for a directory (an existing one is replaced)."""

    def __enter__(self):
        directory, name = os.path.split(self.path)
        for _ in range(100):
            tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
            try:
                os.mkdir(tmp)
            except FileExistsError:
                continue
            self.tmp = tmp
            return tmp
        raise FileExistsError(f"no free temporary name next to {self.path!r}")

    def __exit__(self, exc_type, exc, tb):
        import shutil

        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        old = None
        if os.path.lexists(self.path):
            if not os.path.isdir(self.path):
                shutil.rmtree(self.tmp, ignore_errors=True)
                raise FileExistsError(f"{self.path!r} exists and is not a directory")
            old = self.path + f".{secrets.token_hex(4)}.old"
            os.rename(self.path, old)
        try:
            os.rename(self.tmp, self.path)
        except BaseException:
            if old is not None:
                os.rename(old, self.path)
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return False


def _text_table(cols):
    import pyarrow as pa

    return pa.table(cols)


def _write_text(graph, f, chunks, *, prefix=None, base=0, delimiter=" "):
    """Rows ``[prefix] src+base dst+base weight`` (Arrow's CSV writer: shortest round-trip floats)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    opts = pcsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="none")
    for s, d, w in chunks:
        cols = {}
        if prefix is not None:
            cols["t"] = pa.DictionaryArray.from_arrays(np.zeros(len(s), np.int8), [prefix])
        cols["s"] = s + base if base else s
        cols["d"] = d + base if base else d
        cols["w"] = w
        pcsv.write_csv(pa.table(cols), f, opts)


def _write_edgelist(graph, tmp, chunks, opts):
    with open(tmp, "wb") as f:
        f.write(f"# {graph.name}: {graph.n_vertices} vertices, {graph.n_edges} edges "
                f"(src dst weight)\n".encode())
        _write_text(graph, f, chunks, delimiter=opts.pop("delimiter", " "))


def _write_csv_graph(graph, tmp, chunks, opts):
    with open(tmp, "wb") as f:
        f.write(b"src,dst,weight\n")
        _write_text(graph, f, chunks, delimiter=",")


def _write_gr(graph, tmp, chunks, opts):
    both = bool(opts.pop("both_directions", False))
    m = graph.n_edges * (2 if both else 1)
    if both:
        chunks = (_both_directions(c) for c in chunks)
    with open(tmp, "wb") as f:
        f.write(f"c {graph.name}\nc written by mst-dist; vertices 1..N\np sp {graph.n_vertices} {m}\n"
                .encode())
        _write_text(graph, f, chunks, prefix="a", base=1)


def _both_directions(chunk):
    s, d, w = chunk
    m = len(s)
    s2, d2, w2 = np.empty(2 * m, s.dtype), np.empty(2 * m, d.dtype), np.empty(2 * m, w.dtype)
    s2[0::2], s2[1::2] = s, d
    d2[0::2], d2[1::2] = d, s
    w2[0::2] = w2[1::2] = w
    return s2, d2, w2


def _write_mtx(graph, tmp, chunks, opts):
    field = "real" if np.dtype(graph.weight_dtype).kind == "f" else "integer"
    n = graph.n_vertices
    with open(tmp, "wb") as f:
        f.write(f"%%MatrixMarket matrix coordinate {field} general\n% {graph.name}\n"
                f"{n} {n} {graph.n_edges}\n".encode())
        _write_text(graph, f, chunks, base=1)


def _write_npz_graph(graph, tmp, chunks, opts):
    """The three columns as .npy files (memory-mapped, filled chunk by chunk), zipped uncompressed."""
    import shutil
    import zipfile

    d = tmp + ".cols"
    os.mkdir(d)
    try:
        _write_npy_dir(graph, d, chunks, opts)
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for k in ("src", "dst", "weight"):
                zf.write(os.path.join(d, k + ".npy"), arcname=k + ".npy")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _write_npy_dir(graph, tmpdir, chunks, opts):
    """``src.npy``, ``dst.npy``, ``weight.npy``: a header, then each chunk appended as it comes.

    Plain sequential writes, not a memory map: a map's dirty pages count in
    the writing process's memory, and a Dask worker with a memory limit
    pauses on them while writing a graph larger than memory.
    """
    m = graph.n_edges
    columns = (("src", np.dtype(np.int64)), ("dst", np.dtype(np.int64)),
               ("weight", np.dtype(graph.weight_dtype)))
    files = {k: open(os.path.join(tmpdir, k + ".npy"), "wb") for k, _ in columns}
    try:
        for k, dt in columns:
            np.lib.format.write_array_header_1_0(
                files[k], {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False, "shape": (m,)})
        at = 0
        for chunk in chunks:
            for (k, dt), a in zip(columns, chunk):
                np.ascontiguousarray(a, dtype=dt).tofile(files[k])
            at += len(chunk[0])
        if at != m:
            raise RuntimeError(f"the graph gave {at} rows, not the {m} it announced")
    finally:
        for f in files.values():
            f.close()


def _write_parquet_graph(graph, tmp, chunks, opts):
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("src", pa.int64()), ("dst", pa.int64()),
                        ("weight", pa.from_numpy_dtype(np.dtype(graph.weight_dtype)))])
    with pq.ParquetWriter(tmp, schema) as w:
        for s, d, wt in chunks:
            w.write_table(pa.table({"src": s, "dst": d, "weight": wt.astype(graph.weight_dtype,
                                                                            copy=False)},
                                   schema=schema))


def _write_parquet_part(source, a, b, path, weight_dtype):
    """Write rows ``[a, b)`` of a source to one Parquet file (a task; returns the row count)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s, d, w = _load_chunk(source, a, b)
    pq.write_table(pa.table({"src": s.astype(np.int64, copy=False),
                             "dst": d.astype(np.int64, copy=False),
                             "weight": w.astype(weight_dtype, copy=False)}), path)
    return b - a


def _write_parquet_dir(graph, tmpdir, client, opts):
    """Parquet part files ``part.<i>.parquet``, one per chunk; written by the workers with a client."""
    chunk_edges = int(opts.pop("chunk_edges", _CHUNK_EDGES))
    ranges = []
    for s in graph.sources:
        step = chunk_edges if getattr(s, "splittable", True) else max(1, s.n_edges)
        for a in range(0, s.n_edges, step):
            ranges.append((s, a, min(s.n_edges, a + step)))
    width = max(1, len(str(max(0, len(ranges) - 1))))
    args = [(s, a, b, os.path.join(tmpdir, f"part.{i:0{width}d}.parquet"), np.dtype(graph.weight_dtype))
            for i, (s, a, b) in enumerate(ranges)]
    if client is None:
        for a in args:
            _write_parquet_part(*a)
    else:
        import uuid

        token = uuid.uuid4().hex[:8]
        futs = [client.submit(_write_parquet_part, *a, key=f"mst-write-part-{token}-{i}", pure=False)
                for i, a in enumerate(args)]
        client.gather(futs)


def _write_egr(graph, tmp, chunks_factory, opts):
    """ECL's CSR: both directions of every edge (a self-loop once), arcs in edge id order per vertex."""
    n = graph.n_vertices
    if np.dtype(graph.weight_dtype).kind == "f":
        raise ValueError("an .egr file holds int32 weights; this graph has float weights")
    if n >= 2**31 or n < 0:
        raise ValueError(f"an .egr file holds int32 ids; n_vertices={n} is too large")
    deg = np.zeros(n, np.int64)
    for s, d, w in chunks_factory():
        if w.size and (w.min() < -2**31 or w.max() >= 2**31):
            raise ValueError("an .egr file holds int32 weights; this graph has weights outside "
                             "the int32 range")
        deg += np.bincount(s, minlength=n)
        deg += np.bincount(d[d != s], minlength=n)
    arcs = int(deg.sum())
    if arcs >= 2**31:
        raise ValueError(f"an .egr file holds int32 counts; {arcs} arcs are too many")
    nindex = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=nindex[1:])
    del deg
    header = 8 + 4 * (n + 1)
    with open(tmp, "wb") as f:
        f.write(np.array([n, arcs], "<i4").tobytes())
        f.write(nindex.astype("<i4").tobytes())
        f.truncate(header + 8 * arcs)
    if arcs == 0:
        return
    nlist = np.memmap(tmp, "<i4", "r+", offset=header, shape=(arcs,))
    ew = np.memmap(tmp, "<i4", "r+", offset=header + 4 * arcs, shape=(arcs,))
    cursor = nindex[:-1].copy()
    for s, d, w in chunks_factory():
        loop = s == d
        x = np.empty(2 * len(s), np.int64)
        y = np.empty(2 * len(s), np.int64)
        ww = np.empty(2 * len(s), np.int64)
        x[0::2], x[1::2] = s, d
        y[0::2], y[1::2] = d, s
        ww[0::2] = ww[1::2] = w
        keep = np.ones(2 * len(s), bool)
        keep[1::2] = ~loop
        x, y, ww = x[keep], y[keep], ww[keep]
        order = np.argsort(x, kind="stable")
        xs = x[order]
        first = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
        counts = np.diff(np.r_[first, xs.size])
        rank = np.arange(xs.size) - np.repeat(first, counts)
        pos = cursor[xs] + rank
        nlist[pos] = y[order]
        ew[pos] = ww[order]
        cursor[xs[first]] += counts
    nlist.flush()
    ew.flush()
    del nlist, ew


_GRAPH_WRITERS = {"edgelist": _write_edgelist, "csv": _write_csv_graph, "gr": _write_gr,
                  "mtx": _write_mtx, "npz": _write_npz_graph}

_GRAPH_OPTIONS = {"edgelist": {"delimiter"}, "csv": set(), "gr": {"both_directions"},
                  "mtx": set(), "npz": set(), "npy": set(), "egr": set(),
                  "parquet": {"chunk_edges"}}


def write_graph(graph, path, format=None, *, client=None, **opts):
    """Write a graph's edges to a file (or directory) in a format :func:`mst_dist.read` reads, atomically.

    Parameters
    ----------
    graph : Graph
        Any graph: arrays, a generator's, a reader's.
    path : str or os.PathLike
        Target; its directory must exist.  An existing file or directory is
        replaced.
    format : str, optional
        One of :data:`GRAPH_FORMATS`; default from the extension (``.txt``
        and friends: edge list; ``.csv``; ``.gr``; ``.mtx``; ``.npz``;
        ``.egr``; ``.parquet``); a name without extension or ending in ``/``
        is a directory of Parquet part files; ``"npy"`` a directory of
        ``src.npy``, ``dst.npy``, ``weight.npy``.
    client : distributed.Client, optional
        Load the chunks on its workers (and write Parquet part files there);
        default: load them in this process.
    **opts
        ``delimiter`` (edgelist, default ``" "``); ``both_directions`` (gr:
        write every edge as two arcs, as the road networks do; read back with
        ``dedupe_directions=True``); ``chunk_edges`` (Parquet directory: rows
        per part file, default 4M).

    Vertex ids of 1-based formats (gr, mtx) are written plus one.  Weights are
    written exactly (integers as integers, floats in their shortest
    round-trip form).  ``.egr`` needs int32 ids, counts and weights, and holds
    both directions of every edge (a self-loop once); it keeps a counter per
    vertex in memory while it writes.  An edge list does not record
    ``n_vertices`` (isolated vertices past the largest id are lost; pass
    ``n_vertices=`` when reading back); gr, mtx, egr do.

    Returns the absolute path written.

    Examples
    --------
    >>> import os, tempfile, mst_dist
    >>> g = mst_dist.Graph.from_arrays([0, 1, 2], [1, 2, 0], [4, 1, 2])
    >>> p = write_graph(g, os.path.join(tempfile.mkdtemp(), "g.gr"))
    >>> print(open(p).read().splitlines()[2:])
    ['p sp 3 3', 'a 1 2 4', 'a 2 3 1', 'a 3 1 2']
    >>> mst_dist.read(p).to_arrays()[2].tolist()
    [4, 1, 2]
    """
    from mst_dist.graph import Graph

    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a mst_dist.Graph, got {type(graph).__name__}")
    if format is None:
        format = graph_format(path)
    if format not in GRAPH_FORMATS:
        raise ValueError(f"unknown graph format {format!r}; known: {', '.join(GRAPH_FORMATS)}")
    check_options(format, opts, _GRAPH_OPTIONS[format])
    opts = dict(opts)
    raw = os.fspath(path)
    p = raw.rstrip("/" + os.sep) or raw
    as_dir = format == "npy" or (format == "parquet" and (
        raw.endswith(("/", os.sep)) or os.path.isdir(p) or not os.path.splitext(p)[1]))
    if as_dir:
        target = atomic_dir(p)
        with target as tmp:
            if format == "npy":
                _write_npy_dir(graph, tmp, _graph_chunks(graph, client), opts)
            else:
                _write_parquet_dir(graph, tmp, client, opts)
        return target.path
    target = atomic_path(p)
    with target as tmp:
        if format == "egr":
            _write_egr(graph, tmp, lambda: _graph_chunks(graph, client), opts)
        elif format == "parquet":
            _write_parquet_graph(graph, tmp, _graph_chunks(graph, client), opts)
        else:
            _GRAPH_WRITERS[format](graph, tmp, _graph_chunks(graph, client), opts)
    return target.path


# ---------------------------------------------------------------------------
# forest and label datasets, written by the workers
# ---------------------------------------------------------------------------

#: Name of part ``i`` of a dataset written by the workers (zero-padded: files sort in part order).
DATASET_PART = "part.{:05d}.parquet"


def write_forest_part(path, *row_parts):
    """Write one part file of a forest dataset (a task, run where the rows are).

    ``row_parts``: ``(edge_id, src, dst, weight)`` arrays of forest edges (any
    order; several parts are concatenated).  The file's rows are sorted by
    ``edge_id``, with the columns of :func:`write_forest`.  Returns ``(rows,
    exact weight sum)``.
    """
    import pyarrow as pa

    from mst_dist.result import exact_total

    eid = np.concatenate([np.asarray(p[0], np.int64) for p in row_parts]) if row_parts else np.zeros(0, np.int64)
    order = np.argsort(eid, kind="stable")
    cols = [np.concatenate([np.asarray(p[i]) for p in row_parts])[order] if row_parts else np.zeros(0, np.int64)
            for i in (1, 2, 3)]
    table = pa.table({"edge_id": eid[order], "src": cols[0], "dst": cols[1], "weight": cols[2]})
    _write_table(table, path)
    return int(eid.shape[0]), exact_total(cols[2])


def _write_table(table, path):
    """``pyarrow.parquet.write_table`` to a local path or a URL (:mod:`mst_dist.io.urls`).

    No dictionary encoding: edge ids, vertex ids and weights are nearly all distinct, so a dictionary
    is built only to be dropped, making the write slower and the file larger.
    """
    import pyarrow.parquet as pq

    from mst_dist.io import urls

    if urls.is_url(path):
        with urls.open_binary(path, "wb") as f:
            pq.write_table(table, f, use_dictionary=False)
    else:
        pq.write_table(table, path, use_dictionary=False)


def write_labels_part(path, labels, start, stop):
    """Write vertices ``[start, stop)`` of a labels array as one part file (``vertex``, ``component``)."""
    import pyarrow as pa

    _write_table(pa.table({"vertex": np.arange(start, stop, dtype=np.int64),
                           "component": np.asarray(labels[start:stop], np.int64)}), path)
    return stop - start


def dataset_dir(path, storage_options=None):
    """The temporary directory (or URL prefix) a dataset is written in, committed onto ``path`` on success.

    :func:`atomic_dir` for a local path; for a URL
    (:func:`mst_dist.io.urls.atomic_url_dir`) a hidden prefix next to it.
    Part names go below it with :func:`mst_dist.io.urls.join`.
    """
    from mst_dist.io import urls

    if urls.is_url(path):
        return urls.atomic_url_dir(urls.url(path, storage_options))
    return atomic_dir(path)


def read_forest_dataset(path, storage_options=None):
    """``(edge_ids, src, dst, weight)`` of a forest dataset written by a run with ``output=``."""
    import pyarrow.parquet as pq

    from mst_dist.io import urls

    if urls.is_url(path):
        fs, p = urls.filesystem(path, storage_options)
        t = pq.read_table(p, filesystem=fs)
    else:
        t = pq.read_table(os.fspath(path))
    return tuple(t.column(c).to_numpy() for c in _COLUMNS)


def _write_levels_url(levels, path, storage_options=None):
    """Borůvka levels (:func:`mst_dist.clustering.levels`) as ``level-<r>.parquet`` objects under a URL, atomically."""
    import pyarrow as pa

    from mst_dist.io import urls

    with dataset_dir(path, storage_options) as tmp:
        for r, lab in enumerate(levels, start=1):
            _write_table(pa.table({"vertex": np.arange(lab.shape[0], dtype=np.int64), "cluster": lab}),
                         urls.join(tmp, f"level-{r:03d}.parquet"))
    return path


def _register():
    from mst_dist.clustering.levels import WRITERS
    from mst_dist.io import urls

    WRITERS.update(is_url=urls.is_url, url=_write_levels_url)


_register()


"""Points read from files: ``.npy``, Parquet and Zarr, as a Dask array whose blocks are read on the workers.

:func:`read_points` is the one entry point; :func:`~mst_dist.clustering.knn_graph`,
:func:`~mst_dist.clustering.from_points` and :meth:`mst_dist.HDBSCAN.fit`
call it when they are given a path.  The client reads only what describes
the points (the ``.npy`` header, the Parquet footers, the Zarr metadata);
each block of rows is read, and its coordinates checked, by the task that
needs it, on a worker:

=============  ===========================================  ===========================
format         what                                         one block
=============  ===========================================  ===========================
``npy``        a ``.npy`` file of shape ``(n, d)``          rows, by ``numpy.load(
                                                            mmap_mode="r")`` (byte
                                                            ranges for a URL)
``parquet``    a Parquet file, a directory of them or a     a row group
               glob; one column per coordinate
``zarr``       a Zarr array of shape ``(n, d)``             a Zarr chunk
                                                            (``dask.array.from_zarr``)
=============  ===========================================  ===========================

Paths may be URLs (``s3://...``, with ``storage_options``), as for
:func:`mst_dist.read`.  A file that cannot be points -- a 1-D array, a
non-numeric column or dtype, a missing column, a null, a NaN or infinite
coordinate -- raises :class:`~mst_dist.GraphFormatError` naming the
file (and the column, or the point: its row in the whole array, and for
Parquet its row group and row there); a path that does not exist is a
:class:`FileNotFoundError`.
"""
from __future__ import annotations

import functools
import numbers
import os
import uuid

import numpy as np

from mst_dist.errors import GraphFormatError
from mst_dist.io import urls

__all__ = ["read_points", "POINT_FORMATS", "is_path"]

#: The formats :func:`read_points` reads.
POINT_FORMATS = ("npy", "parquet", "zarr")

_NPY_MAGIC = b"\x93NUMPY"
_ZARR_MARKERS = (".zarray", "zarr.json")


def is_path(X) -> bool:
    """Whether ``X`` names a file (a ``str`` or an ``os.PathLike``) rather than holding points."""
    return isinstance(X, (str, os.PathLike))


# ---------------------------------------------------------------------------
# task functions (run on the workers)
# ---------------------------------------------------------------------------

def _check_finite(block, path, first, row_group=None):
    """``block`` unchanged, or a :class:`GraphFormatError` naming its first point with a NaN or an infinity.

    ``first``: the global row of the block's first point; ``row_group``: the
    Parquet row group the block is (rows within it are named too).
    """
    if block.dtype.kind != "f" or block.size == 0:
        return block
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(block.sum()):
            return block
    bad = np.flatnonzero(~np.isfinite(block).all(axis=1))
    if bad.shape[0] == 0:  # the sum overflowed: every coordinate is finite
        return block
    i = int(bad[0])
    reason = f"point {first + i} has a coordinate that is NaN or infinite: {block[i].tolist()}"
    if row_group is None:
        raise GraphFormatError(reason, path=path)
    raise GraphFormatError(reason, path=path, row_group=row_group, row=i)


def _npy_block(*, path, start, stop, offset, dtype, shape, fortran):
    """Rows ``start:stop`` of a ``.npy`` file: a memory map of a local file, byte ranges of a URL."""
    if not urls.is_url(path):
        block = np.array(np.load(path, mmap_mode="r", allow_pickle=False)[start:stop])
        return _check_finite(block, path, start)
    n, d = shape
    rows = stop - start
    size = dtype.itemsize
    with urls.open_binary(path) as f:
        if not fortran:
            f.seek(offset + start * d * size)
            buf = f.read(rows * d * size)
            block = np.frombuffer(buf, dtype, count=rows * d).reshape(rows, d).copy()
        else:  # column-major: one range per coordinate
            block = np.empty((rows, d), dtype)
            for c in range(d):
                f.seek(offset + (c * n + start) * size)
                block[:, c] = np.frombuffer(f.read(rows * size), dtype, count=rows)
    return _check_finite(block, path, start)


def _parquet_block(*, path, group, columns, dtype, first):
    """Row group ``group`` of a Parquet file as a ``(rows, len(columns))`` array of ``dtype``."""
    import pyarrow as pa

    from mst_dist.io.readers.parquet import _parquet_file, _row_group

    table = _row_group(_parquet_file(path), group, list(columns), path)
    out = np.empty((table.num_rows, len(columns)), dtype)
    for j, col in enumerate(columns):
        c = table.column(col)
        if c.null_count:
            k = int(np.argmax(np.asarray(c.is_null().to_numpy(zero_copy_only=False))))
            raise GraphFormatError(f"null in column {col!r} (point {first + k})", path=path, row_group=group,
                                   row=k)
        if pa.types.is_dictionary(c.type):
            c = c.cast(c.type.value_type)
        out[:, j] = c.to_numpy()
    return _check_finite(out, path, first, row_group=group)


def _zarr_block(block, *, path, block_info=None):
    """A Zarr chunk's coordinates checked (``block_info`` gives its first row)."""
    first = int(block_info[0]["array-location"][0][0]) if block_info else 0
    return _check_finite(block, path, first)


# ---------------------------------------------------------------------------
# here: what the files hold, and the task graph
# ---------------------------------------------------------------------------

def _name(path, fmt, *parts):
    """A Dask name for the array: deterministic for a local file (its path, size and time), else fresh."""
    from dask.base import tokenize

    if urls.is_url(path):
        return f"read-points-{fmt}-{uuid.uuid4().hex}"
    try:
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = uuid.uuid4().hex
    return f"read-points-{fmt}-{tokenize(os.fspath(path), stamp, *parts)}"


def _rows_per_chunk(chunks, d, itemsize):
    """Rows of a block: ``chunks`` as given, else Dask's ``array.chunk-size`` of bytes (128 MiB)."""
    if chunks is not None:
        return int(chunks)
    import dask
    from dask.utils import parse_bytes

    target = parse_bytes(dask.config.get("array.chunk-size", "128MiB"))
    return max(1, int(target) // max(1, d * itemsize))


def _array(name, tasks, chunks, dtype):
    """A Dask array of one column of blocks, ``tasks[i]`` a callable of no argument giving block ``i``."""
    import dask.array as da

    dsk = {(name, i, 0): (t,) for i, t in enumerate(tasks)}
    return da.Array(dsk, name, chunks=chunks, dtype=dtype)


def _exists_or_raise(path):
    if not urls.exists(path):
        raise FileNotFoundError(f"no such file or directory: {str(path)!r}")


def _is_zarr_dir(path):
    return any(urls.exists(urls.join(path, m)) for m in _ZARR_MARKERS)


def _format_of(path):
    """The format of ``path``: by its name, else by what it holds (a directory, the first bytes)."""
    text = str(path)
    if any(ch in text.split("://", 1)[-1] for ch in "*?["):
        return "parquet"  # a glob: several files, Parquet parts
    _exists_or_raise(path)
    base = text.rstrip("/").lower()
    if urls.isdir(path):
        if base.endswith(".zarr") or _is_zarr_dir(path):
            return "zarr"
        return "parquet"
    if base.endswith(".npy"):
        return "npy"
    if base.endswith((".parquet", ".pq", ".parq")):
        return "parquet"
    try:
        with urls.open_binary(path) as f:
            head = f.read(6)
    except OSError as e:
        raise GraphFormatError(f"cannot be read ({type(e).__name__}: {e})", path=path) from None
    if head == _NPY_MAGIC:
        return "npy"
    if head[:4] == b"PAR1":
        return "parquet"
    raise GraphFormatError("not a file of points: read_points reads a .npy file, a Parquet file (or a directory "
                           "of them) and a Zarr array (a directory holding .zarray or zarr.json); name the "
                           "format with format=", path=path)


def _numeric(dtype):
    return dtype.kind in "iuf"


def _read_npy(path, chunks):
    from mst_dist.io.readers.binary import _npy_header

    try:
        with urls.open_binary(path) as f:
            shape, fortran, dtype = _npy_header(f)
            offset = f.tell()
    except (ValueError, EOFError) as e:
        raise GraphFormatError(f"not a readable .npy file ({e})", path=path) from None
    if dtype.hasobject:
        raise GraphFormatError("holds Python objects; refusing to unpickle", path=path)
    if len(shape) != 2:
        hint = " (x.reshape(-1, 1) for points of one coordinate)" if len(shape) == 1 else ""
        raise GraphFormatError(f"has shape {tuple(shape)}; points are a 2-D array (points x coordinates){hint}",
                               path=path)
    if not _numeric(dtype):
        raise GraphFormatError(f"has dtype {dtype}; coordinates must be numbers", path=path)
    n, d = (int(s) for s in shape)
    if d == 0:
        raise GraphFormatError(f"has shape {tuple(shape)}; points need at least one coordinate", path=path)
    step = _rows_per_chunk(chunks, d, dtype.itemsize)
    starts = list(range(0, n, step)) or [0]
    sizes = tuple(min(step, n - s) for s in starts)
    tasks = [functools.partial(_npy_block, path=path, start=s, stop=s + m, offset=offset, dtype=dtype,
                               shape=(n, d), fortran=bool(fortran)) for s, m in zip(starts, sizes)]
    return _array(_name(path, "npy", step), tasks, (sizes, (d,)), dtype)


def _arrow_numeric(t):
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_integer(t) or pa.types.is_floating(t), t


def _parquet_columns(pf, path, columns):
    """The coordinate columns of one file and their NumPy dtypes, checked."""
    schema = pf.schema_arrow
    have = list(schema.names)
    if columns is None:
        meta = schema.pandas_metadata or {}
        index = {c for c in meta.get("index_columns", ()) if isinstance(c, str)}
        chosen = [c for c in have if c not in index]
        for c in chosen:
            ok, t = _arrow_numeric(schema.field(c).type)
            if not ok:
                numeric = [x for x in chosen if _arrow_numeric(schema.field(x).type)[0]]
                raise GraphFormatError(
                    f"column {c!r} has type {t}; coordinates must be numbers: name the coordinate columns with "
                    f"columns=[...] (the numeric ones here: {', '.join(map(repr, numeric)) or 'none'})", path=path)
    else:
        chosen = list(columns)
        for c in chosen:
            if c not in have:
                raise GraphFormatError(f"no column {c!r}; the file has {', '.join(map(repr, have))}", path=path)
            ok, t = _arrow_numeric(schema.field(c).type)
            if not ok:
                raise GraphFormatError(f"column {c!r} has type {t}; coordinates must be numbers", path=path)
    if not chosen:
        raise GraphFormatError("has no columns; points need at least one coordinate", path=path)
    dtypes = [np.dtype(_arrow_numeric(schema.field(c).type)[1].to_pandas_dtype()) for c in chosen]
    return tuple(chosen), dtypes


def _read_parquet(path, columns, chunks):
    import pyarrow as pa

    from mst_dist.io.readers import _expand
    from mst_dist.io.readers.parquet import _parquet_file

    paths = _expand(path, "parquet")
    chosen, dtypes, groups, tasks, first = None, [], [], [], 0
    metas = []
    for p in paths:
        try:
            pf = _parquet_file(p)
        except (pa.ArrowInvalid, OSError) as e:
            raise GraphFormatError(f"not a readable Parquet file: {e}", path=p) from None
        cols, types = _parquet_columns(pf, p, columns)
        if chosen is None:
            chosen = cols
        elif cols != chosen:
            raise GraphFormatError(f"has the columns {', '.join(map(repr, cols))} where {paths[0]!s} has "
                                   f"{', '.join(map(repr, chosen))}; name the coordinate columns with columns=[...]",
                                   path=p)
        dtypes += types
        md = pf.metadata
        metas.append((p, [md.row_group(g).num_rows for g in range(md.num_row_groups)]))
    dtype = np.result_type(*dtypes)
    for p, sizes in metas:
        for g, m in enumerate(sizes):
            tasks.append(functools.partial(_parquet_block, path=p, group=g, columns=chosen, dtype=dtype,
                                           first=first))
            groups.append(m)
            first += m
    if not tasks:
        raise GraphFormatError("holds no row groups: no points", path=path)
    X = _array(_name(path, "parquet", [str(p) for p in paths], chosen), tasks, (tuple(groups), (len(chosen),)),
               dtype)
    if chunks is not None:
        X = X.rechunk({0: int(chunks)})
    return X


def _read_zarr(path, chunks, storage_options):
    try:
        import zarr  # noqa: F401
    except ImportError as e:
        raise ImportError(f"{path}: reading Zarr arrays needs zarr (pip install 'mst-dist[zarr]'): {e}") from e
    import dask.array as da

    kw = {}
    if chunks is not None:
        kw["chunks"] = (int(chunks), -1)
    try:
        if urls.is_url(path):
            X = da.from_zarr(str(path), storage_options=dict(getattr(path, "storage_options", {})), **kw)
        else:
            X = da.from_zarr(os.fspath(path), **kw)
    except Exception as e:  # zarr's own errors: a group, a damaged store
        raise GraphFormatError(f"not a readable Zarr array ({type(e).__name__}: {e}); a group's array is read "
                               f"as path/name", path=path) from None
    if X.ndim != 2:
        hint = " (x.reshape(-1, 1) for points of one coordinate)" if X.ndim == 1 else ""
        raise GraphFormatError(f"has shape {X.shape}; points are a 2-D array (points x coordinates){hint}", path=path)
    if not _numeric(X.dtype):
        raise GraphFormatError(f"has dtype {X.dtype}; coordinates must be numbers", path=path)
    if X.shape[1] == 0:
        raise GraphFormatError(f"has shape {X.shape}; points need at least one coordinate", path=path)
    return X.map_blocks(_zarr_block, path=str(path), dtype=X.dtype, meta=np.empty((0, 0), X.dtype))


def read_points(path, *, columns=None, chunks=None, storage_options=None, format=None):
    """Points in a file as a Dask array of row blocks, read on the Dask workers.

    Nothing of the points is read here: the client reads what describes them
    (the ``.npy`` header, the Parquet footers, the Zarr metadata) and each
    block is read, and its coordinates checked, by the task that uses it.
    :func:`~mst_dist.clustering.knn_graph`,
    :func:`~mst_dist.clustering.from_points` and :meth:`mst_dist.HDBSCAN.fit`
    call this for a path with the default options; call it yourself to pass
    ``columns=``, ``chunks=`` or ``storage_options=``, and give them the
    array.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file of shape ``(n, d)``; a Parquet file, a directory of
        Parquet files or a glob (files in natural name order, as
        :func:`mst_dist.read` takes them), one column per coordinate; a Zarr
        array of shape ``(n, d)`` (a directory holding ``.zarray`` or
        ``zarr.json``, or named ``*.zarr``).  A URL (``s3://...``) is read
        through fsspec.
    columns : sequence of str, optional
        Parquet: the coordinate columns, in order (default: every column,
        each of which must then be numeric; a pandas index column is left
        out).  Not used by the other formats.
    chunks : int, optional
        Rows per block.  Default: ``.npy``, as many rows as Dask's
        ``array.chunk-size`` (128 MiB) holds; Parquet, one block per row
        group; Zarr, the array's own chunks (columns joined into one block).
    storage_options : dict, optional
        Options of a URL's file system (credentials, endpoint), as
        ``dask.dataframe`` takes them.
    format : {"npy", "parquet", "zarr"}, optional
        Default: from the name (``.npy``, ``.parquet``/``.pq``, ``.zarr``),
        else from what the path holds (a Zarr or Parquet directory, the
        file's first bytes).

    Returns
    -------
    dask.array.Array
        Shape ``(n, d)``, the file's dtype (Parquet: the columns' common
        NumPy type), one chunk of columns.

    Raises
    ------
    FileNotFoundError
        No such file or directory (or nothing matches the glob).
    GraphFormatError
        The file cannot be points: it names the file, and what is wrong: a
        shape other than 2-D, a dtype or column that is not numeric (without
        ``columns=``, the message lists the numeric ones), a missing column,
        a file of unknown format.  A null, a NaN or an infinite coordinate is
        found where its block is read (on a worker, when the array is
        computed): the error names the point by its row in the whole array,
        and for Parquet the row group and the row within it.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from mst_dist.clustering import read_points
    >>> path = os.path.join(tempfile.mkdtemp(), "points.npy")
    >>> np.save(path, np.arange(12.0).reshape(6, 2))
    >>> X = read_points(path, chunks=4)
    >>> X.shape, X.chunks
    ((6, 2), ((4, 2), (2,)))
    >>> X[4:].compute().tolist()
    [[8.0, 9.0], [10.0, 11.0]]
    """
    if not is_path(path):
        raise TypeError(f"read_points: path must be a str or os.PathLike, got {type(path).__name__}")
    if format is not None and format not in POINT_FORMATS:
        raise ValueError(f"read_points: unknown format {format!r}; choose one of {', '.join(POINT_FORMATS)}")
    if chunks is not None and (isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral) or chunks < 1):
        raise ValueError(f"read_points: chunks must be a positive number of rows, got {chunks!r}")
    if columns is not None:
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise ValueError(f"read_points: columns must be a list of column names, got {columns!r}")
        columns = list(columns)
        if not columns:
            raise ValueError("read_points: columns=[] names no coordinate")
    path = urls.url(os.fspath(path), storage_options)
    fmt = format or _format_of(path)
    if format is not None and not any(ch in str(path) for ch in "*?["):
        _exists_or_raise(path)
    if columns is not None and fmt != "parquet":
        raise ValueError(f"read_points: columns= names Parquet columns; {str(path)!r} is read as {fmt}")
    if fmt == "npy":
        return _read_npy(path, chunks)
    if fmt == "parquet":
        return _read_parquet(path, columns, chunks)
    return _read_zarr(path, chunks, storage_options)

"""Parquet graph files (a file, a directory of part files or a glob), read by row groups on the workers.

Columns ``src``, ``dst`` and ``weight`` (rename with ``src=``, ``dst=``,
``weight=``; ``weight=None`` for weight 1; a missing default ``weight``
column also means weight 1); ids of any integer type, weights of any integer,
float or boolean type (read as int64 or float64), dictionary-encoded columns
too.  ``n_vertices`` comes from the files' statistics when every row group
has them; otherwise one scan task per file finds the largest id.  Errors name
the row group and the row within it.
"""
from __future__ import annotations

import os

import numpy as np

from mst_dist.graph import FunctionSource
from mst_dist.io.formats import GraphFormatError
from mst_dist.io.readers.binary import as_ids, as_weights, check_rows, column_names, max_id
from mst_dist.io import urls
from mst_dist.io.tasks import map_tasks

__all__ = ["read_parquet", "OPTIONS"]

#: Options the Parquet reader takes (besides ``client``, ``n_vertices``, ``name``).
OPTIONS = {"parquet": {"src", "dst", "weight"}}



def _parquet_file(path):
    """``pyarrow.parquet.ParquetFile`` of a local path, or of a URL through fsspec (row groups by byte ranges)."""
    import pyarrow.parquet as pq

    if urls.is_url(path):
        fs, p = urls.filesystem(path)
        return pq.ParquetFile(p, filesystem=fs)
    return pq.ParquetFile(path)

def _row_group(pf, g, columns, path):
    """Row group ``g`` of ``pf``; a :class:`GraphFormatError` naming the file and the group where its bytes
    are damaged (pyarrow's own error, from decompression or the page headers, says neither)."""
    import pyarrow as pa

    try:
        return pf.read_row_group(g, columns=columns)
    except (pa.ArrowException, OSError) as e:
        raise GraphFormatError(f"cannot be read ({type(e).__name__}: {str(e).strip()})", path=path,
                               row_group=g) from None


def _parquet_rows(start, stop, *, path, columns, groups, n, weight_float):
    """Rows ``[start, stop)`` of a Parquet file, read by row groups (a source's row function).

    ``groups`` holds each row group's first row, then the file's row count.
    """
    g0 = int(np.searchsorted(groups, start, "right")) - 1
    g1 = int(np.searchsorted(groups, stop, "left"))
    want = [c for c in columns.values() if c is not None]
    out = {k: [] for k in columns}
    pf = _parquet_file(path)
    for g in range(g0, g1):
        lo = max(start, int(groups[g])) - int(groups[g])
        hi = min(stop, int(groups[g + 1])) - int(groups[g])
        t = _row_group(pf, g, want, path)
        for key, col in columns.items():
            if col is None:
                out[key].append(np.ones(hi - lo, np.int64))
                continue
            c = t.column(col).slice(lo, hi - lo)
            if c.null_count:
                k = int(np.argmax(np.asarray(c.is_null().to_numpy(zero_copy_only=False))))
                raise GraphFormatError(f"null in column {col!r}", path=path, row_group=g, row=lo + k)
            import pyarrow as pa

            if pa.types.is_dictionary(c.type):
                c = c.cast(c.type.value_type)
            a = c.to_numpy()
            if key == "weight":
                a = as_weights(a, path, col, row_group=g)
            else:
                a = as_ids(a, path, col, lo, row_group=g)
            out[key].append(a)
        s, d, w = out["src"][-1], out["dst"][-1], out["weight"][-1]
        if weight_float:
            w = out["weight"][-1] = w.astype(np.float64, copy=False)
        check_rows(s, d, w, n, path, lo, row_group=g)
    cat = [np.concatenate(out[k]) if out[k] else np.zeros(0, np.int64) for k in ("src", "dst", "weight")]
    if weight_float:
        cat[2] = cat[2].astype(np.float64, copy=False)
    return cat[0], cat[1], cat[2]


def _parquet_scan(path, columns, groups):
    """Largest id of a Parquet file (a scan task), validating every row group."""
    mx = -1
    for g in range(len(groups) - 1):
        s, d, _ = _parquet_rows(int(groups[g]), int(groups[g + 1]), path=path, columns=columns,
                                groups=groups, n=-1, weight_float=False)
        mx = max(mx, max_id(s, d))
    return mx


def read_parquet(paths, client, n_vertices, opts):
    """Sources of Parquet files: ``(sources, n_vertices, weight dtype, meta)``."""
    import pyarrow as pa

    names, explicit = column_names(opts)
    metas = []
    wfloat = False
    stats_max = -1
    stats_ok = True
    for path in paths:
        try:
            pf = _parquet_file(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise GraphFormatError(f"not a readable Parquet file: {e}", path=path) from None
        schema = pf.schema_arrow
        have = schema.names
        columns = {}
        for key in ("src", "dst", "weight"):
            col = names[key]
            if col is None or (key == "weight" and col not in have and not explicit):
                columns[key] = None
                continue
            if col not in have:
                raise GraphFormatError(f"no column {col!r}; the file has {', '.join(have)} (name "
                                       f"the columns with src=, dst=, weight=)", path=path)
            t = schema.field(col).type
            if pa.types.is_dictionary(t):
                t = t.value_type
            if key == "weight":
                if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
                    raise GraphFormatError(f"column {col!r} has type {t}; weights must be integers "
                                           f"or floats", path=path)
                wfloat |= pa.types.is_floating(t)
            elif not pa.types.is_integer(t):
                raise GraphFormatError(f"column {col!r} has type {t}; vertex ids must be integers",
                                       path=path)
            columns[key] = col
        md = pf.metadata
        sizes = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
        groups = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            if columns["weight"] is not None:
                st = rg.column(have.index(columns["weight"])).statistics
                if st is not None and st.has_null_count and st.null_count:
                    stats_ok = False  # let the scan name the row
            for key in ("src", "dst"):
                idx = have.index(columns[key])
                st = rg.column(idx).statistics
                if st is not None and st.has_null_count and st.null_count:
                    stats_ok = False
                if st is None or not st.has_min_max or sizes[g] == 0:
                    stats_ok = stats_ok and (sizes[g] == 0)
                    continue
                try:
                    stats_max = max(stats_max, int(st.max))
                    if int(st.min) < 0:
                        stats_ok = False  # let the scan find the row
                except (TypeError, ValueError):
                    stats_ok = False
        metas.append((path, columns, groups))
    if n_vertices is None:
        if stats_ok:
            n_vertices = stats_max + 1
        else:
            scans = map_tasks(_parquet_scan, [(p, c, g) for p, c, g in metas], client, "read-scan")
            n_vertices = max([s + 1 for s in scans] + [0])
    sources = [FunctionSource(_parquet_rows, {"path": p, "columns": c, "groups": g,
                                              "n": int(n_vertices), "weight_float": wfloat},
                              int(g[-1]), name=os.path.basename(p))
               for p, c, g in metas]
    return sources, int(n_vertices), np.dtype(np.float64 if wfloat else np.int64), {}

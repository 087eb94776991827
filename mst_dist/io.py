"""Reading graphs and writing forests.

Forest writers
--------------
:func:`write_forest` writes a result's edges as four columns ``edge_id``,
``src``, ``dst``, ``weight`` to Parquet, CSV or ``.npz``.  Every write is
atomic: the file is written under a temporary name in the target's directory
and renamed over the target only once complete, so a reader never sees half a
file and a failed write leaves nothing behind.
"""
from __future__ import annotations

import os
import secrets

import numpy as np

__all__ = ["write_forest", "forest_format", "FOREST_FORMATS", "atomic_path"]

#: Formats :func:`write_forest` writes, by name.
FOREST_FORMATS = ("parquet", "csv", "npz")

_EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".npz": "npz",
}

_COLUMNS = ("edge_id", "src", "dst", "weight")


def forest_format(path):
    """The forest format a file name asks for, from its extension.

    >>> forest_format("out/msf.parquet"), forest_format("msf.CSV"), forest_format("f.npz")
    ('parquet', 'csv', 'npz')
    """
    ext = os.path.splitext(os.fspath(path))[1].lower()
    try:
        return _EXTENSIONS[ext]
    except KeyError:
        raise ValueError(
            f"cannot tell the forest format of {os.fspath(path)!r} from its extension "
            f"{ext or '(none)'!r}; known: {', '.join(sorted(_EXTENSIONS))}"
        ) from None


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


def write_forest(result, path, format=None):
    """Write a forest's edges (``edge_id, src, dst, weight``) to a file, atomically.

    Parameters
    ----------
    result : MSFResult
        The forest (its ``edge_ids``, ``src``, ``dst``, ``weight``).
    path : str or os.PathLike
        Target file; its directory must exist.  An existing file is replaced.
    format : {"parquet", "csv", "npz"}, optional
        Default: from the extension (``.parquet``/``.pq``, ``.csv``, ``.npz``).

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
    target = atomic_path(path)
    with target as tmp:
        _WRITERS[format](cols, tmp)
    return target.path

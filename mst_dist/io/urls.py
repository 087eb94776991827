"""Paths that are URLs: object stores and web servers through fsspec, as ``dask.dataframe`` reads them.

A path with a protocol (``s3://bucket/g.txt``, ``gs://...``, ``abfs://...``,
``https://...`` to read) is opened with the fsspec implementation of that
protocol (``s3fs``, ``gcsfs``, ``adlfs``; ``pip install "mst-dist[s3]"``
for S3) and the caller's ``storage_options`` (credentials, endpoint), the
names ``dask.dataframe.read_parquet`` takes.  Local paths (and ``file://``)
keep going through the operating system as before.

:class:`URL` is such a path as a ``str`` that carries its options, so the
readers' row functions, which run on the workers, open it there by byte
ranges (text) or row groups (Parquet) exactly as a local file; the helpers
(:func:`open_binary`, :func:`getsize`, ...) take either kind.

Writes (:func:`atomic_url_dir`) go under a hidden temporary prefix next to
the target and are committed once complete: the old objects under the
target are removed and the new ones moved into place; a failure removes the
temporary prefix, so nothing half written is ever visible under the target
(an object store has no atomic rename of a prefix: a reader listing the
target while the commit runs may see it empty).
"""
from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import secrets
import threading

from mst_dist.errors import ConfigError

__all__ = ["URL", "atomic_url_dir", "atomic_url_file", "check_path", "check_writable_prefix", "exists", "filesystem",
           "getsize", "glob", "is_url", "isdir", "join", "list_files", "local_path", "open_binary", "url"]

_PROTOCOL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
#: A protocol's name and colon, two letters or more (``C:`` is a Windows drive, not a protocol).
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]+):")

#: Seconds a store is given to answer the first look at a URL (a trial write, whether it is a
#: prefix) before the run is refused, naming the endpoint, rather than left waiting.
STORE_TIMEOUT = 60.0


@functools.lru_cache(maxsize=1)
def known_protocols():
    """The protocols fsspec knows (whose packages may still need installing), sorted."""
    import fsspec

    return sorted(set(fsspec.available_protocols()) - {"async_wrapper", "asyncwrapper"})


def check_path(path, what="path", storage_options=None):
    """``path`` if it is a local path or a URL of a protocol fsspec knows, else a
    :class:`~mst_dist.errors.ConfigError` naming ``what`` and the known protocols.

    Refused: a path that starts as a URL but is not one (``s3:/bucket/ck``,
    ``s3:bucket``: never taken for a local directory), an unknown protocol
    (``s4://...``), and ``storage_options`` that are not a dict.
    """
    if storage_options is not None and not isinstance(storage_options, dict):
        raise ConfigError(f"storage_options must be a dict of the file system's options (as dask.dataframe "
                          f"takes them), got {type(storage_options).__name__}", key="storage_options")
    if not isinstance(path, str) or isinstance(path, URL):
        return path
    m = _PROTOCOL.match(path) or _SCHEME.match(path)
    if m is None:
        return path
    proto = path.split(":", 1)[0].lower()
    rest = path[len(proto) + 1:]
    known = known_protocols()
    if rest.startswith("//"):
        if proto not in known:
            raise ConfigError(f"{what} {path!r}: unknown protocol {proto}://; known protocols: "
                              f"{', '.join(known)}", key=what)
        return path
    if proto in known or rest.startswith("/"):
        raise ConfigError(f"{what} {path!r} looks like a URL but is not one (a {proto} URL is written "
                          f"{proto}://bucket/path); write it in full, or ./{path} for a local path. Known "
                          f"protocols: {', '.join(known)}", key=what)
    return path


def endpoint(path):
    """Where the store of the URL ``path`` is reached: its ``endpoint_url`` option, else its protocol's own."""
    options = dict(getattr(path, "storage_options", None) or {})
    ep = options.get("endpoint_url") or (options.get("client_kwargs") or {}).get("endpoint_url")
    return ep or f"the default {_protocol(path)}:// endpoint"


def bounded(call, path, what, timeout=None):
    """``call()``, or a :class:`TimeoutError` naming ``what``, the URL and its endpoint when the store
    gives no answer within ``timeout`` seconds (:data:`STORE_TIMEOUT`): a store that accepts a
    connection and never answers does not leave the caller waiting."""
    timeout = STORE_TIMEOUT if timeout is None else timeout
    box = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=run, name="mst-store-look", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TimeoutError(f"{what} {str(path)!r}: the store at {endpoint(path)} gave no answer in {timeout:g} s; "
                           f"check the endpoint (storage_options' endpoint_url), the network and the "
                           f"credentials")
    if "error" in box:
        e = box["error"]
        if isinstance(e, PermissionError) and str(path) not in str(e):  # the store's words name no object
            raise PermissionError(f"{what} {str(path)!r}: the store at {endpoint(path)} refused access ({e}); "
                                  f"check the credentials in storage_options or the environment") from e
        raise e
    return box.get("value")


def is_url(path) -> bool:
    """Whether ``path`` names a protocol other than the local file system (``s3://``, ``https://``, ...)."""
    if isinstance(path, URL):
        return True
    if not isinstance(path, str) or not _PROTOCOL.match(path):
        return False
    return not path.startswith("file://")


class URL(str):
    """A URL that carries the ``storage_options`` of its file system (pickled with it, to the workers)."""

    storage_options: dict

    def __new__(cls, value, storage_options=None):
        self = super().__new__(cls, value)
        self.storage_options = dict(storage_options or getattr(value, "storage_options", None) or {})
        return self

    def __reduce__(self):
        return URL, (str(self), self.storage_options)

    def derive(self, value):
        """Another URL with the same options."""
        return URL(value, self.storage_options)


def url(path, storage_options=None):
    """``path`` as a :class:`URL` when it is one (with ``storage_options``), else unchanged;
    :func:`check_path` refuses a malformed one."""
    check_path(path, "path", storage_options)
    if is_url(path):
        return URL(path, storage_options)
    return path


def filesystem(path, storage_options=None):
    """``(fsspec file system, path within it)`` of a URL; ``ImportError`` naming the package to install."""
    try:
        from fsspec.core import url_to_fs
    except ImportError as e:  # pragma: no cover - fsspec comes with dask
        raise ImportError(f"{path}: reading URLs needs fsspec (pip install fsspec)") from e
    options = dict(getattr(path, "storage_options", None) or {})
    options.update(storage_options or {})
    try:
        return url_to_fs(str(path), **options)
    except ImportError as e:
        proto = str(path).split("://", 1)[0]
        extra = {"s3": "s3fs (pip install 'mst-dist[s3]')", "gs": "gcsfs", "gcs": "gcsfs", "abfs": "adlfs",
                 "az": "adlfs", "http": "aiohttp", "https": "aiohttp"}.get(proto, f"the fsspec package for {proto}://")
        raise ImportError(f"{path}: {proto}:// paths need {extra}: {e}") from e


def open_binary(path, mode="rb"):
    """A binary file object of ``path``: ``open()`` for a local path, fsspec for a URL."""
    if not is_url(path):
        return open(path, mode)
    fs, p = filesystem(path)
    return fs.open(p, mode)


def getsize(path) -> int:
    if not is_url(path):
        return os.path.getsize(path)
    fs, p = filesystem(path)
    return int(fs.size(p))


def exists(path) -> bool:
    if not is_url(path):
        return os.path.exists(path)
    fs, p = filesystem(path)
    return fs.exists(p)


def isdir(path) -> bool:
    if not is_url(path):
        return os.path.isdir(path)
    fs, p = filesystem(path)
    return bounded(lambda: fs.isdir(p), path, "path")


def _protocol(path):
    return str(path).split("://", 1)[0]


def _as_url(path, fs_path):
    """``fs_path`` (as the file system names it, without a protocol) as a URL like ``path``."""
    if _PROTOCOL.match(fs_path):
        return path.derive(fs_path)
    return path.derive(f"{_protocol(path)}://{fs_path}")


def glob(path):
    """The URLs matching the glob ``path`` (a :class:`URL`)."""
    fs, p = filesystem(path)
    return [_as_url(path, q) for q in fs.glob(p) if not fs.isdir(q)]


def list_files(path):
    """Every file under the directory URL ``path``, hidden ones (``.``, ``_``) left out."""
    fs, p = filesystem(path)
    out = []
    for q in fs.find(p):
        rel = posixpath.relpath(q, p.rstrip("/"))
        if any(part.startswith((".", "_")) for part in rel.split("/")):
            continue
        out.append(_as_url(path, q))
    return out


def join(path, *names):
    """``path/name``: ``os.path.join`` for a local path, ``/`` for a URL (keeping its options)."""
    if not is_url(path):
        return os.path.join(path, *names)
    joined = str(path).rstrip("/") + "/" + "/".join(names)
    return path.derive(joined) if isinstance(path, URL) else joined


def check_writable_url(path, what, storage_options=None):
    """Check, before any work, that objects can be written next to the URL ``path`` (a trial object)."""
    fs, p = filesystem(path, storage_options)
    parent = posixpath.dirname(p.rstrip("/"))
    probe = f"{parent}/.{posixpath.basename(p.rstrip('/'))}.{secrets.token_hex(4)}.probe"
    def trial():
        with fs.open(probe, "wb") as f:
            f.write(b"")
        fs.rm(probe)

    try:
        bounded(trial, URL(str(path), {**dict(getattr(path, "storage_options", None) or {}),
                                       **(storage_options or {})}), what)
    except TimeoutError:
        raise
    except Exception as e:
        raise PermissionError(f"{what} {str(path)!r}: cannot write next to it ({type(e).__name__}: {e})") from None
    return path


@contextlib.contextmanager
def atomic_url_dir(path, storage_options=None):
    """A temporary prefix (a :class:`URL`) next to the URL ``path``, committed onto it on success.

    On success the objects under ``path`` are removed and the temporary
    ones moved into place; on an exception the temporary prefix is removed
    and ``path`` is untouched.
    """
    fs, p = filesystem(path, storage_options)
    p = p.rstrip("/")
    parent, name = posixpath.split(p)
    tmp = f"{parent}/.{name}.{secrets.token_hex(4)}.tmp"
    tmp_url = URL(f"{_protocol(path)}://{tmp}", {**dict(getattr(path, "storage_options", None) or {}),
                                                 **(storage_options or {})})
    try:
        yield tmp_url
        written = sorted(fs.find(tmp))
        if fs.exists(p):
            fs.rm(p, recursive=True)
        for q in written:
            fs.mv(q, p + q[len(tmp):])
    finally:
        try:
            if fs.exists(tmp):
                fs.rm(tmp, recursive=True)
        except Exception:  # pragma: no cover - best effort; the name is hidden
            pass
        fs.invalidate_cache()


def local_path(path):
    """The local path a ``file://`` URL names (``file:///data/ck`` -> ``/data/ck``); any other path unchanged."""
    if isinstance(path, str) and not isinstance(path, URL) and path.startswith("file://"):
        rest = path[len("file://"):]
        if rest.startswith("localhost/"):
            rest = rest[len("localhost"):]
        return rest
    return path


def check_writable_prefix(path, what, storage_options=None):
    """Check, before any work, that objects can be written under the URL prefix ``path``.

    A hidden trial object (``.<hex>.probe``) is written under ``path`` and
    removed; a :class:`PermissionError` naming ``what`` and the URL when the
    store refuses it (no such bucket, no credentials, read-only access).
    Nothing else is created: no bucket, no directory marker.
    """
    fs, p = filesystem(path, storage_options)
    probe = f"{p.rstrip('/')}/.{secrets.token_hex(4)}.probe"
    def trial():
        with fs.open(probe, "wb") as f:
            f.write(b"")

    try:
        bounded(trial, URL(str(path), {**dict(getattr(path, "storage_options", None) or {}),
                                       **(storage_options or {})}), what)
    except TimeoutError:
        raise
    except Exception as e:
        raise PermissionError(f"{what} {str(path)!r}: cannot write under it ({type(e).__name__}: {e})") from None
    try:
        fs.rm(probe)
    except Exception as e:
        raise PermissionError(f"{what} {str(path)!r}: an object written under it cannot be removed "
                              f"({type(e).__name__}: {e})") from None
    return path


@contextlib.contextmanager
def atomic_url_file(path, storage_options=None):
    """A hidden temporary object (a :class:`URL`) next to the URL ``path``, moved onto it on success.

    The move is the store's copy of one object, which replaces ``path``
    whole (a reader sees the old object or the new one); on an exception
    the temporary object is removed and ``path`` is untouched.
    """
    fs, p = filesystem(path, storage_options)
    parent, name = posixpath.split(p.rstrip("/"))
    tmp = f"{parent}/.{name}.{secrets.token_hex(4)}.tmp"
    tmp_url = URL(f"{_protocol(path)}://{tmp}", {**dict(getattr(path, "storage_options", None) or {}),
                                                 **(storage_options or {})})
    try:
        yield tmp_url
        fs.invalidate_cache(parent)
        fs.mv(tmp, p)
    finally:
        try:
            fs.invalidate_cache(parent)
            if fs.exists(tmp):
                fs.rm(tmp)
        except Exception:  # pragma: no cover - best effort; the name is hidden
            pass

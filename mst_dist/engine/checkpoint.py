"""Checkpoints: where a run stands after each finished round or pass, to go on after preemption.

A run given ``checkpoint=DIR`` saves, after every distributed round and the
local finish of a resident run, and after every pass of a streaming one,
what the rest of the run needs, in ``DIR``:

``state-<n>/labels.npy``
    every vertex's component so far, as a round map over the original
    vertices: ``c >= 0`` a component still live (``0..components-1``),
    ``-(F + 1)`` finished as ``F`` (absent while it is the identity);
``state-<n>/forest.npy``
    the forest edge ids chosen so far, ascending;
``state-<n>/rows-edge_id.npy``, ``rows-src.npy``, ``rows-dst.npy``, ``rows-weight.npy``
    (streaming) those edges' rows, which later passes do not read again;
``state-<n>/labels-<r>.npy``, ``forest-<j>.npy``
    (partitioned) the same, cut as the run holds them: the labels of each
    range of vertices ``r`` (the manifest's ``vertex_ranges`` even ranges of
    ``[0, n)``), written by the task that owns it, and the forest ids of each
    edge chunk ``j`` (the chunk's edge ids are the manifest's
    ``chunk_bounds[j]`` to ``chunk_bounds[j + 1]``), written where the
    chunk is; no array over all vertices or all forest edges is built;
``state-<n>/rows-<j>-edge_id.npy``, ... (spread streaming)
    a streaming run whose vertex map is cut into ranges: its labels and
    forest ids as a partitioned run cuts them, and each edge chunk's forest
    rows beside its forest ids, written where the chunk's last pass left them;
``manifest.json``
    written last (a :class:`Manifest`): the fingerprint of the graph and of
    the engine options, the state directory, the rounds done, the
    components left, the next pass and its lower threshold, whether the
    forest is complete.  Its ``format`` and ``version`` say what reads it.

Each save writes a new state directory (:class:`~mst_dist.io.writers.atomic_dir`;
a worker writes the arrays, so ``DIR`` must be on storage the workers and
the client share), then replaces the manifest
(:class:`~mst_dist.io.writers.atomic_path`), then removes the older state: a
run killed at any moment leaves a manifest naming a complete state.

``DIR`` may also be an fsspec URL (``s3://bucket/ck/run1``, ``gs://...``,
``abfs://...``) with the run's ``storage_options``; the workers get it as a
:class:`~mst_dist.io.urls.URL` carrying them.  An object store renames no
prefix, so a state is written under a hidden temporary prefix and its objects
moved into place once all are written
(:func:`~mst_dist.io.urls.atomic_url_dir`); the manifest is written as a
hidden object and moved onto ``manifest.json``, which replaces it whole
(:func:`~mst_dist.io.urls.atomic_url_file`); the older states go last.  The
same guarantee follows: the manifest names a state whose every object is
there, and what a killed save left under hidden names is removed by the
next run that opens the checkpoint.  Whether the prefix can be written is
tried (:func:`~mst_dist.io.urls.check_writable_prefix`) before any work.

Why a resumed run returns the same forest: every edge chosen so far is in
the minimum spanning forest (cut property), and the rest of the forest is
the forest of the graph contracted along them -- the original edges
relabelled by ``labels``, self-loops dropped, edge ids and the strict
``(weight, edge id)`` order kept.  The resumed run loads the graph again from
its source (generator, file or the caller's arrays), relabels it and goes on;
the forest is unique under the order, so its edge ids are those of a run
never interrupted.  A streaming run goes on with the pass after the last one
saved (every edge below its threshold is a forest edge or inside a component).
"""
from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
import os
import posixpath
import shutil
import time
from dataclasses import MISSING, asdict, dataclass, fields

import numpy as np

from mst_dist.engine.passes import KeptRows
from mst_dist.engine.records import ChunkStats, RoundMap, RoundRecord
from mst_dist.engine.tasks import host_kernels
from mst_dist.errors import CheckpointMismatchError  # defined with the package's other errors
from mst_dist.io import urls
from mst_dist.io.writers import atomic_dir, atomic_path

__all__ = ["Checkpoint", "CheckpointMismatchError", "Manifest", "graph_fingerprint", "compose_labels",
           "merge_forest", "record_dict", "write_state", "read_labels", "read_forest", "read_rows", "write_chunk_part",
           "read_chunk_rows", "MANIFEST"]

#: The manifest's file name in a checkpoint directory.
MANIFEST = "manifest.json"
_FORMAT = "mst-dist checkpoint"
_VERSION = 1
_ROWS = ("edge_id", "src", "dst", "weight")


@dataclass(frozen=True)
class Manifest:
    """What a checkpoint directory's ``manifest.json`` says of the state it names.

    Written last by every save, so it always names a complete state.  A
    resident or partitioned run's state is a round; a streaming run's, a pass.
    """

    graph: dict                 #: the graph's fingerprint (:func:`graph_fingerprint`)
    options: dict               #: the engine options the state was made with
    state: str                  #: the state directory's name
    saves: int                  #: saves made so far (the state's number)
    time: float                 #: when it was written (seconds since the epoch)
    mode: str                   #: one of :attr:`MODES`
    round: int                  #: rounds done
    components: int             #: components left after them (not finished)
    complete: bool              #: the forest is complete: nothing is left to solve
    light: bool = False         #: saved during a light pass (its edge count leaves out the heavy edges)
    edges_left: int | None = None   #: edges left (resident)
    record: dict | None = None  #: the last round's record (resident)
    passes: int | None = None   #: passes done (streaming)
    threshold: list | None = None   #: the upper threshold of the last pass, ``[key, eid]`` (streaming)
    rows: bool = False          #: the state holds the forest's rows (streaming)
    finished: int | None = None     #: components finished so far (partitioned)
    vertex_ranges: int | None = None    #: the ranges of vertices the labels are cut in (partitioned, spread)
    chunk_bounds: list | None = None    #: the edge chunks the forest ids are cut by (partitioned, spread)
    format: str = _FORMAT
    version: int = _VERSION

    #: the kinds of run (their names in the stats and logs)
    MODES = ("resident", "streaming", "partitioned", "spread-streaming")
    #: the names earlier saves of this release gave two of them
    OLD_MODES = {"stream": "streaming", "spread-stream": "spread-streaming"}

    def to_json(self) -> dict:
        return _plain(asdict(self))

    @classmethod
    def from_json(cls, data, path) -> "Manifest":
        """A manifest read back; :class:`CheckpointMismatchError` naming ``path`` when it is not one."""
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
        missing = sorted(required - set(data))
        if data.get("mode") in cls.OLD_MODES:
            data = {**data, "mode": cls.OLD_MODES[data["mode"]]}
        if missing or data.get("mode") not in cls.MODES:
            what = f"missing {', '.join(missing)}" if missing else f"mode {data.get('mode')!r}"
            raise CheckpointMismatchError(f"{path!r} is not a complete mst-dist checkpoint manifest ({what}); "
                                          f"give another checkpoint directory, or start over (resume=False)")
        return cls(**{k: v for k, v in data.items() if k in names})

    def round_record(self) -> RoundRecord | None:
        """The last round's record as saved (what the next round's contract reads: finished so far)."""
        rec = self.record
        if rec is None:
            return None
        return RoundRecord(**{**rec, "chunks": ChunkStats(**rec["chunks"])})


# ---------------------------------------------------------------------------
# fingerprints
# ---------------------------------------------------------------------------

def _plain(value):
    """``value`` as JSON (a token for what JSON cannot hold, such as arrays)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    from dask.base import tokenize

    return {"token": tokenize(value)}


#: Bytes read from each of a file's sampled ranges (its start, middle and end) for its fingerprint.
SAMPLE_BYTES = 1 << 16
#: What a store says of an object that changes when it is rewritten (S3, GCS, Azure, memory, HTTP).
_STORE_KEYS = ("ETag", "etag", "VersionId", "version_id", "generation", "md5Hash", "crc32c", "content_md5",
               "LastModified", "last_modified", "updated", "mtime", "created")


def _samples(size):
    """The ``(start, stop)`` byte ranges a fingerprint reads of a file of ``size`` bytes."""
    if size <= 3 * SAMPLE_BYTES:
        return [(0, size)]
    mid = (size - SAMPLE_BYTES) // 2
    return [(0, SAMPLE_BYTES), (mid, mid + SAMPLE_BYTES), (size - SAMPLE_BYTES, size)]


def _local_identity(path):
    s = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for a, b in _samples(s.st_size):
            f.seek(a)
            digest.update(f.read(b - a))
    return [os.path.abspath(path), s.st_size, s.st_mtime_ns, digest.hexdigest()[:16]]


def _url_identity(path):
    """``[url, bytes, what the store says of the object, checksum of sampled ranges]``, or ``None``
    when ``path`` names no object (a prefix, or nothing)."""
    fs, p = urls.filesystem(path)
    try:
        info = fs.info(p)
    except (FileNotFoundError, IsADirectoryError):
        return None
    if info.get("type", "file") != "file" or info.get("size") is None:
        return None
    size = int(info["size"])
    store = {k: str(info[k]) for k in _STORE_KEYS if info.get(k) is not None}
    digest = hashlib.sha256()
    for a, b in _samples(size):
        digest.update(fs.cat_file(p, start=a, end=b))
    return [str(path), size, store, digest.hexdigest()[:16]]


def _files(value, out):
    """The identity of every existing file or object named in ``value`` (a source's parameters):
    its path or URL, size, modification time (a store's ETag, version or time where it gives
    them) and a checksum of a few sampled byte ranges, all through the file's own file system."""
    if isinstance(value, (str, os.PathLike)):
        if urls.is_url(value):
            found = _url_identity(value)
            if found is not None:
                out.append(found)
        elif os.path.isfile(os.fspath(value)):
            out.append(_local_identity(os.fspath(value)))
    elif isinstance(value, dict):
        for v in value.values():
            _files(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _files(v, out)
    return out


def _source(s):
    func = getattr(s, "func", None)
    if func is None:  # the caller's arrays: their contents (device arrays copied to the host)
        from dask.base import tokenize

        arrays = [getattr(s, a) for a in ("src", "dst", "weight")]
        return {"arrays": tokenize(*(a.get() if hasattr(a, "__cuda_array_interface__") else np.asarray(a)
                                     for a in arrays))}
    params = getattr(s, "params", {})
    return {"func": f"{func.__module__}.{func.__qualname__}", "params": _plain(params),
            "n_edges": int(s.n_edges), "files": _files(params, [])}


def graph_fingerprint(graph) -> dict:
    """What identifies a graph: its size, weight type and a hash of its sources.

    A generator's sources hash its parameters; a file's, local or an object
    behind a URL, its path, size, modification time (a store's ETag, version
    or time where it gives them) and a checksum of sampled byte ranges; the
    caller's arrays, their contents.
    """
    desc = {"n_vertices": int(graph.n_vertices), "n_edges": int(graph.n_edges),
            "weight_dtype": np.dtype(graph.weight_dtype).name,
            "sources": [_source(s) for s in graph.sources]}
    token = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]
    return {"name": graph.name, "n_vertices": desc["n_vertices"], "n_edges": desc["n_edges"],
            "weight_dtype": desc["weight_dtype"], "sources": token}


# ---------------------------------------------------------------------------
# the directory (client side)
# ---------------------------------------------------------------------------

class Checkpoint:
    """A checkpoint directory for one run: what it holds, and saving the next state.

    ``path`` is a local directory, or an fsspec URL (``s3://bucket/ck/run1``,
    ``gs://...``, ``abfs://...``) whose file system takes ``storage_options``;
    ``file://`` URLs are local directories.  ``graph`` and ``options`` (the
    engine options, a JSON-able mapping) make the fingerprint a saved state
    must match to be resumed.  ``resume=False`` discards what the directory
    holds and starts over.  The constructor only stores its arguments;
    :meth:`open` reads the directory.
    """

    def __init__(self, path, graph, options, resume=True, storage_options=None):
        path = urls.local_path(path)
        self.where = _Prefix(path, storage_options) if urls.is_url(path) else _Directory(path)
        self.path = self.where.path
        self.graph = graph_fingerprint(graph)
        self.options = _plain(dict(options))
        self.resume = resume
        self.saves = 0

    @property
    def manifest_path(self):
        return self.where.join(MANIFEST)

    def open(self) -> Manifest | None:
        """The saved manifest to go on from, or ``None`` (start from the beginning).

        Raises :class:`CheckpointMismatchError` when the directory holds the
        state of another graph or other engine options (unless ``resume=False``,
        which discards it), and a :class:`PermissionError` naming the
        checkpoint when it cannot be written.
        """
        self.where.prepare()
        saved = self._read()  # raises on a file that is not a manifest, resume or not
        self.where.remove_partial()
        if saved is None:
            return None
        if not self.resume:
            self.discard()
            return None
        what = []
        for part, mine in (("graph", self.graph), ("options", self.options)):
            theirs = saved[part]
            for k in sorted(set(mine) | set(theirs)):
                if k == "name" or theirs.get(k) == mine.get(k):
                    continue
                if k == "sources" and theirs.get("name") != mine.get("name"):
                    a, b = theirs.get("name"), mine.get("name")  # the names say more than the hashes
                else:
                    a, b = theirs.get(k), mine.get(k)
                what.append(f"{part} {k}: {a!r} there, {b!r} here")
        if what:
            raise CheckpointMismatchError(
                f"checkpoint {self.path!r} holds the state of another run ({'; '.join(what)}); "
                f"use another directory, or start over (resume=False, mst-dist run --no-resume)")
        saved = Manifest.from_json(saved, self.manifest_path)
        if not self.where.has_state(saved.state):
            raise CheckpointMismatchError(f"checkpoint {self.path!r}: its manifest names "
                                          f"{saved.state!r}, which is missing")
        self.saves = int(saved.saves)
        return saved

    def _read(self):
        try:
            saved = json.loads(self.where.read_manifest())
        except FileNotFoundError:
            return None
        except self.where.unreadable as e:  # never one of ours (written atomically): left alone
            raise CheckpointMismatchError(f"{str(self.manifest_path)!r} is not an mst-dist checkpoint manifest "
                                          f"({e}); give another checkpoint directory") from None
        if not (isinstance(saved, dict) and saved.get("format") == _FORMAT):
            raise CheckpointMismatchError(f"{str(self.manifest_path)!r} is not an mst-dist checkpoint manifest; "
                                          f"give another checkpoint directory")
        if saved.get("version") != _VERSION and self.resume:
            raise CheckpointMismatchError(
                f"checkpoint {self.path!r} was written by another version of mst-dist (format "
                f"{saved.get('version')!r}, this one reads {_VERSION}); start over with resume=False "
                f"(--no-resume)")
        return saved

    def state_dir(self, saved: Manifest):
        """The state directory a manifest names (a :class:`~mst_dist.io.urls.URL` with its options
        for a checkpoint on an object store: the workers read it)."""
        return self.where.join(saved.state)

    def saving(self, **where):
        """Context manager: a fresh directory for the next state, published with ``where`` on exit.

        ``where`` is what the manifest says of the state (the fields of
        :class:`Manifest` after ``time``: ``mode``, ``round``, ``components``, ...).  The body fills the
        directory (its path, or URL, is the value of the ``with``); on success the directory is
        committed into place, the manifest replaced, and the older states removed.
        """
        return _Saving(self, where)

    def _publish(self, name, where):
        manifest = Manifest(graph=self.graph, options=self.options, state=name, saves=self.saves,
                            time=time.time(), **where)
        self.where.write_manifest(json.dumps(manifest.to_json(), indent=1))
        self.where.remove_states(keep=name)

    def discard(self):
        """Remove the manifest, then every saved state (the directory stays)."""
        self.where.remove_manifest()
        self.where.remove_states(keep=None)
        self.where.remove_partial()

    def _remove_partial(self):
        """Remove what a run killed while saving left half-written (hidden temporary names)."""
        self.where.remove_partial()


class _Directory:
    """A checkpoint in a local (or shared) directory: renames are atomic."""

    unreadable = (OSError, ValueError)

    def __init__(self, path):
        self.path = os.path.abspath(os.fspath(path))

    def join(self, name):
        return os.path.join(self.path, name)

    def prepare(self):
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise NotADirectoryError(f"checkpoint {self.path!r} is not a directory")
        os.makedirs(self.path, exist_ok=True)
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise PermissionError(f"checkpoint directory {self.path!r} is not writable")

    def read_manifest(self):
        with open(self.join(MANIFEST), encoding="utf-8") as f:
            return f.read()

    def write_manifest(self, text):
        with atomic_path(self.join(MANIFEST)) as tmp:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)

    def has_state(self, name):
        return os.path.isdir(self.join(name))

    def state_dir(self, name):
        """Context manager: the hidden directory a state is written in, renamed into place on success."""
        return atomic_dir(self.join(name))

    def remove_states(self, keep):
        for old in glob.glob(os.path.join(self.path, "state-*")):
            if os.path.basename(old) != keep:
                shutil.rmtree(old, ignore_errors=True)

    def remove_manifest(self):
        try:
            os.unlink(self.join(MANIFEST))
        except FileNotFoundError:
            pass

    def remove_partial(self):
        for tmp in glob.glob(os.path.join(self.path, ".state-*.tmp")):
            shutil.rmtree(tmp, ignore_errors=True)
        for tmp in glob.glob(os.path.join(self.path, f".{MANIFEST}.*.tmp")):
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


class _Prefix:
    """A checkpoint under a URL prefix of an object store (through fsspec).

    A store has no rename of a prefix: a state is written under a hidden
    temporary prefix and its objects moved into place once all are written
    (:func:`~mst_dist.io.urls.atomic_url_dir`), the manifest written as a
    hidden object and moved onto ``manifest.json`` (one object, replaced
    whole), and the older states removed only then.  The manifest always
    names a state whose every object is there.  The listing cache of the
    file system is dropped before each look, since the workers write.
    """

    unreadable = (ValueError,)  # the store's own errors (network, access) are not a foreign manifest

    def __init__(self, path, storage_options):
        self.url = urls.URL(str(path).rstrip("/"), storage_options)
        self.path = str(self.url)
        self.fs, self.root = urls.filesystem(self.url)
        self.root = self.root.rstrip("/")

    def join(self, name):
        return urls.join(self.url, name)

    def _key(self, name):
        return f"{self.root}/{name}"

    def _names(self):
        """The names directly under the prefix (objects and sub-prefixes), hidden ones included."""
        self.fs.invalidate_cache(self.root)
        try:
            return [posixpath.basename(q.rstrip("/")) for q in self.fs.ls(self.root, detail=False)]
        except FileNotFoundError:
            return []

    def _rm(self, name, recursive=False):
        try:
            self.fs.rm(self._key(name), recursive=recursive)
        except FileNotFoundError:
            pass

    def prepare(self):
        urls.check_writable_prefix(self.url, "checkpoint")
        if self.fs.isfile(self.root):
            raise NotADirectoryError(f"checkpoint {self.path!r} is an object, not a prefix")

    def read_manifest(self):
        return self.fs.cat_file(self._key(MANIFEST)).decode("utf-8")

    def write_manifest(self, text):
        with urls.atomic_url_file(self.join(MANIFEST)) as tmp:
            self.fs.pipe_file(urls.filesystem(tmp)[1], text.encode("utf-8"))

    def has_state(self, name):
        self.fs.invalidate_cache(self.root)
        try:  # a prefix exists while an object is under it: a state is moved into place whole
            return bool(self.fs.ls(self._key(name), detail=False))
        except FileNotFoundError:
            return False

    def state_dir(self, name):
        return urls.atomic_url_dir(self.join(name))

    def remove_states(self, keep):
        for name in self._names():
            if fnmatch.fnmatchcase(name, "state-*") and name != keep:
                self._rm(name, recursive=True)
        self.fs.invalidate_cache(self.root)

    def remove_manifest(self):
        self._rm(MANIFEST)
        self.fs.invalidate_cache(self.root)

    def remove_partial(self):
        for name in self._names():
            if fnmatch.fnmatchcase(name, ".state-*.tmp"):
                self._rm(name, recursive=True)
            elif fnmatch.fnmatchcase(name, f".{MANIFEST}.*.tmp") or fnmatch.fnmatchcase(name, ".*.probe"):
                self._rm(name)
        self.fs.invalidate_cache(self.root)


class _Saving:
    def __init__(self, ck, where):
        self.ck = ck
        self.where = where

    def __enter__(self):
        self.ck.saves += 1
        self.name = f"state-{self.ck.saves:06d}"
        self.dir = self.ck.where.state_dir(self.name)
        return self.dir.__enter__()

    def __exit__(self, exc_type, exc, tb):
        if isinstance(self.ck.where, _Prefix):
            self.ck.where.fs.invalidate_cache()  # the workers wrote under the temporary prefix
        self.dir.__exit__(exc_type, exc, tb)
        if exc_type is None:
            self.ck._publish(self.name, self.where)
        return False


def record_dict(rec) -> dict | None:
    """A round's record as the manifest keeps it."""
    return None if rec is None else asdict(rec)


# ---------------------------------------------------------------------------
# worker-side functions
# ---------------------------------------------------------------------------

def compose_labels(labels, rmap):
    """Vertex -> component after one more round: ``labels`` (``(L, n)`` or ``None``) then ``rmap``."""
    M, n = rmap
    if labels is None:
        return RoundMap(np.asarray(M, dtype=np.int64), n)
    return RoundMap(host_kernels().compose_maps([labels[0], M]), n)


def merge_forest(*parts):
    """The forest edge ids of all ``parts`` (each ascending, ``None`` for none), ascending."""
    return host_kernels().forest_ids([p for p in parts if p is not None])


def _save(directory, name, a):
    with urls.open_binary(urls.join(directory, name), "wb") as f:
        np.save(f, a)


def _load(directory, name):
    """A saved array (``FileNotFoundError`` when absent)."""
    path = urls.join(directory, name)
    if not urls.is_url(path):
        return np.load(path)
    with urls.open_binary(path) as f:
        return np.load(f)


def write_state(directory, labels, forest, *rows):
    """Write a state's arrays into ``directory`` (a path, or a URL carrying its options): ``labels`` (a
    vertex map, as ``(L, n)`` or ``L``; ``None``: the identity), the forest ids, and (streaming) the forest
    rows, from any number of ``(edge_id, src, dst, weight)`` parts."""
    if labels is not None:
        L = labels[0] if isinstance(labels, tuple) else labels
        _save(directory, "labels.npy", _compact_labels(L))
    _save(directory, "forest.npy", np.asarray(forest, dtype=np.int64))
    if rows:
        cols = [np.concatenate([np.asarray(p[j]) for p in rows]) for j in range(4)]
        order = np.argsort(cols[0], kind="stable")
        for name, col in zip(_ROWS, cols):
            _save(directory, f"rows-{name}.npy", col[order])
    return True


def read_labels(directory, n_live=None):
    """A saved state's labels: a round map ``(L, n_live)``, or the vertex map ``L`` when ``n_live``
    is not given; ``None`` for the identity."""
    if urls.is_url(directory):
        try:
            L = _load(directory, "labels.npy")
        except FileNotFoundError:
            return None
    else:
        path = os.path.join(directory, "labels.npy")
        if not os.path.exists(path):
            return None
        L = np.load(path)
    L = L.astype(np.int64)
    return L if n_live is None else RoundMap(L, n_live)


def read_forest(directory):
    """A saved state's forest edge ids (ascending)."""
    return _load(directory, "forest.npy")


def _compact_labels(L):
    small = L.shape[0] == 0 or (L.min() >= np.iinfo(np.int32).min and L.max() <= np.iinfo(np.int32).max)
    return L.astype(np.int32) if small else L


def write_labels_part(directory, r, vl):
    """(partitioned) Write the labels of range ``r`` of vertices (a :class:`~mst_dist.engine.ranged.VertexLabels`)."""
    _save(directory, f"labels-{r}.npy", _compact_labels(np.asarray(vl.labels)))
    return True


def write_forest_part(directory, j, mapped):
    """(partitioned) Write the forest ids found so far of edge chunk ``j`` (``mapped``: its block and candidates)."""
    from mst_dist.engine.ranged import forest_of

    _save(directory, f"forest-{j}.npy", forest_of(mapped))
    return True


def read_labels_part(directory, r, lo, hi):
    """(partitioned) The saved labels of range ``r`` of vertices, ``[lo, hi)``, as the run keeps them."""
    from mst_dist.engine.ranged import VertexLabels

    L = _load(directory, f"labels-{r}.npy").astype(np.int64)
    if L.shape[0] != hi - lo:
        raise CheckpointMismatchError(f"labels-{r}.npy in {directory!r} holds {L.shape[0]} vertices, not the "
                                      f"{hi - lo} of vertices {lo}..{hi - 1}; start over (resume=False)")
    return VertexLabels(lo, hi, L)


def read_forest_part(directory, saved_bounds, lo, hi):
    """(partitioned) The saved forest ids in ``[lo, hi)`` (an edge chunk of this run), ascending, from the
    saved chunks' parts that overlap it (the chunks may be cut otherwise now)."""
    parts = []
    for j in _overlapping(saved_bounds, lo, hi):
        ids = _load(directory, f"forest-{j}.npy").astype(np.int64)
        parts.append(ids[(ids >= lo) & (ids < hi)])
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def _overlapping(saved_bounds, lo, hi):
    """The saved edge chunks (by ``saved_bounds``) holding edge ids of ``[lo, hi)``."""
    b = np.asarray(saved_bounds, np.int64)
    return [j for j in range(b.shape[0] - 1) if b[j] < hi and b[j + 1] > lo]


def write_chunk_part(directory, j, forest, *rows):
    """(spread streaming) Write edge chunk ``j``'s forest ids and forest rows, from the passes' parts
    (``forest``: the ids, ascending; ``rows``: :class:`~mst_dist.engine.passes.KeptRows`)."""
    from mst_dist.engine.passes import joined_rows

    _save(directory, f"forest-{j}.npy", np.asarray(forest, np.int64))
    for name, col in zip(_ROWS, joined_rows(*rows)):
        _save(directory, f"rows-{j}-{name}.npy", np.asarray(col))
    return True


def read_chunk_rows(directory, saved_bounds, lo, hi, n_vertices):
    """(spread streaming) The saved forest rows of edge ids ``[lo, hi)`` (an edge chunk of this run), from
    the saved chunks' parts that overlap it, as a pass keeps them."""
    parts = []
    for j in _overlapping(saved_bounds, lo, hi):
        cols = [_load(directory, f"rows-{j}-{name}.npy") for name in _ROWS]
        inside = (cols[0] >= lo) & (cols[0] < hi)
        parts.append([c[inside] for c in cols])
    if not parts:
        z = np.zeros(0, np.int64)
        return KeptRows(z, z.copy(), z.copy(), np.zeros(0), n_vertices)
    return KeptRows(*(np.concatenate([p[i] for p in parts]) for i in range(4)), n_vertices)


#: Saved row columns up to this size are read whole from an object store; larger ones by ranges.
WHOLE_READ_BYTES = 16 << 20


class _RemoteColumn:
    """A ``.npy`` column on an object store, read by byte ranges (what a memory map does locally)."""

    def __init__(self, path):
        self.fs, p = urls.filesystem(path)
        self.f = self.fs.open(p, "rb", cache_type="none")  # exact ranges: no read-ahead of whole blocks
        version = np.lib.format.read_magic(self.f)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) \
            else np.lib.format.read_array_header_2_0
        shape, fortran, self.dtype = read_header(self.f)
        self.n = int(shape[0])
        self.offset = self.f.tell()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()
        return False

    def nbytes(self):
        return self.n * self.dtype.itemsize

    def slice(self, a, b):
        if b <= a:
            return np.empty(0, self.dtype)
        self.f.seek(self.offset + a * self.dtype.itemsize)
        return np.frombuffer(self.f.read((b - a) * self.dtype.itemsize), dtype=self.dtype).copy()

    def searchsorted(self, value):
        """``numpy.searchsorted(column, value)`` (left) by a binary search of single-element reads."""
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            if self.slice(mid, mid + 1)[0] < value:
                lo = mid + 1
            else:
                hi = mid
        return lo


def read_rows(directory, lo, hi, n_vertices):
    """The saved forest rows of edge ids ``[lo, hi)``, as a streaming pass keeps them."""
    if urls.is_url(directory):
        return _read_remote_rows(directory, lo, hi, n_vertices)
    eid = np.load(os.path.join(directory, "rows-edge_id.npy"), mmap_mode="r")
    a, b = np.searchsorted(eid, lo), np.searchsorted(eid, hi)
    cols = [np.array(np.load(os.path.join(directory, f"rows-{n}.npy"), mmap_mode="r")[a:b]) for n in _ROWS]
    return KeptRows(*cols, n_vertices)


def _read_remote_rows(directory, lo, hi, n_vertices):
    with _RemoteColumn(urls.join(directory, "rows-edge_id.npy")) as eid:
        if eid.nbytes() <= WHOLE_READ_BYTES:  # one request beats a binary search of many
            ids = eid.slice(0, eid.n)
            a, b = int(np.searchsorted(ids, lo)), int(np.searchsorted(ids, hi))
        else:
            a, b = eid.searchsorted(lo), eid.searchsorted(hi)
        cols = [eid.slice(a, b)]
    for name in _ROWS[1:]:
        with _RemoteColumn(urls.join(directory, f"rows-{name}.npy")) as col:
            cols.append(col.slice(a, b))
    return KeptRows(*cols, n_vertices)

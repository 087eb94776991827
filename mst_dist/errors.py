"""Every error mst-dist raises on purpose, under one base class, :class:`MSTError`.

Each class also subclasses the builtin exception it refines, so a caller
may catch the package's errors as a family or as the builtin::

    try:
        result = mst_dist.minimum_spanning_forest(mst_dist.read("graph.txt"))
    except mst_dist.GraphFormatError as e:   # a bad file: e.path, e.line
        ...
    except mst_dist.MSTError:                # anything else mst-dist refused
        ...

- :class:`ConfigError` (a :class:`ValueError`): a setting, run config or
  flag is not valid;
- :class:`InvalidGraphError` (a :class:`ValueError`): the edges are not a
  valid graph (a bad vertex id, a NaN weight), and its subclass
  :class:`GraphFormatError`: a graph file cannot be read, and
  :class:`GraphTooLargeError`: a graph the cluster's memory cannot hold in
  the run's shape, refused before any work with ``Advice`` on shapes
  that fit;
- :class:`CheckpointMismatchError` (a :class:`ValueError`): a checkpoint
  directory holds another run's state;
- :class:`ClusterStalledError` (a :class:`RuntimeError`): the cluster cannot
  make progress on a run;
- :class:`GPUUnavailableError` (a :class:`RuntimeError`): the GPU backend
  is asked for where no GPU can run it;
- :class:`WorkerAddressError` (a :class:`ConnectionError`): a worker
  registered at an address the scheduler and the other workers cannot
  reach (loopback, on a scheduler of other hosts);
- :class:`SharedStorageError` (an :class:`OSError`): a path the run reads
  or writes is not the same on every worker (and the client).

Every error pickles with its attributes: one raised inside a Dask task on a
worker reaches the caller as the same class.  This module imports nothing of
the package, so every layer (the kernels included) may raise from it; the
modules that raised these classes first re-export them
(``from mst_dist.graph import InvalidGraphError`` still works).  The package
emits no warnings of its own (it logs), so there is no warning class here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["MSTError", "ConfigError", "InvalidGraphError", "GraphFormatError", "GraphTooLargeError",
           "CheckpointMismatchError", "ClusterStalledError", "GPUUnavailableError", "WorkerAddressError",
           "SharedStorageError", "ExchangeLostError"]


class MSTError(Exception):
    """Base class of every error mst-dist raises on purpose.

    Catch it to handle whatever mst-dist refused (a bad input, a bad setting,
    a cluster that cannot go on) apart from bugs and errors of other
    libraries.  Never raised itself: every error raised is one of its
    subclasses, each also a subclass of the builtin it refines.
    """


class ConfigError(MSTError, ValueError):
    """A setting, a run config or a command-line option that is not valid.

    Raised by the command line and the cluster set-up (``mst-dist run``,
    ``submit``, ``job-script``, :mod:`mst_dist.deploy`) and by the checks of
    a run's options.  The message names the key path and what it allows: fix
    that key in the YAML file, the ``DASK_MST__...`` environment variable or
    the flag, and run again.  The command line exits with status 2.

    Parameters
    ----------
    message : str
        What is wrong, naming the key and what is allowed.
    key : str, optional
        The key path (``"cluster.n_workers"``) or flag (``"--output"``) at fault.
    source : str, optional
        The file the value came from (a run config), when there is one.

    Attributes
    ----------
    key, source : str or None
        As given.
    """

    def __init__(self, message, key=None, source=None):
        super().__init__(message)
        self.key = key
        self.source = source


class InvalidGraphError(MSTError, ValueError):
    """Edges that are not a valid graph: names the offending edge (its global edge id) and what is wrong.

    Raised where the edges are checked (:class:`~mst_dist.Graph`, the
    workers' chunk checks of a run): a vertex id that is negative, not an
    integer or not below ``n_vertices``, a NaN or infinite weight, arrays of
    different lengths, more vertices than one worker can hold the state of.
    Fix the edge named (or pass the right ``n_vertices``); the command line
    exits with status 2.

    Parameters
    ----------
    message : str
        What is wrong and where.
    edge : int, optional
        The global id of the offending edge.
    source : str, optional
        Where the edge came from (a file), when known.

    Attributes
    ----------
    edge : int or None
    source : str or None
        As given.
    """

    def __init__(self, message, edge=None, source=None):
        super().__init__(message)
        self.edge = edge
        self.source = source


def _rebuild_format_error(reason, path, line, row_group, row, edge):
    """A :class:`GraphFormatError` from its attributes (how one is unpickled)."""
    return GraphFormatError(reason, path=path, line=line, row_group=row_group, row=row, edge=edge)


class GraphFormatError(InvalidGraphError):
    """A graph file that cannot be read: names the file, the line or row, and what was expected.

    Raised by :func:`mst_dist.read` and by the workers' load tasks of a run
    (the readers run there): a malformed line, a value that does not parse,
    a header that disagrees with the rows, a column of the wrong type.  Files
    of points (:func:`mst_dist.clustering.read_points`) raise it too: a 1-D
    array, a column that is not numeric, a NaN coordinate (``row`` within
    its Parquet row group).  Fix
    the file at the place named, or read it with the right ``format=`` and
    options.  A subclass of :class:`InvalidGraphError` (so a
    :class:`ValueError`); the command line exits with status 2.

    Parameters
    ----------
    reason : str
        What is wrong, without the location.
    path : str or os.PathLike, optional
        The file.
    line : int, optional
        1-based line (text formats).
    row_group, row : int, optional
        0-based row group and row (Parquet and binary formats; ``row``
        counts within the row group when there is one).
    edge : int, optional
        The global id of the offending edge, when known.

    Attributes
    ----------
    path, line, row_group, row, reason
        As given (``path`` as a string); ``edge`` and ``source`` (the path)
        as for :class:`InvalidGraphError`.

    Notes
    -----
    Pickles with its attributes, so an error raised in a task on a worker
    reaches the caller intact.
    """

    def __init__(self, reason, path=None, line=None, row_group=None, row=None, edge=None):
        self.reason = reason
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.row_group = row_group
        self.row = row
        where = []
        if line is not None:
            where.append(f"line {line}")
        if row_group is not None:
            where.append(f"row group {row_group}")
        if row is not None:
            where.append(f"row {row}")
        loc = ", ".join(where)
        head = self.path or ""
        if loc:
            head = f"{head}, {loc}" if head else loc
        super().__init__(f"{head}: {reason}" if head else reason, edge=edge, source=self.path)

    def __reduce__(self):
        return (_rebuild_format_error,
                (self.reason, self.path, self.line, self.row_group, self.row, self.edge))


def size_text(n):
    """``n`` bytes rounded up to whole MiB, as Dask parses sizes: ``"601MiB"``, ``"9GiB"``."""
    mib = -(-int(n) // 2**20)
    return f"{mib // 1024}GiB" if mib >= 1024 and mib % 1024 == 0 else f"{mib}MiB"


@dataclass(frozen=True)
class Advice:
    """A shape of run in which a refused graph fits: the call's keywords and the cluster to run it on.

    ``keywords``: ``(name, value)`` pairs of
    :func:`~mst_dist.minimum_spanning_forest` (``vertex_partition``);
    ``cluster``: ``(name, value)`` pairs of a local cluster's settings, as
    :func:`~mst_dist.deploy.embedded` and ``LocalCluster`` take them
    (``n_workers``, ``threads_per_worker``, ``processes``, ``memory_limit``:
    each worker's, in bytes).  The command line turns both into its flags.
    """

    reason: str             #: what changes, in words
    keywords: tuple = ()    #: ``(name, value)`` keywords of the call
    cluster: tuple = ()     #: ``(name, value)`` settings of the cluster

    def describe(self) -> str:
        """The advice in words, naming the keywords and the cluster's settings."""
        parts = [f"{k}={v!r}" for k, v in self.keywords]
        settings = [f"{k}={size_text(v)!r}" if k == "memory_limit" else f"{k}={v!r}" for k, v in self.cluster]
        if settings:
            parts.append(f"workers with {', '.join(settings)}")
        return f"{self.reason} ({'; '.join(parts)})" if parts else self.reason


class GraphTooLargeError(InvalidGraphError):
    """A graph that the cluster's memory cannot hold in the run's shape, refused before any work.

    The message says what would not fit where, and ends with the shapes that
    fit, each an ``Advice`` in ``advice``: fewer threads per worker,
    the per-vertex state spread over more worker processes
    (``vertex_partition="always"``), more memory per worker.  The command
    line prints each as a command that runs.  A subclass of
    :class:`InvalidGraphError`; the command line exits with status 2.

    Attributes
    ----------
    advice : tuple of Advice
        Shapes in which the graph fits, by the engine's own checks.
    """

    def __init__(self, message, source=None, advice=()):
        super().__init__(message, source=source)
        self.advice = tuple(advice)

    def with_advice(self, advice):
        """The same refusal, its message ending with ``advice``."""
        if not advice:
            return self
        text = "; or ".join(a.describe() for a in advice)
        return GraphTooLargeError(f"{self}. It fits: {text}", source=self.source, advice=advice)

    def __reduce__(self):
        return (type(self), (str(self), self.source, self.advice))


class CheckpointMismatchError(MSTError, ValueError):
    """A checkpoint directory holds the state of another run (another graph or other options).

    Raised when a run resumes from ``checkpoint=`` (``--checkpoint``) and the
    directory's manifest was written for a different graph or different
    options; nothing in it is changed.  Give the run a fresh directory, run
    with ``resume=False`` (``--no-resume``) to start over there, or run with
    the graph and options of the checkpoint.  The command line exits with
    status 2.
    """


class ClusterStalledError(MSTError, RuntimeError):
    """The cluster cannot make progress on the run: no worker left, all paused, or a task that kills workers.

    Raised by a run's watchdog once no worker has been able to make progress
    for ``mst.stall-timeout`` seconds, and at once when a task killed every
    worker that ran it (Dask's ``KilledWorker``, most often a worker over its
    memory limit).  The message ends with what to change: more memory per
    worker, more partitions, or streaming the edges.  The command line exits
    with status 1.

    Parameters
    ----------
    message : str
        What happened and what to change.
    cause : {"no-workers", "paused", "killed-worker"}
        Why the run stopped.
    waited : float, optional
        Seconds without progress (``None`` for ``"killed-worker"``).
    key : str, optional
        The task that killed its workers, else ``None``.

    Attributes
    ----------
    cause, waited, key
        As given.
    """

    def __init__(self, message, cause, waited=None, key=None):
        super().__init__(message)
        self.cause = cause
        self.waited = waited
        self.key = key

    def __reduce__(self):
        return (type(self), (str(self), self.cause, self.waited, self.key))


class ExchangeLostError(MSTError, RuntimeError):
    """Outputs of an exchange between vertex ranges were lost with a worker before every task took its part.

    The parts of an exchange move worker to worker, outside Dask's task
    graph, so Dask cannot recompute them; a run that meets this starts
    again (from its checkpoint where it has one, else from the start) up
    to ``mst.exchange-attempts`` times in all, and raises this error only
    once those are spent.  The command line exits with status 1.

    Parameters
    ----------
    message : str
        What was lost.
    keys : list of str, optional
        The outputs no worker held.

    Attributes
    ----------
    keys
        As given.
    """

    def __init__(self, message, keys=()):
        super().__init__(message)
        self.keys = list(keys)

    def __reduce__(self):
        return (type(self), (str(self), self.keys))


class GPUUnavailableError(MSTError, RuntimeError):
    """``backend="gpu"`` was asked for where no GPU can run the kernels.

    Raised before any work when CuPy is not installed, no CUDA device is
    visible, or no worker of the cluster advertises ``resources={"GPU": 1}``;
    the message says which, and what to install
    (``pip install 'mst-dist[gpu]'``).  Install the extra, start GPU workers,
    or run with ``backend="auto"`` or ``"cpu"``.  The command line exits with
    status 2.
    """


class WorkerAddressError(MSTError, ConnectionError):
    """A worker registered at an address that the scheduler and the other workers cannot reach.

    Raised before any work when a worker's address is loopback
    (``tcp://127.0.0.1:...``) on a scheduler that is not, and the scheduler
    cannot tell that every worker runs on its own host: a worker started on
    another host with ``host: 127.0.0.1`` joins the scheduler, but nothing
    can connect back to it, and a run would wait for it until it times out.
    Start each such worker on the address the others reach it at
    (``dask worker ... --interface eth0`` or ``--host ADDRESS``; in a spec
    file, ``interface:`` or ``host:`` instead of ``host: 127.0.0.1``).  The
    command line exits with status 1.

    Parameters
    ----------
    message : str
        Which workers, and how to start them.
    workers : sequence of str
        The addresses of the workers at fault.
    scheduler : str, optional
        The scheduler's address.

    Attributes
    ----------
    workers, scheduler
        As given (``workers`` a tuple).
    """

    def __init__(self, message, workers=(), scheduler=None):
        super().__init__(message)
        self.workers = tuple(workers)
        self.scheduler = scheduler

    def __reduce__(self):
        return (type(self), (str(self), self.workers, self.scheduler))


class SharedStorageError(MSTError, OSError):
    """A path of the run that some workers (or the client) do not see as the others do.

    Raised before any work: by :func:`mst_dist.read` when an input file is
    missing on some workers (the workers read it), and by a run's
    ``checkpoint``, ``output`` or ``labels_output`` on a local path when a
    probe file written there is not read back alike by the client and every
    worker (they write the parts and the client commits them).  The message
    names the workers.  Give a path on a filesystem every worker and the
    client mount (NFS, Lustre, ...), or an object-store URL (``s3://...``,
    ``gs://...`` with ``storage_options``).  The command line exits with
    status 2.

    Parameters
    ----------
    message : str
        What is not shared, with whom, and what to give instead.
    path : str, optional
        The path at fault.
    workers : sequence of str
        The addresses of the workers that do not share it.

    Attributes
    ----------
    path, workers
        As given (``workers`` a tuple).
    """

    def __init__(self, message, path=None, workers=()):
        super().__init__(message)
        self.path = path
        self.workers = tuple(workers)

    def __reduce__(self):
        return (type(self), (str(self), self.path, self.workers))

"""What the caller decided about a run, validated once: :class:`RunSpec`.

Both front doors build one: :func:`mst_dist.minimum_spanning_forest` from its
keywords, the command line from a run config.  The engine only reads it.
Settings layer as everywhere in the package (a keyword beats ``dask.config``,
which beats the packaged ``mst-dist.yaml``): :meth:`RunSpec.build` resolves
them; the constructor checks values that are already resolved.

>>> spec = RunSpec.build(partitions=4, split_every=2)
>>> spec.partitions, spec.split_every, spec.backend
(4, 2, 'auto')
>>> RunSpec.build(backend="tpu")
Traceback (most recent call last):
...
mst_dist.errors.ConfigError: backend: unknown backend 'tpu'; choose one of auto, cpu, gpu
"""
from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from mst_dist import config
from mst_dist.config import BACKENDS, STREAM_MODES, ConfigError

__all__ = ["RunSpec", "VERTEX_PARTITION_MODES", "LOCAL_CONTRACTION_MODES"]

#: Whether a run's per-vertex state is cut into ranges over the workers (``vertex_partition=``).
VERTEX_PARTITION_MODES = ("auto", "always", "never")
#: Whether a partitioned run first contracts each chunk's interior vertices (``local_contraction=``).
LOCAL_CONTRACTION_MODES = ("auto", "always", "never")


def _fail(name, message):
    raise ConfigError(f"{name}: {message}", key=name)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _path(name, value):
    if value is None:
        return None
    try:
        path = os.fspath(value)
    except TypeError:
        _fail(name, f"expected a path (str or os.PathLike), got {type(value).__name__} {value!r}")
    from mst_dist.io.urls import check_path

    return check_path(path, name)  # a malformed URL is never taken for a local directory


@dataclass(frozen=True)
class RunSpec:
    """Everything the caller decided about one run (see :func:`mst_dist.minimum_spanning_forest`).

    Attributes
    ----------
    partitions : int or None
        Number of edge chunks; ``None``: chosen by the run's plan.
    backend : {"auto", "cpu", "gpu"}
    stream : {"auto", "always", "never"}
        Whether the edges are streamed from their source in passes.
    local_finish : "auto" or int
        At most this many edges left: one task finishes on one worker.
    split_every : int
        Fan-in of the merge phase's tree reduction (at least 2).
    light_factor, min_degree : float
        The light-edge filter of the single-task solve and of the first round.
    throughput : mapping or None
        Relative edges/second of a worker of each kind (``{"gpu": 40, "cpu": 1}``).
    output, labels_output : str or None
        Directories the workers write the forest / the labels to.
    checkpoint : str or None
        Directory (or fsspec URL) of the run's checkpoints; ``resume``: go on from what it holds.
    vertex_partition : {"auto", "always", "never"}
        Whether the per-vertex state is cut into ranges spread over the workers.
    vertex_ranges : int or None
        Ranges of component ids of a partitioned run (``None``: chosen by the run).
    vertex_base : "auto" or int
        A partitioned run finishes with the centralised rounds at most this many components.
    local_contraction : {"auto", "always", "never"}
        Whether a partitioned run first contracts the vertices only one chunk
        touches, in that chunk ("auto": where at least an eighth of the
        vertices are such).
    slice_edges : "auto" or int
        Most edges one pass of a streaming run keeps ("auto": what a quarter
        of the workers' memory holds).
    progress : callable or None
        Called with each progress event (not part of the run's identity).
    publish : bool
        Send run, phase and round records to the scheduler's event topic.
    gather : bool
        Bring the forest and the labels to the client (``False``: keep them
        on the workers, see :class:`~mst_dist.engine.runs.kept.KeptForest`).
    storage_options : mapping or None
        Options of the file system of ``output``, ``labels_output`` and
        ``checkpoint`` when they are fsspec URLs (not part of the identity).
    """

    partitions: int | None = None
    backend: str = "auto"
    stream: str = "auto"
    local_finish: int | str = "auto"
    split_every: int = 8
    light_factor: float = 1.5
    min_degree: float = 3.0
    throughput: Mapping[str, float] | None = None
    output: str | None = None
    labels_output: str | None = None
    checkpoint: str | None = None
    resume: bool = True
    vertex_partition: str = "auto"
    vertex_ranges: int | None = None
    vertex_base: int | str = "auto"
    local_contraction: str = "auto"
    slice_edges: int | str = "auto"
    progress: Callable[[dict], Any] | None = field(default=None, compare=False, repr=False)
    publish: bool = True
    gather: bool = True
    storage_options: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.backend not in BACKENDS:
            _fail("backend", f"unknown backend {self.backend!r}; choose one of {', '.join(BACKENDS)}")
        if self.stream not in STREAM_MODES:
            _fail("stream", f"unknown stream mode {self.stream!r}; choose one of {', '.join(STREAM_MODES)}")
        p = self.partitions
        if p is not None and not (_is_int(p) and p >= 1):
            _fail("partitions", f"must be a positive integer (the number of edge chunks) or None for "
                                f"automatic, got {p!r}")
        lf = self.local_finish
        if lf != "auto" and not (_is_int(lf) and lf >= 0):
            _fail("local_finish", f"must be 'auto' or a number of edges >= 0, got {lf!r}")
        if not (_is_int(self.split_every) and self.split_every >= 2):
            _fail("split_every", f"must be an integer >= 2 (the merge tree's fan-in), got {self.split_every!r}")
        for name in ("light_factor", "min_degree"):
            value = getattr(self, name)
            if not (_is_real(value) and value >= 0):
                _fail(name, f"must be a number >= 0, got {value!r}")
        if self.vertex_partition not in VERTEX_PARTITION_MODES:
            _fail("vertex_partition", f"unknown mode {self.vertex_partition!r}; choose one of "
                                      f"{', '.join(VERTEX_PARTITION_MODES)}")
        vr = self.vertex_ranges
        if vr is not None and not (_is_int(vr) and vr >= 1):
            _fail("vertex_ranges", f"must be a positive integer or None for automatic, got {vr!r}")
        if self.local_contraction not in LOCAL_CONTRACTION_MODES:
            _fail("local_contraction", f"unknown mode {self.local_contraction!r}; choose one of "
                                       f"{', '.join(LOCAL_CONTRACTION_MODES)}")
        vb = self.vertex_base
        if vb != "auto" and not (_is_int(vb) and vb >= 0):
            _fail("vertex_base", f"must be 'auto' or a number of components >= 0, got {vb!r}")
        se = self.slice_edges
        if se != "auto" and not (_is_int(se) and se >= 1):
            _fail("slice_edges", f"must be 'auto' or a number of edges >= 1, got {se!r}")
        if self.throughput is not None:
            tp = self.throughput
            if not isinstance(tp, Mapping) or not tp or not all(
                    isinstance(k, str) and _is_real(v) and v > 0 for k, v in tp.items()):
                _fail("throughput", f"must map worker kinds to positive numbers ({{'gpu': 40, 'cpu': 1}}), "
                                    f"got {tp!r}")
        if self.progress is not None and not callable(self.progress):
            _fail("progress", f"must be callable, got {type(self.progress).__name__}")
        for name in ("output", "labels_output", "checkpoint"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                object.__setattr__(self, name, _path(name, value))
        if not isinstance(self.resume, bool):
            object.__setattr__(self, "resume", bool(self.resume))
        if not isinstance(self.gather, bool):
            _fail("gather", f"must be True (the forest comes to the client) or False (it stays on the "
                            f"workers), got {self.gather!r}")
        if self.storage_options is not None and not isinstance(self.storage_options, Mapping):
            _fail("storage_options", f"must be a dict of the file system's options (as dask.dataframe takes "
                                     f"them), got {type(self.storage_options).__name__}")
        if not self.gather and self.output is not None:
            _fail("gather", "gather=False keeps the forest on the workers and output= has them write it: "
                            "give one of them")

    @classmethod
    def build(cls, *, partitions=None, backend="auto", stream=None, local_finish=None, split_every=None,
              light_factor=None, min_degree=None, throughput=None, output=None, labels_output=None,
              checkpoint=None, resume=True, progress=None, publish=True, gather=True,
              storage_options=None, vertex_partition=None, vertex_ranges=None, vertex_base=None,
              local_contraction=None, slice_edges=None) -> "RunSpec":
        """A spec from keywords, ``None`` meaning the setting's value (``dask.config``, then the defaults).

        Raises :class:`~mst_dist.config.ConfigError` (a ``ValueError``)
        naming the first bad option.
        """
        partitions = config.get("partitions", partitions, None)
        if partitions == "auto":
            partitions = None
        if isinstance(partitions, numbers.Real) and not isinstance(partitions, bool) \
                and not _is_int(partitions) and float(partitions).is_integer():
            partitions = int(partitions)  # 16.0 from a YAML file or an environment variable
        return cls(partitions=partitions, backend=backend,
                   stream=config.get("stream", stream, "auto"),
                   local_finish=config.get("local-finish", local_finish, "auto"),
                   split_every=config.get("split-every", split_every, 8),
                   light_factor=config.get("filter.light-factor", light_factor, 1.5),
                   min_degree=config.get("filter.min-degree", min_degree, 3.0),
                   throughput=throughput, output=_path("output", output),
                   labels_output=_path("labels_output", labels_output),
                   checkpoint=_path("checkpoint", checkpoint), resume=bool(resume), progress=progress,
                   publish=publish, gather=gather,
                   vertex_partition=config.get("vertex-partition", vertex_partition, "auto"),
                   vertex_ranges=config.get("vertex-ranges", vertex_ranges, None),
                   vertex_base=config.get("vertex-base", vertex_base, "auto"),
                   local_contraction=config.get("local-contraction", local_contraction, "auto"),
                   slice_edges=config.get("slice-edges", slice_edges, "auto"),
                   storage_options=None if storage_options is None else dict(storage_options)
                   if isinstance(storage_options, Mapping) else storage_options)

    def replace(self, **changes) -> "RunSpec":
        """A copy with ``changes`` (validated again)."""
        return replace(self, **changes)

    def identity(self) -> dict:
        """The options a checkpoint must have been written with to be resumed by this run.

        The ones that decide how the graph is cut and solved; not where the
        results go, nor how progress is shown.
        """
        return {"partitions": self.partitions, "local_finish": self.local_finish,
                "split_every": self.split_every, "light_factor": self.light_factor,
                "min_degree": self.min_degree, "backend": self.backend, "stream": self.stream,
                "slice_edges": self.slice_edges}

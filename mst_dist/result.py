"""The result of a run and its per-round statistics (one source of truth)."""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import numpy as np

from mst_dist.phases import ROUND_PHASES, plain

__all__ = ["MSFResult", "PassStats", "RoundStats", "RunStats", "PHASES"]

#: The five phases of a Borůvka round, in order (:class:`mst_dist.phases.Phase` members).
PHASES = ROUND_PHASES


@dataclass
class RoundStats:
    """What one round did.

    ``mode`` is ``"distributed"`` for a round run as Dask tasks over all edge
    chunks, ``"local"`` for the rounds of the final single-task solve (one
    entry per round of that solve), ``"filter"`` for a light-edge pass's
    boundary, ``"partitioned"`` for a round whose per-vertex state is cut
    into ranges, ``"local-contraction"`` for a partitioned run's first step
    (each chunk contracting the vertices only it touches).  ``phase_seconds``
    holds kernel time per phase (:class:`~mst_dist.phases.Phase`);
    ``wall_seconds`` is the round as seen by the driver, so
    ``wall - sum(phases)`` is the scheduling overhead.  ``bytes_moved``
    counts the bytes of task results consumed by tasks of the next phase
    (candidates, round maps, gathered chunks): what crosses between workers
    when the tasks sit on different workers; ``phase_bytes`` splits them by
    the phase of the tasks that received them (on a cluster of several
    workers).  ``h2d_bytes`` and ``d2h_bytes`` count what GPU workers copied
    between host and device memory in the round (chunks uploaded, round maps
    in; candidates and results out); ``gpu_edges`` how many of
    ``edges_before`` a GPU worker processed.  A local round charges its
    task's copies to its first round.  ``ranges``: how many ranges a
    partitioned round (or local contraction) cut its component ids into
    (0 for the other modes).
    """

    round: int
    mode: str
    components_before: int
    components_after: int
    edges_before: int
    edges_after: int
    forest_edges: int
    phase_seconds: dict = field(default_factory=dict)
    wall_seconds: float = 0.0
    bytes_moved: int = 0
    tasks: int = 0
    h2d_bytes: int = 0
    d2h_bytes: int = 0
    gpu_edges: int = 0
    phase_bytes: dict = field(default_factory=dict)
    ranges: int = 0

    def to_dict(self):
        return plain(asdict(self))


@dataclass
class PassStats:
    """One pass of a streaming run over the edge source (see :mod:`mst_dist.engine.passes`).

    ``name``: ``"sample"`` (a sample of some chunks, for the thresholds) or
    ``"pass <k>"``; ``chunks``: chunks read; ``edges_read``/``bytes_read``:
    raw rows and their bytes; ``edges_kept``: edges of the pass's slice of
    the order still joining two components (what the pass's solve gets);
    ``waves``: groups of chunks read one after the other (a spread streaming
    pass reads in waves, each holding at most ``mst.slice-edges`` edges of
    its slice until the edges inside a component are dropped).
    """

    name: str
    chunks: int
    edges_read: int
    bytes_read: int
    edges_kept: int
    seconds: float
    waves: int = 1

    def to_dict(self):
        return asdict(self)


@dataclass
class RunStats:
    """Per-round statistics plus the run's own timings."""

    rounds: list = field(default_factory=list)
    setup_seconds: float = 0.0      # chunking, scattering/loading and preparing the edge chunks
    solve_seconds: float = 0.0      # the rounds
    finish_seconds: float = 0.0     # labels and the forest's rows
    total_seconds: float = 0.0
    partitions: int = 0
    workers: int = 0
    threads: int = 0
    backend: str = "cpu"            # the kernels that ran: "cpu", "gpu" or "mixed"
    placement: dict = field(default_factory=dict)  # mixed clusters: worker -> kind, throughput, chunks, edges
    kind: str = ""                  # the kind of run: resident, streaming, partitioned, spread-streaming
    streamed: bool = False          # edges streamed from their source in passes (never all resident)
    vertex_partition: dict | None = None  # per-vertex state cut into ranges: {ranges, base_components}
    passes: list = field(default_factory=list)     # streaming: one PassStats per pass
    resumed_from: int | None = None  # resumed from a checkpoint: rounds done before (None: not resumed)

    @property
    def n_rounds(self):
        return len(self.rounds)

    def phase_totals(self):
        """Seconds per phase, summed over rounds."""
        tot = {p: 0.0 for p in PHASES}
        for r in self.rounds:
            for k, s in r.phase_seconds.items():
                tot[k] = tot.get(k, 0.0) + s
        return tot

    @property
    def overhead_seconds(self):
        """Wall time of the rounds not spent in kernels (scheduling, transfers)."""
        return sum(r.wall_seconds - sum(r.phase_seconds.values()) for r in self.rounds)

    @property
    def bytes_moved(self):
        return sum(r.bytes_moved for r in self.rounds)

    @property
    def h2d_bytes(self):
        return sum(r.h2d_bytes for r in self.rounds)

    @property
    def d2h_bytes(self):
        return sum(r.d2h_bytes for r in self.rounds)

    def to_dict(self):
        d = {k: v for k, v in asdict(self).items() if k != "rounds"}
        d["rounds"] = [r.to_dict() for r in self.rounds]
        d["phase_totals"] = self.phase_totals()
        d["overhead_seconds"] = self.overhead_seconds
        d["bytes_moved"] = self.bytes_moved
        d["h2d_bytes"] = self.h2d_bytes
        d["d2h_bytes"] = self.d2h_bytes
        return d


#: The converters behind ``MSFResult.to_<name>``, by name: filled by :mod:`mst_dist.io.interop`
#: when it is imported (``import mst_dist`` imports it), as ``graph.CONVERTERS`` is for
#: ``Graph.from_<name>``; this module never imports the I/O layer.
EXPORTERS: dict = {}


def _exporter(name):
    try:
        return EXPORTERS[name]
    except KeyError:
        raise ImportError(f"MSFResult.to_{name} is registered by mst_dist.io.interop: import it "
                          f"(import mst_dist does)") from None


@dataclass
class MSFResult:
    """A minimum spanning forest.

    Attributes
    ----------
    edge_ids : int64 array, ascending
        Ids (input positions) of the forest's edges.
    src, dst, weight : arrays
        Those edges' rows as given (weight keeps the input dtype).
    total_weight : int or float
        Sum of the forest's weights; a Python ``int`` (exact) for integer
        weights.
    n_components : int
        Connected components, isolated vertices included.
    labels : int64 array of length n_vertices
        Component of each vertex, numbered ``0..n_components-1`` in order of
        each component's smallest vertex.
    stats : RunStats
        Per-round, per-phase statistics.
    output, labels_output : str or None
        Where the workers wrote the forest's rows (and the labels) as a
        Parquet dataset, for a run given ``output=`` (``labels_output=``);
        ``edge_ids``, ``src``, ``dst`` and ``weight`` (``labels``) are then
        ``None``: read them with :func:`mst_dist.read_forest`.
    forest_edges : int
        Number of forest edges (also when they are on disk only).
    nodes : list or None
        The input graph's vertex labels (its ``meta["nodes"]``, kept by a
        networkx conversion whose nodes are not ``0 .. n-1``): vertex ``i``
        is ``nodes[i]``.  :meth:`to_networkx` names the vertices by them.
    kept : KeptForest or None
        For a run given ``gather=False``: the forest's parts and the labels
        held on the workers (:class:`~mst_dist.engine.runs.kept.KeptForest`).
        :meth:`to_dask_dataframe` gives them as Dask collections,
        :meth:`gather` brings them here; reading ``edge_ids``, ``src``,
        ``dst``, ``weight`` or ``labels`` gathers them first (logged).
    """

    edge_ids: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    total_weight: object
    n_components: int
    labels: np.ndarray
    n_vertices: int
    n_edges: int
    stats: RunStats
    output: str | None = None
    labels_output: str | None = None
    forest_edges: int | None = None
    nodes: list | None = None
    kept: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.kept is not None:  # read on first use (__getattr__): gathered from the workers
            for name in _KEPT_FIELDS:
                if name == "labels" and self.kept.labels is None:
                    continue  # written to labels_output: None, as for any such run
                self.__dict__.pop(name, None)

    def __getattr__(self, name):
        # only called for a missing attribute: a field of a kept result not gathered yet
        kept = self.__dict__.get("kept")
        if name not in _KEPT_FIELDS or kept is None:
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")
        logging.getLogger("mst_dist").info(
            "MSFResult.%s: gathering the %s kept on the workers (gather=False) to the client", name,
            "labels" if name == "labels" else f"forest ({self.forest_edges:,} edges)")
        self._gather_fields(labels=name == "labels")
        return self.__dict__[name]

    def _gather_fields(self, labels):
        kept = self.__dict__["kept"]
        if labels:
            self.__dict__["labels"] = kept.gather_labels()
        else:
            self.__dict__.update(zip(("edge_ids", "src", "dst", "weight"), kept.gather_forest()))

    def gather(self) -> "MSFResult":
        """This result with the forest and labels here: a kept result's gathered, ``self`` otherwise.

        For a run given ``gather=False`` the rows are brought from the
        workers (as with ``gather=True``, but ``src`` and ``dst`` as int64)
        and the futures released; a result of another run is returned as is.
        """
        kept = self.__dict__.get("kept")
        if kept is None:
            return self
        for name in _KEPT_FIELDS:
            if name not in self.__dict__:
                self._gather_fields(labels=name == "labels")
        self.kept = None
        kept.release()
        return self

    def to_dask_dataframe(self, which="forest"):
        """The forest's edges (``which="forest"``) or the labels (``"labels"``) as a ``dask.dataframe.DataFrame``.

        The forest has columns ``edge_id, src, dst, weight``, rows in edge id
        order; the labels ``vertex, component`` (indexed by vertex).  For a
        run given ``gather=False`` the partitions are the parts kept on the
        workers (one per edge chunk; nothing moves until computed, on the
        run's cluster); otherwise the arrays here, in partitions of up to
        a million rows.
        """
        if which not in ("forest", "labels"):
            raise ValueError(f"to_dask_dataframe: which must be 'forest' or 'labels', got {which!r}")
        kept = self.__dict__.get("kept")
        if kept is not None and (which == "forest" or "labels" not in self.__dict__):
            return kept.forest_frame() if which == "forest" else kept.labels_frame()
        import dask.dataframe as dd
        import pandas as pd

        if which == "forest":
            if self.edge_ids is None:
                raise ValueError(f"the forest was written to {self.output!r}, not kept: read it with "
                                 f"dask.dataframe.read_parquet({self.output!r})")
            df = pd.DataFrame({"edge_id": np.asarray(self.edge_ids, np.int64), "src": np.asarray(self.src),
                               "dst": np.asarray(self.dst), "weight": np.asarray(self.weight)})
        else:
            if self.labels is None:
                raise ValueError(f"the labels were written to {self.labels_output!r}, not kept: read them with "
                                 f"dask.dataframe.read_parquet({self.labels_output!r})")
            df = pd.DataFrame({"vertex": np.arange(self.n_vertices, dtype=np.int64),
                               "component": np.asarray(self.labels, np.int64)})
        return dd.from_pandas(df, chunksize=1 << 20, sort=False)

    @property
    def n_forest_edges(self):
        if self.__dict__.get("kept") is not None or self.edge_ids is None:
            return int(self.forest_edges)
        return int(self.edge_ids.shape[0])

    def summary(self):
        """A small dict for reports and the command line."""
        return {
            "vertices": self.n_vertices,
            "edges": self.n_edges,
            "forest_edges": self.n_forest_edges,
            "total_weight": self.total_weight,
            "components": self.n_components,
            "rounds": self.stats.n_rounds,
            "seconds": self.stats.total_seconds,
        }

    def to_networkx(self, *, nodes=None):
        """The forest as a ``networkx.Graph``; see :func:`mst_dist.io.interop.to_networkx`.

        ``nodes``: the vertex labels (default: :attr:`nodes`, the input
        graph's own labels, else ``0 .. n-1``).
        """
        return _exporter("networkx")(self, nodes=nodes)

    def to_scipy(self, *, symmetric=False, format="csr"):
        """The forest as a SciPy sparse array; see :func:`mst_dist.io.interop.to_scipy`."""
        return _exporter("scipy")(self, symmetric=symmetric, format=format)

    def to_pandas(self):
        """The forest as a pandas DataFrame; see :func:`mst_dist.io.interop.to_pandas`."""
        return _exporter("pandas")(self)

    def __repr__(self):
        return (f"MSFResult(forest_edges={self.n_forest_edges:,}, total_weight={self.total_weight}, "
                f"n_components={self.n_components:,}, rounds={self.stats.n_rounds})")

    # -- clustering (mst_dist.clustering) ------------------------------------------------------

    def linkage(self, *, join_distance=np.inf):
        """The single-linkage hierarchy, SciPy's ``(n - 1) x 4`` linkage matrix; see :func:`mst_dist.clustering.linkage`."""
        from mst_dist.clustering.linkage import linkage

        return linkage(self, join_distance=join_distance)

    def clusters(self, threshold=None, n_clusters=None, *, join_distance=np.inf):
        """Flat clusters (``fcluster``'s ``distance`` or ``maxclust`` cut); see :func:`mst_dist.clustering.clusters`."""
        from mst_dist.clustering.flat import clusters

        return clusters(self, threshold, n_clusters, join_distance=join_distance)

    def levels(self, *, levels_output=None, storage_options=None):
        """The components after each Borůvka round (affinity clustering); see :func:`mst_dist.clustering.levels`."""
        from mst_dist.clustering.levels import levels

        return levels(self, levels_output=levels_output, storage_options=storage_options)


#: The fields of a result kept on the workers (``gather=False``) that are gathered on first use.
_KEPT_FIELDS = ("edge_ids", "src", "dst", "weight", "labels")


def exact_total(weight):
    """Sum of weights, exact for integers (Python int), float64 sum otherwise (``inf`` past its range)."""
    weight = np.asarray(weight)
    if weight.size == 0:
        return 0 if weight.dtype.kind in "iub" else 0.0
    if weight.dtype.kind in "iub":
        if weight.dtype.kind == "b":
            return int(np.count_nonzero(weight))
        hi = max(abs(int(weight.max())), abs(int(weight.min())))
        if weight.size * hi < 2**63:  # no int64 partial sum can overflow
            return int(weight.sum(dtype=np.int64))
        # large int64/uint64 values: exact in Python ints, summed in int64-safe blocks
        return int(sum(int(x) for x in weight.tolist()))
    with np.errstate(over="ignore"):
        return float(np.sum(weight, dtype=np.float64))

"""The public entry point: :func:`minimum_spanning_forest`."""
from __future__ import annotations

import logging

from mst_dist.graph import as_graph
from mst_dist.result import MSFResult

logger = logging.getLogger("mst_dist")



def _conf(name, value, default):
    """Keyword > dask.config (environment, YAML files) > packaged defaults."""
    from mst_dist import config

    return config.get(name, value, default)


def minimum_spanning_forest(graph, client=None, *, partitions=None, backend="auto",
                            local_finish=None, split_every=None, light_factor=None,
                            min_degree=None, progress=None, throughput=None, stream=None, output=None,
                            labels_output=None, checkpoint=None, resume=True, gather=True,
                            storage_options=None, vertex_partition=None) -> MSFResult:
    """Minimum spanning forest by distributed Borůvka.

    The forest is the unique one under the strict order ``(weight, edge id)``
    (edge id = input position): exactly the edges Kruskal picks over a stable
    sort by weight.  Every backend, partition count and cluster shape gives
    the same edge ids.

    Parameters
    ----------
    graph : Graph, networkx graph or SciPy sparse matrix
        From :meth:`Graph.from_arrays`, :func:`mst_dist.generate` or a reader;
        a networkx graph, a SciPy sparse adjacency array or matrix, or a
        pandas DataFrame of edges is converted first (see
        :func:`mst_dist.graph.as_graph`; a networkx graph's node labels are
        kept in the result's ``nodes``).
    client : distributed.Client or "embedded", optional
        The cluster to run on, local or remote; left as it was.  ``None``
        (default): the current client where there is one -- inside a task,
        the cluster the task runs on (through ``distributed.worker_client``:
        the task secedes while the run's tasks execute); else the default
        client (the last ``Client`` made) -- as ``dask.compute`` does.
        Without one, or with ``"embedded"``, an in-process ``LocalCluster``
        (threads, no dashboard) started by the first such call and reused
        by the later ones until the process exits
        (``mst.embedded.reuse: false``: one per call, shut down after it;
        ``mst.embedded.dashboard: true``: with the dashboard).  Kernels that
        Numba's cache lacks (the first run after install) are compiled first,
        as a ``compile`` progress event.  An asynchronous client
        (``Client(asynchronous=True)``): the call returns an awaitable of the
        result; cancelling the awaiting task cancels the run.
    partitions : int, optional
        Number of edge chunks (default: one per worker thread, at least one per
        16M edges).
    backend : {"auto", "cpu", "gpu"}
        ``"cpu"``: the Numba kernels on every worker.  ``"gpu"``: the CuPy
        kernels, with the edge chunks on the GPU workers (those advertising
        ``resources={"GPU": 1}``); :class:`GPUUnavailableError` when there
        are none, or, without ``client``, when this machine has no usable
        CUDA GPU.  ``"auto"`` (default): CuPy on the GPU workers and Numba on
        the others, chunks dealt out by each worker's measured throughput;
        without GPU workers, the CPU kernels (logged).  Same edge ids for all.
    local_finish : "auto" or int, optional
        Once at most this many edges are left, one task finishes the forest on
        one worker with the parallel solver.  ``"auto"``: on a one-worker
        cluster, as soon as the graph fits in a quarter of its memory (the
        chunks are all there already); on more workers, below
        ``max(2M, m / (4 * workers))`` edges.  ``0`` runs every round as
        distributed tasks.
    split_every : int, optional
        Fan-in of the merge phase's tree reduction (default 8).
    light_factor, min_degree : float, optional
        Filtering in the single-task solve: while edges exceed ``min_degree``
        per component, first solve the ``light_factor * n`` lightest ones.
    progress : callable, optional
        Called with a dict (``round``, ``phase``, ``components``, ``edges``,
        ``elapsed``) as the run goes.
    throughput : dict, optional
        On a cluster of CPU and GPU workers, the relative edges/second of one
        worker of each kind (``{"gpu": 40, "cpu": 1}``) to deal out chunks
        by; default: the ``mst.placement.throughput`` setting, else measured
        once per worker by a short calibration task.
    stream : {"auto", "always", "never"}, optional
        ``"always"``: stream the edges from their source in passes (a sample,
        then slices of the ``(weight, edge id)`` order, each solved as it
        comes, with the components found so far), keeping only O(n) state,
        the chunks in flight and one slice; ``"never"``: keep every chunk
        resident for the whole run; ``"auto"`` (default, or the
        ``mst.stream`` setting): stream when the graph would not fit in the
        workers' memory.  The same edge ids either way.
    output : str or os.PathLike, optional
        A directory: the workers write the forest's rows there as a Parquet
        dataset (``part.00000.parquet``, ... with columns ``edge_id, src, dst,
        weight``, rows and parts in edge id order), atomically: the directory
        appears only once every part is written, replacing what was there.
        The client then never holds the forest: the result's ``edge_ids``,
        ``src``, ``dst`` and ``weight`` are ``None`` (``forest_edges`` and
        ``total_weight`` are set); :func:`mst_dist.read_forest` reads it back.
        The workers and the client must share the file system.
    labels_output : str or os.PathLike, optional
        Likewise for the component labels (columns ``vertex, component``);
        the result's ``labels`` are then ``None``.
    checkpoint : str or os.PathLike, optional
        A directory (created if missing) where the run saves, after each
        finished round (resident, partitioned) or pass (streaming), what it
        needs to go on: the component of every vertex so far, the forest edge
        ids so far (a partitioned run, streamed or not, writes both in parts,
        per range of vertices and per edge chunk, from where they are), for a
        streaming run the pass reached and the forest's rows (see
        :mod:`mst_dist.engine.checkpoint`).  Each save is atomic.  A run
        given a directory holding the state of the same graph and options
        goes on from there, and returns the same edge ids as a run never
        interrupted.  The state is removed when the run ends.  The workers
        write the arrays: the directory must be on storage the workers and the
        client share, or a URL of an object store (``s3://bucket/ck/run1``,
        ``gs://...``, ``abfs://...``; ``file://`` is a local directory)
        opened with ``storage_options``, where a state is committed only
        once all of it is written.
    resume : bool
        With ``checkpoint``: go on from the state saved there (default); a
        state of another graph or other options is then a
        :class:`~mst_dist.engine.checkpoint.CheckpointMismatchError` (a
        ``ValueError``).  ``False``: discard it and start over.
    vertex_partition : {"auto", "always", "never"}, optional
        Where the per-vertex state (component ids, round maps, labels)
        lives.  ``"always"``: cut into ranges of component ids, each owned
        by a task on some worker, so no task holds an array over all
        vertices and adding workers raises the vertex ceiling (chunks ask
        the owners of the ids they touch; once the components left fit one
        worker, the centralised rounds finish).  ``"never"``: whole on one
        worker.  ``"auto"`` (default, or the ``mst.vertex-partition``
        setting): cut, on a cluster of several workers, when it would not
        fit comfortably on one worker (a streamed graph: when its vertex
        map would not fit the worker that solves the slices).  Streamed and
        cut at once, each pass asks the ranges' owners for its slice's
        components (no ``checkpoint`` then).  The same
        edge ids either way.

    gather : bool
        ``True`` (default): the forest's rows and the labels come back to
        the client.  ``False``: they stay on the workers, one part per edge
        chunk; :meth:`MSFResult.to_dask_dataframe` gives them as Dask
        collections, :meth:`MSFResult.gather` brings them here, and reading
        ``edge_ids``, ``src``, ``dst``, ``weight`` or ``labels`` gathers them
        (logged).  Counts, the total weight and the stats are always here.
    storage_options : dict, optional
        Options of the file system of ``output``, ``labels_output`` and
        ``checkpoint`` when they are URLs (``s3://bucket/forest``,
        ``gs://...``, ``abfs://...``), as ``dask.dataframe`` takes them
        (credentials, endpoint: see the fsspec implementation's options).

    Returns
    -------
    MSFResult

    Raises
    ------
    ValueError
        Bad input (naming the edge), or an unknown backend.
    GraphTooLargeError
        A :class:`ValueError`: the graph would not fit the cluster's memory
        (what Dask's memory manager leaves each worker) in this run's shape,
        refused before any work; its ``advice`` names shapes that fit
        (``vertex_partition="always"`` on more worker processes, fewer
        threads, more memory per worker).
    OSError
        ``output``, ``labels_output`` or ``checkpoint`` cannot be written
        (checked before the run starts).
    ClusterStalledError
        No worker could make progress for ``mst.stall-timeout`` seconds
        (none left, or all paused by their memory manager), or a task killed
        more workers than ``distributed.scheduler.allowed-failures``: the
        message names the cause and what to change (memory limit, partitions,
        streaming).

    Examples
    --------
    >>> import mst_dist
    >>> g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])
    >>> mst_dist.minimum_spanning_forest(g).edge_ids.tolist()
    [1, 2, 3]
    """
    from mst_dist.engine.spec import RunSpec

    graph = as_graph(graph)
    spec = RunSpec.build(partitions=partitions, backend=backend, stream=stream, local_finish=local_finish,
                         split_every=split_every, light_factor=light_factor, min_degree=min_degree,
                         throughput=throughput, output=output, labels_output=labels_output,
                         checkpoint=checkpoint, resume=resume, progress=progress, gather=gather,
                         storage_options=storage_options, vertex_partition=vertex_partition)
    return solve(graph, client, spec)


def solve(graph, client, spec) -> MSFResult:
    """The forest of ``graph`` (a :class:`~mst_dist.graph.Graph`) on ``client`` as ``spec`` says.

    The one path of every front door: :func:`minimum_spanning_forest` builds
    the :class:`~mst_dist.engine.spec.RunSpec` from its keywords, the command
    line from a run config.  ``client`` follows the one rule of
    :mod:`mst_dist.deploy.current`: ``None`` is the current client (inside a
    task, the worker's, the task seceded), else the embedded cluster;
    ``"embedded"`` forces the embedded one.  With an asynchronous client the
    return value is an awaitable of the result (:mod:`mst_dist.deploy.aio`).
    """
    from mst_dist.io.writers import check_writable

    from mst_dist.deploy.current import choose, using

    for what in ("output", "labels_output"):
        if getattr(spec, what) is not None:  # before any work, not after it
            check_writable(getattr(spec, what), what, getattr(spec, "storage_options", None))
    if spec.checkpoint is not None:
        from mst_dist.io import urls

        if urls.is_url(spec.checkpoint):  # a local directory is created and checked when the run opens it
            urls.check_writable_prefix(spec.checkpoint, "checkpoint", spec.storage_options)
    choice = choose(client)
    if choice.asynchronous:  # the caller awaits the result (mst_dist.deploy.aio)
        from mst_dist.deploy.aio import solve_async

        return solve_async(solve, graph, choice.client, spec)
    if choice.kind != "embedded":
        from mst_dist.deploy.local import in_process_latency

        # inside a task: the worker's client, the task seceded; an in-process cluster: its
        # streams batched as the embedded one's while the run waits on them
        with using(choice) as c, in_process_latency(c):
            _check_reach(c, spec)
            return _run_resilient(graph, c, spec)
    return _solve_embedded(graph, spec)


def _check_reach(client, spec):
    """Before any work: every worker reachable, and the run's local directories shared by all.

    A worker at a loopback address on a scheduler of other hosts is a
    :class:`~mst_dist.WorkerAddressError`; a ``checkpoint``, ``output`` or
    ``labels_output`` directory that a probe file shows some workers do not
    share with the client is a :class:`~mst_dist.SharedStorageError`
    (:mod:`mst_dist.io.reach`).
    """
    from mst_dist.io import reach

    reach.check_worker_addresses(client)
    for what in ("output", "labels_output"):  # written beside the target, then moved onto it
        reach.check_shared_directory(client, getattr(spec, what), what, beside=True)
    reach.check_shared_directory(client, spec.checkpoint, "checkpoint")


def _solve_embedded(graph, spec) -> MSFResult:
    """``solve`` on the embedded in-process cluster (shared, or one for this call)."""
    from mst_dist.deploy.local import embedded, local_gpu, shared_client

    gpu = local_gpu(spec.backend)
    if spec.backend != "gpu":
        from mst_dist.engine.warmup import ensure_compiled

        # the workers are threads of this process: compile what they lack here, as a step
        ensure_compiled(graph.weight_dtype, progress=spec.progress)
    if _conf("embedded.reuse", None, True):
        shared = shared_client(gpu=gpu)
        with shared.as_current():  # the run's current client, never the process's default one
            return _run_resilient(graph, shared, spec)
    dashboard = _conf("cluster.dashboard-address", None, None) if _conf("embedded.dashboard", None, False) \
        else None
    with embedded(gpu=gpu, dashboard_address=dashboard, silence_logs=logging.ERROR, set_as_default=False) as c:
        with c.as_current():
            return _run_resilient(graph, c, spec)


def _run_resilient(graph, client, spec, retries=None):
    """Run, and start again when data without lineage was lost with a worker.

    Chunks made by tasks (generators, readers) are recomputed by Dask itself
    from their lineage when a worker dies.  Chunks scattered from the
    caller's arrays have no lineage: if their worker dies, the run starts
    again from the arrays (same result: the forest is unique).
    """
    from distributed.client import FutureCancelledError

    from mst_dist.deploy.aio import abandoned
    from mst_dist.engine.runs import execute

    retries = _conf("retries", retries, 2)
    for attempt in range(retries + 1):
        try:
            result = execute(graph, client, spec)
            result.nodes = graph.meta.get("nodes")
            return result
        except FutureCancelledError as e:  # a stalled cluster (ClusterStalledError) is not retried
            if attempt == retries or abandoned(client):  # a cancelled asynchronous run is not started again
                raise
            logger.warning("lost data with a worker (%s); starting the run again (%d/%d)",
                           e, attempt + 1, retries)
            try:
                client.wait_for_workers(1, timeout=60)
            except Exception:  # pragma: no cover
                pass


# ---------------------------------------------------------------------------
# Maximum spanning forest: the minimum one of the negated weights
# ---------------------------------------------------------------------------

def _negated_rows(start, stop, *, source, first=0):
    """Rows ``start:stop`` of ``source`` with their weights negated (on the worker that loads them).

    ``first`` is the source's first edge id; a weight whose negation int64
    cannot hold is an :class:`~mst_dist.errors.InvalidGraphError` naming its
    edge, raised as the rows load, before they reach any round.
    """
    s, d, w = source.load(start, stop)
    _check_negatable(w, first + start, getattr(source, "name", "source"))
    if w.dtype.kind == "u":
        w = w.astype("int64")
    return s, d, -w


def _check_negatable(w, first, where=None):
    """Refuse an integer weight whose negation int64 cannot hold (``-2**63``, a uint64 above ``2**63 - 1``);
    ``first`` is the edge id of ``w[0]``."""
    import numpy as np

    from mst_dist.errors import InvalidGraphError

    if w.dtype.itemsize < 8 or w.dtype.kind not in "iu" or not w.shape[0]:
        return
    if w.dtype.kind == "u":  # array methods only: the caller's device arrays are checked where they are
        beyond = w > np.uint64(2**63 - 1)
    else:
        beyond = w == np.iinfo(np.int64).min
    if bool(beyond.any()):
        at = int(beyond.argmax())
        edge = first + at
        of = f" of {where}" if where else ""
        raise InvalidGraphError(f"edge {edge}{of}: weight {int(w[at])} has no negation in int64, which the "
                                f"maximum spanning forest needs; give float64 weights", edge=edge)


def _negated(graph):
    """``graph`` with every weight negated: arrays negated here, other sources where they load."""
    import numpy as np

    from mst_dist.graph import ArraySource, FunctionSource, Graph

    dtype = np.dtype(graph.weight_dtype)
    if dtype.kind == "u":
        dtype = np.dtype(np.int64)
    sources = []
    offset = 0
    for s in graph.sources:
        if isinstance(s, ArraySource):
            w = s.weight
            _check_negatable(w, offset)
            if w.dtype.kind == "u":
                w = w.astype(np.int64)
            sources.append(ArraySource(s.src, s.dst, -w))
        else:
            sources.append(FunctionSource(_negated_rows, {"source": s, "first": offset}, s.n_edges,
                                          name=f"negated {getattr(s, 'name', 'source')}",
                                          splittable=getattr(s, "splittable", True)))
        offset += s.n_edges
    return Graph(n_vertices=graph.n_vertices, sources=sources, weight_dtype=dtype,
                 validated=graph.validated, name=graph.name, meta=dict(graph.meta))


def maximum_spanning_forest(graph, client=None, **options) -> MSFResult:
    """Maximum spanning forest by distributed Borůvka: the minimum one of the negated weights.

    The forest is the unique one under the strict order ``(-weight, edge
    id)``: the heaviest edges first and, among equal weights, the one given
    first (the same tie rule as :func:`~mst_dist.minimum_spanning_forest`, with the
    weight order reversed): exactly the edges Kruskal picks over a stable
    sort by decreasing weight.  This is the forest of Chow and Liu's
    dependence trees (weights: mutual information) and of networkx's
    ``maximum_spanning_tree``.

    Parameters
    ----------
    graph, client, **options
        As for :func:`~mst_dist.minimum_spanning_forest`, but ``output`` (the workers
        would write the negated weights): write the result with
        :func:`mst_dist.write_forest` instead.

    Returns
    -------
    MSFResult
        The forest's rows with their weights as given (``total_weight`` is
        their sum, the largest of any spanning forest).

    Raises
    ------
    InvalidGraphError
        An integer weight whose negation int64 cannot hold (``-2**63``, or
        a uint64 above ``2**63 - 1``).

    Examples
    --------
    >>> import mst_dist
    >>> g = mst_dist.Graph.from_arrays([0, 1, 2, 0], [1, 2, 0, 3], [4, 1, 2, 7])
    >>> res = mst_dist.maximum_spanning_forest(g)
    >>> res.edge_ids.tolist(), res.total_weight
    ([0, 2, 3], 13)
    """
    if options.get("output") is not None:
        raise ValueError("maximum_spanning_forest: output= would have the workers write the negated "
                         "weights; write the result with mst_dist.write_forest(result, path) instead")
    if options.get("gather") is False:
        raise ValueError("maximum_spanning_forest: gather=False would keep the negated weights on the "
                         "workers; use minimum_spanning_forest on weights negated by the caller instead")
    graph = as_graph(graph)
    return _unnegated(minimum_spanning_forest(_negated(graph), client, **options), graph)


def _unnegated(result, graph):
    """The forest of the negated ``graph`` with its weights as ``graph`` gives them."""
    import numpy as np

    from mst_dist.result import exact_total

    if result.weight is not None:
        w = -np.asarray(result.weight)
        dtype = np.dtype(graph.weight_dtype)
        result.weight = w.astype(dtype) if dtype != w.dtype else w
        result.total_weight = exact_total(result.weight)
    return result

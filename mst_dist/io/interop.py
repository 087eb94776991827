"""Conversions between mst-dist and networkx, SciPy, pandas and Dask DataFrames.

Into a :class:`~mst_dist.graph.Graph`: :func:`from_networkx`,
:func:`from_scipy`, :func:`from_pandas` (in memory, validated like
:meth:`Graph.from_arrays`) and :func:`from_dask_dataframe` (lazy: one source
per partition, each loaded by a task on a worker).  They are also
``Graph.from_networkx`` and so on: this module registers them in
:data:`mst_dist.graph.CONVERTERS` when it is imported, so the import goes one
way (this module imports the graph, never the reverse).

Out of an :class:`~mst_dist.result.MSFResult` (also ``result.to_*``, registered in
:data:`mst_dist.result.EXPORTERS` the same way):
:func:`to_networkx`, :func:`to_scipy`, :func:`to_pandas`.

Each optional library is imported inside the function that needs it; a
missing one raises an ``ImportError`` naming the package to install.
"""
from __future__ import annotations

import numpy as np

from mst_dist.environment import optional_import
from mst_dist.result import EXPORTERS
from mst_dist.graph import CONVERTERS, FunctionSource, Graph, InvalidGraphError, check_edges
from mst_dist.io.tasks import current_client, seceded

__all__ = ["from_networkx", "from_scipy", "from_pandas", "from_dask_dataframe",
           "to_networkx", "to_scipy", "to_pandas"]


# ---------------------------------------------------------------------------
# networkx
# ---------------------------------------------------------------------------

def from_networkx(G, weight="weight", default=1, *, nodelist=None, name=None):
    """A graph from a networkx ``Graph`` or ``MultiGraph``.

    Parameters
    ----------
    G : networkx.Graph or networkx.MultiGraph
        Undirected.  A directed graph is refused (convert it with
        ``G.to_undirected()`` first, which decides what to do with antiparallel
        arcs).
    weight : str, optional
        Edge attribute holding the weight (default ``"weight"``).
    default : int or float, optional
        Weight of an edge without that attribute (default 1, as networkx).
    nodelist : list, optional
        Vertex order: vertex ``i`` is ``nodelist[i]`` (default ``list(G)``).
        Must hold every node of ``G`` once.

    Edge ids follow ``G.edges(...)`` order (insertion order; parallel edges of
    a multigraph by key).  When the nodes are not exactly ``0 .. n-1`` in
    order, they are renumbered and ``graph.meta["nodes"]`` holds the labels;
    a result computed from the graph keeps them (``result.nodes``), so
    ``result.to_networkx()`` names the vertices by them.

    Examples
    --------
    >>> import networkx as nx, mst_dist
    >>> G = nx.Graph([("a", "b", {"weight": 3}), ("b", "c", {"weight": 1}), ("a", "c", {"weight": 2})])
    >>> g = mst_dist.Graph.from_networkx(G)
    >>> g.n_vertices, g.n_edges, g.meta["nodes"]
    (3, 3, ['a', 'b', 'c'])
    >>> res = mst_dist.minimum_spanning_forest(g)
    >>> sorted(res.to_networkx().edges(data="weight"))
    [('a', 'c', 2), ('b', 'c', 1)]
    """
    optional_import("networkx")
    if G.is_directed():
        raise InvalidGraphError("a directed networkx graph; mst-dist's graphs are undirected: "
                                "pass G.to_undirected() (or an undirected copy you build)")
    nodes = list(G) if nodelist is None else list(nodelist)
    n = len(nodes)
    identity = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v == i
                   for i, v in enumerate(nodes))
    index = None if identity else {v: i for i, v in enumerate(nodes)}
    if index is not None and len(index) != n:
        raise InvalidGraphError("nodelist holds a node twice")
    if nodelist is not None and (len(set(G)) != n or any(v not in G for v in nodes)):
        raise InvalidGraphError("nodelist must hold every node of G exactly once")
    m = G.number_of_edges()
    src = np.empty(m, np.int64)
    dst = np.empty(m, np.int64)
    ws = []
    for i, (u, v, w) in enumerate(G.edges(data=weight, default=default)):
        if index is None:
            src[i], dst[i] = u, v
        else:
            src[i], dst[i] = index[u], index[v]
        ws.append(w)
    try:
        w = np.asarray(ws) if ws else np.zeros(0, np.int64)
    except (TypeError, ValueError) as e:
        raise InvalidGraphError(f"edge weights ({weight!r}) must be numbers: {e}") from None
    if w.dtype == object or w.dtype.kind not in "iubf":
        k = next((i for i, x in enumerate(ws)
                  if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating))),
                 0)
        raise InvalidGraphError(f"edge {k} has weight {ws[k]!r} ({weight!r}); weights must be "
                                f"integers or floats", edge=k)
    g = Graph.from_arrays(src, dst, w, n_vertices=n, name=name or f"networkx({G.__class__.__name__})")
    if index is not None:
        g.meta["nodes"] = nodes
    return g


def to_networkx(result, *, nodes=None):
    """The forest as a ``networkx.Graph``: every vertex, the forest's edges.

    Parameters
    ----------
    result : MSFResult
        A result holding its forest (not one written to ``output=``).
    nodes : sequence, optional
        Vertex ``i`` is ``nodes[i]``.  Default: the input graph's own labels
        (``result.nodes``, the ``meta["nodes"]`` of a graph converted from
        networkx), else the vertex ids ``0 .. n-1``.

    Edges carry ``weight`` and ``edge_id`` (the input position) attributes.

    Examples
    --------
    >>> import networkx as nx, mst_dist
    >>> G = nx.Graph([("a", "b", {"weight": 3}), ("b", "c", {"weight": 1}), ("a", "c", {"weight": 2})])
    >>> res = mst_dist.minimum_spanning_forest(G)
    >>> sorted(res.to_networkx().edges(data="weight"))
    [('a', 'c', 2), ('b', 'c', 1)]
    """
    nx = optional_import("networkx")
    if result.edge_ids is None:
        raise ValueError(f"the forest was written to {result.output!r}, not kept in the result: "
                         f"read it with mst_dist.read_forest({result.output!r})")
    n = int(result.n_vertices)
    if nodes is None:
        nodes = getattr(result, "nodes", None)
    if nodes is not None and len(nodes) != n:
        raise ValueError(f"nodes has {len(nodes)} labels for {n} vertices")
    T = nx.Graph()
    T.add_nodes_from(range(n) if nodes is None else nodes)
    edges = zip(np.asarray(result.src).tolist(), np.asarray(result.dst).tolist(),
                np.asarray(result.weight).tolist(), np.asarray(result.edge_ids).tolist())
    if nodes is None:
        T.add_edges_from((u, v, {"weight": w, "edge_id": e}) for u, v, w, e in edges)
    else:
        T.add_edges_from((nodes[u], nodes[v], {"weight": w, "edge_id": e}) for u, v, w, e in edges)
    return T


# ---------------------------------------------------------------------------
# SciPy
# ---------------------------------------------------------------------------

def _is_symmetric(A, keep_zeros):
    A = A.tocsr()
    if (A != A.T).nnz:
        return False
    if keep_zeros:
        P = A.copy()
        P.data = np.ones_like(P.data, dtype=np.int8)
        if (P != P.T).nnz:
            return False
    return True


def from_scipy(A, *, keep_zeros=False, symmetric="auto", name=None):
    """A graph from a SciPy sparse adjacency matrix (any sparse format).

    Parameters
    ----------
    A : scipy.sparse matrix or array, shape ``(n, n)``
        Entry ``A[i, j]`` is an edge ``(i, j)`` of weight ``A[i, j]``.
    keep_zeros : bool, optional
        Stored (explicit) zeros are edges of weight 0 when ``True``; by
        default they are dropped, as SciPy's ``csgraph`` does (which cannot
        tell a zero-weight edge from no edge).
    symmetric : {"auto", True, False}, optional
        ``True``: ``A`` holds each undirected edge twice (``A[i, j]`` and
        ``A[j, i]``); only the upper triangle ``i <= j`` is read, so each edge
        is one edge.  ``False``: every stored entry is an edge (an undirected
        graph stored both ways then has two parallel edges per edge, harmless
        for the forest).  ``"auto"``: ``True`` when ``A`` equals its transpose.

    Edge ids follow the stored order of ``A.tocoo()``: row-major for CSR
    (the usual case), column-major for CSC, as stored for COO.  Duplicate
    entries of a COO or non-canonical CSR matrix are parallel edges, not summed.
    Diagonal entries are self-loops (never in the forest).

    Examples
    --------
    >>> import scipy.sparse as sp, mst_dist
    >>> A = sp.coo_array(([3, 3, 0, 0], ([0, 1, 0, 2], [1, 0, 2, 0])), shape=(3, 3)).tocsr()
    >>> A.nnz                      # the zeros at (0, 2) and (2, 0) are stored
    4
    >>> mst_dist.Graph.from_scipy(A).to_arrays()
    (array([0]), array([1]), array([3]))
    >>> mst_dist.Graph.from_scipy(A, keep_zeros=True).to_arrays()
    (array([0, 0]), array([1, 2]), array([3, 0]))
    """
    sp = optional_import("scipy.sparse")
    if not sp.issparse(A):
        raise TypeError(f"from_scipy takes a scipy.sparse matrix or array, got {type(A).__name__}; "
                        f"for dense arrays use scipy.sparse.csr_array(a) (zeros are then no edge)")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InvalidGraphError(f"an adjacency matrix must be square, got shape {A.shape}")
    if A.dtype.kind not in "iubf":
        raise InvalidGraphError(f"matrix dtype {A.dtype}; weights must be integers or floats")
    if symmetric not in ("auto", True, False):
        raise ValueError(f"symmetric must be 'auto', True or False, got {symmetric!r}")
    if symmetric == "auto":
        symmetric = _is_symmetric(A, keep_zeros)
    C = A.tocoo()
    r = np.asarray(C.row, dtype=np.int64)
    c = np.asarray(C.col, dtype=np.int64)
    w = np.asarray(C.data)
    keep = None
    if not keep_zeros:
        keep = w != 0
    if symmetric:
        up = r <= c
        keep = up if keep is None else keep & up
    if keep is not None and not keep.all():
        r, c, w = r[keep], c[keep], w[keep]
    if w.dtype.kind == "b":
        w = w.astype(np.int64)
    return Graph.from_arrays(r, c, w, n_vertices=A.shape[0], name=name or "scipy")


def to_scipy(result, *, symmetric=False, format="csr"):
    """The forest as an ``n x n`` SciPy sparse array.

    ``symmetric=False``: entry ``[src, dst]`` per forest edge; ``True``: also
    ``[dst, src]``.  Zero-weight forest edges stay as stored zeros (test with
    ``A.nnz``/the sparsity structure, not the values).  ``format``: any SciPy
    sparse format name (``"csr"``, ``"csc"``, ``"coo"``).
    """
    sp = optional_import("scipy.sparse")
    n = int(result.n_vertices)
    s = np.asarray(result.src, dtype=np.int64)
    d = np.asarray(result.dst, dtype=np.int64)
    w = np.asarray(result.weight)
    if symmetric:
        s, d, w = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([w, w])
    A = sp.coo_array((w, (s, d)), shape=(n, n))
    return A.asformat(format)


# ---------------------------------------------------------------------------
# pandas and Dask DataFrames
# ---------------------------------------------------------------------------

def _columns(columns, src, dst, weight, explicit_weight):
    missing = [c for c in (src, dst) if c not in columns]
    if weight is not None and weight not in columns and explicit_weight:
        missing.append(weight)
    if missing:
        raise InvalidGraphError(f"no column(s) {', '.join(map(repr, missing))}; the frame has "
                                f"{', '.join(map(str, columns))} (name them with src=, dst=, weight=)")
    return weight if weight is not None and weight in columns else None


_DEFAULT = object()


def from_pandas(df, src="src", dst="dst", weight=_DEFAULT, *, n_vertices=None, name=None):
    """A graph from a pandas DataFrame with columns ``src``, ``dst`` and optionally ``weight``.

    Column names by keyword; ``weight=None`` (or no ``weight`` column) gives
    weight 1.  Edge ids are row positions.  The columns' NumPy arrays are used
    as they are (no copy for numeric columns without nulls); validated like
    :meth:`Graph.from_arrays`.
    """
    optional_import("pandas")
    explicit = weight is not _DEFAULT
    weight = "weight" if weight is _DEFAULT else weight
    wcol = _columns(df.columns, src, dst, weight, explicit)
    cols = []
    for c in (src, dst) + ((wcol,) if wcol is not None else ()):
        s = df[c]
        if s.isna().any():
            k = int(np.argmax(s.isna().to_numpy()))
            raise InvalidGraphError(f"column {c!r} has a missing value at row {k}", edge=k)
        cols.append(s.to_numpy())
    w = cols[2] if wcol is not None else None
    return Graph.from_arrays(cols[0], cols[1], w, n_vertices=n_vertices, name=name or "pandas")


def _partition_stats(df, src, dst, weight, index):
    """Rows and largest id of one partition (a task on a worker); validates its rows."""
    s = df[src].to_numpy()
    d = df[dst].to_numpy()
    w = df[weight].to_numpy() if weight is not None else None
    if w is not None and w.dtype.kind == "b":
        w = w.astype(np.int64)
    maxid, m = check_edges(s, d, w, -1, offset=0, where=f" (a row of partition {index})")
    return m, maxid


def _partition_rows(start, stop, *, dsk, key, src, dst, weight, n, weight_float, offset):
    """Rows ``[start, stop)`` of one partition (a source's row function).

    Computes the partition from its own culled task graph with the
    synchronous scheduler, inside the load task.
    """
    from dask.local import get_sync

    df = get_sync(dsk, key)
    part = df.iloc[start:stop]
    s = part[src].to_numpy().astype(np.int64, copy=False)
    d = part[dst].to_numpy().astype(np.int64, copy=False)
    if weight is None:
        w = np.ones(len(part), np.int64)
    else:
        w = part[weight].to_numpy()
        if w.dtype.kind == "b":
            w = w.astype(np.int64)
        if w.dtype == np.uint64 and not weight_float and w.shape[0] and w.max() > np.uint64(2**63 - 1):
            at = int(np.argmax(w > np.uint64(2**63 - 1)))
            raise InvalidGraphError(f"edge {offset + start + at} of a DataFrame partition: weight {int(w[at])} "
                                    f"does not fit in int64; give float64 weights", edge=offset + start + at)
        w = w.astype(np.float64 if weight_float else np.int64, copy=False)
    check_edges(s, d, w, n, offset=offset + start, where=" of a DataFrame partition")
    return s, d, w


def from_dask_dataframe(ddf, src="src", dst="dst", weight=_DEFAULT, *, n_vertices=None,
                        client=None, name=None):
    """A lazy graph from a Dask DataFrame: one source per partition.

    Nothing of the frame is materialised on the client.  One pass of small
    tasks (on ``client``, else the current ``distributed`` client, else Dask's
    default scheduler) finds each partition's row count and largest id and
    validates its rows; then each source holds only its partition's own task
    graph (culled), and the engine's load task computes the partition on its
    worker (synchronous scheduler, in the task).  So the partition's inputs
    are read twice (stats, then load) and, like any lazy input, a partition
    whose graph holds a shuffle is computed twice: persist such a frame first.

    Edge ids: partition order, then row order.  Column names and weights as in
    :func:`from_pandas`; weights are int64 for integer columns, float64 for
    floating ones.  Partitions are kept whole (one chunk each, at least): the
    frame's partitioning is the chunking.
    """
    optional_import("dask.dataframe", package="dask[dataframe]")
    import dask

    explicit = weight is not _DEFAULT
    weight = "weight" if weight is _DEFAULT else weight
    wcol = _columns(ddf.columns, src, dst, weight, explicit)
    meta = ddf._meta
    for c in (src, dst):
        if meta[c].dtype.kind not in "iu":
            raise InvalidGraphError(f"column {c!r} has dtype {meta[c].dtype}; vertex ids must be "
                                    f"integers")
    weight_float = False
    if wcol is not None:
        kind = meta[wcol].dtype.kind
        if kind not in "iubf":
            raise InvalidGraphError(f"column {wcol!r} has dtype {meta[wcol].dtype}; weights must be "
                                    f"integers or floats")
        weight_float = kind == "f"
    cols = [src, dst] + ([wcol] if wcol is not None else [])
    parts = ddf[cols].to_delayed(optimize_graph=True)
    stats = [dask.delayed(_partition_stats, pure=True)(p, src, dst, wcol, i)
             for i, p in enumerate(parts)]
    client = current_client(client)
    if client is not None:
        with seceded(client) as c:  # inside a task: the task leaves the thread pool while these run
            results = c.gather(c.compute(stats))
    else:
        results = list(dask.compute(*stats))
    maxid = max([r[1] for r in results] + [-1])
    if n_vertices is None:
        n_vertices = maxid + 1
    elif n_vertices <= maxid:
        raise InvalidGraphError(f"vertex id {maxid} is out of range (n_vertices={n_vertices})")
    sources = []
    offset = 0
    for i, (p, (m, _)) in enumerate(zip(parts, results)):
        dsk = dict(p.__dask_graph__().cull({p.key}))
        params = {"dsk": dsk, "key": p.key, "src": src, "dst": dst, "weight": wcol,
                  "n": int(n_vertices), "weight_float": weight_float, "offset": offset}
        sources.append(FunctionSource(_partition_rows, params, int(m), name=f"partition-{i}",
                                      splittable=False))
        offset += int(m)
    return Graph(n_vertices=int(n_vertices), sources=sources,
                 weight_dtype=np.dtype(np.float64 if weight_float else np.int64), validated=True,
                 name=name or f"dask-dataframe({ddf.npartitions} partitions)",
                 meta={"partitions": ddf.npartitions})


def to_pandas(result):
    """The forest as a pandas DataFrame: ``edge_id, src, dst, weight``."""
    pd = optional_import("pandas")
    return pd.DataFrame({"edge_id": np.asarray(result.edge_ids, dtype=np.int64),
                         "src": np.asarray(result.src), "dst": np.asarray(result.dst),
                         "weight": np.asarray(result.weight)})


CONVERTERS.update(networkx=from_networkx, scipy=from_scipy, pandas=from_pandas,
                  dask_dataframe=from_dask_dataframe)
EXPORTERS.update(networkx=to_networkx, scipy=to_scipy, pandas=to_pandas)

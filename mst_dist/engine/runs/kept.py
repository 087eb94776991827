"""A run's forest and labels kept on the workers (``gather=False``): :class:`KeptForest`.

The forest stays where its rows are, one pandas DataFrame per edge chunk
(``edge_id, src, dst, weight``, edge ids ascending; the parts in edge id
order), and the labels stay as arrays of consecutive vertex ranges on the
workers that computed them (one array, or one per range of a partitioned
run).
The client holds futures of them; :meth:`KeptForest.forest_frame` and
:meth:`KeptForest.labels_frame` are Dask collections over those futures,
:meth:`KeptForest.gather_forest` and :meth:`KeptForest.gather_labels` bring
them here.  They are released with the object (or :meth:`KeptForest.release`).
"""
from __future__ import annotations

import operator

import numpy as np

from mst_dist.phases import Step

__all__ = ["KeptForest", "forest_frame", "keep", "keep_frames"]

#: Vertices per partition of the labels' DataFrame.
LABELS_PART_VERTICES = 1 << 22

_COLUMNS = ("edge_id", "src", "dst", "weight")


def forest_frame(edge_ids, id_dtype, weight_dtype, *parts):
    """A task: the rows of ``parts`` (``(edge_id, src, dst, weight)`` each) that are forest edges.

    ``edge_ids``: the forest's ids, ascending.  Returns a pandas DataFrame
    sorted by ``edge_id``, with the forest's columns and dtypes.
    """
    import pandas as pd

    if parts:
        eid = np.concatenate([np.asarray(p[0], np.int64) for p in parts])
        cols = [np.concatenate([np.asarray(p[i]) for p in parts]) for i in (1, 2, 3)]
    else:
        eid = np.zeros(0, np.int64)
        cols = [np.zeros(0, id_dtype), np.zeros(0, id_dtype), np.zeros(0, weight_dtype)]
    order = np.argsort(eid, kind="stable")
    eid = eid[order]
    pos = np.searchsorted(edge_ids, eid)
    pos[pos >= len(edge_ids)] = 0
    keep_ = (edge_ids[pos] == eid) if len(edge_ids) else np.zeros(eid.shape[0], bool)
    if keep_.size and not keep_.all():
        order, eid = order[keep_], eid[keep_]
    return pd.DataFrame({"edge_id": eid, "src": cols[0][order].astype(id_dtype, copy=False),
                         "dst": cols[1][order].astype(id_dtype, copy=False),
                         "weight": cols[2][order].astype(weight_dtype, copy=False)})


def _count_and_total(frame):
    from mst_dist.result import exact_total

    return int(frame.shape[0]), exact_total(frame["weight"].to_numpy())


def _labels_frame(labels, start, stop, base=0):
    """Labels ``start:stop`` of an array holding vertices ``base, base + 1, ...``."""
    import pandas as pd

    return pd.DataFrame({"vertex": np.arange(base + start, base + stop, dtype=np.int64),
                         "component": np.asarray(labels[start:stop], np.int64)},
                        index=pd.RangeIndex(base + start, base + stop))


def keep(client, builder, rnd, parts, ids_f, lab_f, *, id_dtype, weight_dtype, n_vertices, labels=True):
    """Submit the kept parts; ``(KeptForest, forest edges, total weight, components)``.

    ``parts[i]``: futures of the rows chunk ``i`` holds (a superset of its
    forest edges); ``lab_f``: future of ``(labels, components)``.  Waits for
    the parts (so the chunks they came from can go) and gathers only counts.
    """
    frames = [client.submit(forest_frame, ids_f, id_dtype, weight_dtype, *p, key=builder.key(Step.KEPT_FOREST, rnd, i))
              for i, p in enumerate(parts)]
    counts = client.gather([client.submit(_count_and_total, f, key=builder.key(Step.KEPT_COUNT, rnd, i))
                            for i, f in enumerate(frames)])
    n_forest = sum(n for n, _ in counts)
    total = sum(t for _, t in counts) if counts else (0 if np.dtype(weight_dtype).kind in "iub" else 0.0)
    lab = comp = None
    if labels:
        lab = client.submit(operator.getitem, lab_f, 0, key=builder.key(Step.KEPT_LABELS, rnd))
        comp = client.submit(operator.getitem, lab_f, 1, key=builder.key(Step.KEPT_COMPONENTS, rnd)).result()
    kept = KeptForest(client, frames, lab, n_vertices=n_vertices, id_dtype=id_dtype, weight_dtype=weight_dtype,
                      forest_edges=n_forest)
    return kept, n_forest, total, comp


def keep_frames(client, builder, rnd, rows, *, id_dtype, weight_dtype):
    """Kept forest frames of ``rows`` (futures of each chunk's forest rows ``(edge_id, src, dst, weight)``).

    ``(frames, forest edges, total weight)``; only counts are gathered.
    """
    frames = [client.submit(_rows_frame, r, id_dtype, weight_dtype, key=builder.key(Step.KEPT_FOREST, rnd, i))
              for i, r in enumerate(rows)]
    counts = client.gather([client.submit(_count_and_total, f, key=builder.key(Step.KEPT_COUNT, rnd, i))
                            for i, f in enumerate(frames)])
    total = sum(t for _, t in counts) if counts else (0 if np.dtype(weight_dtype).kind in "iub" else 0.0)
    return frames, sum(n for n, _ in counts), total


def _rows_frame(rows, id_dtype, weight_dtype):
    """A task: the DataFrame of one chunk's forest rows (their ids ascending already)."""
    return forest_frame(np.asarray(rows[0], np.int64), id_dtype, weight_dtype, rows)


class KeptForest:
    """Futures of a run's forest parts and labels, held on the workers.

    Parameters
    ----------
    client : distributed.Client
        The client the futures belong to.
    parts : list of Future
        One pandas DataFrame per edge chunk (``edge_id, src, dst, weight``).
    labels : Future, list of Future, or None
        The labels array, or the arrays of consecutive vertex ranges
        (``label_sizes`` their lengths); ``None``: written to
        ``labels_output`` instead.
    n_vertices, forest_edges : int
    id_dtype, weight_dtype : numpy dtype
    """

    def __init__(self, client, parts, labels, *, n_vertices, id_dtype, weight_dtype, forest_edges, owner=None,
                 label_sizes=None):
        self.client = client
        self.parts = list(parts)
        if labels is None:
            self.label_parts, self.label_bounds = [], [0]
        elif isinstance(labels, (list, tuple)):
            self.label_parts = list(labels)
            self.label_bounds = [0, *np.cumsum(label_sizes, dtype=np.int64).tolist()]
        else:
            self.label_parts, self.label_bounds = [labels], [0, int(n_vertices)]
        self.n_vertices = int(n_vertices)
        self.id_dtype = np.dtype(id_dtype)
        self.weight_dtype = np.dtype(weight_dtype)
        self.forest_edges = int(forest_edges)
        self._owner = owner  # a client opened for the run (asynchronous callers): closed on release

    @property
    def labels(self):
        """The labels' futures (one, or a list of consecutive ranges), or ``None`` where they were written."""
        if not self.label_parts:
            return None
        return self.label_parts[0] if len(self.label_parts) == 1 else list(self.label_parts)

    def __repr__(self):
        return (f"KeptForest({self.forest_edges:,} edges in {len(self.parts)} parts, "
                f"labels={'kept' if self.labels is not None else 'written'})")

    def meta(self):
        """An empty pandas DataFrame of the forest's columns and dtypes."""
        return forest_frame(np.zeros(0, np.int64), self.id_dtype, self.weight_dtype)

    def forest_frame(self):
        """The forest as a ``dask.dataframe.DataFrame`` over the kept parts (no data moves)."""
        import dask
        import dask.dataframe as dd

        self._check()
        if not self.parts:
            return dd.from_pandas(self.meta(), npartitions=1)
        return dd.from_delayed([dask.delayed(f) for f in self.parts], meta=self.meta(), verify_meta=False)

    def labels_frame(self):
        """The labels as a ``dask.dataframe.DataFrame`` (``vertex, component``), by vertex ranges."""
        import dask
        import dask.dataframe as dd
        import pandas as pd

        self._check()
        if self.labels is None:
            raise ValueError("the labels were written to labels_output, not kept: read them from there")
        meta = pd.DataFrame({"vertex": np.zeros(0, np.int64), "component": np.zeros(0, np.int64)})
        pieces, starts = [], []
        for part, lo, hi in zip(self.label_parts, self.label_bounds[:-1], self.label_bounds[1:]):
            lab = dask.delayed(part)
            for a in range(lo, hi, LABELS_PART_VERTICES):  # vertex a of the graph is lab[a - lo]
                pieces.append(dask.delayed(_labels_frame)(lab, a - lo, min(hi, a + LABELS_PART_VERTICES) - lo, lo))
                starts.append(a)
        if not pieces:
            return dd.from_pandas(meta, npartitions=1)
        divisions = tuple(starts) + (self.n_vertices - 1,)
        return dd.from_delayed(pieces, meta=meta, divisions=divisions, verify_meta=False)

    def gather_forest(self):
        """``(edge_ids, src, dst, weight)`` as NumPy arrays here."""
        self._check()
        frames = self.client.gather(self.parts) if self.parts else []
        if not frames:
            m = self.meta()
            return tuple(m[c].to_numpy() for c in _COLUMNS)
        return tuple(np.concatenate([f[c].to_numpy() for f in frames]) for c in _COLUMNS)

    def gather_labels(self):
        """The labels array here (``None`` when they were written to ``labels_output``)."""
        self._check()
        if not self.label_parts:
            return None
        arrays = self.client.gather(self.label_parts)
        return np.asarray(arrays[0]) if len(arrays) == 1 else np.concatenate([np.asarray(a) for a in arrays])

    def release(self):
        """Let the workers forget the kept parts (and close a client opened for them)."""
        for f in self.parts + self.label_parts:
            try:
                f.release()
            except Exception:  # a client closed since: the scheduler forgot them with it
                pass
        self.parts, self.label_parts, self.label_bounds = [], [], [0]
        owner, self._owner = self._owner, None
        if owner is not None:
            owner.close()

    def _check(self):
        if self.client is None or getattr(self.client, "status", "running") in ("closed", "closing"):
            raise RuntimeError("the forest was kept on a cluster whose client is closed: its parts are gone; "
                               "run again (gather=True brings the forest here)")

    def __del__(self):
        owner = getattr(self, "_owner", None)
        if owner is not None:
            try:
                owner.close()
            except Exception:  # interpreter shutdown
                pass

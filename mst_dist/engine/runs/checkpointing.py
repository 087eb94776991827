"""A run's checkpoints: save after each round or pass, and go on from the last save.

:class:`RunCheckpoint` is the run-side helper over a checkpoint directory
(:class:`mst_dist.engine.checkpoint.Checkpoint`, which owns the on-disk
format): it keeps the running labels and forest as futures on the workers,
has a worker write each state, and reads a saved state back as futures.  A
kind of run calls it; the state it resumes into is the kind's own.  On an
object store the paths the tasks get are URLs carrying the run's
``storage_options``, so the workers open them with the same credentials.
"""
from __future__ import annotations

import logging

from mst_dist.engine import checkpoint
from mst_dist.engine.runs.outputs import written
from mst_dist.engine.keys import task_key
from mst_dist.phases import Step

logger = logging.getLogger("mst_dist")

#: A checkpoint's tasks go before the round submitted ahead (the run waits for them).
CHECKPOINT_PRIORITY = 10


class RunCheckpoint:
    """The checkpoints of one run (``token``) of ``graph`` under ``spec`` on ``client``."""

    def __init__(self, client, graph, spec, token):
        self.client = client
        self.token = token
        self.store = checkpoint.Checkpoint(spec.checkpoint, graph, spec.identity(), resume=spec.resume,
                                           storage_options=spec.storage_options)
        self.saved: checkpoint.Manifest | None = None
        self.labels = None      #: future of the vertex -> component map so far (resident)
        self.forest = None      #: future of the forest ids so far

    @classmethod
    def open(cls, client, graph, spec, token) -> "RunCheckpoint | None":
        """The run's checkpoint (``None`` without ``spec.checkpoint``), with the state to go on from."""
        if spec.checkpoint is None:
            return None
        ck = cls(client, graph, spec, token)
        ck.saved = ck.store.open()
        s = ck.saved
        if s is not None:
            by_pass = s.mode in ("streaming", "spread-streaming")
            logger.info("resuming from checkpoint %s: %s %d done, %d components left", ck.store.path,
                        "pass" if by_pass else "round", s.passes if by_pass else s.round, s.components)
        return ck

    @property
    def mode(self) -> str | None:
        """The saved run's kind (``"resident"``, ``"partitioned"``, ``"streaming"`` or ``"spread-streaming"``),
        ``None`` with nothing saved."""
        return None if self.saved is None else self.saved.mode

    def _key(self, phase, rnd, index=None):
        return task_key(phase, rnd, self.token, None, index)

    def _submit(self, func, *args, key):
        return self.client.submit(func, *args, key=key, priority=CHECKPOINT_PRIORITY)

    def _save(self, index, labels, forest, parts=(), **where):
        """Write one state (a worker writes the arrays), then the manifest naming it."""
        with self.store.saving(**where) as tmp:
            self.client.submit(checkpoint.write_state, tmp, labels, forest, *parts,
                               key=self._key(Step.CHECKPOINT, index, self.store.saves), pure=False,
                               priority=CHECKPOINT_PRIORITY).result()

    # -- resident runs: a state per round ------------------------------------------------

    def save_round(self, st, rmap, chosen, rec):
        """After a round or the local finish: the labels and the forest so far."""
        self.labels = self._submit(checkpoint.compose_labels, self.labels, rmap,
                                   key=self._key(Step.CHECKPOINT_LABELS, st.rnd))
        self.forest = self._submit(checkpoint.merge_forest, self.forest, chosen,
                                   key=self._key(Step.CHECKPOINT_FOREST, st.rnd))
        self._save(st.rnd, self.labels, self.forest, mode="resident", round=st.rnd,
                   components=st.n_comp, edges_left=st.edges_left, light=st.light,
                   record=checkpoint.record_dict(rec), complete=st.n_comp == 0 and not st.light)

    def resume_round(self):
        """The saved labels (a round map over the vertices) and forest, as futures."""
        s, c = self.saved, self.client
        d = self.store.state_dir(s)
        self.labels = c.submit(checkpoint.read_labels, d, s.components, key=self._key(Step.RESUME_LABELS, s.round),
                               pure=False)
        self.forest = c.submit(checkpoint.read_forest, d, key=self._key(Step.RESUME_FOREST, s.round), pure=False)
        return self.labels, self.forest

    # -- partitioned runs: a state per round, cut as the run holds it ----------------------

    def save_parts(self, rnd, n_comp, edges_left, *, labels, mapped, pins, chunk_bounds, finished):
        """After partitioned round ``rnd``: each range's labels written by its owner, each chunk's forest ids
        where the chunk is (``pins``), then the manifest."""
        c = self.client
        with self.store.saving(mode="partitioned", round=rnd, components=n_comp, edges_left=edges_left,
                               complete=n_comp == 0, finished=finished, vertex_ranges=len(labels),
                               chunk_bounds=[int(b) for b in chunk_bounds]) as tmp:
            writes = [c.submit(checkpoint.write_labels_part, tmp, r, vl, pure=False, priority=CHECKPOINT_PRIORITY,
                               key=self._key(Step.CHECKPOINT_LABELS, rnd, f"{self.store.saves}.{r}"))
                      for r, vl in enumerate(labels)]
            writes += [c.submit(checkpoint.write_forest_part, tmp, j, m, pure=False, priority=CHECKPOINT_PRIORITY,
                                key=self._key(Step.CHECKPOINT_FOREST, rnd, f"{self.store.saves}.{j}"), **pins[j])
                       for j, m in enumerate(mapped)]
            written(c, writes)

    def resume_parts(self, vertex_bounds, chunk_bounds):
        """The saved labels (one future per range of ``vertex_bounds``) and each chunk's saved forest ids."""
        s, c = self.saved, self.client
        d = self.store.state_dir(s)
        labels = [c.submit(checkpoint.read_labels_part, d, r, int(lo), int(hi), pure=False,
                           key=self._key(Step.RESUME_LABELS, s.round, r))
                  for r, (lo, hi) in enumerate(zip(vertex_bounds[:-1], vertex_bounds[1:]))]
        forest = [c.submit(checkpoint.read_forest_part, d, s.chunk_bounds, int(lo), int(hi), pure=False,
                           key=self._key(Step.RESUME_FOREST, s.round, j))
                  for j, (lo, hi) in enumerate(zip(chunk_bounds[:-1], chunk_bounds[1:]))]
        return labels, forest

    # -- streaming runs: a state per pass ------------------------------------------------

    def save_pass(self, rnd, k, hi, n_live, *, vmap, chosen, rows):
        """After pass ``k`` (``rnd`` rounds done): the vertex map, the forest (``chosen``: the pass's ids) and
        its rows so far (``rows``: futures of every chunk's)."""
        self.forest = self._submit(checkpoint.merge_forest, self.forest, chosen,
                                   key=self._key(Step.CHECKPOINT_FOREST, k))
        self._save(k, vmap, self.forest, rows, mode="streaming", round=rnd, passes=k,
                   components=n_live, threshold=None if hi is None else list(hi), complete=hi is None,
                   rows=bool(rows), light=False, record=None)

    def resume_pass(self, ranges, n_vertices):
        """The saved vertex map, forest and (per chunk of ``ranges``) forest rows, as futures."""
        s, c = self.saved, self.client
        d, k = self.store.state_dir(s), s.passes
        vmap = c.submit(checkpoint.read_labels, d, key=self._key(Step.RESUME_VMAP, k), pure=False)
        self.forest = c.submit(checkpoint.read_forest, d, key=self._key(Step.RESUME_FOREST, k), pure=False)
        rows = {}
        if s.rows:
            for i, r in enumerate(ranges):
                rows[i] = [c.submit(checkpoint.read_rows, d, r.offset, r.offset + r.stop - r.start, n_vertices,
                                    key=self._key(Step.RESUME_ROWS, k, i), pure=False)]
        return vmap, self.forest, rows

    # -- spread streaming runs: a state per pass, cut as the run holds it -----------------

    def save_spread_pass(self, rnd, k, hi, n_live, *, labels, forest, rows, pins, chunk_bounds):
        """After pass ``k`` (``rnd`` rounds done): each range's labels (live ids of the next pass) written by
        its owner, each chunk's forest ids (``forest[j]``: a future of them, ascending) and rows (``rows[j]``:
        futures) where the chunk's forest is (``pins``), then the manifest."""
        c = self.client
        with self.store.saving(mode="spread-streaming", round=rnd, passes=k, components=n_live,
                               threshold=None if hi is None else list(hi), complete=hi is None, rows=True,
                               vertex_ranges=len(labels), chunk_bounds=[int(b) for b in chunk_bounds]) as tmp:
            writes = [c.submit(checkpoint.write_labels_part, tmp, r, vl, pure=False, priority=CHECKPOINT_PRIORITY,
                               key=self._key(Step.CHECKPOINT_LABELS, k, f"{self.store.saves}.{r}"))
                      for r, vl in enumerate(labels)]
            writes += [c.submit(checkpoint.write_chunk_part, tmp, j, f, *rows.get(j, []), pure=False,
                                priority=CHECKPOINT_PRIORITY, **pins[j],
                                key=self._key(Step.CHECKPOINT_CHUNK, k, f"{self.store.saves}.{j}"))
                       for j, f in enumerate(forest)]
            written(c, writes)

    def resume_spread(self, vertex_bounds, chunk_bounds, n_vertices):
        """The saved labels (one future per range of ``vertex_bounds``), and each chunk's saved forest ids
        and rows (futures)."""
        s, c, k = self.saved, self.client, self.saved.passes
        labels, forest = self.resume_parts(vertex_bounds, chunk_bounds)
        rows = [c.submit(checkpoint.read_chunk_rows, self.store.state_dir(s), s.chunk_bounds, int(lo), int(hi),
                         n_vertices, pure=False, key=self._key(Step.RESUME_ROWS, k, j))
                for j, (lo, hi) in enumerate(zip(chunk_bounds[:-1], chunk_bounds[1:]))]
        return labels, forest, rows

    def discard(self):
        """The run is done: a rerun starts over."""
        self.store.discard()

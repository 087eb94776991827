"""Task graphs of a run: one Borůvka round, the light-edge split, the local finish.

:class:`RoundBuilder` submits tasks and waits for nothing; the driver decides
what to wait for.  One distributed round, for ``P`` chunks::

    map        P tasks  (the previous round's filter-edges fused in)
    merge      a tree of fan-in ``split_every`` (chunk -> combine -> aggregate)
    contract   one task (filter-nodes fused in: compact ids, the round map)
"""
from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass

import numpy as np

from mst_dist.engine import tasks
from mst_dist.engine.keys import task_key
from mst_dist.engine.placement import pin
from mst_dist.graph import ArraySource
from mst_dist.phases import Step


@dataclass
class SubmittedRound:
    """Futures of one submitted round (nothing of it waited for)."""

    edges: list          #: the chunks after this round's filter-edges, one future each
    rmap: object         #: future of ``(round map, components left)``
    chosen: object       #: future of the forest edge ids chosen
    record: object       #: future of the round's :class:`~mst_dist.engine.records.RoundRecord`
    tasks: int           #: tasks in the round's graph


class RoundBuilder:
    """Submits the task graphs of one run on ``client``.

    Keys come from :func:`mst_dist.engine.keys.task_key` with the run's
    ``token``; each round submission gets its own submission number, so a
    round submitted ahead and dropped never shares keys with its replacement.
    """

    def __init__(self, client, token, *, n_vertices, backend, split_every, places):
        self.client = client
        self.token = token
        self.n_vertices = n_vertices
        self.backend = backend
        self.split_every = split_every
        self.places = places
        self._submissions = itertools.count()

    def key(self, step, rnd, index=None, submission=None, stage=None):
        return task_key(step, rnd, self.token, submission, index, stage)

    def _pins(self, n):
        return self.places if len(self.places) == n else [None] * n

    # -- load ------------------------------------------------------------------

    def load(self, sources, ranges, validate):
        """The raw chunks on the workers: scattered from arrays, or loaded by tasks."""
        c = self.client
        raws = [None] * len(ranges)
        scatter = {}  # worker (or None) -> ([data], [chunk index])
        for i, (si, a, b, off) in enumerate(ranges):
            s = sources[si]
            if isinstance(s, ArraySource):  # the caller's arrays: scattered as they are
                d = scatter.setdefault(self.places[i], ([], []))
                d[0].append(s.load(a, b))
                d[1].append(i)
            else:
                raws[i] = c.submit(tasks.load, s, a, b, off, self.n_vertices, validate,
                                   key=self.key(Step.LOAD, 0, i), pure=False, **pin(self.places[i]))
        for w, (data, idx) in scatter.items():
            futs = c.scatter(data, hash=False, **({} if w is None else {"workers": [w]}))
            for i, f in zip(idx, futs):
                raws[i] = f
        return raws

    def prepare(self, raws, offsets):
        """Working chunks (compact ids, order keys, edge ids) from the raw ones."""
        return [self.client.submit(tasks.prepare, r, off, self.n_vertices, self.backend,
                                   key=self.key(Step.PREPARE, 0, i), **pin(self.places[i]))
                for i, (r, off) in enumerate(zip(raws, offsets))]

    # -- one distributed round -------------------------------------------------

    def round(self, rnd, chunks, rmap, prev, n_comp, finish=True) -> SubmittedRound:
        """Submit map, the merge tree and contract of round ``rnd``.

        ``n_comp`` may be ``None``: the tasks then read the component count
        from ``rmap``/``prev`` on the workers, so a round can be submitted
        before the last one's record reached the client.  ``finish=False``
        (the light pass) keeps components without a candidate alive.
        """
        c = self.client
        sub = next(self._submissions)
        pins = self._pins(len(chunks))
        outs = [c.submit(tasks.map_round, ch, rmap, n_comp, self.backend,
                         key=self.key(Step.MAP, rnd, i, sub), **pin(pins[i]))
                for i, ch in enumerate(chunks)]
        edges = [c.submit(operator.getitem, o, 0, key=self.key(Step.EDGES, rnd, i, sub))
                 for i, o in enumerate(outs)]
        level = [c.submit(operator.getitem, o, 1, key=self.key(Step.CAND, rnd, i, sub))
                 for i, o in enumerate(outs)]
        depth = 0
        while len(level) > 1:
            k = self.split_every
            level = [c.submit(tasks.merge, *level[j:j + k], key=self.key(Step.MERGE, rnd, f"{depth}.{j // k}", sub))
                     for j in range(0, len(level), k)]
            depth += 1
        merged = level[0] if depth else c.submit(tasks.merge, level[0], key=self.key(Step.MERGE, rnd, "0.0", sub))
        out = c.submit(tasks.contract, merged, n_comp, prev, finish, key=self.key(Step.CONTRACT, rnd, None, sub))
        return SubmittedRound(
            edges=edges,
            rmap=c.submit(operator.getitem, out, 0, key=self.key(Step.RMAP, rnd, None, sub)),
            chosen=c.submit(operator.getitem, out, 1, key=self.key(Step.CHOSEN, rnd, None, sub)),
            record=c.submit(operator.getitem, out, 2, key=self.key(Step.STATS, rnd, None, sub)),
            tasks=3 * len(chunks) + depth + (0 if depth else 1) + 4)

    # -- the light-edge pass ---------------------------------------------------

    def light_split(self, chunks, n_comp, edges_left, light_factor):
        """Split every chunk at a sampled threshold: about ``light_factor * n`` light edges.

        Returns ``(light chunks, heavy chunks)`` futures, or ``None`` when the
        sample says the split would not pay.
        """
        c = self.client
        rate = min(1.0, 8192 / max(1, edges_left))
        samples = c.gather([c.submit(tasks.sample, ch, rate, i, self.backend, key=self.key(Step.SAMPLE, 0, i))
                            for i, ch in enumerate(chunks)])
        ks = np.concatenate([x[0] for x in samples])
        es = np.concatenate([x[1] for x in samples])
        q = int(len(ks) * light_factor * n_comp / edges_left)
        if not 0 < q < len(ks):
            return None
        order = np.lexsort((es, ks))
        tk, te = ks[order[q]], es[order[q]]
        outs = [c.submit(tasks.split_light, ch, None, tk, te, self.backend, key=self.key(Step.FILTER, 0, i), **pin(self.places[i]))
                for i, ch in enumerate(chunks)]
        light = [c.submit(operator.getitem, o, 0, key=self.key(Step.LIGHT, 0, i)) for i, o in enumerate(outs)]
        heavy = [c.submit(operator.getitem, o, 1, key=self.key(Step.HEAVY, 0, i)) for i, o in enumerate(outs)]
        return light, heavy

    def compose(self, rnd, maps):
        """One map for a whole light pass: input component -> component after the pass."""
        return self.client.submit(tasks.compose_forward, *maps, key=self.key(Step.COMPOSE, rnd))

    def count(self, rnd, chunks):
        """Edges in ``chunks`` (waits for them)."""
        c = self.client
        return sum(c.gather([c.submit(tasks.count_edges, h, key=self.key(Step.COUNT, rnd, i))
                             for i, h in enumerate(chunks)]))

    # -- the local finish ------------------------------------------------------

    def local(self, rnd, chunks, rmap, n_comp, prev, raw_offsets, light_factor, min_degree, worker=None):
        """One task gathers ``chunks`` (raw ones when ``raw_offsets`` is given) and finishes.

        Returns futures of ``(round map, forest ids, LocalRecord)``.
        """
        c = self.client
        out = c.submit(tasks.solve_local, chunks, rmap, n_comp, prev, self.n_vertices, light_factor,
                       min_degree, raw_offsets, self.backend, key=self.key(Step.LOCAL, rnd),
                       pure=False, **pin(worker))
        return (c.submit(operator.getitem, out, 0, key=self.key(Step.RMAP, rnd)),
                c.submit(operator.getitem, out, 1, key=self.key(Step.CHOSEN, rnd)),
                c.submit(operator.getitem, out, 2, key=self.key(Step.STATS, rnd)))

    # -- the end ----------------------------------------------------------------

    def forest(self, rnd, chosen):
        return self.client.submit(tasks.forest_ids, *chosen, key=self.key(Step.FOREST, rnd))

    def labels(self, rnd, maps):
        return self.client.submit(tasks.labels, self.n_vertices, *maps, key=self.key(Step.LABELS, rnd))

    def rows(self, raws, offsets, ids):
        """Gather the forest's ``(src, dst, weight)`` rows from the raw chunks."""
        c = self.client
        return c.gather([c.submit(tasks.rows, r, off, ids, key=self.key(Step.ROWS, 0, i))
                         for i, (r, off) in enumerate(zip(raws, offsets))])

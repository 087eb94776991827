"""Typed statistics records that travel from the workers' tasks to the driver.

- :class:`ChunkStats` -- what a map task measured on its chunk; merge tasks
  combine them (sums of counts and bytes, the slowest chunk's seconds) up the
  same tree as the candidates.
- :class:`RoundRecord` -- what the contract task knows at the end of a
  distributed round (the merged :class:`ChunkStats` plus the contraction).
- :class:`LocalRecord` -- what the single-task solve (the local finish) knows.
- :class:`RoundMap` -- a round's map of components to the next round's ids.
- :class:`SampleChunk` -- what a streaming run's sample of one window found.

The driver turns them into :class:`mst_dist.result.RoundStats`, the one form
the result, the CLI, the dashboard and the benchmark read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


@dataclass
class ChunkStats:
    """Per chunk (map) or per subtree (merge) counts, seconds and bytes of one round."""

    edges_in: int = 0          #: edges before the round's filter-edges
    edges: int = 0             #: edges after it (what the next round maps)
    map: float = 0.0           #: seconds of filter-edges + map (slowest chunk below)
    merge: float = 0.0         #: seconds of merging along the slowest path
    cand_bytes: int = 0        #: candidate bytes produced and merged
    h2d: int = 0               #: host-to-device bytes (GPU workers)
    d2h: int = 0               #: device-to-host bytes (GPU workers)
    gpu_edges_in: int = 0      #: edges mapped by GPU kernels

    @classmethod
    def combine(cls, parts, cand_bytes: int, seconds: float) -> "ChunkStats":
        """The stats of a merge of ``parts``: counts add up, seconds follow the slowest path."""
        return cls(edges_in=sum(p.edges_in for p in parts), edges=sum(p.edges for p in parts),
                   map=max(p.map for p in parts),
                   merge=max(p.merge for p in parts) + seconds,
                   cand_bytes=sum(p.cand_bytes for p in parts) + cand_bytes,
                   h2d=sum(p.h2d for p in parts), d2h=sum(p.d2h for p in parts),
                   gpu_edges_in=sum(p.gpu_edges_in for p in parts))


@dataclass
class RoundRecord:
    """The end of one distributed round, as the contract task sees it."""

    chunks: ChunkStats         #: the round's merged chunk statistics
    contract: float            #: seconds of contract (filter-nodes included)
    n_comp: int                #: components before the round
    n_next: int                #: components left (not finished) after it
    n_finished: int            #: components finished in this round
    finished_total: int        #: components finished so far, this round included
    forest_edges: int          #: forest edges chosen in this round
    map_bytes: int             #: bytes of the round map every chunk reads next round


@dataclass
class LocalRecord:
    """The single-task solve that finishes a run on one worker."""

    kind: str                  #: "cpu" or "gpu": the kernels it ran
    prepare: float             #: seconds to gather and prepare its edges
    solve: float               #: seconds of the solve
    edges_in: int              #: edges it started from
    finished_total: int        #: components finished, all rounds included
    forest_edges: int          #: forest edges it chose
    trace: list = field(default_factory=list)  #: one kernels.contract solve-round record per round
    h2d: int = 0
    d2h: int = 0


class RoundMap(NamedTuple):
    """A round's map of component ids, as the next round's tasks read it.

    ``labels[c]`` is component ``c``'s id in the next round (``>= 0``, below
    ``n``) or ``-(F + 1)`` once it is finished as ``F``; over the original
    vertices it is a vertex map (the labels of a checkpoint).
    """

    labels: np.ndarray         #: int64, one per component of the round before
    n: int                     #: components left (live) after the round


class SampleChunk(NamedTuple):
    """A uniform sample of one window of rows (a streaming run sets its thresholds by it)."""

    u: np.ndarray              #: original source ids of the sampled edges (int64)
    v: np.ndarray              #: original destination ids
    key: np.ndarray            #: order-preserving weight keys (uint64)
    eid: np.ndarray            #: edge ids
    nonloop: int               #: edges of the window that are not self-loops
    rows: int                  #: raw rows read
    bytes_read: int            #: bytes of the raw rows read

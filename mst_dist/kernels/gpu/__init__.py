"""The GPU backend: the kernel contract over CuPy (or its NumPy stand-in).

Modules, one per part of the work:

- :mod:`.device` -- the array module (chosen by the caller, by name), the
  readiness check, host/device transfers;
- :mod:`.chunk` -- packed keys, **prepare**, adoption of any chunk,
  concatenation;
- :mod:`.phases` -- **map** (with the last round's **filter-edges** fused in),
  **merge**, **contract**, **filter-nodes**, **filter-edges**, the light/heavy
  split;
- :mod:`.solve` -- the single-task solve on the device;
- the ranged kernels of partitioned rounds: :mod:`mst_dist.kernels.ranged_xp` on ``xp``.

Written once over an array module ``xp``: with ``cupy`` the kernels run on
the worker's device; with ``numpy`` the very same code runs on the host,
which is how CI exercises the GPU logic on machines without a GPU.
:class:`GPUKernels` binds the functions to one array module: it is what
:func:`mst_dist.kernels.backend` returns for ``"gpu"``.  A GPU chunk stays on
its device between rounds; only candidate records (device -> host) and
round maps (host -> device) cross, and the records count the bytes.
"""
from __future__ import annotations

from mst_dist.kernels.contract import slice_by_phases
from mst_dist.kernels.gpu import chunk as _chunk
from mst_dist.kernels.gpu import phases as _phases
from mst_dist.kernels.gpu.chunk import MAX_CHUNK
from mst_dist.kernels.gpu.device import (
    GPU_INSTALL_HINT, GPUUnavailableError, array_module, device_memory, gpu_ready, synchronize, to_device)
from mst_dist.kernels.gpu.solve import DEVICE_BYTES_PER_EDGE, solve_local as _solve_local
from mst_dist.kernels.ranged_xp import RangedKernels
from mst_dist.kernels.reference import ReferenceKernels

__all__ = [
    "GPUKernels",
    "GPU_INSTALL_HINT",
    "GPUUnavailableError",
    "MAX_CHUNK",
    "DEVICE_BYTES_PER_EDGE",
    "array_module",
    "device_memory",
    "gpu_ready",
]


class GPUKernels(RangedKernels):
    """The GPU kernels on one array module (see :class:`mst_dist.kernels.contract.Backend`).

    ``xp``: ``"cupy"``, ``"numpy"`` (the stand-in) or the module itself.
    Chunks are packed (:mod:`.chunk`).  The round maps' composition, the
    labels and the forest ids are the reference's array code on ``xp``, and
    so are the ranged kernels (:mod:`mst_dist.kernels.ranged_xp`, on the device).
    """

    name = "gpu"
    #: The kind of worker these kernels make: a GPU's (the NumPy stand-in runs the GPU's code).
    kind = "gpu"
    supports_raw_solve = False
    #: Device memory is CuPy's pool, not a scratch arena of the backend's.
    scratch = None
    max_chunk_edges = MAX_CHUNK
    device_bytes_per_edge = DEVICE_BYTES_PER_EDGE

    def __init__(self, xp):
        self.xp = array_module(xp)
        self._records = ReferenceKernels(self.xp)

    def __repr__(self):
        return f"GPUKernels(xp={self.xp.__name__})"

    def to_device(self, a):
        return to_device(a, self.xp)

    def synchronize(self):
        synchronize(self.xp)

    def device_memory(self):
        return device_memory(self.xp)

    def first_invalid_edge(self, src, dst, w, n_vertices):
        return self._records.first_invalid_edge(src, dst, w, n_vertices)

    def take_rows(self, src, dst, w, ids):
        return self._records.take_rows(src, dst, w, ids)

    def adopt(self, chunk):
        return _chunk.adopt(chunk, self.xp)

    def prepare(self, raw, offset, n_vertices):
        return _chunk.prepare(raw, offset, n_vertices, self.xp)

    def prepare_many(self, raws, offsets, n_vertices):
        return self.concat([self.prepare(r, off, n_vertices) for r, off in zip(raws, offsets)],
                           n_vertices)

    def concat(self, chunks, n_vertices):
        return _chunk.concat(chunks, n_vertices, self.xp)

    def map(self, chunk, n_comp, M=None):
        return _phases.map(chunk, n_comp, M)

    def merge(self, parts):
        return _phases.merge(parts, self.xp)

    def contract(self, cand, n_comp, finished_offset, finish=True):
        return _phases.contract(cand, n_comp, finished_offset, self.xp, finish)

    def filter_nodes(self, root, has, finished_offset, finish=True):
        xp = self.xp
        M, n_next, n_fin = _phases.filter_nodes(to_device(root, xp)[0], to_device(has, xp)[0],
                                                finished_offset, xp, finish)
        return _phases.to_host(M), n_next, n_fin

    def filter_edges(self, chunk, M):
        return _phases.filter_edges(chunk, M)

    def split_light(self, chunk, M, tk, te):
        return _phases.split_light(chunk, M, tk, te)

    def slice_edges(self, raw, offset, n_vertices, vmap=None, lo=None, hi=None):
        return slice_by_phases(self, raw, offset, n_vertices, vmap, lo, hi)

    def sample(self, chunk, pos):
        return _phases.sample(chunk, pos)

    def solve_local(self, chunk, n_comp, finished_offset=0, *, relabel=None, light_factor=1.5,
                    min_degree=3.0, seed=0, on_round=None):
        return _solve_local(chunk, n_comp, finished_offset, relabel=relabel, light_factor=light_factor,
                            min_degree=min_degree, seed=seed, on_round=on_round)

    def compose_maps(self, maps):
        return self._records.compose_maps(maps)

    def labels(self, maps, n_vertices):
        return self._records.labels(maps, n_vertices)

    def forest_ids(self, parts):
        return self._records.forest_ids(parts)

    def contract_interior(self, lu, lv, interior):
        return self._records.contract_interior(lu, lv, interior)  # host arrays: a serial union-find

"""The CPU backend: the kernel contract in Numba.

Modules, one per part of the work:

- :mod:`.arena` -- scratch memory (a reuse arena, skewed struct-of-arrays buffers);
- :mod:`.chunk` -- validation, weight keys, **prepare**, concatenation;
- :mod:`.phases` -- one chunk in one task: **map** (with the last round's
  **filter-edges** fused in), **merge**, **contract**, **filter-nodes**,
  **filter-edges**, the light/heavy split;
- :mod:`.slicing` -- a streaming pass's filter over raw edges, fused;
- :mod:`.solve` -- the parallel single-task solve (every phase, in a loop), also
  straight over raw chunks (``solve_raw``: no prepared copy of every edge);
- :mod:`.finish` -- round maps composed into labels, the forest's ids and rows;
- :mod:`.ranges` -- the ranged kernels (a partitioned round's chunk and range work).

This module is the backend object :func:`mst_dist.kernels.backend` returns
for ``"cpu"``: it has every function and attribute of
:class:`mst_dist.kernels.contract.Backend`, :func:`solve_raw` among the
optional ones.  Callers outside the kernels reach it through that registry
and use the contract's names only
(:data:`mst_dist.kernels.contract.CAPABILITIES`).
"""
from __future__ import annotations

import os

import numba
import numpy as np

if "NUMBA_THREADING_LAYER" not in os.environ:
    # Dask runs several kernels at once from its worker threads; the default
    # "workqueue" layer aborts on concurrent launches, OpenMP/TBB do not.
    numba.config.THREADING_LAYER = "threadsafe"

from mst_dist.kernels.contract import take_to_host, to_host  # noqa: E402
from mst_dist.kernels.cpu.arena import ARENA, alloc_soa, empty  # noqa: E402
from mst_dist.kernels.cpu.chunk import (  # noqa: E402
    adopt, concat, first_invalid_edge, id_dtype, prepare, prepare_many, weight_keys)
from mst_dist.kernels.cpu.finish import compose_maps, forest_ids, labels  # noqa: E402
from mst_dist.kernels.cpu.finish import take_rows as _take_rows  # noqa: E402
from mst_dist.kernels.cpu.phases import (  # noqa: E402
    contract, contract_interior, filter_edges, filter_nodes, map, merge, sample, split_light)
from mst_dist.kernels.cpu.slicing import slice_edges  # noqa: E402
from mst_dist.kernels.cpu.ranges import (  # noqa: E402
    cheapest_rows, cheapest_sorted, first_touch, lightest_parallel, local_ids, positions, rank, sort_edges,
    sparse_values)
from mst_dist.kernels.cpu.solve import solve_local, solve_raw  # noqa: E402

__all__ = [
    # the contract
    "name", "xp", "adopt", "prepare", "prepare_many", "concat", "map", "merge", "contract",
    "filter_nodes", "filter_edges", "split_light", "slice_edges", "sample", "solve_local", "compose_maps", "labels",
    "forest_ids", "to_device", "synchronize", "first_invalid_edge", "take_rows", "device_memory",
    "kind", "supports_raw_solve", "scratch", "max_chunk_edges", "device_bytes_per_edge", "solve_raw",
    # the ranged kernels
    "sort_edges", "rank", "local_ids", "first_touch", "cheapest_sorted", "lightest_parallel", "cheapest_rows",
    "positions", "sparse_values",
    # the kernels' own helpers (not the contract's)
    "ARENA", "alloc_soa", "empty", "id_dtype", "weight_keys", "contract_interior",
]

#: The backend's name and array module.
name = "cpu"
xp = np
#: The kind of worker these kernels make (see :class:`~mst_dist.kernels.contract.Backend`).
kind = "cpu"
#: :func:`solve_raw` is there.
supports_raw_solve = True
#: The scratch arena the kernels take buffers from.
scratch = ARENA
#: No limit of the backend's own on a chunk's edges, and no device memory.
max_chunk_edges = None
device_bytes_per_edge = 0


def to_device(a):
    """``a`` as a host array: ``(array, 0)`` (the CPU kernels copy nothing to a device)."""
    return to_host(a), 0


def synchronize():
    """Nothing to wait for on the host."""


def device_memory():
    """``None``: the CPU kernels run in host memory."""
    return None


def take_rows(src, dst, w, ids):
    """``(src[ids], dst[ids], w[ids])`` as host arrays: a parallel gather for host arrays of the
    kernels' dtypes, plain indexing (on the device, then copied) for anything else."""
    if all(isinstance(a, np.ndarray) for a in (src, dst, w)) and src.dtype.kind in "iu" and \
            dst.dtype.kind in "iu" and w.dtype.kind in "iuf" and w.dtype != np.float16:
        return _take_rows(src, dst, w, np.asarray(ids))
    return tuple(take_to_host(a, ids) for a in (src, dst, w))

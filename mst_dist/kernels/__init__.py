"""Array kernels: arrays in, arrays out; no Dask, no config, no logging, no I/O.

One contract (:mod:`.contract`: the chunk type, the candidate and trace
records, the phase functions), three backends that implement it:

``reference``
    :mod:`.reference`, plain NumPy (or any array module with NumPy's calls):
    the oracle the others are tested against.
``cpu``
    :mod:`.cpu`, Numba: ``arena`` (scratch memory), ``chunk`` (validation,
    keys, prepare), ``phases`` (map, merge, contract, filter-nodes,
    filter-edges), ``solve`` (the parallel single-task solve), ``finish`` (labels, forest ids).
``gpu``
    :mod:`.gpu`, CuPy or its NumPy stand-in: ``device`` (array module,
    transfers), ``chunk`` (packed keys, prepare), ``phases``, ``solve``.

:func:`backend` returns one by name; the engine calls the same functions
whatever it got.
"""
from __future__ import annotations

from mst_dist.kernels.contract import BACKENDS

__all__ = ["backend", "BACKENDS"]


def backend(name, xp=None):
    """The kernels of backend ``name`` (``"reference"``, ``"cpu"`` or ``"gpu"``).

    ``xp``: the array module for ``"reference"`` and ``"gpu"``, by name
    (``"numpy"``, ``"cupy"``) or as the module itself; ``"numpy"`` by
    default for the reference, required for the GPU (the caller's setting
    decides, e.g. the NumPy stand-in).  The CPU kernels are NumPy's.
    Returns an object with the functions of
    :class:`mst_dist.kernels.contract.Backend`.

    >>> backend("reference").name
    'reference'
    """
    if name == "cpu":
        if xp not in (None, "numpy") and getattr(xp, "__name__", None) != "numpy":
            raise ValueError(f"the cpu kernels run on numpy arrays, not {xp!r}")
        from mst_dist.kernels import cpu

        return cpu
    if name == "reference":
        from mst_dist.kernels.gpu.device import array_module
        from mst_dist.kernels.reference import ReferenceKernels

        return ReferenceKernels(array_module("numpy" if xp is None else xp))
    if name == "gpu":
        if xp is None:
            raise ValueError("the gpu kernels need an array module: xp='cupy' or the 'numpy' stand-in")
        from mst_dist.kernels.gpu import GPUKernels

        return GPUKernels(xp)
    raise ValueError(f"unknown kernel backend {name!r}; choose one of {', '.join(BACKENDS)}")

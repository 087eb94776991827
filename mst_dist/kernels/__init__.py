"""Array kernels: arrays in, arrays out; no Dask, no config, no logging, no I/O.

One contract (:mod:`.contract`: the chunk type, the candidate and trace
records, the phase functions, the capabilities), three backends that
implement it:

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
whatever it got, and asks what a backend can do through the contract's
attributes (``kind``, ``supports_raw_solve``, ...), never by its name or
module.  :func:`ready` says whether a backend can run in this process.
Outside the kernels nothing imports :mod:`.cpu` or :mod:`.gpu`: this
registry is the way in.

Beside the contract: :mod:`.compile` (the CPU kernels' compile policy:
Numba's cache, compiling ahead, the kernels' fingerprint) and
:mod:`.tuning` (options the benchmarks measure and the engine does not use).
"""
from __future__ import annotations

from mst_dist.kernels.contract import BACKENDS

__all__ = ["backend", "ready", "BACKENDS", "GPU_INSTALL_HINT", "GPUUnavailableError"]

#: Names of the GPU backend's device module offered here, imported on first use (importing the
#: kernels, as ``import mst_dist`` does for the compile policy, loads no backend).
_GPU_NAMES = ("GPU_INSTALL_HINT", "GPUUnavailableError")


def __getattr__(name):
    if name in _GPU_NAMES:
        from mst_dist.kernels.gpu import device

        return getattr(device, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def ready(name, xp=None):
    """Whether this process can run the kernels of backend ``name``: ``(ok, reason)``.

    The host backends always can.  The GPU backend needs its array module
    ``xp`` (``"cupy"`` by default) and, for CuPy, a visible CUDA device;
    the answer is cached per array module.

    >>> ready("cpu")
    (True, 'host')
    """
    if name in ("cpu", "reference"):
        return True, "host"
    if name == "gpu":
        from mst_dist.kernels import gpu

        return gpu.gpu_ready("cupy" if xp is None else xp)
    raise ValueError(f"unknown kernel backend {name!r}; choose one of {', '.join(BACKENDS)}")

"""The GPU backend's array module, its readiness check and host/device transfers.

The array module is chosen by the caller, by name (``"cupy"``, or
``"numpy"`` for the stand-in that runs the same code on the host); nothing
here reads a configuration.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from mst_dist.errors import GPUUnavailableError  # defined with the package's other errors
from mst_dist.kernels.contract import to_host

__all__ = ["GPU_INSTALL_HINT", "GPUUnavailableError", "array_module", "gpu_ready", "device_memory",
           "to_device", "synchronize", "clock", "scatter_min"]

GPU_INSTALL_HINT = "pip install 'mst-dist[gpu]'"


def array_module(name):
    """The array module called ``name``: ``"cupy"`` or ``"numpy"`` (a module is returned as is)."""
    if not isinstance(name, str):
        return name
    if name == "numpy":
        return np
    if name == "cupy":
        import cupy

        return cupy
    raise ValueError(f"the GPU kernels' array module must be 'cupy' or 'numpy', got {name!r}")


@functools.lru_cache(maxsize=None)
def gpu_ready(name):
    """Whether this process can run the GPU kernels on array module ``name``: ``(ok, reason)``.

    Cached per name (``gpu_ready.cache_clear()`` forgets).
    """
    try:
        xp = array_module(name)
    except ImportError as e:
        return False, f"CuPy is not installed ({e}); {GPU_INSTALL_HINT}"
    except ValueError as e:
        return False, str(e)
    if xp is np:
        return True, "numpy stand-in (mst.gpu.array-module: numpy)"
    try:
        n = xp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, no device, broken toolkit
        return False, f"no CUDA device is visible ({type(e).__name__}: {e})"
    if n < 1:
        return False, "no CUDA device is visible"
    dev = xp.cuda.Device()
    try:
        name_ = xp.cuda.runtime.getDeviceProperties(dev.id)["name"]
        name_ = name_.decode() if isinstance(name_, bytes) else str(name_)
    except Exception:  # pragma: no cover - properties are informative only
        name_ = "CUDA device"
    return True, f"{name_} (device {dev.id} of {n})"


def device_memory(xp):
    """Bytes of memory on the current device (``None`` for the NumPy stand-in)."""
    if xp is np:
        return None
    free, total = xp.cuda.Device().mem_info
    return int(total)


def to_device(a, xp):
    """``a`` as an array of ``xp``; returns ``(array, bytes copied to the device)``.

    The NumPy stand-in counts the bytes a device would have had copied, so
    its runs report the traffic of the real thing.
    """
    if xp is np:
        h = to_host(a)
        return h, int(h.nbytes)
    if isinstance(a, xp.ndarray):
        return a, 0
    h = np.asarray(a)
    return xp.asarray(h), int(h.nbytes)


def synchronize(xp):
    """Wait for the device's queued work (kernel timing); nothing on the host."""
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


def clock(xp):
    """``time.perf_counter()`` once the device's queued work is done."""
    synchronize(xp)
    return time.perf_counter()


def scatter_min(target, idx, vals, xp):
    """``target[idx] = min(target[idx], vals)`` with repeated indices: an atomic min."""
    if xp is np:
        np.minimum.at(target, idx, vals)
    else:
        import cupyx

        cupyx.scatter_min(target, idx, vals)

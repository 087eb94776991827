"""Describe the environment a run or a benchmark ran in, and import optional dependencies.

Four things every report and every optional feature needs, written once:

- :func:`versions`: Python, mst-dist, the packages it uses (where installed),
  Numba's thread count and threading layer, and the git commit of a source
  checkout.
- :func:`machine_info` (and :func:`gpu_info`): the CPU, memory, load and,
  with CuPy, the CUDA devices.
- :func:`optional_import`: import a module or raise an :class:`ImportError`
  that says what to ``pip install``.
- :func:`kernel_cache_dir`: where Numba keeps the compiled kernels, and a
  per-user directory for them where neither the package's folder nor the
  user's cache folder can be written.

Nothing here imports the rest of mst-dist (``mst_dist._version`` and the
kernels' compile policy aside), so any layer above the kernels may use it; none of these functions raises for a missing
package, except :func:`optional_import`, whose job that is.
"""
from __future__ import annotations

import importlib
import os
import platform
import subprocess

__all__ = ["versions", "machine_info", "gpu_info", "loadavg", "optional_import", "kernel_cache_dir"]

#: Distributions whose versions :func:`versions` reports, by the key it reports them under.
#: A key with several names is the first installed of them (CuPy's wheels are per CUDA major).
PACKAGES = {
    "numpy": ("numpy",),
    "numba": ("numba",),
    "dask": ("dask",),
    "distributed": ("distributed",),
    "scipy": ("scipy",),
    "rustworkx": ("rustworkx",),
    "pyarrow": ("pyarrow",),
    "bokeh": ("bokeh",),
    "dask_jobqueue": ("dask-jobqueue",),
    "dask_mpi": ("dask-mpi",),
    "dask_cuda": ("dask-cuda",),
    "cupy": ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"),
    "pylibcugraph": ("pylibcugraph-cu12", "pylibcugraph-cu13", "pylibcugraph-cu11", "pylibcugraph"),
}

#: With ``gpu=True`` these are imported and asked for ``__version__`` (what the process really loads).
GPU_MODULES = ("cupy", "pylibcugraph", "dask_cuda")


def _dist_version(names):
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _module_version(name):
    try:
        return getattr(importlib.import_module(name), "__version__", "?")
    except Exception:  # not installed, or a CUDA library that fails to load
        return None


def _git_state():
    """The commit of the source checkout mst_dist was imported from, and whether it has edits.

    ``{}`` for an installed copy (the package folder is not ``mst_dist/`` at
    the top of a git work tree) or without git.
    """
    pkg = os.path.dirname(os.path.abspath(__file__))

    def git(*args):
        return subprocess.run(["git", "-C", pkg, *args], capture_output=True, text=True, timeout=10)

    try:
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0 or os.path.realpath(os.path.join(top.stdout.strip(), "mst_dist")) != \
                os.path.realpath(pkg):
            return {}
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return {}
    if head.returncode != 0:
        return {}
    return {"git_commit": head.stdout.strip(), "git_dirty": bool(dirty.stdout.strip())}


def versions(gpu=False):
    """Versions of Python, mst-dist and the packages it uses (a dict of strings).

    Parameters
    ----------
    gpu : bool
        Also import the GPU modules (:data:`GPU_MODULES`) and report the
        versions they say they are, ``None`` for one that cannot be imported.
        Without it the GPU packages are reported from their installed
        metadata only, like every other package: nothing is imported.

    Returns
    -------
    dict
        ``mst_dist``, ``python``, one key per installed package of
        :data:`PACKAGES` (absent when not installed), ``numba_threads`` and
        ``numba_threading_layer`` where Numba is installed, and
        ``git_commit``/``git_dirty`` when mst_dist runs from a git checkout.
    """
    from mst_dist._version import __version__

    out = {"mst_dist": __version__, "python": platform.python_version()}
    for key, names in PACKAGES.items():
        v = _dist_version(names)
        if v is not None:
            out[key] = v
    if gpu:
        for name in GPU_MODULES:
            out[name] = _module_version(name)
    if "numba" in out:
        try:
            import numba

            out["numba_threads"] = numba.get_num_threads()
            out["numba_threading_layer"] = numba.config.THREADING_LAYER
        except Exception:  # pragma: no cover - a broken Numba install
            pass
    out.update(_git_state())
    return out


def loadavg():
    """The 1, 5 and 15-minute load averages, rounded to 0.01 (``None`` where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):  # pragma: no cover - not Unix
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info():
    """The machine this process runs on (a JSON-able dict).

    Keys: ``platform``, ``machine``, ``cpu_model``, ``cpu_count``,
    ``cpu_affinity`` (the CPUs this process may use), ``python``, ``hostname``,
    ``memory_total_bytes``/``memory_available_bytes`` (with psutil) and
    ``loadavg_start`` (:func:`loadavg` now; a caller that measures adds
    ``loadavg_end`` when it is done).  GPUs: :func:`gpu_info`.
    """
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "hostname": platform.node(),
    }
    try:
        info["cpu_affinity"] = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        pass
    try:
        import psutil

        vm = psutil.virtual_memory()
        info["memory_total_bytes"] = int(vm.total)
        info["memory_available_bytes"] = int(vm.available)
    except Exception:  # pragma: no cover - psutil missing
        pass
    info["loadavg_start"] = loadavg()
    return info


def gpu_info():
    """The CUDA devices CuPy sees (name, memory, compute capability), driver and runtime.

    ``{}`` without CuPy or a device; never raises.
    """
    try:
        import cupy

        rt = cupy.cuda.runtime
        devices = []
        for i in range(rt.getDeviceCount()):
            p = rt.getDeviceProperties(i)
            name = p.get("name", b"?")
            devices.append({"name": name.decode() if isinstance(name, bytes) else str(name),
                            "memory_bytes": int(p.get("totalGlobalMem", 0)),
                            "compute_capability": f"{p.get('major')}.{p.get('minor')}"})
        return {"devices": devices, "driver_version": rt.driverGetVersion(),
                "runtime_version": rt.runtimeGetVersion()}
    except Exception:  # no CuPy, no driver, no device
        return {}


def optional_import(module, *, extra=None, what=None, package=None):
    """Import an optional dependency, or raise an ImportError that says how to install it.

    Parameters
    ----------
    module : str
        The module to import (``"dask_jobqueue"``, ``"scipy.sparse"``).
    extra : str, optional
        The mst-dist extra that brings it: the message says
        ``pip install 'mst-dist[<extra>]'``.  Without one it names the
        package itself.
    what : str, optional
        What needs it, to start the message (default ``"this"``).
    package : str, optional
        The pip package's name (default: the module's top-level name with
        ``_`` as ``-``, so ``dask_jobqueue`` is ``dask-jobqueue``).

    Returns
    -------
    module

    Raises
    ------
    ImportError
        ``"<what> needs <package>, which is not installed (<why>); install it
        with: pip install ..."``.

    Examples
    --------
    >>> optional_import("json").__name__
    'json'
    >>> optional_import("no_such_module", extra="hpc", what="cluster kind 'slurm'")
    Traceback (most recent call last):
        ...
    ImportError: cluster kind 'slurm' needs no-such-module, which is not installed (No module named 'no_such_module'); install it with: pip install 'mst-dist[hpc]'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pkg = package or module.split(".")[0].replace("_", "-")
        hint = f"'mst-dist[{extra}]'" if extra else (f"'{pkg}'" if "[" in pkg else pkg)
        raise ImportError(f"{what or 'this'} needs {pkg}, which is not installed ({exc}); "
                          f"install it with: pip install {hint}") from None


def kernel_cache_dir(fallback=True):
    """Where Numba keeps mst-dist's compiled CPU kernels, making sure it can keep them somewhere.

    The kernels' compile policy decides
    (:func:`mst_dist.kernels.compile.cache_location`): beside the sources,
    else the user's cache folder, else (with ``fallback``) a per-user folder
    of the temporary directory, which it sets as ``NUMBA_CACHE_DIR``.  A
    ``NUMBA_CACHE_DIR`` set by the caller wins.

    Returns
    -------
    str or None
        The folder Numba caches under; ``None`` when none can be written.
    """
    from mst_dist.kernels.compile import cache_location

    return cache_location(fallback)

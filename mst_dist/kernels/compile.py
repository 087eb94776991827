"""The CPU kernels' compile policy: where Numba caches them, what they depend on, compiling ahead.

The CPU backend's kernels are Numba functions compiled on first use and
cached on disk (``cache=True``), so only the first process after an install
or an upgrade pays for compiling them.  Everything about that cache is
decided here:

- :func:`cache_location`: the folder Numba caches under: beside the
  sources (``mst_dist/kernels/cpu/__pycache__``), else the user's cache
  folder, else a per-user folder of the temporary directory, which this
  sets (``NUMBA_CACHE_DIR``) for a read-only install without a writable
  home;
- :func:`kernel_modules`, :func:`dispatchers`: the modules whose kernels a
  run compiles (the backend's, and those other layers name) and their
  dispatchers that cache to disk;
- :func:`fingerprint`: what the compiled code depends on (the kernels'
  sources, Numba, Python, the threading layer, this CPU), and the stamps
  that record it beside the cache (:func:`write_stamp`,
  :func:`stamp_holds`);
- :func:`exercise`: running groups of kernels once on a tiny graph, and
  :func:`compile_in_processes`: compiling groups in parallel processes.

Numba is read through its public names (a dispatcher's ``stats``,
``signatures``); the one private read, whether a kernel's cache index is
there and fresh, is :func:`index_fresh`, which falls back to looking for the
index file.  The engine's warm-up (:mod:`mst_dist.engine.warmup`) decides
*when* to compile; this module, *how*.
"""
from __future__ import annotations

import glob
import hashlib
import importlib
import os
import subprocess
import sys
import tempfile

import numpy as np

__all__ = [
    "BACKEND_MODULES", "cache_location", "kernel_modules", "dispatchers", "cache_dir",
    "fingerprint", "index_fresh", "stamp_path", "stamp_holds", "write_stamp", "compiled", "exercise",
    "EXERCISES", "compile_in_processes", "tiny_graph",
]

#: The CPU backend's modules with Numba kernels (their sources are also the fingerprint's).
BACKEND_MODULES = tuple(f"mst_dist.kernels.cpu.{m}" for m in ("chunk", "phases", "solve", "finish", "slicing",
                                                                    "ranges"))

_CPU_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu")


# ---------------------------------------------------------------------------
# where the cache is, and how the kernels run
# ---------------------------------------------------------------------------

def _writable(path):
    """Whether a directory exists or can be made, and a file can be written in it (as Numba checks)."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return False
    return True


def _user_cache_root():
    """The user's cache folder, as Numba's user-wide cache finds it (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def cache_location(fallback=True):
    """Where Numba keeps the compiled CPU kernels, making sure it can keep them somewhere.

    Numba caches beside the sources (``mst_dist/kernels/cpu/__pycache__``)
    where that folder can be written, else in the user's cache folder
    (``~/.cache/numba``), else nowhere: then every process would fail to
    import the kernels.  In that last case (a read-only install and no
    writable home, as in some containers and batch jobs), and with
    ``fallback``, this sets ``NUMBA_CACHE_DIR`` (and Numba's setting, if it
    is imported already) to a per-user folder of the temporary directory,
    which persists between processes.  A ``NUMBA_CACHE_DIR`` set by the
    caller wins.  Imports no Numba.

    Parameters
    ----------
    fallback : bool
        Set ``NUMBA_CACHE_DIR`` to the temporary folder where nothing else
        can be written.

    Returns
    -------
    str or None
        The folder Numba caches under; ``None`` when none can be written.
    """
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        return given
    pkg = os.path.join(_CPU_DIR, "__pycache__")
    if _writable(pkg):
        return pkg
    user = os.path.join(_user_cache_root(), "numba")
    if _writable(user):
        return user
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    tmp = os.path.join(tempfile.gettempdir(), f"mst-dist-numba-{uid}")
    if not fallback or not _writable(tmp):
        return None
    os.environ["NUMBA_CACHE_DIR"] = tmp
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.config.CACHE_DIR = tmp
    return tmp


# ---------------------------------------------------------------------------
# the kernels: modules, dispatchers, fingerprint
# ---------------------------------------------------------------------------

def kernel_modules(*extra):
    """The modules whose Numba kernels a run compiles: the CPU backend's, then ``extra``.

    ``extra``: modules (or their names) of other layers with cached
    kernels of their own (the generators' R-MAT levels, say).
    """
    mods = [importlib.import_module(m) for m in BACKEND_MODULES]
    mods += [importlib.import_module(m) if isinstance(m, str) else m for m in extra]
    return tuple(mods)


def dispatchers(modules=None):
    """The Numba dispatchers of ``modules`` (default: :func:`kernel_modules`) that cache to disk.

    Returns ``{"module.name": dispatcher}``.
    """
    from numba.core.registry import CPUDispatcher

    out = {}
    for mod in kernel_modules() if modules is None else modules:
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.stats.cache_path is not None:
                out[f"{mod.__name__}.{name}"] = obj
    return out


def cache_dir(modules=None):
    """The folder Numba keeps the kernels' compiled code in (in-tree ``__pycache__`` or a per-user one).

    ``None`` when no kernel caches to disk.
    """
    for d in dispatchers(modules).values():
        return d.stats.cache_path
    return None


def fingerprint(modules=None):
    """What the compiled code depends on: the kernels' sources, Numba, Python, threading layer, this CPU.

    The sources: every module of the CPU backend (its kernels call each
    other's helpers) and those of ``modules`` (default:
    :func:`kernel_modules`) outside it.  Returns a hex digest.
    """
    import numba

    h = hashlib.sha256()
    files = {os.path.join(_CPU_DIR, name) for name in os.listdir(_CPU_DIR) if name.endswith(".py")}
    files |= {os.path.abspath(m.__file__) for m in (kernel_modules() if modules is None else modules)}
    for path in sorted(files, key=os.path.basename):
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + b"\0" + f.read())
    h.update(f"{numba.__version__} {sys.version} {numba.config.THREADING_LAYER}".encode())
    try:
        import llvmlite.binding as llvm

        h.update(llvm.get_host_cpu_name().encode())
    except Exception:  # pragma: no cover - the CPU's name is a refinement
        pass
    return h.hexdigest()


def _index_file_present(dispatcher):
    """Whether Numba's cache folder holds an index file of ``dispatcher`` (public names only)."""
    path = dispatcher.stats.cache_path
    if path is None:
        return False
    func = dispatcher.py_func
    module = func.__module__.rpartition(".")[2]
    qualname = func.__qualname__.replace("<locals>.", "")
    return bool(glob.glob(os.path.join(glob.escape(path), f"{glob.escape(module)}.{glob.escape(qualname)}-*.nbi")))


def index_fresh(dispatcher):
    """Whether Numba's on-disk index of ``dispatcher`` is there, and fresh for its source.

    Numba's own check (its cache file's index loader, which compares the
    source's stamp) is private; where a Numba lacks it, the index file's
    presence answers instead.
    """
    try:
        load = dispatcher._cache._cache_file._load_index
    except AttributeError:
        return _index_file_present(dispatcher)
    try:
        return bool(load())
    except Exception:  # an unreadable index: as good as none
        return False


# ---------------------------------------------------------------------------
# stamps: "these kernels were compiled for this fingerprint"
# ---------------------------------------------------------------------------

def stamp_path(name, modules=None):
    """The stamp file ``name`` beside the cache (``None`` without a cache folder)."""
    d = cache_dir(modules)
    return None if d is None else os.path.join(d, f"mst-dist-warm-{name}.stamp")


def stamp_holds(path, fingerprint, disps):
    """Whether the stamp at ``path`` names ``fingerprint``, and each kernel it lists still has a fresh index.

    ``disps``: the dispatchers by name (:func:`dispatchers`).
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split()
    except (OSError, TypeError):
        return False
    if not lines or lines[0] != fingerprint:
        return False
    return all(name in disps and index_fresh(disps[name]) for name in lines[1:])


def compiled(disps):
    """The names of the dispatchers of ``disps`` that hold compiled code in this process."""
    return sorted(name for name, d in disps.items() if d.signatures)


def write_stamp(path, fingerprint, disps):
    """Record at ``path`` that the kernels of ``disps`` compiled in this process are cached for ``fingerprint``.

    Written whole or not at all (a temporary file renamed); returns whether
    it was written (a cache folder that became read-only: not).
    """
    if path is None:
        return False
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join([fingerprint, *compiled(disps)]) + "\n")
        os.replace(tmp, path)
    except OSError:
        return False
    return True


# ---------------------------------------------------------------------------
# compiling: running the kernels once
# ---------------------------------------------------------------------------

def tiny_graph(weight_dtype, n=48, m=192, seed=0):
    """A random graph of ``n`` vertices and ``m`` edges, weights of ``weight_dtype``: ``(n, src, dst, w)``."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if np.dtype(weight_dtype).kind == "f":
        w = rng.random(m).astype(weight_dtype)
    else:
        w = rng.integers(1, 20, m).astype(weight_dtype)
    return n, src, dst, w


def _labels_group(weight_dtype):
    from mst_dist.kernels.cpu import arena, finish

    T = arena.nthreads()
    if T >= 4:  # the parallel numbering runs where this process's threads use it
        big = 65536 * T
        for dtype in (np.int64, np.int32):  # a streaming run's labels come from its int32 vertex map
            finish.labels([-(np.arange(big, dtype=dtype) // 8) - 1], big)


def _raw_group(weight_dtype):
    from mst_dist.kernels import cpu
    from mst_dist.kernels.cpu.slicing import slice_many

    n, src, dst, w = tiny_graph(weight_dtype)
    half = src.shape[0] // 2
    raws = [(src[:half], dst[:half], w[:half]), (src[half:], dst[half:], w[half:])]
    cpu.first_invalid_edge(src, dst, w, n)
    ch = slice_many(raws, [0, half], n)
    slice_many(raws, [0, half], n, vmap=(np.arange(n) // 2).astype(np.int32), lo=(ch.key[0], ch.eid[0]))
    cpu.weight_keys(w[:8])
    for dtype in (np.int64, np.int32):
        cpu.labels([-(np.arange(n, dtype=dtype) // 3) - 1], n)
    _labels_group(weight_dtype)
    ids = cpu.forest_ids([np.arange(0, src.shape[0], 3, dtype=np.int64)])
    cpu.take_rows(src, dst, w, ids)


def _solve_group(weight_dtype):
    from mst_dist.kernels import cpu
    from mst_dist.kernels.contract import Chunk
    from mst_dist.kernels.reference import weight_keys

    n, src, dst, w = tiny_graph(weight_dtype)
    keep = src != dst
    ch = Chunk(src[keep].astype(np.int32), dst[keep].astype(np.int32), weight_keys(w[keep]),
               np.flatnonzero(keep).astype(np.int64))
    cpu.solve_local(ch, n, 0, light_factor=1.5, min_degree=1.0)


#: Groups of kernels :func:`exercise` runs; no two share a kernel, so each can compile in a process
#: of its own (two processes compiling different forms of one kernel could leave Numba's cache
#: index naming one form's file for the other).
EXERCISES = {
    "raw": _raw_group,        # what reads raw edges and finishes a run: validation, slices, labels, rows
    "solve": _solve_group,    # the single-task solve's own kernels, on a chunk no other kernel made
    "labels": _labels_group,  # the labels' parallel numbering (a graph large enough for it)
}


def exercise(group, weight_dtype="int64"):
    """Run the CPU kernels of ``group`` (:data:`EXERCISES`) once on a tiny graph: compiles or loads them."""
    try:
        run = EXERCISES[group]
    except KeyError:
        raise ValueError(f"unknown kernel group {group!r}; choose one of {', '.join(EXERCISES)}") from None
    run(weight_dtype)


_CHILD = ("import importlib, sys\n"
          "f = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])\n"
          "for a in sys.argv[3:]: f(a)")


def compile_in_processes(calls, cores=None, on_failure=None):
    """Call the functions of ``calls`` at once, one process each, this process taking the last.

    Numba compiles one function at a time per process (a global compiler
    lock), so groups of kernels that share none compile faster side by
    side.  ``calls``: ``[((module, function), [argument, ...]), ...]``, each
    function called with each of its arguments in turn (by name: a new
    process imports ``module``); up to ``cores - 1`` (default: this
    machine's cores) get a new process, started first, while this process
    makes the last call itself, then waits for them.  ``on_failure(code,
    stderr)`` hears of a process that failed: it costs only the time (the
    caller compiles what is missing).  Returns the number of processes
    started (0: one core, or fewer than two calls).
    """
    if cores is None:
        cores = os.cpu_count() or 1
    if cores < 2 or len(calls) < 2:
        return 0
    *others, ((mod, func), args) = calls
    procs = []
    for (omod, ofunc), oargs in others[:cores - 1]:
        try:
            procs.append(subprocess.Popen([sys.executable, "-c", _CHILD, omod, ofunc, *map(str, oargs)],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE))
        except OSError as e:  # no interpreter to start (an embedded Python): this process compiles it all
            if on_failure is not None:
                on_failure(None, str(e))
    try:
        f = getattr(importlib.import_module(mod), func)
        for a in args:
            f(a)
    finally:
        for p in procs:
            _, err = p.communicate()
            if p.returncode and on_failure is not None:
                on_failure(p.returncode, err.decode(errors="replace")[-2000:])
    return len(procs)

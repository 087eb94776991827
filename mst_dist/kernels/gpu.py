"""GPU kernels: the five phases over an array module ``xp`` (CuPy on a GPU worker).

Written once over ``xp``: with ``cupy`` they run on the worker's device; with
``numpy`` the very same code runs on the host, which is how CI exercises the
GPU logic on machines without a GPU (``mst.gpu.array-module: numpy``, the
"stand-in").  No RawKernel: every step is a CuPy/NumPy array operation
(``cupyx.scatter_min`` is CUDA's ``atomicMin``), so nothing here is unmeasured
hand-written CUDA.

The cheapest-edge step is ECL-MST's: every edge carries one packed 64-bit key
``pk = (hi << 32) | pos``, where ``hi`` is a 32-bit order-preserving image of
its weight and ``pos`` its position in the chunk's prepared arrays.  Positions
grow with edge ids inside a chunk, so ``pk`` orders the chunk's edges exactly
as the strict ``(weight, edge id)`` order does, and the cheapest edge of a
component is one atomic min of ``pk`` over its edges.  How ``hi`` is made
depends on the weight dtype (:func:`packing_for`):

=========================================  ===========  =====================
weights                                    packing      ``hi``
=========================================  ===========  =====================
float16, float32                           ``"f32"``    IEEE bits, sign-flipped
int8, int16, int32                         ``"i32"``    two's complement, sign bit flipped
uint8, uint16, uint32, bool                ``"u32"``    the value
float64, int64, uint64 (do not fit)        ``"rank"``   exact dense rank of the
                                                        weight in the chunk (a sort
                                                        once, when the chunk is prepared)
=========================================  ===========  =====================

A rank is only comparable inside its chunk; candidates leave a chunk as the
engine's common ``(comp, key, eid, other)`` sets (full 64-bit weight key,
global edge id), so merging candidates of GPU and CPU chunks is exact.  A
chunk holds at most ``2**32 - 1`` edges; a run may hold any number (edge ids
are int64).

A GPU chunk (:class:`DeviceChunk`) stays on its device between rounds; only
candidate sets (device -> host) and round maps (host -> device) cross, and the
map task reports both byte counts.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from mst_dist.kernels import reference

__all__ = [
    "DeviceChunk",
    "GPU_INSTALL_HINT",
    "GPUUnavailableError",
    "array_module",
    "gpu_ready",
    "packing_for",
    "hi_keys",
    "prepare_chunk",
    "ensure_device",
    "best_edges",
    "map_chunk",
    "filter_chunk",
    "filter_map_chunk",
    "split_light",
    "sample",
    "concat",
    "contract",
    "solve_local",
    "to_host",
    "take_to_host",
    "to_device",
]

GPU_INSTALL_HINT = "pip install 'mst-dist[gpu]'"

MAXKEY = np.uint64(0xFFFFFFFFFFFFFFFF)
LOW32 = np.uint64(0xFFFFFFFF)
SHIFT = np.uint64(32)
_SIGN64 = np.uint64(1 << 63)
_I32_BASE = np.uint64((1 << 63) - (1 << 31))
_SIGN32 = np.uint32(1 << 31)
MAX_CHUNK = 2**32 - 1


# ---------------------------------------------------------------------------
# array modules and transfers
# ---------------------------------------------------------------------------

def array_module(name=None):
    """The array module of the GPU kernels: ``"cupy"`` or the ``"numpy"`` stand-in.

    ``name`` defaults to the ``mst.gpu.array-module`` configuration.
    """
    if name is None:
        from mst_dist import config

        name = config.get("gpu.array-module", None, "cupy")
    if name == "numpy":
        return np
    if name == "cupy":
        import cupy

        return cupy
    raise ValueError(f"mst.gpu.array-module must be 'cupy' or 'numpy', got {name!r}")


class GPUUnavailableError(RuntimeError):
    """``backend="gpu"`` was asked for where no GPU can run the kernels."""


def gpu_ready(name=None):
    """Whether this process can run the GPU kernels: ``(ok, reason)``."""
    if name is None:
        from mst_dist import config

        name = config.get("gpu.array-module", None, "cupy")
    return _gpu_ready(name)


@functools.lru_cache(maxsize=None)
def _gpu_ready(name):
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


#: Device bytes per edge of the single-task solve, temporaries included
#: (u, v, pk, key0, eid0 = 32 bytes, plus the round's gathers and compaction).
DEVICE_BYTES_PER_EDGE = 64


def _xp_of(a):
    return np if isinstance(a, np.ndarray) else _module_of(a)


def _module_of(a):
    import cupy

    return cupy.get_array_module(a)


def to_host(a):
    """A NumPy copy of a device array (the array itself if it is on the host)."""
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "get"):
        return a.get()
    return np.asarray(a)


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


def take_to_host(a, idx):
    """``a[idx]`` as a host array; a device array is gathered on its device first."""
    if isinstance(a, np.ndarray):
        return a[idx]
    if hasattr(a, "__cuda_array_interface__"):
        xp = _module_of(a)
        return to_host(a[xp.asarray(idx)])
    return np.asarray(a)[idx]


def synchronize(xp):
    """Wait for the device's queued work (kernel timing); nothing on the host."""
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


def _clock(xp):
    synchronize(xp)
    return time.perf_counter()


def scatter_min(target, idx, vals, xp):
    """``target[idx] = min(target[idx], vals)`` with repeated indices: an atomic min."""
    if xp is np:
        np.minimum.at(target, idx, vals)
    else:
        import cupyx

        cupyx.scatter_min(target, idx, vals)


# ---------------------------------------------------------------------------
# packed keys
# ---------------------------------------------------------------------------

def packing_for(dtype):
    """How weights of ``dtype`` become the high 32 bits of a packed key (see the module doc)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return "f32" if dt.itemsize <= 4 else "rank"
    if dt.kind == "i":
        return "i32" if dt.itemsize <= 4 else "rank"
    if dt.kind in "ub":
        return "u32" if dt.itemsize <= 4 else "rank"
    raise TypeError(f"weights of dtype {dt} have no order-preserving key")


def hi_keys(key, packing, xp):
    """High 32 bits (as ``uint64``) of the packed keys, from the 64-bit weight keys.

    ``key`` is :func:`reference.weight_keys` of the weights.  For the direct
    packings the 32-bit image is computed from it exactly (the weights fit);
    for ``"rank"`` it is the dense rank of ``key`` among the given keys.
    """
    if packing == "u32":
        return key
    if packing == "i32":
        return key - _I32_BASE
    if packing == "f32":
        bits = xp.where(key >= _SIGN64, key ^ _SIGN64, ~key)
        b32 = bits.view(xp.float64).astype(xp.float32).view(xp.uint32)
        neg = b32 >= _SIGN32
        return xp.where(neg, ~b32, b32 | _SIGN32).astype(xp.uint64)
    if packing == "rank":
        if key.shape[0] == 0:
            return key.copy()
        _, inv = xp.unique(key, return_inverse=True)
        return inv.reshape(-1).astype(xp.uint64)
    raise ValueError(f"unknown packing {packing!r}")


def _pack(hi, xp):
    m = hi.shape[0]
    if m > MAX_CHUNK:
        raise ValueError(f"a GPU chunk holds at most {MAX_CHUNK:,} edges, this one {m:,}: "
                         "use more partitions")
    return (hi << SHIFT) | xp.arange(m, dtype=xp.uint64)


class DeviceChunk:
    """An edge chunk on a GPU worker.

    ``u, v``: current component ids of the chunk's live edges; ``pk``: their
    packed keys, whose low 32 bits index ``key0``/``eid0``, the weight keys and
    global ids of the chunk as it was prepared.  Filtering compacts ``u, v, pk``
    and leaves ``key0, eid0`` alone.  ``h2d`` counts bytes copied to the device
    for this chunk and not yet reported by a round.

    Pickled (sent to another worker, spilled) it travels as host arrays and is
    rebuilt on the host; the next kernel moves it to whatever device it runs on.
    """

    __slots__ = ("u", "v", "pk", "key0", "eid0", "packing", "h2d")

    def __init__(self, u, v, pk, key0, eid0, packing, h2d=0):
        self.u, self.v, self.pk, self.key0, self.eid0 = u, v, pk, key0, eid0
        self.packing = packing
        self.h2d = int(h2d)

    @property
    def xp(self):
        return _xp_of(self.u)

    def __len__(self):
        return int(self.u.shape[0])

    @property
    def nbytes(self):
        return int(sum(a.nbytes for a in (self.u, self.v, self.pk, self.key0, self.eid0)))

    def replace(self, u, v, pk, h2d=0):
        return DeviceChunk(u, v, pk, self.key0, self.eid0, self.packing, h2d)

    def edges(self):
        """Current ``(u, v, key, eid)`` of the live edges, on the chunk's device."""
        pos = (self.pk & LOW32).astype(self.xp.int64)
        return self.u, self.v, self.key0[pos], self.eid0[pos]

    def to_cpu(self):
        """The chunk as the CPU kernels' host tuple ``(u, v, key, eid)``."""
        return tuple(to_host(a) for a in self.edges())

    def __reduce__(self):
        return (DeviceChunk, (to_host(self.u), to_host(self.v), to_host(self.pk),
                              to_host(self.key0), to_host(self.eid0), self.packing, 0))

    def __repr__(self):
        return f"DeviceChunk({len(self)} edges, packing={self.packing!r}, on {self.xp.__name__})"


def _id_dtype(xp, n_vertices):
    return xp.int32 if n_vertices < 2**31 else xp.int64


def prepare_chunk(src, dst, w, offset, n_vertices, xp):
    """A raw chunk (host or device arrays) as a :class:`DeviceChunk`, self-loops dropped (role: prepare)."""
    h2d = 0
    arrs = []
    for a in (src, dst, w):
        d, nb = to_device(a, xp)
        arrs.append(d)
        h2d += nb
    src, dst, w = arrs
    packing = packing_for(w.dtype)
    keep = src != dst
    idt = _id_dtype(xp, n_vertices)
    pos = xp.flatnonzero(keep)
    u = src[pos].astype(idt)
    v = dst[pos].astype(idt)
    key0 = reference.weight_keys(w[pos], xp)
    eid0 = pos.astype(xp.int64) + np.int64(offset)
    pk = _pack(hi_keys(key0, packing, xp), xp)
    return DeviceChunk(u, v, pk, key0, eid0, packing, h2d)


def _ascending(eid, xp):
    return eid.shape[0] < 2 or bool(xp.all(eid[1:] > eid[:-1]))


def _from_edges(u, v, key, eid, packing, xp, h2d=0):
    """A chunk from current ``(u, v, key, eid)`` arrays on ``xp`` (ids ascending or made so)."""
    if not _ascending(eid, xp):
        order = xp.argsort(eid)
        u, v, key, eid = u[order], v[order], key[order], eid[order]
    pk = _pack(hi_keys(key, packing, xp), xp)
    return DeviceChunk(u, v, pk, key, eid, packing, h2d)


def ensure_device(chunk, packing, xp):
    """Any chunk (a host tuple of the CPU kernels, or a DeviceChunk anywhere) as a DeviceChunk on ``xp``."""
    if isinstance(chunk, DeviceChunk):
        if chunk.xp is xp:
            return chunk
        arrs, h2d = [], chunk.h2d
        for a in (chunk.u, chunk.v, chunk.pk, chunk.key0, chunk.eid0):
            d, nb = to_device(a, xp)
            arrs.append(d)
            h2d += nb
        return DeviceChunk(*arrs, chunk.packing, h2d)
    arrs, h2d = [], 0
    for a in chunk:
        d, nb = to_device(a, xp)
        arrs.append(d)
        h2d += nb
    u, v, key, eid = arrs
    return _from_edges(u, v, key, eid.astype(xp.int64), packing, xp, h2d)


# ---------------------------------------------------------------------------
# the phases
# ---------------------------------------------------------------------------

def best_edges(u, v, pk, n_comp, xp):
    """Cheapest edge of every component (role: map): ``(best, parent)`` over ``0..n_comp-1``.

    ``best[c]`` is the least packed key of an edge at ``c`` (``MAXKEY``: none);
    ``parent[c]`` the component at that edge's other end (``c`` itself: none).
    Two atomic mins, then one pass that finds each winning edge again (packed
    keys are unique, so each component has exactly one).  No self-loops.
    """
    best = xp.full(n_comp, MAXKEY, dtype=xp.uint64)
    scatter_min(best, u, pk, xp)
    scatter_min(best, v, pk, xp)
    parent = xp.arange(n_comp, dtype=xp.int64)
    if u.shape[0]:
        a = best[u] == pk
        parent[u[a]] = v[a]
        b = best[v] == pk
        parent[v[b]] = u[b]
    return best, parent


def map_chunk(ch: DeviceChunk, n_comp):
    """Candidate set ``(comp, key, eid, other)`` of a chunk, on the host (role: map).

    Returns ``(candidates, d2h bytes)``.
    """
    xp = ch.xp
    best, parent = best_edges(ch.u, ch.v, ch.pk, int(n_comp), xp)
    comp = xp.flatnonzero(best != MAXKEY)
    pos = (best[comp] & LOW32).astype(xp.int64)
    out = (comp.astype(xp.int64), ch.key0[pos], ch.eid0[pos], parent[comp])
    host = tuple(to_host(a) for a in out)
    return host, int(sum(a.nbytes for a in host))


def filter_chunk(ch: DeviceChunk, M):
    """Relabel endpoints by the round map ``M`` (on the chunk's device) and drop self-loops (role: filter-edges)."""
    xp = ch.xp
    nu = M[ch.u]
    nv = M[ch.v]
    keep = xp.flatnonzero(nu != nv)
    idt = ch.u.dtype
    return ch.replace(nu[keep].astype(idt), nv[keep].astype(idt), ch.pk[keep])


def filter_map_chunk(ch: DeviceChunk, M, n_comp):
    """Filter-edges of the last round, then map, on one chunk: ``(new chunk, candidates, d2h)``."""
    new = filter_chunk(ch, M)
    cand, d2h = map_chunk(new, n_comp)
    return new, cand, d2h


def split_light(ch: DeviceChunk, M, tk, te):
    """Pending relabel (``M`` or None), then the light edges ``(key, eid) <= (tk, te)`` apart from the heavy."""
    xp = ch.xp
    if M is not None:
        ch = filter_chunk(ch, M)
    _, _, key, eid = ch.edges()
    tk, te = np.uint64(tk), np.int64(te)
    light = (key < tk) | ((key == tk) & (eid <= te))
    li = xp.flatnonzero(light)
    hi = xp.flatnonzero(~light)
    # a pending upload is reported by the light chunk's first round
    return (ch.replace(ch.u[li], ch.v[li], ch.pk[li], ch.h2d),
            ch.replace(ch.u[hi], ch.v[hi], ch.pk[hi]))


def sample(ch: DeviceChunk, pos):
    """``(key, eid)`` of the live edges at host positions ``pos``, on the host."""
    xp = ch.xp
    p, _ = to_device(np.asarray(pos, np.int64), xp)
    q = (ch.pk[p] & LOW32).astype(xp.int64)
    return to_host(ch.key0[q]), to_host(ch.eid0[q])


def concat(chunks, xp):
    """One chunk from several on the same device, ids ascending (the single-task solve's input)."""
    chunks = list(chunks)
    if len(chunks) == 1:
        return chunks[0]
    if not chunks:
        z = xp.zeros(0, xp.int32)
        return DeviceChunk(z, z.copy(), xp.zeros(0, xp.uint64), xp.zeros(0, xp.uint64),
                           xp.zeros(0, xp.int64), "rank")
    packings = {c.packing for c in chunks}
    packing = packings.pop() if len(packings) == 1 else "rank"
    chunks = sorted(chunks, key=lambda c: int(c.eid0[0]) if c.eid0.shape[0] else 0)
    parts = [c.edges() for c in chunks]
    cols = [xp.concatenate([p[i] for p in parts]) for i in range(4)]
    idt = xp.int64 if any(c.u.dtype == xp.int64 for c in chunks) else xp.int32
    h2d = sum(c.h2d for c in chunks)
    return _from_edges(cols[0].astype(idt), cols[1].astype(idt), cols[2], cols[3], packing, xp, h2d)


def contract(best, parent, n_comp, finished_offset, xp, finish=True):
    """Hook, pointer-jump and renumber (roles: contract, filter-nodes), all on the device.

    ``best, parent`` from :func:`best_edges`.  A mutual pair keeps the smaller
    id as root (its edge counted once).  Returns ``(M, chosen_pos, n_next,
    n_finished)``: the round map (as in :func:`reference.contract`) and the
    ``key0/eid0`` positions of the chosen edges.
    """
    idx = xp.arange(n_comp, dtype=xp.int64)
    has = best != MAXKEY
    mutual = (parent[parent] == idx) & (idx < parent)
    parent[mutual] = idx[mutual]
    hooked = parent != idx
    chosen_pos = (best[hooked] & LOW32).astype(xp.int64)
    while True:
        nxt = parent[parent]
        if bool(xp.all(nxt == parent)):
            break
        parent = nxt
    is_root = parent == idx
    if finish:
        fin = is_root & ~has
        live = is_root & has
    else:
        fin = xp.zeros(n_comp, dtype=bool)
        live = is_root
    new_id = xp.cumsum(live) - 1
    fin_id = xp.cumsum(fin) - 1 + np.int64(finished_offset)
    M = xp.where(fin, -(fin_id + 1), new_id[parent]).astype(xp.int64)
    n_next = int(new_id[-1]) + 1 if n_comp else 0
    n_fin = int(fin_id[-1]) + 1 - int(finished_offset) if n_comp else 0
    return M, chosen_pos, n_next, n_fin


def _rounds(u, v, pk, n, cur, fin, eid0, xp, *, finish, chosen, trace, light=False, extra_s=0.0):
    """Borůvka rounds on the device until no component has an edge left.

    ``finish=False`` (a light pass, more edges to come): components without
    an edge stay live, and the rounds stop when the edges run out.  Returns
    ``(u, v, pk, n, cur, fin)``; ``cur`` maps the solve's input components to
    the current ones (``>= 0``) or to ``-(F + 1)``.
    """
    while n > 0 and (finish or u.shape[0] > 0):
        m_in = int(u.shape[0])
        t0 = _clock(xp)
        best, parent = best_edges(u, v, pk, n, xp)
        t1 = _clock(xp)
        M, cpos, n_next, n_fin = contract(best, parent, n, fin, xp, finish=finish)
        chosen.append(eid0[cpos])
        t2 = _clock(xp)
        cur = xp.where(cur >= 0, M[xp.maximum(cur, 0)], cur)
        t3 = _clock(xp)
        if m_in:
            nu = M[u]
            nv = M[v]
            keep = xp.flatnonzero(nu != nv)
            u, v, pk = nu[keep].astype(u.dtype), nv[keep].astype(v.dtype), pk[keep]
        t4 = _clock(xp)
        if trace is not None:
            trace.append({"phase_seconds": {"map": t1 - t0, "contract": t2 - t1,
                                            "filter-edges": (t4 - t3) + extra_s,
                                            "filter-nodes": t3 - t2},
                          "components_before": n, "components_after": n_next,
                          "edges_before": m_in, "edges_after": int(u.shape[0]),
                          "forest_edges": int(cpos.shape[0]), "light": light})
        extra_s = 0.0
        fin += n_fin
        n = n_next
    return u, v, pk, n, cur, fin


def _light_threshold(pk, n, light_factor, seed, xp):
    """A packed key below which about ``light_factor * n`` of the edges lie (from a sample)."""
    m = int(pk.shape[0])
    k = min(m, 1 << 16)
    pos, _ = to_device(np.random.default_rng(seed).integers(0, m, k), xp)
    sample = to_host(xp.sort(pk[pos]))
    q = int(k * light_factor * n / m)
    return None if not 0 < q < k else sample[q]


def solve_local(ch: DeviceChunk, n_comp, finished_offset=0, *, relabel=None, trace=None,
                light_factor=1.5, min_degree=3.0, seed=0):
    """The whole forest of one chunk on its device: Borůvka rounds until no edge is left.

    ``relabel``: a pending round map (on the device) applied first.  While
    edges outnumber components by more than ``min_degree`` to one, a light
    pass first solves the about ``light_factor * n`` lightest edges (a prefix
    of the packed-key order, threshold from a sample), then relabels the heavy
    rest once and drops what fell inside a component, as the CPU solve does.
    Returns ``(M, chosen_eids, n_finished)`` on the host, as
    :func:`mst_dist.kernels.cpu.solve_local` does: ``M`` maps every component
    ``0..n_comp-1`` to ``-(F + 1)``, ``F >= finished_offset``.
    """
    xp = ch.xp
    t = _clock(xp)
    if relabel is not None:
        ch = filter_chunk(ch, relabel)
    extra = _clock(xp) - t
    u, v, pk = ch.u, ch.v, ch.pk
    n = int(n_comp)
    cur = xp.arange(n, dtype=xp.int64)
    chosen = []
    fin = int(finished_offset)
    if light_factor > 0 and n > 0 and u.shape[0] > min_degree * n:
        t0 = _clock(xp)
        tpk = _light_threshold(pk, n, light_factor, seed, xp)
        if tpk is not None:
            light = pk <= tpk
            li, hi = xp.flatnonzero(light), xp.flatnonzero(~light)
            hu, hv, hpk = u[hi], v[hi], pk[hi]
            u, v, pk = u[li], v[li], pk[li]
            extra += _clock(xp) - t0
            n0 = n
            _, _, _, n, cur, fin = _rounds(u, v, pk, n, cur, fin, ch.eid0, xp, finish=False,
                                           chosen=chosen, trace=trace, light=True, extra_s=extra)
            extra = 0.0
            # the heavy edges, relabelled once: those inside a component are gone
            t1 = _clock(xp)
            m_heavy = int(hu.shape[0])
            nu, nv = cur[hu], cur[hv]
            keep = xp.flatnonzero(nu != nv)
            u, v, pk = nu[keep].astype(hu.dtype), nv[keep].astype(hv.dtype), hpk[keep]
            if trace is not None:
                trace.append({"phase_seconds": {"filter-edges": _clock(xp) - t1},
                              "components_before": n, "components_after": n,
                              "edges_before": m_heavy, "edges_after": int(u.shape[0]),
                              "forest_edges": 0, "filter_pass": True, "light_components": n0})
    _, _, _, n, cur, fin = _rounds(u, v, pk, n, cur, fin, ch.eid0, xp, finish=True,
                                   chosen=chosen, trace=trace, extra_s=extra)
    ids = xp.concatenate(chosen) if chosen else xp.zeros(0, xp.int64)
    return to_host(cur), to_host(ids), fin - int(finished_offset)

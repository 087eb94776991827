"""Numba kernels for CPU workers (same signatures as :mod:`.reference`).

Two families:

* serial ``nogil`` kernels for one edge chunk inside one Dask task
  (``map_chunk``, ``filter_map_chunk``, ``merge_candidates``, ``contract``):
  a worker runs as many of them at once as it has threads;
* ``parallel=True`` kernels for the single-task solve of a graph that fits on
  one worker (:func:`solve_local`): per-thread buffers over per-thread edge
  segments, merged afterwards, so no two threads ever write the same slot.

Edge arrays are carved from one buffer with a skew (:func:`alloc_soa`):
separately allocated arrays of equal size tend to start at the same offset
modulo the page size and evict each other from cache (measured: in-place
compaction 6x slower on R-MAT scale 21).
"""
from __future__ import annotations

import os

import numba
import numpy as np
from numba import njit, prange

if "NUMBA_THREADING_LAYER" not in os.environ:
    # Dask runs several kernels at once from its worker threads; the default
    # "workqueue" layer aborts on concurrent launches, OpenMP/TBB do not.
    numba.config.THREADING_LAYER = "threadsafe"

__all__ = [
    "alloc_soa",
    "weight_keys",
    "first_invalid_edge",
    "prepare_chunk",
    "map_chunk",
    "filter_map_chunk",
    "filter_edges",
    "merge_candidates",
    "contract",
    "compose_labels",
    "solve_local",
]

_KMAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_SIGN = np.uint64(1 << 63)
_SKEW = 1088  # bytes between carved arrays (not a multiple of 64 B lines nor of 4 KiB pages)


class _Arena:
    """Large scratch buffers kept for reuse within a process.

    On the virtual machines this engine is measured on, touching freshly
    mapped memory costs more than the kernels that fill it (a 240 MB working
    set: ~0.4 s of page faults against ~0.05 s of copying).  Buffers of at
    least ``min_bytes`` are therefore kept after use, up to ``limit`` bytes
    in all, and handed out again once nothing refers to them any more (every
    numpy view holds a reference to its base buffer, so a buffer whose only
    holder is the arena is free).  ``release()`` gives the memory back.
    """

    min_bytes = 1 << 22

    def __init__(self, limit=None):
        import threading

        if limit is None:
            try:
                limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
            except (ValueError, OSError, AttributeError):  # pragma: no cover
                limit = 4 << 30
        self.limit = int(limit)
        self.bufs = []
        self.lock = threading.Lock()

    def take(self, nbytes):
        """A uint8 buffer of at least ``nbytes`` (contents undefined)."""
        import sys

        if nbytes < self.min_bytes:
            return np.empty(nbytes, np.uint8)
        with self.lock:
            best = None
            for i in range(len(self.bufs)):
                b = self.bufs[i]
                # references: the list, ``b`` and getrefcount's argument
                if sys.getrefcount(b) == 3 and nbytes <= b.nbytes <= 2 * nbytes + (1 << 24):
                    if best is None or b.nbytes < self.bufs[best].nbytes:
                        best = i
                b = None
            if best is not None:
                return self.bufs[best][:nbytes]
            buf = np.empty(nbytes, np.uint8)
            self.bufs.append(buf)
            self._trim()
            return buf

    def _trim(self):
        import sys

        total = sum(b.nbytes for b in self.bufs)
        i = 0
        while total > self.limit and i < len(self.bufs):
            if sys.getrefcount(self.bufs[i]) == 2:  # the list and the argument: free
                total -= self.bufs[i].nbytes
                del self.bufs[i]
            else:
                i += 1

    def release(self):
        """Forget every buffer (memory in use stays valid; it is freed with its last view)."""
        with self.lock:
            self.bufs.clear()


ARENA = _Arena()


def empty(n, dtype):
    """``np.empty`` from the scratch arena (for large working arrays of the engine)."""
    dtype = np.dtype(dtype)
    return ARENA.take(n * dtype.itemsize + dtype.itemsize)[: n * dtype.itemsize].view(dtype)


def alloc_soa(m, dtypes):
    """Allocate one array of length ``m`` per dtype, carved from one buffer with a skew."""
    dtypes = [np.dtype(d) for d in dtypes]
    offs = []
    pos = 0
    for i, d in enumerate(dtypes):
        pos = (pos + 63) // 64 * 64 + (i * _SKEW if i else 0)
        offs.append(pos)
        pos += m * d.itemsize
    buf = ARENA.take(pos + 64)
    base = (-buf.ctypes.data) % 64  # the arena's slices may start anywhere: realign
    return [buf[base + o:base + o + m * d.itemsize].view(d) for o, d in zip(offs, dtypes)]


def _nthreads():
    return numba.get_num_threads()


def _blocks(m, t):
    b = np.empty(t + 1, np.int64)
    for i in range(t + 1):
        b[i] = (m * i) // t
    return b


# ---------------------------------------------------------------------------
# validation and keys
# ---------------------------------------------------------------------------

@njit(parallel=True, nogil=True, cache=True)
def _first_invalid(src, dst, w, check_w, n, bounds):
    T = bounds.shape[0] - 1
    first = np.full(T, -1, np.int64)
    mx = np.full(T, -1, np.int64)
    for t in prange(T):
        hi_id = np.int64(-1)
        for i in range(bounds[t], bounds[t + 1]):
            a = np.int64(src[i])
            b = np.int64(dst[i])
            bad = a < 0 or b < 0 or (n >= 0 and (a >= n or b >= n))
            if check_w:
                x = w[i]
                if not np.isfinite(x):
                    bad = True
            if bad:
                first[t] = i
                break
            if a > hi_id:
                hi_id = a
            if b > hi_id:
                hi_id = b
        mx[t] = hi_id
    return first, mx


def first_invalid_edge(src, dst, w, n_vertices):
    """First edge with a negative/out-of-range id or a NaN/inf weight.

    Returns ``(index, reason, max_id)``; ``index`` is -1 when all are valid
    (then ``max_id`` is the largest id, -1 for no edges).
    """
    m = src.shape[0]
    check_w = w is not None and w.dtype.kind == "f"
    wa = w if check_w else np.zeros(1, np.float64)
    bounds = _blocks(m, max(1, min(_nthreads() * 4, m // 65536 + 1)))
    if src.dtype == np.uint64 or dst.dtype == np.uint64:
        big = np.uint64(2**63 - 1)
        if m and (src.max() > big or dst.max() > big):
            i = int(np.flatnonzero((src > big) | (dst > big))[0])
            return i, "vertex id out of range", -1
        src = src.view(np.int64)
        dst = dst.view(np.int64)
    first, mx = _first_invalid(src, dst, wa, check_w, -1 if n_vertices is None else int(n_vertices), bounds)
    hits = first[first >= 0]
    if hits.size:
        i = int(hits.min())
        a, b = int(src[i]), int(dst[i])
        if a < 0 or b < 0:
            reason = "negative vertex id"
        elif check_w and not np.isfinite(w[i]):
            reason = "weight is NaN" if np.isnan(w[i]) else "weight is infinite"
        else:
            reason = "vertex id out of range"
        return i, reason, -1
    return -1, "", int(mx.max()) if m else -1


@njit(parallel=True, nogil=True, cache=True)
def _keys_f64(bits, out):
    for i in prange(bits.shape[0]):
        b = bits[i]
        if b == _SIGN:  # -0.0 sorts with +0.0
            b = np.uint64(0)
        if b >> np.uint64(63):
            out[i] = ~b
        else:
            out[i] = b | _SIGN


@njit(parallel=True, nogil=True, cache=True)
def _keys_i64(w, out):
    for i in prange(w.shape[0]):
        out[i] = np.uint64(w[i]) ^ _SIGN


def weight_keys(w):
    """Order-preserving ``uint64`` key of each weight (see reference.weight_keys)."""
    w = np.asarray(w)
    out = empty(w.shape[0], np.uint64)
    k = w.dtype.kind
    if k == "f":
        _keys_f64(np.ascontiguousarray(w, dtype=np.float64).view(np.uint64), out)
    elif k == "i" or k == "b":
        _keys_i64(np.ascontiguousarray(w, dtype=np.int64), out)
    elif k == "u":
        out[:] = w
    else:
        raise TypeError(f"weights of dtype {w.dtype} have no order-preserving key")
    return out


@njit(nogil=True, cache=True)
def _prepare(src, dst, key, offset, u, v, k, e):
    j = 0
    for i in range(src.shape[0]):
        a = src[i]
        b = dst[i]
        if a != b:
            u[j] = a
            v[j] = b
            k[j] = key[i]
            e[j] = offset + i
            j += 1
    return j


def id_dtype(n_vertices):
    """Narrowest id dtype for a graph: int32 below 2**31 vertices."""
    return np.int32 if n_vertices < 2**31 else np.int64


def prepare_chunk(src, dst, w, offset, n_vertices):
    """Working arrays ``(u, v, key, eid)`` of a raw chunk, self-loops dropped (role: prepare)."""
    key = weight_keys(w)
    m = src.shape[0]
    idt = id_dtype(n_vertices)
    u, v, k, e = alloc_soa(m, [idt, idt, np.uint64, np.int64])
    j = _prepare(src, dst, key, np.int64(offset), u, v, k, e)
    return u[:j], v[:j], k[:j], e[:j]


# ---------------------------------------------------------------------------
# one chunk, one task: map, filter-edges, merge, contract
# ---------------------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _better(k1, e1, k2, e2):
    return k1 < k2 or (k1 == k2 and e1 < e2)


@njit(nogil=True, cache=True)
def _extract(bk, be, bo):
    n = bk.shape[0]
    cnt = 0
    for c in range(n):
        if be[c] >= 0:
            cnt += 1
    comp = np.empty(cnt, np.int64)
    key = np.empty(cnt, np.uint64)
    eid = np.empty(cnt, np.int64)
    oth = np.empty(cnt, np.int64)
    j = 0
    for c in range(n):
        if be[c] >= 0:
            comp[j] = c
            key[j] = bk[c]
            eid[j] = be[c]
            oth[j] = bo[c]
            j += 1
    return comp, key, eid, oth


@njit(nogil=True, cache=True)
def _best_update(bk, be, bo, u, v, key, eid, m):
    for i in range(m):
        a = u[i]
        b = v[i]
        if a == b:
            continue
        k = key[i]
        e = eid[i]
        if _better(k, e, bk[a], be[a]) or be[a] < 0:
            bk[a] = k
            be[a] = e
            bo[a] = b
        if _better(k, e, bk[b], be[b]) or be[b] < 0:
            bk[b] = k
            be[b] = e
            bo[b] = a


@njit(nogil=True, cache=True)
def _map_chunk(u, v, key, eid, n_comp):
    bk = np.full(n_comp, _KMAX, np.uint64)
    be = np.full(n_comp, -1, np.int64)
    bo = np.empty(n_comp, np.int64)
    _best_update(bk, be, bo, u, v, key, eid, u.shape[0])
    return _extract(bk, be, bo)


def map_chunk(u, v, key, eid, n_comp):
    """Cheapest edge leaving each component the chunk touches (role: map)."""
    return _map_chunk(u, v, key, eid, np.int64(n_comp))


@njit(nogil=True, cache=True)
def _filter_map(u, v, key, eid, M, n_comp, nu, nv, nk, ne):
    bk = np.full(n_comp, _KMAX, np.uint64)
    be = np.full(n_comp, -1, np.int64)
    bo = np.empty(n_comp, np.int64)
    j = 0
    for i in range(u.shape[0]):
        a = M[u[i]]
        b = M[v[i]]
        if a == b:
            continue
        k = key[i]
        e = eid[i]
        nu[j] = a
        nv[j] = b
        nk[j] = k
        ne[j] = e
        j += 1
        if be[a] < 0 or _better(k, e, bk[a], be[a]):
            bk[a] = k
            be[a] = e
            bo[a] = b
        if be[b] < 0 or _better(k, e, bk[b], be[b]):
            bk[b] = k
            be[b] = e
            bo[b] = a
    comp, ck, ce, co = _extract(bk, be, bo)
    return j, comp, ck, ce, co


def filter_map_chunk(u, v, key, eid, M, n_comp):
    """filter-edges of the last round fused with map of this one.

    Relabels endpoints by ``M``, drops self-loops, and finds the cheapest
    edge per component in the same pass.  Returns ``((u, v, key, eid),
    candidates)``.
    """
    m = u.shape[0]
    nu, nv, nk, ne = alloc_soa(m, [u.dtype, v.dtype, np.uint64, np.int64])
    Mi = M  # int64; the kernel stores into the chunk's id dtype (values < n_comp)
    j, comp, ck, ce, co = _filter_map(u, v, key, eid, Mi, np.int64(n_comp), nu, nv, nk, ne)
    return (nu[:j], nv[:j], nk[:j], ne[:j]), (comp, ck, ce, co)


@njit(nogil=True, cache=True)
def _filter(u, v, key, eid, M, nu, nv, nk, ne):
    j = 0
    for i in range(u.shape[0]):
        a = M[u[i]]
        b = M[v[i]]
        if a != b:
            nu[j] = a
            nv[j] = b
            nk[j] = key[i]
            ne[j] = eid[i]
            j += 1
    return j


def filter_edges(u, v, key, eid, M):
    """Relabel endpoints by the round map and drop self-loops (role: filter-edges)."""
    m = u.shape[0]
    nu, nv, nk, ne = alloc_soa(m, [u.dtype, v.dtype, np.uint64, np.int64])
    Mi = M  # int64; the kernel stores into the chunk's id dtype (values < n_comp)
    j = _filter(u, v, key, eid, Mi, nu, nv, nk, ne)
    return nu[:j], nv[:j], nk[:j], ne[:j]


@njit(nogil=True, cache=True)
def _split_light(u, v, key, eid, M, relabel, tk, te, lu, lv, lk, le, hu, hv, hk, he):
    nl = 0
    nh = 0
    for i in range(u.shape[0]):
        a = u[i]
        b = v[i]
        if relabel:
            a = M[a]
            b = M[b]
        if a == b:
            continue
        k = key[i]
        e = eid[i]
        if k < tk or (k == tk and e <= te):
            lu[nl] = a
            lv[nl] = b
            lk[nl] = k
            le[nl] = e
            nl += 1
        else:
            hu[nh] = a
            hv[nh] = b
            hk[nh] = k
            he[nh] = e
            nh += 1
    return nl, nh


def split_light(u, v, key, eid, M, tk, te):
    """Light edges (``(key, eid) <= (tk, te)``) apart from heavy ones (role: filter-edges).

    Relabels by ``M`` first when given, and drops self-loops.  Returns
    ``(light, heavy)`` chunks.
    """
    m = u.shape[0]
    L = alloc_soa(m, [u.dtype, v.dtype, np.uint64, np.int64])
    H = alloc_soa(m, [u.dtype, v.dtype, np.uint64, np.int64])
    Mi = M if M is not None else np.zeros(1, np.int64)
    nl, nh = _split_light(u, v, key, eid, Mi, M is not None, np.uint64(tk), np.int64(te), *L, *H)
    # copy the light part out (it is small); keep the heavy part as a view of its buffer
    return tuple(a[:nl].copy() for a in L), tuple(a[:nh] for a in H)


@njit(nogil=True, cache=True)
def _merge2(c1, k1, e1, o1, c2, k2, e2, o2):
    n1 = c1.shape[0]
    n2 = c2.shape[0]
    cap = n1 + n2
    c = np.empty(cap, np.int64)
    k = np.empty(cap, np.uint64)
    e = np.empty(cap, np.int64)
    o = np.empty(cap, np.int64)
    i = 0
    j = 0
    n = 0
    while i < n1 or j < n2:
        if j >= n2 or (i < n1 and c1[i] < c2[j]):
            c[n] = c1[i]; k[n] = k1[i]; e[n] = e1[i]; o[n] = o1[i]
            i += 1
        elif i >= n1 or c2[j] < c1[i]:
            c[n] = c2[j]; k[n] = k2[j]; e[n] = e2[j]; o[n] = o2[j]
            j += 1
        else:
            if _better(k2[j], e2[j], k1[i], e1[i]):
                c[n] = c2[j]; k[n] = k2[j]; e[n] = e2[j]; o[n] = o2[j]
            else:
                c[n] = c1[i]; k[n] = k1[i]; e[n] = e1[i]; o[n] = o1[i]
            i += 1
            j += 1
        n += 1
    return c[:n], k[:n], e[:n], o[:n]


def merge_candidates(parts):
    """Combine sorted candidate sets into one cheapest edge per component (role: merge).

    Pairwise two-pointer merges, smallest first; associative, commutative and
    idempotent, so any tree of merges gives the same answer.
    """
    parts = [p for p in parts if p[0].shape[0]]
    if not parts:
        z = np.zeros(0, np.int64)
        return z, np.zeros(0, np.uint64), z.copy(), z.copy()
    while len(parts) > 1:
        parts.sort(key=lambda p: p[0].shape[0])
        a, b = parts[0], parts[1]
        parts = parts[2:] + [_merge2(*a, *b)]
    return parts[0]


@njit(parallel=True, nogil=True, cache=True)
def _jump_and_number(parent, has, n_comp, fin_off, finish, M, B):
    """Pointer-jump ``parent`` to its roots, then number them (roles: contract, filter-nodes).

    Live roots get ``0..n_next-1`` in id order; with ``finish``, roots without
    a candidate (``has`` false) are finished: ``-(F + 1)``, ``F`` from
    ``fin_off`` on.  Every component then takes its root's number in ``M``.
    Returns ``(n_next, n_finished)``.
    """
    # Follow each pointer up to 16 steps and store where it got (its root,
    # almost always: hook trees are shallow); repeat while some did not reach
    # a root (a long chain).  Writes only ever replace a pointer by an
    # ancestor, and roots never change, so concurrent readers stay correct
    # and every pass shortens every path.  One pass in the common case,
    # against 4-5 full passes of plain pointer doubling.
    while True:
        left = 0
        for c in prange(n_comp):
            p = parent[c]
            if parent[p] == p:
                continue
            r = p
            for _ in range(16):
                q = parent[r]
                if q == r:
                    break
                r = q
            parent[c] = r
            if parent[r] != r:
                left += 1
        if left == 0:
            break
    nl = np.zeros(B + 1, np.int64)
    nf = np.zeros(B + 1, np.int64)
    for b in prange(B):  # blocked scan
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        a = 0
        f = 0
        for c in range(lo, hi):
            if parent[c] == c:
                if has[c] or not finish:
                    a += 1
                else:
                    f += 1
        nl[b + 1] = a
        nf[b + 1] = f
    for b in range(B):
        nl[b + 1] += nl[b]
        nf[b + 1] += nf[b]
    for b in prange(B):
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        a = nl[b]
        f = nf[b] + fin_off
        for c in range(lo, hi):
            if parent[c] == c:
                if has[c] or not finish:
                    M[c] = a
                    a += 1
                else:
                    M[c] = -(f + 1)
                    f += 1
    for c in prange(n_comp):
        p = parent[c]
        if p != c:
            M[c] = M[p]
    return nl[B], nf[B]


@njit(parallel=True, nogil=True, cache=True)
def _contract(comp, key, eid, other, n_comp, fin_off, finish, parent, M, has, nthr):
    k = comp.shape[0]
    for c in prange(n_comp):
        parent[c] = c
        has[c] = False
    for i in prange(k):
        parent[comp[i]] = other[i]
        has[comp[i]] = True
    mark = np.empty(k, np.bool_)
    n_mut = 0
    for i in prange(k):
        c = comp[i]
        o = other[i]
        mk = parent[o] == c and c < o
        mark[i] = mk
        if mk:
            n_mut += 1
    for i in prange(k):
        if mark[i]:
            parent[comp[i]] = comp[i]
    chosen = np.empty(k - n_mut, np.int64)
    j = 0
    for i in range(k):
        if not mark[i]:
            chosen[j] = eid[i]
            j += 1
    B = min(nthr * 4, n_comp // 65536 + 1)
    n_next, n_fin = _jump_and_number(parent, has, n_comp, fin_off, finish, M, B)
    return chosen, n_next, n_fin


def contract(comp, key, eid, other, n_comp, finished_offset, finish=True, work=None):
    """Hook, pointer-jump and compact (roles: contract, filter-nodes).

    Same contract as :func:`mst_dist.kernels.reference.contract`, except that
    ``chosen_eids`` come in candidate order (sort them when needed).
    ``work``: optional scratch ``(int64 array, bool array)`` of at least
    ``n_comp`` entries, reused across rounds.
    """
    n_comp = int(n_comp)
    if work is None or work[0].shape[0] < n_comp:
        work = (np.empty(n_comp, np.int64), np.empty(n_comp, np.bool_))
    M = np.empty(n_comp, np.int64)
    chosen, n_next, n_fin = _contract(comp, key, eid, other, np.int64(n_comp),
                                      np.int64(finished_offset), bool(finish), work[0][:n_comp], M,
                                      work[1][:n_comp], np.int64(_nthreads()))
    return M, chosen, int(n_next), int(n_fin)


# ---------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------

@njit(parallel=True, nogil=True, cache=True)
def _compose_step(M, final, out):
    for c in prange(M.shape[0]):
        x = M[c]
        out[c] = final[x] if x >= 0 else x


@njit(nogil=True, cache=True)
def _canonical(final, n_fin):
    seen = np.full(n_fin, -1, np.int64)
    out = np.empty(final.shape[0], np.int64)
    cnt = 0
    for i in range(final.shape[0]):
        f = -final[i] - 1
        s = seen[f]
        if s < 0:
            s = cnt
            seen[f] = cnt
            cnt += 1
        out[i] = s
    return out, cnt


@njit(parallel=True, nogil=True, cache=True)
def _canonical_p(final, n_fin, T, out):
    """Number final components by their smallest vertex, in parallel (see ``_canonical``)."""
    n = final.shape[0]
    firsts = np.full((T, n_fin), n, np.int64)
    for t in prange(T):
        lo = (n * t) // T
        hi = (n * (t + 1)) // T
        ft = firsts[t]
        for v in range(lo, hi):
            f = -final[v] - 1
            if ft[f] == n:
                ft[f] = v
    for f in prange(n_fin):
        m = firsts[0, f]
        for t in range(1, T):
            if firsts[t, f] < m:
                m = firsts[t, f]
        firsts[0, f] = m
    first = firsts[0]
    cnt = np.zeros(T + 1, np.int64)
    for t in prange(T):
        lo = (n * t) // T
        hi = (n * (t + 1)) // T
        a = 0
        for v in range(lo, hi):
            if first[-final[v] - 1] == v:
                a += 1
        cnt[t + 1] = a
    for t in range(T):
        cnt[t + 1] += cnt[t]
    lab = np.empty(n_fin, np.int64)
    for t in prange(T):
        lo = (n * t) // T
        hi = (n * (t + 1)) // T
        a = cnt[t]
        for v in range(lo, hi):
            f = -final[v] - 1
            if first[f] == v:
                lab[f] = a
                a += 1
    for v in prange(n):
        out[v] = lab[-final[v] - 1]
    return out, cnt[T]


def take_rows(src, dst, w, ids):
    """``(src[ids], dst[ids], w[ids])`` with parallel gathers."""
    k = ids.shape[0]
    a, b, c = empty(k, src.dtype), empty(k, dst.dtype), empty(k, w.dtype)
    _take_rows(src, dst, w, ids, a, b, c)
    return a, b, c


@njit(parallel=True, nogil=True, cache=True)
def _take_rows(src, dst, w, ids, a, b, c):
    k = ids.shape[0]
    for i in prange(k):
        j = ids[i]
        a[i] = src[j]
        b[i] = dst[j]
        c[i] = w[j]


def compose_labels(maps, n_vertices):
    """Final canonical component of every vertex from the rounds' maps (see reference)."""
    if n_vertices == 0:
        return np.zeros(0, np.int64), 0
    final = None
    for M in reversed(maps):
        if final is None:
            final = M
            continue
        out = empty(M.shape[0], np.int64)
        _compose_step(M, final, out)
        final = out
    n_fin = int(-final.min()) if final.size else 0
    T = max(1, min(_nthreads(), n_vertices // 65536))
    if T > 1 and n_fin <= n_vertices // 4:
        labels, cnt = _canonical_p(final, n_fin, T, empty(n_vertices, np.int64))
    else:
        labels, cnt = _canonical(final, n_fin)
    return labels, int(cnt)


# ---------------------------------------------------------------------------
# the single-task solve: parallel kernels over per-thread segments
# ---------------------------------------------------------------------------

@njit(parallel=True, nogil=True, cache=True)
def _concat(chunks_u, chunks_v, chunks_k, chunks_e, offs, u, v, k, e):
    for c in prange(offs.shape[0]):
        c = np.intp(c)
        o = offs[c]
        cu = chunks_u[c]
        cv = chunks_v[c]
        ck = chunks_k[c]
        ce = chunks_e[c]
        for i in range(cu.shape[0]):
            u[o + i] = cu[i]
            v[o + i] = cv[i]
            k[o + i] = ck[i]
            e[o + i] = ce[i]


@njit(parallel=True, nogil=True, cache=True)
def _p_best(u, v, key, eid, seg, cnt, n_comp, bk, be, bo):
    """Per-thread cheapest edge per component: key, edge id and the other end (role: map).

    Keeping the edge id and the other endpoint beside the key (written only
    when a minimum improves) spares the merge three random reads per
    component into the edge arrays.
    """
    T = cnt.shape[0]
    for t in prange(T):
        tk = bk[t]
        te = be[t]
        to = bo[t]
        for c in range(n_comp):
            tk[c] = _KMAX
            te[c] = -1
        for i in range(seg[t], seg[t] + cnt[t]):
            a = u[i]
            b = v[i]
            k = key[i]
            if k < tk[a] or (k == tk[a] and (te[a] < 0 or eid[i] < te[a])):
                tk[a] = k
                te[a] = eid[i]
                to[a] = b
            if k < tk[b] or (k == tk[b] and (te[b] < 0 or eid[i] < te[b])):
                tk[b] = k
                te[b] = eid[i]
                to[b] = a


@njit(parallel=True, nogil=True, cache=True)
def _p_relabel(u, v, key, eid, seg, cnt, M):
    T = cnt.shape[0]
    for t in prange(T):
        j = seg[t]
        for i in range(seg[t], seg[t] + cnt[t]):
            a = M[u[i]]
            b = M[v[i]]
            if a != b:
                u[j] = a
                v[j] = b
                key[j] = key[i]
                eid[j] = eid[i]
                j += 1
        cnt[t] = j - seg[t]


@njit(parallel=True, nogil=True, cache=True)
def _p_split(u, v, key, eid, seg, cnt, tk, te, lu, lv, lk, le, lseg, lcnt):
    """Move edges with (key, eid) <= (tk, te) to the light arrays; compact the rest in place."""
    T = cnt.shape[0]
    for t in prange(T):
        j = seg[t]
        h = lseg[t]
        for i in range(seg[t], seg[t] + cnt[t]):
            k = key[i]
            e = eid[i]
            if k < tk or (k == tk and e <= te):
                lu[h] = u[i]
                lv[h] = v[i]
                lk[h] = k
                le[h] = e
                h += 1
            else:
                u[j] = u[i]
                v[j] = v[i]
                key[j] = k
                eid[j] = e
                j += 1
        cnt[t] = j - seg[t]
        lcnt[t] = h - lseg[t]


@njit(parallel=True, nogil=True, cache=True)
def _p_count_light(key, eid, seg, cnt, tk, te):
    T = cnt.shape[0]
    out = np.zeros(T, np.int64)
    for t in prange(T):
        a = 0
        for i in range(seg[t], seg[t] + cnt[t]):
            k = key[i]
            if k < tk or (k == tk and eid[i] <= te):
                a += 1
        out[t] = a
    return out


@njit(parallel=True, nogil=True, cache=True)
def _p_compose_forward(cur, M):
    for i in prange(cur.shape[0]):
        cur[i] = M[cur[i]]


@njit(parallel=True, nogil=True, cache=True)
def _p_dedupe(u, v, key, eid, seg, cnt):
    """Keep only the lightest of parallel edges within each segment (role: filter-edges).

    Open addressing on the unordered endpoint pair; a loser is dropped, the
    segment compacted in place.  Any subset of parallel edges that keeps each
    pair's lightest is safe to drop (the cycle property).
    """
    T = cnt.shape[0]
    dropped = np.zeros(T, np.int64)
    for t in prange(T):
        s0 = seg[t]
        n = cnt[t]
        if n < 2:
            continue
        cap = 1
        while cap < 2 * n:
            cap *= 2
        mask = np.uint64(cap - 1)
        table = np.full(cap, -1, np.int64)
        dead = np.zeros(n, np.bool_)
        for i in range(s0, s0 + n):
            a = np.uint64(u[i])
            b = np.uint64(v[i])
            if a > b:
                a, b = b, a
            h = ((a * np.uint64(0x9E3779B97F4A7C15)) ^ (b * np.uint64(0xC2B2AE3D27D4EB4F))) >> np.uint64(17)
            h &= mask
            while True:
                p = table[h]
                if p < 0:
                    table[h] = i
                    break
                pa = np.uint64(u[p])
                pb = np.uint64(v[p])
                if pa > pb:
                    pa, pb = pb, pa
                if pa == a and pb == b:
                    if key[i] < key[p] or (key[i] == key[p] and eid[i] < eid[p]):
                        dead[p - s0] = True
                        table[h] = i
                    else:
                        dead[i - s0] = True
                    break
                h = (h + np.uint64(1)) & mask
        j = s0
        for i in range(s0, s0 + n):
            if not dead[i - s0]:
                u[j] = u[i]
                v[j] = v[i]
                key[j] = key[i]
                eid[j] = eid[i]
                j += 1
        dropped[t] = s0 + n - j
        cnt[t] = j - s0
    return dropped.sum()


@njit(parallel=True, nogil=True, cache=True)
def _p_reduce_contract(bk, be, bo, n_comp, fin_off, finish, parent, has, M, chosen):
    """Merge the threads' best edges and contract on dense arrays (roles: merge, contract, filter-nodes).

    The dense twin of :func:`merge_candidates` followed by :func:`contract`
    (same result), without building a sparse candidate set.  Returns
    ``(n_chosen, n_next, n_finished)``; the chosen edge ids are written to
    ``chosen[:n_chosen]`` (at most ``n_comp - 1`` of them).
    """
    T = bk.shape[0]
    B = min(T * 4, n_comp // 65536 + 1)
    # merge the per-thread minima; hook each component to the other end of its best edge
    for c in prange(n_comp):
        best_k = bk[0, c]
        best_e = be[0, c]
        best_o = bo[0, c]
        for t in range(1, T):
            e = be[t, c]
            if e >= 0:
                kk = bk[t, c]
                if best_e < 0 or kk < best_k or (kk == best_k and e < best_e):
                    best_k = kk
                    best_e = e
                    best_o = bo[t, c]
        be[0, c] = best_e
        if best_e >= 0:
            parent[c] = best_o
            has[c] = True
        else:
            parent[c] = c
            has[c] = False
    # a mutual pair keeps its smaller id as root (safe in place: only the
    # partner reads parent[c] here, and its own test needs partner < c)
    cnt = np.zeros(B + 1, np.int64)
    for b in prange(B):
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        a = 0
        for c in range(lo, hi):
            if has[c]:
                o = parent[c]
                if c < o and parent[o] == c:
                    parent[c] = c
                else:
                    a += 1
        cnt[b + 1] = a
    for b in range(B):
        cnt[b + 1] += cnt[b]
    for b in prange(B):
        lo = (n_comp * b) // B
        hi = (n_comp * (b + 1)) // B
        j = cnt[b]
        for c in range(lo, hi):
            if has[c] and parent[c] != c:
                chosen[j] = be[0, c]
                j += 1
    n_next, n_fin = _jump_and_number(parent, has, n_comp, fin_off, finish, M, B)
    return cnt[B], n_next, n_fin


class _Segments:
    """Edge arrays split into per-thread segments (each segment compacts in place)."""

    def __init__(self, u, v, key, eid, T):
        self.u, self.v, self.key, self.eid = u, v, key, eid
        m = u.shape[0]
        b = _blocks(m, T)
        self.seg = b[:-1].copy()
        self.cnt = np.diff(b)

    @property
    def m(self):
        return int(self.cnt.sum())


def _sample_threshold(S, n_light, rng):
    """A (key, eid) threshold with about ``n_light`` edges at or below it (sampled)."""
    m = S.m
    ns = min(m, 4096)
    # sample positions uniformly over the live edges of all segments
    cum = np.concatenate([[0], np.cumsum(S.cnt)])
    r = np.sort(rng.integers(0, m, ns))
    t = np.searchsorted(cum, r, side="right") - 1
    pos = S.seg[t] + (r - cum[t])
    ks = S.key[pos]
    es = S.eid[pos]
    order = np.lexsort((es, ks))
    q = min(ns - 1, max(0, int(ns * n_light / m)))
    j = order[q]
    return ks[j], es[j]


def solve_local(u, v, key, eid, n_comp, finished_offset=0, *, light_factor=1.5,
                min_degree=3.0, dedupe=0.0, seed=0, trace=None, relabel=None):
    """The whole MSF of one edge set in this process (roles: all five, in a loop).

    ``u, v`` are component ids in ``[0, n_comp)``; the arrays are consumed
    (compacted in place).  Borůvka rounds run on per-thread segments with
    per-thread best arrays.  While the edges are many per component
    (``m > min_degree * n``), a *light pass* first solves the about
    ``light_factor * n`` lightest edges (a prefix of the strict order, found by
    sampling), then relabels the heavy rest and drops what fell inside a
    component: the filtering of GBBS and ECL-MST, which saves whole passes on
    dense graphs.

    Returns ``(M, chosen_eids, n_finished)``: ``M`` maps every input
    component to ``-(F + 1)`` (all finish here), ``F >= finished_offset``.
    With ``dedupe > 0``, after a relabel that leaves more than ``dedupe``
    edges per component, parallel edges are cut to the lightest of each pair
    (within each thread's segment).

    ``relabel``: an id map to apply to ``u, v`` first (with self-loops
    dropped), in place: the filter-edges of a distributed round before it.
    The input ids are then those of the map's *values*.

    ``trace``, if a list, receives one dict per round.
    """
    import time

    T = max(1, _nthreads())
    rng = np.random.default_rng(seed)
    S = _Segments(u, v, key, eid, T)
    if relabel is not None:
        t0 = time.perf_counter()
        m_before = S.m
        _p_relabel(S.u, S.v, S.key, S.eid, S.seg, S.cnt, relabel)
        if trace is not None:
            trace.append(dict(round=0, components_before=int(relabel.shape[0]),
                              components_after=int(n_comp), edges_before=m_before, edges_after=S.m,
                              forest_edges=0, finished=0, light=False, filter_pass=True,
                              phase_seconds={"filter-edges": time.perf_counter() - t0}))
    # scratch reused by every round (fresh allocations would page-fault each round)
    n0 = max(1, int(n_comp))
    bk_buf = empty(T * n0, np.uint64)
    be_buf = empty(T * n0, np.int64)
    bo_buf = empty(T * n0, u.dtype)
    work = (empty(n0, np.int64), empty(n0, np.bool_))
    maps = []          # round maps, input comp space first
    ch_buf = empty(n0, np.int64)  # every round's chosen edge ids, back to back
    n_chosen = [0]
    n_cur = int(n_comp)
    fin = int(finished_offset)
    rnd = 0

    def boruvka(S, n_cur, finish, fin):
        """Rounds until no edge is left in S; returns (n_cur, fin, maps)."""
        nonlocal rnd
        local_maps = []
        while True:
            m_before = S.m
            if m_before == 0 and not finish:
                break
            t0 = time.perf_counter()
            bk = bk_buf[:T * n_cur].reshape(T, n_cur)
            be = be_buf[:T * n_cur].reshape(T, n_cur)
            bo = bo_buf[:T * n_cur].reshape(T, n_cur)
            _p_best(S.u, S.v, S.key, S.eid, S.seg, S.cnt, np.int64(n_cur), bk, be, bo)
            t1 = time.perf_counter()
            M = empty(n_cur, np.int64)
            n_ch, n_next, n_f = _p_reduce_contract(bk, be, bo, np.int64(n_cur), np.int64(fin),
                                                   bool(finish), work[0][:n_cur], work[1][:n_cur], M,
                                                   ch_buf[n_chosen[0]:])
            ch = ch_buf[n_chosen[0]:n_chosen[0] + n_ch]
            n_chosen[0] += int(n_ch)
            n_next = int(n_next)
            n_f = int(n_f)
            t3 = time.perf_counter()
            local_maps.append(M)
            if n_next:
                _p_relabel(S.u, S.v, S.key, S.eid, S.seg, S.cnt, M)
                if dedupe > 0 and S.m > dedupe * n_next:
                    _p_dedupe(S.u, S.v, S.key, S.eid, S.seg, S.cnt)
            else:
                S.cnt[:] = 0
            t4 = time.perf_counter()
            if trace is not None:
                trace.append(dict(round=rnd, components_before=n_cur, components_after=n_next,
                                  edges_before=m_before, edges_after=S.m, forest_edges=int(ch.shape[0]),
                                  finished=n_f, light=not finish,
                                  # merge, contract and filter-nodes are one fused kernel here
                                  phase_seconds={"map": t1 - t0, "contract": t3 - t1,
                                                 "filter-edges": t4 - t3}))
            rnd += 1
            fin += n_f
            n_cur = n_next
            if n_cur == 0 or (not finish and S.m == 0):
                break
        return n_cur, fin, local_maps

    while True:
        m = S.m
        if n_cur and m > min_degree * n_cur and light_factor > 0:
            tk, te = _sample_threshold(S, light_factor * n_cur, rng)
            lc = _p_count_light(S.key, S.eid, S.seg, S.cnt, tk, te)
            nl = int(lc.sum())
            lu, lv, lk, le = alloc_soa(nl, [S.u.dtype, S.v.dtype, np.uint64, np.int64])
            lseg = np.concatenate([[0], np.cumsum(lc)[:-1]]).astype(np.int64)
            lcnt = np.zeros(T, np.int64)
            _p_split(S.u, S.v, S.key, S.eid, S.seg, S.cnt, tk, te, lu, lv, lk, le, lseg, lcnt)
            L = _Segments(lu, lv, lk, le, T)
            L.seg, L.cnt = lseg, lcnt
            n_before = n_cur
            n_cur, fin, lmaps = boruvka(L, n_cur, False, fin)
            del L, lu, lv, lk, le
            if lmaps:
                # one map for the whole light pass, then relabel the heavy edges once
                P = lmaps[0].copy()
                for Mx in lmaps[1:]:
                    _p_compose_forward(P, Mx)
                maps.append(P)
                t0 = time.perf_counter()
                m_h = S.m
                _p_relabel(S.u, S.v, S.key, S.eid, S.seg, S.cnt, P)
                if dedupe > 0 and S.m > dedupe * n_cur:
                    _p_dedupe(S.u, S.v, S.key, S.eid, S.seg, S.cnt)
                if trace is not None:
                    trace.append(dict(round=rnd, components_before=n_before, components_after=n_cur,
                                      edges_before=m_h, edges_after=S.m, forest_edges=0, finished=0,
                                      light=False, filter_pass=True,
                                      phase_seconds={"filter-edges": time.perf_counter() - t0}))
            continue
        n_cur, fin, fmaps = boruvka(S, n_cur, True, fin)
        maps.extend(fmaps)
        break
    # compose the maps back to the input component space
    if not maps:
        M = np.full(int(n_comp), 0, np.int64)
        M[:] = -(np.arange(int(n_comp)) + finished_offset + 1)
        return M, np.zeros(0, np.int64), int(n_comp)
    t0 = time.perf_counter()
    final = maps[-1]
    for Mx in reversed(maps[:-1]):
        out = np.empty(Mx.shape[0], np.int64)
        _compose_step(Mx, final, out)
        final = out
    if trace:
        # composing the rounds' id maps back to the input ids: filter-nodes' bookkeeping
        trace[-1]["phase_seconds"]["filter-nodes"] = time.perf_counter() - t0
    ch = ch_buf[:n_chosen[0]]
    return final, ch, fin - int(finished_offset)


def concat_chunks(chunks, n_vertices):
    """One set of working arrays from several chunks (parallel copy into one skewed buffer)."""
    from numba.typed import List

    sizes = np.array([c[0].shape[0] for c in chunks], np.int64)
    m = int(sizes.sum())
    idt = id_dtype(n_vertices)
    u, v, k, e = alloc_soa(m, [idt, idt, np.uint64, np.int64])
    if m == 0:
        return u, v, k, e
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    lu, lv, lk, le = List(), List(), List(), List()
    for c in chunks:
        lu.append(np.ascontiguousarray(c[0], dtype=idt))
        lv.append(np.ascontiguousarray(c[1], dtype=idt))
        lk.append(c[2])
        le.append(c[3])
    _concat(lu, lv, lk, le, offs, u, v, k, e)
    return u, v, k, e


@njit(parallel=True, nogil=True, cache=True)
def _count_nonloops(srcs, dsts, nc):
    out = np.zeros(nc, np.int64)
    for c in prange(nc):
        c = np.intp(c)  # prange's index is unsigned; typed lists want intp
        s = srcs[c]
        d = dsts[c]
        a = 0
        for i in range(s.shape[0]):
            if s[i] != d[i]:
                a += 1
        out[c] = a
    return out


@njit(parallel=True, nogil=True, cache=True)
def _concat_prepare(srcs, dsts, keys, offsets, outpos, u, v, k, e):
    for c in prange(offsets.shape[0]):
        c = np.intp(c)  # prange's index is unsigned; typed lists want intp
        s = srcs[c]
        d = dsts[c]
        kk = keys[c]
        off = offsets[c]
        j = outpos[c]
        for i in range(s.shape[0]):
            a = s[i]
            b = d[i]
            if a != b:
                u[j] = a
                v[j] = b
                k[j] = kk[i]
                e[j] = off + i
                j += 1


def prepare_many(raws, offsets, n_vertices):
    """Working arrays of several raw chunks at once, self-loops dropped (role: prepare).

    ``raws`` is a list of ``(src, dst, weight)``; ``offsets`` the global id of
    each chunk's first edge.  Splits big chunks so every thread has work.
    """
    from numba.typed import List

    idt = id_dtype(n_vertices)
    pieces = []
    T = _nthreads()
    total = sum(r[0].shape[0] for r in raws)
    step = max(1 << 16, total // (4 * T) + 1)
    for (s, d, w), off in zip(raws, offsets):
        s = np.asarray(s)
        d = np.asarray(d)
        for a in range(0, s.shape[0], step):
            pieces.append((s[a:a + step], d[a:a + step], w[a:a + step], int(off) + a))
    if not pieces:
        return alloc_soa(0, [idt, idt, np.uint64, np.int64])
    sdt = np.result_type(*[p[0].dtype for p in pieces], *[p[1].dtype for p in pieces])
    if sdt.kind == "u" and sdt.itemsize == 8:
        sdt = np.dtype(np.int64)  # validated: ids are < 2**63
    ls, ld, lk = List(), List(), List()
    for s, d, w, _ in pieces:
        ls.append(np.ascontiguousarray(s, dtype=sdt))
        ld.append(np.ascontiguousarray(d, dtype=sdt))
        lk.append(weight_keys(w))
    counts = _count_nonloops(ls, ld, np.int64(len(pieces)))
    outpos = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    m = int(counts.sum())
    u, v, k, e = alloc_soa(m, [idt, idt, np.uint64, np.int64])
    offs = np.array([p[3] for p in pieces], np.int64)
    _concat_prepare(ls, ld, lk, offs, outpos, u, v, k, e)
    return u, v, k, e


@njit(parallel=True, nogil=True, cache=True)
def _mark(ids, base, mask):
    for i in prange(ids.shape[0]):
        mask[ids[i] - base] = True


@njit(parallel=True, nogil=True, cache=True)
def _zero(mask):
    for i in prange(mask.shape[0]):
        mask[i] = False


@njit(parallel=True, nogil=True, cache=True)
def _collect(mask, base, out, B):
    n = mask.shape[0]
    cnt = np.zeros(B + 1, np.int64)
    for b in prange(B):
        a = 0
        for i in range((n * b) // B, (n * (b + 1)) // B):
            if mask[i]:
                a += 1
        cnt[b + 1] = a
    for b in range(B):
        cnt[b + 1] += cnt[b]
    for b in prange(B):
        j = cnt[b]
        for i in range((n * b) // B, (n * (b + 1)) // B):
            if mask[i]:
                out[j] = base + i
                j += 1


def sorted_ids(parts):
    """Concatenate and sort edge-id arrays (ids are unique); a bitmap when they are dense."""
    parts = [p for p in parts if p.shape[0]]
    if not parts:
        return np.zeros(0, np.int64)
    k = sum(p.shape[0] for p in parts)
    lo = min(int(p.min()) for p in parts)
    hi = max(int(p.max()) for p in parts)
    if hi - lo + 1 <= 64 * k:
        mask = empty(hi - lo + 1, np.bool_)
        _zero(mask)
        for p in parts:
            _mark(p, np.int64(lo), mask)
        out = empty(k, np.int64)
        _collect(mask, np.int64(lo), out, max(1, min(_nthreads() * 4, mask.shape[0] // 65536 + 1)))
        return out
    ids = np.concatenate(parts)
    ids.sort()
    return ids

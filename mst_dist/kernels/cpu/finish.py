"""CPU finish: round maps composed into component labels, sorted forest ids, the forest's rows."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from mst_dist.kernels.cpu.arena import empty, nthreads

__all__ = ["compose_maps", "labels", "forest_ids", "take_rows"]


@njit(parallel=True, nogil=True, cache=True)
def _compose_step(M, final, out):
    for c in prange(M.shape[0]):
        x = M[c]
        out[c] = final[x] if x >= 0 else x


@njit(nogil=True, cache=True)
def _canonical(final, n_fin, seen):
    """Number final components by their smallest vertex (``seen``: ``n_fin`` slots, all -1)."""
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


def compose_maps(maps):
    """One round map for several rounds in a row, finished ids kept (composed last to first).

    The result has the widest dtype of the maps (int32 maps give an int32 map: half the bytes a vertex).
    """
    maps = list(maps)
    final = maps[-1]
    dtype = np.result_type(*[m.dtype for m in maps])
    for M in reversed(maps[:-1]):
        out = np.empty(M.shape[0], dtype)
        _compose_step(M, final, out)
        final = out
    return final


def labels(maps, n_vertices):
    """Final canonical component of every vertex from the rounds' maps (see the contract)."""
    if n_vertices == 0:
        return np.zeros(0, np.int64), 0
    final = compose_maps(maps)
    if final.size and final.max() >= 0:
        raise ValueError("the last round map still has live components")
    n_fin = int(-final.min()) if final.size else 0
    T = max(1, min(nthreads(), n_vertices // 65536))
    # the parallel numbering pays from 4 threads on: with fewer, its two passes cost what the serial
    # loop's one does
    if T >= 4 and n_fin <= n_vertices // 4:
        out, cnt = _canonical_p(final, n_fin, T, empty(n_vertices, np.int64))
    else:
        # int32 slots while the labels fit: 4 bytes a final component beside the int64 labels
        seen = np.full(n_fin, -1, np.int32 if n_fin < 2**31 else np.int64)
        out, cnt = _canonical(final, n_fin, seen)
    return out, int(cnt)


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


def forest_ids(parts):
    """The chosen edge ids of all rounds, ascending (ids are unique); a bitmap when they are dense."""
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
        _collect(mask, np.int64(lo), out, max(1, min(nthreads() * 4, mask.shape[0] // 65536 + 1)))
        return out
    ids = np.concatenate(parts)
    ids.sort()
    return ids

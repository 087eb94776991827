"""Scratch memory of the CPU kernels: a reuse arena and skewed struct-of-arrays buffers.

Edge arrays are carved from one buffer with a skew (:func:`alloc_soa`):
separately allocated arrays of equal size tend to start at the same offset
modulo the page size and evict each other from cache, which makes in-place
compaction several times slower.
"""
from __future__ import annotations

import os
import sys
import threading

import numba
import numpy as np

__all__ = ["ARENA", "empty", "alloc_soa", "nthreads", "blocks"]

_SKEW = 1088  # bytes between carved arrays (not a multiple of 64 B lines nor of 4 KiB pages)


class _Arena:
    """Large scratch buffers kept for reuse within a process.

    Touching freshly mapped memory can cost more than the kernels that fill
    it (page faults, on virtual machines especially, against a linear
    copy).  Buffers of at
    least ``min_bytes`` are therefore kept after use, up to ``limit`` bytes
    in all, and handed out again once nothing refers to them any more (every
    numpy view holds a reference to its base buffer, so a buffer whose only
    holder is the arena is free).  ``release()`` gives the memory back.

    ``limit`` defaults to a quarter of the machine's memory; a process with
    a memory budget of its own (a Dask worker's ``memory_limit``) sets a
    smaller one with :meth:`set_limit` -- the engine does, from the worker's
    limit: the arena is memory its owner's memory manager cannot spill.
    """

    min_bytes = 1 << 22

    def __init__(self, limit=None):
        self.bufs = []
        self.lock = threading.Lock()
        self.limit = self.default_limit() if limit is None else int(limit)
        self.takes = 0  #: large buffers handed out so far (a caller can tell whether the arena was used since)

    @staticmethod
    def default_limit():
        """A quarter of the machine's physical memory (4 GiB where it cannot be read)."""
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
        except (ValueError, OSError, AttributeError):  # pragma: no cover
            return 4 << 30

    def set_limit(self, nbytes):
        """Keep at most ``nbytes`` of buffers (``None``: the default); free ones above it are dropped now."""
        with self.lock:
            self.limit = self.default_limit() if nbytes is None else max(0, int(nbytes))
            self._trim()

    @property
    def held(self):
        """Bytes of the buffers kept (in use or free)."""
        with self.lock:
            return sum(b.nbytes for b in self.bufs)

    def take(self, nbytes):
        """A uint8 buffer of at least ``nbytes`` (contents undefined)."""
        if nbytes < self.min_bytes:
            return np.empty(nbytes, np.uint8)
        with self.lock:
            self.takes += 1
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
            if nbytes <= self.limit:  # a buffer larger than the whole arena is not kept
                self.bufs.append(buf)
                self._trim()
            return buf

    def _trim(self):
        total = sum(b.nbytes for b in self.bufs)
        i = 0
        while total > self.limit and i < len(self.bufs):
            if sys.getrefcount(self.bufs[i]) == 2:  # the list and the argument: free
                total -= self.bufs[i].nbytes
                del self.bufs[i]
            else:
                i += 1

    def release(self):
        """Forget every buffer (memory in use stays valid; it is freed with its last view); the bytes forgotten."""
        with self.lock:
            n = sum(b.nbytes for b in self.bufs)
            self.bufs.clear()
            return n


ARENA = _Arena()


def empty(n, dtype):
    """``np.empty`` from the scratch arena (for large working arrays of the engine)."""
    dtype = np.dtype(dtype)
    return ARENA.take(n * dtype.itemsize + dtype.itemsize)[: n * dtype.itemsize].view(dtype)


def alloc_soa(m, dtypes, arena=True):
    """Allocate one array of length ``m`` per dtype, carved from one buffer with a skew.

    ``arena=False``: a buffer of its own, freed with its last array (not kept for reuse).
    """
    dtypes = [np.dtype(d) for d in dtypes]
    offs = []
    pos = 0
    for i, d in enumerate(dtypes):
        pos = (pos + 63) // 64 * 64 + (i * _SKEW if i else 0)
        offs.append(pos)
        pos += m * d.itemsize
    buf = ARENA.take(pos + 64) if arena else np.empty(pos + 64, np.uint8)
    base = (-buf.ctypes.data) % 64  # the arena's slices may start anywhere: realign
    return [buf[base + o:base + o + m * d.itemsize].view(d) for o, d in zip(offs, dtypes)]


def nthreads():
    """Numba's thread count in this process."""
    return numba.get_num_threads()


def blocks(m, t):
    """Bounds of ``t`` nearly equal blocks of ``range(m)``: ``t + 1`` int64 values."""
    b = np.empty(t + 1, np.int64)
    for i in range(t + 1):
        b[i] = (m * i) // t
    return b

"""Resident memory of a process tree, sampled: the benchmarks' peak RSS.

A run of the engine may use worker processes (a ``LocalCluster`` with
``processes=True``), whose memory the process's own counters
(``ru_maxrss``) never see.  :class:`TreeSampler` watches a process *and all
its descendants* from a background thread: every ``interval`` seconds it adds
up their resident set sizes and keeps the largest sum.  The list of
descendants is refreshed every ``refresh`` seconds (walking the process
table costs milliseconds; reading a known process's RSS costs microseconds),
and at once when one of them exits.

>>> import numpy as np
>>> with TreeSampler(interval=0.01) as s:
...     a = np.ones(2**25)  # 256 MiB, touched
>>> s.peak - s.start_bytes >= 200 * 2**20
True
"""
from __future__ import annotations

import os
import threading
import time

import psutil  # a dependency of distributed

__all__ = ["tree_rss", "TreeSampler"]


def _tree(proc):
    """``proc`` and its live descendants, as psutil processes."""
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return [proc]


def _sum_rss(procs):
    """Total RSS of ``procs`` in bytes, the part of it not backed by files, and whether one has gone."""
    total = anon = 0
    gone = False
    for p in procs:
        try:
            mi = p.memory_info()
        except psutil.Error:
            gone = True
            continue
        total += mi.rss
        # Linux: "shared" is RssFile + RssShmem (mapped files, libraries, shared memory)
        anon += mi.rss - getattr(mi, "shared", 0)
    return total, anon, gone


def tree_rss(pid=None):
    """Resident memory of a process and all its descendants now, in bytes.

    Parameters
    ----------
    pid : int, optional
        The tree's root (default: this process).

    Returns
    -------
    int
        The sum of their resident set sizes (0 when the process has gone).
    """
    try:
        proc = psutil.Process(os.getpid() if pid is None else pid)
    except psutil.Error:
        return 0
    return _sum_rss(_tree(proc))[0]


class TreeSampler:
    """Samples the RSS of a process tree in a background thread; keeps the peak.

    Parameters
    ----------
    pid : int, optional
        The tree's root (default: this process).
    interval : float
        Seconds between samples (default 0.05).
    refresh : float
        Seconds between walks of the process table for new descendants
        (default 0.5).

    Attributes
    ----------
    start_bytes, start_anon : int
        The tree's RSS, and its part not backed by files, when :meth:`start` was called.
    peak : int
        The largest sum seen (``start_bytes`` and the last sample included).
    peak_processes : int
        Processes in the tree at the peak.
    peak_anon : int
        The largest sum of RSS not backed by files (on Linux: RSS less
        mapped files and shared memory; pages of a memory-mapped input
        count in RSS while mapped, and the system can drop them).
    samples : int
        Samples taken.
    pids : set of int
        Every process seen in the tree (a worker restarted shows up as a new one).
    """

    def __init__(self, pid=None, interval=0.05, refresh=0.5):
        self.pid = os.getpid() if pid is None else int(pid)
        self.interval = float(interval)
        self.refresh = float(refresh)
        self.start_bytes = self.peak = self.last = 0
        self.peak_processes = self.samples = self.peak_anon = self.start_anon = self.last_anon = 0
        self.pids = set()
        self._stop = threading.Event()
        self._thread = None

    def _sample(self, procs):
        total, anon, gone = _sum_rss(procs)
        self.samples += 1
        self.last, self.last_anon = total, anon
        self.peak_anon = max(self.peak_anon, anon)
        if total > self.peak:
            self.peak, self.peak_processes = total, len(procs)
        return gone

    def _walk(self):
        procs = _tree(self._root)
        self.pids.update(p.pid for p in procs)
        return procs

    def start(self):
        """Take the first sample and start sampling; returns ``self``."""
        self._root = psutil.Process(self.pid)
        self._stop.clear()
        procs = self._walk()
        self._sample(procs)
        self.start_bytes, self.start_anon = self.last, self.last_anon
        self._thread = threading.Thread(target=self._loop, args=(procs,), name="mst-bench-rss",
                                        daemon=True)
        self._thread.start()
        return self

    def _loop(self, procs):
        walked = time.monotonic()
        while not self._stop.wait(self.interval):
            now = time.monotonic()
            if now - walked >= self.refresh:
                procs, walked = self._walk(), now
            if self._sample(procs):
                procs, walked = self._walk(), now
                self._sample(procs)

    def stop(self):
        """Stop sampling after one last sample (of a fresh walk); returns ``self``."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._sample(self._walk())
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

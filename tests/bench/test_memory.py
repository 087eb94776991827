"""The RSS sampler of a process tree (benchmarks/memory.py): it sees children's and grandchildren's memory."""
import subprocess
import sys
import time

import pytest

from benchmarks.memory import TreeSampler, tree_rss

MIB = 2**20

# allocates and touches ALLOC_MIB, says "ready", and holds it until stdin closes
HOLD = """
import sys
import numpy as np
a = np.ones({mib} * 2**20 // 8)
print("ready", flush=True)
sys.stdin.read()
"""

# the same, one process further down: a child that starts the allocating grandchild
NESTED = """
import subprocess, sys
p = subprocess.Popen([sys.executable, "-c", {code!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
print(p.stdout.readline().strip(), p.pid, flush=True)
sys.stdin.read()
p.stdin.close()
p.wait()
"""

ALLOC_MIB = 300


class Holder:
    """A subprocess holding ALLOC_MIB (``nested``: in a grandchild); closed on exit."""

    def __init__(self, nested=False):
        code = HOLD.format(mib=ALLOC_MIB)
        if nested:
            code = NESTED.format(code=code)
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", line
        self.allocating_pid = int(line[1]) if nested else self.proc.pid

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.mark.parametrize("nested", [False, True], ids=["child", "grandchild"])
def test_sampler_sees_memory_allocated_in_a_subprocess(nested):
    # the sampler starts before the subprocess exists: it must find it by walking the tree again
    with TreeSampler(interval=0.02, refresh=0.1) as s:
        with Holder(nested) as h:
            time.sleep(0.5)  # several walks and samples while the memory is held
    assert h.allocating_pid in s.pids
    assert s.peak - s.start_bytes >= 0.8 * ALLOC_MIB * MIB, (s.start_bytes, s.peak)
    assert s.peak_anon - s.start_anon >= 0.7 * ALLOC_MIB * MIB  # NumPy's memory is anonymous
    assert s.peak_processes >= (3 if nested else 2)
    assert s.samples >= 5
    # the memory went with the process: the last sample is back near the start
    assert s.last < s.start_bytes + 0.5 * ALLOC_MIB * MIB


def test_sampler_rooted_at_another_process():
    with Holder(nested=True) as h:
        with TreeSampler(pid=h.proc.pid, interval=0.02) as s:
            time.sleep(0.2)
        mine = tree_rss()
        theirs = tree_rss(h.proc.pid)
    # the child itself holds little; its grandchild holds the allocation
    assert s.start_bytes >= 0.8 * ALLOC_MIB * MIB
    assert s.pids == {h.proc.pid, h.allocating_pid}
    assert theirs >= 0.8 * ALLOC_MIB * MIB
    assert mine >= theirs  # this process's tree holds theirs


def test_tree_rss_of_a_process_that_has_gone():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert tree_rss(p.pid) == 0
    assert tree_rss() > 0


MAP = """
import mmap, sys
f = open({path!r}, "rb")
m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
total = sum(m[i] for i in range(0, len(m), 4096))  # every page touched
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RssFile is Linux's")
def test_mapped_file_pages_count_in_rss_not_in_anon(tmp_path):
    path = tmp_path / "big.bin"
    with open(path, "wb") as f:
        f.truncate(ALLOC_MIB * MIB)
    with TreeSampler(interval=0.02, refresh=0.1) as s:
        p = subprocess.Popen([sys.executable, "-c", MAP.format(path=str(path))], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        p.stdin.close()
        p.wait(timeout=30)
    assert s.peak - s.start_bytes >= 0.8 * ALLOC_MIB * MIB
    assert s.peak_anon < s.start_bytes + 0.2 * ALLOC_MIB * MIB

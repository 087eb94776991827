"""The codes the text kernel and its caller share: parse modes, weight kinds, status codes, stats slots.

Plain integers, so that :mod:`mst_dist.io.readers.textkernel` (Numba, which
freezes them at compile time) and :mod:`mst_dist.io.readers.text` (which
reads the kernel's statistics and turns its status into a message) both
import them from here, and neither imports the other's module to get them;
and the two records the kernel takes (named tuples, which Numba compiles
to plain fields).
"""
from typing import NamedTuple

# parse modes
M_EDGELIST, M_GR, M_MTX = 0, 1, 2
# weight kinds: none (weight 1), integer only, real (int tokens widened), auto
W_NONE, W_INT, W_REAL, W_AUTO = 0, 1, 2, 3

# status codes
OK = 0
E_TOKEN = 1      # not a number
E_FEW = 2        # too few fields
E_MANY = 3       # too many fields
E_EMPTY = 4      # empty field (comma)
E_LOW = 5        # id below the base
E_HIGH = 6       # id above the declared size
E_OVERFLOW = 7   # integer id out of int64
E_LINE = 8       # unexpected line type (gr)
E_PLINE = 9      # a second problem line (gr)
E_WINT = 10      # fractional weight where integers are required

# slots of the kernel's int64 statistics array
(S_STATUS, S_ROWS, S_RAW, S_LINES, S_NF, S_FB, S_NCK, S_ELINE, S_EPOS, S_EEND,
 S_ECOL, S_MAXID, S_NEXTCK, S_ELS) = range(14)
NSTATS = 14


class ParseSpec(NamedTuple):
    """How a text file's body is parsed: its grammar and bounds, fixed by the file's head."""

    mode: int      # M_EDGELIST, M_GR or M_MTX
    ncols: int     # fields per data line (2 or 3; .gr: 3 after the 'a')
    wkind: int     # W_NONE, W_INT, W_REAL or W_AUTO
    base: int      # the file's first vertex id (0 or 1)
    lim0: int      # ids of the first field are below this (no bound when negative)
    lim1: int      # likewise for the second field
    dedupe: bool   # keep only the rows with first id < second id


class ParseJob(NamedTuple):
    """What one kernel call does with the rows it parses."""

    store: bool    # write the rows (a load) or only count and check them (a scan)
    skip: int      # with store: the kept rows to pass over before the first stored
    gran: int      # checkpoint spacing in bytes (0: no checkpoints)

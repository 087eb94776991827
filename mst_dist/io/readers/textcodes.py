"""The codes the text kernel and its caller share: parse modes, weight kinds, status codes, stats slots.

Plain integers, so that :mod:`mst_dist.io.readers.textkernel` (Numba, which
freezes them at compile time) and :mod:`mst_dist.io.readers.text` (which
reads the kernel's statistics and turns its status into a message) both
import them from here, and neither imports the other's module to get them.
"""

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

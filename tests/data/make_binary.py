"""Write the binary test files (tiny.npz, tiny_npy/, tiny.egr, tiny.parquet) from explicit lists.

Run from this directory: ``python make_binary.py``.  The files are committed;
this script documents their content and does not use mst_dist, so the
readers are tested against files their own writers did not make.
"""
import os
import struct

import numpy as np

# the tiny test graph (tiny.txt): edge id -> (src, dst, weight)
EDGES = [(0, 1, 3), (0, 2, 3), (1, 2, 1), (1, 3, 2), (2, 3, 4),
         (3, 4, 2), (2, 4, 5), (4, 5, 7), (3, 5, 3), (5, 5, 1)]
src = np.array([e[0] for e in EDGES], np.int32)
dst = np.array([e[1] for e in EDGES], np.int32)
w = np.array([e[2] for e in EDGES], np.int16)

# .npz: int32 ids, int16 weights (read as int64)
np.savez("tiny.npz", src=src, dst=dst, weight=w)

# npy column files: uint16 ids, float64 weights (the weights of tiny.csv)
os.makedirs("tiny_npy", exist_ok=True)
np.save("tiny_npy/src.npy", src.astype(np.uint16))
np.save("tiny_npy/dst.npy", dst.astype(np.uint16))
np.save("tiny_npy/weight.npy", np.array([3.0, 3, 1, 2.5, 4, 2.5, 5, 7, 3, 1]))

# .egr: ECL's CSR, both directions, self-loop left out; neighbours in edge id order
adj = {v: [] for v in range(7)}
for u, v, wt in EDGES:
    if u != v:
        adj[u].append((v, wt))
        adj[v].append((u, wt))
nindex = [0]
nlist, eweight = [], []
for v in range(7):
    for x, wt in adj[v]:
        nlist.append(x)
        eweight.append(wt)
    nindex.append(len(nlist))
with open("tiny.egr", "wb") as f:
    f.write(struct.pack("<ii", 7, len(nlist)))
    f.write(struct.pack(f"<{len(nindex)}i", *nindex))
    f.write(struct.pack(f"<{len(nlist)}i", *nlist))
    f.write(struct.pack(f"<{len(eweight)}i", *eweight))

# Parquet: three row groups (4 + 4 + 2 rows), columns named u, v, cost
import pyarrow as pa
import pyarrow.parquet as pq

pq.write_table(pa.table({"u": src.astype(np.int64), "v": dst.astype(np.int64),
                         "cost": w.astype(np.int64)}), "tiny.parquet", row_group_size=4)

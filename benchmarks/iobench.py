"""Reader throughput: MB/s per worker for every input format (the numbers of docs/io.md).

    python -m benchmarks.iobench --edges 10000000 --dir /tmp/iobench --out iobench.json

Writes one graph (Erdős–Rényi, ``n = m / 5``, integer weights 1..1000; a float
copy for the text formats) in every format under ``--dir`` (kept between runs),
then for each file measures, best of ``--repeat``:

``load``
    All rows parsed by one thread in this process (``source.load`` of every
    chunk in turn, 16M rows at most at a time): the per-worker rate.
``read``
    :func:`mst_dist.read` itself (the scan pass of the text formats; headers,
    metadata or statistics of the others), on local threads.
``cluster``
    With ``--workers W`` (default 2): ``read`` on a ``LocalCluster`` of W
    single-threaded worker processes, then every chunk (``W`` of them, one
    per worker) loaded there, end to end; the rate is per worker.
``pyarrow.csv``
    For the tab-separated edge list only: ``pyarrow.csv.read_csv`` of the same
    file with one thread, for comparison with the Numba kernel.

MB are 10**6 bytes of the file as stored (compressed size for ``.gz``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from mst_dist.environment import loadavg, machine_info

FILES = [
    # (key, file name, write_graph format and options, float weights)
    ("edgelist (tsv, int)", "edges.tsv", ("edgelist", {"delimiter": "\t"}), False),
    ("edgelist (tsv, float)", "edges-float.tsv", ("edgelist", {"delimiter": "\t"}), True),
    ("edgelist (csv, int)", "edges.csv", ("csv", {}), False),
    ("edgelist (tsv.gz, int)", "edges.tsv.gz", None, False),
    ("DIMACS .gr", "edges.gr", ("gr", {}), False),
    ("Matrix Market .mtx (real)", "edges.mtx", ("mtx", {}), True),
    ("npz", "edges.npz", ("npz", {}), False),
    ("egr (dedupe)", "edges.egr", ("egr", {}), False),
    ("Parquet directory (8 files)", "parquet", ("parquet", {}), False),
]


def _best(fn, repeat):
    best = None
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def _size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def make_files(d, m, log=print):
    """Write the benchmark graph in every format under ``d`` (skipping files already there)."""
    import gzip
    import shutil

    from mst_dist.generators import generate
    from mst_dist.io.writers import write_graph

    os.makedirs(d, exist_ok=True)
    gi = generate("erdos_renyi", n=max(2, m // 5), m=m, seed=1)
    gf = generate("erdos_renyi", n=max(2, m // 5), m=m, seed=1, weights="float", wmin=0, wmax=1)
    made = {}
    for key, name, spec, flt in FILES:
        path = os.path.join(d, name)
        if not os.path.exists(path):
            t0 = time.perf_counter()
            if spec is None:  # gzip of the tsv
                with open(os.path.join(d, "edges.tsv"), "rb") as f, gzip.open(path, "wb", 6) as z:
                    shutil.copyfileobj(f, z, 1 << 22)
            else:
                fmt, opts = spec
                if fmt == "parquet":
                    opts = {"chunk_edges": -(-m // 8)}
                write_graph(gf if flt else gi, path, fmt, **opts)
            log(f"wrote {path} ({_size(path) / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        made[key] = path
    return made


def _load_all(g, rows=1 << 24):
    total = 0
    for s in g.sources:
        step = rows if getattr(s, "splittable", True) else max(1, s.n_edges)
        for a in range(0, s.n_edges, step):
            src, dst, w = s.load(a, min(s.n_edges, a + step))
            total += len(src)
    return total


def _cluster_load(g, client, parts):
    from mst_dist.engine.tasks import load as _load

    futs = [client.submit(_load, g.sources[si], a, b, off, g.n_vertices, False, pure=False)
            for si, a, b, off in g.chunk_ranges(parts)]
    client.gather(client.map(len, futs))
    for f in futs:
        f.release()


def run(d, m, repeat=3, workers=2, log=print):
    from mst_dist.io.readers import read

    files = make_files(d, m, log)
    rows = []
    client = cluster = None
    if workers:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        for key, path in files.items():
            opts = {"format": "npy"} if path.endswith("npy") else {}
            mb = _size(path) / 1e6
            t_read, g = _best(lambda: read(path, client=False, **opts), repeat)
            t_load, n = _best(lambda: _load_all(g), repeat)
            row = {"input": key, "file": os.path.basename(path), "MB": round(mb, 1),
                   "edges": g.n_edges, "read_s": round(t_read, 3),
                   "read_MB_s": round(mb / t_read, 1), "load_s_1_thread": round(t_load, 3),
                   "load_MB_s_per_worker": round(mb / t_load, 1),
                   "load_Medges_s_per_worker": round(n / t_load / 1e6, 2)}
            if client is not None:
                def both():
                    gc = read(path, client=client, **opts)
                    _cluster_load(gc, client, workers)
                t_c, _ = _best(both, repeat)
                row.update({"cluster_workers": workers, "cluster_s": round(t_c, 3),
                            "cluster_MB_s_per_worker": round(mb / t_c / workers, 1)})
            if key == "edgelist (tsv, int)":
                import pyarrow as pa
                import pyarrow.csv as pcsv

                def arrow():
                    return pcsv.read_csv(path, read_options=pcsv.ReadOptions(
                        autogenerate_column_names=True, use_threads=False, skip_rows=1),
                        parse_options=pcsv.ParseOptions(delimiter="\t"),
                        convert_options=pcsv.ConvertOptions(column_types={
                            "f0": pa.int64(), "f1": pa.int64(), "f2": pa.int64()}))
                t_a, _ = _best(arrow, repeat)
                row["pyarrow_csv_MB_s_1_thread"] = round(mb / t_a, 1)
            log(json.dumps(row))
            rows.append(row)
    finally:
        if client is not None:
            client.close()
            cluster.close()
    return rows


def table(rows):
    head = ("| input | MB | read() MB/s | load MB/s per worker | Medges/s per worker | "
            "cluster MB/s per worker |")
    out = [head, "|" + "---|" * 6]
    for r in rows:
        out.append(f"| {r['input']} | {r['MB']:.0f} | {r['read_MB_s']:.0f} | "
                   f"{r['load_MB_s_per_worker']:.0f} | {r['load_Medges_s_per_worker']:.1f} | "
                   + (f"{r['cluster_MB_s_per_worker']:.0f}" if "cluster_MB_s_per_worker" in r else "–") + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.iobench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--dir", default="iobench-data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster workers (0: none)")
    ap.add_argument("--out", help="write the results (JSON) here")
    args = ap.parse_args(argv)
    info = machine_info()
    rows = run(args.dir, args.edges, args.repeat, args.workers,
               log=lambda s: print(s, file=sys.stderr))
    info["loadavg_end"] = loadavg()
    print(table(rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": info, "edges": args.edges, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

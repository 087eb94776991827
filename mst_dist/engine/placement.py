"""Which kernels each worker runs, how fast it is, and where each chunk goes."""
from __future__ import annotations

import logging

from mst_dist import config
from mst_dist.engine import tasks
from mst_dist.engine.keys import task_key
from mst_dist.kernels import GPU_INSTALL_HINT, GPUUnavailableError
from mst_dist.phases import Step

logger = logging.getLogger("mst_dist")


def worker_kinds(client, workers, backend):
    """``({worker: "gpu" | "cpu"}, smallest GPU memory or None)``: the kernels each worker runs.

    Workers advertising ``resources={"GPU": n}`` are probed (CuPy, a device);
    those that pass run the GPU kernels unless ``backend="cpu"``.  Raises
    :class:`GPUUnavailableError` for ``backend="gpu"`` without usable GPU workers.
    """
    kinds = {w: "cpu" for w in workers}
    if backend == "cpu":
        return kinds, None
    gpu_w = sorted(w for w, i in workers.items() if ((i.get("resources") or {}).get("GPU", 0) or 0) > 0)
    if not gpu_w:
        if backend == "gpu":
            raise GPUUnavailableError(
                f"backend='gpu' needs GPU workers, and none of the cluster's {len(workers)} "
                "worker(s) advertises resources={'GPU': 1}. Start GPU workers (cluster kind "
                "'local-cuda', or workers/gpu-worker.yaml), or use backend='auto' or 'cpu'. "
                f"A GPU worker needs CuPy: {GPU_INSTALL_HINT}")
        logger.info("no GPU workers in the cluster: the CPU (Numba) kernels run on all %d worker(s)",
                     len(workers))
        return kinds, None
    probe = client.run(tasks.probe, workers=gpu_w)
    bad = {w: r for w, (ok, r, _) in probe.items() if not ok}
    if bad and backend == "gpu":
        detail = "; ".join(f"{w}: {r}" for w, r in sorted(bad.items()))
        raise GPUUnavailableError(
            f"backend='gpu': {len(bad)} of {len(gpu_w)} GPU worker(s) cannot run the GPU kernels "
            f"({detail}). Install the GPU extra there ({GPU_INSTALL_HINT}) or use backend='auto'.")
    for w, r in sorted(bad.items()):
        logger.warning("worker %s advertises a GPU but cannot run the GPU kernels (%s): "
                       "it runs the CPU kernels", w, r)
    device_memory = None
    for w, (ok, r, mem) in probe.items():
        if ok:
            kinds[w] = "gpu"
            logger.info("GPU worker %s: %s", w, r)
            if mem:
                device_memory = min(device_memory or mem, mem)
    return kinds, device_memory


def measure_throughput(client, kinds, backend, token, given=None):
    """Relative edges/second of each worker: ``given`` per kind, the run config's, or measured.

    Measured once per worker and kind (cached in the worker-side
    :data:`tasks.THROUGHPUT` of this process) by :func:`tasks.calibrate`.
    """
    if given is None:
        given = config.get("placement.throughput", None, None)
    if given:
        try:
            per_kind = {str(k).lower(): float(v) for k, v in dict(given).items()}
        except (TypeError, ValueError) as e:
            raise ValueError(f"placement throughput must map worker kinds to numbers, got {given!r}") from e
        missing = set(kinds.values()) - set(per_kind)
        if missing or any(v <= 0 for v in per_kind.values()):
            raise ValueError(f"placement throughput needs a positive number for each of "
                             f"{sorted(set(kinds.values()))}, got {given!r}")
        return {w: per_kind[k] for w, k in kinds.items()}
    m = int(config.get("placement.calibration-edges", None, 1 << 20))
    todo = [w for w in sorted(kinds) if (w, kinds[w]) not in tasks.THROUGHPUT]
    futs = {w: client.submit(tasks.calibrate, backend, m, kinds[w] == "gpu", workers=[w],
                             allow_other_workers=False, pure=False,
                             key=task_key(Step.CALIBRATE, 0, token, index=i))
            for i, w in enumerate(todo)}
    for w, f in futs.items():
        tasks.THROUGHPUT[(w, kinds[w])] = f.result()
    out = {w: tasks.THROUGHPUT[(w, kinds[w])] for w in sorted(kinds)}
    logger.info("measured throughput (edges/s): %s",
                ", ".join(f"{w} ({kinds[w]}) {t:,.0f}" for w, t in out.items()))
    return out


def place(ranges, throughput):
    """Worker of each chunk (``None``: Dask decides).

    Largest chunks first, each to the worker that would finish its load
    soonest at its measured throughput (longest-processing-time-first).
    """
    if not throughput:
        return [None] * len(ranges)
    load = {w: 0.0 for w in throughput}
    out = [None] * len(ranges)
    for i in sorted(range(len(ranges)), key=lambda i: -(ranges[i][2] - ranges[i][1])):
        size = ranges[i][2] - ranges[i][1]
        w = min(load, key=lambda w: ((load[w] + size) / throughput[w], w))
        load[w] += size
        out[i] = w
    return out


def placement_stats(ranges, places, kinds, throughput):
    """Per worker: kind, throughput, chunks and edges placed (the run's ``stats.placement``)."""
    out = {w: {"kind": kinds[w], "throughput": float(t), "chunks": 0, "edges": 0}
           for w, t in throughput.items()}
    for (_, a, b, _), w in zip(ranges, places):
        out[w]["chunks"] += 1
        out[w]["edges"] += b - a
    return out


def pin(worker):
    """``submit`` keywords that put a task on ``worker`` (other workers allowed if it leaves)."""
    return {} if worker is None else {"workers": [worker], "allow_other_workers": True}

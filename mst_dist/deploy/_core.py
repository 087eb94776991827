"""What the cluster kinds share: the warm-up preload and waiting for workers."""
from __future__ import annotations

import logging

__all__ = ["WARMUP", "wait_for_workers"]

logger = logging.getLogger("mst_dist")

#: The worker preload that compiles the kernels at start (``dask worker --preload``).
WARMUP = "mst_dist.engine.warmup"


def wait_for_workers(client, cfg, what, n=1):
    """Wait up to ``cluster.wait_timeout`` for ``n`` workers; with fewer but some, go on with those.

    Raises :class:`TimeoutError` when none joined in time.
    """
    from mst_dist.engine.cluster_info import scheduler_workers

    timeout = cfg.get("wait_timeout") or 600
    try:
        client.wait_for_workers(n, timeout=timeout)
    except TimeoutError:
        have = len(scheduler_workers(client))
        if not have:
            raise TimeoutError(f"{what}: no worker joined within {timeout:g} s (cluster.wait_timeout); "
                               "are the workers or their jobs still starting?") from None
        logger.warning("%s: %d of %d workers joined within %g s (cluster.wait_timeout); running on those",
                       what, have, n, timeout)

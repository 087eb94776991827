#!/usr/bin/env bash
# Start a Dask scheduler with the MST dashboard page and N CPU workers by hand,
# on this machine (for a real cluster, run the `dask worker` line on each node).
#
#   cluster/start-local.sh [N_WORKERS]        # then, in another shell:
#   mst-dist submit --scheduler tcp://127.0.0.1:8786 configs/quickstart.yaml
#
# The dashboard (MST page: http://127.0.0.1:8787/mst) stays up between runs.
# Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2}
trap 'kill 0' EXIT INT TERM

dask scheduler --host 127.0.0.1 --port 8786 --dashboard-address 127.0.0.1:8787 \
    --preload mst_dist.diagnostics.dashboard &
sleep 3
for i in $(seq "$N"); do
    # workers/cpu-worker.yaml: threads, memory limit, resources, and the kernels' warm-up
    dask spec tcp://127.0.0.1:8786 --spec-file workers/cpu-worker.yaml &
done
wait

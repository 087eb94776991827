#!/usr/bin/env bash
# Start a Dask scheduler with the MST dashboard page and N CPU workers by hand,
# on this machine (for a real cluster, run the `dask spec` line on each node
# with workers/cpu-worker.yaml's `host` replaced by the node's interface).
#
#   cluster/start-local.sh [N_WORKERS]        # prints the scheduler's address; in another shell:
#   mst-dist submit --scheduler tcp://127.0.0.1:PORT configs/quickstart.yaml
#
# Everything listens on 127.0.0.1 only.  Ports: free ones unless set
# (MST_SCHEDULER_PORT, MST_DASHBOARD_PORT; a taken one falls back to a free
# one).  Workers: workers/cpu-worker.yaml sized to this machine, the cores
# shared out (threads = cores / N, at least 1) and each a share of its memory
# (MST_WORKER_MEMORY overrides, e.g. 4GiB).  The dashboard stays up between
# runs.  Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2}
PYTHON=${PYTHON:-python}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/mst-dist-local.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$DIR"' EXIT
trap 'exit 130' INT TERM

free_or() {  # the port asked for when it is free here, else 0 (the system picks one)
    "$PYTHON" - "$1" <<'EOF'
import socket, sys
port = int(sys.argv[1])
try:
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
    print(port)
except OSError:
    print(0)
EOF
}

SPORT=$(free_or "${MST_SCHEDULER_PORT:-0}")
DPORT=$(free_or "${MST_DASHBOARD_PORT:-0}")
dask scheduler --host 127.0.0.1 --port "$SPORT" --dashboard-address "127.0.0.1:$DPORT" \
    --scheduler-file "$DIR/scheduler.json" --preload mst_dist.diagnostics.dashboard &
for _ in $(seq 600); do [ -s "$DIR/scheduler.json" ] && break; sleep 0.1; done
[ -s "$DIR/scheduler.json" ] || { echo "start-local.sh: the scheduler did not start" >&2; exit 1; }

# workers/cpu-worker.yaml with this machine's sizes (Dask caps a limit above the machine's memory)
"$PYTHON" - "$N" "$DIR" "${MST_WORKER_MEMORY:-}" <<'EOF'
import json, os, sys
import yaml
from dask.utils import format_bytes
from distributed.system import MEMORY_LIMIT   # this machine's memory (or its cgroup's limit)

n, where, memory = max(1, int(sys.argv[1])), sys.argv[2], sys.argv[3]
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
with open("workers/cpu-worker.yaml") as f:
    spec = yaml.safe_load(f)
spec["opts"].update(nthreads=max(1, cores // n), memory_limit=memory or int(MEMORY_LIMIT * 0.9) // n)
with open(os.path.join(where, "worker.yaml"), "w") as f:
    yaml.safe_dump(spec, f)
info = json.load(open(os.path.join(where, "scheduler.json")))
host = info["address"].split("://")[1].rsplit(":", 1)[0]
print(f"scheduler: {info['address']}")
print(f"dashboard: http://{host}:{info['services']['dashboard']}/mst")
limit = spec["opts"]["memory_limit"]
limit = format_bytes(limit) if isinstance(limit, int) else limit
print(f"workers:   {n} x {spec['opts']['nthreads']} thread(s), memory limit {limit} each")
print(f"run:       mst-dist submit --scheduler {info['address']} configs/quickstart.yaml")
with open(os.path.join(where, "address"), "w") as f:
    f.write(info["address"])
EOF
ADDRESS=$(cat "$DIR/address")
for _ in $(seq "$N"); do
    dask spec "$ADDRESS" --spec-file "$DIR/worker.yaml" &
done
wait

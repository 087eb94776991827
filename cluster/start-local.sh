#!/usr/bin/env bash
# Start a Dask scheduler with the MST dashboard page and N CPU workers by hand,
# on this machine (for several hosts, run `dask spec ADDRESS --spec-file
# workers/cpu-worker-hosts.yaml` on each node against a scheduler listening on
# the network: docs/guide/clusters.md, "Several machines").
#
#   cluster/start-local.sh [N_WORKERS]        # prints the scheduler's address; in another shell:
#   mst-dist submit --scheduler tcp://127.0.0.1:PORT configs/quickstart.yaml
#
# Everything listens on 127.0.0.1 only.  Ports: free ones unless set
# (MST_SCHEDULER_PORT, MST_DASHBOARD_PORT; a taken one falls back to a free
# one).  Workers: workers/cpu-worker.yaml sized to this machine, the cores
# shared out (threads = cores / N, at least 1) and each a share of its memory
# (MST_WORKER_MEMORY overrides, e.g. 4GiB).  The dashboard stays up between
# runs.
#
# Ctrl-C (or a TERM or HUP sent to this script) stops everything, in order:
# the workers first, while the scheduler is still there for them to leave
# (a nanny whose worker is still starting waits for it to reach the
# scheduler), then the scheduler.  Each step waits at most MST_STOP_TIMEOUT
# seconds (default 20); whatever is left then, a worker's own process
# included, is killed, so the script is gone within about twice that.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2}
PYTHON=${PYTHON:-python}
STOP_TIMEOUT=${MST_STOP_TIMEOUT:-20}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/mst-dist-local.XXXXXX")
SCHEDULER=
WORKERS=

# The scheduler and each `dask spec` run in a session of their own: the
# terminal's Ctrl-C reaches this script only (not the servers all at once,
# where a scheduler gone first leaves a starting worker retrying it for its
# death_timeout), and each one's process group (a nanny with its worker
# process) can be killed whole.
OWN_SESSION='import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])'

alive() {  # whether any of the processes "$@" still runs
    local pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
    return 1
}

settle() {  # wait until the processes "$@" have exited, at most STOP_TIMEOUT seconds
    local end=$((SECONDS + STOP_TIMEOUT))
    while alive "$@" && [ "$SECONDS" -lt "$end" ]; do sleep 0.1; done
}

# shellcheck disable=SC2086  # the lists of pids split into words on purpose
stop() {  # the workers, then the scheduler; then kill what is left of their process groups
    set +e
    trap '' INT TERM HUP  # stopping is bounded: a second Ctrl-C does not cut it short
    if [ -n "$WORKERS" ]; then kill -TERM $WORKERS 2>/dev/null; settle $WORKERS; fi
    if [ -n "$SCHEDULER" ]; then kill -TERM $SCHEDULER 2>/dev/null; settle $SCHEDULER; fi
    if alive $WORKERS $SCHEDULER; then
        echo "start-local.sh: killing what did not stop within $STOP_TIMEOUT s" >&2
    fi
    local pid
    for pid in $WORKERS $SCHEDULER; do
        kill -KILL -- "-$pid" "$pid" 2>/dev/null  # its group: a nanny's worker process too
    done
    wait
    rm -rf "$DIR"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

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
"$PYTHON" -c "$OWN_SESSION" dask scheduler --host 127.0.0.1 --port "$SPORT" \
    --dashboard-address "127.0.0.1:$DPORT" --scheduler-file "$DIR/scheduler.json" \
    --preload mst_dist.diagnostics.dashboard </dev/null &
SCHEDULER=$!
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
    "$PYTHON" -c "$OWN_SESSION" dask spec "$ADDRESS" --spec-file "$DIR/worker.yaml" </dev/null &
    WORKERS="$WORKERS $!"
done
wait

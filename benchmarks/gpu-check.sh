#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one go, for a GPU machine lent for minutes:
# the gpu-marked tests, then the short GPU benchmark and the GPU engine on the
# 300M-edge circulant graph.  Logs and reports go to the folder given (default
# gpu-check-out).  Each step has its own time limit, so one that hangs leaves
# time for the next.
#
#   bash benchmarks/gpu-check.sh OUTDIR
out=${1:-gpu-check-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
python3 -c "import cupy, numba, numpy; print('cupy', cupy.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__)" >> "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
timeout "${GPU_TESTS_S:-200}" python3 -m pytest -m gpu -q -n 12 -p no:cacheprovider --timeout 120 \
    > "$out/gpu-tests.log" 2>&1
echo "gpu tests: rc $?"; tail -n 30 "$out/gpu-tests.log"
timeout "${GPU_BENCH_S:-150}" python3 -m benchmarks benchmarks/configs/bench-gpu-lease.yaml --out "$out/lease" \
    > "$out/bench-lease.log" 2>&1
echo "lease bench: rc $?"; tail -n 40 "$out/bench-lease.log"
timeout "${GPU_CIRCULANT_S:-80}" python3 -m benchmarks benchmarks/configs/bench-gpu-circulant.yaml --out "$out/circulant" \
    > "$out/bench-circulant.log" 2>&1
echo "circulant bench: rc $?"; tail -n 25 "$out/bench-circulant.log"

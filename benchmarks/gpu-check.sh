#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one go, for a GPU machine held for minutes:
# the gpu-marked tests, the short GPU benchmark (bench-gpu-short.yaml), then the
# full one (bench-gpu.yaml).  Logs and reports go to the folder given (default
# gpu-check-out).  Each step has its own time limit, so one that hangs leaves
# time for the next; STEPS picks some of them (default "tests short full").
#
#   bash benchmarks/gpu-check.sh OUTDIR
#   STEPS="short full" bash benchmarks/gpu-check.sh OUTDIR
out=${1:-gpu-check-out}
steps=" ${STEPS:-tests short full} "
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
python3 -c "import cupy, numba, numpy; print('cupy', cupy.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__)" >> "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
if [[ $steps == *" tests "* ]]; then
    timeout "${GPU_TESTS_S:-200}" python3 -m pytest -m gpu -q -n 12 -p no:cacheprovider --timeout 120 \
        > "$out/gpu-tests.log" 2>&1
    echo "gpu tests: rc $?"; tail -n 30 "$out/gpu-tests.log"
fi
if [[ $steps == *" short "* ]]; then
    timeout "${GPU_SHORT_S:-150}" python3 -m benchmarks benchmarks/configs/bench-gpu-short.yaml --out "$out/short" \
        > "$out/bench-short.log" 2>&1
    echo "short bench: rc $?"; grep -A8 "^| graph | m | engine-gpu" "$out/bench-short.log"
fi
if [[ $steps == *" full "* ]]; then
    timeout "${GPU_FULL_S:-300}" python3 -m benchmarks benchmarks/configs/bench-gpu.yaml --out "$out/full" \
        > "$out/bench-full.log" 2>&1
    echo "full bench: rc $?"; tail -n 40 "$out/bench-full.log"
fi

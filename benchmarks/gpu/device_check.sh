#!/usr/bin/env bash
# Everything to measure on a machine with an NVIDIA GPU, in one call (a few minutes):
# versions, every GPU test kernel at full size, GEMM / conv2d / nn Linear against cuBLAS and
# cuDNN, a sweep of GEMM tilings, the compile cache across processes, and the training
# tutorial on the GPU.
#     bash benchmarks/gpu/device_check.sh
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
fi
status=0
run() {
    echo "=== $*"
    timeout 300 "$@" || { echo "=== FAILED ($?): $*"; status=1; }
}
run python benchmarks/gpu/bench_gpu.py
run python benchmarks/gpu/gemm_sweep.py
run python benchmarks/gpu/cache_check.py
TW_DEVICE=cuda run python tutorials/09_training.py
exit $status

#!/usr/bin/env bash
# Everything to measure on a machine with an NVIDIA GPU, in one call of under 10 minutes:
# versions, GEMM / conv2d / nn Linear / nn Conv2d against cuBLAS and cuDNN, every GPU test
# kernel at full size, a sweep of GEMM tilings; in parallel (they mostly compile, on other
# cores) the compile cache across processes and a short training run on the GPU.
#     bash benchmarks/gpu/device_check.sh          # full logs under $OUT (or /tmp) too
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
logs="${OUT:-/tmp}/device_check"
mkdir -p "$logs"
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
fi
status=0
run() {     # run LIMIT NAME COMMAND...: output to the log and the console
    local limit=$1 name=$2
    shift 2
    echo "=== $name: $*"
    timeout "$limit" "$@" > "$logs/$name.log" 2>&1
    local rc=$?
    cat "$logs/$name.log"
    [ $rc -eq 0 ] || { echo "=== FAILED ($rc): $name"; status=1; }
}
( timeout 240 python benchmarks/gpu/cache_check.py > "$logs/cache.log" 2>&1
  echo "exit $?" >> "$logs/cache.log" ) &
( TW_DEVICE=cuda TW_TUTORIAL_SMALL=1 timeout 420 python tutorials/09_training.py \
  > "$logs/training.log" 2>&1; echo "exit $?" >> "$logs/training.log" ) &
run 300 bench python benchmarks/gpu/bench_gpu.py
run 200 sweep python benchmarks/gpu/gemm_sweep.py
wait
for name in cache training; do
    echo "=== $name (in the background)"
    tail -n 25 "$logs/$name.log"
    tail -n 1 "$logs/$name.log" | grep -q "^exit 0$" || status=1
done
exit $status

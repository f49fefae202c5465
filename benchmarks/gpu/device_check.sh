#!/usr/bin/env bash
# Everything to measure on a machine with an NVIDIA GPU, in one call of about 6 minutes (an H200,
# 2026-11-30: the training run compiles 109 kernels in its first epoch, about 3 minutes):
# a smoke test (versions, one kernel: a broken setup stops here in seconds), a sweep of GEMM
# tilings against cuBLAS on a quiet GPU, then GEMM / conv2d / nn Linear / nn Conv2d against
# cuBLAS and cuDNN and every GPU test kernel at full size, with (in the background: they mostly
# compile, on other cores) the compile cache across processes and a short training run.
#     bash benchmarks/gpu/device_check.sh          # full logs under $OUT (or /tmp) too
# If the machine's numba cannot run, wheels in .whl/ (numba, numba-cuda) are tried instead.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
logs="${OUT:-/tmp}/device_check"
mkdir -p "$logs"
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
        --format=csv
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
    return $rc
}
if ! run 90 smoke python3 benchmarks/gpu/smoke.py; then
    ls .whl/*.whl > /dev/null 2>&1 || exit 1
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PYTHONPATH"
    status=0
    run 90 smoke-wheels python3 benchmarks/gpu/smoke.py || exit 1
fi
run 200 sweep python3 benchmarks/gpu/gemm_sweep.py
( timeout 200 python3 benchmarks/gpu/cache_check.py > "$logs/cache.log" 2>&1
  echo "exit $?" >> "$logs/cache.log" ) &
( TW_DEVICE=cuda TW_TUTORIAL_SMALL=1 timeout 250 python3 benchmarks/gpu/build_times.py \
  tutorials/09_training.py > "$logs/training.log" 2>&1; echo "exit $?" >> "$logs/training.log" ) &
run 250 bench python3 benchmarks/gpu/bench_gpu.py
wait
for name in cache training; do
    echo "=== $name (in the background)"
    grep -v "build_times\]\|Warning\|warn(" "$logs/$name.log" | tail -n 25
    grep "kernels launched" "$logs/$name.log"
    tail -n 1 "$logs/$name.log" | grep -q "^exit 0$" || status=1
done
echo "=== GEMM sweep, best first"
sed -n '/^  ratio/p' "$logs/sweep.log"
grep -h "ratio\|FAILED" "$logs/bench.log"
exit $status

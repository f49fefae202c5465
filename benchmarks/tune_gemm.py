"""A 64-trial tuning run of matmul 512^3 with a planted crashing candidate and a planted hanging
one, then the best config applied by ``te.build`` in a fresh process.

    python benchmarks/tune_gemm.py [--trials 64] [--log gemm_tune.jsonl]

The template is ``nn.tune.templates.gemm`` plus one knob, ``plant``: two of its sixteen values
make the candidate kill its worker (a segfault through ctypes) or hang. The tuner must record
them as one failed trial each and carry on.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from nn import tune  # noqa: E402
from nn.tune import templates  # noqa: E402

PLANTS = ["none"] * 14 + ["segfault", "hang"]


@tune.template("gemm_planted", reference=lambda a, b, M, N, K: a @ b)
def gemm_planted(cfg, M, N, K):
    cfg.define_knob("plant", PLANTS)
    sch, tensors = templates.gemm.func(cfg, M, N, K)
    plant = cfg["plant"].val
    if plant == "segfault" and not isinstance(cfg, tune.ConfigSpace):
        ctypes.string_at(0)                          # kills the worker process
    if plant == "hang" and not isinstance(cfg, tune.ConfigSpace):
        time.sleep(3600)
    return sch, tensors


def tune_run(trials, log, seed):
    task = tune.Task("gemm_planted", (512, 512, 512), target="llvm")
    print(f"space: {len(task.space)} configs")
    tuner = tune.RandomTuner(task, seed=seed)
    t0 = time.perf_counter()
    tuner.tune(trials, measure_option=tune.MeasureOption(timeout=4.0, number=3, repeat=3),
               callbacks=[tune.progress_bar(), tune.log_to_file(log)])
    tune.shutdown_workers()
    records = [json.loads(line) for line in open(log)]
    kinds = {}
    for r in records:
        kinds[r.get("error_kind") or "ok"] = kinds.get(r.get("error_kind") or "ok", 0) + 1
    print(f"{len(records)} trials in {time.perf_counter() - t0:.1f} s: {kinds}")
    print(f"best in tuning: {tuner.best_flops / 1e9:.1f} GFLOP/s")
    assert len(records) == trials, "every trial is recorded"
    assert kinds.get("crash", 0) >= 1 and kinds.get("timeout", 0) >= 1, \
        "the planted crash and hang were drawn and survived"


def apply_in_fresh_process(log):
    code = f"""
import sys, time, numpy as np
sys.path.insert(0, {HERE!r})
import tune_gemm
from nn import tune
f = tune.build_best("gemm_planted", 512, 512, 512, log={log!r})
a, b = np.random.rand(2, 512, 512).astype("float32")
c = np.empty((512, 512), "float32")
f(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-4)
t = f.time_evaluator(number=10, repeat=5)(a, b, c).median
ts = []
for _ in range(5):
    t0 = time.perf_counter(); [a @ b for _ in range(10)]; ts.append((time.perf_counter() - t0) / 10)
tn = sorted(ts)[2]
flop = 2 * 512 ** 3
print(f"fresh process, best config: {{flop / t / 1e9:.1f}} GFLOP/s; numpy a @ b "
      f"{{flop / tn / 1e9:.1f}} GFLOP/s; ratio {{tn / t:.2f}}")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print(proc.stdout.strip())
    if proc.returncode:
        print(proc.stderr[-3000:])
        raise SystemExit("applying the best config in a fresh process failed")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--log", default="gemm_tune.jsonl")
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    if os.path.exists(args.log):
        os.remove(args.log)
    tune_run(args.trials, args.log, args.seed)
    apply_in_fresh_process(os.path.abspath(args.log))


if __name__ == "__main__":
    main()

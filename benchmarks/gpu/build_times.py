"""Run a script (a training tutorial, say) and log every GPU kernel build it does: the
kernel's name, the seconds it took to compile and run first, and the running total, so that
a slow first epoch can be read as compile time or run time.

    TW_DEVICE=cuda python benchmarks/gpu/build_times.py tutorials/09_training.py

PTX mode needs no GPU: the script's first epoch runs on numba's simulator with every GPU
build recorded (the kernels are not run: their outputs are zeros), each distinct build's
real-GPU kernels are emitted, and a second process (NVVM, no simulator) compiles them to PTX
for sm_90, logging each kernel's compile time and the total, (a) one at a time without the
PTX cache (what a first epoch cost before), (b) in ``--jobs`` worker processes with a cold
cache, (c) again with the cache warm (a second process):

    python benchmarks/gpu/build_times.py --ptx tutorials/09_training.py [--jobs 16]
"""
import argparse
import os
import pickle
import runpy
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import codegen_cuda  # noqa: E402
from codegen_cuda import module as cuda_module  # noqa: E402


def main(script):
    start = time.perf_counter()
    totals = {"builds": 0, "seconds": 0.0}
    build, call = codegen_cuda.build, cuda_module.CudaModule.__call__
    first_call = set()

    def timed_build(sch, args, target, name="default_function"):
        t0 = time.perf_counter()
        mod = build(sch, args, target, name)
        totals["builds"] += 1
        totals["seconds"] += time.perf_counter() - t0
        return mod

    def timed_call(self, *args):
        if id(self) in first_call:
            return call(self, *args)
        first_call.add(id(self))
        t0 = time.perf_counter()
        out = call(self, *args)            # numba compiles the kernels at their first launch
        took = time.perf_counter() - t0
        totals["seconds"] += took
        print(f"[build_times] {self.name}: first launch {took:.1f} s; {len(first_call)} "
              f"kernels, {totals['seconds']:.0f} s building of "
              f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        return out

    codegen_cuda.build = timed_build
    cuda_module.CudaModule.__call__ = timed_call
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        print(f"[build_times] {len(first_call)} kernels launched, {totals['builds']} built; "
              f"{totals['seconds']:.0f} s building and first launches of "
              f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)


def record(script, out):
    """Run ``script``'s first epoch on the simulator, recording the GPU builds; pickle the
    distinct builds' real-GPU (name, source, kernels) into ``out``."""
    import numpy as np
    from numba import cuda
    import codegen_cuda.emit as emit
    import te
    from codegen_llvm import _shape_vars
    from nn.ops import gpu
    builds = []
    real_build = gpu._build

    def recording(declare, shapes, dtypes, params):
        builds.append((declare, shapes, dtypes, params))
        return real_build(declare, shapes, dtypes, params)

    def outputs_only(self, *arrays):          # the simulator would take hours
        outs = tuple(cuda.to_device(np.zeros(s or (1,), d))
                     for s, d in zip(self.out_shapes, self.out_dtypes))
        outs = tuple(o if s else o.reshape(()) for o, s in zip(outs, self.out_shapes))
        return outs if self.multiple else outs[0]
    gpu._build = recording
    gpu.GpuOpFunction.__call__ = outputs_only
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:          # TW_STOP_AFTER=0: the tutorial stops after epoch 0
        print(f"[build_times] {stop}", file=sys.stderr)
    sources, seen = [], set()
    saved = (gpu.simulator, emit.simulator, emit.jit_takes_launch_bounds,
             emit.shared_takes_alignment)
    gpu.simulator = emit.simulator = lambda: False
    emit.jit_takes_launch_bounds = emit.shared_takes_alignment = lambda: True
    try:
        for declare, shapes, dtypes, params in builds:
            key = (declare, shapes, dtypes, params)
            if key in seen:
                continue
            seen.add(key)
            s, args, *_ = gpu.declare_for_gpu(declare, shapes, dtypes, params)
            func = te.lower(s, args, target="cuda")
            source, kernels, _ = emit.emit_source(func, _shape_vars(func))
            sources.append((f"{declare.__name__} {shapes}", source, kernels))
    finally:
        (gpu.simulator, emit.simulator, emit.jit_takes_launch_bounds,
         emit.shared_takes_alignment) = saved
    with open(out, "wb") as f:
        pickle.dump(sources, f)
    print(f"[build_times] {len(sources)} distinct GPU builds, "
          f"{sum(len(k) for _, _, k in sources)} kernels recorded", file=sys.stderr)


def compile_ptx(path, jobs, use_cache, label):
    """Compile the recorded builds to PTX; print per kernel and the totals."""
    from codegen_cuda.compile_cache import ptx_many
    with open(path, "rb") as f:
        sources = pickle.load(f)
    done = {"n": 0, "cpu": 0.0, "cached": 0}
    start = time.perf_counter()

    def log(name, seconds, cached):
        done["n"] += 1
        done["cpu"] += seconds
        done["cached"] += cached
        print(f"[build_times] {label}: {name}: {'cached' if cached else f'{seconds:.2f} s'}; "
              f"{done['n']} kernels, {time.perf_counter() - start:.1f} s", file=sys.stderr,
              flush=True)
    ptx = ptx_many([(src, kernels, name) for name, src, kernels in sources], cc=(9, 0),
                   workers=jobs,
                   use_cache=use_cache, log=log)
    wall = time.perf_counter() - start
    n = sum(len(p) for p in ptx)
    for (name, _, kernels), p in zip(sources, ptx):
        assert len(p) == len(kernels) and all(".entry" in x for x in p), name
    print(f"{label}: {n} kernels ({done['n']} distinct, {done['cached']} from the cache) of "
          f"{len(sources)} builds: {wall:.1f} s wall, {done['cpu']:.1f} s of compile time")
    return wall, done["cpu"]


def ptx_mode(script, jobs):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", TW_DEVICE="cuda", TW_STOP_AFTER="0")
    work = tempfile.mkdtemp(prefix="tw_build_times_")
    env["TW_CHECKPOINT"] = os.path.join(work, "checkpoint.nn")
    recorded = os.path.join(work, "builds.pkl")
    me = os.path.abspath(__file__)
    subprocess.run([sys.executable, me, "--record", recorded, script], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", TW_CACHE_DIR=os.path.join(work, "cache"))
    rows = []
    for label, n, cache in (("serial, no PTX cache", 1, "0"),
                            (f"{jobs} workers, cold cache", jobs, "1"),
                            (f"{jobs} workers, warm cache", jobs, "1")):
        out = subprocess.run([sys.executable, me, "--compile", recorded, "--jobs", str(n),
                              "--cache", cache, "--label", label, script], env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        print(out.strip(), flush=True)
        wall, cpu = (float(x) for x in out.strip().splitlines()[-1].split("|")[1:3])
        rows.append((label, wall, cpu))
    base = rows[0][1]
    print(f"\n{'PTX compile of the first epoch':<32} {'wall s':>8} {'compile s':>10} "
          f"{'cut':>6}")
    for label, wall, cpu in rows:
        print(f"{label:<32} {wall:>8.1f} {cpu:>10.1f} {base / max(wall, 1e-9):>6.1f}x")
    print(f"({os.cpu_count()} CPUs; numba's compile_ptx for sm_90)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("script")
    ap.add_argument("--ptx", action="store_true", help="PTX mode (no GPU needed)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--record", help=argparse.SUPPRESS)
    ap.add_argument("--compile", help=argparse.SUPPRESS)
    ap.add_argument("--cache", default="1", help=argparse.SUPPRESS)
    ap.add_argument("--label", default="", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()
    if args.record:
        record(args.script, args.record)
    elif args.compile:
        wall, cpu = compile_ptx(args.compile, args.jobs, args.cache == "1", args.label)
        print(f"|{wall}|{cpu}")
    elif args.ptx:
        ptx_mode(args.script, args.jobs)
    else:
        main(args.script)

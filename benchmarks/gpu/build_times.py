"""Run a script (a training tutorial, say) and log every GPU kernel build it does: the
kernel's name, the seconds it took to compile and run first, and the running total, so that
a slow first epoch can be read as compile time or run time.

    TW_DEVICE=cuda python benchmarks/gpu/build_times.py tutorials/09_training.py
"""
import os
import runpy
import sys
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


if __name__ == "__main__":
    main(sys.argv[1])

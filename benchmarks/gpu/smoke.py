"""The first minute on a GPU machine: versions, then one small kernel built and checked, so
that a broken setup (numba-cuda, the driver, NVVM) fails in seconds, not after every
benchmark.

    python benchmarks/gpu/smoke.py
"""
import os
import platform
import sys

import numpy as np

if not hasattr(np, "row_stack"):        # older numba-cuda with numpy 2.4+ (see bench_gpu.py)
    np.row_stack = np.vstack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def main():
    import llvmlite
    import numba
    from numba import cuda
    print(f"python {platform.python_version()}, numpy {np.__version__}, numba "
          f"{numba.__version__}, llvmlite {llvmlite.__version__}", flush=True)
    try:
        import numba_cuda
        print(f"numba-cuda {getattr(numba_cuda, '__version__', '?')}")
    except ImportError:
        print("numba-cuda not installed (numba's own CUDA target)")
    dev = cuda.get_current_device()
    print(f"GPU {getattr(dev, 'name', '(simulator)')}, compute capability "
          f"{getattr(dev, 'compute_capability', '?')}", flush=True)
    import te
    n = 1 << 20 if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" else 1000
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=256)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = te.build(s, [A, B], target="cuda")
    a = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    b = np.full(n, np.nan, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    print(f"smoke: a {n}-element kernel built, ran and matched numpy", flush=True)


if __name__ == "__main__":
    main()

"""The first minute on a GPU machine: versions, then one small kernel built and checked, so
that a broken setup (numba-cuda, the driver, NVVM) fails in seconds, not after every
benchmark.

    python benchmarks/gpu/smoke.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import te, versions  # noqa: E402


def main():
    versions()
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

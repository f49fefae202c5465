"""Which operand layouts of a GPU product are slow: C = A @ B with A and B each stored as used
or transposed (PyTorch's Linear reads its weight transposed: x @ w^T), through
nn.ops.gpu.schedule_matmul, and nn's Linear forward (nn.ops.gpu.build of dense, bias
included), all 4096^3 float32, against cuBLAS (PyTorch, TF32 off) in the same run.

    python benchmarks/gpu/matmul_layouts.py [--size 4096]
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/gpu/matmul_layouts.py --size 24   # a dry run
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import gpu, te, timed  # noqa: E402
from gemm_sweep import vendor_matmul  # noqa: E402
from nn.ops import cpu_matmul  # noqa: E402


def product(n, transpose_a, transpose_b, cfg):
    """(schedule, args) of an n^3 product with the operands stored as asked."""
    k = te.reduce_axis((0, n), "k")
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = te.compute((n, n), lambda i, j: te.sum(
        (A[k, i] if transpose_a else A[i, k]) * (B[j, k] if transpose_b else B[k, j]),
        axis=k), name="C")
    return gpu.schedule_matmul(C, **cfg), [A, B, C]


def main():
    from numba import cuda
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    n = ap.parse_args().size
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    bias = rng.standard_normal(n, dtype=np.float32)
    name, matmul, sync = vendor_matmul(a, b)
    flops = 2.0 * n ** 3
    t_blas = timed(matmul, sync)
    print(f"{name}: {t_blas * 1e3:.3f} ms, {flops / t_blas / 1e9:.0f} GFLOP/s", flush=True)
    da, db, dbias = cuda.to_device(a), cuda.to_device(b), cuda.to_device(bias)
    dc = cuda.device_array((n, n), np.float32)
    rows = rng.choice(n, 4, replace=False)
    large = dict(gpu.MATMUL_LARGE)
    runs = [(f"A{'T' if ta else ''} @ B{'T' if tb else ''} {cfg}", ta, tb, cfg)
            for ta, tb, cfg in [(False, False, large), (False, True, large),
                                (True, False, large), (True, True, large),
                                (False, True, dict(large, step=16))]]
    for label, ta, tb, cfg in runs:
        try:
            s, args = product(n, ta, tb, cfg)
            mod = te.build(s, args, target="cuda")
            dc.copy_to_device(np.full((n, n), np.nan, np.float32))
            mod(da, db, dc)
            ref = (a.T if ta else a)[rows] @ (b.T if tb else b)
            ok = np.allclose(dc.copy_to_host()[rows], ref, rtol=1e-3, atol=1e-2)
            t = timed(lambda: mod(da, db, dc), cuda.synchronize)
            print(f"{label}: {t * 1e3:.3f} ms ratio {t_blas / t:.3f} correct={ok}", flush=True)
        except Exception as err:                            # noqa: BLE001
            print(f"{label}: failed: {type(err).__name__}: {err}", flush=True)
    f = gpu.build(cpu_matmul.dense, [(n, n), (n, n), (n,)])
    out = f(da, db, dbias)
    ok = np.allclose(out.copy_to_host()[rows], a[rows] @ b.T + bias, rtol=1e-3, atol=1e-2)
    t = timed(lambda: f(da, db, dbias), cuda.synchronize)
    print(f"nn dense (gpu.build, a new output each call): {t * 1e3:.3f} ms ratio "
          f"{t_blas / t:.3f} correct={ok}", flush=True)
    t = timed(lambda: f.module(da, db, dbias, dc), cuda.synchronize)
    print(f"nn dense (its module, one output): {t * 1e3:.3f} ms ratio {t_blas / t:.3f}")
    print(f"  (kernels: {[k.name for k in f.module.kernels]})")
    t0 = time.perf_counter()
    for _ in range(100):
        cuda.device_array((n, n), np.float32)
    cuda.synchronize()
    print(f"cuda.device_array({n}, {n}): {(time.perf_counter() - t0) * 10:.3f} ms each")


if __name__ == "__main__":
    main()

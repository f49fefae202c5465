"""Sweep a few GEMM tilings on the GPU (4096^3 float32) and print GFLOP/s against cuBLAS."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import gpu, gpu_cases, te, timed, vendor  # noqa: E402


# the default first, then its neighbours: each build compiles for 5-15 s
CONFIGS = [dict(gpu.MATMUL_LARGE),
           dict(num_thread=16, vthread=2, per_thread=4, step=16, double_buffer=True,
                min_blocks=2),
           dict(num_thread=16, vthread=2, per_thread=4, step=16, min_blocks=2),
           dict(num_thread=16, vthread=2, per_thread=4, step=8, double_buffer=True),
           dict(num_thread=(8, 16), vthread=2, per_thread=4, step=8, double_buffer=True,
                min_blocks=3),
           dict(num_thread=(16, 8), vthread=2, per_thread=4, step=8, double_buffer=True,
                min_blocks=3),
           dict(num_thread=16, vthread=1, per_thread=8, step=8, double_buffer=True,
                min_blocks=2),
           dict(num_thread=8, vthread=2, per_thread=4, step=8, double_buffer=True,
                min_blocks=3),
           dict(num_thread=(16, 16), vthread=2, per_thread=(4, 4), step=16,
                double_buffer=True, min_blocks=2)]


def vendor_matmul(a, b):
    """(name, a function that multiplies a and b on the GPU with the vendor's library, its
    synchronization); numpy for a dry run on numba's simulator."""
    found = vendor()
    if found is None:
        return "numpy (a dry run)", lambda: a @ b, lambda: None
    name, matmul, _, to_device, sync = found
    da, db = to_device(a), to_device(b)
    return f"{name} (cuBLAS fp32, TF32 off)", lambda: matmul(da, db), sync


def main():
    from numba import cuda
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--configs", type=int, default=len(CONFIGS), help="the first N only")
    opts = ap.parse_args()
    size = opts.size
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
    name, matmul, sync = vendor_matmul(a, b)
    flops = 2.0 * size ** 3
    t_blas = timed(matmul, sync)
    print(f"{name}: {t_blas * 1e3:.3f} ms, {flops / t_blas / 1e9:.0f} GFLOP/s", flush=True)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dc = cuda.device_array((size, size), np.float32)
    rows = np.random.default_rng(2).choice(size, 8, replace=False)
    results = []
    for cfg in CONFIGS[:opts.configs]:
        try:
            t0 = time.perf_counter()
            s, args, *_ = gpu_cases.gemm_vthread(M=size, K=size, N=size, **cfg)
            mod = te.build(s, args, target="cuda")
            dc.copy_to_device(np.full((size, size), np.nan, np.float32))   # all written?
            mod(da, db, dc)
            cuda.synchronize()
            built = time.perf_counter() - t0
            c = dc.copy_to_host()
            ok = not np.isnan(c).any() and np.allclose(c[rows], a[rows] @ b, rtol=1e-3,
                                                        atol=1e-2)
            t = timed(lambda: mod(da, db, dc), cuda.synchronize)
            results.append((t_blas / t, cfg))
            print(f"{cfg}: {t * 1e3:.3f} ms {flops / t / 1e9:8.0f} GFLOP/s ratio "
                  f"{t_blas / t:.3f} correct={ok} (build {built:.1f} s)", flush=True)
        except Exception as err:                            # noqa: BLE001
            print(f"{cfg}: failed: {type(err).__name__}: {err}", flush=True)
    t_blas2 = timed(matmul, sync)
    print(f"{name} again: {t_blas2 * 1e3:.3f} ms ({t_blas / t_blas2:.3f} of the first)")
    for ratio, cfg in sorted(results, key=lambda r: -r[0]):
        print(f"  ratio {ratio:.3f}  {cfg}")


if __name__ == "__main__":
    main()

"""Sweep a few GEMM tilings on the GPU (4096^3 float32) and print GFLOP/s against cuBLAS."""
import argparse
import os
import statistics
import sys
import time

import numpy as np

if not hasattr(np, "row_stack"):        # older numba-cuda with numpy 2.4+ (see bench_gpu.py)
    np.row_stack = np.vstack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "codegen_cuda"))

import te  # noqa: E402
import gpu_cases  # noqa: E402
from nn.ops import gpu  # noqa: E402


def timed(fn, sync, launches=10, groups=5):
    """Median seconds per launch over ``groups`` groups of ``launches`` back-to-back launches
    (a warm-up first): Python's launch overhead overlaps the kernels."""
    fn()
    sync()
    times = []
    for _ in range(groups):
        t0 = time.perf_counter()
        for _ in range(launches):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / launches)
    return statistics.median(times)


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


def vendor(a, b):
    """A function that multiplies a and b with cuBLAS (through PyTorch, TF32 off) or, for a
    dry run on numba's simulator, numpy; and its synchronization."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            return "cuBLAS fp32 (TF32 off)", lambda: torch.matmul(ta, tb), torch.cuda.synchronize
    except ImportError:
        pass
    return "numpy (a dry run)", lambda: a @ b, lambda: None


def main():
    from numba import cuda
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--configs", type=int, default=len(CONFIGS), help="the first N only")
    opts = ap.parse_args()
    size = opts.size
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
    name, matmul, sync = vendor(a, b)
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

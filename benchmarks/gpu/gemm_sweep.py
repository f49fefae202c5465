"""Sweep a few GEMM tilings on the GPU (4096^3 float32) and print GFLOP/s against cuBLAS."""
import os
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


def main(size=4096):
    from numba import cuda
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    torch.matmul(ta, tb)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        torch.matmul(ta, tb)
    torch.cuda.synchronize()
    t_blas = (time.perf_counter() - t0) / 10
    flops = 2.0 * size ** 3
    print(f"cuBLAS fp32: {flops / t_blas / 1e9:.0f} GFLOP/s")
    da, db = cuda.to_device(a), cuda.to_device(b)
    dc = cuda.device_array((size, size), np.float32)
    # the default first, then its neighbours: each build compiles for 5-20 s
    configs = [("gemm_vthread", dict(gpu.MATMUL_LARGE)),
               ("gemm_vthread", dict(num_thread=16, vthread=2, per_thread=4, step=8,
                                     double_buffer=True)),
               ("gemm_vthread", dict(num_thread=16, vthread=2, per_thread=4, step=16)),
               ("gemm_vthread", dict(num_thread=16, vthread=2, per_thread=4, step=16,
                                     min_blocks=2)),
               ("gemm_vthread", dict(num_thread=16, vthread=2, per_thread=4, step=16,
                                     double_buffer=True)),
               ("gemm_vthread", dict(num_thread=8, vthread=2, per_thread=4, step=8,
                                     double_buffer=True, min_blocks=3))]
    for name, cfg in configs:
        try:
            s, args, *_ = getattr(gpu_cases, name)(M=size, K=size, N=size, **cfg)
            mod = te.build(s, args, target="cuda")
            mod(da, db, dc)
            cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(5):
                mod(da, db, dc)
            cuda.synchronize()
            t = (time.perf_counter() - t0) / 5
            ok = np.allclose(dc.copy_to_host()[:4], a[:4] @ b, rtol=1e-3, atol=1e-2)
            print(f"{name} {cfg}: {flops / t / 1e9:8.0f} GFLOP/s ratio {t_blas / t:.3f} "
                  f"correct={ok}", flush=True)
        except Exception as err:                            # noqa: BLE001
            print(f"{name} {cfg}: failed: {err}", flush=True)


if __name__ == "__main__":
    main()

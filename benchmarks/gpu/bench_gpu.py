"""GPU check: every GPU test kernel at full size against numpy/cuBLAS, then GFLOP/s and ratios
against cuBLAS/cuDNN (through PyTorch or CuPy, whichever is installed) for GEMM 4096^3 float32
and TVM's conv2d tutorial problem (batch 256, 256->512 channels, 14x14, 3x3, pad 1).

    python benchmarks/gpu/bench_gpu.py            # on a machine with an NVIDIA GPU
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/gpu/bench_gpu.py --small   # a dry run anywhere

TF32 is turned off for the vendor libraries so that both sides compute in float32.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "codegen_cuda"))

import te  # noqa: E402
import gpu_cases  # noqa: E402
from nn.ops import gpu  # noqa: E402


def versions():
    """The software and the GPU this run measures."""
    import llvmlite
    import numba
    print(f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
          f"llvmlite {llvmlite.__version__}")
    try:
        import numba_cuda
        print(f"numba-cuda {getattr(numba_cuda, '__version__', '?')}")
    except ImportError:
        pass
    for name in ("torch", "cupy"):
        try:
            mod = __import__(name)
            print(f"{name} {mod.__version__}")
        except Exception:                                   # noqa: BLE001
            print(f"{name} not installed")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        from numba import cuda
        dev = cuda.get_current_device()
        print(f"GPU {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, "
              f"compute capability {dev.compute_capability}")
        from codegen_cuda.emit import jit_takes_launch_bounds, shared_takes_alignment
        print(f"numba-cuda takes launch_bounds: {jit_takes_launch_bounds()}, shared array "
              f"alignment: {shared_takes_alignment()}")


def vendor():
    """(name, matmul(a, b) on device arrays, conv2d NCHW fn, to_device, sync) or None."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            return ("torch", torch.matmul, torch.nn.functional.conv2d,
                    lambda x: torch.from_numpy(x).cuda(), torch.cuda.synchronize)
    except ImportError:
        pass
    try:
        import cupy
        return ("cupy", cupy.matmul, None, cupy.asarray, cupy.cuda.Device().synchronize)
    except ImportError:
        return None


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


DRY_RUN = dict(launches=1, groups=1)        # --small: one launch, to see that it runs


def check_cases(small):
    """Every GPU test case, at a larger size on the GPU, against numpy."""
    big = {} if small else {
        "vector_add": dict(scale=10000),
        "fused_elementwise_2d": dict(scale=200),
        "int_and_half": dict(scale=1000),
        "row_sum_cross_thread": dict(scale=40),
        "nn_dense_padded": dict(scale=100),
        "max_reduce_per_thread": dict(scale=300),
        "gemm_shared_local": dict(M=512, K=256, N=512, tile=16, step=8, reg=4),
        "conv2d_hwcn": dict(batch=64, in_channel=32, out_channel=64, in_size=14, tile=8,
                            num_thread=8, step=8, vthread=2),
        "gemm_double_buffer": dict(M=300, K=200, N=260, num_thread=8, vthread=2, per_thread=2,
                                   step=8),
        "sum_across_blocks": dict(scale=300),
        "auto_long_sums": dict(scale=40),
        "nn_conv2d_implicit_gemm": dict(N=8, C=16, H=20, W=20, F=24),
    }
    for case in gpu_cases.CASES:
        try:
            t0 = time.perf_counter()
            s, args, ins, outs, ref = case(**big.get(case.__name__, {}))
            mod = te.build(s, args, target="cuda")
            mod(*ins, *outs)
            expected = ref(*ins)
            expected = expected if isinstance(expected, list) else [expected]
            for o, e in zip(outs, expected):
                np.testing.assert_allclose(o.astype("float64"), e.astype("float64"),
                                           rtol=2e-3, atol=2e-3)
            print(f"  {case.__name__:24s} ok   ({time.perf_counter() - t0:.1f} s with compile)")
        except Exception:                                   # noqa: BLE001
            print(f"  {case.__name__:24s} FAILED")
            traceback.print_exc()


def bench_gemm(size, vend, small):
    from numba import cuda
    cfg = dict(gpu.MATMUL_LARGE) if not small else \
        dict(num_thread=4, vthread=2, per_thread=2, step=4, double_buffer=True)
    print(f"  schedule_matmul{cfg}")
    s, args, _, _, _ = gpu_cases.gemm_vthread(M=size, K=size, N=size, **cfg)
    t0 = time.perf_counter()
    mod = te.build(s, args, target="cuda")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dc = cuda.device_array((size, size), np.float32)
    mod(da, db, dc)
    cuda.synchronize()
    print(f"  compile + first run {time.perf_counter() - t0:.1f} s")
    c = dc.copy_to_host()
    rows = rng.choice(size, 8, replace=False)
    np.testing.assert_allclose(c[rows], a[rows] @ b, rtol=1e-3, atol=1e-2)
    flops = 2.0 * size ** 3
    t_ours = timed(lambda: mod(da, db, dc), cuda.synchronize, **(DRY_RUN if small else {}))
    print(f"  tensorweave GEMM {size}^3: {t_ours * 1e3:9.3f} ms  {flops / t_ours / 1e9:9.1f} GFLOP/s")
    if vend is not None:
        name, matmul, _, to_dev, sync = vend
        va, vb = to_dev(a), to_dev(b)
        t_v = timed(lambda: matmul(va, vb), sync)
        print(f"  {name} (cuBLAS, fp32, TF32 off): {t_v * 1e3:9.3f} ms  "
              f"{flops / t_v / 1e9:9.1f} GFLOP/s")
        print(f"  ratio tensorweave / cuBLAS = {t_v / t_ours:.3f}")


def bench_conv(vend, small):
    from numba import cuda
    if small:
        p = dict(batch=8, in_channel=4, out_channel=8, in_size=3, tile=2, num_thread=4, step=4,
                 vthread=2)
    else:
        p = dict(batch=256, in_channel=256, out_channel=512, in_size=14, tile=8, num_thread=8,
                 step=8, vthread=2)
    s, args, _, _, _ = gpu_cases.conv2d_hwcn(**p)
    t0 = time.perf_counter()
    mod = te.build(s, args, target="cuda")
    rng = np.random.default_rng(1)
    n, ci, co, hw = p["batch"], p["in_channel"], p["out_channel"], p["in_size"]
    a = rng.standard_normal((hw, hw, ci, n), dtype=np.float32)
    w = (rng.standard_normal((3, 3, ci, co)) / np.sqrt(9 * ci)).astype(np.float32)
    da, dw = cuda.to_device(a), cuda.to_device(w)
    dout = cuda.device_array((hw, hw, co, n), np.float32)
    mod(da, dw, dout)
    cuda.synchronize()
    print(f"  compile + first run {time.perf_counter() - t0:.1f} s")
    flops = 2.0 * n * co * ci * 9 * hw * hw
    t_ours = timed(lambda: mod(da, dw, dout), cuda.synchronize, **(DRY_RUN if small else {}))
    print(f"  tensorweave conv2d: {t_ours * 1e3:9.3f} ms  {flops / t_ours / 1e9:9.1f} GFLOP/s")
    if vend is not None and vend[2] is not None:
        import torch
        name, _, conv, to_dev, sync = vend
        x = to_dev(np.ascontiguousarray(a.transpose(3, 2, 0, 1)))       # HWCN -> NCHW
        wt = to_dev(np.ascontiguousarray(w.transpose(3, 2, 0, 1)))      # HWIO -> OIHW
        ref = conv(x, wt, padding=1)
        ours = torch.from_numpy(dout.copy_to_host().transpose(3, 2, 0, 1).copy()).cuda()
        err = (ours - ref).abs().max().item()
        print(f"  max |tensorweave - cuDNN| = {err:.2e}")
        assert err < 1e-2 * max(1.0, ref.abs().max().item())
        t_v = timed(lambda: conv(x, wt, padding=1), sync)
        print(f"  {name} (cuDNN, fp32, TF32 off): {t_v * 1e3:9.3f} ms  "
              f"{flops / t_v / 1e9:9.1f} GFLOP/s")
        print(f"  ratio tensorweave / cuDNN = {t_v / t_ours:.3f}")


def bench_nn_linear(vend, small):
    """nn's Linear forward on the GPU (nn.ops.gpu.build: the padded, tiled product with the
    bias added on the way out) against torch.nn.functional.linear."""
    from numba import cuda
    from nn.ops import cpu_matmul
    M, K, N = (16, 24, 20) if small else (4096, 4096, 4096)
    t0 = time.perf_counter()
    f = gpu.build(cpu_matmul.dense, [(M, K), (N, K), (N,)])
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s, dtype=np.float32) for s in ((M, K), (N, K), (N,)))
    dx, dw, db = cuda.to_device(x), cuda.to_device(w), cuda.to_device(b)
    out = f(dx, dw, db)
    cuda.synchronize()
    print(f"  compile + first run {time.perf_counter() - t0:.1f} s")
    rows = rng.choice(M, min(M, 8), replace=False)
    np.testing.assert_allclose(out.copy_to_host()[rows], x[rows] @ w.T + b, rtol=1e-3,
                               atol=1e-2)
    flops = 2.0 * M * N * K
    t_ours = timed(lambda: f(dx, dw, db), cuda.synchronize, **(DRY_RUN if small else {}))
    print(f"  nn dense {M}x{K} -> {N}: {t_ours * 1e3:9.3f} ms  {flops / t_ours / 1e9:9.1f} GFLOP/s")
    if vend is not None and vend[0] == "torch":
        import torch
        tx, tw, tb = (torch.from_numpy(a).cuda() for a in (x, w, b))
        t_v = timed(lambda: torch.nn.functional.linear(tx, tw, tb), torch.cuda.synchronize)
        print(f"  torch linear (cuBLAS, fp32, TF32 off): {t_v * 1e3:9.3f} ms  "
              f"{flops / t_v / 1e9:9.1f} GFLOP/s")
        print(f"  ratio nn / torch = {t_v / t_ours:.3f}")


def bench_nn_conv(vend, small):
    """nn's Conv2d forward and its two gradients on the GPU (implicit GEMMs: the input's
    patches gathered into shared tiles) against torch on a ResNet layer (cuDNN)."""
    from numba import cuda
    from nn.ops import conv
    N, C, H, F = (2, 3, 6, 4) if small else (32, 64, 56, 64)
    shapes = [(N, C, H, H), (F, C, 3, 3)]
    rng = np.random.default_rng(3)
    x, w = (rng.standard_normal(s, dtype=np.float32) for s in shapes)
    g = rng.standard_normal((N, F, H, H), dtype=np.float32)
    dx, dw, dg = cuda.to_device(x), cuda.to_device(w), cuda.to_device(g)
    pad = (1, 1, 1, 1)
    t0 = time.perf_counter()
    fwd = gpu.build(conv.conv2d, shapes, padding=pad)
    gin = gpu.build(conv.conv2d_grad_input, [(N, F, H, H), (F, C, 3, 3)], in_size=(H, H),
                    padding=pad)
    gwt = gpu.build(conv.conv2d_grad_weight, [(N, C, H, H), (N, F, H, H)],
                    kernel_size=(3, 3), padding=pad)
    out = fwd(dx, dw)
    cuda.synchronize()
    print(f"  compile (3 kernels) + first run {time.perf_counter() - t0:.1f} s")
    from te.testing import conv2d_nchw_python
    np.testing.assert_allclose(out.copy_to_host()[:1], conv2d_nchw_python(x[:1], w, 1, 1),
                               rtol=1e-3, atol=1e-2)
    flops = 2.0 * N * F * C * 9 * H * H
    runs = [("forward", lambda: fwd(dx, dw)), ("grad input", lambda: gin(dg, dw)),
            ("grad weight", lambda: gwt(dx, dg))]
    ours = {name: timed(fn, cuda.synchronize, **(DRY_RUN if small else {}))
            for name, fn in runs}
    torch_runs = {}
    if vend is not None and vend[0] == "torch":
        import torch
        torch.backends.cudnn.allow_tf32 = False
        tx, tw, tg = (torch.from_numpy(a).cuda() for a in (x, w, g))
        cg = torch.nn.grad
        torch_runs = {"forward": lambda: torch.nn.functional.conv2d(tx, tw, padding=1),
                      "grad input": lambda: cg.conv2d_input(tx.shape, tw, tg, padding=1),
                      "grad weight": lambda: cg.conv2d_weight(tx, tw.shape, tg, padding=1)}
    for name, t in ours.items():
        line = f"  nn conv2d {name} {N}x{C}x{H}x{H} -> {F}: {t * 1e3:8.3f} ms " \
               f"{flops / t / 1e9:8.1f} GFLOP/s"
        if name in torch_runs:
            t_v = timed(torch_runs[name], torch.cuda.synchronize)
            line += f"   torch (cuDNN, TF32 off) {t_v * 1e3:8.3f} ms   ratio {t_v / t:.3f}"
        print(line, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="tiny sizes (simulator dry run)")
    ap.add_argument("--gemm", type=int, default=4096)
    ap.add_argument("--skip-cases", action="store_true")
    args = ap.parse_args()
    versions()
    vend = None if args.small else vendor()
    sections = [("GEMM", lambda: bench_gemm(32 if args.small else args.gemm, vend, args.small)),
                ("conv2d (TVM GPU tutorial problem)", lambda: bench_conv(vend, args.small)),
                ("nn Linear forward", lambda: bench_nn_linear(vend, args.small)),
                ("nn Conv2d forward and gradients", lambda: bench_nn_conv(vend, args.small))]
    if not args.skip_cases:         # last: the figures first, should the time run out
        sections.append(("correctness of every GPU test kernel", lambda: check_cases(args.small)))
    for title, fn in sections:
        print(f"== {title}", flush=True)
        try:
            fn()
        except Exception:                                   # noqa: BLE001
            print(f"  {title} FAILED")
            traceback.print_exc()
        sys.stdout.flush()


if __name__ == "__main__":
    main()

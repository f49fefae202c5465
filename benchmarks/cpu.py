"""The CPU operator library (``nn.ops.cpu``) timed next to numpy and PyTorch, in one run.

For each case the candidates are timed in interleaved rounds (tensorweave, numpy, torch, then
again), so that all see the same load on a shared machine; the table gives the median over the
rounds, GFLOP/s (or GB/s of compulsory memory traffic) and the speed relative to numpy and
torch (> 1: tensorweave is faster). Every result is checked against numpy first.

    python benchmarks/cpu.py [--threads 1 2] [--rounds 7] [--small] [--only matmul ...]

Thread counts: ``te.set_num_threads``, ``torch.set_num_threads`` and, for numpy's OpenBLAS,
threadpoolctl when installed, else a child process per thread count with
``OPENBLAS_NUM_THREADS`` set.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from bench_util import ROOT, measure, torch  # first: puts the repository on sys.path
import te
from nn.ops import cpu

try:
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

KINDS = ("matmul", "conv2d", "add", "fused", "sum", "softmax")
# pause before each timing: OpenBLAS's idle workers keep spinning for about 2**28 cycles
# (~0.1 s) after a call and would steal a core from whatever runs next
SETTLE_S = 0.2


def _check(got, want, what, rtol=1e-3, atol=1e-3):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def case_matmul(M, N, K, rng):
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    f = cpu.build(cpu.matmul, [a.shape, b.shape])
    c = np.empty((M, N), np.float32)
    f(a, b, out=c)
    _check(c, a @ b, "matmul")
    cands = {"te": lambda: f(a, b, out=c), "numpy": lambda: np.matmul(a, b, out=c)}
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.empty(M, N)
        cands["torch"] = lambda: torch.matmul(ta, tb, out=tc)
    return f"matmul M,N,K={M},{N},{K}", 2.0 * M * N * K, "GFLOP/s", cands


def _conv_numpy(x, w, pad):
    """im2col (a strided view, copied once) and one matrix product."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    oh, ow = win.shape[2], win.shape[3]
    cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, oh * ow)
    return (w.reshape(f, -1) @ cols).reshape(n, f, oh, ow)


def case_conv2d(rng):
    x = rng.standard_normal((1, 64, 56, 56), dtype=np.float32)
    w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
    f = cpu.build(cpu.conv2d_nchw, [x.shape, w.shape], padding=1)
    out = np.empty((1, 64, 56, 56), np.float32)
    f(x, w, out=out)
    _check(out, _conv_numpy(x, w, 1), "conv2d", rtol=1e-3, atol=2e-3)
    direct = cpu.build(cpu.conv2d_nchw, [x.shape, w.shape], padding=1, algorithm="direct")
    cands = {"te": lambda: f(x, w, out=out), "numpy": lambda: _conv_numpy(x, w, 1),
             "direct": lambda: direct(x, w, out=out)}     # te's direct convolution
    if torch is not None:
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        cands["torch"] = lambda: torch.nn.functional.conv2d(tx, tw, padding=1)
    return "conv2d 1x64x56x56 k64 3x3 p1", 2.0 * out.size * 64 * 9, "GFLOP/s", cands


def case_add(n, rng):
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = te.nd.aligned_empty(n, np.float32)    # te allocates 64-byte aligned
    f = cpu.build(cpu.add, [a.shape, b.shape])
    f(a, b, out=c)
    _check(c, a + b, "add")
    cands = {"te": lambda: f(a, b, out=c), "numpy": lambda: np.add(a, b, out=c)}
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        cands["torch"] = lambda: torch.add(ta, tb, out=tc)
    return f"a + b, {n >> 20}M float32", 12.0 * n, "GB/s", cands


def _fused(a, b, c):
    return cpu.broadcast(lambda x, y, z: te.exp(x) * y + z, a, b, c, name="exp_mul_add")


def case_fused(n, rng):
    a = rng.uniform(-4, 4, n).astype(np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = rng.standard_normal(n, dtype=np.float32)
    out = te.nd.aligned_empty(n, np.float32)
    f = cpu.build(_fused, [a.shape] * 3)
    f(a, b, c, out=out)
    _check(out, np.exp(a) * b + c, "exp(a) * b + c", rtol=1e-5, atol=1e-5)
    tmp = np.empty_like(out)

    def numpy_fused():
        np.exp(a, out=tmp)
        np.multiply(tmp, b, out=tmp)
        np.add(tmp, c, out=out)
    cands = {"te": lambda: f(a, b, c, out=out), "numpy": numpy_fused}
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        tout = torch.from_numpy(out)
        cands["torch"] = lambda: torch.addcmul(tc, torch.exp(ta), tb, out=tout)
    return f"exp(a) * b + c, {n >> 20}M", 16.0 * n, "GB/s", cands


def case_row_sum(rows, cols, rng):
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    f = cpu.build(cpu.sum, [x.shape], axis=1)
    out = np.empty(rows, np.float32)
    f(x, out=out)
    _check(out, x.sum(axis=1), "row sum", rtol=1e-4, atol=1e-3)
    cands = {"te": lambda: f(x, out=out), "numpy": lambda: np.sum(x, axis=1, out=out)}
    if torch is not None:
        tx, tout = torch.from_numpy(x), torch.from_numpy(out)
        cands["torch"] = lambda: torch.sum(tx, dim=1, out=tout)
    return f"row sum {rows}x{cols}", 4.0 * x.size, "GB/s", cands


def _softmax_numpy(x, out, tmp):
    m = x.max(axis=1, keepdims=True)
    np.subtract(x, m, out=tmp)
    np.exp(tmp, out=tmp)
    np.divide(tmp, tmp.sum(axis=1, keepdims=True), out=out)


def case_softmax(rows, cols, rng):
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    f = cpu.build(cpu.softmax, [x.shape], axis=-1)
    out, tmp = np.empty_like(x), np.empty_like(x)
    f(x, out=out)
    want = np.empty_like(x)
    _softmax_numpy(x, want, tmp)
    _check(out, want, "softmax", rtol=1e-4, atol=1e-7)
    cands = {"te": lambda: f(x, out=out), "numpy": lambda: _softmax_numpy(x, out, tmp)}
    if torch is not None:
        tx, tout = torch.from_numpy(x), torch.from_numpy(out)
        cands["torch"] = lambda: torch.softmax(tx, dim=1, out=tout)
    return f"softmax rows {rows}x{cols}", 8.0 * x.size, "GB/s", cands


def cases(small, rng):
    """(kind, a function that prepares the case) for each case."""
    n = 1 << (20 if small else 24)
    mm = [(256, 256, 256), (250, 270, 230)] if small else [(1024, 1024, 1024),
                                                          (1000, 1100, 900)]
    rows = (1024, 1024) if small else (4096, 4096)
    yield "matmul", lambda: case_matmul(*mm[0], rng)
    yield "matmul", lambda: case_matmul(*mm[1], rng)
    yield "conv2d", lambda: case_conv2d(rng)
    yield "add", lambda: case_add(n, rng)
    yield "fused", lambda: case_fused(n, rng)
    yield "sum", lambda: case_row_sum(*rows, rng)
    yield "softmax", lambda: case_softmax(rows[0], 1024 if not small else 256, rng)


def run(threads, rounds, small, only):
    te.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    print(f"\n== {threads} thread{'s' if threads > 1 else ''} (load average "
          f"{os.getloadavg()[0]:.2f}) ==")
    header = (f"{'case':<32}{'impl':<7}{'median ms':>11}{'rate':>9}{'unit':>8}"
              f"{'te/np':>8}{'te/torch':>9}")
    print(header)
    print("-" * len(header))
    for kind, make in cases(small, rng):
        if only and kind not in only:
            continue
        t0 = time.perf_counter()
        label, work, unit, cands = make()
        build_s = time.perf_counter() - t0
        res = measure(cands, rounds, settle_s=SETTLE_S)
        for k, (name, sec) in enumerate(res.items()):
            vs_np = f"{res['numpy'] / res['te']:8.2f}" if name == "te" else ""
            vs_torch = f"{res['torch'] / res['te']:9.2f}" if name == "te" and "torch" in res \
                else ""
            print(f"{label if k == 0 else '':<32}{name:<7}{sec * 1e3:>11.3f}"
                  f"{work / sec / 1e9:>9.1f}{unit:>8}{vs_np}{vs_torch}")
        print(f"{'':<32}(te build + check {build_s:.1f} s)")
    sys.stdout.flush()


def call_overhead(rounds):
    """Per-call cost of a built function on three small numpy arrays, next to numpy's add."""
    import timeit
    A = te.placeholder((4,), name="A")
    B = te.placeholder((4,), name="B")
    C = te.compute((4,), lambda i: A[i] + B[i], name="C")
    f = te.build(te.create_schedule(C.op), [A, B, C])
    a, b, c = np.ones(4, "float32"), np.ones(4, "float32"), np.empty(4, "float32")
    number = 20000
    ours = sorted(timeit.repeat(lambda: f(a, b, c), number=number, repeat=rounds))
    ref = sorted(timeit.repeat(lambda: np.add(a, b, out=c), number=number, repeat=rounds))
    print(f"call overhead (3 arrays of 4 floats): te {ours[len(ours) // 2] / number * 1e6:.2f} us"
          f" per call; numpy np.add(a, b, out=c) {ref[len(ref) // 2] / number * 1e6:.2f} us")


_BUILD_GEMM = """
import sys, time
sys.path.insert(0, {root!r})
import te
M = K = N = 1024
bn = 32
k = te.reduce_axis((0, K), "k")
A = te.placeholder((M, K), name="A")
B = te.placeholder((K, N), name="B")
packedB = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * packedB[n // bn, k, n % bn], axis=k),
               name="C")
s = te.create_schedule(C.op)
CC = s.cache_write(C, "global")
mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
s[CC].compute_at(s[C], no)
mc, nc = s[CC].op.axis
(kaxis,) = s[CC].op.reduce_axis
ko, ki = s[CC].split(kaxis, factor=4)
s[CC].reorder(ko, mc, ki, nc)
s[CC].vectorize(nc)
s[CC].unroll(ki)
x, _, z = s[packedB].op.axis
s[packedB].vectorize(z)
s[packedB].parallel(x)
s[C].parallel(mo)
t0 = time.perf_counter()
te.build(s, [A, B, C], name="mmult")
print(time.perf_counter() - t0)
"""


def compile_times():
    """te.build of the GEMM tutorial's final schedule in new processes: cold, then cached."""
    import tempfile
    code = _BUILD_GEMM.format(root=ROOT)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TW_CACHE_DIR=cache)
        times = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                 capture_output=True, text=True).stdout
            times.append(float(out.strip().splitlines()[-1]))
    print(f"compile time, GEMM tutorial final schedule, new process: cold {times[0] * 1e3:.0f} ms,"
          f" from the on-disk cache {times[1] * 1e3:.0f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    parser.add_argument("--small", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--only", nargs="+", choices=KINDS, help="run only these cases")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.child:
        print(f"tensorweave nn.ops.cpu vs numpy {np.__version__}"
              + (f" and torch {torch.__version__}" if torch is not None else " (no torch)")
              + f"; {os.cpu_count()} CPUs; medians of {args.rounds} interleaved rounds; "
              "rate = GFLOP/s or GB/s of compulsory traffic; te/np, te/torch = speedup of te")
    for n in args.threads:
        if args.child or threadpool_limits is not None:
            if threadpool_limits is not None:
                with threadpool_limits(limits=n, user_api="blas"):
                    run(n, args.rounds, args.small, args.only)
            else:
                run(n, args.rounds, args.small, args.only)
            continue
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(n))
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--threads", str(n),
               "--rounds", str(args.rounds)] + (["--small"] if args.small else []) \
            + (["--only", *args.only] if args.only else [])
        subprocess.run(cmd, env=env, check=True)
    if not args.child and not args.only:
        call_overhead(args.rounds)
        compile_times()


if __name__ == "__main__":
    main()

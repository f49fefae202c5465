"""int8 GEMM with the VNNI tensor intrinsic next to the same reduction without tensorize, a
float32 GEMM of the same size (nn.ops.cpu's tuned schedule) and numpy's float32 matmul.

``C[i, j] = sum_k int32(A[i, k]) * int32(B[j, k])``, A uint8 (M, K), B int8 (N, K), stored
in TVM's packed layout for int8 dense (``W[j // 16, k // 4, j % 16, k % 4]``: the 4
reduction values of each of 16 output lanes adjacent, one 64-byte vector per ``vpdpbusd``).
The plain int8 schedules (the best of them is reported) keep register tiles of int32
accumulators as the float32 GEMM does, one on the packed layout and one on B transposed
(K, N), whose rows are contiguous vectors. Results are checked exactly against numpy's int32
product. Prints medians over interleaved rounds, GOPS (2 * M * N * K operations per call),
the ratios, and the CPU.

    python benchmarks/tensorize_vnni.py [--size 1024] [--rounds 7] [--threads 1]

One thread by default: on a shared machine a parallel loop waits for its slowest thread, and
the comparison is of the instructions, not of the thread pool (numpy's BLAS uses its own
threads either way).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from bench_util import cpu_name, measure

import te
from te.topi.x86 import tensor_intrin

ROWS = 4            # output rows per register tile (unrolled)


def int8_vnni(M, N, K):
    """The packed-layout int8 GEMM, its inner 16 x 4 block tensorized with vpdpbusd."""
    A = te.placeholder((M, K), dtype="uint8", name="A")
    W = te.placeholder((N // 16, K // 4, 16, 4), dtype="int8", name="W")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(
        A[i, k].astype("int32") * W[j // 16, k // 4, j % 16, k % 4].astype("int32"), axis=k),
        name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=ROWS)
    jo, ji = s[C].split(j, factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].unroll(ii)
    s[C].tensorize(ji, tensor_intrin.dot_16x1x16_uint8_int8_int32())
    s[C].parallel(io)
    return te.build(s, [A, W, C], name="int8_vnni")


def int8_plain_packed(M, N, K):
    """The same packed layout, no tensorize: 16 int32 lanes vectorized, k by 4 unrolled."""
    A = te.placeholder((M, K), dtype="uint8", name="A")
    W = te.placeholder((N // 16, K // 4, 16, 4), dtype="int8", name="W")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(
        A[i, k].astype("int32") * W[j // 16, k // 4, j % 16, k % 4].astype("int32"), axis=k),
        name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=ROWS)
    jo, ji = s[C].split(j, factor=16)
    s[C].reorder(io, jo, ii, ji)
    s[C].vectorize(ji)
    s[CL].compute_at(s[C], jo)
    ci, cj = s[CL].op.axis
    (ck,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(ck, factor=4)
    s[CL].reorder(ko, ki, ci, cj)
    s[CL].vectorize(cj)
    s[CL].unroll(ci)
    s[CL].unroll(ki)
    s[C].parallel(io)
    return te.build(s, [A, W, C], name="int8_plain_packed")


def int8_plain_transposed(M, N, K):
    """B stored transposed (K, N): each k step is a contiguous int8 row of 32 output lanes
    widened to int32, times a broadcast of A[i, k], into register tiles."""
    A = te.placeholder((M, K), dtype="uint8", name="A")
    Bt = te.placeholder((K, N), dtype="int8", name="Bt")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(
        A[i, k].astype("int32") * Bt[k, j].astype("int32"), axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=ROWS)
    jo, ji = s[C].split(j, factor=32)
    s[C].reorder(io, jo, ii, ji)
    s[C].vectorize(ji)
    s[CL].compute_at(s[C], jo)
    ci, cj = s[CL].op.axis
    (ck,) = s[CL].op.reduce_axis
    s[CL].reorder(ck, ci, cj)
    s[CL].vectorize(cj)
    s[CL].unroll(ci)
    s[C].parallel(io)
    return te.build(s, [A, Bt, C], name="int8_plain_transposed")


def float32_gemm(M, N, K):
    """nn.ops.cpu's tuned float32 matmul (register tiles, packed panels, parallel)."""
    from nn.ops.cpu_matmul import matmul, schedule_matmul
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = matmul(A, B)
    s = schedule_matmul(C)
    return te.build(s, [A, B, C], name="f32_gemm")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=1024, help="M = N = K (a multiple of 32)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    if args.threads:
        te.set_num_threads(args.threads)
    M = N = K = args.size
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (M, K)).astype("uint8")
    b = rng.integers(-128, 128, (N, K)).astype("int8")
    packed = b.reshape(N // 16, 16, K // 4, 4).transpose(0, 2, 1, 3).copy()
    bt = b.T.copy()
    ref = a.astype("int32") @ b.astype("int32").T
    fa, fb = a.astype("float32") / 256, b.astype("float32").T.copy() / 128
    c = {name: np.empty((M, N), "int32") for name in ("vnni", "packed", "transposed")}
    cf, cn = np.empty((M, N), "float32"), np.empty((M, N), "float32")

    f_vnni = int8_vnni(M, N, K)
    f_packed = int8_plain_packed(M, N, K)
    f_trans = int8_plain_transposed(M, N, K)
    f_f32 = float32_gemm(M, N, K)
    cands = {
        "int8 tensorize (vpdpbusd)": lambda: f_vnni(a, packed, c["vnni"]),
        "int8 plain, packed layout": lambda: f_packed(a, packed, c["packed"]),
        "int8 plain, B transposed": lambda: f_trans(a, bt, c["transposed"]),
        "float32 tensorweave": lambda: f_f32(fa, fb, cf),
        "float32 numpy": lambda: np.matmul(fa, fb, out=cn),
    }
    for fn in cands.values():
        fn()
    for name, out in c.items():
        if not np.array_equal(out, ref):
            raise SystemExit(f"int8 GEMM ({name}) differs from numpy's int32 product by up to "
                             f"{np.abs(out.astype('int64') - ref).max()}")
    np.testing.assert_allclose(cf, fa @ fb, rtol=1e-3, atol=1e-3)
    times = measure(cands, args.rounds, budget_s=0.2)
    ops = 2.0 * M * N * K
    print(f"CPU: {cpu_name(llvm=True)}, {os.cpu_count()} cores, {te.get_num_threads()} threads; "
          f"M = N = K = {M}; medians of {args.rounds} interleaved rounds")
    for name, t in times.items():
        unit = "GOPS" if name.startswith("int8") else "GFLOP/s"
        print(f"  {name:30s} {t * 1e3:8.2f} ms  {ops / t / 1e9:8.1f} {unit}")
    vnni = times["int8 tensorize (vpdpbusd)"]
    plain = min(times["int8 plain, packed layout"], times["int8 plain, B transposed"])
    print(f"tensorized int8 / best plain int8: {plain / vnni:.2f}x faster")
    print(f"tensorized int8 GOPS / tensorweave float32 GFLOP/s: "
          f"{times['float32 tensorweave'] / vnni:.2f}")
    print(f"tensorized int8 GOPS / numpy float32 GFLOP/s: {times['float32 numpy'] / vnni:.2f}")
    print("all int8 results equal numpy's int32 product exactly")


if __name__ == "__main__":
    main()

"""GPU test programs: each case returns (schedule, args, inputs, outputs, reference).

The simulator tests run every case on numba's CUDA simulator and compare with numpy; the PTX
check compiles every case's kernels for sm_90. ``scale`` grows the problems for a real GPU.
"""
import numpy as np

import te

RNG = np.random.default_rng(0)


def _rand(*shape, dtype="float32"):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def bind(s, T, outer, inner):
    s[T].bind(outer, te.thread_axis("blockIdx.x"))
    s[T].bind(inner, te.thread_axis("threadIdx.x"))


def vector_add(scale=1):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    bind(s, C, bx, tx)
    size = 100 * scale
    return s, [A, B, C], [_rand(size), _rand(size)], [np.empty(size, "float32")], \
        lambda a, b: a + b


def fused_elementwise_2d(scale=1):
    m, n = 13 * scale, 17
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: te.exp(A[i, j]) * 2 + te.sigmoid(A[i, j]), name="B")
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    bx, tx = s[B].split(f, factor=32)
    bind(s, B, bx, tx)
    return s, [A, B], [_rand(m, n)], [np.empty((m, n), "float32")], \
        lambda a: np.exp(a) * 2 + 1 / (1 + np.exp(-a))


def int_and_half(scale=1):
    n = 70 * scale
    A = te.placeholder((n,), name="A", dtype="int32")
    H = te.placeholder((n,), name="H", dtype="float16")
    C = te.compute((n,), lambda i: te.floordiv(A[i], 3) + te.floormod(A[i], 5)
                   + te.truncdiv(A[i], 4), name="C")
    D = te.compute((n,), lambda i: H[i] * 2 + 1, name="D")
    s = te.create_schedule([C.op, D.op])
    for T in (C, D):
        bx, tx = s[T].split(T.op.axis[0], factor=32)
        bind(s, T, bx, tx)
    a = RNG.integers(-50, 50, n).astype("int32")
    h = _rand(n, dtype="float16")

    def ref(a, h):
        trunc = (np.abs(a) // 4) * np.sign(a)
        return [a // 3 + a % 5 + trunc.astype("int32"),
                (h.astype("float32") * 2 + 1).astype("float16")]
    return s, [A, H, C, D], [a, h], [np.empty(n, "int32"), np.empty(n, "float16")], ref


def row_sum_cross_thread(scale=1):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=4)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    rows, cols = 6 * scale, 37 * scale
    return s, [A, B], [_rand(rows, cols)], [np.empty(rows, "float32")], lambda a: a.sum(1)


def max_reduce_per_thread(scale=1):
    n, m = 9 * scale, 23
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=4)
    bind(s, B, bx, tx)
    return s, [A, B], [_rand(n, m)], [np.empty(n, "float32")], lambda a: a.max(1)


def gemm_shared_local(scale=1, M=64, K=48, N=64, tile=16, step=8, reg=2):
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AS = s.cache_read(A, "shared", [C])
    BS = s.cache_read(B, "shared", [C])
    AL = s.cache_read(AS, "local", [C])
    BL = s.cache_read(BS, "local", [C])
    CL = s.cache_write(C, "local")
    block = tile * reg
    by, yi = s[C].split(C.op.axis[0], factor=block)
    bx, xi = s[C].split(C.op.axis[1], factor=block)
    ty, yi = s[C].split(yi, nparts=tile)
    tx, xi = s[C].split(xi, nparts=tile)
    s[C].reorder(by, bx, ty, tx, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], tx)
    yo, xo = s[CL].op.axis
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=step)
    s[CL].reorder(ko, ki, yo, xo)
    s[CL].unroll(ki)
    s[CL].unroll(yo)
    s[CL].unroll(xo)
    s[AS].compute_at(s[CL], ko)
    s[BS].compute_at(s[CL], ko)
    s[AL].compute_at(s[CL], ki)
    s[BL].compute_at(s[CL], ki)
    for load in (AS, BS):
        fused = s[load].fuse(*s[load].op.axis)
        tyz, fused = s[load].split(fused, nparts=tile)
        txz, fused = s[load].split(fused, nparts=tile)
        s[load].bind(tyz, te.thread_axis("threadIdx.y"))
        s[load].bind(txz, te.thread_axis("threadIdx.x"))
    return s, [A, B, C], [_rand(M, K), _rand(K, N)], [np.empty((M, N), "float32")], \
        lambda a, b: a @ b


def gemm_vthread(scale=1, M=32, K=16, N=32, num_thread=4, vthread=2, per_thread=2, step=4):
    """GEMM with virtual threads: each thread's outputs are strided by vthread blocks."""
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AS = s.cache_read(A, "shared", [C])
    BS = s.cache_read(B, "shared", [C])
    AL = s.cache_read(AS, "local", [C])
    BL = s.cache_read(BS, "local", [C])
    CL = s.cache_write(C, "local")
    block = vthread * num_thread * per_thread
    by, yi = s[C].split(C.op.axis[0], factor=block)
    bx, xi = s[C].split(C.op.axis[1], factor=block)
    tyz, yi = s[C].split(yi, nparts=vthread)
    txz, xi = s[C].split(xi, nparts=vthread)
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(by, bx, tyz, txz, ty, tx, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tyz, te.thread_axis((0, vthread), "vthread", name="vy"))
    s[C].bind(txz, te.thread_axis((0, vthread), "vthread", name="vx"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], tx)
    yo, xo = s[CL].op.axis
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=step)
    s[CL].reorder(ko, ki, yo, xo)
    for ax in (ki, yo, xo):
        s[CL].unroll(ax)
    s[AS].compute_at(s[CL], ko)
    s[BS].compute_at(s[CL], ko)
    s[AL].compute_at(s[CL], ki)
    s[BL].compute_at(s[CL], ki)
    for load in (AS, BS):
        fused = s[load].fuse(*s[load].op.axis)
        tyz, fused = s[load].split(fused, nparts=num_thread)
        txz, fused = s[load].split(fused, nparts=num_thread)
        s[load].bind(tyz, te.thread_axis("threadIdx.y"))
        s[load].bind(txz, te.thread_axis("threadIdx.x"))
    return s, [A, B, C], [_rand(M, K), _rand(K, N)], [np.empty((M, N), "float32")], \
        lambda a, b: a @ b


def conv2d_hwcn(scale=1, batch=8, in_channel=4, out_channel=8, in_size=3, kernel=3, pad=1,
                stride=1, tile=2, num_thread=4, step=4, vthread=2):
    """TVM's 'How to optimize convolution on GPU' schedule (HWCN layout)."""
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    out_size = (in_size - kernel + 2 * pad) // stride + 1
    Apad = te.compute(
        (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
        lambda yy, xx, cc, nn: te.tir.if_then_else(
            te.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
            A[yy - pad, xx - pad, cc, nn], te.tir.const(0.0, "float32")),
        name="Apad")
    rc = te.reduce_axis((0, in_channel), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    B = te.compute(
        (out_size, out_size, out_channel, batch),
        lambda yy, xx, ff, nn: te.sum(
            Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff],
            axis=[ry, rx, rc]),
        name="B")
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    WL = s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")
    block_factor = tile * num_thread
    block_x = te.thread_axis("blockIdx.x")
    block_y = te.thread_axis("blockIdx.y")
    block_z = te.thread_axis("blockIdx.z")
    thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
    thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
    thread_xz = te.thread_axis((0, vthread), "vthread", name="vx")
    thread_yz = te.thread_axis((0, vthread), "vthread", name="vy")
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=block_factor)
    bx, ni = s[B].split(ni, factor=block_factor)
    tyz, fi = s[B].split(fi, nparts=vthread)
    txz, ni = s[B].split(ni, nparts=vthread)
    ty, fi = s[B].split(fi, nparts=num_thread)
    tx, ni = s[B].split(ni, nparts=num_thread)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(bz, block_z)
    s[B].bind(by, block_y)
    s[B].bind(bx, block_x)
    s[B].bind(tyz, thread_yz)
    s[B].bind(txz, thread_xz)
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)
    s[BL].compute_at(s[B], tx)
    yi, xi, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=step)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    s[AA].compute_at(s[BL], rx)
    s[WW].compute_at(s[BL], rx)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)
    yi, xi, ci, ni = s[AA].op.axis
    ty, ci = s[AA].split(ci, nparts=num_thread)
    tx, ni = s[AA].split(ni, nparts=num_thread)
    _, ni = s[AA].split(ni, factor=4)
    s[AA].reorder(ty, tx, yi, xi, ci, ni)
    s[AA].bind(ty, thread_y)
    s[AA].bind(tx, thread_x)
    s[AA].vectorize(ni)
    yi, xi, ci, fi = s[WW].op.axis
    ty, ci = s[WW].split(ci, nparts=num_thread)
    tx, fi = s[WW].split(fi, nparts=num_thread)
    _, fi = s[WW].split(fi, factor=4)
    s[WW].reorder(ty, tx, yi, xi, ci, fi)
    s[WW].bind(ty, thread_y)
    s[WW].bind(tx, thread_x)
    s[WW].vectorize(fi)

    def ref(a, w):
        ap = np.pad(a, ((pad, pad), (pad, pad), (0, 0), (0, 0)))
        out = np.zeros((out_size, out_size, out_channel, batch), "float32")
        for y in range(kernel):
            for x in range(kernel):
                win = ap[y:y + out_size * stride:stride, x:x + out_size * stride:stride]
                out += np.einsum("hwcn,cf->hwfn", win, w[y, x])
        return out
    return s, [A, W, B], [_rand(in_size, in_size, in_channel, batch),
                          _rand(kernel, kernel, in_channel, out_channel)], \
        [np.empty((out_size, out_size, out_channel, batch), "float32")], ref


CASES = [vector_add, fused_elementwise_2d, int_and_half, row_sum_cross_thread,
         max_reduce_per_thread, gemm_shared_local, gemm_vthread, conv2d_hwcn]

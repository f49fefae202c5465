"""GPU test programs: each case returns (schedule, args, inputs, outputs, reference).

The simulator tests run every case on numba's CUDA simulator and compare with numpy; the PTX
check compiles every case's kernels for sm_90. ``scale`` grows the problems for a real GPU.
"""
import numpy as np

import te
from nn.ops import conv, cpu_matmul, gpu
from te.target import Target
from te.testing import conv2d_nchw_python

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


def argmax_cross_thread(scale=1, rows=5, cols=45):
    """A tuple reducer (argmax: index and value) across the threads of a block, as in TVM:
    one accumulator and one shared row per output, combined together. Ties go to the smaller
    index (compared in the combiner, as TOPI's argmax does: the combine order across threads
    is a tree, not k's order)."""
    def combine(x, y):
        keep = te.any(x[1] > y[1], te.all(x[1] == y[1], x[0] < y[0]))
        return te.select(keep, x[0], y[0]), te.select(keep, x[1], y[1])

    argmax = te.comm_reducer(combine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)),
                             name="argmax")
    val = te.placeholder((rows, cols * scale), name="val")
    k = te.reduce_axis((0, cols * scale), "k")
    T0, T1 = te.compute((rows,), lambda i: argmax((k.var, val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(k, factor=16)
    s[T0].bind(ki, te.thread_axis("threadIdx.x"))
    s[T0].bind(s[T0].op.axis[0], te.thread_axis("blockIdx.x"))
    v = _rand(rows, cols * scale)
    v[1, 3] = v[1, 40] = v[1].max() + 1                 # a tie: the first index wins
    return s, [val, T0, T1], [v], [np.empty(rows, "int32"), np.empty(rows, "float32")], \
        lambda a: [a.argmax(1).astype("int32"), a.max(1)]


def sum_across_blocks(scale=1, rows=2, cols=301):
    """A long reduction to few outputs in two kernels (nn.ops.gpu.reduce_across_blocks): three
    blocks share each row (partial sums through global memory), then a cross-thread combine."""
    A = te.placeholder((rows, cols * scale), name="A")
    k = te.reduce_axis((0, cols * scale), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    gpu.reduce_across_blocks(s, B, parts=3, num_thread=8, combine_threads=2)
    return s, [A, B], [_rand(rows, cols * scale)], [np.empty(rows, "float32")], \
        lambda a: (a * a).sum(1)


def auto_long_sums(scale=1, rows=4, cols=2500):
    """schedule_auto's reductions on a real GPU (on the simulator: one thread per output):
    the sum of all 10000 elements is shared by blocks (two kernels), the row sums by threads."""
    A = te.placeholder((rows, cols * scale), name="A")
    k1, k2 = te.reduce_axis((0, rows), "k1"), te.reduce_axis((0, cols * scale), "k2")
    T = te.compute((1,), lambda i: te.sum(A[k1, k2], axis=[k1, k2]), name="T")
    k = te.reduce_axis((0, cols * scale), "k")
    R = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="R")
    s = gpu.schedule_auto([T, R])
    return s, [A, T, R], [_rand(rows, cols * scale)], \
        [np.empty(1, "float32"), np.empty(rows, "float32")], \
        lambda a: [a.sum(keepdims=True).reshape(1), a.sum(1)]


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
    """GEMM staged through shared memory and registers, without virtual threads."""
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = gpu.schedule_matmul(C, num_thread=tile, vthread=1, per_thread=reg, step=step)
    return s, [A, B, C], [_rand(M, K), _rand(K, N)], [np.empty((M, N), "float32")], \
        lambda a, b: a @ b


def gemm_vthread(scale=1, M=32, K=16, N=32, num_thread=4, vthread=2, per_thread=2, step=4,
                 **knobs):
    """GEMM with nn.ops.gpu.schedule_matmul: shared/local staging and virtual threads."""
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = gpu.schedule_matmul(C, num_thread=num_thread, vthread=vthread, per_thread=per_thread,
                            step=step, **knobs)
    return s, [A, B, C], [_rand(M, K), _rand(K, N)], [np.empty((M, N), "float32")], \
        lambda a, b: a @ b


def gemm_double_buffer(scale=1, M=16, K=22, N=24, num_thread=2, vthread=2, per_thread=2, step=4,
                       **knobs):
    """GEMM whose shared tiles are double-buffered (the next k step staged through registers,
    one barrier per step) and whose kernel asks for two blocks per SM; a partial last k step
    (whole output tiles: NVVM vectorizes the shared loads only where no guard splits them)."""
    return gemm_vthread(scale, M * scale, K, N * scale, num_thread, vthread, per_thread, step,
                        double_buffer=True, min_blocks=2, **knobs)


def gemm_wide_tiles(scale=1, M=12, K=11, N=24, num_thread=(2, 4), vthread=(1, 2),
                    per_thread=(2, 1), step=4):
    """GEMM with non-square blocks (4 x 8 outputs here: rows and columns tiled apart),
    double-buffered, a partial last k step."""
    return gemm_vthread(scale, M * scale, K, N * scale, num_thread, vthread, per_thread, step,
                        double_buffer=True)


def nn_dense_padded(scale=1, M=13, K=21, N=11):
    """nn's dense (x @ w^T + b) declared for the GPU and scheduled by schedule_auto: operands
    zero-padded to whole tiles, which are the shared stages; the bias added on the way out."""
    x = te.placeholder((M * scale, K), name="x")
    w = te.placeholder((N, K), name="w")
    b = te.placeholder((N,), name="b")
    with Target("cuda"):
        C = cpu_matmul.dense(x, w, b)
    s = gpu.schedule_auto([C])
    return s, [x, w, b, C], [_rand(M * scale, K), _rand(N, K), _rand(N)], \
        [np.empty((M * scale, N), "float32")], lambda x, w, b: x @ w.T + b


def nn_conv2d_implicit_gemm(scale=1, N=2, C=3, H=7, W=6, F=5):
    """nn's convolution declared for the GPU (an implicit GEMM: the input's patches gathered
    into the shared tiles) with a bias, strided, padded and dilated, by schedule_auto."""
    x = te.placeholder((N * scale, C, H, W), name="x")
    w = te.placeholder((F, C, 3, 2), name="w")
    b = te.placeholder((F,), name="b")
    geometry = dict(stride=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2))
    with Target("cuda"):
        y = conv.conv2d(x, w, b, **geometry)
    s = gpu.schedule_auto([y])

    def ref(x, w, b):
        return conv2d_nchw_python(x, w, geometry["stride"], geometry["padding"],
                                  geometry["dilation"], bias=b)
    return s, [x, w, b, y], [_rand(N * scale, C, H, W), _rand(F, C, 3, 2), _rand(F)], \
        [np.empty(tuple(d.value for d in y.shape), "float32")], ref


def softmax_rows(scale=1, rows=5, cols=40):
    """Softmax from default schedules: a max reduce, an exp-sum reduce and an elementwise."""
    A = te.placeholder((rows * scale, cols), name="A")
    k1 = te.reduce_axis((0, cols), "k1")
    M = te.compute((rows * scale,), lambda i: te.max(A[i, k1], axis=k1), name="M")
    E = te.compute((rows * scale, cols), lambda i, j: te.exp(A[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, cols), "k2")
    S = te.compute((rows * scale,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    P = te.compute((rows * scale, cols), lambda i, j: E[i, j] / S[i], name="P")
    s = _softmax_schedule(M, E, S, P)

    def ref(a):
        e = np.exp(a - a.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    return s, [A, P], [_rand(rows * scale, cols)], [np.empty((rows * scale, cols), "float32")], \
        ref


def default_schedules(scale=1, rows=6, cols=50):
    """nn.ops.gpu.schedule_reduce and schedule_injective on a norm and a broadcast."""
    A = te.placeholder((rows * scale, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    Sq = te.compute((rows * scale, cols), lambda i, j: A[i, j] * A[i, j], name="Sq")
    N = te.compute((rows * scale,), lambda i: te.sum(Sq[i, k], axis=k), name="N")
    s = gpu.schedule_reduce(N, num_thread=16, rows_per_block=4)
    a = _rand(rows * scale, cols)
    return s, [A, N], [a], [np.empty(rows * scale, "float32")], lambda a: (a * a).sum(1)


def default_injective(scale=1, m=7, n=33):
    A = te.placeholder((m * scale, n), name="A")
    b = te.placeholder((n,), name="b")
    T = te.compute((m * scale, n), lambda i, j: A[i, j] + b[j], name="T")
    R = te.compute((m * scale, n), lambda i, j: te.max(T[i, j], 0.0), name="R")
    s = gpu.schedule_injective(R, num_thread=64)
    return s, [A, b, R], [_rand(m * scale, n), _rand(n)], [np.empty((m * scale, n), "float32")], \
        lambda a, b: np.maximum(a + b, 0)


def _softmax_schedule(M, E, S, P):
    s = te.create_schedule(P.op)
    s[E].compute_inline()
    for T in (M, S):
        gpu.reduce_across_threads(s, T, num_thread=8, rows_per_block=2)
    fused = s[P].fuse(*s[P].op.axis)
    bx, tx = s[P].split(fused, factor=64)
    s[P].bind(bx, te.thread_axis("blockIdx.x"))
    s[P].bind(tx, te.thread_axis("threadIdx.x"))
    return s


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
    s = gpu.schedule_conv2d_hwcn(B, tile=tile, num_thread=num_thread, vthread=vthread,
                                 step=step)

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


def tvm_intrinsics(scale=1):
    """te.isnan / isinf / fmod on floats, te.popcount / clz on signed and narrow integers."""
    n = te.var("n")
    X = te.placeholder((n,), name="X")
    I = te.placeholder((n,), name="I", dtype="int32")
    H = te.placeholder((n,), name="H", dtype="int8")
    big = te.const(1e9, "float32")
    Y = te.compute((n,), lambda i: te.if_then_else(
        te.isnan(X[i]), -big, te.if_then_else(te.isinf(X[i]), big, te.fmod(X[i], 0.7))),
        name="Y")
    Z = te.compute((n,), lambda i: te.popcount(I[i]) + te.clz(I[i]) * 100, name="Z")
    W = te.compute((n,), lambda i: te.popcount(H[i]) + te.clz(H[i]) * 10, name="W")
    s = te.create_schedule([Y.op, Z.op, W.op])
    for T in (Y, Z, W):
        bind(s, T, *s[T].split(T.op.axis[0], factor=8))
    size = 11 * scale
    x = _rand(size) * 5
    x[:3] = [np.nan, np.inf, -np.inf]
    ints = RNG.integers(-2**31, 2**31, size).astype("int32")
    ints[:3] = [0, -1, 1]
    small = RNG.integers(-128, 128, size).astype("int8")
    small[:3] = [0, -1, 1]

    def ref(x, ints, small):
        def popc(v, w):
            return np.array([bin(int(e) & (2**w - 1)).count("1") for e in v])

        def clz(v, w):
            return np.array([w - (int(e) & (2**w - 1)).bit_length() for e in v])
        with np.errstate(invalid="ignore"):             # fmod of inf and NaN
            y = np.where(np.isnan(x), -1e9,
                         np.where(np.isinf(x), 1e9, np.fmod(x, np.float32(0.7))))
        return [y.astype("float32"), (popc(ints, 32) + clz(ints, 32) * 100).astype("int32"),
                (popc(small, 8) + clz(small, 8) * 10).astype("int8")]
    outs = [np.empty(size, "float32"), np.empty(size, "int32"), np.empty(size, "int8")]
    return s, [X, I, H, Y, Z, W], [x, ints, small], outs, ref


def scan_cumsum(scale=1, num_thread=4):
    """TVM's "Scan and Recurrent Kernel" tutorial: a cumulative sum over rows, the time loop
    on the host around one kernel launch per step."""
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n), name="s_state")
    s_init = te.compute((1, n), lambda _, i: X[0, i], name="s_init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i], name="s_update")
    s_scan = te.scan(s_init, s_update, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    for T in (s_init, s_update):
        xo, xi = s[T].split(T.op.axis[1], factor=num_thread)
        bind(s, T, xo, xi)
    rows, cols = 5 * scale, 7 * scale
    return s, [X, s_scan], [_rand(rows, cols)], [np.empty((rows, cols), "float32")], \
        lambda x: np.cumsum(x, axis=0)


def reduce_in_a_wider_block(scale=1, rows=2, cols=4, width=8):
    """A cross-thread reduction computed at the block of a consumer that has more threads
    along x (8 > 4) and threads along y that the reduction does not use: every thread reaches
    every barrier, and only the y == 0 threads combine the partial sums."""
    rows *= scale
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    S = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="S")
    O = te.compute((rows, 2, width), lambda i, y, j: S[i] * (y + 1) + j, name="O")
    s = te.create_schedule(O.op)
    s[O].bind(O.op.axis[0], te.thread_axis("blockIdx.x"))
    s[O].bind(O.op.axis[1], te.thread_axis("threadIdx.y"))
    s[O].bind(O.op.axis[2], te.thread_axis("threadIdx.x"))
    s[S].compute_at(s[O], O.op.axis[0])
    s[S].bind(s[S].op.reduce_axis[0], te.thread_axis("threadIdx.x"))

    def ref(a):
        return a.sum(1)[:, None, None] * np.arange(1, 3)[None, :, None] + np.arange(width)
    return s, [A, O], [_rand(rows, cols)], [np.empty((rows, 2, width), "float32")], ref


def reduce_inside_a_thread_loop(scale=1, rows=4, cols=8):
    """Row sums across threadIdx.x, each computed inside the threadIdx.y loop of its consumer:
    one row of slots per y, and every x thread gets the sum (a register of each thread)."""
    rows *= scale
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((rows,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(io, te.thread_axis("blockIdx.x"))
    s[C].bind(ii, te.thread_axis("threadIdx.y"))
    s[B].compute_at(s[C], ii)
    s[B].bind(B.op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    return s, [A, C], [_rand(rows, cols)], [np.empty(rows, "float32")], \
        lambda a: a.sum(1) * 2


def reduce_rows_in_a_taller_block(scale=1, rows=4, cols=8):
    """Row sums over threadIdx.x with the rows on threadIdx.y (4), in a kernel whose consumer
    has 8 threads along y: the 4 extra rows of threads skip the sums but reach the barriers."""
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    S = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="S")
    O = te.compute((2 * scale, 8, cols), lambda b, y, j: S[y % rows] + j, name="O")
    s = te.create_schedule(O.op)
    s[O].bind(O.op.axis[0], te.thread_axis("blockIdx.x"))
    s[O].bind(O.op.axis[1], te.thread_axis("threadIdx.y"))
    s[O].bind(O.op.axis[2], te.thread_axis("threadIdx.x"))
    s[S].compute_at(s[O], O.op.axis[0])
    s[S].bind(S.op.axis[0], te.thread_axis("threadIdx.y"))
    s[S].bind(S.op.reduce_axis[0], te.thread_axis("threadIdx.x"))

    def ref(a):
        sums = a.sum(1)[np.arange(8) % rows]
        return np.broadcast_to(sums[None, :, None] + np.arange(cols), (2 * scale, 8, cols))
    return s, [A, O], [_rand(rows, cols)], [np.empty((2 * scale, 8, cols), "float32")], ref


def cross_thread_data_tail(scale=1, rows=6, cols=16):
    """Rows split by 4 over blocks and threadIdx.y (6 rows: a tail), the reduction over
    threadIdx.x bound without rfactor: the partial sums of the tail rows are not read."""
    A = te.placeholder((rows * scale, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows * scale,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=8)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    s[B].bind(ii, te.thread_axis("threadIdx.y"))
    s[B].bind(io, te.thread_axis("blockIdx.x"))
    return s, [A, B], [_rand(rows * scale, cols)], [np.empty(rows * scale, "float32")], \
        lambda a: a.sum(1)


def ir_builder_extern(scale=1, threads=16):
    """A te.extern stage written with te.tir.ir_builder: threads bound with scope_attr, a
    shared scratch buffer, a barrier, a guarded neighbour sum, then a compute that reads it."""
    n = te.var("n")
    A = te.placeholder((n,), name="A")

    def neighbours(x, y):
        ib = te.tir.ir_builder.create()
        bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
        ib.scope_attr(bx, "thread_extent", (n + threads - 1) // threads)
        ib.scope_attr(tx, "thread_extent", threads)
        xp, yp = ib.buffer_ptr(x), ib.buffer_ptr(y)
        tile = ib.allocate("float32", (threads,), name="tile", scope="shared")
        i = bx * threads + tx
        with ib.if_scope(i < n):
            tile[tx] = xp[i]
        ib.emit(te.tir.call_intrin("int32", "tvm_storage_sync", "shared"))
        with ib.if_scope(i < n):
            with ib.if_scope(te.all(tx > 0, i > 0)):
                yp[i] = tile[tx] + tile[tx - 1]
            with ib.else_scope():
                yp[i] = xp[i] + te.if_then_else(i > 0, xp[i - 1], 0.0)
        return ib.get()

    C = te.extern((n,), [A], lambda ins, outs: neighbours(ins[0], outs[0]), name="C")
    D = te.compute((n,), lambda i: C[i] * 2.0, name="D")
    s = te.create_schedule(D.op)
    xo, xi = s[D].split(D.op.axis[0], factor=threads)
    bind(s, D, xo, xi)
    size = 37 * scale

    def ref(a):
        out = a.copy()
        out[1:] += a[:-1]
        return 2 * out
    return s, [A, D], [_rand(size)], [np.empty(size, "float32")], ref


CASES = [vector_add, fused_elementwise_2d, int_and_half, row_sum_cross_thread,
         argmax_cross_thread, nn_dense_padded,
         sum_across_blocks, auto_long_sums, max_reduce_per_thread, gemm_shared_local,
         gemm_vthread, gemm_double_buffer, gemm_wide_tiles,
         nn_conv2d_implicit_gemm, softmax_rows,
         default_schedules, default_injective, conv2d_hwcn, tvm_intrinsics, scan_cumsum,
         ir_builder_extern, reduce_in_a_wider_block, cross_thread_data_tail,
         reduce_inside_a_thread_loop, reduce_rows_in_a_taller_block]

"""nn.ops.cpu: every operator against numpy, at sizes that do not divide the schedules' tiles.

A few small cases also go through ``te.testing.verify_schedule``, which runs the reference
interpreter as well, so that a wrong result tells a lowering bug from a codegen bug.
"""
import numpy as np
import pytest

import te
from nn.ops import cpu, host
from nn.ops.cpu_conv import default_tile as conv_tile
from nn.ops.cpu_matmul import default_tile as matmul_tile
from te.testing import conv2d_nchw_python, verify_schedule

RNG = np.random.default_rng(0)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype("float32")


def check(got, want, rtol=1e-5, atol=1e-5):
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- elementwise

BINARY = [(cpu.add, np.add), (cpu.subtract, np.subtract), (cpu.multiply, np.multiply),
          (cpu.divide, np.divide), (cpu.maximum, np.maximum), (cpu.minimum, np.minimum)]


@pytest.mark.parametrize("op,ref", BINARY, ids=[f.__name__ for f, _ in BINARY])
@pytest.mark.parametrize("shapes", [[(37, 45), (45,)], [(3, 1, 19), (5, 1)], [(1,), (33,)]])
def test_binary_broadcasts_like_numpy(op, ref, shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1], low=0.5, high=2.0)
    check(cpu.build(op, shapes)(a, b), ref(a, b))


def test_power():
    a, b = rand(9, 40, low=0.1, high=2.0), rand(40, low=-2.0, high=2.0)
    check(cpu.build(cpu.power, [a.shape, b.shape])(a, b), np.power(a, b), rtol=1e-5)


UNARY = [(cpu.relu, lambda x: np.maximum(x, 0)), (cpu.exp, np.exp), (cpu.negative, np.negative),
         (cpu.log, np.log), (cpu.sqrt, np.sqrt), (cpu.tanh, np.tanh), (cpu.abs, np.abs),
         (cpu.sigmoid, lambda x: 1 / (1 + np.exp(-x)))]


@pytest.mark.parametrize("op,ref", UNARY, ids=[f.__name__ for f, _ in UNARY])
def test_unary(op, ref):
    x = rand(7, 131, low=0.1, high=3.0) if op in (cpu.log, cpu.sqrt) else rand(7, 131) * 4
    check(cpu.build(op, [x.shape])(x), ref(x), rtol=2e-6, atol=1e-6)


def test_broadcast_of_a_function_with_scalars_fuses_into_one_stage():
    a, b, c = rand(1000, 33), rand(33), rand(1000, 1)

    def fused(x, y, z):
        return cpu.broadcast(lambda p, q, r: te.exp(p) * q + r * 0.5, x, y, z)
    f = cpu.build(fused, [a.shape, b.shape, c.shape])
    check(f(a, b, c), np.exp(a) * b + c * 0.5)
    # elementwise stages declared one after another are inlined into one loop nest
    A = te.placeholder((1000, 33), name="A")
    out = cpu.relu(cpu.add(cpu.exp(A), 1.0))
    s = cpu.schedule_injective(out)
    assert "allocate" not in str(te.lower(s, [A, out]))


def test_injective_schedule_is_parallel_and_vectorized():
    A = te.placeholder((512, 100), name="A")
    B = te.placeholder((100,), name="B")
    out = cpu.add(A, B)
    text = str(te.lower(cpu.schedule_injective(out), [A, B, out]))
    assert "parallel" in text and "ramp(" in text
    a, b = rand(512, 100), rand(100)
    verify_schedule(cpu.schedule_injective(out), [A, B, out], [a, b],
                    [np.empty((512, 100), "float32")], np.add)


@pytest.mark.parametrize("other", [None, (13,), (13, 1), (4, 1, 1), (1, 4, 13, 1)],
                         ids=["relu", "row", "column", "channel", "mixed"])
def test_last_axis_shorter_than_a_vector_is_fused_and_vectorized(other):
    # 13 columns (a 13x13 feature map): fused with the rows before them into vectors
    shape = (3, 4, 13, 13)
    A = te.placeholder(shape, name="A")
    if other is None:
        out, args, ref = cpu.relu(A), [A], lambda a: np.maximum(a, 0)
    else:
        B = te.placeholder(other, name="B")
        out, args, ref = cpu.add(A, B), [A, B], np.add
    s = cpu.schedule_injective(out)
    assert "ramp(" in str(te.lower(s, args + [out]))
    arrays = [rand(*shape)] + ([] if other is None else [rand(*other)])
    verify_schedule(cpu.schedule_injective(out), args + [out], arrays,
                    [np.empty(shape, "float32")], ref)


def test_short_last_axis_read_with_a_stride_keeps_its_own_loop():
    # x[i, j, 2k]: over a fused index the read's bounds would widen past x, and the access
    # checks would refuse the kernel; the axes stay apart (scalar) and the result is exact
    X = te.placeholder((4, 6, 10), name="X")
    out = te.compute((4, 6, 5), lambda i, j, k: X[i, j, 2 * k] + 1.0, name="strided",
                     tag="elemwise")
    s = cpu.schedule_injective(out)
    assert "ramp(" not in str(te.lower(s, [X, out]))
    x = rand(4, 6, 10)
    verify_schedule(cpu.schedule_injective(out), [X, out], [x],
                    [np.empty((4, 6, 5), "float32")], lambda a: a[:, :, ::2] + 1.0)


def test_a_compare_writing_bools_runs_in_the_lanes_of_its_inputs():
    # bool is one byte in memory: its lanes are those of the float32 inputs (16 with
    # AVX-512), not 512 one-bit lanes (LLVM spent 90 s on such a kernel: fractional max
    # pool's backward compares (2, 3, 5, 6, 6) with (2, 3, 5, 6, 1))
    import re
    from nn.ops.cpu_util import vector_lanes
    A = te.placeholder((2, 3, 5, 6, 6), name="A")
    B = te.placeholder((2, 3, 5, 6, 1), name="B")
    out = te.compute(A.shape, lambda *i: A[i] == B[i[:-1] + (0,)], name="eq", tag="broadcast")
    text = str(te.lower(cpu.schedule_injective(out), [A, B, out]))
    lanes = {int(n) for n in re.findall(r"ramp\([^,]+, 1, (\d+)\)", text)}
    assert lanes == {vector_lanes("float32")}
    assert vector_lanes("bool") == vector_lanes("int8")
    a, b = rand(2, 3, 5, 6, 6), rand(2, 3, 5, 6, 1)
    b[..., 0] = a[..., 2]
    f = te.build(cpu.schedule_injective(out), [A, B, out])
    got = np.empty(A.shape, "bool")
    f(a, b, got)
    np.testing.assert_array_equal(got, a == b)


def test_broadcast_errors():
    with pytest.raises(ValueError, match="do not broadcast"):
        cpu.add(te.placeholder((3, 4)), te.placeholder((5,)))
    with pytest.raises(ValueError, match="at least one tensor"):
        cpu.broadcast(lambda a, b: a + b, 1.0, 2.0)


# ----------------------------------------------------------------------------- reductions

REDUCE = [(cpu.sum, np.sum), (cpu.mean, np.mean), (cpu.max, np.max), (cpu.min, np.min)]


@pytest.mark.parametrize("op,ref", REDUCE, ids=[f.__name__ for f, _ in REDUCE])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(op, ref, axis, keepdims):
    x = rand(5, 33, 70)
    got = cpu.build(op, [x.shape], axis=axis, keepdims=keepdims)(x)
    check(got, ref(x, axis=axis, keepdims=keepdims), rtol=1e-4, atol=1e-5)


def test_reductions_over_short_and_long_rows():
    for shape in [(1000, 3), (3, 5000)]:
        x = rand(*shape)
        check(cpu.build(cpu.sum, [shape], axis=1)(x), x.sum(axis=1), rtol=1e-4, atol=1e-4)
        check(cpu.build(cpu.max, [shape], axis=0)(x), x.max(axis=0))
        check(cpu.build(cpu.softmax, [shape])(x), np_softmax(x, -1), atol=1e-6)


def test_row_sum_of_odd_width_through_the_interpreter():
    X = te.placeholder((9, 75), name="X")
    out = cpu.sum(X, axis=1)
    x = rand(9, 75)
    verify_schedule(cpu.schedule_reduce(out), [X, out], [x], [np.empty(9, "float32")],
                    lambda v: v.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_reduction_errors():
    X = te.placeholder((4, 5), name="X")
    with pytest.raises(ValueError, match="out of range"):
        cpu.sum(X, axis=2)
    with pytest.raises(ValueError, match="repeats"):
        cpu.sum(X, axis=(1, -1))
    with pytest.raises(ValueError, match="not the output of sum"):
        cpu.schedule_reduce(cpu.relu(X))


# ----------------------------------------------------------------------------- softmax

def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax(axis):
    x = rand(3, 37, 70) * 5
    check(cpu.build(cpu.softmax, [x.shape], axis=axis)(x), np_softmax(x, axis), atol=1e-6)


def test_softmax_is_stable_for_large_inputs():
    x = rand(4, 50) * 50 + 1000.0         # exp(x) alone would overflow float32
    got = cpu.build(cpu.softmax, [x.shape])(x)
    assert np.isfinite(got).all()
    check(got, np_softmax(x.astype(np.float64), -1), atol=1e-6)
    check(got.sum(axis=-1), np.ones(4), rtol=1e-5)


# ----------------------------------------------------------------------------- matmul

# (M, N, K): one row, fewer rows than a tile, two row tiles (direct), many (packed); no size
# divides the 8 x 32 tile except the last
MATMUL_SIZES = [(1, 33, 17), (5, 45, 29), (13, 70, 33), (37, 45, 29), (70, 130, 65),
                (64, 64, 32)]


@pytest.mark.parametrize("M,N,K", MATMUL_SIZES)
def test_matmul_and_dense(M, N, K):
    a, b, w, bias = rand(M, K), rand(K, N), rand(N, K), rand(N)
    check(cpu.build(cpu.matmul, [a.shape, b.shape])(a, b), a @ b, rtol=1e-4, atol=1e-4)
    check(cpu.build(cpu.matmul, [a.shape, b.shape, bias.shape])(a, b, bias), a @ b + bias,
          rtol=1e-4, atol=1e-4)
    check(cpu.build(cpu.dense, [a.shape, w.shape, bias.shape])(a, w, bias), a @ w.T + bias,
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N,K", [(5, 45, 29), (37, 45, 29)])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_batch_matmul_with_batch_broadcast(M, N, K, transpose_b):
    a = rand(3, M, K)
    b = rand(1, N, K) if transpose_b else rand(1, K, N)
    f = cpu.build(cpu.batch_matmul, [a.shape, b.shape], transpose_b=transpose_b)
    check(f(a, b), a @ (b.transpose(0, 2, 1) if transpose_b else b), rtol=1e-4, atol=1e-4)
    a1, b3 = rand(1, M, K), rand(2, K, N)
    check(cpu.build(cpu.batch_matmul, [a1.shape, b3.shape])(a1, b3), a1 @ b3, rtol=1e-4,
          atol=1e-4)


def test_matmul_strategies():
    # the tiles are the zen4 family's (shipped records): forced, so that the test holds on any
    # host and whatever user records this machine has (nn.ops.host)
    with host.use("zen4"):
        assert matmul_tile(1000, 1100) == ("packed", (8, 32))
        assert matmul_tile(250, 270)[1] == (5, 32)          # 5 divides 250: no padded rows
        assert matmul_tile(12, 300)[0] == "direct"
        assert matmul_tile(12, 300, transpose_b=True)[0] == "dot"
        assert matmul_tile(64, 300, transpose_b=True)[0] == "packed"


def test_matmul_explicit_tile_through_the_interpreter():
    A = te.placeholder((19, 11), name="A")
    B = te.placeholder((11, 21), name="B")
    C = cpu.matmul(A, B, tile=(4, 16))
    a, b = rand(19, 11), rand(11, 21)
    verify_schedule(cpu.schedule_matmul(C), [A, B, C], [a, b], [np.empty((19, 21), "float32")],
                    lambda x, y: x @ y, rtol=1e-5, atol=1e-5)


def test_packed_matmul_keeps_its_tile_in_vector_registers():
    A = te.placeholder((1000, 900), name="A")
    B = te.placeholder((900, 1100), name="B")
    C = cpu.matmul(A, B)
    text = str(te.lower(cpu.schedule_matmul(C), [A, B, C]))
    # the update of the tile: eight unrolled rows of 32-lane fused multiply-adds, no guard
    assert text.count("matmul.acc[ramp(") >= 16
    assert "min(ramp" not in text.split("for k in range(900):")[1].split("for i0_inner")[0]


def test_matmul_errors():
    with pytest.raises(ValueError, match="inner sizes differ"):
        cpu.matmul(te.placeholder((3, 4)), te.placeholder((5, 6)))
    with pytest.raises(ValueError, match="bias must have shape"):
        cpu.dense(te.placeholder((3, 4)), te.placeholder((6, 4)), te.placeholder((4,)))
    with pytest.raises(ValueError, match="symbolic size"):
        cpu.matmul(te.placeholder((te.var("n"), 4)), te.placeholder((4, 6)))
    with pytest.raises(ValueError, match="not the output of matmul"):
        cpu.schedule_matmul(cpu.relu(te.placeholder((3, 4))))


# ----------------------------------------------------------------------------- conv2d

def _pair(v):
    return (v, v) if isinstance(v, int) else v


# (N, C, H, W, F, K, stride, padding, dilation, groups)
CONV_CASES = [
    (1, 3, 9, 11, 5, 3, 1, 1, 1, 1),                 # odd everything
    (2, 4, 10, 13, 6, 3, 2, (1, 2), 1, 1),           # stride 2, batch, (h, w) padding
    (1, 5, 12, 17, 7, (3, 2), (2, 3), 0, 1, 1),      # rectangular kernel and strides
    (1, 6, 12, 12, 9, 3, 1, 2, 2, 3),                # dilation 2, 3 groups
    (1, 8, 15, 17, 8, 3, 2, 1, 1, 8),                # depthwise, stride 2
    (1, 8, 15, 17, 16, 5, 1, (1, 2, 0, 3), 1, 8),    # depthwise x2 channels, 4-sided pad
    (1, 16, 20, 70, 12, 1, 1, 0, 1, 2),              # 1x1, grouped, wide rows (two tiles)
    (1, 16, 9, 13, 40, 3, 1, 1, 1, 1),               # dense: output channels as vector lanes
    (2, 24, 11, 10, 33, 3, (2, 3), (1, 0, 2, 1), 2, 1),  # the same with strides, dilation, pad
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c[:6])))
def test_conv2d_nchw(case):
    n, c, h, w, f, k, stride, padding, dilation, groups = case
    kh, kw = _pair(k)
    x, wt = rand(n, c, h, w), rand(f, c // groups, kh, kw)
    fn = cpu.build(cpu.conv2d_nchw, [x.shape, wt.shape], stride=stride, padding=padding,
                   dilation=dilation, groups=groups)
    want = conv2d_nchw_python(x, wt, stride, padding, dilation, groups)
    check(fn(x, wt), want, rtol=1e-4, atol=1e-4)


def test_conv2d_explicit_tile_through_the_interpreter():
    D = te.placeholder((1, 3, 7, 9), name="D")
    W = te.placeholder((5, 3, 3, 3), name="W")
    out = cpu.conv2d_nchw(D, W, stride=2, padding=1, tile=(2, 3, 8))
    x, w = rand(1, 3, 7, 9), rand(5, 3, 3, 3)
    verify_schedule(cpu.schedule_conv2d_nchw(out), [D, W, out], [x, w],
                    [np.empty((1, 5, 4, 5), "float32")],
                    lambda a, b: conv2d_nchw_python(a, b, 2, 1),
                    rtol=1e-5, atol=1e-5)


def test_conv2d_tiles():
    with host.use("zen4"):          # the zen4 family's tiles, on any host (as above)
        assert conv_tile(64, 56, 56, 64) == (4, 1, 64)
        assert conv_tile(256, 14, 14, 256) == (8, 2, 16)
        assert conv_tile(512, 7, 7, 512) == (4, 4, 8)
        assert conv_tile(32, 112, 112, 1)[0] == 2             # depthwise
        for width in range(1, 300, 7):
            fo, rows, cols = conv_tile(64, 9, width, 64)
            assert cols in (8, 16, 32, 64) and fo * rows * max(1, cols // 16) <= 16


def test_conv2d_errors():
    D = te.placeholder((1, 6, 8, 8), name="D")
    with pytest.raises(ValueError, match="groups"):
        cpu.conv2d_nchw(D, te.placeholder((4, 6, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="empty"):
        cpu.conv2d_nchw(D, te.placeholder((4, 6, 11, 3)))
    with pytest.raises(ValueError, match="not the output of conv2d"):
        cpu.schedule_conv2d_nchw(cpu.relu(D))


# ----------------------------------------------------------------------------- build

def test_build_caches_and_writes_into_out():
    f = cpu.build(cpu.add, [(4, 50), (50,)])
    assert cpu.build(cpu.add, [(4, 50), (50,)]) is f
    a, b = rand(4, 50), rand(50)
    out = np.empty((4, 50), "float32")
    assert f(a, b, out=out) is out
    check(out, a + b)
    assert "ramp" in f.module.get_source("ir")


def test_elementwise_with_symbolic_sizes():
    n = te.var("n")
    A = te.placeholder((n, 40), name="A")
    B = te.placeholder((40,), name="B")
    out = cpu.multiply(A, B)
    f = te.build(cpu.schedule_injective(out), [A, B, out])
    for rows in (3, 1000):
        a, b = rand(rows, 40), rand(40)
        got = np.empty((rows, 40), "float32")
        f(a, b, got)
        check(got, a * b)


def test_matmul_l2_blocks_are_a_multiple_of_the_cores():
    # the blocks are the parallel loop: an odd count on 2 cores left one core idle at the end
    from nn.ops.cpu_matmul import row_block
    M, K, N = 200, 512, 1024            # packed B (2 MB) over half the L2: blocked
    with host.use("sapphire_rapids"):   # a family whose knobs ask for l2 blocking
        A = te.placeholder((M, K), name="A")
        B = te.placeholder((K, N), name="B")
        C = cpu.matmul(A, B)
        acc = C.op.input_tensors()[0]
        my, bn = acc.op.attrs["tile"]
        block = row_block(acc, my, bn)
        tiles = acc.shape[0].value // my
        assert 0 < block <= tiles
        assert -(-tiles // block) % host.detect().cores == 0
        f = cpu.build(cpu.matmul, [(M, K), (K, N)])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-4, atol=1e-3)

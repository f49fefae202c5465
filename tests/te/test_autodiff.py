"""te.gradient: adjoints against central finite differences (float64) and PyTorch autograd,
and the work of the matmul / conv2d adjoints counted from the lowered loop nest."""
import math

import numpy as np
import pytest
import torch

import te
from schedule.ir import Allocate, BufferStore, For, IfThenElse, LetStmt, SeqStmt

F64 = "float64"


def const_shape(t):
    return tuple(int(d.value) for d in t.shape)


def run_grads(out, inputs, args=(), data=None, seed=0):
    """(input arrays, head, forward(arrays) -> out, gradient arrays) for random data."""
    rng = np.random.default_rng(seed)
    arrays = data if data is not None else [rng.uniform(-1, 1, const_shape(t))
                                           for t in list(inputs) + list(args)]
    fwd = te.build(te.create_schedule(out.op), list(inputs) + list(args) + [out])

    def forward(*values):
        result = np.zeros(const_shape(out), out.dtype)
        fwd(*values, result)
        return result
    head = te.placeholder(out.shape, out.dtype, "head")
    grads = te.gradient(out, list(inputs), head)
    s = te.create_schedule([g.op for g in grads])
    gf = te.build(s, list(inputs) + list(args) + [head] + list(grads))
    h = rng.uniform(-1, 1, const_shape(out))
    results = [np.zeros(const_shape(g), g.dtype) for g in grads]
    gf(*arrays, h, *results)
    return arrays, h, forward, results


def finite_differences(forward, arrays, h, k, eps=1e-6):
    x = arrays[k]
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        saved = x[idx]
        x[idx] = saved + eps
        plus = np.sum(h * forward(*arrays))
        x[idx] = saved - eps
        minus = np.sum(h * forward(*arrays))
        x[idx] = saved
        grad[idx] = (plus - minus) / (2 * eps)
    return grad


def check_fd(out, inputs, args=(), data=None, rtol=1e-5, atol=1e-7):
    arrays, h, forward, grads = run_grads(out, inputs, args, data)
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, finite_differences(forward, arrays, h, k),
                                   rtol=rtol, atol=atol, err_msg=f"input {inputs[k].name}")
    return arrays, h, grads


def check_torch(out, inputs, torch_fn, args=(), data=None):
    arrays, h, _, grads = run_grads(out, inputs, args, data)
    tensors = [torch.tensor(a, requires_grad=k < len(inputs)) for k, a in enumerate(arrays)]
    torch_fn(*tensors).backward(torch.tensor(h))
    for t, g, x in zip(tensors, grads, inputs):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=f"input {x.name}")


# ----------------------------------------------------------------------------- declarations

def matmul(A, B):
    k = te.reduce_axis((0, A.shape[1]), "k")
    return te.compute((A.shape[0], B.shape[1]),
                      lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")


def pad(X, p, value=0.0):
    N, C, H, W = const_shape(X)
    return te.compute((N, C, H + 2 * p, W + 2 * p), lambda n, c, h, w: te.if_then_else(
        te.all(h >= p, h < H + p, w >= p, w < W + p), X[n, c, h - p, w - p],
        te.const(value, X.dtype)), name="pad")


def conv2d(X, W, stride=1, padding=0):
    N, C, H, Wd = const_shape(X)
    F, _, KH, KW = const_shape(W)
    P = pad(X, padding) if padding else X
    OH, OW = (H + 2 * padding - KH) // stride + 1, (Wd + 2 * padding - KW) // stride + 1
    c = te.reduce_axis((0, C), "c")
    ry = te.reduce_axis((0, KH), "ry")
    rx = te.reduce_axis((0, KW), "rx")
    return te.compute((N, F, OH, OW), lambda n, f, y, x: te.sum(
        P[n, c, y * stride + ry, x * stride + rx] * W[f, c, ry, rx], axis=[c, ry, rx]),
        name="conv")


def pool2d(X, kernel, stride, padding, kind):
    N, C, H, W = const_shape(X)
    OH, OW = (H + 2 * padding - kernel) // stride + 1, (W + 2 * padding - kernel) // stride + 1
    P = pad(X, padding, float("-inf") if kind == "max" else 0.0) if padding else X
    ry = te.reduce_axis((0, kernel), "ry")
    rx = te.reduce_axis((0, kernel), "rx")
    if kind == "max":
        return te.compute((N, C, OH, OW), lambda n, c, y, x: te.max(
            P[n, c, y * stride + ry, x * stride + rx], axis=[ry, rx]), name="pool")
    total = te.compute((N, C, OH, OW), lambda n, c, y, x: te.sum(
        P[n, c, y * stride + ry, x * stride + rx], axis=[ry, rx]), name="pool_sum")
    return te.compute(total.shape, lambda *i: total[i] / float(kernel * kernel), name="pool")


# ----------------------------------------------------------------------------- numerics

def test_elementwise_intrinsics():
    A = te.placeholder((3, 4), F64, "A")
    B = te.placeholder((3, 4), F64, "B")
    out = te.compute((3, 4), lambda i, j: te.exp(A[i, j]) * B[i, j] + te.tanh(A[i, j])
                     / (1.0 + B[i, j] * B[i, j]) + te.sigmoid(A[i, j] - B[i, j])
                     + te.log(2.0 + te.sin(A[i, j])) + te.sqrt(1.5 + te.cos(B[i, j]))
                     + te.power(1.5 + A[i, j], B[i, j]) + te.abs(A[i, j] * 3.0)
                     + te.erf(B[i, j]) + te.atan(A[i, j]) + te.log1p(B[i, j] * B[i, j]),
                     name="out")
    check_fd(out, [A, B])


@pytest.mark.parametrize("name", ["exp2", "exp10", "log2", "log10", "rsqrt", "tan", "asin",
                                  "acos", "sinh", "cosh", "floor", "fmod"])
def test_more_intrinsics(name):
    A = te.placeholder((6,), F64, "A")
    B = te.placeholder((6,), F64, "B")
    fn = getattr(te, name)

    def body(i):
        x = 0.3 + 0.5 * A[i] * A[i]              # in (0.3, 0.8): inside every domain
        if name == "fmod":
            return fn(x * 7.0, 1.5 + B[i] * B[i])
        return fn(x) * B[i]
    out = te.compute((6,), body, name="out")
    check_fd(out, [A, B], rtol=1e-5, atol=1e-6)


def test_select_if_then_else_min_max_cast():
    A = te.placeholder((5,), F64, "A")
    A32 = te.placeholder((5,), "float32", "A32")
    out = te.compute((5,), lambda i: te.select(A[i] > 0.0, A[i] * A[i], -A[i])
                     + te.if_then_else(i < 4, A[te.min(i + 1, 4)], 0.0)
                     + te.max(A[i], 0.3) + te.min(A[i], -0.2)
                     + A32[i].astype(F64) * A[i], name="out")
    data = [np.array([-0.9, -0.4, 0.1, 0.6, 0.8]), np.array([1, 2, 3, 4, 5], "float32")]
    check_fd(out, [A], [A32], data=data)


def test_cast_gradient_float32_input():
    A = te.placeholder((4,), "float32", "A")
    out = te.compute((4,), lambda i: A[i].astype(F64) * A[i].astype(F64), name="out")
    arrays, h, _, (g,) = run_grads(out, [A], data=[np.array([1, -2, 3, 0.5], "float32")])
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * arrays[0] * h, rtol=1e-6)


def test_broadcast():
    A = te.placeholder((3, 4), F64, "A")
    b = te.placeholder((4,), F64, "b")
    c = te.placeholder((3, 1), F64, "c")
    out = te.compute((3, 4), lambda i, j: A[i, j] * b[j] + c[i, 0], name="out")
    check_fd(out, [A, b, c])
    check_torch(out, [A, b, c], lambda a, b_, c_: a * b_ + c_)


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_reductions(kind):
    A = te.placeholder((4, 5), F64, "A")
    k = te.reduce_axis((0, 5), "k")
    reducer = getattr(te, kind)
    out = te.compute((4,), lambda i: reducer(A[i, k] * A[i, k] + A[i, k], axis=k), name="out")
    check_fd(out, [A])
    fn = {"sum": lambda a: (a * a + a).sum(1), "max": lambda a: (a * a + a).amax(1),
          "min": lambda a: (a * a + a).amin(1), "prod": lambda a: (a * a + a).prod(1)}[kind]
    check_torch(out, [A], fn)


def test_reduction_over_two_axes_with_where():
    A = te.placeholder((3, 4, 5), F64, "A")
    k = te.reduce_axis((0, 4), "k")
    m = te.reduce_axis((1, 5), "m")
    out = te.compute((3,), lambda i: te.sum(A[i, k, m] * A[i, k, m], axis=[k, m],
                                            where=k + m < 6), name="out")
    check_fd(out, [A])
    out = te.compute((3,), lambda i: te.max(A[i, k, m], axis=[k, m], where=k != m), name="mx")
    check_fd(out, [A])


def test_sum_with_init():
    A = te.placeholder((3, 4), F64, "A")
    k = te.reduce_axis((0, 4), "k")
    out = te.compute((3,), lambda i: te.sum(A[i, k] * A[k % 3, k], axis=k, init=A[i, 0]),
                     name="out")
    check_fd(out, [A])


def test_softmax():
    X = te.placeholder((3, 6), F64, "X")
    k = te.reduce_axis((0, 6), "k")
    mx = te.compute((3,), lambda i: te.max(X[i, k], axis=k), name="mx")
    e = te.compute((3, 6), lambda i, j: te.exp(X[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis((0, 6), "k2")
    total = te.compute((3,), lambda i: te.sum(e[i, k2], axis=k2), name="total")
    out = te.compute((3, 6), lambda i, j: e[i, j] / total[i], name="softmax")
    check_fd(out, [X])
    check_torch(out, [X], lambda x: torch.softmax(x, 1))


def test_matmul():
    A = te.placeholder((4, 6), F64, "A")
    B = te.placeholder((6, 5), F64, "B")
    C = matmul(A, B)
    check_fd(C, [A, B])
    check_torch(C, [A, B], lambda a, b: a @ b)


def test_conv2d_stride2_padding1():
    X = te.placeholder((2, 3, 7, 7), F64, "X")
    W = te.placeholder((4, 3, 3, 3), F64, "W")
    Y = conv2d(X, W, stride=2, padding=1)
    check_torch(Y, [X, W], lambda x, w: torch.nn.functional.conv2d(x, w, stride=2, padding=1))
    X = te.placeholder((1, 2, 5, 5), F64, "X")
    W = te.placeholder((2, 2, 3, 3), F64, "W")
    check_fd(conv2d(X, W, stride=2, padding=1), [X, W])


@pytest.mark.parametrize("kind,kernel,stride,padding", [("max", 2, 2, 0), ("max", 3, 2, 1),
                                                        ("avg", 2, 2, 0), ("avg", 3, 2, 1)])
def test_pooling(kind, kernel, stride, padding):
    X = te.placeholder((2, 2, 6, 6), F64, "X")
    Y = pool2d(X, kernel, stride, padding, kind)
    F = torch.nn.functional
    fn = (lambda x: F.max_pool2d(x, kernel, stride, padding)) if kind == "max" else \
        (lambda x: F.avg_pool2d(x, kernel, stride, padding, count_include_pad=True))
    check_torch(Y, [X], fn)
    check_fd(Y, [X])


def test_multi_stage_pipeline_with_reuse():
    A = te.placeholder((4, 4), F64, "A")
    B = te.placeholder((4,), F64, "B")
    D = te.compute((4, 4), lambda i, j: A[i, j] * B[j], name="D")
    E = te.compute((4, 4), lambda i, j: D[i, j] + te.exp(D[j, i]) * A[i, j], name="E")
    k = te.reduce_axis((0, 4), "k")
    F = te.compute((4,), lambda i: te.sum(E[i, k] * D[k, i], axis=k), name="F")
    G = te.compute((4,), lambda i: F[i] * F[3 - i] + B[i], name="G")
    check_fd(G, [A, B])
    check_torch(G, [A, B], _torch_pipeline)


def _torch_pipeline(a, b):
    d = a * b
    e = d + torch.exp(d.T) * a
    f = (e * d.T).sum(1)
    return f * f.flip(0) + b


def test_floordiv_floormod_and_strided_indexing():
    X = te.placeholder((3, 4), F64, "X")
    R = te.compute((2, 6), lambda i, j: X[(i * 6 + j) // 4, (i * 6 + j) % 4], name="reshape")
    check_fd(R, [X])
    U = te.compute((6, 8), lambda i, j: X[i // 2, j // 2] * X[i % 3, j % 4], name="up")
    check_fd(U, [X])
    S = te.compute((2, 2), lambda i, j: X[2 * i, 3 * j] + X[2 - i, 3 - 3 * j], name="strided")
    check_fd(S, [X])


def test_clamped_indices_under_their_guard_are_solved_exactly():
    # a concatenation and a padding written with clamped (always in-bounds) indices, as
    # nn.ops writes them: the adjoint reads the gradient once per element, not a sum
    X = te.placeholder((3, 4), F64, "X")
    Y = te.placeholder((3, 2), F64, "Y")
    C = te.compute((3, 6), lambda i, k: te.if_then_else(
        k < 4, X[i, te.min(k, 3)], Y[i, te.max(k - 4, 0)]), name="cat")
    P = te.compute((3, 8), lambda i, w: te.select(
        te.all(w >= 1, w < 7), C[i, te.min(te.max(w - 1, 0), 5)], te.const(0.0, F64)),
        name="pad")
    out = te.compute((3, 8), lambda i, w: P[i, w] * P[i, w], name="out")
    check_fd(out, [X, Y])
    head = te.placeholder(out.shape, F64, "head")
    gX, gY = te.gradient(out, [X, Y], head)
    stores, _ = loop_work(te.lower(te.create_schedule([gX.op, gY.op]),
                                   [X, Y, head, gX, gY]).body)
    # elementwise stages only: cat and pad recomputed (18 + 18), then the adjoints of pad,
    # cat, X and Y (18 + 18 + 12 + 6), one store per element; no sum over a clamped axis
    # (pad and its adjoint only where cat's adjoint reads them, columns 1..6 of 8: a stage at
    # the root computes what its readers read, as TVM's bound inference)
    assert stores == 18 + 18 + 18 + 18 + 12 + 6


def test_data_dependent_index_and_constant_index():
    X = te.placeholder((5,), F64, "X")
    I = te.placeholder((7,), "int32", "I")
    T = te.compute((7,), lambda i: X[I[i]] * X[0], name="take")
    data = [np.random.default_rng(1).uniform(-1, 1, 5), np.array([0, 4, 4, 2, 1, 0, 3], "int32")]
    check_fd(T, [X], [I], data=data)


def test_default_head_gives_the_jacobian():
    A = te.placeholder((3,), F64, "A")
    B = te.compute((2,), lambda i: A[i] * A[i + 1], name="B")
    J = te.gradient(B, A)
    assert const_shape(J) == (2, 3)
    f = te.build(te.create_schedule(J.op), [A, J])
    a = np.array([1.0, 2.0, 3.0])
    j = np.zeros((2, 3))
    f(a, j)
    np.testing.assert_allclose(j, [[2.0, 1.0, 0.0], [0.0, 3.0, 2.0]])


def test_head_with_prefix_and_gradient_of_the_output_itself():
    A = te.placeholder((3,), F64, "A")
    B = te.compute((3,), lambda i: A[i] * A[i], name="B")
    H = te.placeholder((2, 3), F64, "H")
    gA, gB = te.gradient(B, [A, B], H)
    assert const_shape(gA) == (2, 3) and const_shape(gB) == (2, 3)
    f = te.build(te.create_schedule([gA.op, gB.op]), [A, H, gA, gB])
    a, h = np.array([1.0, -2.0, 3.0]), np.arange(6.0).reshape(2, 3)
    ga, gb = np.zeros((2, 3)), np.zeros((2, 3))
    f(a, h, ga, gb)
    np.testing.assert_allclose(ga, 2 * a * h)
    np.testing.assert_allclose(gb, h)


def test_several_outputs_in_one_pass():
    A = te.placeholder((3, 4), F64, "A")
    B = te.compute((3, 4), lambda i, j: te.exp(A[i, j]), name="B")
    k = te.reduce_axis((0, 4), "k")
    C = te.compute((3,), lambda i: te.sum(B[i, k] * A[i, k], axis=k), name="C")
    HB = te.placeholder((3, 4), F64, "HB")
    HC = te.placeholder((3,), F64, "HC")
    (gA,) = te.gradient([B, C], [A], [HB, HC])
    f = te.build(te.create_schedule(gA.op), [A, HB, HC, gA])
    a, hb, hc = np.random.rand(3, 4), np.random.rand(3, 4), np.random.rand(3)
    ga = np.zeros((3, 4))
    f(a, hb, hc, ga)
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.exp(ta)
    torch.autograd.backward([tb, (tb * ta).sum(1)], [torch.tensor(hb), torch.tensor(hc)])
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-12)
    # B's adjoint (its head plus what C sends back) is computed once
    lowered = str(te.lower(te.create_schedule(gA.op), [A, HB, HC, gA]))
    assert lowered.count("B_grad = allocate") == 1


def test_symbolic_shapes():
    n = te.var("n")
    A = te.placeholder((n, 3), F64, "A")
    B = te.placeholder((3,), F64, "B")
    k = te.reduce_axis((0, 3), "k")
    C = te.compute((n,), lambda i: te.sum(A[i, k] * B[k], axis=k), name="C")
    H = te.placeholder((n,), F64, "H")
    gA, gB = te.gradient(C, [A, B], H)
    f = te.build(te.create_schedule([gA.op, gB.op]), [A, B, H, gA, gB])
    a, b, h = np.random.rand(5, 3), np.random.rand(3), np.random.rand(5)
    ga, gb = np.zeros((5, 3)), np.zeros(3)
    f(a, b, h, ga, gb)
    np.testing.assert_allclose(ga, np.outer(h, b))
    np.testing.assert_allclose(gb, a.T @ h)


# ----------------------------------------------------------------------------- work

def loop_work(stmt):
    """(innermost store iterations, allocated bytes) of a lowered loop nest; guarded stores
    count as executed."""
    if isinstance(stmt, For):
        inner, mem = loop_work(stmt.body)
        return int(stmt.extent.value) * inner, mem
    if isinstance(stmt, SeqStmt):
        parts = [loop_work(s) for s in stmt.seq]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(stmt, IfThenElse):
        parts = [loop_work(s) for s in (stmt.then_case, stmt.else_case) if s is not None]
        return max(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(stmt, (LetStmt,)):
        return loop_work(stmt.body)
    if isinstance(stmt, Allocate):
        inner, mem = loop_work(stmt.body)
        size = math.prod(int(d.value) for d in stmt.buffer.shape)
        return inner, mem + size * np.dtype(stmt.buffer.dtype).itemsize
    if isinstance(stmt, BufferStore):
        return 1, 0
    return 0, 0


def gradient_work(out, inputs):
    head = te.placeholder(out.shape, out.dtype, "head")
    grads = te.gradient(out, inputs, head)
    s = te.create_schedule([g.op for g in grads])
    return loop_work(te.lower(s, list(inputs) + [head] + list(grads)).body)


def test_matmul_adjoint_is_a_reduction_of_the_right_size():
    M, N, K = 16, 12, 20
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    stores, mem = gradient_work(matmul(A, B), [A, B])
    # dA = H @ B^T and dB = A^T @ H: M*K*N updates each (+ the init stores), nothing dense
    assert 2 * M * N * K <= stores <= 2 * M * N * K + M * K + K * N + M * N
    assert mem <= M * N * 4          # at most the head's copy; no M*N*M*K Jacobian


def test_conv2d_adjoint_is_a_transposed_convolution():
    N, C, H, F, KS, S, P = 2, 4, 16, 8, 3, 2, 1
    X = te.placeholder((N, C, H, H), name="X")
    W = te.placeholder((F, C, KS, KS), name="W")
    Y = conv2d(X, W, stride=S, padding=P)
    OH = const_shape(Y)[2]
    stores, mem = gradient_work(Y, [X, W])
    forward = N * F * OH * OH * C * KS * KS
    taps = math.ceil(KS / S) ** 2                     # kernel taps per input element
    d_input = N * C * (H + 2 * P) ** 2 * F * taps
    d_weight = forward
    assert stores <= 1.1 * (d_input + d_weight) + 2 * N * C * (H + 2 * P) ** 2 + F * C * KS * KS
    # the ideal backward does 2x the forward's multiply-adds; ceil(3/2)^2 = 4 taps where
    # 9/4 reach an input element on average costs 1.78x on d(input), within 2x overall
    assert stores < 2 * (2 * forward)
    assert mem <= 2 * N * C * (H + 2 * P) ** 2 * 4    # the padded input and its adjoint

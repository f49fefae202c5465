"""te.topi operators against numpy (PyTorch where TVM's semantics are PyTorch's: convolutions,
pooling, softmax), each built with the generic and the x86 default schedules; a few with the
cuda schedules on numba's simulator (tests/conftest.py sets NUMBA_ENABLE_CUDASIM=1)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import te
from te import topi

RNG = np.random.default_rng(7)
FAMILIES = ("generic", "x86")


def rand(shape, dtype="float32", low=-1.0, high=1.0):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(int(low), int(high), size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def run(schedule, placeholders, outs, arrays, target="llvm"):
    """Build ``schedule(outs)`` and run it on ``arrays``; returns the output arrays."""
    outs = outs if isinstance(outs, list) else [outs]
    s = schedule(outs)
    f = te.build(s, list(placeholders) + outs, target=target)
    results = [np.empty([int(d) for d in o.shape], dtype=o.dtype) for o in outs]
    f(*arrays, *results)
    return results if len(results) > 1 else results[0]


def check(name, placeholders, out, arrays, expected, rtol=1e-5, atol=1e-6, families=FAMILIES):
    for family in families:
        got = run(getattr(getattr(topi, family), name), placeholders, out, arrays)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol,
                                   err_msg=f"{family}.{name}")


# ----------------------------------------------------------------------------- broadcast

BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
    "power": lambda a, b: np.power(np.abs(a) + 0.5, b),
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("opname", sorted(BINARY))
def test_broadcast_binary_matches_numpy(opname):
    A = te.placeholder((3, 1, 4), name="A")
    B = te.placeholder((2, 1), name="B")
    a, b = rand((3, 1, 4)), rand((2, 1))
    if opname in ("equal", "not_equal", "less_equal", "greater_equal"):
        b[0, 0] = a[1, 0, 2]            # a tie, so that == and <= see one
    if opname == "power":
        lhs = topi.add(topi.abs(A), 0.5)
        C = topi.power(lhs, B)
    else:
        C = getattr(topi, opname)(A, B)
    assert C.op.tag == "broadcast" and [int(d) for d in C.shape] == [3, 2, 4]
    check("schedule_injective", [A, B], C, [a, b], BINARY[opname](a, b), rtol=1e-5)


def test_integer_division_and_remainders_are_tvms():
    A = te.placeholder((4, 5), "int32", name="A")
    B = te.placeholder((5,), "int32", name="B")
    a = rand((4, 5), "int32", -20, 20)
    b = np.array([3, -3, 7, -2, 5], dtype="int32")
    cases = {"divide": np.trunc(a / b), "floor_divide": a // b, "mod": np.fmod(a, b),
             "floor_mod": np.mod(a, b), "trunc_divide": np.trunc(a / b)}
    for opname, expected in cases.items():
        C = getattr(topi, opname)(A, B)
        check("schedule_injective", [A, B], C, [a, b], expected.astype("int32"))


def test_tensor_scalar_operands_are_elementwise():
    A = te.placeholder((6, 16), name="A")
    a = rand((6, 16))
    for C, expected in ((topi.multiply(A, 2.5), a * 2.5), (topi.subtract(1.0, A), 1.0 - a),
                        (topi.maximum(A, 0.0), np.maximum(a, 0.0)),
                        (topi.less(A, 0.25), a < 0.25)):
        assert C.op.tag == "elemwise"
        check("schedule_injective", [A], C, [a], expected)
    n = te.var("n")
    assert isinstance(topi.add(n, 1), te.Expr)      # two scalars: the expression itself


def test_unary_math():
    A = te.placeholder((5, 17), name="A")
    a = rand((5, 17), low=0.1, high=2.0)
    for opname, ref in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt),
                        ("tanh", np.tanh), ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
                        ("negative", np.negative), ("abs", np.abs), ("floor", np.floor)):
        check("schedule_injective", [A], getattr(topi, opname)(A), [a], ref(a), rtol=2e-6)
    check("schedule_injective", [A], topi.clip(A, 0.5, 1.5), [a], np.clip(a, 0.5, 1.5))
    check("schedule_injective", [A], topi.cast(A, "int32"), [a], a.astype("int32"))


# ----------------------------------------------------------------------------- nn

def test_relu_and_leaky_relu():
    A = te.placeholder((4, 33), name="A")
    a = rand((4, 33))
    check("schedule_injective", [A], topi.nn.relu(A), [a], np.maximum(a, 0))
    check("schedule_injective", [A], topi.nn.leaky_relu(A, 0.1), [a], np.where(a > 0, a, 0.1 * a))


def test_pad_matches_numpy():
    A = te.placeholder((2, 3, 4), name="A")
    a = rand((2, 3, 4))
    P = topi.nn.pad(A, (0, 1, 2), (1, 0, 3), pad_value=-5.0)
    expected = np.pad(a, ((0, 1), (1, 0), (2, 3)), constant_values=-5.0)
    check("schedule_injective", [A], P, [a], expected)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap"), ("constant", "constant")])
def test_pad_nd_modes_match_numpy(mode, np_mode):
    from te.topi.nn.pad import pad_nd
    A = te.placeholder((2, 5, 6), name="A")
    a = rand((2, 5, 6))
    P = pad_nd(A, ((2, 1), (3, 2)), mode=mode)
    expected = np.pad(a, ((0, 0), (2, 1), (3, 2)), mode=np_mode)
    check("schedule_injective", [A], P, [a], expected)


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, (1, 2), 1),
                                                     (1, (0, 1, 2, 1), 2)])
def test_conv2d_nchw_matches_torch(stride, padding, dilation):
    X = te.placeholder((2, 3, 10, 11), name="X")
    W = te.placeholder((4, 3, 3, 3), name="W")
    x, w = rand((2, 3, 10, 11)), rand((4, 3, 3, 3))
    out = topi.nn.conv2d_nchw(X, W, stride, padding, dilation)
    pads = padding if isinstance(padding, tuple) else (padding, padding)
    tx = torch.tensor(x)
    if len(pads) == 4:          # (top, left, bottom, right) -> torch's (left, right, top, bottom)
        tx = F.pad(tx, (pads[1], pads[3], pads[0], pads[2]))
        pads = (0, 0)
    ref = F.conv2d(tx, torch.tensor(w), stride=stride, padding=pads, dilation=dilation).numpy()
    assert tuple(int(d) for d in out.shape) == ref.shape
    check("schedule_conv2d_nchw", [X, W], out, [x, w], ref, rtol=1e-4, atol=1e-5)
    fused = topi.nn.relu(topi.add(out, 0.5))        # an elementwise consumer, as in nets
    check("schedule_conv2d_nchw", [X, W], fused, [x, w], np.maximum(ref + 0.5, 0), rtol=1e-4,
          atol=1e-5)


def test_depthwise_conv2d_nchw_matches_torch():
    X = te.placeholder((1, 3, 9, 18), name="X")
    W = te.placeholder((3, 2, 3, 3), name="W")          # channel multiplier 2
    x, w = rand((1, 3, 9, 18)), rand((3, 2, 3, 3))
    out = topi.nn.depthwise_conv2d_nchw(X, W, 1, 1, 1)
    ref = F.conv2d(torch.tensor(x), torch.tensor(w.reshape(6, 1, 3, 3)), padding=1,
                   groups=3).numpy()
    check("schedule_depthwise_conv2d_nchw", [X, W], out, [x, w], ref, rtol=1e-4, atol=1e-5)


def test_dense_and_batch_matmul():
    X = te.placeholder((5, 7), name="X")
    W = te.placeholder((20, 7), name="W")
    b = te.placeholder((20,), name="b")
    x, w, bias = rand((5, 7)), rand((20, 7)), rand((20,))
    check("schedule_dense", [X, W, b], topi.nn.dense(X, W, b), [x, w, bias], x @ w.T + bias,
          rtol=1e-5)
    A = te.placeholder((3, 4, 6), name="A")
    B = te.placeholder((1, 5, 6), name="B")         # batch 1 broadcasts; read as (N, K)
    a, bb = rand((3, 4, 6)), rand((1, 5, 6))
    check("schedule_batch_matmul", [A, B], topi.nn.batch_matmul(A, B), [a, bb],
          a @ np.swapaxes(bb, 1, 2), rtol=1e-5)
    At = te.placeholder((2, 6, 4), name="At")
    Bn = te.placeholder((2, 6, 17), name="Bn")
    at, bn = rand((2, 6, 4)), rand((2, 6, 17))
    out = topi.nn.batch_matmul(At, Bn, transpose_a=True, transpose_b=False)
    check("schedule_batch_matmul", [At, Bn], out, [at, bn], np.swapaxes(at, 1, 2) @ bn,
          rtol=1e-5)
    M = te.placeholder((6, 40), name="M")
    N = te.placeholder((40, 33), name="N")
    m, nn_ = rand((6, 40)), rand((40, 33))
    check("schedule_matmul", [M, N], topi.matmul(M, N), [m, nn_], m @ nn_, rtol=1e-5)


@pytest.mark.parametrize("pool_type,count_include_pad", [("max", True), ("avg", True),
                                                         ("avg", False)])
def test_pool2d_matches_torch(pool_type, count_include_pad):
    X = te.placeholder((2, 3, 11, 20), name="X")
    x = rand((2, 3, 11, 20))
    out = topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), pool_type,
                         count_include_pad=count_include_pad)
    tx = torch.tensor(x)
    if pool_type == "max":
        ref = F.max_pool2d(tx, 3, 2, padding=1)
    else:
        ref = F.avg_pool2d(tx, 3, 2, padding=1, count_include_pad=count_include_pad)
    check("schedule_pool", [X], out, [x], ref.numpy(), rtol=1e-5)


def test_pool2d_ceil_mode_and_dilation_match_torch():
    X = te.placeholder((1, 2, 10, 10), name="X")
    x = rand((1, 2, 10, 10))
    out = topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), "max", ceil_mode=True)
    ref = F.max_pool2d(torch.tensor(x), 3, 2, ceil_mode=True).numpy()
    check("schedule_pool", [X], out, [x], ref)
    out = topi.nn.pool2d(X, (2, 2), (1, 1), (2, 2), (1, 1, 1, 1), "max")
    ref = F.max_pool2d(torch.tensor(x), 2, 1, padding=1, dilation=2).numpy()
    check("schedule_pool", [X], out, [x], ref)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_global_pool(pool_type):
    X = te.placeholder((2, 4, 5, 7), name="X")
    x = rand((2, 4, 5, 7))
    reduce = np.max if pool_type == "max" else np.mean
    check("schedule_adaptive_pool", [X], topi.nn.global_pool(X, pool_type), [x],
          reduce(x, axis=(2, 3), keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_matches_torch(axis):
    X = te.placeholder((3, 5, 33), name="X")
    x = rand((3, 5, 33), low=-4, high=4)
    ref = torch.softmax(torch.tensor(x), dim=axis).numpy()
    check("schedule_softmax", [X], topi.nn.softmax(X, axis), [x], ref, rtol=1e-5)
    ref = torch.log_softmax(torch.tensor(x), dim=axis).numpy()
    check("schedule_softmax", [X], topi.nn.log_softmax(X, axis), [x], ref, rtol=1e-5,
          atol=1e-5)


# ----------------------------------------------------------------------------- transform

def test_reshape_transpose_expand_squeeze():
    A = te.placeholder((2, 3, 4), name="A")
    a = rand((2, 3, 4))
    check("schedule_injective", [A], topi.reshape(A, (4, -1)), [a], a.reshape(4, 6))
    check("schedule_injective", [A], topi.reshape(A, (24,)), [a], a.reshape(24))
    check("schedule_injective", [A], topi.transpose(A), [a], a.transpose())
    check("schedule_injective", [A], topi.transpose(A, (1, 2, 0)), [a], a.transpose(1, 2, 0))
    check("schedule_injective", [A], topi.expand_dims(A, 1, 2), [a], a[:, None, None])
    S = te.placeholder((1, 3, 1), name="S")
    s = rand((1, 3, 1))
    check("schedule_injective", [S], topi.squeeze(S), [s], s.reshape(3))
    check("schedule_injective", [S], topi.broadcast_to(S, (2, 3, 5)), [s],
          np.broadcast_to(s, (2, 3, 5)))


def test_concatenate_and_split():
    A = te.placeholder((2, 3, 4), name="A")
    B = te.placeholder((2, 5, 4), name="B")
    a, b = rand((2, 3, 4)), rand((2, 5, 4))
    check("schedule_injective", [A, B], topi.concatenate((A, B), axis=1), [a, b],
          np.concatenate((a, b), axis=1))
    for spec, axis in ((2, 2), ([1, 3], 1)):
        parts = topi.split(A, spec, axis=axis)
        expected = np.split(a, spec, axis=axis)
        got = run(topi.x86.schedule_injective, [A], parts, [a])
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_take_modes_match_numpy():
    A = te.placeholder((4, 6), name="A")
    I = te.placeholder((2, 3), "int32", name="I")
    a = rand((4, 6))
    idx = np.array([[0, 5, -1], [7, 2, 3]], dtype="int32")
    check("schedule_injective", [A, I], topi.take(A, I, axis=1, mode="clip"), [a, idx],
          np.take(a, idx, axis=1, mode="clip"))
    check("schedule_injective", [A, I], topi.take(A, I, axis=1, mode="wrap"), [a, idx],
          np.take(a, idx, axis=1, mode="wrap"))
    check("schedule_injective", [A, I], topi.take(A, I, mode="clip"), [a, idx],
          np.take(a, idx, mode="clip"))


# ----------------------------------------------------------------------------- reductions

@pytest.mark.parametrize("opname", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions_match_numpy(opname, axis, keepdims):
    A = te.placeholder((3, 4, 37), name="A")
    a = rand((3, 4, 37), low=0.9, high=1.1)
    out = getattr(topi, opname)(A, axis=axis, keepdims=keepdims)
    assert out.op.tag == "comm_reduce"
    ref = getattr(np, opname)(a, axis=axis, keepdims=keepdims)
    check("schedule_reduce", [A], out, [a], ref, rtol=1e-5)


def test_whole_tensor_sum_is_split_into_vector_partials_on_x86():
    A = te.placeholder((1000,), name="A")
    out = topi.sum(A)
    text = str(te.lower(topi.x86.schedule_reduce(out), [A, out]))
    assert "rf" in text and "ramp(" in text           # rfactor, vector partial sums
    a = rand((1000,))
    check("schedule_reduce", [A], out, [a], a.sum(dtype="float64"), rtol=1e-5)


def test_column_sum_adds_whole_vectors_on_x86():
    A = te.placeholder((50, 64), name="A")
    out = topi.sum(A, axis=0)
    text = str(te.lower(topi.x86.schedule_reduce(out), [A, out]))
    assert "parallel(" in text and "A[ramp(" in text        # contiguous vector loads of A
    a = rand((50, 64))
    check("schedule_reduce", [A], out, [a], a.sum(axis=0), rtol=1e-5)


def test_argmax_argmin_all_any():
    A = te.placeholder((4, 9), name="A")
    a = rand((4, 9))
    a[1, 3] = a[1, 7] = 5.0                        # a tie: the first index wins
    check("schedule_reduce", [A], topi.argmax(A, axis=1), [a], np.argmax(a, axis=1))
    check("schedule_reduce", [A], topi.argmin(A, axis=0), [a], np.argmin(a, axis=0))
    check("schedule_reduce", [A], topi.argmax(A), [a], np.argmax(a))
    B = te.placeholder((3, 4), "int32", name="B")
    b = np.array([[1, 2, 0, 1], [1, 1, 1, 1], [0, 0, 0, 0]], dtype="int32")
    check("schedule_reduce", [B], topi.all(B, axis=1), [b], np.all(b, axis=1))
    check("schedule_reduce", [B], topi.any(B, axis=1), [b], np.any(b, axis=1))


# ----------------------------------------------------------------------------- schedules

def test_x86_injective_schedule_is_parallel_and_vectorized():
    A = te.placeholder((64, 48), name="A")
    B = te.placeholder((48,), name="B")
    C = topi.exp(topi.add(A, B))
    text = str(te.lower(topi.x86.schedule_injective(C), [A, B, C]))
    assert "parallel(" in text and "ramp(" in text and "T_add" not in text   # inlined


def test_generic_schedule_fuses_the_output_axes():
    A = te.placeholder((8, 6), name="A")
    C = topi.add(A, 1.0)
    s = topi.generic.schedule_injective(C)
    assert len(s[C].leaf_iter_vars) == 1


CUDA_CASES = ("add", "scalar", "sum_rows", "sum_all", "softmax", "conv2d", "pool")


@pytest.mark.parametrize("case", CUDA_CASES)
def test_cuda_schedules_on_the_simulator(case):
    from codegen_cuda import simulator
    assert simulator(), "tests/conftest.py runs CUDA kernels on numba's simulator"
    if case == "add":
        A, B = te.placeholder((5, 70), name="A"), te.placeholder((70,), name="B")
        out, ins = topi.add(A, B), [rand((5, 70)), rand((70,))]
        sched, ref = topi.cuda.schedule_injective, ins[0] + ins[1]
        args = [A, B]
    elif case == "scalar":                      # a 0-d output gets one thread
        A = te.placeholder((), name="A")
        out, ins = topi.multiply(A, 3.0), [rand(())]
        sched, ref, args = topi.cuda.schedule_injective, ins[0] * 3.0, [A]
    elif case in ("sum_rows", "sum_all"):
        A = te.placeholder((6, 100), name="A")
        out = topi.sum(A, axis=1 if case == "sum_rows" else None)
        ins = [rand((6, 100))]
        sched, ref, args = topi.cuda.schedule_reduce, ins[0].sum(axis=1 if case == "sum_rows"
                                                                 else None), [A]
    elif case == "softmax":
        A = te.placeholder((4, 40), name="A")
        out, ins = topi.nn.softmax(A), [rand((4, 40))]
        sched, args = topi.cuda.schedule_softmax, [A]
        ref = torch.softmax(torch.tensor(ins[0]), -1).numpy()
    elif case == "conv2d":
        X, W = te.placeholder((1, 2, 6, 6), name="X"), te.placeholder((3, 2, 3, 3), name="W")
        out, ins = topi.nn.conv2d_nchw(X, W, 1, 1, 1), [rand((1, 2, 6, 6)), rand((3, 2, 3, 3))]
        sched, args = topi.cuda.schedule_conv2d_nchw, [X, W]
        ref = F.conv2d(torch.tensor(ins[0]), torch.tensor(ins[1]), padding=1).numpy()
    else:
        X = te.placeholder((1, 2, 6, 6), name="X")
        out, ins = topi.nn.pool2d(X, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "avg"), \
            [rand((1, 2, 6, 6))]
        sched, args = topi.cuda.schedule_pool, [X]
        ref = F.avg_pool2d(torch.tensor(ins[0]), 2).numpy()
    got = run(sched, args, out, ins, target="cuda")
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


PTX_PROGRAM = r"""
import os
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
import te
from te import topi
from codegen_cuda import compile_ptx
A, B = te.placeholder((64, 100), name="A"), te.placeholder((100,), name="B")
X, W = te.placeholder((1, 4, 12, 12), name="X"), te.placeholder((8, 4, 3, 3), name="W")
cases = {
    "add": (topi.cuda.schedule_injective, topi.add(A, B), [A, B]),
    "sum_rows": (topi.cuda.schedule_reduce, topi.sum(A, axis=1), [A]),
    "sum_all": (topi.cuda.schedule_reduce, topi.sum(A), [A]),
    "softmax": (topi.cuda.schedule_softmax, topi.nn.softmax(A), [A]),
    "conv2d": (topi.cuda.schedule_conv2d_nchw, topi.nn.conv2d_nchw(X, W, 1, 1, 1), [X, W]),
    "pool": (topi.cuda.schedule_pool, topi.nn.pool2d(X, (2, 2), (2, 2), (1, 1),
                                                     (0, 0, 0, 0), "max"), [X]),
    "dense": (topi.cuda.schedule_dense, topi.nn.dense(A, te.placeholder((16, 100), name="D")),
              None),
}
for name, (sched, out, ins) in cases.items():
    ins = ins if ins is not None else list(out.op.input_tensors())
    ptx = compile_ptx(te.build(sched(out), ins + [out], target="cuda"), cc=(9, 0))
    assert ".entry" in ptx, name
    print(name, "PTX ok")
"""


def test_cuda_schedules_compile_to_ptx():
    """The cuda schedules' kernels compile for sm_90 (numba without the simulator)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", PTX_PROGRAM], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("PTX ok") == 7, proc.stdout

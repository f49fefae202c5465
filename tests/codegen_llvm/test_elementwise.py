"""Elementwise programs in every dtype and intrinsic: numpy = interpreter = compiled."""
import math

import numpy as np
import pytest

import te
from te.testing import verify_schedule

N = 37
UNARY = {
    "exp": np.exp, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "abs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "round": np.round, "sin": np.sin, "cos": np.cos,
    "erf": np.vectorize(math.erf),
}


def _schedule(B, vectorize):
    s = te.create_schedule(B.op)
    if vectorize:
        xo, xi = s[B].split(B.op.axis[0], factor=8)
        s[B].vectorize(xi)
    return s


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_unary_intrinsics(name, dtype, vectorize):
    A = te.placeholder((N,), name="A", dtype=dtype)
    B = te.compute((N,), lambda i: getattr(te, name)(A[i]), name="B")
    s = _schedule(B, vectorize)
    a = np.random.default_rng(1).uniform(0.1, 2.5, N).astype(dtype)
    a[:4] = [0.5, 1.5, 2.5, -0.0 if name not in ("log", "log2", "sqrt", "rsqrt") else 0.25]
    verify_schedule(s, [A, B], [a], [np.empty(N, dtype)],
                    lambda a: UNARY[name](a).astype(dtype), rtol=2e-6 if dtype == "float32"
                    else 1e-12, atol=1e-7)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_arithmetic(dtype):
    A = te.placeholder((N,), name="A", dtype=dtype)
    B = te.placeholder((N,), name="B", dtype=dtype)
    C = te.compute((N,), lambda i: (A[i] + B[i]) * 3 - te.max(A[i], B[i])
                   + te.floordiv(A[i], 3) + te.floormod(B[i], 5), name="C")
    s = _schedule(C, True)
    rng = np.random.default_rng(2)
    lo = 0 if dtype.startswith("u") else -20
    a = rng.integers(lo, 20, N).astype(dtype)
    b = rng.integers(lo, 20, N).astype(dtype)

    def ref(a, b):
        with np.errstate(over="ignore"):
            return ((a + b) * dtype_t(3) - np.maximum(a, b) + a // dtype_t(3)
                    + b % dtype_t(5)).astype(dtype)
    dtype_t = np.dtype(dtype).type
    verify_schedule(s, [A, B, C], [a, b], [np.empty(N, dtype)], ref)


def test_truncdiv_truncmod_negative():
    A = te.placeholder((N,), name="A", dtype="int32")
    C = te.compute((N,), lambda i: te.truncdiv(A[i], 4) * 100 + te.truncmod(A[i], 4), name="C")
    s = te.create_schedule(C.op)
    a = np.arange(-18, -18 + N, dtype="int32")
    verify_schedule(s, [A, C], [a], [np.empty(N, "int32")],
                    lambda a: (np.trunc(a / 4).astype("int32") * 100 + np.fmod(a, 4)))


def test_float16_is_stored_as_half_and_computed_in_float32():
    A = te.placeholder((N,), name="A", dtype="float16")
    B = te.compute((N,), lambda i: A[i] * 3 + 1, name="B")
    s = _schedule(B, True)
    a = np.linspace(-2, 2, N).astype("float16")
    mod = verify_schedule(s, [A, B], [a], [np.empty(N, "float16")],
                          lambda a: (a.astype("float32") * 3 + 1).astype("float16"))
    assert "half" in mod.get_source("ll")


@pytest.mark.parametrize("vectorize", [False, True])
def test_float64_to_float16(vectorize):
    """A double -> half conversion must not call __truncdfhf2 (absent from the JIT: it
    crashed); it rounds through float32."""
    A = te.placeholder((N,), name="A", dtype="float64")
    B = te.compute((N,), lambda i: A[i].astype("float16"), name="B")
    a = np.linspace(-3, 7, N)
    verify_schedule(_schedule(B, vectorize), [A, B], [a], [np.empty(N, "float16")],
                    lambda a: a.astype("float16"))


def test_bool_and_casts():
    A = te.placeholder((N,), name="A", dtype="float32")
    M = te.compute((N,), lambda i: te.all(A[i] > 0, A[i] < 0.5), name="M")
    C = te.compute((N,), lambda i: M[i].astype("int32") * 10 + A[i].astype("int32"), name="C")
    s = te.create_schedule(C.op)
    a = np.linspace(-3, 3, N).astype("float32")
    verify_schedule(s, [A, M, C], [a], [np.empty(N, bool), np.empty(N, "int32")],
                    lambda a: [(a > 0) & (a < 0.5),
                               ((a > 0) & (a < 0.5)).astype("int32") * 10 + a.astype("int32")])


def test_if_then_else_does_not_read_out_of_bounds():
    n = 16
    A = te.placeholder((n,), name="A")
    P = te.compute((n + 4,), lambda i: te.if_then_else(te.all(i >= 2, i < n + 2), A[i - 2], 0.0),
                   name="P")
    s = te.create_schedule(P.op)
    a = np.random.rand(n).astype("float32")
    verify_schedule(s, [A, P], [a], [np.empty(n + 4, "float32")], lambda a: np.pad(a, 2))


def test_multi_output_compute():
    A = te.placeholder((N,), name="A")
    S, D = te.compute((N,), lambda i: (A[i] + 1, A[i] * 2), name="SD")
    s = te.create_schedule(S.op)
    a = np.random.rand(N).astype("float32")
    verify_schedule(s, [A, S, D], [a], [np.empty(N, "float32"), np.empty(N, "float32")],
                    lambda a: [a + 1, a * 2])


def test_power_and_mixed_dtypes():
    A = te.placeholder((N,), name="A", dtype="float64")
    B = te.placeholder((N,), name="B", dtype="int32")
    C = te.compute((N,), lambda i: te.power(A[i], 2.0) + B[i], name="C")
    assert C.dtype == "float64"
    s = te.create_schedule(C.op)
    a = np.random.rand(N)
    b = np.arange(N, dtype="int32")
    verify_schedule(s, [A, B, C], [a, b], [np.empty(N)], lambda a, b: a ** 2 + b)


def test_dlpack_and_array_interface_arguments_are_not_copied():
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] + 1, name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    a = np.random.rand(N).astype("float32")
    out = te.nd.array(np.zeros(N, "float32"))
    f(te.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a + 1)

    class Holder:                      # only DLPack
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kw):
            return self.arr.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()
    b = np.zeros(N, "float32")
    f(Holder(a), Holder(b))
    np.testing.assert_allclose(b, a + 1)


@pytest.mark.parametrize("lanes", [16, 32])
def test_vector_math_in_wide_vectors(lanes):
    """Wide vectorized loops call the vector math library chunk by chunk (or scalarize)."""
    n = 3 * lanes + 5
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]) + te.tanh(A[i]) * te.erf(A[i])
                   + te.sigmoid(A[i]), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=lanes)
    s[B].vectorize(xi)
    a = np.random.default_rng(3).uniform(-3, 3, n).astype("float32")
    erf = np.vectorize(math.erf)
    verify_schedule(s, [A, B], [a], [np.empty(n, "float32")],
                    lambda a: (np.exp(a) + np.tanh(a) * erf(a) + 1 / (1 + np.exp(-a)))
                    .astype("float32"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "malloc"])
def test_function_named_like_a_library_function(name):
    """A built function called ``exp`` must not replace libm's exp in its own module."""
    A = te.placeholder((7,), name="A", dtype="float64")
    B = te.compute((7,), lambda i: te.log(te.exp(A[i]) + 1.0) * te.tanh(A[i]), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].vectorize(xi)
    f = te.build(s, [A, B], name=name)
    a = np.linspace(0.1, 2, 7)
    b = np.empty(7)
    f(a, b)
    np.testing.assert_allclose(b, np.log(np.exp(a) + 1) * np.tanh(a), rtol=1e-12)
    assert f.entry_name == name


@pytest.mark.parametrize("parallel", [False, True])
def test_nontemporal_pragma_streams_aligned_outputs_only(parallel):
    n = 16 * 37 + 5                 # a partial vector at the end stays an ordinary store
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    if parallel:
        s[B].parallel(xo)
    s[B].pragma(xo, "nontemporal")
    f = te.build(s, [A, B])
    assert "vmovntps" in f.get_source("asm") or "movntps" in f.get_source("asm")
    a = np.arange(n, dtype="float32")
    aligned = te.nd.aligned_empty(n, "float32")
    assert aligned.ctypes.data % 64 == 0
    raw = te.nd.aligned_empty(n + 1, "float32")
    unaligned = raw[1:]             # 4 bytes past a 64-byte boundary: the plain loop runs
    for out in (aligned, unaligned):
        out[...] = -7
        f(a, out)
        np.testing.assert_array_equal(out, a * 2 + 1)


def test_inline_vector_exp_is_accurate_over_the_whole_range():
    """float32 vectors take the inline exp (Cody-Waite reduction + polynomial): within a few
    ulp of exp in float64, and inf, 0, denormals and NaN where numpy gives them."""
    n = 4096
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]), name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = te.build(s, [A, B])
    assert "_ZGV" not in f.get_source("ll")            # no libmvec call
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, -87.33, -103.5]
    x = np.concatenate([np.linspace(-110, 95, n - len(special)), special]).astype("float32")
    out = np.empty(n, "float32")
    f(x, out)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype("float64")).astype("float32")
    finite = np.isfinite(ref)
    ulp = np.abs(out.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulp[finite].max() <= 4
    np.testing.assert_array_equal(out[~finite], ref[~finite])

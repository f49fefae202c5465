"""TVM names that the classic tutorials use: math/bit intrinsics, float shapes, normalize."""
import numpy as np
import pytest

import te
from schedule.interp import run as interpret

SPECIAL = np.array([0.5, -1.5, 2.5, -2.5, np.nan, np.inf, -np.inf, 0.0, 3.7, -0.0, 1e-30,
                    7.25, -7.25, 100.0, np.nan, 2.0, -3.0], "float32")
INTS = np.array([0, 1, -1, 7, 255, 1024, 2**30, -2**31, 2**31 - 1, -7, 12345, 3, 5, 9, 17,
                 -100, 64], "int32")


def _compile(fn, dtype, vectorize):
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    s = te.create_schedule(B.op)
    if vectorize:
        _, inner = s[B].split(B.op.axis[0], factor=8)
        s[B].vectorize(inner)
    return te.build(s, [A, B]), te.lower(s, [A, B]), B.dtype


FLOAT_CASES = [
    ("isnan", te.isnan, np.isnan),
    ("isinf", te.isinf, np.isinf),
    ("isfinite", te.isfinite, np.isfinite),
    ("fmod", lambda x: te.fmod(x, te.const(0.7, "float32")), lambda a: np.fmod(a, np.float32(0.7))),
    ("fmod_neg_divisor", lambda x: te.fmod(x, -2.0), lambda a: np.fmod(a, np.float32(-2))),
]
INT_CASES = [
    ("popcount", te.popcount,
     lambda a: np.array([bin(int(v) & 0xFFFFFFFF).count("1") for v in a], "int32")),
    ("clz", te.clz,
     lambda a: np.array([32 - (int(v) & 0xFFFFFFFF).bit_length() for v in a], "int32")),
    ("fmod_int", lambda x: te.fmod(x, 7), lambda a: np.fmod(a, 7)),
    ("isnan_int", te.isnan, np.isnan),
    ("isfinite_int", te.isfinite, np.isfinite),
]


@pytest.mark.parametrize("vectorize", [False, True], ids=["scalar", "vector"])
@pytest.mark.parametrize("case", FLOAT_CASES + INT_CASES, ids=lambda c: c[0])
def test_intrinsic_matches_numpy_compiled_and_interpreted(case, vectorize):
    name, fn, ref = case
    data = INTS if case in INT_CASES else SPECIAL
    f, lowered, out_dtype = _compile(fn, str(data.dtype), vectorize)
    with np.errstate(invalid="ignore"):
        expected = ref(data)
    out = np.zeros(data.shape, out_dtype)
    f(data, out)
    np.testing.assert_array_equal(out, expected.astype(out_dtype))
    out_interp = np.zeros(data.shape, out_dtype)
    interpret(lowered, data, out_interp)
    np.testing.assert_array_equal(out_interp, expected.astype(out_dtype))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64"])
def test_bit_counts_use_the_width_of_the_dtype(dtype):
    width = np.dtype(dtype).itemsize * 8
    data = np.array([0, 1, 3, -1 if dtype[0] == "i" else 2**width - 1, 2**(width - 2)]
                    ).astype(dtype)
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: te.popcount(A[i]) * 100 + te.clz(A[i]), name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    out = np.zeros(data.shape, dtype)
    f(data, out)
    bits = [int(v) & (2**width - 1) for v in data]
    expected = [bin(v).count("1") * 100 + width - v.bit_length() for v in bits]
    np.testing.assert_array_equal(out, np.array(expected).astype(dtype))


def test_intrinsics_are_reachable_as_te_tir_names():
    assert te.tir.isnan is te.isnan and te.tir.popcount is te.popcount


def test_integral_float_shape_as_in_tvm_tutorials():
    N, K, bn = 64, 16, 32
    B = te.placeholder((K, N), name="B")
    packed = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    assert [int(e.value) for e in packed.shape] == [2, 16, 32]
    b = np.random.rand(K, N).astype("float32")
    out = np.zeros((2, K, bn), "float32")
    te.build(te.create_schedule(packed.op), [B, packed])(b, out)
    np.testing.assert_array_equal(out, b.reshape(K, 2, bn).transpose(1, 0, 2))


def test_normalize_is_a_chainable_no_op():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    before = str(te.lower(s, [A, B]))
    assert s.normalize() is s
    assert str(te.lower(s, [A, B])) == before


def test_extern_tutorial_spellings():
    """tvm.tir.call_packed, an extern function writing ``y[:] = ...``, Device.exist."""
    te.register_func("test.names.double", lambda x, y: y.__setitem__(slice(None),
                                                                     x.numpy() * 2),
                     override=True)
    A = te.placeholder((5,), name="A")
    B = te.extern((5,), [A], lambda ins, outs: te.tir.call_packed("test.names.double", ins[0],
                                                                  outs[0]), name="B")
    a = np.arange(5, dtype="float32")
    b = te.nd.empty((5,))
    te.build(te.create_schedule(B.op), [A, B])(te.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a * 2)
    assert te.cpu(0).exist

"""Tensor-level arithmetic (TVM's operator overloads on te.Tensor, backed by te.topi), TVM's
conversions of constant nodes and the te.tir expression builders."""
import numpy as np
import pytest

import te
from te import topi


def test_operator_types_and_tags_as_tvm():
    # TVM's tests/python/te/test_te_tensor_overload.py::test_operator_type_and_tags
    k, n = 1, te.var("n")
    A = te.placeholder((), name="A")
    B = te.placeholder((10, 5), name="B")
    B2 = B[0, 0]
    assert isinstance(k + n, te.Expr) and isinstance(n + n, te.Expr)
    for e in (k + A, A + k, n + A, A + n, A + A, k + B, B + k, n + B, B + n, A + B, B + A,
              B + B, B2 + A, A + B2, B2 + B, B + B2):
        assert isinstance(e, te.Tensor)
    for e in (k + B, B + k, n + B, B + n, B2 + B, B + B2):
        assert e.op.tag == topi.tag.ELEMWISE
    for e in (A + B, B + A, B + B):
        assert e.op.tag == topi.tag.BROADCAST
    for e in (k + B2, B2 + k, n + B2, B2 + n, B2 + B2):
        assert isinstance(e, te.Expr)


def test_combination_builds_and_matches_numpy():
    # TVM's test_combination: D = k + A - B * C + x
    x = te.var("x")
    A, B, C = (te.placeholder((5, 10), name=name) for name in "ABC")
    D = 3 + A - B * C + x
    s = te.create_schedule(D.op)
    f = te.build(s, [x, A, B, C, D])
    a, b, c = (np.random.rand(5, 10).astype("float32") for _ in range(3))
    d = np.empty((5, 10), dtype="float32")
    f(2, a, b, c, d)
    np.testing.assert_allclose(d, 3 + a - b * c + 2, rtol=1e-6)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_broadcast_operators_match_numpy(op):
    A = te.placeholder((5, 64, 1), name="A")
    B = te.placeholder((2, 5, 1, 16), name="B")
    C = {"add": A + B, "sub": A - B, "mul": A * B, "div": A / B}[op]
    assert C.op.tag == "broadcast"
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[-1], factor=8)        # s[C] schedules it like any compute
    s[C].vectorize(xi)
    f = te.build(s, [A, B, C])
    a = np.random.rand(5, 64, 1).astype("float32")
    b = np.random.rand(2, 5, 1, 16).astype("float32") + 0.5
    c = np.empty((2, 5, 64, 16), dtype="float32")
    f(a, b, c)
    ref = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]
    np.testing.assert_allclose(c, ref, rtol=1e-6)


def test_tensor_scalar_with_size_variables():
    # TVM's verify_tensor_scalar_bop: symbolic shapes and a scalar variable
    shape = (2, 3, 32)
    sh = [te.size_var(f"n{i}") for i in range(len(shape))]
    k = te.var("k")
    A = te.placeholder(sh, name="A")
    for B, ref in ((A + k, lambda a: a + 2), (A - k, lambda a: a - 2),
                   (A * k, lambda a: a * 2), (A / k, lambda a: a / 2), (-A, lambda a: -a)):
        assert B.op.tag == "elemwise"
        s = topi.x86.schedule_injective(B)
        f = te.build(s, [A, B, k] + sh)
        a = np.random.rand(*shape).astype("float32")
        b = np.empty(shape, dtype="float32")
        f(a, b, 2, *shape)
        np.testing.assert_allclose(b, ref(a), rtol=1e-6)


def test_numpy_scalars_and_negation():
    A = te.placeholder((4,), name="A")
    for B in (np.float32(2) * A, A * np.float32(2)):
        assert isinstance(B, te.Tensor) and B.op.tag == "elemwise"
    N = -A
    s = te.create_schedule(N.op)
    f = te.build(s, [A, N])
    a = np.array([0.0, -1.0, 2.5, 3.0], dtype="float32")
    out = np.empty(4, dtype="float32")
    f(a, out)
    np.testing.assert_array_equal(out, -a)
    assert np.signbit(out[0])                         # -0.0, as numpy's negative


def test_tensor_equality_and_hashing_stay_by_identity():
    A = te.placeholder((3,), name="A")
    B = te.placeholder((3,), name="B")
    table = {A: "a", B: "b"}
    assert table[A] == "a" and A == A and A != B and len({A, B, A}) == 2
    assert A[0] is not None and isinstance(A[0] + 1, te.Expr)       # indexing is unchanged


def test_constant_conversions_as_tvm():
    assert int(te.const(7)) == 7 and float(te.const(7)) == 7.0
    assert float(te.const(2.5)) == 2.5
    assert bool(te.const(1)) is True and bool(te.const(0)) is False
    assert bool(te.const(True, "bool")) is True
    assert [10, 20, 30][te.const(2)] == 30                 # __index__
    assert list(range(te.const(3))) == [0, 1, 2]
    C = te.placeholder((4, 6), name="C")
    assert int(C.shape[1]) == 6 and [int(d) for d in C.shape] == [4, 6]
    with pytest.raises(TypeError, match="te.all"):
        bool(te.var("n") > 1)                            # a symbolic bool still refuses


def test_min_max_value():
    assert te.min_value("int8").value == -128 and te.max_value("uint8").value == 255
    assert te.max_value("float32").value == float(np.finfo("float32").max)
    assert te.min_value("float16").dtype == "float16"
    assert te.tir.min_value("int32").value == -2**31


def test_tir_builders():
    tir = te.tir
    n = te.var("n")
    assert tir.IntImm("int64", 5).dtype == "int64" and tir.IntImm("int64", 5).value == 5
    assert tir.FloatImm("float64", 0.5).value == 0.5
    assert tir.Cast("float32", n).dtype == "float32" and tir.Cast("float32", n).value is n
    assert isinstance(tir.const(1, "int8"), tir.IntImm)
    assert str(tir.min(n, 3)) == "min(n, 3)" and str(tir.max(n, 3)) == "max(n, 3)"
    assert str(tir.ceildiv(n, 4)) == "(n + 3) // 4"
    assert str(tir.div(n, 2)) == "truncdiv(n, 2)"
    assert str(tir.bitwise_and(n, 3)) == "bitwise_and(n, 3)"
    assert str(tir.shift_right(n, 1)) == "shift_right(n, 1)"
    assert str(tir.likely(n > 1)) == "n > 1"
    assert str(tir.all(n > 1, n < 9)) == "n > 1 and n < 9"
    assert str(tir.indexdiv(n, 2)) == "n // 2" and str(tir.truncmod(n, 2)) == "truncmod(n, 2)"
    k = te.reduce_axis((0, 8), name="k")
    A = te.placeholder((8,), name="A")
    B = te.compute((1,), lambda i: tir.sum(A[k], axis=k), name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    a = np.arange(8, dtype="float32")
    b = np.empty(1, dtype="float32")
    f(a, b)
    assert b[0] == 28.0


def test_compute_tag_and_lowered_astext():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2, name="B", tag="my_tag")
    assert B.op.tag == "my_tag" and A.op.tag == ""     # placeholders have an empty tag
    lowered = te.lower(te.create_schedule(B.op), [A, B])
    assert lowered.astext() == str(lowered)

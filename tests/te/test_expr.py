"""The DSL: node construction, dtype promotion, guard rails, compute naming."""
import numpy as np
import pytest

import te
from te import dtypes
from te.expr import Cast, FloorDiv, FloorMod, IntImm, Var


def test_promotion_table():
    assert dtypes.promote("int32", "float32") == "float32"
    assert dtypes.promote("int8", "int32") == "int32"
    assert dtypes.promote("uint8", "int8") == "int8"
    assert dtypes.promote("float16", "float64") == "float64"
    assert dtypes.promote("bool", "int8") == "int8"


def test_python_literals_take_the_other_operands_dtype():
    A = te.placeholder((4,), dtype="int8", name="A")
    e = A[0] + 1
    assert e.dtype == "int8" and isinstance(e.b, IntImm) and e.b.dtype == "int8"
    f = te.placeholder((4,), dtype="float64", name="F")[0] * 2
    assert f.dtype == "float64"
    g = A[0] * 0.5                  # a float literal makes an int expression float
    assert g.dtype == "float32" and isinstance(g.a, Cast)


def test_mixed_dtypes_insert_casts():
    i = te.var("i")
    x = te.placeholder((4,), name="x")[i]
    e = x + i
    assert e.dtype == "float32" and isinstance(e.b, Cast) and e.b.value is i


def test_integer_division_refused_with_hint():
    i = te.var("i")
    with pytest.raises(TypeError, match="floordiv"):
        i / 2
    assert isinstance(i // 2, FloorDiv) and isinstance(i % 2, FloorMod)


def test_bool_of_expression_refused():
    i = te.var("i")
    with pytest.raises(TypeError, match="te.all"):
        if i < 3:
            pass


def test_equality_keeps_identity_and_equal_builds_node():
    a, b = te.var("a"), te.var("a")
    assert a != b and a == a and len({a, b}) == 2
    assert a.equal(b).dtype == "bool"
    assert {a: 1}[a] == 1 and a in [b, a] and [b, a].index(a) == 1
    assert not (a == None) and a != "a" and (a == b).dtype == "bool"    # noqa: E711
    iv = te.reduce_axis((0, 4), name="k")
    assert iv == iv and not (iv != iv) and not (iv == te.reduce_axis((0, 4), name="k"))


def test_equality_in_expressions_builds_the_comparison():
    """As in TVM, ``i == j`` and ``i != j`` are comparisons wherever an expression is
    expected (they were Python bools, silently: select(i == j) was select(False))."""
    n = 5
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    E = te.compute((n, n), lambda i, j: te.select(i == j, 1.0, 0.0), name="E")
    F = te.compute((n, n), lambda i, j: te.if_then_else(i != j, 1.0, 0.0), name="F")
    W = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=k % 2 == 0), name="W")
    G = te.compute((n, n), lambda i, j: te.any(A[i, j] > 0.9, te.all(i == 0, j == 0)),
                   name="G")
    H = te.compute((n, n), lambda i, j: te.select(A[i, j] == A[j, i], 1, 0), name="H")
    s = te.create_schedule([E.op, F.op, W.op, G.op, H.op])
    f = te.build(s, [A, E, F, W, G, H])
    a = np.random.default_rng(0).random((n, n)).astype("float32")
    a[1, 2] = a[2, 1]
    outs = [np.empty((n, n), "float32"), np.empty((n, n), "float32"), np.empty(n, "float32"),
            np.empty((n, n), bool), np.empty((n, n), "int32")]
    f(a, *outs)
    np.testing.assert_array_equal(outs[0], np.eye(n))
    np.testing.assert_array_equal(outs[1], 1 - np.eye(n))
    np.testing.assert_allclose(outs[2], a[:, ::2].sum(1), rtol=1e-6)
    g = a > 0.9
    g[0, 0] = True
    np.testing.assert_array_equal(outs[3], g)
    np.testing.assert_array_equal(outs[4], (a == a.T).astype("int32"))


def test_compute_names_loop_variables_after_lambda():
    A = te.placeholder((3, 4), name="A")
    C = te.compute((3, 4), lambda row, col: A[row, col] * 2, name="C")
    assert [iv.var.name for iv in C.op.axis] == ["row", "col"]
    assert C.shape[0].value == 3 and C.dtype == "float32"
    assert isinstance(C.op.body[0].a.indices[0], Var)


def test_compute_varargs_and_multiple_outputs():
    A = te.placeholder((3, 4), name="A")
    C = te.compute((3, 4), lambda *i: A[i] + 1, name="C")
    assert [iv.var.name for iv in C.op.axis] == ["i0", "i1"]
    X, Y = te.compute((3,), lambda i: (A[i, 0], A[i, 1] > 0), name="XY")
    assert X.dtype == "float32" and Y.dtype == "bool" and X.op is Y.op


def test_reduce_axes_collected_and_comm_reducer_binary_form():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((3,), lambda i: te.max(A[i, k], axis=k), name="C")
    assert C.op.reduce_axis == (k,)
    m = te.max(A[0, 0], A[0, 1])
    assert m.dtype == "float32"
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    P = te.compute((3,), lambda i: prod(A[i, k], axis=k), name="P")
    assert P.op.body[0].combiner.name == "prod"


def test_expression_printing():
    i, j = te.var("i"), te.var("j")
    assert str((i + j) * 2) == "(i + j) * 2"
    assert str(i - (j - 1)) == "i - (j - 1)"
    assert str(te.floordiv(i, 4) + te.floormod(i, 4)) == "i // 4 + i % 4"
    assert str(te.exp(te.placeholder((2,), name="A")[i])) == "exp(A[i])"


def test_target_current_nests_per_thread():
    import threading
    from te.target import Target
    assert Target.current() is None
    with Target("cuda") as outer:
        assert Target.current() is outer
        with Target("llvm -mcpu=znver3") as inner:
            assert Target.current() is inner and Target.current().mcpu == "znver3"
        assert Target.current() is outer
        seen = []
        thread = threading.Thread(target=lambda: seen.append(Target.current()))
        thread.start()
        thread.join()
        assert seen == [None]           # another thread has its own (empty) stack
    assert Target.current() is None


def _doubled(A, n, schedule=None):
    B = te.compute(A.shape, lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    if schedule:
        schedule(s, B)
    a = np.arange(n, dtype="float32")
    b = np.empty(n, "float32")
    te.build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_int64_sizes_and_factors():
    """Sizes that come from numpy arithmetic (np.int64), int64 constants and int64 shape
    variables build (the loop bounds take the loop variable's dtype), as do numpy split
    factors."""
    _doubled(te.placeholder((np.int64(5),), name="A"), 5)
    _doubled(te.placeholder((te.const(6, "int64"),), name="A"), 6)

    def split_vectorize(s, B):
        xo, xi = s[B].split(B.op.axis[0], factor=np.int64(4))
        s[B].vectorize(xi)
    _doubled(te.placeholder((te.var("n", dtype="int64"),), name="A"), 11, split_vectorize)
    assert te.placeholder((np.int64(5),)).shape[0].dtype == "int32"


def test_float_floormod_and_chained_indexing():
    """te.floormod (Python's %) on floats is a - floor(a / b) * b, as in TVM; A[i][j] reads
    A[i, j]."""
    A = te.placeholder((3, 4), name="A")
    B = te.compute((3, 4), lambda i, j: A[i][j] % 1.5 + te.floormod(A[i, j], -2.0), name="B")
    s = te.create_schedule(B.op)
    a = np.random.default_rng(1).uniform(-5, 5, (3, 4)).astype("float32")
    b = np.empty_like(a)
    te.build(s, [A, B])(a, b)
    np.testing.assert_allclose(b, np.mod(a, 1.5) + np.mod(a, -2.0), rtol=1e-5, atol=1e-5)


def test_input_tensors_as_property_and_call():
    A = te.placeholder((4,), name="A")
    B = te.placeholder((4,), name="B")
    C = te.compute((4,), lambda i: A[i] * B[i] + A[i], name="C")
    assert C.op.input_tensors == [A, B] and C.op.input_tensors() == [A, B]
    assert C.op.input_tensors[1] is B and A.op.input_tensors == []


def test_tvm_module_and_ndarray_spellings():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    mod = te.lower(s, [A, B])
    assert mod["main"] is mod and mod.script() == str(mod) and "for i in range(4)" in str(mod)
    with pytest.raises(KeyError, match="one function, 'main'"):
        mod["other"]
    f = te.build(s, [A, B])
    a = te.nd.array(np.arange(4, dtype="float32"))
    b = te.nd.empty((4,), "float32")
    f["default_function"](a, b)
    c = b.copyto(te.cpu(0))
    d = b.copyto(te.nd.empty((4,), "float32"))
    np.testing.assert_array_equal(c.numpy(), np.arange(4) + 1)
    np.testing.assert_array_equal(d.numpy(), np.arange(4) + 1)
    assert te.gpu(0).kind == te.cuda(0).kind
    with pytest.raises(ValueError, match=r"copyto: target shape \(3,\) differs"):
        b.copyto(te.nd.empty((3,), "float32"))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint32", "int32", "bool"])
def test_invert_of_signed_unsigned_and_bool(dtype):
    A = te.placeholder((4,), dtype, name="A")
    B = te.compute((4,), lambda i: ~A[i], name="B")
    a = np.array([0, 1, 1, 0], dtype) if dtype == "bool" else \
        np.array([0, 1, 100, np.iinfo(dtype).max], dtype)
    b = np.zeros(4, dtype)
    te.build(te.create_schedule(B.op), [A, B])(a, b)
    np.testing.assert_array_equal(b, ~a)


def test_constants_of_vector_dtypes():
    """Integer ranges come from the element dtype: int32x4 holds what int32 holds."""
    c = te.const(1, "int32x4")
    assert isinstance(c, IntImm) and (c.value, c.dtype) == (1, "int32x4")
    assert te.const(255, "uint8x8").value == 255
    assert te.const(2.5, "float32x4").value == 2.5
    with pytest.raises(ValueError, match=r"the constant 2147483648 does not fit int32x4 "
                                         r"\[-2147483648, 2147483647\]"):
        te.const(2 ** 31, "int32x4")
    with pytest.raises(ValueError, match=r"the constant -1 does not fit uint8x8 \[0, 255\]"):
        te.const(-1, "uint8x8")
    v = te.var("v", "uint8x4")
    assert (~v).a.value == 255

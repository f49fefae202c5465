"""The DSL: node construction, dtype promotion, guard rails, compute naming."""
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

"""Misuses of the tensor-expression DSL: each raises at declaration time, names the tensor or
axis at fault and says what to write instead (Halide's ``test/error``: one test per mistake)."""
import numpy as np
import pytest

import te


@pytest.fixture
def A():
    return te.placeholder((8, 8), name="A")


def test_wrong_number_of_indices(A):
    with pytest.raises(te.TEError, match=r"tensor A has 2 dimensions but was indexed with 1 "
                                         r"indices; give one index per dimension"):
        te.compute((8,), lambda i: A[i], name="C")


def test_negative_sizes():
    with pytest.raises(te.TEError, match=r"placeholder X: shape entry 1 is -1; sizes must be "
                                         r">= 0"):
        te.placeholder((3, -1), name="X")
    with pytest.raises(te.TEError, match=r"compute C: shape entry 0 is -4"):
        te.compute((-4,), lambda i: i, name="C")
    with pytest.raises(te.TEError, match=r"reduce_axis k: the range \(5, 2\) has a negative "
                                         r"extent; give \(begin, end\) with end >= begin"):
        te.reduce_axis((5, 2), name="k")


def test_partly_indexed_tensor_used_as_a_value(A):
    with pytest.raises(te.TEError, match=r"tensor A has 2 dimensions but was indexed with 1 "):
        te.compute((8,), lambda i: A[i] * 2.0 + 1, name="C")


def test_float_index(A):
    with pytest.raises(te.TEError, match=r"index 1 of tensor A .* dtype float32; indices must "
                                         r"be integers \(use \.astype\('int32'\)\)"):
        te.compute((8, 8), lambda i, j: A[i, j * 0.5], name="C")


def test_slice_index(A):
    with pytest.raises(te.TEError, match=r"tensor A: slices are not supported.*index with loop"):
        te.compute((8,), lambda i: A[i, 0:4], name="C")


def test_reduce_axis_outside_reduction(A):
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(te.TEError, match=r"compute C: reduce axis k is used outside a "
                                         r"reduction; wrap the expression in te\.sum\(\.\.\., "
                                         r"axis=k\)"):
        te.compute((8,), lambda i: A[i, k] * 2, name="C")


def test_reduction_nested_in_expression(A):
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(te.TEError, match=r"compute C: a reduction \(sum\) must be the whole "
                                         r"body of a compute; compute it in its own te\.compute"):
        te.compute((8,), lambda i: te.sum(A[i, k], axis=k) + 1.0, name="C")


def test_integer_true_division_hints_floordiv_truncdiv(A):
    with pytest.raises(TypeError, match=r"integer division 'i / 2' is ambiguous; use "
                                        r"te\.floordiv.*te\.truncdiv"):
        te.compute((8,), lambda i: A[i / 2, 0], name="C")


def test_bool_of_expression_hints_all_any():
    n = te.var("n")
    with pytest.raises(TypeError, match=r"n > 3 as a Python bool; combine conditions with "
                                        r"te\.all\(\.\.\.\) / te\.any\(\.\.\.\).*"
                                        r"te\.if_then_else"):
        bool(n > 3)


def test_python_if_on_expression_hints_if_then_else(A):
    def body(i):
        if i < 4:
            return A[i, 0]
        return A[i, 1]

    with pytest.raises(TypeError, match=r"i < 4 as a Python bool.*te\.if_then_else"):
        te.compute((8,), body, name="C")


def test_chained_comparison_is_a_python_bool():
    n = te.var("n")
    with pytest.raises(TypeError, match=r"te\.all"):
        0 < n < 4           # Python evaluates `0 < n and n < 4`


def test_lambda_arity_does_not_match_shape(A):
    with pytest.raises(te.TEError, match=r"compute C: the lambda takes 1 arguments \(i\) but "
                                         r"the shape has 2 dimensions; give the lambda one "
                                         r"parameter per dimension"):
        te.compute((8, 8), lambda i: A[i, i], name="C")


def test_float_shape():
    with pytest.raises(te.TEError, match=r"placeholder X: shape entry 1 .* float32; shapes "
                                         r"must be integers or integer te\.var"):
        te.placeholder((4, 2.5), name="X")


def test_sum_over_a_data_axis(A):
    other = te.compute((8,), lambda j: A[j, j], name="D")
    with pytest.raises(te.TEError, match=r"te\.sum: axis IterVar\(j.* is not a reduce axis; "
                                         r"create it with te\.reduce_axis"):
        te.compute((8,), lambda i: te.sum(A[i, 0], axis=other.op.axis[0]), name="C")


def test_sum_without_axis(A):
    with pytest.raises(te.TEError, match=r"te\.sum needs axis=<reduce axis>"):
        te.sum(A[0, 0])


@pytest.mark.parametrize("fn", [te.exp, te.log, te.sqrt, te.tanh, te.sigmoid])
def test_float_only_intrinsic_on_int(fn):
    name = fn.__name__
    with pytest.raises(TypeError, match=rf"te\.{name} needs a floating-point argument; i has "
                                        r"dtype int32 \(use \.astype\('float32'\)\)"):
        te.compute((8,), lambda i: fn(i), name="C")


def test_float_only_intrinsic_on_int_tensor():
    idx = te.placeholder((8,), dtype="int32", name="idx")
    with pytest.raises(TypeError, match=r"te\.exp needs a floating-point argument; idx\[i\]"):
        te.compute((8,), lambda i: te.exp(idx[i]), name="C")


def test_bitwise_on_float(A):
    with pytest.raises(TypeError, match=r"te\.bitwise_xor needs integer operands; got float32"):
        te.compute((8,), lambda i: A[i, 0] ^ 1, name="C")


def test_iterating_a_tensor(A):
    with pytest.raises(TypeError, match=r"tensor A is not iterable; index it with A\[i, j\]"):
        list(A)


def test_thread_axis_without_tag():
    with pytest.raises(te.TEError, match=r"needs a tag such as 'blockIdx\.x'"):
        te.thread_axis()


def test_no_current_target():
    from te.target import Target
    with pytest.raises(ValueError, match=r"no target is current: use `with "
                                         r"te.target.Target\(\.\.\.\):`"):
        Target.current(allow_none=False)


# reads outside a constant-shaped tensor, known when a stage computed whole is lowered
OUT_OF_BOUNDS = [
    ("shifted", lambda A, k: te.compute((8,), lambda i: A[i + 10, 0], name="C"),
     r"lower: compute C: the read A\[i \+ 10, 0\] indexes dimension 0 of A with i \+ 10, which "
     r"ranges over \[10, 17\], but that dimension has size 8; fix the index, or guard the read "
     r"with te.if_then_else"),
    ("off_by_one", lambda A, k: te.compute((8, 8), lambda i, j: A[i, j + 1], name="C"),
     r"dimension 1 of A with j \+ 1, which ranges over \[1, 8\]"),
    ("reduction", lambda A, k: te.compute((8,), lambda i: te.sum(A[i, k * 2], axis=k),
                                          name="C"),
     r"dimension 1 of A with k \* 2, which ranges over \[0, 14\]"),
    ("negative", lambda A, k: te.compute((8,), lambda i: A[i - 8, 0], name="C"),
     r"over \[-8, -1\]"),
]


@pytest.mark.parametrize("name", [c[0] for c in OUT_OF_BOUNDS])
def test_read_out_of_bounds(A, name):
    _, make, message = next(c for c in OUT_OF_BOUNDS if c[0] == name)
    C = make(A, te.reduce_axis((0, 8), name="k"))
    with pytest.raises(te.ScheduleError, match=message):
        te.lower(te.create_schedule(C.op), [A, C])


def test_reads_with_an_unbounded_index_are_left_alone(A):
    """A size variable in an index leaves its range open above: not provably out of bounds."""
    n = te.var("n")
    C = te.compute((8,), lambda i: A[i + n, 0], name="C")
    te.lower(te.create_schedule(C.op), [A, C, n])
    D = te.compute((8,), lambda i: A[n - i, 0], name="D")
    te.lower(te.create_schedule(D.op), [A, D, n])


def test_guarded_partial_or_inexact_reads_are_left_alone(A):
    """Reads under a condition, whose range is only an estimate, or of a stage that computes
    a part of its domain (inlined: its consumer reads the part in bounds) are not refused,
    and they compute what numpy says."""
    a = np.arange(64, dtype="float32").reshape(8, 8)
    col = a[:, 0]
    k = te.reduce_axis((0, 8), name="k")
    cases = [
        (te.compute((8,), lambda i: te.if_then_else(i < 7, A[i + 1, 0], 0.0), name="C"),
         np.append(col[1:], 0)),
        (te.compute((8,), lambda i: te.sum(A[i, k + 1], axis=k, where=k < 7), name="C"),
         a[:, 1:].sum(1)),
        (te.compute((8,), lambda i: A[i - i // 2 * 2 + i // 2 * 2, 0], name="C"), col),
    ]
    for C, expected in cases:
        _run_against(te.create_schedule(C.op), A, C, a, expected)
    empty = te.compute((0,), lambda i: A[i + 100, 0], name="C")     # never runs
    te.build(te.create_schedule(empty.op), [A, empty])(a, np.zeros(0, "float32"))
    C = te.compute((12,), lambda i: A[i, 0] * 2, name="C")          # guarded as a whole
    s = te.create_schedule(C.op)
    s[C].set_store_predicate(C.op.axis[0] < 8)
    c = np.full(12, -1, "float32")
    te.build(s, [A, C])(a, c)
    np.testing.assert_array_equal(c, np.append(col * 2, [-1] * 4))
    B = te.compute((10,), lambda i: A[i, 0] * 2, name="B")          # 10 > 8 rows of A
    C = te.compute((8,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    _run_against(s, A, C, a, col * 2 + 1)


def _run_against(s, A, C, a, expected):
    out = np.zeros(C.shape[0].value, "float32")
    te.build(s, [A, C])(a, out)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_constant_that_does_not_fit_the_tensor_dtype():
    """As TVM: a Python int meeting an int8 tensor becomes an int8 constant, which 300 is not."""
    X = te.placeholder((4,), "int8", name="X")
    with pytest.raises(ValueError, match=r"the constant 300 does not fit int8 \[-128, 127\]; "
                                         r"give it a wider dtype, or cast the tensor it meets"):
        te.compute((4,), lambda i: X[i] * 300, name="C")
    C = te.compute((4,), lambda i: X[i].astype("int32") * 300, name="C")
    assert C.dtype == "int32"
    with pytest.raises(ValueError, match=r"the constant -1 does not fit uint8"):
        te.const(-1, "uint8")

"""Calling a built function with wrong arguments raises ArgumentError naming the argument and the
fix, before any code runs (the output array is not touched); building for a target that cannot
run the schedule, or for an unknown target, fails with the target named."""
import numpy as np
import pytest

import te
from codegen_llvm import ArgumentError, CodegenError

SENTINEL = 7.0


@pytest.fixture(scope="module")
def add():
    """C[n, 4] = A[n, 4] + B[n, 4], with n bound from the arrays at call time."""
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.placeholder((n, 4), name="B")
    C = te.compute((n, 4), lambda i, j: A[i, j] + B[i, j], name="C")
    return te.build(te.create_schedule(C.op), [A, B, C], name="add")


def _arrays(rows=5):
    a = np.arange(rows * 4, dtype="float32").reshape(rows, 4)
    return a, np.ones((rows, 4), "float32"), np.full((rows, 4), SENTINEL, "float32")


def _check_untouched(out):
    assert np.all(np.asarray(out) == SENTINEL), "a failed call wrote to its output"


def test_wrong_argument_count(add):
    a, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"add takes 3 arguments \(A, B, C\), got 2"):
        add(a, c)
    _check_untouched(c)


def test_wrong_dtype(add):
    a, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument B: expected dtype float32, got float64 "
                                            r"\(convert with \.astype\('float32'\)\)"):
        add(a, b.astype("float64"), c)
    _check_untouched(c)


def test_wrong_rank(add):
    a, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument A: expected 2 dimensions \[n, 4\], got "
                                            r"shape \(20,\)"):
        add(a.reshape(20), b, c)
    _check_untouched(c)


def test_wrong_constant_dimension(add):
    _, b, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument A: dimension 1 must be 4, got shape "
                                            r"\(5, 3\)"):
        add(np.ones((5, 3), "float32"), b, c)
    _check_untouched(c)


def test_inconsistent_symbolic_size(add):
    a, _, c = _arrays()
    with pytest.raises(ArgumentError, match=r"argument B: dimension 0 is 6 but n = 5 from an "
                                            r"earlier argument"):
        add(a, np.ones((6, 4), "float32"), c)
    _check_untouched(c)


def test_derived_shape_expression():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n * 2,), lambda i: A[i // 2], name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    out = np.full(7, SENTINEL, "float32")
    with pytest.raises(ArgumentError, match=r"argument B: dimension 0 must be n \* 2 = 8, got "
                                            r"shape \(7,\)"):
        f(np.ones(4, "float32"), out)
    _check_untouched(out)


@pytest.mark.parametrize("layout", ["fortran", "strided"])
def test_non_contiguous_array(add, layout):
    a, b, c = _arrays()
    bad = np.asfortranarray(a) if layout == "fortran" else np.ones((10, 4), "float32")[::2]
    with pytest.raises(ArgumentError, match=r"argument A is not C-contiguous; pass "
                                            r"np\.ascontiguousarray\(x\)"):
        add(bad, b, c)
    _check_untouched(c)


def test_read_only_output(add):
    a, b, c = _arrays()
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"argument C is an output but is read-only; pass a "
                                            r"writeable array"):
        add(a, b, c)
    _check_untouched(c)


def test_read_only_input_is_fine(add):
    a, b, c = _arrays()
    a.flags.writeable = False
    add(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_output_aliasing_an_input(add):
    a, b, _ = _arrays()
    before = a.copy()
    with pytest.raises(ArgumentError, match=r"argument C \(an output\) overlaps the memory of "
                                            r"A; pass a separate output array"):
        add(a, b, a)
    np.testing.assert_array_equal(a, before)


def test_output_partly_overlapping_an_input(add):
    buf = np.full((10, 4), SENTINEL, "float32")
    _, b, _ = _arrays()
    with pytest.raises(ArgumentError, match=r"argument C \(an output\) overlaps the memory of "
                                            r"A"):
        add(buf[:5], b, buf[2:7])
    _check_untouched(buf)


def test_adjacent_but_disjoint_buffers_are_fine(add):
    buf = np.zeros((10, 4), "float32")
    buf[:5] = 1.0
    _, b, _ = _arrays()
    add(buf[:5], b, buf[5:])
    np.testing.assert_array_equal(buf[5:], 2.0)


@pytest.mark.parametrize("bad,kind", [([[1.0] * 4] * 5, "list"), (3.0, "float"),
                                      (None, "NoneType")])
def test_non_array_argument(add, bad, kind):
    a, _, c = _arrays()
    with pytest.raises(ArgumentError, match=rf"argument B must be an array \(numpy array, "
                                            rf"te\.nd\.NDArray, .*\), got {kind}"):
        add(a, bad, c)
    _check_untouched(c)


def test_scalar_parameter_given_an_array():
    n = te.var("n")
    alpha = te.var("alpha", "float32")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * alpha, name="B")
    f = te.build(te.create_schedule(B.op), [A, alpha, B])
    out = np.full(4, SENTINEL, "float32")
    with pytest.raises(ArgumentError, match=r"argument alpha is a scalar of dtype float32, got "
                                            r"ndarray"):
        f(np.ones(4, "float32"), np.ones(1, "float32"), out)
    _check_untouched(out)


@pytest.mark.parametrize("alpha", [1j, np.complex64(1), np.complex128(1)],
                         ids=["complex", "complex64", "complex128"])
def test_float_scalar_parameter_given_a_complex(alpha):
    """np.complex64 is no Python complex, yet no more a float than complex128 is."""
    a = te.var("alpha", "float32")
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * a, name="B")
    f = te.build(te.create_schedule(B.op), [A, a, B])
    out = np.full(4, SENTINEL, "float32")
    with pytest.raises(ArgumentError, match=r"argument alpha is a scalar of dtype float32, got "
                                            + type(alpha).__name__ + "$"):
        f(np.ones(4, "float32"), alpha, out)
    _check_untouched(out)


def test_errors_are_type_errors(add):
    """ArgumentError subclasses TypeError, so generic callers can catch a bad call as usual."""
    a, b, c = _arrays()
    with pytest.raises(TypeError):
        add(a, b)


# ----------------------------------------------------------------------------- build time

def _bound_to_threads():
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


def test_thread_bound_schedule_for_llvm():
    s, args = _bound_to_threads()
    with pytest.raises(CodegenError, match=r"loop i_outer is bound to blockIdx\.x, a GPU "
                                           r"thread index; build with target='cuda' or remove "
                                           r"the bind"):
        te.build(s, args, target="llvm")


@pytest.mark.parametrize("target,kind", [("opencl", "opencl"), ("llvmx", "llvmx"),
                                         ("vulkan -mcpu=x", "vulkan")])
def test_unknown_target(target, kind):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ValueError, match=rf"unknown target kind '{kind}'; use 'llvm' or "
                                         r"'cuda'"):
        te.build(s, [A, B], target=target)


def test_malformed_target_option():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ValueError, match=r"target option 'avx2' must look like -key=value"):
        te.build(s, [A, B], target="llvm avx2")


def test_empty_target():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match=r"target must be a string such as 'llvm' or 'cuda'"):
        te.build(te.create_schedule(B.op), [A, B], target="")


# ----------------------------------------------------------------------------- scalars, aliasing

@pytest.fixture(scope="module")
def scaled():
    """B[m] = A[m] * k, with m both a shape variable and a scalar argument after the arrays."""
    m = te.var("m")
    k = te.var("k", "int32")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] * k.astype("float32"), name="B")
    return te.build(te.create_schedule(B.op), [A, B, m, k])


@pytest.mark.parametrize("m,k,message", [
    (2, 1, r"argument m = 2, but the shapes of the arrays before it give m = 4; pass 4"),
    (3000, 1, r"argument m = 3000, but the shapes .* give m = 4"),
    (4, 2 ** 40, r"argument k = 1099511627776 does not fit its dtype int32 "
                 r"\[-2147483648, 2147483647\]"),
    (4, 4.7, r"argument k is a scalar of dtype int32, got float 4\.7; pass an int"),
    (4, np.float64(2), r"argument k is a scalar of dtype int32, got float64 2\.0; pass an int"),
    (4, "2", r"argument k is a scalar of dtype int32, got str"),
    (4, np.complex64(1), r"argument k is a scalar of dtype int32, got complex64$"),
])
def test_bad_scalar_arguments(scaled, m, k, message):
    out = np.full(4, SENTINEL, "float32")
    with pytest.raises(ArgumentError, match=message):
        scaled(np.ones(4, "float32"), out, m, k)
    _check_untouched(out)
    scaled(np.ones(4, "float32"), out, 4, np.int64(3))
    np.testing.assert_array_equal(out, np.full(4, 3, "float32"))


def test_two_outputs_given_one_array():
    P = te.placeholder((4,), name="P")
    O1 = te.compute((4,), lambda i: P[i] + 1, name="O1")
    O2 = te.compute((4,), lambda i: O1[i] * 10, name="O2")
    f = te.build(te.create_schedule([O1.op, O2.op]), [P, O1, O2])
    out = np.full(4, SENTINEL, "float32")
    for call in (lambda: f(np.ones(4, "float32"), out, out),
                 lambda: f(te.nd.array(np.ones(4, "float32")), out, out[:]),):
        with pytest.raises(ArgumentError, match=r"argument O2 \(an output\) overlaps the memory "
                                                r"of O1; pass a separate output array"):
            call()
        _check_untouched(out)


@pytest.mark.parametrize("holder", ["numpy", "NDArray"])
def test_big_endian_arrays_are_named(add, holder):
    a, b, c = _arrays()
    big = a.astype(">f4")
    arg = big if holder == "numpy" else te.nd.NDArray(big, te.cpu(0))     # as it is
    with pytest.raises(ArgumentError, match=r"argument A: expected dtype float32, got float32 "
                                            r"in big-endian byte order"):
        add(arg, b, c)
    _check_untouched(c)
    add(te.nd.array(big), b, c)            # te.nd.array converts to the machine's byte order
    np.testing.assert_array_equal(c, a + b)


# ----------------------------------------------------------------------------- build arguments

def _plus_one():
    A = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A[i] + 1, name="C")
    return A, C, te.create_schedule(C.op)


def test_output_missing_from_args():
    A, C, s = _plus_one()
    with pytest.raises(te.ScheduleError, match=r"lower: C is an output of the schedule but not "
                                               r"in the arguments, so its values would be lost; "
                                               r"add C to the arguments"):
        te.build(s, [A])


def test_argument_given_twice():
    A, C, s = _plus_one()
    with pytest.raises(te.ScheduleError, match=r"lower: A appears twice in the arguments; pass "
                                               r"each tensor and var once"):
        te.build(s, [A, A, C])


def test_output_with_a_non_global_scope():
    A, C, s = _plus_one()
    s[C].set_scope("local")
    with pytest.raises(te.ScheduleError, match=r"lower: C is an argument, so it lives in global "
                                               r"memory, but set_scope gave it scope 'local'"):
        te.build(s, [A, C])


def test_name_must_be_a_string():
    A, C, s = _plus_one()
    with pytest.raises(te.ScheduleError, match=r"name must be a non-empty string, got 3"):
        te.build(s, [A, C], name=3)


@pytest.mark.parametrize("target,message", [
    ("llvm -mcpu=bogus", r"target -mcpu=bogus: LLVM does not know this CPU"),
    ("llvm -mattr=+avx2,+nosuchfeature", r"target -mattr: LLVM does not know the feature "
                                         r"\+nosuchfeature"),
])
def test_unknown_cpu_or_feature(target, message):
    """LLVM only warns about these, then may abort the process in code generation."""
    A, C, s = _plus_one()
    with pytest.raises(ValueError, match=message):
        te.build(s, [A, C], target=target)

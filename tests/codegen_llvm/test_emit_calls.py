"""codegen_llvm/emit_calls.py outside tensorize: LLVM intrinsics by name in an ordinary compute
(scalar and vectorized, TVM's num_signature order), reinterpret, and a C call in a vectorized
loop refused; results against numpy."""
import numpy as np
import pytest

import te
from codegen_llvm import CodegenError


def _popcount(name, vectorize):
    A = te.placeholder((64,), dtype="int32", name="A")
    C = te.compute((64,), lambda i: te.call_llvm_pure_intrin(
        "int32", name, te.const(1, "uint32"), A[i]), name="C")
    s = te.create_schedule(C.op)
    if vectorize:
        xo, xi = s[C].split(C.op.axis[0], factor=8)
        s[C].vectorize(xi)
    return te.build(s, [A, C])


@pytest.mark.parametrize("name", ["llvm.ctpop", "llvm.ctpop.i32"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_llvm_intrinsic_in_a_compute(name, vectorize):
    """LLVM mangles an overloaded intrinsic's name for the types it is called with (the
    vectorized loop calls it on <8 x i32>)."""
    f = _popcount(name, vectorize)
    a = np.random.default_rng(0).integers(-2**31, 2**31 - 1, 64).astype("int32")
    c = np.empty(64, "int32")
    f(a, c)
    want = np.array([bin(int(x) & 0xFFFFFFFF).count("1") for x in a], "int32")
    np.testing.assert_array_equal(c, want)


def test_reinterpret_is_a_bitcast():
    A = te.placeholder((16,), dtype="float32", name="A")
    C = te.compute((16,), lambda i: te.reinterpret("int32", A[i]), name="C")
    f = te.build(te.create_schedule(C.op), [A, C])
    a = np.linspace(-3, 3, 16, dtype="float32")
    c = np.empty(16, "int32")
    f(a, c)
    np.testing.assert_array_equal(c, a.view("int32"))
    with pytest.raises(TypeError, match="whose width differs"):
        te.reinterpret("int64", A[0])


def test_c_call_in_a_vectorized_loop_is_refused():
    A = te.placeholder((16,), dtype="int32", name="A")
    C = te.compute((16,), lambda i: te.tir.call_extern("int32", "abs", A[i]), name="C")
    s = te.create_schedule(C.op)
    f = te.build(s, [A, C])              # scalar: libc's abs
    a = np.arange(-8, 8, dtype="int32")
    c = np.empty(16, "int32")
    f(a, c)
    np.testing.assert_array_equal(c, np.abs(a))
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    with pytest.raises(CodegenError, match="call_extern\\('abs'\\) inside a vectorized loop"):
        te.build(s, [A, C])

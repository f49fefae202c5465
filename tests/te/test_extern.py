"""te.extern + te.call_packed: numpy reference = interpreter = compiled code (CPU)."""
import numpy as np
import pytest

import te
from schedule.interp import run


def _register(name, fn):
    te.register_func(name, fn, override=True)


def _check(s, args, arrays, expect, out_pos=-1):
    f = te.build(s, args)
    outs = [a.copy() for a in arrays]
    f(*outs)
    np.testing.assert_allclose(outs[out_pos], expect, rtol=1e-5)
    ref = [a.copy() for a in arrays]
    run(te.lower(s, args), *ref)
    np.testing.assert_allclose(ref[out_pos], expect, rtol=1e-5)


def test_addone_symbolic_n_feeds_compute():
    @te.register_func("test.extern.addone", override=True)
    def addone(x, y):
        assert isinstance(x, te.nd.NDArray)
        y.copyfrom(x.numpy() + 1)

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: te.call_packed(
        "test.extern.addone", ins[0], outs[0]), name="B")
    C = te.compute(A.shape, lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    text = str(te.lower(s, [A, C]))
    assert "tvm_call_packed('test.extern.addone', A, B)" in text
    for size in (1, 7, 33):
        a = np.random.rand(size).astype("float32")
        _check(s, [A, C], [a, np.zeros(size, "float32")], (a + 1) * 2)
    assert te.get_global_func("test.extern.addone") is addone


def test_views_share_memory_no_copy():
    seen = {}

    def probe(x, y):
        seen["x"] = np.asarray(x).__array_interface__["data"][0]
        y.copyfrom(x.numpy())
    _register("test.extern.probe", probe)
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: te.call_packed(
        "test.extern.probe", ins[0], outs[0]), name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    a, b = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    f(a, b)
    assert seen["x"] == a.__array_interface__["data"][0]
    np.testing.assert_array_equal(b, a)


def test_compute_feeds_extern_matmul_like_cblas():
    _register("test.extern.matmul", lambda a, b, c: c.copyfrom(a.numpy() @ b.numpy()))
    n, l, m = 8, 5, 6
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    A2 = te.compute(A.shape, lambda i, j: A[i, j] + 1, name="A2")
    C = te.extern((n, m), [A2, B], lambda ins, outs: te.call_packed(
        "test.extern.matmul", ins[0], ins[1], outs[0]), name="C")
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    s[D].parallel(D.op.axis[0])
    a = np.random.rand(n, l).astype("float32")
    b = np.random.rand(l, m).astype("float32")
    _check(s, [A, B, D], [a, b, np.zeros((n, m), "float32")], (a + 1) @ b + 1)


def test_two_outputs_and_dtypes():
    def split(x, lo, hi):
        lo.copyfrom(x.numpy()[:, 0])
        hi.copyfrom(x.numpy()[:, 1].astype("int32"))
    _register("test.extern.split", split)
    n = te.var("n")
    A = te.placeholder((n, 2), name="A")
    lo, hi = te.extern([(n,), (n,)], [A], lambda ins, outs: te.call_packed(
        "test.extern.split", ins[0], outs[0], outs[1]), name="S", dtype=["float32", "int32"])
    assert (lo.dtype, hi.dtype) == ("float32", "int32")
    C = te.compute((n,), lambda i: lo[i] + hi[i].astype("float32"), name="C")
    s = te.create_schedule(C.op)
    a = (np.random.rand(9, 2) * 10).astype("float32")
    _check(s, [A, C], [a, np.zeros(9, "float32")], a[:, 0] + a[:, 1].astype("int32"))
    f = te.build(te.create_schedule(lo.op), [A, lo, hi])
    x, y = np.zeros(9, "float32"), np.zeros(9, "int32")
    f(a, x, y)
    np.testing.assert_array_equal(y, a[:, 1].astype("int32"))


def test_scalar_arguments():
    got = []

    def axpb(x, y, k, s, n):
        got.append((k, s, n))
        y.copyfrom(x.numpy() * s + k + n)
    _register("test.extern.axpb", axpb)
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: te.call_packed(
        "test.extern.axpb", ins[0], outs[0], 3, 0.5, n), name="B")
    s = te.create_schedule(B.op)
    a = np.arange(6, dtype="float32")
    _check(s, [A, B], [a, np.zeros(6, "float32")], a * 0.5 + 3 + 6)
    assert got == [(3, 0.5, 6), (3, 0.5, 6)]      # compiled, then interpreted


def test_exception_propagates_with_name():
    def bad(x, y):
        raise ValueError("no good")
    _register("test.extern.bad", bad)
    A = te.placeholder((4,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: te.call_packed(
        "test.extern.bad", ins[0], outs[0]), name="B")
    C = te.compute(A.shape, lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    f = te.build(s, [A, C])
    a, c = np.zeros(4, "float32"), np.zeros(4, "float32")
    with pytest.raises(te.ExternError, match="test.extern.bad.*ValueError: no good") as info:
        f(a, c)
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(te.ExternError, match="test.extern.bad"):
        run(te.lower(s, [A, C]), a, c)
    _register("test.extern.bad", lambda x, y: y.copyfrom(x.numpy() + 2))
    f(a, c)                                   # the module still works; the lookup is by name
    np.testing.assert_array_equal(c, a + 3)


def test_extern_chain_and_workspace_function():
    _register("test.extern.double", lambda x, y: y.copyfrom(x.numpy() * 2))
    n = 300
    A = te.placeholder((n, n), name="A")
    T = te.compute(A.shape, lambda i, j: A[i, j] + 1, name="T")     # a large temporary
    B = te.extern(A.shape, [T], lambda ins, outs: te.call_packed(
        "test.extern.double", ins[0], outs[0]), name="B")
    E = te.extern(A.shape, [B], lambda ins, outs: te.call_packed(
        "test.extern.double", ins[0], outs[0]), name="E")
    s = te.create_schedule(E.op)
    a = np.random.rand(n, n).astype("float32")
    _check(s, [A, E], [a, np.zeros((n, n), "float32")], (a + 1) * 4)

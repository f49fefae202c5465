"""Misuses of te.extern / te.call_packed: each raises a clear error naming what is wrong."""
import numpy as np
import pytest

import te
from codegen_llvm import CodegenError
from te.tensor import TEError


def _graph(fname="test.errors.extern.copy"):
    te.register_func(fname, lambda x, y: y.copyfrom(x.numpy()), override=True)
    A = te.placeholder((16,), name="A")
    P = te.compute(A.shape, lambda i: A[i] * 2, name="P")
    B = te.extern(A.shape, [P], lambda ins, outs: te.call_packed(fname, ins[0], outs[0]),
                  name="B")
    C = te.compute(A.shape, lambda i: B[i] + 1, name="C")
    return A, P, B, C


@pytest.mark.parametrize("prim", ["split", "compute_at", "compute_inline", "parallel"])
def test_extern_stage_cannot_be_scheduled(prim):
    A, P, B, C = _graph()
    s = te.create_schedule(C.op)
    with pytest.raises(te.ScheduleError, match=f"{prim}: stage B is an extern stage"):
        if prim == "split":
            s[B].split(C.op.axis[0], factor=4)
        elif prim == "compute_at":
            s[B].compute_at(s[C], C.op.axis[0])
        elif prim == "compute_inline":
            s[B].compute_inline()
        else:
            s[B].parallel(C.op.axis[0])
    s[B].compute_root()                   # the only placement: allowed


def test_producer_of_extern_must_be_stored():
    A, P, B, C = _graph()
    s = te.create_schedule(C.op)
    with pytest.raises(te.ScheduleError, match="extern stage B.*must be stored"):
        s[P].compute_inline()


def test_unregistered_function_at_build():
    A = te.placeholder((4,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: te.call_packed(
        "test.errors.nobody", ins[0], outs[0]), name="B")
    s = te.create_schedule(B.op)
    print(te.lower(s, [A, B]))            # printing needs no registration
    with pytest.raises(CodegenError, match="'test.errors.nobody'.*register_func"):
        te.build(s, [A, B])
    with pytest.raises(TEError, match="test.errors.nobody"):
        te.get_global_func("test.errors.nobody")


def test_bad_fcompute_and_arguments():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="extern B: fcompute must return te.call_packed"):
        te.extern(A.shape, [A], lambda ins, outs: ins[0].shape[0], name="B")
    with pytest.raises(TEError, match="argument 1 is the tensor A"):
        te.extern(A.shape, [A], lambda ins, outs: te.call_packed("f", A, outs[0]), name="B")
    with pytest.raises(TEError, match="first argument must be the registered function"):
        te.call_packed(A)
    with pytest.raises(TEError, match="2 output shapes but 1 dtypes"):
        te.extern([(4,), (4,)], [A], lambda ins, outs: te.call_packed("f"), dtype=["int32"])
    with pytest.raises(TEError, match="out_buffers are not supported"):
        te.extern(A.shape, [A], lambda ins, outs: te.call_packed("f"), out_buffers=[1])
    with pytest.raises(TEError, match="already registered"):
        te.register_func("test.errors.twice", print)
        te.register_func("test.errors.twice", print)


def test_placeholder_read_by_extern_must_be_an_argument():
    A, P, B, C = _graph()
    A2 = te.placeholder((16,), name="A2")
    B2 = te.extern(A2.shape, [A2], lambda ins, outs: te.call_packed(
        "test.errors.extern.copy", ins[0], outs[0]), name="B2")
    s = te.create_schedule(B2.op)
    with pytest.raises(te.ScheduleError, match="placeholder A2 is read by the extern stage B2"):
        te.lower(s, [B2])


def test_cuda_refuses_extern():
    import codegen_cuda as cuda
    A, P, B, C = _graph()
    s = te.create_schedule(C.op)
    with pytest.raises(cuda.CudaCodegenError, match="extern call .* runs on the CPU only"):
        te.build(s, [A, C], target="cuda")


def test_error_inside_function_is_not_a_crash():
    te.register_func("test.errors.raise", lambda x, y: 1 / 0, override=True)
    A = te.placeholder((4,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: te.call_packed(
        "test.errors.raise", ins[0], outs[0]), name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(te.ExternError, match="'test.errors.raise' raised ZeroDivisionError"):
        f(np.zeros(4, "float32"), np.zeros(4, "float32"))

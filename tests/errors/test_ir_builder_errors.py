"""Misuses of te.tir.ir_builder (the loop IR of a te.extern stage): each names the loop,
buffer or scope at fault and says what to write instead."""
import numpy as np
import pytest

import te


@pytest.mark.parametrize("mistake,message", [
    (lambda ib, x: ib.for_range(0, 4, kind="simd").__enter__(),
     r"for_range i: unknown kind 'simd'; use one of serial, parallel, vectorize, unroll"),
    (lambda ib, x: ib.for_range(0, te.var("n"), kind="vectorize").__enter__(),
     r"for_range i: kind 'vectorize' needs a constant extent, got n"),
    (lambda ib, x: ib.buffer_ptr(x)[1, 2, 3],
     r"buffer A has 2 dimensions: index it with 2 indices, or with one flat element index"),
    (lambda ib, x: ib.buffer_ptr(x)[0.5, 1],
     r"buffer A: index 0.5 has dtype float32; indices must be integers"),
    (lambda ib, x: ib.buffer_ptr(np.zeros(3)),
     r"buffer_ptr: .* is not a buffer; pass ins\[k\] or outs\[k\] of the te.extern fcompute"),
    (lambda ib, x: ib.if_scope(te.const(1)).__enter__(),
     r"if_scope: the condition 1 has dtype int32; give a comparison"),
    (lambda ib, x: ib.else_scope().__enter__(),
     r"else_scope must follow an if_scope block directly"),
    (lambda ib, x: ib.scope_attr(te.thread_axis("threadIdx.x"), "virtual_thread", 4),
     r"scope_attr: only \(te.thread_axis\(...\), 'thread_extent', n\) is supported"),
])
def test_builder_mistakes(mistake, message):
    from schedule.ir_builder import IRBuilderError
    A = te.placeholder((2, 3), name="A")

    def body(ins, outs):
        mistake(te.tir.ir_builder.create(), ins[0])
    with pytest.raises(IRBuilderError, match=message):
        te.extern((2, 3), [A], body, name="E")


def test_extern_buffer_itself_is_not_indexed():
    A = te.placeholder((3,), name="A")
    with pytest.raises(te.TEError, match=r"buffer A of an extern stage cannot be indexed "
                                          r"directly; index te.tir.ir_builder's "
                                          r"ib.buffer_ptr\(...\) of it"):
        te.extern((3,), [A], lambda ins, outs: ins[0][0], name="E")


def test_storage_sync_of_another_scope():
    with pytest.raises(ValueError, match=r"call_intrin\('tir.tvm_storage_sync'\): only the "
                                         r"'shared' scope is supported"):
        te.tir.call_intrin("int32", "tir.tvm_storage_sync", "global")


def test_flat_index_into_a_strided_input():
    """An input padded by storage_align is indexed one index per dimension; a flat index
    (TVM's pointer form) into it is refused at lowering."""
    from schedule.ir_builder import IRBuilderError
    n, m = 4, 6
    A = te.placeholder((n, m), name="A")

    def built(flat):
        def body(ins, outs):
            ib = te.tir.ir_builder.create()
            x, y = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
            with ib.for_range(0, n, name="i") as i:
                with ib.for_range(0, m, name="j") as j:
                    y[i, j] = (x[i * m + j] if flat else x[i, j]) + 1.0
            return ib.get()
        B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
        C = te.extern((n, m), [B], body, name="C")
        s = te.create_schedule(C.op)
        s[B].storage_align(B.op.axis[0], 8, 1)
        return te.build(s, [A, C])

    with pytest.raises(IRBuilderError, match=r"buffer B is strided \(storage_align\): index it "
                                             r"with one index per dimension"):
        built(flat=True)
    a, c = np.arange(n * m, dtype="float32").reshape(n, m), np.zeros((n, m), "float32")
    built(flat=False)(a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)

"""te.tir.ir_builder: te.extern stages written as loop IR; numpy reference = interpreter =
compiled code (CPU). The GPU form (threads bound with scope_attr, shared scratch, a barrier)
is gpu_cases.ir_builder_extern, run on the simulator and compiled to PTX with the other cases."""
import numpy as np

import te
from schedule.interp import run

RNG = np.random.default_rng(5)


def _check(s, args, arrays, expect):
    outs = [a.copy() for a in arrays]
    te.build(s, args)(*outs)
    np.testing.assert_allclose(outs[-1], expect, rtol=1e-5)
    ref = [a.copy() for a in arrays]
    run(te.lower(s, args), *ref)
    np.testing.assert_allclose(ref[-1], expect, rtol=1e-5)


def test_row_cumsum_with_symbolic_shape_feeds_a_compute():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")

    def cumsum(x, y):
        ib = te.tir.ir_builder.create()
        xp, yp = ib.buffer_ptr(x), ib.buffer_ptr(y)
        with ib.for_range(0, n, name="i", kind="parallel") as i:
            yp[i, 0] = xp[i, 0]
            with ib.for_range(1, m, name="j") as j:
                yp[i, j] = yp[i, j - 1] + xp[i, j]
        return ib.get()

    C = te.extern((n, m), [A], lambda ins, outs: cumsum(ins[0], outs[0]), name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * 2.0, name="D")
    s = te.create_schedule(D.op)
    text = str(te.lower(s, [A, D]))
    assert "for i in parallel(n):" in text and "for j in range(m - 1):" in text
    a = RNG.random((5, 7), dtype="float32")
    _check(s, [A, D], [a, np.zeros_like(a)], np.cumsum(a, 1) * 2)


def test_flat_index_let_allocate_if_else_and_unrolled_vector_loops():
    A = te.placeholder((4, 6), name="A")

    def body(x, y):
        ib = te.tir.ir_builder.create()
        xp, yp = ib.buffer_ptr(x), ib.buffer_ptr(y)
        tmp = ib.allocate("float32", (1,), name="tmp", scope="local")
        with ib.for_range(0, 4, name="i", kind="unroll") as i:
            with ib.for_range(0, 6, name="j", kind="vectorize") as j:
                yp[i, j] = 0.0
        with ib.for_range(0, 24, name="k") as k:           # the pointer form: one flat index
            t = ib.let("t", xp[k] * 3.0)
            with ib.if_scope(t > 1.5):
                tmp[0] = t
            with ib.else_scope():
                tmp[0] = -t
            yp[k] = yp[k] + tmp[0]
        return ib.get()

    E = te.extern((4, 6), [A], lambda ins, outs: body(ins[0], outs[0]), name="E")
    a = RNG.random((4, 6), dtype="float32")
    _check(te.create_schedule(E.op), [A, E], [a, np.full_like(a, 9)],
           np.where(a * 3 > 1.5, a * 3, -a * 3))


def test_loop_from_a_nonzero_start_and_two_outputs():
    A = te.placeholder((10,), name="A")

    def body(ins, outs):
        ib = te.tir.ir_builder.create()
        x, lo, hi = (ib.buffer_ptr(b) for b in (ins[0], outs[0], outs[1]))
        with ib.for_range(0, 10, name="i") as i:
            lo[i] = te.min(x[i], 0.5)
            hi[i] = 0
        with ib.for_range(3, 10, name="i") as i:
            hi[i] = i
        return ib.get()

    lo, hi = te.extern([(10,), (10,)], [A], body, name="S", dtype=["float32", "int32"])
    s = te.create_schedule(lo.op)
    a = RNG.random(10, dtype="float32")
    x, y = np.zeros(10, "float32"), np.zeros(10, "int32")
    te.build(s, [A, lo, hi])(a, x, y)
    np.testing.assert_array_equal(x, np.minimum(a, 0.5))
    np.testing.assert_array_equal(y, np.where(np.arange(10) >= 3, np.arange(10), 0))


def test_flat_index_into_an_allocated_scratch_buffer():
    A = te.placeholder((2, 4), name="A")

    def body(ins, outs):
        ib = te.tir.ir_builder.create()
        x, y = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        tmp = ib.allocate("float32", (2, 4), name="tmp")
        with ib.for_range(0, 8, name="k") as k:
            tmp[k] = x[k] * 2.0
        with ib.for_range(0, 2, name="i") as i:
            with ib.for_range(0, 4, name="j") as j:
                y[i, j] = tmp[i, j] + 1.0
        return ib.get()

    E = te.extern((2, 4), [A], body, name="E")
    a = np.arange(8, dtype="float32").reshape(2, 4)
    _check(te.create_schedule(E.op), [A, E], [a, np.zeros_like(a)], a * 2 + 1)

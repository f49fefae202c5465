"""A tensor intrinsic called inside te.compute (TVM's TensorComputeOp): built and run against
numpy, with split / reorder, cache_read / cache_write, compute_at, a reduction over the call
(reduce_reset / reduce_update) and scalar inputs."""
import numpy as np
import pytest

import te
from test_tensorize import GEMV_IR, intrin_gemv

RNG = np.random.default_rng(11)


def intrin_vadd(n, scope=""):
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute((n,), lambda i: x[i] + y[i], name="z")
    binds = {}
    if scope:
        binds = {t: te.tir.decl_buffer(t.shape, t.dtype, name="W" + t.name, scope=scope,
                                       offset_factor=1) for t in (x, y, z)}

    def f(ins, outs):
        lanes = f"float32x{n}"
        return outs[0].vstore(0, ins[0].vload(0, lanes) + ins[1].vload(0, lanes))
    return te.decl_tensor_intrin(z.op, f, binds=binds,
                                 default_buffer_params={"offset_factor": 1})


def _run(s, args, shapes_in, shape_out, init=0.0):
    f = te.build(s, args)
    ins = [RNG.random(sh, dtype="float32") for sh in shapes_in]
    out = np.full(shape_out, init, "float32")
    f(*ins, out)
    return ins, out


def test_vadd_rows_split_and_reordered():
    n, rows = 16, 12
    A = te.placeholder((rows, n), name="A")
    B = te.placeholder((rows, n), name="B")
    C = te.compute((rows, n), lambda i: intrin_vadd(n)(A[i, 0:n], B[i, 0:n]), name="C")
    assert C.shape[1].value == n and len(C.op.axis) == 2
    s = te.create_schedule(C.op)
    assert len(s[C].leaf_iter_vars) == 1           # the intrinsic's dimension is no loop
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[C].parallel(io)
    (a, b), c = _run(s, [A, B, C], [(rows, n)] * 2, (rows, n))
    np.testing.assert_allclose(c, a + b)


def test_vadd_non_dividing_split_is_guarded():
    n, rows = 8, 10
    A = te.placeholder((rows, n), name="A")
    B = te.placeholder((rows, n), name="B")
    C = te.compute((rows, n), lambda i: intrin_vadd(n)(A[i, 0:n], B[i, 0:n]), name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    assert "if " in str(te.lower(s, [A, B, C]))
    (a, b), c = _run(s, [A, B, C], [(rows, n)] * 2, (rows, n))
    np.testing.assert_allclose(c, a + b)


def test_vadd_cache_read_write_and_compute_at():
    n, rows = 16, 6
    A = te.placeholder((rows, n), name="A")
    B = te.placeholder((rows, n), name="B")
    Bi = te.compute((rows, n), lambda i, j: B[i, j] + 5, name="Bi")
    C = te.compute((rows, n), lambda i: intrin_vadd(n, "local")(A[i, 0:n], Bi[i, 0:n]),
                   name="C")
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", C)
    BL = s.cache_read(Bi, "local", C)
    CL = s.cache_write(C, "local")
    s[CL].compute_at(s[C], C.op.axis[0])
    for t in (AL, BL, Bi):
        s[t].compute_at(s[CL], s[CL].leaf_iter_vars[0])
    bounds = te.schedule.InferBound(s)
    assert bounds[Bi.op.axis[0]].extent.value == 1 and bounds[Bi.op.axis[1]].extent.value == n
    (a, b), c = _run(s, [A, B, C], [(rows, n)] * 2, (rows, n))
    np.testing.assert_allclose(c, a + b + 5)


def test_gemv_call_with_reduce_axis():
    """C[i, j*16:(j+1)*16] = sum_k B-block . A-block through gemv_update / gemv_reset: the
    reset before the k loop, the update inside it (TVM's init / update split)."""
    M, N, L, f, lf = 4, 32, 48, 16, 16
    A = te.placeholder((M, L), name="A")
    B = te.placeholder((N, L), name="B")
    k = te.reduce_axis((0, L // lf), name="k")
    gemv = intrin_gemv(f, lf)
    C = te.compute((M, N // f, f), lambda i, j: gemv(A[i, k * lf:(k + 1) * lf],
                                                     B[j * f:(j + 1) * f, k * lf:(k + 1) * lf],
                                                     reduce_axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].pragma(C.op.axis[0], "import_llvm", GEMV_IR)
    text = str(te.lower(s, [A, B, C]))
    assert text.index("extern('gemv_reset'") < text.index("for k in") < \
        text.index("extern('gemv_update'")
    (a, b), c = _run(s, [A, B, C], [(M, L), (N, L)], (M, N // f, f), init=7.0)
    np.testing.assert_allclose(c.reshape(M, N), a @ b.T, rtol=1e-5)


def test_scalar_inputs_bound_to_scalar_params():
    n = 8
    x = te.placeholder((n,), name="x")
    v, w = te.var("v", "float32"), te.var("w", "float32")
    z = te.compute((n,), lambda i: x[i] * v + w, name="z")

    def f(ins, outs, sp):
        lanes = f"float32x{n}"
        return outs[0].vstore(0, ins[0].vload(0, lanes) * sp[0] + sp[1])
    intrin = te.decl_tensor_intrin(z.op, f, scalar_params=[v, w],
                                   default_buffer_params={"offset_factor": 1})
    A = te.placeholder((3, n), name="A")
    C = te.compute((3, n), lambda i: intrin(te.const(2.0) + i.astype("float32"), A[i, 0:n],
                                            te.const(-1.0)), name="C")
    s = te.create_schedule(C.op)
    (a,), c = _run(s, [A, C], [(3, n)], (3, n))
    np.testing.assert_allclose(c, a * (2.0 + np.arange(3)[:, None]) - 1.0, rtol=1e-6)


def test_region_larger_than_the_buffer_is_refused():
    n = 8
    A = te.placeholder((4, 2 * n), name="A")
    B = te.placeholder((4, 2 * n), name="B")
    C = te.compute((4, n), lambda i: intrin_vadd(n)(A[i, 0:2 * n], B[i, 0:n]), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(te.ScheduleError, match="shape 0 8, but the region of A has 16"):
        te.lower(s, [A, B, C])


def test_inlining_a_producer_of_the_call_is_refused():
    n = 8
    A = te.placeholder((4, n), name="A")
    A2 = te.compute((4, n), lambda i, j: A[i, j] * 2, name="A2")
    C = te.compute((4, n), lambda i: intrin_vadd(n)(A2[i, 0:n], A[i, 0:n]), name="C")
    s = te.create_schedule(C.op)
    s[A2].compute_inline()
    with pytest.raises(te.ScheduleError, match="cannot be inlined, nor can the stages it"):
        te.lower(s, [A, C])

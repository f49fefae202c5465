"""tensorize on the GPU (numba's simulator, tiny sizes): the tutorial's gemv intrinsic calls a
registered numba device function per thread (reset before the outer reduction loop, update in
it); an ir_builder body of scalar vload / vstore; vectors refused."""
import numpy as np
import pytest
from numba import cuda

import te
from codegen_cuda.emit import CudaCodegenError
from codegen_cuda.emit_calls import register_extern

RNG = np.random.default_rng(7)


def gemv_update(cc, cc_off, aa, aa_off, bb, bb_off, m, l, stride):
    for i in range(m):
        acc = cc[cc_off + i]
        for j in range(l):
            acc += aa[aa_off + j] * bb[bb_off + i * stride + j]
        cc[cc_off + i] = acc
    return 0


def gemv_reset(cc, cc_off, m):
    for i in range(m):
        cc[cc_off + i] = 0.0
    return 0


register_extern("tw_test_gemv_update", cuda.jit(device=True)(gemv_update), override=True)
register_extern("tw_test_gemv_reset", cuda.jit(device=True)(gemv_reset), override=True)


def gemm(N, M, L):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


def intrin_gemv(m, l):
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Bb = te.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1,
                            strides=[te.var("s1"), 1])

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]
        update = te.tir.call_extern("int32", "tw_test_gemv_update", cc.access_ptr("w"),
                                    aa.access_ptr("r"), bb.access_ptr("r"), m, l,
                                    bb.strides[0])
        reset = te.tir.call_extern("int32", "tw_test_gemv_reset", cc.access_ptr("w"), m)
        return update, reset, update
    return te.decl_tensor_intrin(c.op, intrin_func, binds={b: Bb},
                                 default_buffer_params={"offset_factor": 1})


def _run(f, shapes_in, out_shape):
    dev = te.cuda(0)
    arrays = [RNG.random(s, dtype="float32") for s in shapes_in]
    out = te.nd.array(np.full(out_shape, 7.0, "float32"), dev)
    f(*[te.nd.array(a, dev) for a in arrays], out)
    return arrays, out.numpy()


def test_gemv_device_function_reset_update():
    N, M, L = 4, 32, 16
    A, B, C = gemm(N, M, L)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=8)
    zo, zi = s[C].split(z, factor=8)
    s[C].reorder(x, yo, zo, yi, zi)
    s[C].bind(x, te.thread_axis("blockIdx.x"))
    s[C].bind(yo, te.thread_axis("threadIdx.x"))
    s[C].tensorize(yi, intrin_gemv(8, 8))
    f = te.build(s, [A, B, C], target="cuda")
    src = f.get_source()
    assert "tw_extern_tw_test_gemv_reset(C, " in src and "for k_outer in range(2):" in src
    (a, b), c = _run(f, [(N, L), (M, L)], (N, M))
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)


def _scale_intrin(n, lanes=1):
    a = te.placeholder((n,), name="a")
    c = te.compute((n,), lambda i: a[i] * 3.0, name="c")

    def intrin_func(ins, outs):
        ib = te.tir.ir_builder.create()
        with ib.for_range(0, n // lanes, name="t") as t:
            vec = "float32" if lanes == 1 else f"float32x{lanes}"
            ib.emit(outs[0].vstore(t * lanes, ins[0].vload(t * lanes, vec) * 3.0))
        return ib.get()
    return te.decl_tensor_intrin(c.op, intrin_func, default_buffer_params={"offset_factor": 1})


def test_ir_builder_body_of_scalar_vload_vstore():
    A = te.placeholder((6, 16), name="A")
    C = te.compute((6, 16), lambda i, j: A[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(jo, te.thread_axis("threadIdx.x"))
    s[C].tensorize(ji, _scale_intrin(4))
    f = te.build(s, [A, C], target="cuda")
    (a,), c = _run(f, [(6, 16)], (6, 16))
    np.testing.assert_allclose(c, a * 3.0, rtol=1e-6)


def test_vector_vload_has_no_numba_form():
    A = te.placeholder((2, 8), name="A")
    C = te.compute((2, 8), lambda i, j: A[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    s[C].tensorize(C.op.axis[1], _scale_intrin(8, lanes=4))
    with pytest.raises(CudaCodegenError, match="numba has no vector values"):
        te.build(s, [A, C], target="cuda")


def test_unregistered_device_function():
    A = te.placeholder((2, 8), name="A")
    C = te.compute((2, 8), lambda i, j: A[i, j] * 3.0, name="C")
    a = te.placeholder((8,), name="a")
    c = te.compute((8,), lambda i: a[i] * 3.0, name="c")
    intrin = te.decl_tensor_intrin(
        c.op, lambda ins, outs: te.tir.call_extern("int32", "tw_not_registered",
                                                   outs[0].access_ptr("w")),
        default_buffer_params={"offset_factor": 1})
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    s[C].tensorize(C.op.axis[1], intrin)
    with pytest.raises(CudaCodegenError, match="no device function is registered under that "
                       "name; register one with codegen_cuda.emit_calls.register_extern"):
        te.build(s, [A, C], target="cuda")


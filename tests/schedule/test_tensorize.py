"""s[C].tensorize: TVM's tensorize tutorial (gemv through call_extern of LLVM IR imported with
pragma "import_llvm"), the reduce reset / update forms, vload / vstore bodies and regions of
intermediate buffers; every result against numpy."""
import numpy as np
import pytest

import te

RNG = np.random.default_rng(3)

# TVM's tutorial compiles this C with clang -emit-llvm; here the IR is written by hand:
#   int gemv_update(float *cc, float *aa, float *bb, int m, int l, int stride) {
#       for (int i = 0; i < m; ++i) for (int j = 0; j < l; ++j)
#           cc[i] += aa[j] * bb[i * stride + j];
#       return 0; }
#   int gemv_reset(float *cc, int m) { for (int i = 0; i < m; ++i) cc[i] = 0.0; return 0; }
GEMV_IR = r"""
define i32 @gemv_update(ptr %cc, ptr %aa, ptr %bb, i32 %m, i32 %l, i32 %stride) {
entry:
  br label %row
row:
  %i = phi i32 [0, %entry], [%i1, %rowend]
  %ci = getelementptr float, ptr %cc, i32 %i
  %c0 = load float, ptr %ci
  %rowoff = mul i32 %i, %stride
  br label %col
col:
  %j = phi i32 [0, %row], [%j1, %col]
  %acc = phi float [%c0, %row], [%acc1, %col]
  %ap = getelementptr float, ptr %aa, i32 %j
  %a = load float, ptr %ap
  %bj = add i32 %rowoff, %j
  %bp = getelementptr float, ptr %bb, i32 %bj
  %b = load float, ptr %bp
  %p = fmul float %a, %b
  %acc1 = fadd float %acc, %p
  %j1 = add i32 %j, 1
  %jc = icmp slt i32 %j1, %l
  br i1 %jc, label %col, label %rowend
rowend:
  store float %acc1, ptr %ci
  %i1 = add i32 %i, 1
  %ic = icmp slt i32 %i1, %m
  br i1 %ic, label %row, label %done
done:
  ret i32 0
}

define i32 @gemv_reset(ptr %cc, i32 %m) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %p = getelementptr float, ptr %cc, i32 %i
  store float 0.0, ptr %p
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %m
  br i1 %c, label %loop, label %done
done:
  ret i32 0
}
"""


def gemm(N, M, L):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


def intrin_gemv(m, l, reset=True, update=True):
    """The tutorial's intrinsic: c[i] = sum_k a[k] * b[i, k] by gemv_update / gemv_reset."""
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Ab = te.tir.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
    Bb = te.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1,
                            strides=[te.var("s1"), 1])
    Cb = te.tir.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]

        def _update():
            ib = te.tir.ir_builder.create()
            ib.emit(te.tir.call_extern("int32", "gemv_update", cc.access_ptr("w"),
                                       aa.access_ptr("r"), bb.access_ptr("r"), m, l,
                                       bb.strides[0]))
            return ib.get()

        def _reset():
            ib = te.tir.ir_builder.create()
            ib.emit(te.tir.call_extern("int32", "gemv_reset", cc.access_ptr("w"), m))
            return ib.get()
        if not reset and not update:
            return _update()                    # the tutorial's first intrinsic
        return _update(), _reset() if reset else None, _update() if update else None
    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb})


def test_tutorial_gemv_whole_reduction():
    """The tutorial's first schedule: the whole reduction inside the tensorized loop, C
    zeroed by the caller (gemv_update accumulates), as TVM's tutorial does."""
    N, M, L = 16, 32, 24
    A, B, C = gemm(N, M, L)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=16)
    s[C].reorder(x, yo, yi, z)
    s[C].tensorize(yi, intrin_gemv(16, L, reset=False, update=False))
    s[C].pragma(x, "import_llvm", GEMV_IR)
    text = str(te.lower(s, [A, B, C]))
    # the strides of B's region (L) and the offsets of the regions are bound
    assert "call_extern('gemv_update'" in text and ", 16, 24, 24)" in text
    assert "j_inner" not in text and "for k" not in text
    f = te.build(s, [A, B, C])
    assert "declare i32 @gemv_update" not in f.get_source("ll")      # linked into the module
    a = RNG.random((N, L), dtype="float32")
    b = RNG.random((M, L), dtype="float32")
    c = np.zeros((N, M), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)


def test_tutorial_gemv_reduce_reset_update():
    """The tutorial's second schedule: k split, its outer loop outside the tensorized nest;
    gemv_reset runs before it, gemv_update in it (C starts as garbage)."""
    N, M, L = 8, 32, 48
    A, B, C = gemm(N, M, L)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=16)
    zo, zi = s[C].split(z, factor=16)
    s[C].reorder(x, yo, zo, yi, zi)
    s[C].tensorize(yi, intrin_gemv(16, 16))
    s[C].pragma(yo, "import_llvm", GEMV_IR)
    text = str(te.lower(s, [A, B, C]))
    reset, loop, update = (text.index("call_extern('gemv_reset'"), text.index("for k_outer"),
                           text.index("call_extern('gemv_update'"))
    assert reset < loop < update
    f = te.build(s, [A, B, C])
    a = RNG.random((N, L), dtype="float32")
    b = RNG.random((M, L), dtype="float32")
    c = np.full((N, M), 7.0, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)


def test_update_without_reset_runs_body_first():
    """No reduce_reset: the body (here reset + update) on the first iteration of the outer
    reduction loop, reduce_update on the others (TVM's TransformUpdate)."""
    N, M, L = 4, 16, 32
    A, B, C = gemm(N, M, L)
    a_ = te.placeholder((8,), name="a")
    b_ = te.placeholder((16, 8), name="b")
    k = te.reduce_axis((0, 8), name="k")
    c_ = te.compute((16,), lambda i: te.sum(a_[k] * b_[i, k], axis=k), name="c")
    Bb = te.tir.decl_buffer(b_.shape, b_.dtype, name="B", offset_factor=1,
                            strides=[te.var("s1"), 1])

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]
        update = te.tir.call_extern("int32", "gemv_update", cc.access_ptr("w"),
                                    aa.access_ptr("r"), bb.access_ptr("r"), 16, 8,
                                    bb.strides[0])
        ib = te.tir.ir_builder.create()
        ib.emit(te.tir.call_extern("int32", "gemv_reset", cc.access_ptr("w"), 16))
        ib.emit(update)
        return ib.get(), None, update
    intrin = te.decl_tensor_intrin(c_.op, intrin_func, binds={b_: Bb},
                                   default_buffer_params={"offset_factor": 1})
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    zo, zi = s[C].split(z, factor=8)
    s[C].reorder(x, zo, y, zi)
    s[C].tensorize(y, intrin)
    s[C].pragma(x, "import_llvm", GEMV_IR)
    text = str(te.lower(s, [A, B, C]))
    assert "if k_outer == 0:" in text
    f = te.build(s, [A, B, C])
    a = RNG.random((N, L), dtype="float32")
    b = RNG.random((M, L), dtype="float32")
    c = np.full((N, M), -3.0, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)


def _vadd_intrin(lanes):
    a = te.placeholder((lanes,), name="a")
    b = te.placeholder((lanes,), name="b")
    c = te.compute((lanes,), lambda i: a[i] + b[i], name="c")

    def intrin_func(ins, outs):
        vec = f"float32x{lanes}"
        return outs[0].vstore(0, ins[0].vload(0, vec) + ins[1].vload(0, vec))
    return te.decl_tensor_intrin(c.op, intrin_func, name="vadd",
                                 default_buffer_params={"offset_factor": 1})


def test_vload_vstore_elementwise_regions():
    """An elementwise intrinsic on vectors, its regions at offsets of 2-d tensors."""
    A = te.placeholder((6, 32), name="A")
    B = te.placeholder((6, 32), name="B")
    C = te.compute((6, 32), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, _vadd_intrin(8))
    f = te.build(s, [A, B, C])
    assert "<8 x float>" in f.get_source("ll")
    a, b = RNG.random((6, 32), dtype="float32"), RNG.random((6, 32), dtype="float32")
    c = np.empty((6, 32), "float32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_region_of_an_attached_intermediate():
    """The tensorized stage writes a buffer that holds one row (computed at its consumer's
    row loop): the region's offsets are relative to that buffer."""
    A = te.placeholder((5, 16), name="A")
    B = te.placeholder((5, 16), name="B")
    C = te.compute((5, 16), lambda i, j: A[i, j] + B[i, j], name="C")
    D = te.compute((5, 16), lambda i, j: C[i, j] * 2.0, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, _vadd_intrin(8))
    text = str(te.lower(s, [A, B, D]))
    assert "tw_vstore(C[j_outer * 8]" in text.replace("C[j_outer * 8 + 0]", "C[j_outer * 8]")
    f = te.build(s, [A, B, D])
    a, b = RNG.random((5, 16), dtype="float32"), RNG.random((5, 16), dtype="float32")
    d = np.empty((5, 16), "float32")
    f(a, b, d)
    np.testing.assert_allclose(d, (a + b) * 2, rtol=1e-6)


def test_axes_renamed_and_leading_dims_outside():
    """The intrinsic's axes match the stage's trailing axes whatever their names; a leading
    axis wholly outside the nest (here i) indexes the region's leading dimension."""
    A = te.placeholder((3, 4, 16), name="A")
    B = te.placeholder((3, 4, 16), name="B")
    C = te.compute((3, 4, 16), lambda p, q, r: A[p, q, r] + B[p, q, r], name="C")
    s = te.create_schedule(C.op)
    s[C].tensorize(C.op.axis[2], _vadd_intrin(16))
    f = te.build(s, [A, B, C])
    a, b = RNG.random((3, 4, 16), dtype="float32"), RNG.random((3, 4, 16), dtype="float32")
    c = np.empty((3, 4, 16), "float32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_libc_extern_call():
    """call_extern reaches a C symbol of the process: memset zeroes each row's region."""
    A = te.placeholder((4, 8), dtype="int32", name="A")
    C = te.compute((4, 8), lambda i, j: A[i, j] * 0, name="C")
    a_ = te.placeholder((8,), dtype="int32", name="a")
    c_ = te.compute((8,), lambda i: a_[i] * 0, name="c")

    def intrin_func(ins, outs):
        return te.tir.call_extern("handle", "memset", outs[0].access_ptr("w"), 0,
                                  te.const(32, "int64"))
    zero = te.decl_tensor_intrin(c_.op, intrin_func, default_buffer_params={"offset_factor": 1})
    s = te.create_schedule(C.op)
    s[C].tensorize(C.op.axis[1], zero)
    f = te.build(s, [A, C])
    c = np.full((4, 8), 5, "int32")
    f(np.ones((4, 8), "int32"), c)
    np.testing.assert_array_equal(c, np.zeros((4, 8), "int32"))


def test_same_import_twice_is_one_definition():
    """Importing the same IR in two builds defines its functions once."""
    for _ in range(2):
        test_tutorial_gemv_whole_reduction()


def _scale_rows_intrin(rows, cols, shift=0):
    """c[r, t] = a[r, t] * 2 by an ir_builder loop nest on buffer_ptr views of strided
    buffers (TVM's ib.buffer_ptr(ins[0]) form)."""
    a = te.placeholder((rows, cols), name="a")
    c = te.compute((rows, cols), lambda r, t: a[r, t] * 2.0, name="c")
    Ab = te.tir.decl_buffer(a.shape, a.dtype, name="Ab", offset_factor=1,
                            strides=[te.var("sa"), 1])
    Cb = te.tir.decl_buffer(c.shape, c.dtype, name="Cb", offset_factor=1,
                            strides=[te.var("sc"), 1])

    def intrin_func(ins, outs):
        ib = te.tir.ir_builder.create()
        ap, cp = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, rows, name="r") as r:
            with ib.for_range(0, cols, name="t") as t:
                cp[r, t + shift] = ap[r, t] * 2.0
        return ib.get()
    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, c: Cb})


def test_ir_builder_buffer_ptr_body_on_strided_regions():
    A = te.placeholder((8, 32), name="A")
    C = te.compute((8, 32), lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 8)
    s[C].tensorize(ii, _scale_rows_intrin(4, 8))
    f = te.build(s, [A, C])
    a = RNG.random((8, 32), dtype="float32")
    c = np.empty((8, 32), "float32")
    f(a, c)
    np.testing.assert_array_equal(c, a * 2)


def test_ir_builder_store_past_the_region_is_refused():
    A = te.placeholder((8, 32), name="A")
    C = te.compute((8, 32), lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 8)
    s[C].tensorize(ii, _scale_rows_intrin(4, 8, shift=1))
    with pytest.raises(te.ScheduleError, match=r"Cb\[r, t \+ 1\] is element .* outside the "
                       "region"):
        te.lower(s, [A, C])


LOAD_AND_RUN = """
import numpy as np, te
f = te.runtime.load_module({path!r})
a = np.random.rand(8, 48).astype("float32")
b = np.random.rand(32, 48).astype("float32")
c = np.full((8, 32), 7.0, "float32")
f(a, b, c)
np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)
print("ok")
"""


def test_exported_library_carries_the_imported_ir(tmp_path):
    """The imported LLVM IR is linked into the module: the exported library runs in a
    process that never imported it."""
    import os
    import subprocess
    import sys
    A, B, C = gemm(8, 32, 48)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=16)
    zo, zi = s[C].split(z, factor=16)
    s[C].reorder(x, yo, zo, yi, zi)
    s[C].tensorize(yi, intrin_gemv(16, 16))
    s[C].pragma(x, "import_llvm", GEMV_IR)
    path = str(tmp_path / "gemv.so")
    te.build(s, [A, B, C]).export_library(path)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", LOAD_AND_RUN.format(path=path)], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "ok"

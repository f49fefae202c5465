"""Mistakes with tensorize and tensor intrinsics: each a clear error naming the stage, the axis,
the buffer or the function, and what to do (never a crash of the process)."""
import pytest

import te
from codegen_llvm import CodegenError
from te import TEError


def gemm(N=8, M=32, L=16):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


def gemv_intrin(m, l, strides=True, offset_factor=1, update=True, body=None):
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c") \
        if body is None else te.compute((m,), lambda i: body(a, b, i, k), name="c")
    Bb = te.tir.decl_buffer(b.shape, b.dtype, name="Bb", offset_factor=offset_factor,
                            strides=[te.var("s1"), 1] if strides else None)

    def intrin_func(ins, outs):
        call = te.tir.call_extern("int32", "gemv_update", outs[0].access_ptr("w"),
                                  ins[0].access_ptr("r"), ins[1].access_ptr("r"), m, l,
                                  ins[1].strides[0])
        return (call, None, call) if update else call
    return te.decl_tensor_intrin(c.op, intrin_func, binds={b: Bb},
                                 default_buffer_params={"offset_factor": offset_factor})


def tensorized(intrin, factor=16, split_k=None):
    A, B, C = gemm()
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=factor)
    if split_k:
        zo, zi = s[C].split(z, factor=split_k)
        s[C].reorder(x, yo, zo, yi, zi)
    else:
        s[C].reorder(x, yo, yi, z)
    s[C].tensorize(yi, intrin)
    return s, [A, B, C]


def test_body_that_differs_names_both_sides():
    intrin = gemv_intrin(16, 16, body=lambda a, b, i, k: te.sum(a[k] + b[i, k], axis=k))
    s, args = tensorized(intrin)
    with pytest.raises(te.ScheduleError, match=r"stage C, axis j_inner .*does not match.*"
                       r"a\[k\] \+ b\[i, k\]"):
        te.lower(s, args)


def test_extent_that_differs():
    s, args = tensorized(gemv_intrin(16, 16), factor=8)
    with pytest.raises(te.ScheduleError, match="axis j covers 8 values inside the tensorized "
                       "nest, but the intrinsic's data axis i has 16"):
        te.lower(s, args)


def test_split_that_does_not_divide():
    A = te.placeholder((4, 16), name="A")
    B = te.placeholder((40, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((4, 40), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    yo, yi = s[C].split(C.op.axis[1], factor=16)
    s[C].tensorize(yi, gemv_intrin(16, 16))
    with pytest.raises(te.ScheduleError, match="does not divide its axis"):
        te.lower(s, [A, B, C])


def test_compact_buffer_on_a_strided_region():
    """The intrinsic's b is 16 x 8 and compact, but B's rows are 16 long."""
    s, args = tensorized(gemv_intrin(16, 8, strides=False), split_k=8)
    with pytest.raises(te.ScheduleError, match="buffer Bb is compact .* stride 16 in "
                       "dimension 0 .*declare strides="):
        te.lower(s, args)


def test_zero_elem_offset_without_offset_factor():
    s, args = tensorized(gemv_intrin(16, 16, offset_factor=0))
    with pytest.raises(te.ScheduleError, match="declares elem_offset 0.*offset_factor=1"):
        te.lower(s, args)


def test_reduction_split_outside_needs_update():
    s, args = tensorized(gemv_intrin(16, 8, update=False), split_k=8)
    with pytest.raises(te.ScheduleError, match="needs reduce_update"):
        te.lower(s, args)


def test_axis_split_inside_the_nest():
    A = te.placeholder((4, 16), name="A")
    B = te.placeholder((4, 16), name="B")
    C = te.compute((4, 16), lambda i, j: A[i, j] + B[i, j], name="C")
    a = te.placeholder((16,), name="a")
    b = te.placeholder((16,), name="b")
    c = te.compute((16,), lambda i: a[i] + b[i], name="c")
    vadd = te.decl_tensor_intrin(
        c.op, lambda ins, outs: outs[0].vstore(0, ins[0].vload(0, "float32x16") +
                                               ins[1].vload(0, "float32x16")),
        default_buffer_params={"offset_factor": 1})
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[C].tensorize(jo, vadd)             # two loops of j inside the nest
    with pytest.raises(te.ScheduleError, match="axis j is j_outer \\* 4 \\+ j_inner inside "
                       "the nest; each axis must be one leaf loop"):
        te.lower(s, [A, B, C])


def test_vload_past_the_region():
    A = te.placeholder((4, 16), name="A")
    C = te.compute((4, 16), lambda i, j: A[i, j] * 2.0, name="C")
    a = te.placeholder((8,), name="a")
    c = te.compute((8,), lambda i: a[i] * 2.0, name="c")
    bad = te.decl_tensor_intrin(
        c.op, lambda ins, outs: outs[0].vstore(0, ins[0].vload(0, "float32x16") * 2.0),
        default_buffer_params={"offset_factor": 1})
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, bad)
    with pytest.raises(te.ScheduleError, match="vload of buffer a touches elements .* outside "
                       "the region"):
        te.lower(s, [A, C])


def test_tensorize_needs_an_intrinsic_and_one_axis():
    A, B, C = gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(te.ScheduleError, match="expected a te.decl_tensor_intrin"):
        s[C].tensorize(C.op.axis[1], "gemv")
    intrin = gemv_intrin(32, 16)
    s[C].tensorize(C.op.axis[1], intrin)
    with pytest.raises(te.ScheduleError, match="already tensorized"):
        s[C].tensorize(C.op.axis[0], intrin)


def test_decl_tensor_intrin_misuse():
    a = te.placeholder((4,), name="a")
    c = te.compute((4,), lambda i: a[i] + 1.0, name="c")
    with pytest.raises(TEError, match="op must be the compute op"):
        te.decl_tensor_intrin(a.op, lambda ins, outs: None)
    with pytest.raises(TEError, match="buffer wrong has shape \\[8\\]"):
        te.decl_tensor_intrin(c.op, lambda ins, outs: None,
                              binds={a: te.tir.decl_buffer((8,), "float32", name="wrong")})
    with pytest.raises(TEError, match="returned 2 items"):
        te.decl_tensor_intrin(c.op, lambda ins, outs: (outs[0].vstore(0, 1.0),) * 2)
    with pytest.raises(TEError, match="vstore of buffer c: the value has dtype int32"):
        te.decl_tensor_intrin(c.op, lambda ins, outs: outs[0].vstore(0, te.const(1)))
    with pytest.raises(TypeError, match="number of signature arguments"):
        te.call_llvm_pure_intrin("int32", "llvm.ctpop.i32")
    with pytest.raises(TypeError, match="named as LLVM names it"):
        te.call_llvm_intrin("int32", "ctpop", te.const(1, "uint32"), 3)


def _one_call_intrin(call):
    A = te.placeholder((4, 8), dtype="int32", name="A")
    C = te.compute((4, 8), lambda i, j: A[i, j] + 1, name="C")
    a = te.placeholder((8,), dtype="int32", name="a")
    c = te.compute((8,), lambda i: a[i] + 1, name="c")
    intrin = te.decl_tensor_intrin(c.op, lambda ins, outs: call(ins[0], outs[0]),
                                   default_buffer_params={"offset_factor": 1})
    s = te.create_schedule(C.op)
    s[C].tensorize(C.op.axis[1], intrin)
    return s, [A, C]


def test_unknown_extern_symbol():
    s, args = _one_call_intrin(lambda a, c: te.tir.call_extern(
        "int32", "no_such_function_here", c.access_ptr("w"), a.access_ptr("r")))
    with pytest.raises(CodegenError, match="no function no_such_function_here is known.*"
                       "import_llvm"):
        te.build(s, args)


def test_llvm_intrinsic_with_a_wrong_signature_is_an_error_not_an_abort():
    """LLVM's parser asserts on this declaration (it upgrades vpdpbusd with casts): compiled
    alone in a child process first, it is a CodegenError here."""
    s, args = _one_call_intrin(lambda a, c: c.vstore(0, te.call_llvm_pure_intrin(
        "int32x8", "llvm.x86.avx512.vpdpbusd.512", te.const(3, "uint32"),
        a.vload(0, "int32x8"), a.vload(0, "int32x8"), a.vload(0, "int32x8"))))
    with pytest.raises(CodegenError, match="LLVM refuses intrinsic "
                       "llvm.x86.avx512.vpdpbusd.512 with signature"):
        te.build(s, args, target="llvm -mattr=+avx512f,+avx512vnni")


def test_unknown_llvm_intrinsic():
    s, args = _one_call_intrin(lambda a, c: c.vstore(0, te.call_llvm_pure_intrin(
        "int32x8", "llvm.x86.no.such.intrinsic", te.const(1, "uint32"),
        a.vload(0, "int32x8"))))
    with pytest.raises(CodegenError, match="LLVM refuses intrinsic llvm.x86.no.such.intrinsic"):
        te.build(s, args)


def test_import_llvm_of_invalid_ir():
    s, args = _one_call_intrin(lambda a, c: te.tir.call_extern(
        "int32", "tw_broken_fn", c.access_ptr("w")))
    s[args[1]].pragma(s[args[1]].op.axis[0], "import_llvm", "define i32 @tw_broken_fn( {")
    with pytest.raises(CodegenError, match="pragma import_llvm: LLVM refuses the imported IR"):
        te.build(s, args)


def _vadd(lanes, offset_factor=1):
    a = te.placeholder((lanes,), name="a")
    b = te.placeholder((lanes,), name="b")
    c = te.compute((lanes,), lambda i: a[i] + b[i], name="c")
    vec = f"float32x{lanes}"
    return te.decl_tensor_intrin(
        c.op, lambda ins, outs: outs[0].vstore(0, ins[0].vload(0, vec) + ins[1].vload(0, vec)),
        default_buffer_params={"offset_factor": offset_factor})


def test_region_offset_not_a_multiple_of_offset_factor():
    A = te.placeholder((3, 24), name="A")
    B = te.placeholder((3, 24), name="B")
    C = te.compute((3, 24), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, _vadd(8, offset_factor=16))
    with pytest.raises(te.ScheduleError, match="buffer a has offset_factor=16, but the region "
                       "of A starts at element i \\* 24 \\+ j_outer \\* 8"):
        te.lower(s, [A, B, C])


def test_storage_aligned_buffer_is_refused():
    A = te.placeholder((4, 16), name="A")
    B = te.placeholder((4, 16), name="B")
    C = te.compute((4, 16), lambda i, j: A[i, j] + B[i, j], name="C")
    D = te.compute((4, 16), lambda i, j: C[i, j] * 2.0, name="D")
    s = te.create_schedule(D.op)
    s[C].storage_align(C.op.axis[0], 32, 8)
    s[C].tensorize(C.op.axis[1], _vadd(16))
    with pytest.raises(te.ScheduleError, match="tensor C is padded by storage_align"):
        te.lower(s, [A, B, D])


def test_parallel_inside_or_vectorize_around_the_nest():
    for what in ("parallel", "vectorize"):
        A = te.placeholder((4, 16), name="A")
        B = te.placeholder((4, 16), name="B")
        C = te.compute((4, 16), lambda i, j: A[i, j] + B[i, j], name="C")
        s = te.create_schedule(C.op)
        jo, ji = s[C].split(C.op.axis[1], factor=8)
        s[C].tensorize(ji, _vadd(8))
        if what == "parallel":
            s[C].parallel(ji)
        else:
            s[C].vectorize(C.op.axis[0])
        where = "inside" if what == "parallel" else "around"
        with pytest.raises(te.ScheduleError, match=f"{where} the tensorized nest is"):
            te.lower(s, [A, B, C])


IMPORTED = r"""
define i32 @tw_test_fill(ptr %p, i32 %n) {
entry:
  ret i32 0
}
"""


def test_extern_call_whose_types_differ_from_the_imported_ir():
    s, args = _one_call_intrin(lambda a, c: te.tir.call_extern(
        "int32", "tw_test_fill", c.access_ptr("w"), te.const(8, "int64")))
    s[args[1]].pragma(s[args[1]].op.axis[0], "import_llvm", IMPORTED)
    with pytest.raises(CodegenError, match="passes i32 \\(ptr, i64\\), but the imported LLVM "
                       "IR defines tw_test_fill as i32 \\(ptr, i32\\)"):
        te.build(s, args)

"""GPU misuses: each raises an error that names the stage, buffer, kernel or argument at fault
and says what to do instead. Kernels that do run, run on numba's CUDA simulator."""
import numpy as np
import pytest

import te
from codegen_cuda import CudaCodegenError
from codegen_llvm import ArgumentError, CodegenError
from te import ScheduleError


def _scale(n=256):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    return A, B


def _bind_split(s, T, factor):
    bx, tx = s[T].split(T.op.axis[0], factor=factor)
    s[T].bind(bx, te.thread_axis("blockIdx.x"))
    s[T].bind(tx, te.thread_axis("threadIdx.x"))


def test_stage_without_thread_binding():
    A, B = _scale()
    s = te.create_schedule(B.op)
    with pytest.raises(CudaCodegenError, match=r"the loop nest that computes B has no loop bound "
                                               r"to a GPU thread; bind its loops.*"
                                               r"te\.thread_axis\('threadIdx\.x'\)"):
        te.build(s, [A, B], target="cuda")


def test_intermediate_stage_without_thread_binding():
    A, B = _scale()
    C = te.compute((256,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    _bind_split(s, C, 64)
    with pytest.raises(CudaCodegenError, match=r"the loop nest that computes B has no loop bound "
                                               r"to a GPU thread; bind its loops"):
        te.build(s, [A, C], target="cuda")


def test_block_over_1024_threads():
    A, B = _scale(4096)
    s = te.create_schedule(B.op)
    _bind_split(s, B, 2048)
    with pytest.raises(CudaCodegenError, match=r"kernel \w+ \(computes B\) launches 2048 threads "
                                               r"per block .* over CUDA's limit of 1024; use "
                                               r"smaller thread splits"):
        te.build(s, [A, B], target="cuda")


def test_block_over_1024_threads_in_two_dimensions():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.y"))
    s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))
    with pytest.raises(CudaCodegenError, match=r"\(computes B\) launches 4096 threads per block "
                                               r"\(threadIdx extents \['64', '64', '1'\]\)"):
        te.build(s, [A, B], target="cuda")


def _refused_at_launch(tag, size, message):
    """A kernel whose loop over ``n`` elements is bound to ``tag`` builds; called with ``size``
    elements it raises ``message`` before launching, and leaves its output alone."""
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis(tag))
    f = te.build(s, [A, B], target="cuda")
    out = np.full(size, 7.0, "float32")
    with pytest.raises(ArgumentError, match=message):
        f(np.zeros(size, "float32"), out)
    assert np.all(out == 7.0), "a failed launch wrote to its output"


def test_symbolic_thread_extent_over_1024_at_call_time():
    _refused_at_launch("threadIdx.x", 2048,
                       r"for these shapes, kernel \w+ would launch 2048 threads per block "
                       r"\(threadIdx extents \['2048', '1', '1'\]\), over CUDA's limit of 1024; "
                       r"use smaller thread splits")


def test_launch_dimension_over_its_own_limit_at_build_time():
    """threadIdx.z is limited to 64, whatever the total."""
    A, B = _scale(128)
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.z"))
    with pytest.raises(CudaCodegenError, match=r"launches 128 along threadIdx\.z, over CUDA's "
                                               r"limit of 64; split the axis bound to "
                                               r"threadIdx\.z"):
        te.build(s, [A, B], target="cuda")


def test_launch_dimension_over_its_own_limit_at_call_time():
    """blockIdx.y is limited to 65535, whatever the total."""
    _refused_at_launch("blockIdx.y", 70000,
                       r"for these shapes, kernel \w+ would launch 70000 along blockIdx\.y, over "
                       r"CUDA's limit of 65535; split the axis bound to blockIdx\.y and bind the "
                       r"parts to two indices \(or bind it to blockIdx\.x\)")


def test_reduction_axis_bound_to_a_block_index():
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis((0, 6), "k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=r"bind on stage B: k is a reduction axis and cannot "
                                            r"be bound to blockIdx\.x: blocks cannot combine "
                                            r"their partial results"):
        s[B].bind(k, te.thread_axis("blockIdx.x"))
    assert s[B].iter_attrs.get(k) is None or s[B].iter_attrs[k].bind is None


def _shared_tile(rows, cols=256, n=None):
    """B = 2 * A, with a (rows x 64) tile of A staged in shared memory by each block."""
    shape = (n if n is not None else rows, cols)
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    i, j = B.op.axis
    bx, tx = s[B].split(j, factor=64)
    s[B].reorder(bx, tx, i)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], bx)
    _, inner = s[AS].split(s[AS].fuse(*s[AS].op.axis), factor=64)
    s[AS].bind(inner, te.thread_axis("threadIdx.x"))
    return s, [A, B]


def test_shared_memory_within_the_limit_builds():
    s, args = _shared_tile(rows=64)                  # 64 x 64 floats: 16 KB
    mod = te.build(s, args, target="cuda")
    assert [k.shared_bytes for k in mod.kernels] == [64 * 64 * 4]
    a = np.random.default_rng(0).random((64, 256), dtype=np.float32)
    b = np.empty_like(a)
    mod(a, b)
    np.testing.assert_allclose(b, a * 2)


def test_shared_memory_over_48kb():
    s, args = _shared_tile(rows=256)                 # 256 x 64 floats: 64 KB
    with pytest.raises(CudaCodegenError, match=r"kernel \w+ \(computes A\.shared, B\) uses 65536 "
                                               r"bytes of shared memory \(A\.shared 65536 "
                                               r"bytes\), over the 48 KB limit; use smaller "
                                               r"tiles"):
        te.build(s, args, target="cuda")


def test_shared_buffer_with_symbolic_size():
    s, args = _shared_tile(rows=None, cols=64, n=te.var("n"))
    with pytest.raises(CudaCodegenError, match=r"buffer A\.shared inside a GPU kernel has the "
                                               r"non-constant size n \* 64; use constant split "
                                               r"factors"):
        te.build(s, args, target="cuda")


def test_thread_tag_bound_to_two_axes_of_one_stage():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    s[B].bind(i, te.thread_axis("threadIdx.x"))
    with pytest.raises(ScheduleError, match=r"bind on stage B: threadIdx\.x is already bound to "
                                            r"axis i; bind each thread index to one axis per "
                                            r"stage \(fuse the axes first\)"):
        s[B].bind(j, te.thread_axis("threadIdx.x"))
    assert s[B].iter_attrs.get(j) is None or s[B].iter_attrs[j].bind is None


def test_thread_bound_schedule_built_for_llvm():
    A, B = _scale()
    s = te.create_schedule(B.op)
    _bind_split(s, B, 64)
    with pytest.raises(CodegenError, match=r"loop i_outer is bound to blockIdx\.x, a GPU thread "
                                           r"index; build with target='cuda' or remove the "
                                           r"bind"):
        te.build(s, [A, B], target="llvm")


@pytest.mark.parametrize("position, a_dtype, b_dtype", [("A", "float64", "float32"),
                                                        ("B", "float32", "int32")])
def test_numpy_argument_of_wrong_dtype(position, a_dtype, b_dtype):
    A, B = _scale()
    s = te.create_schedule(B.op)
    _bind_split(s, B, 64)
    f = te.build(s, [A, B], target="cuda")
    out = np.full(256, 7, b_dtype)
    expected = a_dtype if position == "A" else b_dtype
    with pytest.raises(ArgumentError, match=rf"argument {position}: expected dtype float32, got "
                                            rf"{expected} \(convert with \.astype\('float32'\)\)"):
        f(np.zeros(256, a_dtype), out)
    assert np.all(out == 7), "a failed call wrote to its output"

"""Bound inference as TVM's: a stage at the root computes what its readers read (not its whole
domain, unless it is an argument), a local stage attached outside a reader's thread loop gets
one thread's region, warp memory spans the lanes of threadIdx.x; results against numpy."""
import numpy as np
import pytest

import te


def test_root_stage_computes_only_what_is_read():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2, name="B")
    C = te.compute((5,), lambda i: B[i + 3] + 1, name="C")
    s = te.create_schedule(C.op)
    assert te.schedule.InferBound(s)[B.op.axis[0]].extent.value == 5
    text = str(te.lower(s, [A, C]))
    assert 'allocate([5], "float32"' in text
    f = te.build(s, [A, C])
    a = np.arange(10, dtype="float32")
    c = np.zeros(5, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a[3:8] * 2 + 1)


def test_root_stage_passed_as_an_argument_is_stored_whole():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2, name="B")
    C = te.compute((5,), lambda i: B[i + 3] + 1, name="C")
    s = te.create_schedule(C.op)
    f = te.build(s, [A, B, C])
    a = np.arange(10, dtype="float32")
    b, c = np.zeros(10, "float32"), np.zeros(5, "float32")
    f(a, b, c)
    np.testing.assert_allclose(b, a * 2)
    np.testing.assert_allclose(c, a[3:8] * 2 + 1)


def test_root_region_of_two_readers_is_their_union():
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 8), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((4, 8), lambda i, j: B[i + 2, j] * B[i + 9, 7 - j], name="C")
    s = te.create_schedule(C.op)
    bounds = te.schedule.InferBound(s)
    assert bounds[B.op.axis[0]].extent.value == 11       # rows 2..12
    assert bounds[B.op.axis[1]].extent.value == 8
    f = te.build(s, [A, C])
    a = np.random.default_rng(0).random((16, 8), dtype="float32")
    c = np.zeros((4, 8), "float32")
    f(a, c)
    b = a + 1
    np.testing.assert_allclose(c, b[2:6] * b[9:13, ::-1], rtol=1e-6)


def _local_at_thread_loop(own_bind):
    A = te.placeholder((64,), name="A")
    A1 = te.compute((64,), lambda i: A[i] * 3, name="A1")
    A2 = te.compute((64,), lambda i: A1[i] + 2, name="A2")
    A3 = te.compute((64,), lambda i: A2[i] + 1, name="A3")
    s = te.create_schedule(A3.op)
    s[A2].set_scope("shared")
    s[A1].set_scope("local")
    tx = te.thread_axis("threadIdx.x")
    bx, t = s[A3].split(A3.op.axis[0], factor=32)
    s[A3].bind(bx, te.thread_axis("blockIdx.x"))
    s[A3].bind(t, tx)
    s[A2].compute_at(s[A3], t)
    _, xi = s[A2].split(A2.op.axis[0], nparts=1)
    s[A2].bind(xi, tx)
    s[A1].compute_at(s[A3], t)
    if own_bind:
        _, ai = s[A1].split(A1.op.axis[0], factor=32)
        s[A1].bind(ai, tx)
    return s, (A, A1, A3)


def test_local_stage_gets_one_threads_region():
    s, (A, A1, A3) = _local_at_thread_loop(own_bind=False)
    assert te.schedule.InferBound(s)[A1.op.axis[0]].extent.value == 1
    text = str(te.lower(s, [A, A3], target="cuda"))
    assert 'allocate([1], "float32", "local")' in text


def test_local_stage_bound_to_the_same_thread_index_keeps_the_shared_region():
    # its own loop over threadIdx.x computes a part of the region on each thread: the region
    # must be the one all threads share
    s, (A, A1, A3) = _local_at_thread_loop(own_bind=True)
    assert te.schedule.InferBound(s)[A1.op.axis[0]].extent.value == 32


def test_local_stage_outside_the_thread_loops_keeps_the_shared_region():
    # attached at the block loop, no loop around it is bound to threadIdx.x: the region is
    # that of every thread of the block (computed by each thread, correct)
    A = te.placeholder((64,), name="A")
    A1 = te.compute((64,), lambda i: A[i] * 3, name="A1")
    A2 = te.compute((64,), lambda i: A1[i] + 1, name="A2")
    s = te.create_schedule(A2.op)
    s[A1].set_scope("local")
    bx, t = s[A2].split(A2.op.axis[0], factor=32)
    s[A2].bind(bx, te.thread_axis("blockIdx.x"))
    s[A2].bind(t, te.thread_axis("threadIdx.x"))
    s[A1].compute_at(s[A2], bx)
    assert te.schedule.InferBound(s)[A1.op.axis[0]].extent.value == 32
    assert 'allocate([32], "float32", "local")' in str(te.lower(s, [A, A2], target="cuda"))


def test_warp_memory_spans_the_lanes_of_threadidx_x():
    A = te.placeholder((64, 4), name="A")
    A1 = te.compute((64, 4), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((64, 4), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    s[A1].set_scope("warp")
    xo, xi = s[A2].split(A2.op.axis[0], 32)
    xi0, xi1 = s[A2].split(xi, factor=16)
    s[A2].bind(xi1, te.thread_axis("threadIdx.x"))
    s[A2].bind(xi0, te.thread_axis("threadIdx.y"))
    s[A1].compute_at(s[A2], A2.op.axis[1])
    bounds = te.schedule.InferBound(s)
    assert bounds[A1.op.axis[0]].extent.value == 16     # threadIdx.x relaxed, .y not
    assert bounds[A1.op.axis[1]].extent.value == 1
    with pytest.raises(te.ScheduleError, match="scope 'warp'"):
        te.lower(s, [A, A2], target="cuda")

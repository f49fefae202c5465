"""Schedule primitives record relations and leaf orders; lowering prints the expected nest."""
import numpy as np

import te
from te.testing import verify_schedule


def _ew(shape=(16, 12)):
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda i, j: A[i, j] * 2, name="B")
    return A, B


def names(stage):
    return [iv.var.name for iv in stage.leaf_iter_vars]


def test_split_tile_fuse_reorder_leaf_order():
    A, B = _ew()
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 3)
    assert names(s[B]) == ["i_outer", "j_outer", "i_inner", "j_inner"]
    f = s[B].fuse(xi, yi)
    assert names(s[B]) == ["i_outer", "j_outer", "i_inner_j_inner_fused"]
    s[B].reorder(f, xo)
    assert names(s[B]) == ["i_inner_j_inner_fused", "j_outer", "i_outer"]
    a = np.random.rand(16, 12).astype("float32")
    verify_schedule(s, [A, B], [a], [np.empty((16, 12), "float32")], lambda a: a * 2)


def test_nparts_split_extent():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], nparts=3)
    text = str(te.lower(s, [A, B]))
    # 3 parts of 4: two full ones without a guard (loop partitioning), then a guarded tail
    assert "for i_outer in range(2):" in text and "for i_inner in range(4):" in text
    assert "if i_inner + 8 < 10:" in text
    a = np.random.rand(10).astype("float32")
    verify_schedule(s, [A, B], [a], [np.empty(10, "float32")], lambda a: a + 1)


def test_lowered_text_of_tiled_gemm_is_stable():
    M = 64
    k = te.reduce_axis((0, M), "k")
    A = te.placeholder((M, M), name="A")
    B = te.placeholder((M, M), name="B")
    C = te.compute((M, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    s[C].reorder(io, jo, k, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    expected = """\
def mm(A: float32[64, 64], B: float32[64, 64], C: float32[64, 64]):
    for i_outer in parallel(2):
        for j_outer in range(2):
            for i_inner_init in range(32):
                C[ramp(i_outer * 2048 + i_inner_init * 64 + j_outer * 32, 1, 32)] = broadcast(0.0, 32)
            for k in range(64):
                for i_inner in range(32):
                    C[ramp(i_outer * 2048 + i_inner * 64 + j_outer * 32, 1, 32)] = C[ramp(i_outer * 2048 + i_inner * 64 + j_outer * 32, 1, 32)] + broadcast(A[i_outer * 2048 + i_inner * 64 + k], 32) * B[ramp(k * 64 + j_outer * 32, 1, 32)]"""
    assert str(te.lower(s, [A, B, C], name="mm")) == expected


def test_compute_at_region_and_inline():
    m = 10
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1, name="B")
    C = te.compute((m,), lambda i: B[i] * 2, name="C")
    D = te.compute((m,), lambda i: C[i] - 3, name="D")
    s = te.create_schedule(D.op)
    xo, xi = s[D].split(D.op.axis[0], factor=4)
    s[C].compute_at(s[D], xo)
    s[B].compute_inline()
    text = str(te.lower(s, [A, D]))
    assert 'C = allocate([4], "float32", "global")' in text and "B" not in text.split("\n", 1)[1]
    a = np.random.rand(m).astype("float32")
    verify_schedule(s, [A, D], [a], [np.empty(m, "float32")], lambda a: (a + 1) * 2 - 3)


def test_compute_at_stencil_region_grows():
    n = 20
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n + 2,), lambda i: A[i] * 3, name="B")
    C = te.compute((n,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], xo)
    assert 'B = allocate([10], "float32", "global")' in str(te.lower(s, [A, C]))
    a = np.random.rand(n + 2).astype("float32")
    verify_schedule(s, [A, C], [a], [np.empty(n, "float32")],
                    lambda a: 3 * (a[:-2] + a[1:-1] + a[2:]), rtol=1e-5)


def test_rfactor_and_cache_read_write():
    n, m = 6, 40
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=16)
    BF = s.rfactor(B, ki)
    assert BF.shape[0].value == 16 and len(s[B].op.reduce_axis) == 1
    a = np.random.rand(n, m).astype("float32")
    verify_schedule(s, [A, B], [a], [np.empty(n, "float32")], lambda a: a.sum(1), rtol=1e-5)
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    BL = s.cache_write(B, "local")
    s[AA].compute_at(s[BL], s[BL].op.reduce_axis[0])
    verify_schedule(s, [A, B], [a], [np.empty(n, "float32")], lambda a: a.sum(1), rtol=1e-5)


def test_storage_align_and_pragma():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].storage_align(B.op.axis[0], 16, 1)
    s[C].pragma(C.op.axis[0], "auto_unroll_max_step", 16)
    text = str(te.lower(s, [A, C]))
    assert "strides=[17, 1]" in text and "# pragma auto_unroll_max_step = 16" in text
    a = np.random.rand(8, 8).astype("float32")
    verify_schedule(s, [A, C], [a], [np.empty((8, 8), "float32")], lambda a: (a + 1) * 2)


def test_split_tail_shift_keeps_whole_vectors():
    """tail="shift": the last piece starts factor values before the end (no guard, no scalar
    tail); values in the overlap are computed twice, with the same result."""
    A, B = _ew((5, 28))
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[1], factor=16, tail="shift")
    s[B].vectorize(xi)
    text = str(te.lower(s, [A, B]))
    assert "min(j_outer * 16, 12)" in text and "if " not in text and "scalarized" not in text
    a = np.random.rand(5, 28).astype("float32")
    verify_schedule(s, [A, B], [a], [np.empty((5, 28), "float32")], lambda a: a * 2)


def test_split_tail_shift_of_a_reduction_stage_and_a_consumer_region():
    """A shifted data axis of a reduction recomputes whole outputs (init and all); a stage
    computed at a shifted loop gets the region the shifted piece reads."""
    k = te.reduce_axis((0, 6), name="k")
    A = te.placeholder((10, 6), name="A")
    B = te.compute((10,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((10,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    co, _ = s[C].split(C.op.axis[0], factor=4, tail="shift")
    s[B].compute_at(s[C], co)
    s[B].split(B.op.axis[0], factor=3, tail="shift")
    a = np.random.rand(10, 6).astype("float32")
    verify_schedule(s, [A, C], [a], [np.empty(10, "float32")], lambda a: a.sum(1) + 1,
                    rtol=1e-5)


def test_double_buffer_is_recorded_and_cpu_builds_ignore_it():
    """double_buffer marks the stage's allocation (shown by te.lower); only GPU lowering acts
    on it, so the CPU build and the interpreter compute the same values as without it."""
    A = te.placeholder((6, 40), name="A")
    k = te.reduce_axis((0, 40), "k")
    B = te.compute((6,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    ko, ki = s[B].split(k, factor=8)
    s[AA].compute_at(s[B], ko)
    s[AA].double_buffer()
    assert s[AA].double_buffered
    assert '"local", double_buffer)' in str(te.lower(s, [A, B]))
    a = np.random.rand(6, 40).astype("float32")
    verify_schedule(s, [A, B], [a], [np.empty(6, "float32")], lambda a: 2 * a.sum(1),
                    rtol=1e-5)


def test_store_predicate_on_a_reduction_axis_guards_the_update_only():
    """As in TVM: the init runs before the reduction loops, unguarded; with k == 0 only the
    first term is added (the rfactor form of the reduction tutorial keeps one partial)."""
    A = te.placeholder((5, 37), name="A")
    k = te.reduce_axis((0, 37), "k")
    B = te.compute((5,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].set_store_predicate(k.var.equal(0))
    a = np.random.default_rng(3).random((5, 37), dtype="float32")
    b = np.full(5, np.nan, "float32")
    te.build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, a[:, 0])
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=16)
    BF = s.rfactor(B, ki)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(s[B].op.reduce_axis[0].var.equal(0))
    b = np.full(5, np.nan, "float32")
    te.build(s, [A, B])(a, b)
    np.testing.assert_allclose(b, a[:, 0:37:16].sum(1), rtol=1e-6)


def test_cache_read_for_readers_that_read_each_other_in_any_order():
    """C reads A and B, B reads A: the schedule's output stays C whichever reader comes
    first (rewriting B rewrote C a second time)."""
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    C = te.compute((16,), lambda i: A[i] * B[i], name="C")
    a = np.arange(16, dtype="float32")
    for readers in ([B, C], [C, B]):
        s = te.create_schedule(C.op)
        s.cache_read(A, "local", readers)
        c = np.zeros(16, "float32")
        te.build(s, [A, C])(a, c)
        np.testing.assert_array_equal(c, a * (a + 1))


def test_cache_write_keeps_the_reduce_axes():
    """As TVM: the cache stage of a reduction reduces over the same axis objects, so the
    original k schedules it (s[CC].split(k, ...))."""
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    assert CC.op.reduce_axis[0] is k and not s[C].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, *s[CC].op.axis, ki)
    a, b = np.random.default_rng(1).random((2, 16, 16), dtype="float32")
    c = np.zeros((16, 16), "float32")
    te.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)

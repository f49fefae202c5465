"""The differential fuzzer's findings F4-F7 (tests/fuzz/KNOWN_FINDINGS.md): each minimal
reproducer and variations of it, against numpy, through the interpreter and the compiled code
(te.testing.verify_schedule), with the IR verifier on (tests/conftest.py sets TW_VERIFY=1)."""
import itertools

import numpy as np
import pytest

import te
from schedule.stage import ScheduleError
from te.testing import verify_schedule


# --------------------------------------------------------------------------- F6: tail='shift'
# on a data axis of a reduction: the shifted last piece recomputes outputs; it is right when
# they are initialized again before they are reduced again, and refused where they are not

def _row_sum(order, n=7, r=3, factor=2):
    A = te.placeholder((n, r), "int32", name="A")
    k = te.reduce_axis((0, r), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=factor, tail="shift")
    axes = {"k": k, "io": io, "ii": ii}
    s[B].reorder(*[axes[a] for a in order])
    return s, A, B


def test_f6_reproducer_refused_with_the_stage_and_axis():
    s, A, B = _row_sum(("k", "io", "ii"), r=2)
    with pytest.raises(ScheduleError) as err:
        te.build(s, [A, B])
    msg = str(err.value)
    assert "stage B" in msg and "axis i" in msg and "tail='shift'" in msg
    assert "twice" in msg and "tail='guard'" in msg


@pytest.mark.parametrize("order", list(itertools.permutations(("k", "io", "ii"))))
def test_f6_every_loop_order_is_right_or_refused(order):
    s, A, B = _row_sum(order)
    a = np.random.RandomState(0).randint(-9, 9, (7, 3)).astype("int32")
    refused = order.index("k") < min(order.index("io"), order.index("ii"))
    if refused:
        with pytest.raises(ScheduleError, match="tail='shift'"):
            te.build(s, [A, B])
    else:       # one piece is outside k: the recomputed outputs are initialized again
        verify_schedule(s, [A, B], [a], [np.zeros(7, "int32")], lambda a: a.sum(1))


def test_f6_shift_that_divides_the_axis_is_not_refused():
    # 8 values, factor 2: no piece is shifted, nothing is recomputed
    s, A, B = _row_sum(("k", "io", "ii"), n=8)
    a = np.arange(24, dtype="int32").reshape(8, 3)
    verify_schedule(s, [A, B], [a], [np.zeros(8, "int32")], lambda a: a.sum(1))


def test_f6_fused_pieces_inside_the_reduction_refused():
    # fusing the two pieces makes one loop over both: inside k, it recomputes and re-adds
    A = te.placeholder((5, 4), "float32", name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((5,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=3, tail="shift")
    s[B].reorder(k, io, ii)
    s[B].fuse(io, ii)
    # max is idempotent, but the rule does not look at the combiner: a sum would be wrong
    with pytest.raises(ScheduleError, match="axis i with tail='shift'"):
        te.build(s, [A, B])


def test_f6_nested_split_of_the_outer_piece():
    # i -> (io, ii) shifted; io -> (ioo, ioi); k between: ioi and ii vary inside k
    A = te.placeholder((11, 3), "int32", name="A")
    k = te.reduce_axis((0, 3), name="k")
    B = te.compute((11,), lambda i: te.sum(A[i, k], axis=k), name="B")
    a = np.random.RandomState(1).randint(0, 9, (11, 3)).astype("int32")
    for k_pos, refused in ((0, True), (1, True), (2, False)):
        s = te.create_schedule(B.op)
        io, ii = s[B].split(B.op.axis[0], factor=4, tail="shift")
        ioo, ioi = s[B].split(io, factor=2)
        order = [ioo, ioi, ii]
        order.insert(k_pos, k)
        s[B].reorder(*order)
        if refused:
            with pytest.raises(ScheduleError, match="tail='shift'"):
                te.build(s, [A, B])
        else:
            verify_schedule(s, [A, B], [a], [np.zeros(11, "int32")], lambda a: a.sum(1))


def test_f6_symbolic_extent_refused_at_build():
    # n is known only at call time: it may not be a multiple of the factor
    n = te.var("n")
    A = te.placeholder((n, 2), "int32", name="A")
    k = te.reduce_axis((0, 2), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=4, tail="shift")
    s[B].reorder(k, io, ii)
    with pytest.raises(ScheduleError, match="stage B, axis i"):
        te.build(s, [A, B])


def test_f6_shift_on_a_2d_reduction_with_the_other_axis_outside():
    # the shifted axis j, with k outside j's pieces but inside i: refused; k innermost: right
    A = te.placeholder((3, 5, 4), "float64", name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((3, 5), lambda i, j: te.sum(A[i, j, k] * 2, axis=k), name="B")
    a = np.random.RandomState(2).rand(3, 5, 4)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    jo, ji = s[B].split(j, factor=2, tail="shift")
    s[B].reorder(i, k, jo, ji)
    with pytest.raises(ScheduleError, match="axis j"):
        te.build(s, [A, B])
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    jo, ji = s[B].split(j, factor=2, tail="shift")
    s[B].vectorize(ji)
    verify_schedule(s, [A, B], [a], [np.zeros((3, 5))], lambda a: (a * 2).sum(2))


# --------------------------------------------------------------------------- F4: mixed
# int32/int64 index arithmetic where an int64 loop replaces int32 axes

def test_f4_fuse_with_an_int64_axis():
    n = te.var("n", "int64")
    A = te.placeholder((n, 19), "int64", name="A")
    B = te.compute((n, 16), lambda i, j: A[i, j + 2], name="B")
    s = te.create_schedule(B.op)
    s[B].fuse(*s[B].leaf_iter_vars)
    for rows in (0, 1, 5):
        a = np.arange(rows * 19).reshape(rows, 19)
        verify_schedule(s, [A, B], [a], [np.zeros((rows, 16), "int64")], lambda a: a[:, 2:18])


def test_f4_unroll_then_fuse_with_an_int64_axis():
    n = te.var("n", "int64")
    B = te.compute((9, n), lambda i, j: (i - 1).astype("float64") + j.astype("float64"),
                   name="B")
    s = te.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    s[B].fuse(B.op.axis[0], B.op.axis[1])
    ref = lambda: np.arange(-1, 8)[:, None] + np.arange(3)[None, :]
    verify_schedule(s, [B], [], [np.zeros((9, 3))], ref)


def test_f4_fused_int64_loop_split_and_unrolled():
    n = te.var("n", "int64")
    A = te.placeholder((n, 6), "float32", name="A")
    B = te.compute((n, 6), lambda i, j: A[i, j] * (j + 1).astype("float32") + i.astype(
        "float32"), name="B")
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    fo, fi = s[B].split(f, factor=4)
    s[B].unroll(fi)
    a = np.random.RandomState(3).rand(5, 6).astype("float32")
    verify_schedule(s, [A, B], [a], [np.zeros((5, 6), "float32")],
                    lambda a: a * np.arange(1, 7) + np.arange(5)[:, None])


def test_f4_compute_at_into_a_fused_int64_loop():
    n = te.var("n", "int64")
    A = te.placeholder((n, 8), "float32", name="A")
    P = te.compute((n, 8), lambda i, j: A[i, j] * 2 + (j - 3).astype("float32"), name="P")
    B = te.compute((n, 8), lambda i, j: P[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    fo, fi = s[B].split(f, factor=4)
    s[P].compute_at(s[B], fi)
    a = np.random.RandomState(4).rand(3, 8).astype("float32")
    verify_schedule(s, [A, B], [a], [np.zeros((3, 8), "float32")],
                    lambda a: a * 2 + np.arange(-3, 5) + 1)


def test_f4_region_minimum_in_a_wider_consumer_width():
    # P's int32 axis is placed at an int64 index of the consumer (r is int64)
    n = te.var("n", "int64")
    A = te.placeholder((16,), "float32", name="A")
    P = te.compute((16,), lambda i: A[i] * 2 + (i + 1).astype("float32"), name="P")
    B = te.compute((n, 16), lambda r, j: P[(r % 2) * 8 + j // 2] + r.astype("float32"),
                   name="B")
    s = te.create_schedule(B.op)
    s[P].compute_at(s[B], B.op.axis[1])
    a = np.arange(16, dtype="float32")

    def ref(a):
        r, j = np.arange(5)[:, None], np.arange(16)[None, :]
        return (a * 2 + np.arange(1, 17))[(r % 2) * 8 + j // 2] + r
    verify_schedule(s, [A, B], [a], [np.zeros((5, 16), "float32")], ref)


@pytest.mark.parametrize("inline", [False, True])
def test_f4_int64_index_into_an_inlined_int32_stage(inline):
    # P's int32 axis substituted by the consumer's int64 index (compute_inline), or P
    # computed at the consumer's inner loop
    n = te.var("n", "int64")
    A = te.placeholder((16,), "float32", name="A")
    P = te.compute((16,), lambda i: A[i] * 2 + (i + 1).astype("float32"), name="P")
    B = te.compute((n, 16), lambda r, j: P[(r % 2) * 8 + j // 2] - r.astype("float32"),
                   name="B")
    s = te.create_schedule(B.op)
    if inline:
        s[P].compute_inline()
    else:
        s[P].compute_at(s[B], s[B].fuse(*B.op.axis))
    a = np.random.RandomState(8).rand(16).astype("float32")

    def ref(a):
        r, j = np.arange(3)[:, None], np.arange(16)[None, :]
        return (a * 2 + np.arange(1, 17))[(r % 2) * 8 + j // 2] - r
    verify_schedule(s, [A, B], [a], [np.zeros((3, 16), "float32")], ref)


def test_f4_symbolic_int32_axis_fused_with_an_int64_axis():
    n, m = te.var("n", "int64"), te.var("m")
    A = te.placeholder((n, m + 1), "float32", name="A")
    B = te.compute((n, m), lambda i, j: A[i, j + 1] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].split(s[B].fuse(*B.op.axis), factor=4)
    for rows, cols in ((0, 3), (3, 0), (3, 5), (2, 1)):
        a = np.random.RandomState(9).rand(rows, cols + 1).astype("float32")
        verify_schedule(s, [A, B], [a], [np.zeros((rows, cols), "float32")],
                        lambda a: a[:, 1:] * 2)


def test_f4_rfactor_of_an_int64_reduction():
    # CI seed 70's class: the rfactor stage's init loop mixed k_inner_v * 2 widths
    n = te.var("n", "int64")
    A = te.placeholder((n, 12), "int32", name="A")
    k = te.reduce_axis((0, 12), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=2)
    BF = s.rfactor(B, ki)
    s[BF].fuse(*s[BF].leaf_iter_vars[:2])
    a = np.random.RandomState(5).randint(-5, 5, (4, 12)).astype("int32")
    verify_schedule(s, [A, B], [a], [np.zeros(4, "int32")], lambda a: a.sum(1))


# --------------------------------------------------------------------------- F5: an attached
# stage read through a data-dependent index covers the whole axis

def test_f5_cache_read_of_a_gathered_tensor():
    A = te.placeholder((8,), "int32", name="A")
    I = te.placeholder((8,), "int32", name="I")
    B = te.compute((8,), lambda i: A[I[i]], name="B")
    s = te.create_schedule(B.op)
    AR = s.cache_read(A, "global", [B])
    s[AR].compute_at(s[B], B.op.axis[0])
    a = np.arange(8, dtype="int32") * 3
    idx = np.array([7, 0, 3, 3, 1, 2, 6, 5], "int32")
    verify_schedule(s, [A, I, B], [a, idx], [np.zeros(8, "int32")], lambda a, i: a[i])


def test_f5_out_of_range_gather_through_the_cache_raises():
    A = te.placeholder((8,), "int32", name="A")
    I = te.placeholder((8,), "int32", name="I")
    B = te.compute((8,), lambda i: A[I[i]], name="B")
    s = te.create_schedule(B.op)
    AR = s.cache_read(A, "global", [B])
    s[AR].compute_at(s[B], B.op.axis[0])
    f = te.build(s, [A, I, B])
    with pytest.raises(IndexError):
        f(np.arange(8, dtype="int32"), np.array([0, 1, 8, 0, 0, 0, 0, 0], "int32"),
          np.zeros(8, "int32"))


def test_f5_gathered_rows_of_a_compute_stage_at_an_inner_loop():
    # P is gathered along dim 0 (whole axis) and read at j along dim 1 (one column)
    A = te.placeholder((6, 5), "float32", name="A")
    I = te.placeholder((4,), "int64", name="I")
    P = te.compute((6, 5), lambda r, c: A[r, c] * 2, name="P")
    B = te.compute((4, 5), lambda i, j: P[I[i], j] + 1, name="B")
    s = te.create_schedule(B.op)
    s[P].compute_at(s[B], B.op.axis[1])
    a = np.random.RandomState(6).rand(6, 5).astype("float32")
    idx = np.array([5, 0, 2, 2], "int64")
    verify_schedule(s, [A, I, B], [a, idx], [np.zeros((4, 5), "float32")],
                    lambda a, i: a[i] * 2 + 1)


def test_f5_nested_gather_through_a_cache():
    A = te.placeholder((8,), "float32", name="A")
    I = te.placeholder((8,), "int32", name="I")
    J = te.placeholder((8,), "int32", name="J")
    B = te.compute((8,), lambda i: A[I[J[i]]] - A[i], name="B")
    s = te.create_schedule(B.op)
    AR = s.cache_read(A, "global", [B])
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[AR].compute_at(s[B], ii)
    a = np.random.RandomState(7).rand(8).astype("float32")
    i_ = np.array([1, 3, 5, 7, 0, 2, 4, 6], "int32")
    j_ = np.array([7, 6, 5, 4, 3, 2, 1, 0], "int32")
    verify_schedule(s, [A, I, J, B], [a, i_, j_], [np.zeros(8, "float32")],
                    lambda a, i, j: a[i[j]] - a)


# --------------------------------------------------------------------------- F8 (first
# class): an attached stage's buffer index (consumer index - region minimum) simplified
# under the loop ranges as the minimum is, so that the two cancel

@pytest.mark.parametrize("rows", [1, 16, 37])
def test_f8_attached_point_region_read_through_a_modulo(rows):
    n = te.var("n")
    A = te.placeholder((16,), "float32", name="A")
    P = te.compute((16,), lambda i: A[i] * 2, name="P")
    B = te.compute((n,), lambda r: P[r % 16], name="B")
    s = te.create_schedule(B.op)
    ro, ri = s[B].split(B.op.axis[0], factor=4)
    s[P].compute_at(s[B], ri)
    a = np.random.RandomState(10).rand(16).astype("float32")
    verify_schedule(s, [A, B], [a], [np.zeros(rows, "float32")],
                    lambda a: a[np.arange(rows) % 16] * 2)


# --------------------------------------------------------------------------- F7: attached
# regions over loops of no iterations are empty, not negative

def _size0_pipeline(shape, align):
    A = te.placeholder(shape, "float32", name="A")
    C = te.compute(shape, lambda i, j: A[i, j] * 2, name="C")
    B = te.compute(shape, lambda i, j: C[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    if align:
        s[C].storage_align(C.op.axis[0], 16, 14)
    bo, bi = s[B].split(B.op.axis[0], factor=4)
    s[B].reorder(bi, bo)
    s[C].compute_at(s[B], bi)
    return s, A, B


@pytest.mark.parametrize("align", [False, True])
def test_f7_size0_pipeline_with_storage_align(align):
    s, A, B = _size0_pipeline((0, 3), align)
    assert "allocate([-" not in str(te.lower(s, [A, B]))
    verify_schedule(s, [A, B], [np.zeros((0, 3), "float32")], [np.zeros((0, 3), "float32")],
                    lambda a: a * 2 + 1)


@pytest.mark.parametrize("rows", [0, 1, 3, 9])
@pytest.mark.parametrize("align", [False, True])
def test_f7_symbolic_size_that_is_zero_at_call_time(rows, align):
    n = te.var("n")
    s, A, B = _size0_pipeline((n, 3), align)
    a = np.arange(rows * 3, dtype="float32").reshape(rows, 3)
    verify_schedule(s, [A, B], [a], [np.zeros((rows, 3), "float32")], lambda a: a * 2 + 1)


def test_f7_fuzz_seed_3765_unroll_and_fuse():
    # the fuzzer's case: C split by 4 and fused, B split by 4 with its inner piece unrolled
    # and outermost, C computed at it; every extent 0
    A = te.placeholder((0,), "float32", name="A")
    C = te.compute((0,), lambda i: A[i] + 1, name="C")
    B = te.compute((0,), lambda i: C[i] * 3, name="B")
    s = te.create_schedule(B.op)
    s[C].storage_align(C.op.axis[0], 16, 14)
    s[C].fuse(*s[C].split(C.op.axis[0], factor=4))
    bo, bi = s[B].split(B.op.axis[0], factor=4)
    s[B].unroll(bi)
    s[B].reorder(bi, bo)
    s[C].compute_at(s[B], bi)
    verify_schedule(s, [A, B], [np.zeros(0, "float32")], [np.zeros(0, "float32")],
                    lambda a: (a + 1) * 3)


# --------------------------------------------------------------------------- F10: false
# call-time refusals (a guard and an index simplified apart; a conjunct that may wrap voiding
# the others) and a tail='shift' split shorter than its factor caught late

def _nparts_in_a_fuse(rows):
    n1 = te.var("n1")
    k = te.reduce_axis((0, n1), name="k")
    C = te.compute((rows, 1, n1), lambda i0, i1, i2: te.sum(te.const(0.25, "float32"), axis=k),
                   name="C")
    B = te.compute((rows, 1, n1), lambda i0, i1, i2: C[i0, i1, i2] * 2, name="B")
    s = te.create_schedule(B.op)
    s[C].split(s[C].leaf_iter_vars[2], nparts=4)
    s[C].fuse(s[C].leaf_iter_vars[1], s[C].leaf_iter_vars[2])
    return s, B


@pytest.mark.parametrize("n1", [1, 2, 3, 5, 8, 13])
def test_f10_nparts_split_fused_with_a_unit_axis_is_not_refused(n1):
    # the guard's `fused % 4` was simplified to `fused` (fused < 4), the index's was not
    s, B = _nparts_in_a_fuse(3)
    verify_schedule(s, [B], [], [np.zeros((3, 1, n1), "float32")],
                    lambda: np.full((3, 1, n1), 0.25 * n1 * 2, "float32"))


def test_f10_nparts_split_fused_needs_no_call_time_condition():
    s, B = _nparts_in_a_fuse(3)
    pre = te.lower(s, [B]).preconditions
    assert not [p for p in pre if p.buffer == "C"], [p.access for p in pre]


@pytest.mark.parametrize("rows,n1", [(8, 16), (5, 1), (16, 7), (21, 4)])
def test_f10_rfactor_read_under_a_two_part_guard(rows, n1):
    # `i0_outer * 16 + i0 < n0 and k_outer_v_outer * (...) + k_outer_v_inner < (n1 + 1) // 2`:
    # the second conjunct's arithmetic is not proved to fit int32 (n1 may be negative), which
    # dropped the first conjunct's fact too
    n0, n1v = te.var("n0", "int64"), te.var("n1")
    A = te.placeholder((n0,), "int32", name="A")
    k = te.reduce_axis((0, n1v), name="k")
    C = te.compute((n0,), lambda i: te.sum(A[i] + k, axis=k), name="C")
    B = te.compute((n0,), lambda i: C[i] * 2, name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[C].split(C.op.reduce_axis[0], factor=2)
    s.rfactor(C, ko)
    s[C].split(s[C].leaf_iter_vars[1], nparts=3)
    s[C].parallel(s[C].leaf_iter_vars[0])
    bo, _ = s[B].split(B.op.axis[0], factor=16)
    s[C].compute_at(s[B], bo)
    a = np.arange(rows, dtype="int32")
    verify_schedule(s, [A, n1v, B], [a, n1], [np.zeros(rows, "int32")],
                    lambda a, n1: (2 * (a * n1 + n1 * (n1 - 1) // 2)).astype("int32"))


def test_f10_unknown_sign_coefficient_is_bounded_at_both_ends():
    from schedule import access_bounds as ab
    n = te.var("n")
    v = te.var("v")
    norm = ab.Normalizer()
    coef = norm((n + 1) // 2)               # may be negative: n is not a size
    b = ab.Bounder({v: (ab.const(0), ab.const(3))}, {n}, set())
    p = ab.mul(ab.atom(("var", v)), coef)
    hi, lo = b.bound(p, 1), b.bound(p, -1)
    assert hi is not None and lo is not None
    for nv in (-9, -1, 0, 1, 6):
        c = (nv + 1) // 2
        env = lambda x: repr(nv)            # noqa: E731
        assert eval(ab.py_source(hi, env), dict(ab.PY_HELPERS)) == max(0, 2 * c)
        assert eval(ab.py_source(lo, env), dict(ab.PY_HELPERS)) == min(0, 2 * c)


def _shifted_through_a_cache():
    n = te.var("n")
    A = te.placeholder((3, n), "float32", name="A")
    B = te.compute((3, n), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    s.cache_write(B, "local")
    s[B].fuse(s[B].leaf_iter_vars[0], s[B].leaf_iter_vars[1])
    s[B].split(s[B].leaf_iter_vars[0], factor=8, tail="shift")
    return s, A, B


@pytest.mark.parametrize("n", [2, 1])
def test_f10_shift_shorter_than_the_factor_refused_at_call_time(n):
    from codegen_llvm import ArgumentError
    from schedule.interp import run
    s, A, B = _shifted_through_a_cache()
    f = te.build(s, [A, B])
    a, b = np.ones((3, n), "float32"), np.zeros((3, n), "float32")
    with pytest.raises(ArgumentError) as err:
        f(a, b)
    msg = str(err.value)
    assert "stage B" in msg and "tail='shift'" in msg and "factor 8" in msg
    assert f"has {3 * n} values" in msg and f"n = {n}" in msg and "tail='guard'" in msg
    assert not b.any()                      # nothing ran
    with pytest.raises(ArgumentError):
        run(te.lower(s, [A, B]), a, b)


@pytest.mark.parametrize("n", [0, 3, 5])
def test_f10_shift_at_least_the_factor_or_empty_runs(n):
    s, A, B = _shifted_through_a_cache()
    a = np.random.RandomState(n).rand(3, n).astype("float32")
    verify_schedule(s, [A, B], [a], [np.zeros((3, n), "float32")], lambda a: a + 1)


def test_f10_a_conjunct_that_may_wrap_keeps_the_others_facts():
    # D[i] * 100000 may wrap int32 (its fact would lie), but i + 2 < n still bounds X[i + 2]:
    # a call-time proof, no refusal and no kernel check
    n = te.var("n")
    X = te.placeholder((n,), "int32", name="X")
    D = te.placeholder((n,), "int32", name="D")
    B = te.compute((n,), lambda i: te.if_then_else(
        te.all(i + 2 < n, D[i] * 100000 < 7), X[i + 2], 0), name="B")
    s = te.create_schedule(B.op)
    low = te.lower(s, [X, D, B])
    assert not [c for c in low.check_sites if c.buffer == "X"]
    x = np.arange(9, dtype="int32")
    d = np.array([0, 1, -5, 30000, 0, 0, 2, 0, 0], "int32")

    def ref(x, d):
        m = (np.arange(9) + 2 < 9) & ((d.astype(np.int64) * 100000).astype(np.int32) < 7)
        return np.where(m, np.roll(x, -2), 0).astype("int32")
    verify_schedule(s, [X, D, B], [x, d], [np.zeros(9, "int32")], ref)


# --------------------------------------------------------------------------- F11: 8- and
# 16-bit value arithmetic in a condition became a call-time "would wrap" refusal

@pytest.mark.parametrize("n", [0, 1, 4, 9])
def test_f11_int8_arithmetic_in_a_select_condition_wraps_as_numpy(n):
    m = te.var("m")
    A = te.placeholder((n, 8), "int8", name="A")
    B = te.compute((n, m), lambda i, j: te.select(
        (te.const(-36, "int8") * (j - 5).astype("int8")) > 0, A[i, j % 8], te.const(1, "int8")),
        name="B")
    s = te.create_schedule(B.op)
    s[B].fuse(B.op.axis[0], B.op.axis[1])
    a = np.random.RandomState(n).randint(-9, 9, (n, 8)).astype("int8")
    cols = 11

    def ref(a):
        j = np.arange(cols)
        c = (np.int8(-36) * (j - 5).astype(np.int8)).astype(np.int8) > 0
        return np.where(c[None, :], a[:, j % 8], np.int8(1)).astype("int8")
    with np.errstate(over="ignore"):
        verify_schedule(s, [A, B], [a], [np.zeros((n, cols), "int8")], ref)



# --------------------------------------------------------------------------- F14 (GPU
# subset): a size-0 stage attached inside a kernel made a size-0 cuda array, which numba's
# simulator cannot make

def test_f14_gpu_size0_stage_attached_in_a_kernel():
    C = te.compute((8, 5, 0), lambda i0, i1, i2: te.const(21, "uint8"), name="C")
    B = te.compute((8, 5, 0), lambda i0, i1, i2: te.max((i1 - 6).astype("float32"),
                                                        C[i0, i1, i2].astype("float32")),
                   name="B")
    s = te.create_schedule(B.op)
    B_c = s.cache_write(B, "local")
    s[C].compute_at(s[B_c], B_c.op.axis[1])
    s[B].bind(s[B].leaf_iter_vars[0], te.thread_axis("blockIdx.x"))
    s[B_c].compute_at(s[B], s[B].leaf_iter_vars[0])
    f = te.build(s, [B], target="cuda")
    b = np.zeros((8, 5, 0), "float32")
    f(b)
    assert b.shape == (8, 5, 0)


# --------------------------------------------------------------------------- F13: a data
# axis fused with a reduction axis (its loop initializes the outputs it covers): the init
# iterates the data pieces of the fused leaf, so that it runs also where the reduction is empty

def _row_max(n, rows=3, cols=10):
    """B[i, j] = max over k < n of A[i, k] * (j + 1): -inf where n is 0."""
    A = te.placeholder((rows, n), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((rows, cols), lambda i, j: te.max(A[i, k] * (j + 1).astype("float32"),
                                                     axis=k), name="B")
    return A, B, k


def _row_max_ref(cols):
    def ref(a):
        if a.shape[1] == 0:
            return np.full((a.shape[0], cols), -np.inf, "float32")
        return (a[:, :, None] * np.arange(1, cols + 1, dtype="float32")).max(axis=1)
    return ref


def _inputs(shape, seed=13):
    return [np.random.RandomState(seed).uniform(-3, 3, shape).astype("float32")]


def test_f13_reproducer_min_over_an_empty_axis_fused_with_a_data_axis():
    k = te.reduce_axis((0, 0), name="k")
    A = te.placeholder((3,), name="A")
    B = te.compute((3, 16), lambda i, j: te.min(A[i], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].split(s[B].leaf_iter_vars[0], factor=8)
    s[B].fuse(s[B].leaf_iter_vars[2], s[B].leaf_iter_vars[3])   # j with k
    assert "inf" in str(te.lower(s, [A, B]))                     # the init is there
    verify_schedule(s, [A, B], _inputs((3,)), [np.zeros((3, 16), "float32")],
                    lambda a: np.full((3, 16), np.inf, "float32"))


@pytest.mark.parametrize("n", [0, 5])
@pytest.mark.parametrize("order", ["jk", "kj", "ikj", "kij"])
def test_f13_symbolic_reduce_extent_fused_with_data_axes(order, n):
    m = te.var("m")
    A, B, k = _row_max(m)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    axes = {"i": i, "j": j, "k": k}
    s[B].reorder(*[axes[a] for a in (order if "i" in order else "i" + order)])
    s[B].fuse(*[axes[a] for a in order])
    verify_schedule(s, [A, B], _inputs((3, n)), [np.zeros((3, 10), "float32")],
                    _row_max_ref(10))


@pytest.mark.parametrize("n", [0, 4])
@pytest.mark.parametrize("outer_inside", [False, True])
def test_f13_split_data_axis_inner_piece_fused_with_the_reduction(n, outer_inside):
    """j (10) split by 4 (a guarded tail), ji fused with k: jo outside the reduction (its
    value fixed by its loop), or inside it, after the fused leaf."""
    A, B, k = _row_max(n)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    jo, ji = s[B].split(j, factor=4)
    if outer_inside:
        s[B].reorder(i, ji, k, jo)
    else:
        s[B].reorder(i, jo, ji, k)
    s[B].fuse(ji, k)
    verify_schedule(s, [A, B], _inputs((3, n)), [np.zeros((3, 10), "float32")],
                    _row_max_ref(10))


@pytest.mark.parametrize("n", [0, 3, 9])
def test_f13_split_of_the_fused_leaf(n):
    A, B, k = _row_max(n)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    f = s[B].fuse(j, k)
    fo, fi = s[B].split(f, factor=4)
    s[B].reorder(fo, i, fi)
    verify_schedule(s, [A, B], _inputs((3, n)), [np.zeros((3, 10), "float32")],
                    _row_max_ref(10))


@pytest.mark.parametrize("n", [0, 6])
def test_f13_rfactor_stages_with_a_data_axis_fused_into_the_reduction(n):
    m = te.var("m")
    A = te.placeholder((5, m), "float32", name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((5,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    BF = s.rfactor(B, ki)
    s[BF].fuse(s[BF].op.axis[1], s[BF].op.reduce_axis[0])     # i with ko in the factor stage
    s[B].fuse(B.op.axis[0], s[B].op.reduce_axis[0])           # i with ki in the final sum
    verify_schedule(s, [A, B], _inputs((5, n)), [np.zeros((5,), "float32")],
                    lambda a: a.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [0, 5])
@pytest.mark.parametrize("attached", [False, True])
def test_f13_cache_write_stage_with_a_data_axis_fused_into_the_reduction(n, attached):
    A, B, k = _row_max(n)
    s = te.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    if attached:
        s[BL].compute_at(s[B], B.op.axis[0])
    s[BL].fuse(BL.op.axis[1], BL.op.reduce_axis[0])
    verify_schedule(s, [A, B], _inputs((3, n)), [np.zeros((3, 10), "float32")],
                    _row_max_ref(10))


def test_f13_cross_thread_reduction_over_a_fused_data_axis_is_refused():
    A, B, k = _row_max(8)
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    f = s[B].fuse(j, k)
    s[B].bind(i, te.thread_axis("blockIdx.x"))
    s[B].bind(f, te.thread_axis("threadIdx.x"))
    with pytest.raises(ScheduleError, match="B.*j_k_fused fuses data-parallel axes"):
        te.lower(s, [A, B])


# --------------------------------------------------------------------------- F15: a false
# refusal: loops of one iteration left in an attached region's index (seed 204458):
# `(x + a + b) % 4 - (x + a) % 4` with b in range(1) is 0, the bound analysis took it as
# [-3, 3]

def test_f15_one_iteration_loops_in_an_attached_cache_index():
    n0 = te.var("n0")
    A0 = te.placeholder((4,), "float32", name="A0")
    A1 = te.placeholder((n0,), "float32", name="A1")
    B = te.compute((n0,), lambda i: A0[i % 4] + A1[i], name="B")
    s = te.create_schedule(B.op)
    A0_r = s.cache_read(A0, "global", [B])
    B_c = s.cache_write(B, "local")
    s[B].vectorize(s[B].leaf_iter_vars[0])
    s[B].split(s[B].leaf_iter_vars[0], nparts=3)
    s[A0_r].split(s[A0_r].leaf_iter_vars[0], factor=4)
    s[A0_r].unroll(s[A0_r].leaf_iter_vars[0])
    s[A0_r].split(s[A0_r].leaf_iter_vars[1], factor=3)
    s[B_c].split(s[B_c].leaf_iter_vars[0], nparts=3)
    s[B_c].split(s[B_c].leaf_iter_vars[1], factor=8)
    s[B_c].unroll(s[B_c].leaf_iter_vars[2])
    s[A0_r].compute_at(s[B_c], s[B_c].leaf_iter_vars[0])
    s[B_c].compute_at(s[B], s[B].leaf_iter_vars[1])
    for n in (1, 5, 9):
        a0 = np.arange(4, dtype="float32")
        a1 = np.ones(n, "float32")
        verify_schedule(s, [A0, A1, B], [a0, a1], [np.zeros(n, "float32")],
                        lambda a0, a1: a0[np.arange(len(a1)) % 4] + a1)


# --------------------------------------------------------------------------- F16 (the final
# run of session 10, seed 516782): fuse(i, k), split, fuse again: the init nest looped twice
# over the same data piece (reached through both halves of the split); lowering raised
# KeyError

@pytest.mark.parametrize("factor", [2, 16])
def test_f16_fused_split_fused_reduction_leaf(factor):
    A0 = te.placeholder((5, 4), "uint8", name="A0")
    k = te.reduce_axis((0, 1), name="k")
    B = te.compute((5,), lambda i0: te.max(A0[i0, k + 3], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].fuse(s[B].leaf_iter_vars[0], s[B].leaf_iter_vars[1])
    s[B].split(s[B].leaf_iter_vars[0], factor=factor)
    s[B].fuse(s[B].leaf_iter_vars[0], s[B].leaf_iter_vars[1])
    a = np.random.RandomState(factor).randint(0, 255, (5, 4)).astype("uint8")
    verify_schedule(s, [A0, B], [a], [np.zeros(5, "uint8")], lambda a: a[:, 3])

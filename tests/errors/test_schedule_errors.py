"""Illegal schedules: each raises ScheduleError naming the stage and axis and saying what to do
instead, and a primitive that fails records nothing (the stage is as it was before the call)."""
import numpy as np
import pytest

import te
from te import ScheduleError


def _gemm(n=16):
    k = te.reduce_axis((0, n), name="k")
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def _chain():
    """A -> B, C -> D; B and C are both read by D only."""
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: A[i] * 2.0, name="C")
    D = te.compute((16,), lambda i: B[i] + C[i], name="D")
    return A, B, C, D


def _snapshot(stage):
    return (list(stage.leaf_iter_vars), list(stage.all_iter_vars), list(stage.relations),
            {iv: (a.kind, a.bind) for iv, a in stage.iter_attrs.items()}, stage.attach_type)


# ----------------------------------------------------------------------------- split / tile

def test_split_of_an_axis_that_is_no_longer_a_leaf():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    i, _ = C.op.axis
    s[C].split(i, factor=4)
    with pytest.raises(ScheduleError, match=r"split on stage C: axis i is no longer a leaf.*"
                                            r"schedule the axes that split/fuse returned"):
        s[C].split(i, factor=2)


def test_split_factor_zero():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"split on stage C, axis j: factor must be a "
                                            r"positive integer, got 0"):
        s[C].split(C.op.axis[1], factor=0)


def test_split_float_factor():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"split on stage C, axis j: factor must be a "
                                            r"positive integer, got 2\.5"):
        s[C].split(C.op.axis[1], factor=2.5)


def test_split_with_both_factor_and_nparts():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"split on stage C, axis i: give exactly one of "
                                            r"factor= or nparts="):
        s[C].split(C.op.axis[0], factor=4, nparts=4)


def test_split_of_a_placeholder():
    A, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage A is a placeholder \(an input\)"):
        s[A].split(C.op.axis[0], factor=4)


def test_split_of_a_non_axis():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"split on stage C: expected an axis \(IterVar\).*"
                                            r"s\[T\]\.op\.axis"):
        s[C].split(0, factor=4)


def test_tile_of_one_axis_twice():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    i, _ = C.op.axis
    with pytest.raises(ScheduleError, match=r"tile on stage C: x and y are the same axis i; "
                                            r"tile two different axes"):
        s[C].tile(i, i, 4, 4)


# ----------------------------------------------------------------------------- reorder / fuse

def test_reorder_with_an_axis_of_another_stage():
    _, _, C = _gemm()
    _, _, C2 = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"reorder on stage C: axis j does not belong to "
                                            r"this stage; its axes are i, j, k"):
        s[C].reorder(C.op.axis[0], C2.op.axis[1])


def test_reorder_with_a_repeated_axis():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match=r"reorder on stage C: axis j is given twice; list "
                                            r"each axis once"):
        s[C].reorder(j, i, j)


def test_fuse_of_non_adjacent_axes():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    i, _ = C.op.axis
    (k,) = C.op.reduce_axis
    with pytest.raises(ScheduleError, match=r"fuse on stage C: axes i and k are not adjacent "
                                            r"in loop order.*reorder them next to each other"):
        s[C].fuse(i, k)


def test_cache_write_after_splitting_the_reduction():
    # TVM relays a cache out by the data-parallel axes only and refuses this too; a data axis
    # fused with a reduction axis is legal (tests/schedule/test_tvm_behaviours.py)
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    (k,) = C.op.reduce_axis
    s[C].split(k, factor=4)
    with pytest.raises(ScheduleError, match=r"cache_write on stage C: its reduction axis was "
                                            r"split or fused \(k_outer\).*call cache_write "
                                            r"first and split the reduction of the cache stage"):
        s.cache_write(C, "local")


# ----------------------------------------------------------------------------- loop kinds

def test_vectorize_of_a_reduce_axis():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    (k,) = C.op.reduce_axis
    with pytest.raises(ScheduleError, match=r"vectorize on stage C: k is a reduction axis.*"
                                            r"data-parallel axis.*rfactor the reduction first"):
        s[C].vectorize(k)


def test_parallel_of_a_reduce_axis_warns_and_runs_serially():
    # TVM accepts it (and races on the accumulator): accepted here, with a warning, serially
    A, B, C = _gemm()
    s = te.create_schedule(C.op)
    (k,) = C.op.reduce_axis
    with pytest.warns(UserWarning, match=r"parallel on stage C: k is a reduction axis.*runs "
                                         r"serially.*rfactor the reduction first"):
        s[C].parallel(k)
    assert "parallel" not in str(te.lower(s, [A, B, C]))
    f = te.build(s, [A, B, C])
    a = np.random.default_rng(0).random(A.shape, dtype=np.float32)
    b = np.random.default_rng(1).random(B.shape, dtype=np.float32)
    c = np.empty(C.shape, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@pytest.mark.parametrize("primitive", ["vectorize", "unroll"])
def test_vectorize_or_unroll_of_a_symbolic_extent_fails_at_lower(primitive):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    getattr(s[B], primitive)(B.op.axis[0])           # recorded: the extent is known at lower
    with pytest.raises(ScheduleError, match=rf"{primitive} on stage B: axis i has the "
                                            rf"non-constant extent n; split it by a constant "
                                            rf"factor and {primitive} the inner axis"):
        te.lower(s, [A, B])


def test_bind_one_thread_tag_to_two_axes():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].bind(i, te.thread_axis("threadIdx.x"))
    with pytest.raises(ScheduleError, match=r"bind on stage C: threadIdx\.x is already bound "
                                            r"to axis i; bind each thread index to one axis"):
        s[C].bind(j, te.thread_axis("threadIdx.x"))


def test_bind_to_something_that_is_not_a_thread_axis():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"bind on stage C, axis i: the target must be "
                                            r"te\.thread_axis"):
        s[C].bind(C.op.axis[0], "threadIdx.x")


# ----------------------------------------------------------------------------- placement

def test_compute_at_a_stage_that_does_not_consume_it():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])         # refused when lowered, as TVM
    with pytest.raises(ScheduleError, match=r"compute_at on stage B: stage C does not consume "
                                            r"B; attach a stage to a consumer of it"):
        te.lower(s, [A, D])


def test_compute_at_an_axis_of_another_stage():
    _, B, C, D = _chain()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"compute_at on stage B: axis i is not an axis of "
                                            r"stage D; attach to one of its axes: i"):
        s[B].compute_at(s[D], C.op.axis[0])


def test_compute_at_itself():
    A, B, _, D = _chain()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[B], B.op.axis[0])         # refused when lowered, as TVM
    with pytest.raises(ScheduleError, match=r"compute_at on stage B: cannot attach a stage to "
                                            r"itself"):
        te.lower(s, [A, D])


def test_compute_at_each_other():
    A, B, C, D = _chain()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[D], D.op.axis[0])
    s[D].compute_at(s[B], B.op.axis[0])
    with pytest.raises(ScheduleError, match=r"compute_at: stages are attached inside each "
                                            r"other \(B -> D -> B\)"):
        te.lower(s, [A, D])


def test_compute_at_the_outer_axis_of_a_later_fuse():
    # an axis split or fused (as the inner axis) afterwards is followed (TVM's
    # LegalizeInvalidAttach); the outer axis of a fuse has no loop of its own (TVM refuses it)
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] + 1.0, name="B")
    D = te.compute((4, 4), lambda i, j: B[i, j] * 2.0, name="D")
    s = te.create_schedule(D.op)
    i, j = D.op.axis
    s[B].compute_at(s[D], i)
    s[D].fuse(i, j)
    with pytest.raises(ScheduleError, match=r"compute_at: stage B is attached to axis i of D, "
                                            r"which is no longer a leaf.*attach to one of "
                                            r"i_j_fused"):
        te.lower(s, [A, D])


@pytest.mark.parametrize("how", ["reorder", "fuse"])
def test_reduction_whose_range_depends_on_an_inner_axis(how):
    A = te.placeholder((8, 8), name="A")

    def f(i, j):
        k = te.reduce_axis((0, j + 1), name="k")
        return te.sum(A[i, k], axis=k)
    C = te.compute((8, 8), f, name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    if how == "reorder":
        s[C].reorder(i, k, j)
    else:
        s[C].fuse(j, k)
    with pytest.raises(ScheduleError, match=r"stage C: the range of reduction axis k depends on "
                                            r"j, whose loops must run outside k's; do not "
                                            r"reorder k outward or fuse it with them"):
        te.lower(s, [A, C])


def test_inline_a_reduction():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"compute_inline on stage C: a reduction cannot be "
                                            r"inlined; compute it with compute_at or "
                                            r"compute_root"):
        s[C].compute_inline()


def test_inline_an_output():
    _, _, _, D = _chain()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"compute_inline on stage D: it is an output of "
                                            r"the schedule; outputs must be stored"):
        s[D].compute_inline()


def test_placeholder_missing_from_the_arguments():
    _, _, _, D = _chain()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"placeholder A is read but is not in the argument "
                                            r"list; pass it to te\.lower/te\.build"):
        te.lower(s, [D])


def test_stage_of_a_tensor_outside_the_schedule():
    _, _, C = _gemm()
    _, _, other = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"C is not part of this schedule; create the "
                                            r"schedule from the outputs that use it"):
        s[other]


# ----------------------------------------------------------------------------- graph rewrites

def test_rfactor_of_a_data_axis():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"rfactor on stage C: j is not a reduction axis; "
                                            r"split the reduce axis and pass one of its parts"):
        s.rfactor(C, C.op.axis[1])


def test_rfactor_of_a_stage_without_reduction():
    _, _, _, D = _chain()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"rfactor on stage D: it is not a reduction"):
        s.rfactor(D, D.op.axis[0])


# ----------------------------------------------------------------------------- nothing half-done

def _failing_primitives():
    """(name, callable(s, C)) pairs; each must raise ScheduleError and leave s[C] unchanged."""
    def axes(C):
        i, j = C.op.axis
        return i, j, C.op.reduce_axis[0]

    return [
        ("split both", lambda s, C: s[C].split(axes(C)[0], factor=2, nparts=2)),
        ("split zero", lambda s, C: s[C].split(axes(C)[0], factor=0)),
        ("tile bad y factor", lambda s, C: s[C].tile(axes(C)[0], axes(C)[1], 4, 0)),
        ("tile same axis", lambda s, C: s[C].tile(axes(C)[0], axes(C)[0], 4, 4)),
        ("fuse three, last illegal", lambda s, C: s[C].fuse(axes(C)[1], axes(C)[2],
                                                            axes(C)[0])),
        ("fuse repeated", lambda s, C: s[C].fuse(axes(C)[0], axes(C)[1], axes(C)[0])),
        ("fuse non-adjacent", lambda s, C: s[C].fuse(axes(C)[0], axes(C)[2])),
        ("reorder repeated", lambda s, C: s[C].reorder(axes(C)[1], axes(C)[0], axes(C)[1])),
        ("vectorize reduce", lambda s, C: s[C].vectorize(axes(C)[2])),
        ("inline reduction", lambda s, C: s[C].compute_inline()),
        ("rfactor data axis", lambda s, C: s.rfactor(C, axes(C)[1])),
    ]


@pytest.mark.parametrize("name,primitive", _failing_primitives(),
                         ids=[n for n, _ in _failing_primitives()])
def test_failed_primitive_leaves_the_stage_unchanged(name, primitive):
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    before = _snapshot(s[C])
    with pytest.raises(ScheduleError):
        primitive(s, C)
    assert _snapshot(s[C]) == before


def test_failed_bind_leaves_the_stage_unchanged():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].bind(i, te.thread_axis("threadIdx.x"))
    before = _snapshot(s[C])
    with pytest.raises(ScheduleError):
        s[C].bind(j, te.thread_axis("threadIdx.x"))
    assert _snapshot(s[C]) == before


def test_failed_cache_write_leaves_the_schedule_unchanged():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    s[C].split(C.op.reduce_axis[0], factor=4)
    before, stages = _snapshot(s[C]), list(s.stages)
    with pytest.raises(ScheduleError):
        s.cache_write(C, "local")
    assert _snapshot(s[C]) == before
    assert s.stages == stages


def test_split_tail_must_be_guard_or_shift():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    before = _snapshot(s[C])
    with pytest.raises(ScheduleError, match=r"split on stage C, axis j: tail must be 'guard' "
                                            r"or 'shift', got 'round'"):
        s[C].split(C.op.axis[1], factor=4, tail="round")
    assert _snapshot(s[C]) == before


def test_split_tail_shift_of_a_reduce_axis_or_with_nparts():
    _, _, C = _gemm()
    s = te.create_schedule(C.op)
    before = _snapshot(s[C])
    with pytest.raises(ScheduleError, match=r"split on stage C, axis k: tail='shift' needs "
                                            r"factor= and a data-parallel axis \(a reduction "
                                            r"would add the shifted values twice\)"):
        s[C].split(C.op.reduce_axis[0], factor=3, tail="shift")
    with pytest.raises(ScheduleError, match=r"axis i: tail='shift' needs factor="):
        s[C].split(C.op.axis[0], nparts=3, tail="shift")
    assert _snapshot(s[C]) == before


def test_unknown_thread_tag():
    with pytest.raises(te.TEError, match=r"te.thread_axis: unknown thread tag 'threadIdx.q'; "
                                         r"use one of blockIdx.x, .*threadIdx.z, vthread"):
        te.thread_axis("threadIdx.q")


def test_unknown_storage_scope():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(te.ScheduleError, match=r"cache_read: unknown storage scope 'texture'; "
                                               r"use one of 'global', 'shared', 'local'"):
        s.cache_read(A, "texture", [B])
    with pytest.raises(te.ScheduleError, match=r"cache_write: unknown storage scope 'Shared'"):
        s.cache_write(B, "Shared")
    with pytest.raises(te.ScheduleError, match=r"set_scope of stage B: unknown storage scope "
                                               r"'Warp'"):
        s[B].set_scope("Warp")
    assert len(s.stages) == 2               # nothing half-done


def test_warp_scope_is_inferred_but_not_lowered():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1, name="B")
    C = te.compute((64,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].set_scope("warp")              # TVM's warp memory: bound inference as TVM's
    assert te.schedule.InferBound(s)[B.op.axis[0]].extent.value == 64
    with pytest.raises(te.ScheduleError, match=r"lower: stage B has scope 'warp' .* does not "
                                               r"lower it: use 'shared' or 'local'"):
        te.lower(s, [A, C])


def test_store_predicate_must_be_a_condition():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(te.ScheduleError, match=r"set_store_predicate on stage B: the predicate "
                                               r"3 has dtype int32, not bool"):
        s[B].set_store_predicate(3)


def test_axis_longer_than_its_declared_thread_axis():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis((0, 8), "threadIdx.x"))
    with pytest.raises(ScheduleError, match=r"stage B: axis i.inner has extent 16 but is bound "
                                            r"to threadIdx.x declared with extent 8; split the "
                                            r"axis by 8"):
        te.lower(s, [A, B])


def _copy_stage():
    A = te.placeholder((4,), name="A")
    B = te.compute((4, 4), lambda i, j: A[j] * 2, name="B")
    D = te.compute((4, 4), lambda i, j: B[i, j] + 1, name="D")
    return A, B, D, te.create_schedule(D.op)


def test_cache_read_without_readers():
    A, B, D, s = _copy_stage()
    with pytest.raises(ScheduleError, match=r"cache_read of A: readers is empty; pass the "
                                            r"stages that read A"):
        s.cache_read(A, "local", [])
    assert len(s.stages) == 3


@pytest.mark.parametrize("factor,offset,bad", [("x", 0, "factor must be an int, got 'x'"),
                                               (2.7, 1, "factor must be an int, got 2.7"),
                                               (4, 1.9, "offset must be an int, got 1.9")])
def test_storage_align_needs_ints(factor, offset, bad):
    A, B, D, s = _copy_stage()
    with pytest.raises(ScheduleError, match=rf"storage_align on stage B: {bad}"):
        s[B].storage_align(B.op.axis[0], factor, offset)
    assert not s[B].align

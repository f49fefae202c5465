"""Schedules that TVM accepts and that once were refused or wrong here: each is built and run
against numpy (the ported TVM unit tests themselves are in tests/tvm/)."""
import numpy as np
import pytest

import te


def _run(s, args, inputs, shapes, dtype="float32"):
    f = te.build(s, args)
    outs = [np.zeros(shape, dtype) for shape in shapes]
    f(*inputs, *outs)
    return outs


def _chain(n=10):
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + 1.0, name="C")
    return A, B, C


def _a(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


# ----------------------------------------------------------------------------- compute_at


def test_compute_at_an_axis_split_afterwards_follows_the_inner_piece():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    jo, ji = s[C].split(C.op.axis[1], factor=3)         # after compute_at
    a = _a(10, 10)
    (c,) = _run(s, [A, C], [a], [(10, 10)])
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
    assert s[B].attach_ivar is ji
    assert te.schedule.InferBound(s)[B.op.axis[1]].extent.value == 1


def test_compute_at_an_axis_fused_afterwards_follows_the_fused_axis():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    fused = s[C].fuse(*C.op.axis)
    s[C].split(fused, factor=7)                          # and split again
    a = _a(10, 10)
    (c,) = _run(s, [A, C], [a], [(10, 10)])
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


# ----------------------------------------------------------------------------- cache_write


@pytest.mark.parametrize("how", ["reorder", "split", "split+reorder", "fuse"])
def test_cache_write_after_the_stage_was_scheduled(how):
    n, m = 10, 6
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * A[k % n, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    if how == "reorder":
        s[C].reorder(j, i)
    elif how.startswith("split"):
        io, ii = s[C].split(i, factor=4)                 # 10 = 4 + 4 + 2: a guarded tail
        if how == "split+reorder":
            s[C].reorder(io, j, ii)
    else:
        s[C].fuse(i, j)
    CC = s.cache_write(C, "local")
    # the cache is laid out in the scheduled order, one axis per data-parallel leaf
    assert len(CC.op.axis) == {"reorder": 2, "split": 3, "split+reorder": 3, "fuse": 1}[how]
    s[CC].split(CC.op.reduce_axis[0], factor=4)
    a = _a(n, m)
    (c,) = _run(s, [A, C], [a], [(n, m)])
    ref = np.einsum("ik,kj->ij", a, a[np.arange(m) % n])
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- fuse


def test_fuse_of_no_axes_gives_a_0d_compute_a_loop():
    X = te.placeholder((10,), dtype="int32", name="X")
    k = te.reduce_axis((0, 10), name="k")
    Y = te.compute((), lambda: te.sum(X[k], axis=k), name="Y")
    s = te.create_schedule(Y.op)
    one = s[Y].fuse()
    assert s[Y].leaf_iter_vars[0] is one
    assert te.schedule.InferBound(s)[one].extent.value == 1
    s[Y].split(one, nparts=4)
    x = np.arange(10, dtype="int32")
    (y,) = _run(s, [X, Y], [x], [()], "int32")
    assert int(y) == 45


def test_fuse_of_one_axis_is_that_axis_and_inner_first_is_loop_order():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    assert s[C].fuse(i) is i
    fused = s[C].fuse(j, i)                              # inner first, as TVM allows
    assert s[C].leaf_iter_vars == [fused]
    a = _a(10, 10)
    (c,) = _run(s, [A, C], [a], [(10, 10)])
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_fuse_of_a_data_axis_and_a_reduction_axis():
    n = 10
    X = te.placeholder((n,), dtype="int32", name="X")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n,), lambda i: te.sum(X[k] + i, axis=k), name="Y")
    s = te.create_schedule(Y.op)
    fused = s[Y].fuse(Y.op.axis[0], k)
    s[Y].split(fused, factor=3)
    x = np.arange(n, dtype="int32")
    (y,) = _run(s, [X, Y], [x], [(n,)], "int32")
    np.testing.assert_array_equal(y, x.sum() + n * np.arange(n))


# ----------------------------------------------------------------------------- loop-dependent reductions


def _triangular(n=10):
    X = te.placeholder((n,), name="x")

    def f(i):
        rv = te.reduce_axis((0, i + 1), name="rv")
        return te.sum(X[rv], axis=rv)
    return X, te.compute((n,), f, name="y")


@pytest.mark.parametrize("schedule", ["plain", "split", "cache_write", "cache_write+split",
                                      "split+cache_write"])
def test_reduction_over_a_range_that_depends_on_the_output_axis(schedule):
    X, Y = _triangular()
    s = te.create_schedule(Y.op)
    if schedule == "split+cache_write":
        s[Y].split(Y.op.axis[0], factor=4)
        s.cache_write(Y, "local")
    elif schedule.startswith("cache_write"):
        YY = s.cache_write(Y, "local")
        if schedule.endswith("split"):
            s[YY].split(YY.op.axis[0], factor=4)
    elif schedule == "split":
        s[Y].split(Y.op.axis[0], factor=4)
    x = _a(10)
    (y,) = _run(s, [X, Y], [x], [(10,)])
    np.testing.assert_allclose(y, np.cumsum(x), rtol=1e-5, atol=1e-5)


def test_comm_reducer_whose_identity_and_combiner_mention_the_axis():
    X = te.placeholder((10,), name="x")

    def f(n):
        rv = te.reduce_axis((0, n), name="rv")
        init = lambda dt: te.tir.Select(n > 1, te.tir.const(0, dt), n.astype(dt))  # noqa: E731
        red = te.comm_reducer(lambda a, b: te.max(a + b, n.astype("float32")), init, name="r")
        return red(X[rv], axis=rv)
    Y = te.compute(X.shape, f, name="y")
    x = np.arange(10, dtype="float32") - 4
    ref = []
    for n in range(10):
        acc = 0.0 if n > 1 else float(n)
        for r in range(n):
            acc = max(acc + x[r], float(n))
        ref.append(acc)
    for cache in (False, True):
        s = te.create_schedule(Y.op)
        if cache:
            s.cache_write(Y, "local")
        s[Y].split(Y.op.axis[0], factor=3)
        (y,) = _run(s, [X, Y], [x], [(10,)])
        np.testing.assert_allclose(y, ref, rtol=1e-6)


# ----------------------------------------------------------------------------- bounds


def test_split_longer_than_its_axis_tightens_and_needs_no_shifted_tail():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bo, bi = s[B].split(B.op.axis[0], factor=8, tail="shift")
    s[B].vectorize(bi)
    bounds = te.schedule.InferBound(s)
    assert bounds[bi].extent.value == 6 and bounds[bo].extent.value == 1
    a = _a(6)
    (b,) = _run(s, [A, B], [a], [(6,)])
    np.testing.assert_allclose(b, a * 2)


def test_region_of_a_tile_of_a_fused_axis():
    A = te.placeholder((5, 6), name="A")
    A1 = te.compute((5, 6), lambda i, j: A[i, j] + 1.0, name="A1")
    A2 = te.compute((5, 6), lambda i, j: A1[i, j] * 3.0, name="A2")
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(s[A2].fuse(*A2.op.axis), factor=3)
    s[A1].compute_at(s[A2], xo)
    bounds = te.schedule.InferBound(s)
    assert bounds[A1.op.axis[1]].extent.value == 3          # a tile stays in one row
    a = _a(5, 6)
    (c,) = _run(s, [A, A2], [a], [(5, 6)])
    np.testing.assert_allclose(c, (a + 1) * 3, rtol=1e-6)


def test_bounds_after_rfactor():
    n = 12
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, nparts=4)
    BF = s.rfactor(B, ko)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    bounds = te.schedule.InferBound(s)
    assert bounds[BF.op.axis[0]].extent.value == 1 and bounds[BF.op.axis[1]].extent.value == 1
    a = _a(n)
    (b,) = _run(s, [A, B], [a], [(1,)])
    np.testing.assert_allclose(b, [a.sum()], rtol=1e-5)


def test_lowered_function_astext():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    f = te.lower(s, [A, C])
    assert f.astext() == str(f) and "for i in range(10)" in f.astext()


def test_cache_read_for_a_scan_update():
    m, n = 6, 8
    X = te.compute((m, n), lambda i, j: (i + j).astype("float32"), name="x")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    scan = te.scan(init, update, state)
    s = te.create_schedule(scan.op)
    XX = s.cache_read(X, "local", update)           # the scan gets the new update
    xo, _ = s[update].split(update.op.axis[1], factor=4)
    s[XX].compute_at(s[update], xo)
    assert te.schedule.InferBound(s)[XX.op.axis[1]].extent.value == 4
    (out,) = _run(s, [scan], [], [(m, n)])
    ref = np.cumsum(np.add.outer(np.arange(m), np.arange(n)), axis=0).astype("float32")
    np.testing.assert_allclose(out, ref)


@pytest.mark.parametrize("split", [None, 2, 3])
def test_attached_region_of_reads_that_wrap_around_is_the_whole_axis(split):
    # B[i, j] and B[i, (j + 1) % m] at C's j: the region [min(j, (j+1) % m), ...] holds both
    # reads but no call-time check could place an index into it; both reads are inside B's
    # axis (also in a guarded split tail, where C does not read), so B's row is computed whole
    n, m = 4, 7
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + B[i, (j + 1) % m], name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    if split is not None:
        s[C].split(C.op.axis[1], nparts=split)             # after compute_at: followed
    a = _a(n, m)
    (c,) = _run(s, [A, C], [a], [(n, m)])
    np.testing.assert_allclose(c, 2 * a + 2 * np.roll(a, -1, axis=1), rtol=1e-6)

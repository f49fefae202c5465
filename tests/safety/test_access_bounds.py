"""Issue 16, kinds 1-4: shape expressions, symbolic read/write ranges, data-dependent indices and
shifted tails. Every program either gives numpy's answer or a clear error; programs that used to
crash run in a subprocess, with guard pages around their arrays."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import te
from codegen_llvm import ArgumentError
from schedule.interp import run as interpret
from te.testing import check_guards, guarded_array, guarded_empty


def _in_subprocess(code, timeout=120):
    """Run ``code`` in a fresh interpreter: returns (returncode, output)."""
    prog = "import numpy as np, te\nfrom te.testing import guarded_array, guarded_empty\n" + \
        textwrap.dedent(code)
    res = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                         timeout=timeout, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    return res.returncode, res.stdout + res.stderr


# --------------------------------------------------------------------------- kind 1

def test_shape_expression_checked_when_its_variable_comes_later():
    code = """
        n = te.var("n")
        A = te.placeholder((n + 1,), name="A")
        B = te.compute((n,), lambda i: A[i + 1] * 2, name="B")
        f = te.build(te.create_schedule(B.op), [A, B])
        try:
            f(guarded_array(np.zeros(1, "float32")), guarded_empty(10_000_000))
        except Exception as e:
            print(type(e).__name__, e)
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert "ArgumentError argument A: dimension 0 must be n + 1 = 10000001, got shape (1,)" \
        in out


def test_output_with_a_shape_expression_listed_first():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n + 1,), lambda i: te.if_then_else(i < n, A[te.min(i, n - 1)], 0.0),
                   name="B")
    f = te.build(te.create_schedule(B.op), [B, A])
    with pytest.raises(ArgumentError, match=r"argument B: dimension 0 must be n \+ 1 = 6, got "
                                            r"shape \(10,\)"):
        f(np.zeros(10, "float32"), np.ones(5, "float32"))
    a = guarded_array(np.arange(5, dtype="float32"))
    b = guarded_empty(6)
    f(b, a)
    np.testing.assert_array_equal(b, np.append(a, 0))


def test_two_dimensional_shape_expressions_any_order():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n * 2, m + 1), name="A")
    B = te.compute((n, m), lambda i, j: A[2 * i + 1, j + 1], name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    a = np.random.rand(6, 5).astype("float32")
    b = np.empty((3, 4), "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a[1::2, 1:])
    with pytest.raises(ArgumentError, match=r"argument A: dimension 1 must be m \+ 1 = 5"):
        f(np.zeros((6, 4), "float32"), b)
    with pytest.raises(ArgumentError, match=r"argument A: dimension 0 must be n \* 2 = 6"):
        f(np.zeros((5, 5), "float32"), b)


# --------------------------------------------------------------------------- kind 2

def _build_1d(body, shape_a=None):
    n = te.var("n")
    A = te.placeholder(shape_a(n) if shape_a else (n,), name="A")
    B = te.compute((n,), lambda i: body(A, i, n), name="B")
    s = te.create_schedule(B.op)
    return s, A, B


def test_symbolic_read_past_the_end_is_refused_at_call_time():
    s, A, B = _build_1d(lambda A, i, n: A[i + 1])
    f = te.build(s, [A, B])
    msg = (r"reads A\[i \+ 1\], whose index i \+ 1 in dimension 0 of A ranges over \[1, 10\], "
           r"but that dimension has size 10 \(with n = 10\)")
    with pytest.raises(ArgumentError, match=msg):
        f(np.zeros(10, "float32"), np.zeros(10, "float32"))
    with pytest.raises(ArgumentError, match=msg):       # the interpreter checks the same
        interpret(te.lower(s, [A, B]), np.zeros(10, "float32"), np.zeros(10, "float32"))
    f(np.zeros(0, "float32"), np.zeros(0, "float32"))  # n = 0: the read never runs


def test_read_far_outside_is_refused_not_a_crash():
    code = """
        n = te.var("n")
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i * 100000], name="B")
        f = te.build(te.create_schedule(B.op), [A, B])
        try:
            f(guarded_array(np.zeros(1000, "float32")), guarded_empty(1000))
        except Exception as e:
            print(type(e).__name__, e)
        a = guarded_array(np.array([5.0], "float32")); b = guarded_empty(1)
        f(a, b); print("n=1", b[0])
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert "ArgumentError" in out and "ranges over [0, 99900000]" in out and "size 1000" in out
    assert "n=1 5.0" in out


def test_reads_through_floordiv_and_floormod():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((m, 32), name="A")
    B = te.compute((n,), lambda i: A[i // 32, i % 32 + 1], name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(ArgumentError, match=r"index i % 32 \+ 1 in dimension 1 of A ranges "
                                            r"over \[1, 32\], but that dimension has size 32"):
        f(np.zeros((2, 32), "float32"), np.zeros(64, "float32"))
    A2 = te.placeholder((m, 33), name="A")
    B2 = te.compute((n,), lambda i: A2[i // 32, i % 32 + 1], name="B")
    f2 = te.build(te.create_schedule(B2.op), [A2, B2])
    a = np.random.rand(2, 33).astype("float32")
    b = np.empty(64, "float32")
    f2(a, b)
    np.testing.assert_array_equal(b, a[:, 1:].reshape(-1))
    with pytest.raises(ArgumentError, match=r"index i // 32 in dimension 0 of A ranges over "
                                            r"\[0, 2\], but that dimension has size 2"):
        f2(a, np.empty(65, "float32"))


def test_writes_are_checked_too():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n,), name="A")

    def body(ins, outs):
        ib = te.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, name="i") as i:
            b[i * 2] = a[i]
        return ib.get()
    B = te.extern((m,), [A], body, name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(ArgumentError, match=r"writes B\[i \* 2\], whose index i \* 2 in "
                                            r"dimension 0 of B ranges over \[0, 8\], but that "
                                            r"dimension has size 8"):
        f(np.zeros(5, "float32"), np.zeros(8, "float32"))
    b = guarded_empty(9)
    b[:] = 0
    f(np.arange(5, dtype="float32"), b)
    np.testing.assert_array_equal(b[::2], np.arange(5))


@pytest.mark.parametrize("sched", ["split", "split_vec", "fuse", "compute_at", "tile",
                                   "parallel", "nparts"])
def test_guarded_schedules_are_not_refused(sched):
    """Schedules whose loops overrun the shape but guard the overrun need no precondition
    that fails: they run on sizes that the factors do not divide, under guard pages."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    P = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="P")
    C = te.compute((n, m), lambda i, j: P[i, j] + te.if_then_else(j >= 1, A[i, j - 1], 0.0),
                   name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    if sched == "split":
        s[C].split(j, factor=8)
    elif sched == "split_vec":
        _, ji = s[C].split(j, factor=8)
        s[C].vectorize(ji)
    elif sched == "fuse":
        f = s[C].fuse(i, j)
        s[C].split(f, factor=16)
    elif sched == "compute_at":
        jo, _ = s[C].split(j, factor=4)
        s[P].compute_at(s[C], jo)
    elif sched == "tile":
        s[C].tile(i, j, 3, 5)
    elif sched == "parallel":
        io, _ = s[C].split(i, factor=2)
        s[C].parallel(io)
    else:
        s[C].split(j, nparts=3)
    f = te.build(s, [A, C])
    for shape in [(7, 13), (1, 1), (5, 3)]:
        a = guarded_array(np.random.rand(*shape).astype("float32"))
        c = guarded_empty(shape)
        f(a, c)
        check_guards(c)
        ref = a * 2
        ref[:, 1:] += a[:, :-1]
        np.testing.assert_allclose(c, ref, rtol=1e-6)


def test_triangular_read_is_proved():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.sum(te.if_then_else(k <= i, A[i - k], 0.0), axis=k),
                   name="B")
    s = te.create_schedule(B.op)
    assert not te.lower(s, [A, B]).preconditions
    f = te.build(s, [A, B])
    a = np.random.rand(9).astype("float32")
    b = np.empty(9, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.cumsum(a), rtol=1e-5)


def test_constant_shapes_need_no_call_time_check():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] + A[j, i], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(*B.op.axis, 16, 16)
    s[B].vectorize(yi)
    s[B].parallel(xo)
    func = te.lower(s, [A, B])
    assert not func.preconditions and not func.check_sites


# --------------------------------------------------------------------------- kind 3

def _gather(schedule=None):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n,), name="A")
    idx = te.placeholder((m,), name="Idx", dtype="int32")
    B = te.compute((m,), lambda i: A[idx[i]], name="B")
    s = te.create_schedule(B.op)
    if schedule:
        schedule(s, B)
    return s, [A, idx, B]


def test_gather_index_checked_in_the_kernel():
    s, args = _gather()
    f = te.build(s, args)
    a = np.arange(10, dtype="float32")
    b = np.empty(4, "float32")
    f(a, np.array([3, 0, 9, 2], "int32"), b)
    np.testing.assert_array_equal(b, [3, 0, 9, 2])
    msg = (r"index 100000000 is out of bounds for dimension 0 of A with size 10 \(the read "
           r"A\[Idx\[i\]\] while computing B\[2\]\); the index must be in \[0, 10\)")
    with pytest.raises(IndexError, match=msg):
        f(a, np.array([3, 0, 100000000, 2], "int32"), b)
    with pytest.raises(IndexError, match=r"index -1 is out of bounds .* computing B\[0\]"):
        f(a, np.array([-1, 0, 1, 2], "int32"), b)
    with pytest.raises(IndexError, match=msg):
        interpret(te.lower(s, args), a, np.array([3, 0, 100000000, 2], "int32"), b)


def test_gather_checks_in_parallel_and_vectorized_loops():
    def sched(s, B):
        o, i = s[B].split(B.op.axis[0], factor=8)
        s[B].parallel(o)
        s[B].vectorize(i)
    s, args = _gather(sched)
    f = te.build(s, args)
    a = np.random.rand(100).astype("float32")
    idx = np.random.randint(0, 100, 1000).astype("int32")
    b = guarded_empty(1000)
    f(guarded_array(a), guarded_array(idx), b)
    np.testing.assert_array_equal(b, a[idx])
    idx[537] = 100
    with pytest.raises(IndexError, match=r"index 100 is out of bounds for dimension 0 of A "
                                         r"with size 100 .* B\[537\]"):
        f(a, idx, b)


def test_out_of_range_gather_never_touches_memory():
    code = """
        n, m = te.var("n"), te.var("m")
        A = te.placeholder((n,), name="A")
        idx = te.placeholder((m,), name="Idx", dtype="int64")
        B = te.compute((m,), lambda i: A[idx[i]] * 2, name="B")
        f = te.build(te.create_schedule(B.op), [A, idx, B])
        for bad in (10, -1, 2**40, -2**62):
            try:
                f(guarded_array(np.ones(10, "float32")), guarded_array(np.array([1, bad])),
                  guarded_empty(2))
            except IndexError as e:
                print("IndexError", bad)
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    for bad in (10, -1, 2**40, -2**62):
        assert f"IndexError {bad}" in out


def test_scatter_store_checked():
    n, m = te.var("n"), te.var("m")
    V = te.placeholder((m,), name="V")
    idx = te.placeholder((m,), name="Idx", dtype="int32")

    def body(ins, outs):
        ib = te.tir.ir_builder.create()
        v, ix, o = ib.buffer_ptr(ins[0]), ib.buffer_ptr(ins[1]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, m, name="i") as i:
            o[ix[i]] = v[i]
        return ib.get()
    O = te.extern((n,), [V, idx], body, name="O")
    f = te.build(te.create_schedule(O.op), [V, idx, O])
    o = np.zeros(5, "float32")
    f(np.array([1, 2], "float32"), np.array([4, 0], "int32"), o)
    np.testing.assert_array_equal(o, [2, 0, 0, 0, 1])
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for dimension 0 of O with "
                                         r"size 5 \(the write O\[Idx\[i\]\]"):
        f(np.array([1, 2], "float32"), np.array([4, 5], "int32"), o)


def test_guarded_gather_needs_no_kernel_check():
    """A gather whose index is tested in the expression is proved: no check in the kernel."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n,), name="A")
    idx = te.placeholder((m,), name="Idx", dtype="int32")
    B = te.compute((m,), lambda i: te.if_then_else(te.all(idx[i] >= 0, idx[i] < n),
                                                   A[idx[i]], -1.0), name="B")
    s = te.create_schedule(B.op)
    assert not te.lower(s, [A, idx, B]).check_sites
    f = te.build(s, [A, idx, B])
    b = np.empty(3, "float32")
    f(np.arange(4, dtype="float32"), np.array([2, 7, -3], "int32"), b)
    np.testing.assert_array_equal(b, [2, -1, -1])


def test_small_index_dtype_proved_in_range():
    A = te.placeholder((256,), name="A")
    m = te.var("m")
    idx = te.placeholder((m,), name="Idx", dtype="uint8")
    B = te.compute((m,), lambda i: A[idx[i]], name="B")
    s = te.create_schedule(B.op)
    assert not te.lower(s, [A, idx, B]).check_sites


def test_pragma_turns_the_kernel_check_off():
    def sched(s, B):
        s[B].pragma(B.op.axis[0], "no_bound_check")
    s, args = _gather(sched)
    func = te.lower(s, args)
    assert not func.check_sites and func.index_error is None
    f = te.build(s, args)
    b = np.empty(3, "float32")
    f(np.arange(5, dtype="float32"), np.array([4, 1, 0], "int32"), b)
    np.testing.assert_array_equal(b, [4, 1, 0])


# --------------------------------------------------------------------------- kind 4

def test_shift_tail_smaller_than_factor_is_refused():
    code = """
        n = te.var("n")
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] + 1, name="B")
        s = te.create_schedule(B.op)
        s[B].split(B.op.axis[0], factor=32, tail="shift")
        f = te.build(s, [A, B])
        for size in (10, 31, 32, 45, 100):
            a = guarded_array(np.arange(size, dtype="float32"), at="start")
            b = guarded_empty(size, at="start")
            try:
                f(a, b)
                print(size, "ok", bool((b == a + 1).all()))
            except Exception as e:
                print(size, type(e).__name__, e)
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert "10 ArgumentError" in out and "31 ArgumentError" in out
    assert "splits axis i with tail='shift' and factor 32, but the axis has 10 values" in out
    for size in (32, 45, 100):
        assert f"{size} ok True" in out


def test_gpu_gather_checked_on_the_simulator():
    """The same checks on the GPU backend (numba's simulator in CI)."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n,), name="A")
    idx = te.placeholder((m,), name="Idx", dtype="int32")
    B = te.compute((m,), lambda i: A[idx[i]], name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = te.build(s, [A, idx, B], target="cuda")
    a = np.arange(10, dtype="float32")
    b = np.zeros(40, "float32")
    ix = np.random.randint(0, 10, 40).astype("int32")
    f(a, ix, b)
    np.testing.assert_array_equal(b, a[ix])
    ix[33] = 12
    with pytest.raises(IndexError, match=r"index 12 is out of bounds for dimension 0 of A with "
                                         r"size 10 .* computing B\[33\]"):
        f(a, ix, b)
    S = te.compute((m,), lambda i: A[i + 1], name="S")
    s2 = te.create_schedule(S.op)
    bx, tx = s2[S].split(S.op.axis[0], factor=32)
    s2[S].bind(bx, te.thread_axis("blockIdx.x"))
    s2[S].bind(tx, te.thread_axis("threadIdx.x"))
    g = te.build(s2, [A, S], target="cuda")
    with pytest.raises(ArgumentError, match=r"reads A\[.*\], whose index .* ranges over "
                                            r"\[1, 10\], but that dimension has size 10"):
        g(a, np.zeros(10, "float32"))


def test_guarded_gather_check_reads_nothing_outside():
    """The index check of a gather under if_then_else is evaluated under the same condition
    (it read I[n] for the last i: found by the fuzzer)."""
    code = """
        from schedule.interp import run
        n = te.var("n")
        I = te.placeholder((n,), "int32", name="I")
        X = te.placeholder((8,), "float32", name="X")
        C = te.compute((n,), lambda i: X[I[i]], name="C")
        B = te.compute((n,), lambda i: te.if_then_else(i + 1 < n, C[i + 1], 0.0), name="B")
        s = te.create_schedule(B.op)
        s[C].compute_inline()
        f = te.build(s, [I, X, B])
        x = guarded_array(np.arange(8, dtype="float32"))
        b = guarded_empty(4)
        f(guarded_array(np.array([1, 2, 3, 4], "int32")), x, b)
        print(b.tolist())
        b2 = np.zeros(4, "float32")
        run(te.lower(s, [I, X, B]), np.array([1, 2, 3, 4], "int32"), np.arange(8, dtype="float32"), b2)
        print(b2.tolist())
        try:
            f(guarded_array(np.array([1, 2, 3, 9], "int32")), x, b)
        except IndexError as e:
            print("IndexError", e)
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert out.count("[2.0, 3.0, 4.0, 0.0]") == 2, out
    assert "IndexError default_function: index 9 is out of bounds for dimension 0 of X" in out


def test_nested_gather_checks_inner_index_first():
    code = """
        n, m, k = te.var("n"), te.var("m"), te.var("k")
        A = te.placeholder((n,), name="A")
        I = te.placeholder((m,), "int32", name="I")
        J = te.placeholder((k,), "int32", name="J")
        B = te.compute((k,), lambda i: A[I[J[i]]], name="B")
        f = te.build(te.create_schedule(B.op), [A, I, J, B])
        a = guarded_array(np.arange(5, dtype="float32"))
        for ii, jj in (([4, 3, 2], [0, 1, 2]), ([4, 3, 2], [0, -100000, 1]),
                       ([4, 3, 2], [0, 2**30, 1]), ([4, 30, 2], [0, 1, 2])):
            b = guarded_empty(3)
            try:
                f(a, guarded_array(np.array(ii, "int32")), guarded_array(np.array(jj, "int32")), b)
                print("ok", b.tolist())
            except IndexError as e:
                print("IndexError", e)
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert "ok [4.0, 3.0, 2.0]" in out
    assert "index -100000 is out of bounds for dimension 0 of I with size 3" in out
    assert f"index {2**30} is out of bounds for dimension 0 of I with size 3" in out
    assert "index 30 is out of bounds for dimension 0 of A with size 5 (the read A[I[J[i]]] " \
        "while computing B[1])" in out


def test_select_reads_only_the_chosen_side():
    """te.select guards a read as if_then_else does: the other side is not loaded (it read
    A[-2] under a guard page)."""
    code = """
        n = te.var("n")
        A = te.placeholder((n,), name="A")
        Q = te.compute((n + 4,), lambda i: te.select(te.all(i >= 2, i < n + 2), A[i - 2], 0.0),
                       name="Q")
        scalar = te.create_schedule(Q.op)
        vector = te.create_schedule(Q.op)
        _, inner = vector[Q].split(Q.op.axis[0], factor=8)
        vector[Q].vectorize(inner)          # a vector select read A[-2..5] in every lane
        for name, s in (("scalar", scalar), ("vector", vector)):
            f = te.build(s, [A, Q])
            assert "if_then_else" in str(f.lowered) and "select(" not in str(f.lowered)
            for at in ("start", "end"):
                a = guarded_array(np.arange(16, dtype="float32"), at=at)
                q = guarded_empty(20)
                f(a, q)
                print(name, at, q.tolist() == [0, 0] + list(range(16)) + [0, 0])
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    for name in ("scalar", "vector"):
        assert f"{name} start True" in out and f"{name} end True" in out


def test_select_of_reads_in_bounds_stays_a_vector_select():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    R = te.compute((n,), lambda i: te.select(A[i] > 0, A[i], B[i]), name="R")
    s = te.create_schedule(R.op)
    _, inner = s[R].split(R.op.axis[0], factor=8)
    s[R].vectorize(inner)
    f = te.build(s, [A, B, R])
    assert "select(A[ramp(" in str(f.lowered)
    a = np.random.randn(20).astype("float32")
    b = np.random.randn(20).astype("float32")
    r = np.empty(20, "float32")
    f(a, b, r)
    np.testing.assert_array_equal(r, np.where(a > 0, a, b))


def test_int64_reduction_init_loop_is_int64_and_not_refused():
    """The fuzzer's F3: the init loop of a reduction whose data axis sits inside the split
    reduce axis looped over int32(n) and its bound was the int32 range (a false refusal)."""
    n = te.var("n", "int64")
    A = te.placeholder((n, 2), "float32", name="A")
    k = te.reduce_axis((0, 2), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    s[B].reorder(ko, B.op.axis[0], ki)
    func = te.lower(s, [A, B])
    assert "int32(n)" not in str(func) and not func.preconditions
    f = te.build(s, [A, B])
    a = np.random.rand(9, 2).astype("float32")
    b = guarded_empty(9)
    f(guarded_array(a), b)
    np.testing.assert_allclose(b, a.sum(1), rtol=1e-6)


def test_narrowing_cast_in_a_bound_is_evaluated_at_call_time():
    n = te.var("n", "int64")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    func = te.lower(s, [A, B])
    from schedule.bound_checks import insert_bound_checks
    import dataclasses
    from schedule.ir import For
    # a loop over int32(n), as older lowering made: its bound is the wrapped value
    loop = func.body
    assert isinstance(loop, For)
    from te.expr import Cast, Var
    i32 = Var("i", "int32")
    from schedule.ir import BufferLoad, BufferStore
    narrowed = dataclasses.replace(func, body=For(
        i32, te.const(0), Cast(func.params[0].shape[0], "int32"), loop.kind,
        BufferStore(func.params[1], BufferLoad(func.params[0], (i32,), "float32"), (i32,))),
        preconditions=(), check_sites=())
    checked = insert_bound_checks(narrowed)
    assert checked.preconditions and not checked.check_sites
    from schedule.bound_checks import compile_preconditions
    check = compile_preconditions(checked.preconditions, [n])
    assert check(10) == -1 and check(2**31 + 5) == -1      # wraps to a negative extent


def test_scatter_through_a_nested_index_checks_inner_first():
    code = """
        n, m = te.var("n"), te.var("m")
        V = te.placeholder((m,), name="V")
        I = te.placeholder((m,), name="I", dtype="int32")
        J = te.placeholder((m,), name="J", dtype="int32")

        def body(ins, outs):
            ib = te.tir.ir_builder.create()
            v, ix, jx = (ib.buffer_ptr(t) for t in ins)
            o = ib.buffer_ptr(outs[0])
            with ib.for_range(0, m, name="i") as i:
                o[ix[jx[i]]] = v[i]
            return ib.get()
        O = te.extern((n,), [V, I, J], body, name="O")
        f = te.build(te.create_schedule(O.op), [V, I, J, O])
        v = guarded_array(np.array([1, 2], "float32"))
        for ii, jj in (([3, 0], [1, 0]), ([3, 0], [1, -2**30]), ([3, 9], [1, 0])):
            o = guarded_empty(4)
            o[:] = 0
            try:
                f(v, guarded_array(np.array(ii, "int32")), guarded_array(np.array(jj, "int32")), o)
                print("ok", o.tolist())
            except IndexError as e:
                print("IndexError", e)
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert "ok [1.0, 0.0, 0.0, 2.0]" in out
    assert f"index {-2**30} is out of bounds for dimension 0 of I with size 2" in out
    assert "index 9 is out of bounds for dimension 0 of O with size 4 (the write" in out


def test_and_or_guarding_a_read_are_lazy():
    """te.all(i >= 1, A[i - 1] > 0): the read is in bounds only when the left side holds, and
    an i1 `and` evaluates both: it becomes a lazy if_then_else."""
    code = """
        n = te.var("n")
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: te.if_then_else(te.all(i >= 1, A[i - 1] > 0), 1.0, 0.0),
                       name="B")
        C = te.compute((n,), lambda i: te.if_then_else(te.any(i < 1, A[i - 1] > 0), 1.0, 0.0),
                       name="C")
        f = te.build(te.create_schedule([B.op, C.op]), [A, B, C])
        a = guarded_array(np.array([1, -1, 2, 3], "float32"), at="start")
        b, c = guarded_empty(4), guarded_empty(4)
        f(a, b, c)
        print(b.tolist(), c.tolist())
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert "[0.0, 1.0, 0.0, 1.0] [1.0, 1.0, 0.0, 1.0]" in out


# --------------------------------------------------------------------------- adversarial round

@pytest.mark.parametrize("dtype, size, values", [("uint8", 256, [1, 127, 200, 255]),
                                                 ("uint16", 65536, [1, 40000, 65535])])
def test_unsigned_indices_are_zero_extended(dtype, size, values):
    code = f"""
        idx = te.placeholder(({len(values)},), {dtype!r}, name="Idx")
        A = te.placeholder(({size},), name="A")
        B = te.compute(({len(values)},), lambda i: A[idx[i]], name="B")
        f = te.build(te.create_schedule(B.op), [idx, A, B])
        b = guarded_empty({len(values)})
        f(guarded_array(np.array({values}, {dtype!r})),
          guarded_array(np.arange({size}, dtype="float32"), at="start"), b)
        print(b.tolist())
    """
    rc, out = _in_subprocess(code)
    assert rc == 0, out
    assert str([float(v) for v in values]) in out


def test_wrapping_casts_in_indices_are_not_proved():
    A = te.placeholder((128,), name="A")
    B = te.compute((200,), lambda i: A[i.astype("int8")], name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(ArgumentError, match=r"ranges over \[-128, 127\]"):
        f(np.zeros(128, "float32"), np.zeros(200, "float32"))
    A2 = te.placeholder((11,), name="A")
    C = te.compute((16,), lambda i: A2[(i - 5).astype("uint32")], name="C")
    g = te.build(te.create_schedule(C.op), [A2, C])
    with pytest.raises(ArgumentError, match=r"ranges over \[0, 4294967295\]"):
        g(np.zeros(11, "float32"), np.zeros(16, "float32"))


def test_index_arithmetic_that_wraps():
    from te import ScheduleError
    A = te.placeholder((3,), name="A")
    B = te.compute((8,), lambda i: A[(i + 2147483647) // 1073741824], name="B")
    with pytest.raises(ScheduleError, match=r"computes i \+ 2147483647, which ranges over "
                                            r"\[2147483647, 2147483654\] and wraps around in "
                                            r"int32; compute the index in int64"):
        te.build(te.create_schedule(B.op), [A, B])
    n, m = te.var("n"), te.var("m")
    A2 = te.placeholder((m,), name="A")
    C = te.compute((n,), lambda i: te.if_then_else(i * n < m, A2[i * n], 0.0), name="C")
    f = te.build(te.create_schedule(C.op), [A2, C])
    with pytest.raises(ArgumentError, match=r"the index arithmetic i \* n ranges over "
                                            r"\[0, 4294901760\] \(with n = 65536\), beyond "
                                            r"int32"):
        f(np.zeros(10, "float32"), np.zeros(65536, "float32"))
    c = np.empty(4, "float32")
    f(np.arange(10, dtype="float32"), c)
    np.testing.assert_array_equal(c, [0, 4, 8, 0])
    A3 = te.placeholder((3,), name="A")
    D = te.compute((100,), lambda i: te.if_then_else(i + 2147483600 < 2147483603, A3[i], 0.0),
                   name="D")
    g = te.build(te.create_schedule(D.op), [A3, D])     # the guard wraps: not a fact
    with pytest.raises(ArgumentError, match=r"reads A\[i\]"):
        g(np.zeros(3, "float32"), np.zeros(100, "float32"))


def test_floormod_by_a_zero_size():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n,), name="A")
    W = te.placeholder((m,), name="W")
    C = te.compute((n,), lambda i: A[i] + W[i % m], name="C")
    f = te.build(te.create_schedule(C.op), [A, W, C])
    with pytest.raises(ArgumentError, match=r"reads W\[i % m\].* ranges over \[0, 0\], but "
                                            r"that dimension has size 0"):
        f(np.zeros(4, "float32"), np.zeros(0, "float32"), np.zeros(4, "float32"))
    c = np.empty(5, "float32")
    f(np.ones(5, "float32"), np.array([10, 20], "float32"), c)
    np.testing.assert_array_equal(c, [11, 21, 11, 21, 11])


@pytest.mark.parametrize("form", ["eq", "ne", "any", "any_eq"])
def test_guards_from_equalities_and_any(form):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    body = {
        "eq": lambda i: te.if_then_else(i == 0, 0.0, A[i - 1]),
        "ne": lambda i: te.if_then_else(i != 0, A[i - 1], 0.0),
        "any": lambda i: te.if_then_else(te.any(i < 1, i > n - 2), 0.0, A[i - 1] + A[i + 1]),
        "any_eq": lambda i: te.if_then_else(te.any(i == 0, i == n - 1), 0.0,
                                            A[i - 1] + A[i + 1]),
    }[form]
    B = te.compute((n,), body, name="B")
    s = te.create_schedule(B.op)
    assert not te.lower(s, [A, B]).preconditions
    f = te.build(s, [A, B])
    for k in (1, 2, 6):
        a = np.random.rand(k).astype("float32")
        b = guarded_empty(k)
        f(guarded_array(a, at="start"), b)
        if form in ("eq", "ne"):
            want = np.concatenate([[0], a[:-1]])
        else:
            want = np.zeros(k, "float32")
            want[1:-1] = a[:-2] + a[2:]
        np.testing.assert_allclose(b, want, rtol=1e-6)


def test_index_error_reports_the_first_bad_index():
    s, args = _gather()
    f = te.build(s, args)
    with pytest.raises(IndexError, match=r"index 7 is out of bounds .* computing B\[1\]"):
        f(np.arange(5, dtype="float32"), np.array([0, 7, 1, 9], "int32"),
          np.empty(4, "float32"))


def test_one_loop_variable_under_two_ranges_is_checked_under_the_wider():
    """The bound checks reuse the answer of a structurally equal access only under the same
    loop ranges: A[i] in range under 0 <= i < 4 must still be checked under 0 <= i < 10."""
    import dataclasses
    from schedule.bound_checks import insert_bound_checks
    from schedule.ir import BufferLoad, BufferStore, For, ForKind, SeqStmt
    from te.expr import Var
    A = te.placeholder((4,), name="A")
    B = te.compute((10,), lambda i: A[te.min(i, 3)], name="B")
    func = te.lower(te.create_schedule(B.op), [A, B])
    a, b = func.params
    i = Var("i", "int32")

    def loop(extent):
        return For(i, te.const(0), te.const(extent), ForKind.SERIAL,
                   BufferStore(b, BufferLoad(a, (i,), "float32"), (i,)))
    two = dataclasses.replace(func, body=SeqStmt((loop(4), loop(10))), preconditions=(),
                              check_sites=())
    checked = insert_bound_checks(two)
    # the read past A's end: a condition the call checks (constant sizes: it always fails)
    assert [(p.buffer, p.access) for p in checked.preconditions] == [("A", "A[i]")]
    one = insert_bound_checks(dataclasses.replace(two, body=loop(4)))
    assert not one.check_sites and not one.preconditions

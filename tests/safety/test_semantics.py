"""Value semantics that every backend shares (issue 16, kinds 10-12): the reference interpreter
on small integer and bool dtypes; NaN and signed zeros in te.max / te.min (NaN-propagating, as
numpy's maximum/minimum) on the CPU, the GPU (numba's simulator) and the interpreter; bool
arrays whose bytes are other than 0 and 1 (any nonzero byte is true, as numpy reads them).
Each result is compared with numpy."""
import re
import warnings

import numpy as np
import pytest

import te
from schedule.interp import run
from te.testing import verify_schedule

# ----------------------------------------------------------------------------- kind 10


def _two_stage(dtype):
    """C = B * A + B[i + 3] with B = A * A + 1 an intermediate (for bool: B = A or its left
    neighbour, C = B and the right one); the numpy reference wraps as the compiled code does."""
    n = 16
    A = te.placeholder((n,), dtype=dtype, name="A")
    if dtype == "bool":
        B = te.compute((n,), lambda i: te.any(A[i], A[(i + n - 1) % n]), name="B")
        C = te.compute((n,), lambda i: te.all(B[i], A[(i + 1) % n]), name="C")

        def ref(a):
            return (a | np.roll(a, 1)) & np.roll(a, -1)
    else:
        one = te.const(1, dtype)
        B = te.compute((n,), lambda i: A[i] * A[i] + one, name="B")
        C = te.compute((n,), lambda i: B[i] * A[i] + B[(i + 3) % n], name="C")

        def ref(a):
            # float16 computes in float32 and rounds where it is stored, as compiled code
            w = np.float32 if dtype == "float16" else a.dtype.type
            a = a.astype(w)
            b = (a * a + w(1)).astype(dtype).astype(w)
            return (b * a + np.roll(b, -3)).astype(dtype)
    return A, B, C, ref


def _inputs(dtype, n=16):
    if dtype == "bool":
        return np.array([1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0], bool)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is None:
        return np.linspace(-3, 3, n).astype(dtype)
    # values near both ends, so that the products wrap
    return np.linspace(info.min, info.max, n).astype(dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "bool", "float16"])
@pytest.mark.parametrize("schedule", ["default", "inline_none_vectorized", "compute_at"])
def test_verify_schedule_on_small_dtypes(dtype, schedule):
    A, B, C, ref = _two_stage(dtype)
    s = te.create_schedule(C.op)
    if schedule == "inline_none_vectorized":
        co, ci = s[C].split(C.op.axis[0], factor=8)
        s[C].vectorize(ci)
        bo, bi = s[B].split(B.op.axis[0], factor=4)
        s[B].vectorize(bi)
    elif schedule == "compute_at":
        co, ci = s[C].split(C.op.axis[0], factor=4)
        s[B].compute_at(s[C], co)
    a = _inputs(dtype)
    tol = dict(rtol=1e-3, atol=1e-3) if dtype == "float16" else dict(rtol=0, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no overflow warning from the interpreter
        with np.errstate(over="ignore"):        # numpy's own wrapping reference
            verify_schedule(s, [A, C], [a], [np.zeros(16, dtype)], ref, **tol)


def test_interpreter_intermediates_are_poisoned_in_range():
    # a read of an intermediate before any write shows the poison: 0xAB in every byte
    # (-85 in int8), in range for the dtype, instead of an OverflowError
    for dtype, expected in [("int8", -85), ("uint8", 0xAB), ("int16", -21589),
                            ("uint16", 0xABAB), ("int32", -1414812757)]:
        def body(out, dtype=dtype):
            ib = te.tir.ir_builder.create()
            op = ib.buffer_ptr(out)
            tmp = ib.allocate(dtype, (2,), name="tmp")
            tmp[1] = te.const(7, dtype)
            op[0] = tmp[0]
            op[1] = tmp[1]
            return ib.get()

        A = te.placeholder((2,), dtype=dtype, name="A")
        O = te.extern((2,), [A], lambda ins, outs: body(outs[0]), dtype=dtype, name="O")
        lowered = te.lower(te.create_schedule(O.op), [A, O])
        got = np.zeros(2, dtype)
        run(lowered, np.zeros(2, dtype), got)
        np.testing.assert_array_equal(got, np.array([expected, 7], dtype))

# ----------------------------------------------------------------------------- kind 11

MAXMIN = [(te.max, np.maximum, np.max), (te.min, np.minimum, np.min)]


def _pairs(dtype):
    """Operand pairs with NaN first, second, both, neither, signed-zero ties and infinities."""
    nan, inf = np.nan, np.inf
    a = np.array([nan, 1.0, nan, 2.0, -0.0, 0.0, -0.0, inf, -inf, nan, 3.0, -5.0,
                  0.0, nan, -inf, 1.5], dtype)
    b = np.array([1.0, nan, nan, -1.0, 0.0, -0.0, -0.0, nan, 2.0, -inf, 3.0, -6.0,
                  0.0, inf, -inf, -1.5], dtype)
    return a, b


def _same(got, want):
    """Equal values, NaN where numpy has NaN, and the same sign of every zero."""
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("op,np_op,_", MAXMIN, ids=["max", "min"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_elementwise_max_min_match_numpy(dtype, op, np_op, _, vectorize):
    a, b = _pairs(dtype)
    # float16 computes in float32: numpy's float16 maximum returns a on ties, float32's b
    wide = "float32" if dtype == "float16" else dtype
    want = np_op(a.astype(wide), b.astype(wide)).astype(dtype)
    n = a.size
    A = te.placeholder((n,), dtype=dtype, name="A")
    B = te.placeholder((n,), dtype=dtype, name="B")
    C = te.compute((n,), lambda i: op(A[i], B[i]), name="C")
    s = te.create_schedule(C.op)
    if vectorize:
        _, ci = s[C].split(C.op.axis[0], factor=8)
        s[C].vectorize(ci)
    mod = te.build(s, [A, B, C])
    if vectorize:
        assert re.search(r"<8 x (half|float|double)>", mod.get_source("ll"))
    got = np.zeros(n, dtype)
    mod(a, b, got)
    _same(got, want)
    interp = np.zeros(n, dtype)
    run(te.lower(s, [A, B, C]), a, b, interp)
    _same(interp, want)


def test_elementwise_max_with_a_constant():
    # relu-like max(x, 0) and min(x, 1) keep a NaN x, on both orders of the operands
    x = np.array([np.nan, -1.0, 2.0, -0.0, 0.5], "float32")
    A = te.placeholder((5,), name="A")
    outs = [te.compute((5,), f, name=f"O{k}") for k, f in enumerate([
        lambda i: te.max(A[i], 0.0), lambda i: te.max(0.0, A[i]),
        lambda i: te.min(A[i], 1.0), lambda i: te.min(1.0, A[i])])]
    mod = te.build(te.create_schedule([o.op for o in outs]), [A, *outs])
    got = [np.zeros(5, "float32") for _ in outs]
    mod(x, *got)
    one = np.float32(1)
    for g, want in zip(got, [np.maximum(x, 0), np.maximum(0, x), np.minimum(x, one),
                             np.minimum(one, x)]):
        _same(g, want.astype("float32"))


def test_constant_folding_propagates_nan():
    # the simplifier folds max/min of two constants as the backends compute them
    nan = te.const(float("nan"))
    B = te.compute((3,), lambda i: te.select(
        i == 0, te.max(1.0, nan), te.select(i == 1, te.max(nan, 1.0),
                                            te.min(te.const(0.0), te.const(-0.0)))), name="B")
    s = te.create_schedule(B.op)
    text = str(te.lower(s, [B]))
    assert "max(" not in text and "min(" not in text, text
    got = np.zeros(3, "float32")
    te.build(s, [B])(got)
    _same(got, np.array([np.nan, np.nan, -0.0], "float32"))


def _row_reduce(op, dtype, rows, cols, schedule):
    A = te.placeholder((rows, cols), dtype=dtype, name="A")
    k = te.reduce_axis((0, cols), name="k")
    R = te.compute((rows,), lambda i: op(A[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    if schedule == "vectorized":           # rfactor over 8 lanes, the lanes vectorized
        _, ki = s[R].split(k, factor=8)
        RF = s.rfactor(R, ki, factor_axis=1)
        i, lane = s[RF].op.axis
        s[RF].reorder(i, s[RF].op.reduce_axis[0], lane)
        s[RF].vectorize(lane)
        s[RF].compute_at(s[R], R.op.axis[0])
    elif schedule == "parallel":
        s[R].parallel(R.op.axis[0])
    elif schedule == "rfactor_parallel":  # partial results in parallel, then combined
        ko, _ = s[R].split(k, nparts=4)
        RF = s.rfactor(R, ko)
        s[RF].parallel(s[RF].op.axis[0])
    elif schedule == "split_tail":         # 13 columns by 4: a guarded tail
        _, ki = s[R].split(k, factor=4)
        s[R].unroll(ki)
    return s, [A, R]


def _rows_with_nan(dtype, cols, op):
    """One row per position of a NaN (first, middle, last, all, none, two), a row of the
    reduction's identity (-inf for max, inf for min) and one of signed zeros."""
    rng = np.random.default_rng(cols)
    a = rng.standard_normal((8, cols)).astype(dtype)
    a[0, 0] = np.nan
    a[1, cols // 2] = np.nan
    a[2, -1] = np.nan
    a[3, :] = np.nan
    a[5, 1], a[5, -2] = np.nan, np.nan
    a[6, :] = -np.inf if op is te.max else np.inf
    a[7, :] = np.where(np.arange(cols) % 2, -0.0, 0.0)
    return a


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op,_,np_reduce", MAXMIN, ids=["max", "min"])
@pytest.mark.parametrize("schedule", ["default", "vectorized", "parallel", "rfactor_parallel",
                                      "split_tail"])
def test_reduction_propagates_nan_wherever_it_is(dtype, op, _, np_reduce, schedule):
    cols = 13 if schedule == "split_tail" else 32
    a = _rows_with_nan(dtype, cols, op)
    s, args = _row_reduce(op, dtype, 8, cols, schedule)
    mod = te.build(s, args)
    if schedule == "vectorized":
        ll = mod.get_source("ll")
        assert "<8 x float>" in ll or "<8 x double>" in ll, "the reduction is not vectorized"
    want = np_reduce(a, axis=1)
    got = np.full(8, 7, dtype)
    mod(a, got)
    np.testing.assert_array_equal(got, want)     # NaN == NaN here; the zero row's sign is free
    interp = np.full(8, 7, dtype)
    run(te.lower(s, args), a, interp)
    np.testing.assert_array_equal(interp, want)


def test_empty_float_reduction_is_the_infinite_identity():
    # the identity of max is -inf (not the lowest finite float), of min inf
    A = te.placeholder((2, 0), name="A")
    k = te.reduce_axis((0, 0), name="k")
    M = te.compute((2,), lambda i: te.max(A[i, k], axis=k), name="M")
    N = te.compute((2,), lambda i: te.min(A[i, k], axis=k), name="N")
    mod = te.build(te.create_schedule([M.op, N.op]), [A, M, N])
    m, n = np.zeros(2, "float32"), np.zeros(2, "float32")
    mod(np.zeros((2, 0), "float32"), m, n)
    np.testing.assert_array_equal(m, np.max(np.zeros((2, 0)), axis=1, initial=-np.inf))
    np.testing.assert_array_equal(n, np.min(np.zeros((2, 0)), axis=1, initial=np.inf))


def _gpu_build(s, args):
    from codegen_cuda import simulator
    assert simulator(), "these tests run on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    return te.build(s, args, target="cuda")


@pytest.mark.parametrize("op,np_op,np_reduce", MAXMIN, ids=["max", "min"])
def test_gpu_max_min_propagate_nan(op, np_op, np_reduce):
    dtype, cols = "float32", 16
    a = _rows_with_nan(dtype, cols, op)
    A = te.placeholder((8, cols), name="A")
    k = te.reduce_axis((0, cols), name="k")
    R = te.compute((8,), lambda i: op(A[i, k], axis=k), name="R")        # per thread
    k2 = te.reduce_axis((0, cols), name="k2")
    X = te.compute((8,), lambda i: op(A[i, k2], axis=k2), name="X")    # across threads
    E = te.compute((8, cols), lambda i, j: op(A[i, j], A[7 - i, cols - 1 - j]), name="E")
    s = te.create_schedule([R.op, X.op, E.op])
    s[R].bind(R.op.axis[0], te.thread_axis("threadIdx.x"))
    s[X].bind(X.op.axis[0], te.thread_axis("blockIdx.x"))
    s[X].bind(k2, te.thread_axis("threadIdx.x"))
    s[E].bind(E.op.axis[0], te.thread_axis("blockIdx.x"))
    s[E].bind(E.op.axis[1], te.thread_axis("threadIdx.x"))
    mod = _gpu_build(s, [A, R, X, E])
    r, x, e = np.zeros(8, dtype), np.zeros(8, dtype), np.zeros((8, cols), dtype)
    mod(a, r, x, e)
    np.testing.assert_array_equal(r, np_reduce(a, axis=1))
    np.testing.assert_array_equal(x, np_reduce(a, axis=1))
    _same(e, np_op(a, a[::-1, ::-1]))
    p, q = _pairs(dtype)                       # the NaN/signed-zero table, elementwise
    P = te.placeholder((16,), name="P")
    Q = te.placeholder((16,), name="Q")
    O = te.compute((16,), lambda i: op(P[i], Q[i]), name="O")
    s2 = te.create_schedule(O.op)
    s2[O].bind(O.op.axis[0], te.thread_axis("threadIdx.x"))
    o = np.zeros(16, dtype)
    _gpu_build(s2, [P, Q, O])(p, q, o)
    _same(o, np_op(p, q))

# ----------------------------------------------------------------------------- kind 12

# bool arrays as other programs write them: any nonzero byte; numpy reads them as true
RAW = np.array([0, 1, 2, 255, 128, 0, 3, 64, 1, 0, 0, 7, 200, 1, 0, 16], np.uint8)


def _truth():
    return RAW != 0


def _bool_programs():
    n = RAW.size
    A = te.placeholder((n,), dtype="bool", name="A")
    k = te.reduce_axis((0, n), name="k")
    total = te.compute((1,), lambda _: te.sum(A[k].astype("int32"), axis=k), name="total")
    pick = te.compute((n,), lambda i: te.select(A[i], 1.5, -2.0), name="pick")
    ints = te.compute((n,), lambda i: A[i].astype("int32"), name="ints")
    logic = te.compute((n,), lambda i: te.all(te.any(A[i], A[(i + 1) % n]),
                                              te.any(A[i], A[i])), name="logic")
    copy = te.compute((n,), lambda i: A[i], name="copy")
    t = _truth()
    refs = {"total": np.array([t.sum()], np.int32),
            "pick": np.where(t, 1.5, -2.0).astype("float32"),
            "ints": t.astype(np.int32),
            "logic": (t | np.roll(t, -1)) & t,
            "copy": t}
    return A, [total, pick, ints, logic, copy], refs


def _check_bool_outputs(outs, got, refs):
    for T, g in zip(outs, got):
        want = refs[T.name]
        if want.dtype == bool:
            # stored as 0 and 1 only, and the right truth value
            np.testing.assert_array_equal(g.view(np.uint8), want.astype(np.uint8),
                                          err_msg=T.name)
        else:
            np.testing.assert_array_equal(g, want, err_msg=T.name)


def _outputs(outs):
    return [np.full(T.shape[0].value, 9, dtype=T.dtype) if T.dtype != "bool"
            else np.full(T.shape[0].value, 5, np.uint8).view(bool) for T in outs]


@pytest.mark.parametrize("vectorize", [False, True])
def test_cpu_reads_any_nonzero_bool_byte_as_true(vectorize):
    A, outs, refs = _bool_programs()
    s = te.create_schedule([T.op for T in outs])
    if vectorize:
        for T in outs[1:]:
            _, inner = s[T].split(T.op.axis[0], factor=8)
            s[T].vectorize(inner)
        _, ki = s[outs[0]].split(outs[0].op.reduce_axis[0], factor=8)
        RF = s.rfactor(outs[0], ki)
        s[RF].vectorize(s[RF].op.axis[0])
    mod = te.build(s, [A] + outs)
    if vectorize:
        assert "<8 x i8>" in mod.get_source("ll-raw")
    got = _outputs(outs)
    mod(RAW.view(bool), *got)
    _check_bool_outputs(outs, got, refs)
    interp = _outputs(outs)
    run(te.lower(s, [A] + outs), RAW.view(bool), *interp)
    _check_bool_outputs(outs, interp, refs)


def test_gpu_reads_any_nonzero_bool_byte_as_true():
    A, outs, refs = _bool_programs()
    s = te.create_schedule([T.op for T in outs])
    for T in outs[1:]:
        s[T].bind(T.op.axis[0], te.thread_axis("threadIdx.x"))
    s[outs[0]].bind(outs[0].op.axis[0], te.thread_axis("threadIdx.x"))
    mod = _gpu_build(s, [A] + outs)
    got = _outputs(outs)
    mod(RAW.view(bool), *got)
    _check_bool_outputs(outs, got, refs)


# --------------------------------------------------------------------------- float -> int:
# truncate into int64 (saturating, NaN -> 0), then wrap to the dtype, on every backend (in LLVM a plain fptosi
# of NaN is poison: fuzz seed 101488, an empty min-reduction's inf * 0.0 cast to uint8 and
# compared, let LLVM delete the function body: the call jumped into unmapped memory)

_SPECIAL = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3.7, -3.7, 127.9, 300.0, -0.5,
                     2.0**63, -2.0**63, 65535.5, -129.0, 255.2, 0.0], "float32")


def _float_to_int_by_hand(v, dtype):
    """The rule written out: NaN -> 0; truncate; int64's ends saturate; wrap to the dtype
    (uint64 keeps values from 2**63 up, saturating at 2**64 - 1)."""
    if np.isnan(v):
        return 0
    t = int(np.trunc(v)) if np.isfinite(v) else (2**70 if v > 0 else -2**70)
    if dtype == "uint64" and t >= 2**63:
        return min(t, 2**64 - 1)
    t = max(min(t, 2**63 - 1), -2**63)
    bits = np.dtype(dtype).itemsize * 8
    t %= 2**bits
    if dtype.startswith("int") and t >= 2**(bits - 1):
        t -= 2**bits
    return t


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_float_to_int_truncates_through_int64_and_nan_is_zero(dtype, vectorize):
    from te.dtypes import float_to_int
    n = len(_SPECIAL)
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i].astype(dtype), name="B")
    s = te.create_schedule(B.op)
    if vectorize:
        s[B].vectorize(B.op.axis[0])
    want = float_to_int(_SPECIAL, dtype)
    assert [int(x) for x in want] == [_float_to_int_by_hand(float(v), dtype) for v in _SPECIAL]
    if dtype == "uint8":
        assert want[9] == 0 and float_to_int(np.float32(-2.2), "uint8") == 254   # as numpy
    verify_schedule(s, [A, B], [_SPECIAL], [np.zeros(n, dtype)], lambda a: want)


def test_gpu_float_to_int_follows_the_same_rule():
    from te.dtypes import float_to_int
    n = len(_SPECIAL)
    A = te.placeholder((n,), "float32", name="A")
    def cast_to(dt):
        return te.compute((n,), lambda i: A[i].astype(dt), name=f"B_{dt}")
    outs = [cast_to(dt) for dt in ("int8", "uint8", "int32", "int64")]
    s = te.create_schedule([o.op for o in outs])
    for o in outs:
        s[o].bind(o.op.axis[0], te.thread_axis("threadIdx.x"))
    f = te.build(s, [A, *outs], target="cuda")
    got = [np.zeros(n, o.dtype) for o in outs]
    f(_SPECIAL, *got)
    for o, g in zip(outs, got):
        np.testing.assert_array_equal(g, float_to_int(_SPECIAL, o.dtype))


def test_fuzz_case_101488_runs_in_a_subprocess():
    # the saved fuzz case (a crash before: SIGSEGV) passes: numpy = interpreter = compiled
    import os
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    case = pathlib.Path(__file__).with_name("fuzz_cases") / "case_101488.py"
    proc = subprocess.run([sys.executable, str(case)], capture_output=True, text=True,
                          timeout=300, cwd=root, env=dict(os.environ, TW_ROOT=str(root)))
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-2000:]
    assert proc.stdout.startswith("pass"), proc.stdout[-1000:]


# --------------------------------------------------------------------------- shifts by the
# bit width or more (or a negative amount) follow numpy (0, or the sign shifting right); in
# LLVM they were poison

@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_shifts_out_of_range_follow_numpy(dtype, vectorize):
    x = np.array([5, -5, 1, -1, 7, 100, -100, 3], dtype=np.int64).astype(dtype)
    bits = np.dtype(dtype).itemsize * 8
    amt = np.array([bits, bits + 3, 1, bits - 1, 0, 2 * bits, 3, bits], dtype=np.int64)
    if dtype.startswith("int"):
        amt[3] = -1
    amt = amt.astype(dtype)
    X = te.placeholder((8,), dtype, name="X")
    S = te.placeholder((8,), dtype, name="S")
    L = te.compute((8,), lambda i: X[i] << S[i], name="L")
    R = te.compute((8,), lambda i: X[i] >> S[i], name="R")
    s = te.create_schedule([L.op, R.op])
    if vectorize:
        s[L].vectorize(L.op.axis[0])
        s[R].vectorize(R.op.axis[0])
    verify_schedule(s, [X, S, L, R], [x, amt], [np.zeros(8, dtype), np.zeros(8, dtype)],
                    lambda x, a: [np.left_shift(x, a), np.right_shift(x, a)])


def test_gpu_shifts_out_of_range_follow_numpy():
    x = np.array([5, -5, 1, -1, 7, 100, -100, 3], "int32")
    amt = np.array([32, 35, 1, -1, 0, 64, 3, 32], "int32")
    X = te.placeholder((8,), "int32", name="X")
    S = te.placeholder((8,), "int32", name="S")
    L = te.compute((8,), lambda i: X[i] << S[i], name="L")
    R = te.compute((8,), lambda i: X[i] >> S[i], name="R")
    s = te.create_schedule([L.op, R.op])
    for T in (L, R):
        s[T].bind(T.op.axis[0], te.thread_axis("threadIdx.x"))
    f = te.build(s, [X, S, L, R], target="cuda")
    lo, ro = np.zeros(8, "int32"), np.zeros(8, "int32")
    f(x, amt, lo, ro)
    np.testing.assert_array_equal(lo, np.left_shift(x, amt))
    np.testing.assert_array_equal(ro, np.right_shift(x, amt))

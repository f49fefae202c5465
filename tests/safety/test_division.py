"""Integer division and remainder by zero, and MIN // -1, never trap (SIGFPE killed the process):
x // 0 and x % 0 are 0 as numpy's, MIN // -1 wraps to MIN, on the CPU (scalar and vector), the
interpreter and the GPU simulator."""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import te
from schedule.interp import run as interpret

ROOT = Path(__file__).parents[2]


def _program(dtype, vectorize):
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute((n,), lambda i: te.floordiv(A[i], B[i]), name="C")
    D = te.compute((n,), lambda i: te.floormod(A[i], B[i]), name="D")
    E = te.compute((n,), lambda i: te.truncdiv(A[i], B[i]), name="E")
    F = te.compute((n,), lambda i: te.truncmod(A[i], B[i]), name="F")
    s = te.create_schedule([C.op, D.op, E.op, F.op])
    if vectorize:
        for T in (C, D, E, F):
            _, inner = s[T].split(T.op.axis[0], factor=8)
            s[T].vectorize(inner)
    return s, [A, B, C, D, E, F]


def _inputs(dtype):
    info = np.iinfo(dtype)
    if info.min < 0:
        a = [5, -7, 0, info.max, info.min, info.min, 7, -9, 3, 1]
        b = [0, 0, 0, -1, -1, 0, -2, 4, 7, 0]
    else:
        a = [5, 7, 0, info.max, 0, info.max, 7, 9, 3, 1]
        b = [0, 0, 0, 1, 3, 0, 2, 4, info.max, 0]
    return np.array(a * 2, dtype), np.array(b * 2, dtype)


def _reference(a, b):
    with np.errstate(all="ignore"):
        fd = np.floor_divide(a, b)
        fm = np.mod(a, b)
        safe = np.where(b == 0, 1, b)
        td = np.where(b == 0, 0, (a - np.fmod(a, safe)) // safe).astype(a.dtype)
        tm = np.where(b == 0, 0, np.fmod(a, safe)).astype(a.dtype)
    return [fd, fm, td, tm]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_division_by_zero_is_zero_not_a_trap(dtype, vectorize):
    code = textwrap.dedent(f"""
        import numpy as np
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.safety.test_division import _program, _inputs, _reference
        import te
        s, args = _program({dtype!r}, {vectorize})
        f = te.build(s, args)
        a, b = _inputs({dtype!r})
        outs = [np.zeros_like(a) for _ in range(4)]
        f(a, b, *outs)
        for got, want in zip(outs, _reference(a, b)):
            np.testing.assert_array_equal(got, want)
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=str(ROOT))
    assert res.returncode == 0 and "ok" in res.stdout, res.stdout + res.stderr


def test_interpreter_divides_by_zero_the_same():
    s, args = _program("int32", False)
    a, b = _inputs("int32")
    outs = [np.zeros_like(a) for _ in range(4)]
    interpret(te.lower(s, args), a, b, *outs)
    for got, want in zip(outs, _reference(a, b)):
        np.testing.assert_array_equal(got, want)


def test_gpu_simulator_divides_by_zero_the_same():
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype="int32")
    B = te.placeholder((n,), name="B", dtype="int32")
    C = te.compute((n,), lambda i: te.floordiv(A[i], B[i]) * 1000 + te.floormod(A[i], B[i])
                   * 100 + te.truncdiv(A[i], B[i]) * 10 + te.truncmod(A[i], B[i]), name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    f = te.build(s, [A, B, C], target="cuda")
    a = np.array([5, -7, 0, 7, -9], "int32")
    b = np.array([0, 0, 0, -2, 4], "int32")
    c = np.zeros(5, "int32")
    f(a, b, c)
    fd, fm, td, tm = _reference(a, b)
    np.testing.assert_array_equal(c, fd * 1000 + fm * 100 + td * 10 + tm)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_gpu_truncdiv_of_the_dtype_minimum(dtype):
    # abs() of the minimum wraps: the quotient's sign came out wrong (fuzz seed 50026)
    A = te.placeholder((8,), name="A", dtype=dtype)
    B = te.placeholder((8,), name="B", dtype=dtype)
    C = te.compute((8,), lambda i: te.truncdiv(A[i], B[i]), name="C")
    D = te.compute((8,), lambda i: te.truncmod(A[i], B[i]), name="D")
    s = te.create_schedule([C.op, D.op])
    for T in (C, D):
        s[T].bind(T.op.axis[0], te.thread_axis("threadIdx.x"))
    f = te.build(s, [A, B, C, D], target="cuda")
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = np.array([lo, lo, lo, lo + 1, hi, -7, 7, lo], dtype)
    b = np.array([2, -2, 3, -1, -2, 2, -2, 0], dtype)
    c, d = np.zeros(8, dtype), np.zeros(8, dtype)
    f(a, b, c, d)
    wa, wb = a.astype(object), b.astype(object)
    q = [0 if y == 0 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)
         for x, y in zip(wa, wb)]
    r = [0 if y == 0 else x - qq * y for x, y, qq in zip(wa, wb, q)]
    wrap = lambda v: np.array([((x - lo) % (hi - lo + 1)) + lo for x in v], dtype)  # noqa
    np.testing.assert_array_equal(c, wrap(q))
    np.testing.assert_array_equal(d, wrap(r))

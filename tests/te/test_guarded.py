"""te.testing.guarded_empty / guarded_array: arrays between PROT_NONE guard pages, so that an
access past either end faults (checked in a subprocess: the fault kills it with SIGSEGV)."""
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from te.testing import check_guards, guarded_array, guarded_empty

PAGE = 4096


def _address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "float32",
                                   "float64", "bool"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (4096,), (1025, 3), (2, 0, 3)])
def test_in_bounds_read_write(shape, dtype):
    a = guarded_empty(shape, dtype)
    assert a.shape == shape and a.dtype == np.dtype(dtype) and a.flags.c_contiguous
    assert a.flags.writeable and _address(a) % a.itemsize == 0
    ref = (np.arange(a.size) % 3).astype(dtype).reshape(shape)
    a[...] = ref
    np.testing.assert_array_equal(a, ref)
    if a.size:
        assert (_address(a) + a.nbytes) % PAGE == 0        # the end touches the guard page
    check_guards(a)


def test_start_aligned_and_copy():
    values = np.arange(10, dtype="int16").reshape(2, 5)
    b = guarded_array(values, at="start")
    assert _address(b) % PAGE == 0
    np.testing.assert_array_equal(b, values)
    c = guarded_array([1.5, 2.5])
    assert c.dtype == np.float64 and (_address(c) + c.nbytes) % PAGE == 0
    check_guards(b)
    check_guards(c)


def test_odd_itemsize_keeps_alignment():
    dt = np.dtype([("a", "u1"), ("b", "u1"), ("c", "u1")])     # itemsize 3
    a = guarded_empty((5,), dt)
    assert (_address(a) - (_address(a) // PAGE) * PAGE) % 3 == 0 or a.size == 0
    slack = PAGE - (_address(a) + a.nbytes) % PAGE
    assert slack < 3        # under one element past the end
    check_guards(a)


def test_check_guards_sees_a_short_overflow():
    a = guarded_empty((5,), "int32", at="start")           # canary after the end
    a.base[PAGE + a.nbytes] = 0                            # one byte past the end
    with pytest.raises(AssertionError, match="past the end"):
        check_guards(a)
    b = guarded_empty((5,), "int32")                       # canary before the start
    b.base[_address(b) - _address(b) // PAGE * PAGE + PAGE - 1] = 0
    with pytest.raises(AssertionError, match="before the start"):
        check_guards(b)


def test_memory_outlives_the_name():
    a = guarded_empty((100,), "float64")
    view = a[10:20]
    del a
    view[:] = 3.0
    assert view.sum() == 30.0


def test_refuses_bad_arguments():
    with pytest.raises(ValueError, match="at must be 'end' or 'start'"):
        guarded_empty((2,), "int8", at="middle")
    with pytest.raises(ValueError, match="negative dimension"):
        guarded_empty((2, -1), "int8")
    with pytest.raises(ValueError, match="not made by guarded_empty"):
        check_guards(np.zeros(3))


def _run(body):
    code = textwrap.dedent("""
        import ctypes
        from te.testing import guarded_empty
        """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("at,step,what", [
    ("end", "a.nbytes", "one element past the end"),
    ("start", "-a.itemsize", "one element before the start"),
    ("end", "-4097", "a page before the start"),
])
def test_out_of_bounds_write_faults(at, step, what):
    proc = _run(f"""
        a = guarded_empty((7,), "int32", at={at!r})
        a[:] = 1                                     # in bounds: fine
        print("in bounds ok", flush=True)
        addr = a.__array_interface__["data"][0] + ({step})
        ctypes.c_int32.from_address(addr).value = 5  # {what}
        print("not reached")
        """)
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "in bounds ok\n"


def test_out_of_bounds_read_faults():
    proc = _run("""
        a = guarded_empty((3, 3), "float64")
        a[:] = 2.0
        print(a.sum(), flush=True)
        print(ctypes.c_double.from_address(a.__array_interface__["data"][0] + a.nbytes).value)
        """)
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "18.0\n"

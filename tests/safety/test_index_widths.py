"""Index widths (issue 16, kinds 5, 6 and 9): int64 size variables loop and index in int64,
arrays too large for a function's int32 index arithmetic are refused at call time, intermediate
allocations are sized in 64 bits and fail with MemoryError, and index widths never mix in the IR.

Huge arrays are np.memmap views of sparse temporary files: contiguous, and only the pages that
are touched cost memory. Calls that could crash the process on a regression (a wrapped index
reads or writes far outside a buffer) run in a subprocess."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import te
from codegen_llvm import ArgumentError
from schedule.ir import Buffer, BufferStore, For, ForKind, PrimFunc
from schedule.lower import PASSES, lower
from schedule.verify import IRVerifyError, verify
from te.expr import Add, IntImm, Var

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HUGE = 2**32 + 16           # elements: an int32 count of it is 16


def run_case(code, timeout=120):
    """Run ``code`` in a fresh interpreter (numpy, te and a ``big(shape, dtype)`` that makes
    a sparse-file memmap are imported); its exit status and output."""
    prelude = textwrap.dedent("""
        import os, tempfile
        import numpy as np
        import te
        from codegen_llvm import ArgumentError
        _dir = tempfile.mkdtemp()
        def big(shape, dtype="float32"):
            path = os.path.join(_dir, f"a{len(os.listdir(_dir))}")
            return np.memmap(path, dtype=dtype, mode="w+", shape=shape)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr


# ----------------------------------------------------------------------------- kind 5

def test_int64_variable_loops_in_int64():
    """te.var(n, "int64") loops over n, not int32(n): the loop variable is an i64 phi and n is
    never truncated."""
    n = te.var("n", "int64")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    assert B.op.axis[0].var.dtype == "int64"
    text = str(te.lower(s, [A, B]))
    assert "for i in range(n):" in text and "int32" not in text
    f = te.build(s, [A, B])
    ll = f.get_source("ll-raw")
    assert re.search(r'%"i" = phi\s+i64', ll) and "trunc i64" not in ll
    a = np.arange(11, dtype="float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_int64_reduce_axis_loops_in_int64():
    n = te.var("n", "int64")
    A = te.placeholder((n,), name="A", dtype="float64")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    assert k.var.dtype == "int64"
    f = te.build(te.create_schedule(B.op), [A, B])
    assert re.search(r'%"k" = phi\s+i64', f.get_source("ll-raw"))
    a = np.random.default_rng(0).random(37)
    b = np.empty(1)
    f(a, b)
    np.testing.assert_allclose(b, [a.sum()])


def test_int64_dimension_gets_int64_flat_index():
    """A buffer with an int64 dimension is indexed in int64 even from int32 loops: the
    operands are widened before the arithmetic (i * 24 in int32 would wrap first)."""
    n, m = te.var("n", "int64"), te.var("m")
    A = te.placeholder((n, 8), name="A")
    C = te.compute((m,), lambda i: A[i * 3, 1] + 1, name="C")
    s = te.create_schedule(C.op)
    assert "int64(i) * 24 + 1" in str(te.lower(s, [A, C]))
    f = te.build(s, [A, C])
    assert re.search(r"mul i64 .*, 24", f.get_source("ll-raw"))
    a = np.arange(80, dtype="float32").reshape(10, 8)
    c = np.empty(4, "float32")
    f(a, c)
    np.testing.assert_array_equal(c, a[0:10:3, 1] + 1)


def test_int32_sizes_keep_int32_indices():
    """Functions with int32 sizes are unchanged: int32 loops and index arithmetic."""
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    B = te.compute((n, 8), lambda i, j: A[i, j] + 1, name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    ll = f.get_source("ll-raw")
    assert re.search(r'%"i" = phi\s+i32', ll) and "mul i64" not in ll
    a = np.ones((3, 8), "float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_constant_shape_beyond_int32_gets_int64_index():
    """A constant shape of 2^32 elements (65536 x 65536) is indexed in int64, and fusing its
    axes makes an int64 loop (the int32 product wraps to 0)."""
    A = te.placeholder((65536, 65536), name="A")
    C = te.compute((4,), lambda i: A[65535, i], name="C")
    f = te.build(te.create_schedule(C.op), [A, C])
    assert "mul i64" in f.get_source("ll-raw") or "4294901760" in f.get_source("ll-raw")
    B = te.compute((65536, 65536), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    assert fused.var.dtype == "int64"
    assert "for i_j_fused in range(4294967296):" in str(te.lower(s, [A, B]))
    small = te.placeholder((3, 5), name="S")
    T = te.compute((3, 5), lambda i, j: small[i, j] * 2, name="T")
    s = te.create_schedule(T.op)
    assert s[T].fuse(*T.op.axis).var.dtype == "int32"


def test_huge_arrays_refused_or_indexed_in_int64():
    """int32 sizes: a 1-D array of 2^32 + 16 elements and a 2-D one of over 2^31 elements are
    refused, naming the argument, its size and what to declare; int64 sizes: the same arrays
    are read at offsets past 2^32 (values written at the end of the sparse file)."""
    rc, out = run_case(f"""
        m = te.var("m")
        for dtype in ("int32", "int64"):
            n = te.var("n", dtype)
            A = te.placeholder((n,), name="A")
            C = te.compute((m,), lambda i: A[n - m + i] * 2, name="C")
            f = te.build(te.create_schedule(C.op), [A, C])
            a = big(({HUGE},))
            a[-4:] = [1, 2, 3, 4]
            c = np.zeros(4, "float32")
            try:
                f(a, c)
                print(dtype, "1-D", c.tolist())
            except ArgumentError as err:
                print(dtype, "1-D refused:", err)
            A = te.placeholder((n, 8), name="A")
            C = te.compute((8,), lambda j: A[n - 1, j] + 1, name="C")
            f = te.build(te.create_schedule(C.op), [A, C])
            a = big(({HUGE // 8}, 8))
            a[-1] = np.arange(8)
            c = np.zeros(8, "float32")
            try:
                f(a, c)
                print(dtype, "2-D", c.tolist())
            except ArgumentError as err:
                print(dtype, "2-D refused:", err)
    """)
    assert rc == 0, out
    hint = ("declare the size variables as te.var(name, 'int64') (and te.placeholder shapes "
            "as int64) to handle it")
    assert (f"int32 1-D refused: argument A: dimension 0 (n) is {HUGE}, more than 2^31 - 1, "
            f"the largest int32 size this function was built with; {hint}") in out
    assert (f"int32 2-D refused: argument A has {HUGE} elements (shape ({HUGE // 8}, 8)), "
            "more than 2^31 - 1, which this function's int32 index arithmetic cannot "
            f"address; {hint}") in out
    assert "int64 1-D [2.0, 4.0, 6.0, 8.0]" in out
    assert "int64 2-D [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]" in out


def test_huge_output_refused_before_writing():
    """An output too large for int32 indices is refused before the kernel runs (nothing is
    written), also through the fast path of plain numpy arguments."""
    rc, out = run_case(f"""
        n = te.var("n")
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] + 1, name="B")
        f = te.build(te.create_schedule(B.op), [A, B])
        a, b = big(({HUGE},)), big(({HUGE},))
        b[:16] = 7
        try:
            f(a, b)
        except ArgumentError as err:
            print("refused:", err)
        print("untouched:", bool((b[:16] == 7).all()))
        small = np.arange(5, dtype="float32")
        out = np.empty(5, "float32")
        f(small, out)
        print("small:", out.tolist())
    """)
    assert rc == 0, out
    assert f"refused: argument A: dimension 0 (n) is {HUGE}" in out
    assert "untouched: True" in out and "small: [1.0, 2.0, 3.0, 4.0, 5.0]" in out


def test_cuda_launch_refuses_huge_arrays_and_runs_int64():
    """The GPU module checks arguments with the same Signature: a huge array is refused
    before any copy to the device; an int64 size builds and runs (simulator)."""
    rc, out = run_case(f"""
        def kernel(dtype):
            n = te.var("n", dtype)
            A = te.placeholder((n, 3), name="A")
            B = te.compute((n, 3), lambda i, j: A[i, j] * 2 + j.astype("float32"), name="B")
            s = te.create_schedule(B.op)
            bx, tx = s[B].split(s[B].fuse(*B.op.axis), factor=32)
            s[B].bind(bx, te.thread_axis("blockIdx.x"))
            s[B].bind(tx, te.thread_axis("threadIdx.x"))
            return te.build(s, [A, B], target="cuda")
        f = kernel("int32")
        try:
            f(big(({2**30 + 4}, 3)), np.empty((2, 3), "float32"))
        except ArgumentError as err:
            print("refused:", err)
        f = kernel("int64")
        a = np.random.default_rng(0).random((70, 3)).astype("float32")
        b = np.empty_like(a)
        f(a, b)
        print("int64 ok:", bool(np.allclose(b, a * 2 + np.arange(3, dtype="float32"))))
    """, timeout=300)
    assert rc == 0, out
    assert (f"refused: argument A has {(2**30 + 4) * 3} elements (shape ({2**30 + 4}, 3)), "
            "more than 2^31 - 1") in out
    assert "int64 ok: True" in out


# ----------------------------------------------------------------------------- kind 6

def _outer_sum(dtype, parallel=False):
    """C[i] = sum_j A[i] * A[j] through a stored (n, n) intermediate B (not inlined)."""
    n = te.var("n", dtype)
    A = te.placeholder((n,), name="A", dtype="float64")
    B = te.compute((n, n), lambda i, j: A[i] * A[j], name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n,), lambda i: te.sum(B[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    if parallel:
        s[C].parallel(C.op.axis[0])
    return s, A, C


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_symbolic_intermediate_of_moderate_size_works(dtype):
    """A (2000, 2000) float64 intermediate (32 MB, malloc'ed) computes the right values."""
    s, A, C = _outer_sum(dtype)
    f = te.build(s, [A, C])
    ll = f.get_source("ll-raw")
    assert "llvm.smul.with.overflow.i64" in ll and '@"malloc"' in ll
    a = np.random.default_rng(1).random(2000)
    c = np.empty(2000)
    f(a, c)
    np.testing.assert_allclose(c, a * a.sum(), rtol=1e-12)


def test_intermediate_allocation_failures_raise():
    """A byte count past 64 bits and one past the address space raise MemoryError naming the
    buffer, its bytes and n, also from a parallel loop's thread; an int32-indexed intermediate
    of more than 2^31 - 1 elements raises ArgumentError (it would wrap and overflow the heap).
    The process survives and the function still works on small sizes afterwards."""
    rc, out = run_case("""
        import sys
        sys.path.insert(0, os.getcwd())
        from tests.safety.test_index_widths import _outer_sum
        def attempt(label, dtype, n, parallel=False):
            s, A, C = _outer_sum(dtype, parallel)
            f = te.build(s, [A, C])
            a = big((n,), "float64")
            try:
                f(a, big((n,), "float64"))
                print(label, "ran")
            except (MemoryError, ArgumentError) as err:
                print(label, type(err).__name__, err)
            small = np.arange(4.0)
            c = np.empty(4)
            f(small, c)
            print(label, "after:", c.tolist())
        attempt("overflow", "int64", 2**30)
        attempt("address space", "int64", 2**22 + 1)
        attempt("parallel", "int64", 2**30, parallel=True)
        attempt("int32", "int32", 65537)
    """, timeout=240)
    assert rc == 0, out
    assert ("overflow MemoryError default_function: intermediate buffer B needs "
            "9223372036854775808 bytes (n = 1073741824): more than 64-bit sizes hold") in out
    nbytes = (2**22 + 1) ** 2 * 8
    assert (f"address space MemoryError default_function: intermediate buffer B needs {nbytes} "
            "bytes (n = 4194305): out of memory") in out
    assert "parallel MemoryError default_function: intermediate buffer B needs" in out
    assert ("int32 ArgumentError default_function: intermediate buffer B has 4295098369 "
            "elements (n = 65537), more than 2^31 - 1, which this function's int32 index "
            "arithmetic cannot address") in out
    ref = (np.arange(4.0) * np.arange(4.0).sum()).tolist()
    for label in ("overflow", "address space", "parallel", "int32"):
        assert f"{label} after: {ref}" in out


def test_large_constant_intermediate_is_malloced_and_checked():
    """A constant intermediate of 16 GiB is neither a stack buffer (its int32 size wrapped to
    0 elements) nor the workspace arena: it is malloc'ed with the checks."""
    A = te.placeholder((65536, 65536), name="A")
    B = te.compute((65536, 65536), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((65536, 65536), lambda i, j: B[i, j] + 1, name="C")
    f = te.build(te.create_schedule(C.op), [A, C])
    assert f.workspace_bytes is None
    ll = f.get_source("ll-raw")
    assert "alloca float, i64 0" not in ll and "llvm.smul.with.overflow.i64" in ll


# ----------------------------------------------------------------------------- kind 9

def _split_factor(s, B, C):
    s[C].split(C.op.axis[0], factor=3)


def _split_nparts_compute_at(s, B, C):          # the example of the issue
    xo, _ = s[C].split(C.op.axis[0], nparts=2)
    s[B].compute_at(s[C], xo)


def _split_factor_compute_at_inner(s, B, C):
    _, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xi)


def _fuse(s, B, C):
    s[C].fuse(*C.op.axis)


def _tile(s, B, C):
    if len(C.op.axis) == 2:
        s[C].tile(C.op.axis[0], C.op.axis[1], 4, 2)
    else:
        s[C].split(C.op.axis[0], factor=4)


def _vectorize(s, B, C):
    _, xi = s[C].split(C.op.axis[-1], factor=4)
    s[C].vectorize(xi)


def _parallel(s, B, C):
    s[C].parallel(C.op.axis[0])


def _parallel_split_compute_at(s, B, C):
    xo, _ = s[C].split(C.op.axis[0], factor=3)
    s[C].parallel(xo)
    s[B].compute_at(s[C], xo)


def _fuse_split_vectorize_parallel(s, B, C):
    xo, xi = s[C].split(s[C].fuse(*C.op.axis), factor=8)
    s[C].parallel(xo)
    s[C].vectorize(xi)
    s[B].compute_at(s[C], xo)


def _unroll(s, B, C):
    _, xi = s[C].split(C.op.axis[-1], factor=2)
    s[C].unroll(xi)


def _inline(s, B, C):
    s[B].compute_inline()


def _cache_write(s, B, C):
    s.cache_write(C, "global")


SCHEDULES = [_split_factor, _split_nparts_compute_at, _split_factor_compute_at_inner, _fuse,
             _tile, _vectorize, _parallel, _parallel_split_compute_at,
             _fuse_split_vectorize_parallel, _unroll, _inline, _cache_write]


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__.strip("_"))
def test_int64_variable_with_schedules(schedule, ndim):
    """Each schedule of an int64 size variable lowers with one index width (TW_VERIFY checks
    every binary node), compiles and matches numpy, at sizes 0, 1 and 13."""
    n = te.var("n", "int64")
    shape = (n, 5) if ndim == 2 else (n,)
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda *i: A[i] * 2, name="B")
    # a stencil whose clamped reads make min/max of the axis in bound inference
    C = te.compute(shape, lambda *i: B[i] + B[(te.min(i[0] + 1, n - 1),) + i[1:]], name="C")
    s = te.create_schedule(C.op)
    schedule(s, B, C)
    f = te.build(s, [A, C])
    for size in (0, 1, 13):
        full = (size, 5) if ndim == 2 else (size,)
        a = np.arange(np.prod(full), dtype="float32").reshape(full)
        c = np.full(full, -7, "float32")
        f(a, c)
        b = a * 2
        np.testing.assert_array_equal(c, b + b[np.minimum(np.arange(size) + 1, size - 1)])


def test_int64_reduction_split_rfactor_parallel():
    n = te.var("n", "int64")
    A = te.placeholder((n, 6), name="A", dtype="float64")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((6,), lambda j: te.sum(A[k, j], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    BF = s.rfactor(B, ki)
    s[BF].parallel(BF.op.axis[0])
    f = te.build(s, [A, B])
    for size in (0, 3, 17):
        a = np.random.default_rng(size).random((size, 6))
        b = np.empty(6)
        f(a, b)
        np.testing.assert_allclose(b, a.sum(axis=0), rtol=1e-12)


def test_int64_and_int32_sizes_mix():
    """An int64 and an int32 size variable in one function: transposed reads, a product of
    the two in an index, a split of each."""
    n, m = te.var("n", "int64"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((m, n), lambda i, j: A[j, i] + (i * n + j).astype("float32"), name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=2)
    jo, ji = s[B].split(B.op.axis[1], nparts=3)
    s[B].reorder(io, jo, ii, ji)
    f = te.build(s, [A, B])
    a = np.random.default_rng(2).random((7, 5)).astype("float32")
    b = np.empty((5, 7), "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.T + np.arange(35, dtype="float32").reshape(5, 7))


def test_numpy_int64_split_factor_stays_int32():
    """A numpy int64 factor on an int32 axis does not widen the loops."""
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=np.int64(4))
    assert xo.var.dtype == xi.var.dtype == "int32"
    assert "int64" not in str(te.lower(s, [A, B]))


def test_verifier_names_mixed_width_node():
    """The verifier between passes refuses a binary node whose operands differ in width,
    naming the node and both dtypes; a pass that makes one is caught at lowering."""
    n = Var("n", "int64")
    i = Var("i", "int32")
    buf = Buffer("B", (n,), "int64")
    bad = Add(i, n, "int64")
    func = PrimFunc("f", [buf], For(i, IntImm(0, "int32"), IntImm(4, "int32"), ForKind.SERIAL,
                                    BufferStore(buf, bad, (i,))))
    with pytest.raises(IRVerifyError, match=re.escape(
            "IR verification failed in f: operands of Add i + n have dtypes int32 and int64")):
        verify(func)

    from schedule.functor import IRMutator

    class MixWidths(IRMutator):         # a broken user pass: i + n with i int32, n int64
        def visit_BufferStore(self, node):
            return BufferStore(node.buffer, Add(node.indices[0], nv, "int64"), node.indices)

    nv = te.var("n", "int64")
    A = te.placeholder((nv,), name="A", dtype="int64")
    C = te.compute((4,), lambda j: A[j], name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(IRVerifyError, match="operands of Add j \\+ n have dtypes int32 and "
                                            "int64"):
        lower(s, [A, C], passes=PASSES + (lambda body: MixWidths().visit(body),))


def test_loop_bound_arithmetic_that_would_wrap_is_a_call_time_condition():
    # the tail loop's bound (n + 15) // 16 wraps in int32 for n > 2**31 - 16: the loop would
    # skip the tail silently; the call is refused for those n (checked without 2 GB arrays,
    # through the same precondition function the call runs)
    from schedule.bound_checks import compile_preconditions, precondition_message
    n = te.var("n")
    A = te.placeholder((n,), "int8", name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=16)
    f = lower(s, [A, B])
    check = compile_preconditions(f.preconditions, [n])
    assert check(2**31 - 16) == -1 and check(0) == -1 and check(1000) == -1
    bad = check(2**31 - 15)
    assert bad >= 0
    msg = precondition_message("f", f.preconditions[bad], [n], [2**31 - 15])
    assert "n + 15" in msg and "int32" in msg and "int64" in msg
    a = np.arange(40, dtype="int8")
    b = np.zeros(40, "int8")
    te.build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, a + 1)

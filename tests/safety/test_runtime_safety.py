"""The CPU runtime never crashes, hangs or corrupts memory (issue 16, kinds 7, 8 and 13):

- calls that nest (a ``te.extern`` callback that calls another built function, or the same
  one) each get a workspace arena of their own (codegen_llvm/runtime.py ``with_workspace``);
- integer min/max of narrow values widened to int32/int64 compile (LLVM's SLP vectorizer
  aborted the process on them), and a module that LLVM's verifier rejects is a CodegenError;
- a child made by fork runs parallel kernels (serially) instead of hanging in libgomp.

Programs that crashed, or could hang, run in a subprocess with a timeout.
"""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import te
from codegen_llvm import CodegenError, jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_script(code, timeout=120, env=None):
    """Run ``code`` in a fresh interpreter from the repository root; (returncode, output)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout + proc.stderr


# ----------------------------------------------------------------- kind 7: nested calls

NESTED = """
    import sys, threading
    import numpy as np
    import te
    from codegen_llvm import runtime
    from te.extern import ExternError

    N = 256 * 1024          # float32: 1 MiB intermediates, in the workspace arena

    def two_stage(n, scale, offset, name):
        # Z[i] = scale * X[n - 1 - i] + offset through a 1 MiB (or larger) intermediate Y
        X = te.placeholder((n,), name="X")
        Y = te.compute((n,), lambda i: X[i] * scale, name="Y")
        Z = te.compute((n,), lambda i: Y[n - 1 - i] + offset, name="Z")
        f = te.build(te.create_schedule(Z.op), [X, Z], name=name)
        assert f.workspace_bytes == n * 4, f.workspace_bytes
        return f

    def with_extern(callback, name):
        # C[i] = B[N - 1 - i] + E[i], B = 2 A, E = callback(B): B and E live in the workspace
        A = te.placeholder((N,), name="A")
        B = te.compute((N,), lambda i: A[i] * 2.0, name="B")
        E = te.extern((N,), [B], lambda ins, outs: te.call_packed(callback, ins[0], outs[0]),
                      name="E")
        C = te.compute((N,), lambda i: B[N - 1 - i] + E[i], name="C")
        f = te.build(te.create_schedule(C.op), [A, C], name=name)
        assert f.workspace_bytes >= 2 * N * 4, f.workspace_bytes
        return f

    def check(got, want, what):
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=what)
        print("ok", what, flush=True)
"""


def test_nested_calls_keep_the_outer_calls_intermediates():
    """The callback calls a function whose workspace is as large as the outer one's (it
    overwrote the outer intermediates) and one whose workspace is larger (the arena was
    reallocated under the outer call: a use after free)."""
    code = NESTED + """
    rng = np.random.default_rng(0)
    a = rng.random(N, dtype=np.float32)
    want_b = a * 2
    for n_inner in (N, 2 * N):
        g = two_stage(n_inner, 3.0, -1.0, f"inner{n_inner}")

        @te.register_func("safety.inner", override=True)
        def inner(b, e, g=g, n_inner=n_inner):
            x = np.zeros(n_inner, np.float32)
            x[:N] = b.numpy()
            z = np.empty(n_inner, np.float32)
            g(x, z)                                 # a call while the outer one runs
            e.copyfrom(z[n_inner - N:] if n_inner > N else z)

        f = with_extern("safety.inner", f"outer{n_inner}")
        c = np.empty(N, np.float32)
        f(a, c)
        x = np.zeros(n_inner, np.float32)
        x[:N] = want_b
        want_e = (3 * x[::-1] - 1)[n_inner - N:] if n_inner > N else 3 * want_b[::-1] - 1
        check(c, want_b[::-1] + want_e, f"nested call, inner workspace {n_inner * 4} bytes")
        c2 = np.empty(N, np.float32)
        f(a, c2)                                    # and again, with the arenas kept
        check(c2, c, f"second call, inner workspace {n_inner * 4} bytes")
    # the inner function called directly (no nesting) still reuses one arena
    assert len(runtime._ARENAS.arenas) == 2, runtime._ARENAS.arenas
    z = np.empty(N, np.float32)
    two_stage(N, 3.0, -1.0, "inner_direct")(a, z)
    check(z, 3 * a[::-1] - 1, "direct call after nesting")
    """
    rc, out = run_script(code)
    assert rc == 0, out
    assert out.count("ok ") == 5, out


def test_recursive_calls_of_one_function():
    """The callback calls the function it runs in, three levels deep."""
    code = NESTED + """
    depth = [0]

    @te.register_func("safety.recurse", override=True)
    def recurse(b, e):
        if depth[0] == 3:
            e.copyfrom(np.ones(N, np.float32))
            return
        depth[0] += 1
        try:
            f(b, e)
        finally:
            depth[0] -= 1

    f = with_extern("safety.recurse", "recursive")

    def ref(a, level):
        b = a * 2
        return b[::-1] + (ref(b, level + 1) if level < 3 else 1)

    a = np.random.default_rng(1).random(N, dtype=np.float32)
    c = np.empty(N, np.float32)
    f(a, c)
    check(c, ref(a, 0), "recursion 4 calls deep")
    assert len(runtime._ARENAS.arenas) == 4, len(runtime._ARENAS.arenas)
    runtime.release_workspace()
    f(a, c)
    check(c, ref(a, 0), "recursion after release_workspace")
    """
    rc, out = run_script(code)
    assert rc == 0, out
    assert out.count("ok ") == 2, out


def test_an_error_in_the_inner_call_propagates_and_the_outer_arena_survives():
    code = NESTED + """
    fail = [True]

    @te.register_func("safety.maybe_fail", override=True)
    def maybe_fail(x, y):
        if fail[0]:
            raise ValueError("inner callback failed on purpose")
        y.copyfrom(x.numpy() + 5)

    X = te.placeholder((N,), name="X")
    Y = te.compute((N,), lambda i: X[i] * 3.0, name="Y")
    Z = te.extern((N,), [Y], lambda ins, outs: te.call_packed("safety.maybe_fail", ins[0],
                                                                outs[0]), name="Z")
    W = te.compute((N,), lambda i: Z[N - 1 - i] - Y[i], name="W")
    g = te.build(te.create_schedule(W.op), [X, W], name="inner_may_fail")
    assert g.workspace_bytes

    @te.register_func("safety.call_inner", override=True)
    def call_inner(b, e):
        g(b, e)

    f = with_extern("safety.call_inner", "outer_of_failing")
    a = np.random.default_rng(2).random(N, dtype=np.float32)
    c = np.empty(N, np.float32)
    try:
        f(a, c)
    except ExternError as err:             # each extern level names its function
        assert str(err) == ("extern function 'safety.call_inner' raised ExternError: extern "
                            "function 'safety.maybe_fail' raised ValueError: inner callback "
                            "failed on purpose"), err
        print("ok raised", flush=True)
    else:
        raise AssertionError("the inner error did not propagate")
    assert len(runtime._ARENAS.arenas) == 2, runtime._ARENAS.arenas   # both given back
    fail[0] = False
    f(a, c)
    b = a * 2
    y = 3 * b
    e = (y + 5)[::-1] - y
    check(c, b[::-1] + e, "outer call after the failed one")
    """
    rc, out = run_script(code)
    assert rc == 0, out
    assert "ok raised" in out and "ok outer call after the failed one" in out, out


def test_threads_running_nested_calls():
    code = NESTED + """
    g = two_stage(N, 3.0, -1.0, "inner_threads")

    @te.register_func("safety.inner_threads", override=True)
    def inner(b, e):
        g(b, e)

    f = with_extern("safety.inner_threads", "outer_threads")
    inputs = [np.random.default_rng(k).random(N, dtype=np.float32) for k in range(4)]
    errors = []

    def work(k):
        try:
            c = np.empty(N, np.float32)
            for _ in range(5):
                f(inputs[k], c)
                b = inputs[k] * 2
                np.testing.assert_allclose(c, b[::-1] + 3 * b[::-1] - 1, rtol=1e-6)
        except BaseException as err:       # reported below
            errors.append((k, err))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    print("ok threads", flush=True)
    """
    rc, out = run_script(code)
    assert rc == 0, out
    assert "ok threads" in out, out


# ----------------------------------------------------------------- kind 8: LLVM aborts

MINMAX = """
    import itertools, sys
    import numpy as np
    import te

    def case(src, dst, op, shape, sched, n=16):
        pick = te.max if op == "max" else te.min          # te.max(x, y): elementwise
        npop = np.maximum if op == "max" else np.minimum
        a, b, c = [te.placeholder((n, n), src, name=x) for x in "abc"]
        w = lambda t: t.astype(dst)
        k = te.reduce_axis((0, n), name="k")
        if shape == "sum_then":         # the issue's program: max(max(a + b, c), axis=k)
            d = te.compute((n,), lambda i: pick(pick(w(a[i, k]) + w(b[i, k]), w(c[i, k])),
                                                axis=k), name="d")
            ref = lambda x, y, z: npop.reduce(npop(x + y, z), axis=1)
        elif shape == "difference":
            d = te.compute((n,), lambda i: pick(pick(w(a[i, k]) - w(b[i, k]), w(c[i, k])),
                                                axis=k), name="d")
            ref = lambda x, y, z: npop.reduce(npop(x - y, z), axis=1)
        elif shape == "nested":
            d = te.compute((n,), lambda i: pick(pick(pick(w(a[i, k]), w(b[i, k]) * 3),
                                                     w(c[i, k]) + 1), axis=k), name="d")
            ref = lambda x, y, z: npop.reduce(npop(npop(x, y * 3), z + 1), axis=1)
        else:                           # elementwise
            d = te.compute((n, n), lambda i, j: pick(w(a[i, j]) + w(b[i, j]), w(c[i, j])),
                           name="d")
            ref = lambda x, y, z: npop(x + y, z)
        s = te.create_schedule(d.op)
        if sched == "vectorize":
            _, inner = s[d].split(d.op.axis[-1], factor=8)
            s[d].vectorize(inner)
        f = te.build(s, [a, b, c, d])
        rng = np.random.default_rng(0)
        info = np.iinfo(src)
        x, y, z = [rng.integers(info.min, info.max, size=(n, n), endpoint=True).astype(src)
                   for _ in range(3)]
        out = np.zeros(tuple(v.value for v in d.shape), dst)
        f(x, y, z, out)
        np.testing.assert_array_equal(out, ref(*(v.astype(dst) for v in (x, y, z))))
        print("ok", src, dst, op, shape, sched, flush=True)
"""


def test_min_max_of_widened_narrow_integers_build_and_match_numpy():
    """Every (source, destination, min/max) of the issue's reduction with the default
    schedule (8 of these 16 aborted in LLVM's SLP vectorizer), then other shapes and the
    vectorized schedule on a sample of dtypes."""
    code = MINMAX + """
    dtypes = list(itertools.product(["int8", "int16", "int32", "uint8"], ["int64", "int32"],
                                    ["max", "min"]))
    for src, dst, op in dtypes:
        case(src, dst, op, "sum_then", "default")
    sample = [("int16", "int64"), ("int8", "int32"), ("uint8", "int64"), ("int32", "int64")]
    for (src, dst), op, (shape, sched) in itertools.product(
            sample, ["max", "min"], [("sum_then", "vectorize"), ("difference", "default"),
                                     ("nested", "default"), ("elementwise", "vectorize")]):
        case(src, dst, op, shape, sched)
    """
    rc, out = run_script(code, timeout=300)
    assert rc == 0, out
    assert out.count("ok ") == 16 + 4 * 2 * 4, out


def _vector_ops(f):
    return re.findall(r"<\d+ x (?:i32|float)>", f.get_source("ll"))


@pytest.mark.parametrize("dtype,n", [("float32", 16), ("int32", 16), ("int32", 256)])
def test_max_reductions_still_vectorize(dtype, n):
    """Turning off the SLP transform that aborted leaves vectorization on: an unrolled
    (n = 16: SLP) and a loop (n = 256: the loop vectorizer) max-reduction use vectors."""
    a = te.placeholder((n, n), dtype, name="a")
    k = te.reduce_axis((0, n), name="k")
    d = te.compute((n,), lambda i: te.max(a[i, k], axis=k), name="d")
    f = te.build(te.create_schedule(d.op), [a, d])
    assert _vector_ops(f), f.get_source("ll")
    rng = np.random.default_rng(0)
    x = (rng.random((n, n)) * 100).astype(dtype) if dtype == "float32" else \
        rng.integers(-1000, 1000, (n, n)).astype(dtype)
    out = np.zeros(n, dtype)
    f(x, out)
    np.testing.assert_array_equal(out, x.max(axis=1))


def _target_machine():
    return jit.target_machine(jit.target_options())


def test_llvm_ir_that_does_not_parse_is_a_codegen_error():
    bad = '; ModuleID = "broken_parse"\ndefine i32 @tw_broken_parse( {\n'
    with pytest.raises(CodegenError, match=r"llvm codegen of broken_parse: the emitted LLVM "
                                           r"IR is invalid \(.*\); this is a compiler bug"):
        jit.compile_ir(bad, _target_machine())


def test_llvm_ir_that_fails_the_verifier_is_a_codegen_error():
    """It parses, but a value is used where it does not dominate its use: LLVM's passes
    could abort on such a module, so the verifier runs first."""
    bad = textwrap.dedent("""\
        ; ModuleID = "broken_verify"
        define i32 @tw_broken_verify(i32 %a) {
        entry:
          br label %use
        def:
          %x = add i32 %a, 1
          br label %use
        use:
          ret i32 %x
        }
        """)
    with pytest.raises(CodegenError, match=r"llvm codegen of broken_verify: the emitted LLVM "
                                           r"IR is invalid \(.*dominate.*\)"):
        jit.compile_ir(bad, _target_machine())


def test_llvmlite_builder_errors_are_codegen_errors_naming_the_function():
    """A loop-IR node with operands of two widths (an int64 + an int32 constant, which no
    pass should produce) reaches llvmlite's IR builder: a CodegenError, not a bare
    ValueError from inside llvmlite."""
    from schedule.functor import IRMutator
    from te.expr import IntImm

    A = te.placeholder((8,), "int64", name="A")
    B = te.compute((8,), lambda i: A[i] + te.const(7, "int64"), name="B")
    func = te.lower(te.create_schedule(B.op), [A, B], name="mixed_widths")

    class NarrowSeven(IRMutator):
        def visit_IntImm(self, node):
            return IntImm(7, "int32") if node.value == 7 else node

    func.body = NarrowSeven().visit(func.body)
    with pytest.raises(CodegenError, match=r"llvm codegen of mixed_widths: Operands must be "
                                           r"the same type, got \(i64, i32\) .*compiler bug"):
        te.build(func)


# ----------------------------------------------------------------- kind 13: fork

FORK = """
    import multiprocessing, os, signal, sys
    import numpy as np
    import te
    from codegen_llvm import runtime
    from te.extern import ExternError

    n = 1 << 16
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    outer, inner = s[B].split(B.op.axis[0], factor=1024)
    s[B].parallel(outer)
    s[B].vectorize(inner)
    f = te.build(s, [A, B])
    assert "GOMP_parallel" in f.get_source("ll-raw")

    def run(seed):
        a = np.random.default_rng(seed).random(n, dtype=np.float32)
        b = np.empty(n, np.float32)
        f(a, b)
        np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))
        return seed

    def threads():
        return len(os.listdir("/proc/self/task"))

    run(0)                                  # the parent's pool exists now
    assert threads() >= 2 and runtime.get_num_threads() == 2, (threads(),
                                                               runtime.get_num_threads())
"""


def test_a_forked_child_runs_parallel_kernels():
    code = FORK + """
    pid = os.fork()
    if pid == 0:
        signal.alarm(30)                    # a hung child ends itself
        try:
            run(1)
            run(2)
            assert runtime.get_num_threads() == 1 and threads() == 1, threads()
        except BaseException as err:
            print("child failed:", repr(err), flush=True)
            os._exit(3)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    print("ok child", flush=True)
    run(3)                                  # the parent still runs on its pool
    assert threads() >= 2 and runtime.get_num_threads() == 2
    print("ok parent", flush=True)
    """
    rc, out = run_script(code, timeout=90, env={"TW_NUM_THREADS": "2"})
    assert rc == 0, out
    assert "ok child" in out and "ok parent" in out, out


def test_a_fork_pool_runs_parallel_kernels():
    code = FORK + """
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        done = pool.map_async(run, range(1, 7)).get(timeout=30)   # TimeoutError if hung
    assert done == list(range(1, 7)), done
    print("ok pool", flush=True)
    run(7)
    assert threads() >= 2 and runtime.get_num_threads() == 2
    print("ok parent", flush=True)
    """
    rc, out = run_script(code, timeout=90, env={"TW_NUM_THREADS": "2"})
    assert rc == 0, out
    assert "ok pool" in out and "ok parent" in out, out

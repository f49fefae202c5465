"""codegen_llvm's runtime: the workspace arena for large intermediate buffers, alias scopes on
loads and stores in parallel loops, and the thread count from TW_NUM_THREADS."""
import os
import subprocess
import sys
import threading

import numpy as np

import te
from codegen_llvm import runtime
from codegen_llvm.emit import STACK_LIMIT

N = 256 * 1024          # floats: 1 MiB, over the stack limit


def _two_stage(parallel=False):
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((N,), lambda i: B[N - 1 - i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    if parallel:
        outer, inner = s[C].split(C.op.axis[0], factor=16)
        s[C].parallel(outer)
        s[C].vectorize(inner)
    return s, A, C


def test_large_intermediate_buffer_lives_in_the_workspace():
    s, A, C = _two_stage()
    f = te.build(s, [A, C])
    assert N * 4 > STACK_LIMIT
    assert f.workspace_bytes == N * 4
    assert "workspace" in f.get_source("ll-raw") and "malloc" not in f.get_source("ll-raw")
    a = np.random.rand(N).astype("float32")
    c = np.empty(N, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a[::-1] * 2 + 1)
    runtime.release_workspace()             # the next call allocates a new arena
    c[:] = 0
    f(a, c)
    np.testing.assert_allclose(c, a[::-1] * 2 + 1)


def test_small_functions_take_no_workspace():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    f = te.build(te.create_schedule(B.op), [A, B])
    assert f.workspace_bytes is None


def test_threads_calling_one_function_use_their_own_arenas():
    s, A, C = _two_stage()
    f = te.build(s, [A, C])
    inputs = [np.random.rand(N).astype("float32") for _ in range(4)]
    results, errors = [None] * 4, []

    def work(k):
        try:
            out = np.empty(N, "float32")
            for _ in range(20):
                f(inputs[k], out)
                if not np.allclose(out, inputs[k][::-1] * 2 + 1):
                    errors.append(k)
            results[k] = out
        except Exception as e:      # noqa: BLE001 - reported by the assertion below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(4):
        np.testing.assert_allclose(results[k], inputs[k][::-1] * 2 + 1)


def test_workspace_arena_grows_and_is_aligned():
    runtime.release_workspace()
    small = runtime.workspace_arena(100)
    assert small % runtime.ARENA_ALIGN == 0
    assert runtime.workspace_arena(50) == small        # big enough: the same arena
    big = runtime.workspace_arena(1 << 20)
    assert big % runtime.ARENA_ALIGN == 0 and runtime.workspace_size() == 1 << 20
    runtime.release_workspace()


def test_loads_and_stores_carry_alias_scopes():
    """In an outlined parallel loop the buffer pointers come from the closure (no noalias
    attribute); scoped alias metadata tells LLVM that the buffers do not overlap."""
    s, A, C = _two_stage(parallel=True)
    f = te.build(s, [A, C])
    ir = f.get_source("ll-raw")
    assert "!alias.scope" in ir and "!noalias" in ir
    a = np.random.rand(N).astype("float32")
    c = np.empty(N, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a[::-1] * 2 + 1)


def test_tw_num_threads_applies_from_the_first_build():
    code = ("import te, codegen_llvm\n"
            "A = te.placeholder((4,), name='A')\n"
            "B = te.compute((4,), lambda i: A[i] + 1.0, name='B')\n"
            "te.build(te.create_schedule(B.op), [A, B])\n"
            "print(codegen_llvm.get_num_threads())\n")
    env = dict(os.environ, TW_NUM_THREADS="1")
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=os.path.dirname(te.__path__[0]))
    assert out.stdout.strip() == "1"

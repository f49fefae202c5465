"""te.runtime: the layer below both backends. Importing it loads no compiler; one ArgumentError
class for the interpreter, both backends and loaded libraries; the polynomial data of call-time
checks gives the compiler's answers and messages; the Module API of loaded libraries. (Named
test_te_runtime: pytest needs basenames distinct from tests/codegen_llvm/test_runtime.py.)"""
import ast
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import te
import te.runtime as rt
from te.runtime import poly

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fresh(code):
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, TW_CACHE_DIR=""))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_importing_te_runtime_loads_no_compiler():
    out = _fresh("import sys, te.runtime, te.runtime.library, te.runtime.describe\n"
                 "print(sorted(m for m in sys.modules if m.split('.')[0] in ('llvmlite', "
                 "'numba', 'schedule', 'nn', 'codegen_llvm', 'codegen_cuda')))")
    assert out.strip() == "[]"


def test_codegen_cuda_does_not_import_codegen_llvm():
    """Neither in its source nor at run time (a simulator build and call)."""
    for name in os.listdir(os.path.join(ROOT, "codegen_cuda")):
        if name.endswith(".py"):
            tree = ast.parse(open(os.path.join(ROOT, "codegen_cuda", name)).read())
            mods = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
            mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                     for a in n.names]
            assert not [m for m in mods if m and m.split(".")[0] == "codegen_llvm"], name
    out = _fresh("import os; os.environ['NUMBA_ENABLE_CUDASIM'] = '1'\n"
                 "import sys, numpy as np, te\n"
                 "A = te.placeholder((8,), name='A')\n"
                 "B = te.compute((8,), lambda i: A[i] + 1, name='B')\n"
                 "s = te.create_schedule(B.op)\n"
                 "s[B].bind(B.op.axis[0], te.thread_axis('threadIdx.x'))\n"
                 "f = te.build(s, [A, B], target='cuda')\n"
                 "a = np.arange(8, dtype='float32'); b = np.empty_like(a); f(a, b)\n"
                 "assert np.array_equal(b, a + 1)\n"
                 "print(sorted(m for m in sys.modules if m.startswith('codegen_llvm')))")
    assert out.strip() == "[]"          # (llvmlite is there: numba is built on it)


def test_one_argument_error_class():
    import codegen_llvm
    import codegen_llvm.runtime
    import schedule.bound_checks
    assert rt.ArgumentError is codegen_llvm.ArgumentError is schedule.bound_checks.ArgumentError
    assert codegen_llvm.runtime.ArgumentError is rt.ArgumentError and issubclass(
        rt.ArgumentError, TypeError)
    from codegen_llvm.module import BenchmarkResult
    from codegen_llvm.runtime import Signature
    assert BenchmarkResult is rt.BenchmarkResult and Signature is rt.Signature
    assert te.runtime is rt


def test_runtime_constants_agree_with_the_compiler():
    from codegen_llvm.emit import ERROR_STATUS
    from schedule.bound_checks import ERROR_SLOTS
    from te.runtime.cpu import ERROR_STATUS as RT_STATUS
    from te.runtime.signature import ERROR_SLOTS as RT_SLOTS
    assert (ERROR_STATUS, ERROR_SLOTS) == (RT_STATUS, RT_SLOTS)


def test_cache_dir_is_shared_by_both_backends(tmp_path):
    from codegen_llvm import cache
    old = rt.get_cache_dir()
    try:
        cache.set_cache_dir(tmp_path)
        assert rt.get_cache_dir() == str(tmp_path)
        rt.set_cache_dir(None)
        assert cache.get_cache_dir() is None
    finally:
        rt.set_cache_dir(old)


def _shifted():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((m,), name="A")
    B = te.compute((n,), lambda i: A[floor_idx(i)], name="B")
    return te.lower(te.create_schedule(B.op), [A, B]), n, m


def floor_idx(i):
    return te.floordiv(i * 3, 2) + 1


def test_precondition_data_matches_the_compiler():
    """The JSON polynomials of a precondition evaluate as schedule's polynomials do, and the
    failing call's message is the one schedule.bound_checks would write."""
    from schedule.bound_checks import compile_preconditions, precondition_message
    from te.runtime.describe import describe, shape_vars
    from te.runtime.signature import compile_preconditions as rt_compile
    from te.runtime.signature import precondition_message as rt_message
    func, n, m = _shifted()
    svars = shape_vars(func)
    info = describe(func, svars)
    assert func.preconditions and len(info.data["preconditions"]) == len(func.preconditions)
    ref = compile_preconditions(func.preconditions, svars)
    mine = rt_compile(info.data["preconditions"], len(svars))
    for nv in range(0, 9):
        for mv in range(0, 14):
            values = [nv if v is n else mv for v in svars]
            assert ref(*values) == mine(*values), values
            k = ref(*values)
            if k >= 0:
                assert rt_message(func.name, info.data["preconditions"][k],
                                  rt.Signature(info).vars, values) == \
                    precondition_message(func.name, func.preconditions[k], svars, values)


def test_polynomial_data_is_checked():
    good = [[3, [["var", 0], ["floordiv", [[1, [["var", 1]]]], [[2, []]]]]], [-1, []]]
    poly.check(good, 2)
    assert poly.evaluate(good, [4, 7]) == 3 * 4 * (7 // 2) - 1
    for bad in ([[1, [["var", 2]]]], [[1.5, []]], [[1, [["exec", "x"]]]], {"a": 1},
                [[1, [["cast", "float32", []]]]], [[True, []]]):
        with pytest.raises(ValueError):
            poly.check(bad, 2)
    deep = [[1, []]]
    for _ in range(100):
        deep = [[1, [["min", deep, deep[:1]]]]]
    with pytest.raises(ValueError, match="deeply"):
        poly.check(deep, 0)


def test_module_api_of_a_loaded_library(tmp_path):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * A[i], name="square")
    f = te.build(te.create_schedule(B.op), [A, B], name="square")
    path = tmp_path / "sq.so"
    assert f.export_library(str(path)) == str(path) and f.type_key == "llvm"
    mod = rt.load_module(path)
    assert isinstance(mod, rt.Module) and mod.type_key == "llvm"
    assert mod.entry_name == "square" and "square" in mod
    assert repr(mod) == f"Module(llvm, {str(path)!r}, square(A: float32[n], square: " \
                        "float32[n] out))"
    a = np.arange(5, dtype="float32")
    for fn in (mod, mod["square"], mod.get_function("square"), mod.entry_func):
        b = np.zeros_like(a)
        fn(a, b)
        assert np.array_equal(b, a * a)
    with pytest.raises(KeyError, match="has no function 'main'; it has 'square'"):
        mod["main"]
    with pytest.raises(rt.ArgumentError, match="takes 2 arguments"):
        mod(a)
    assert isinstance(mod.time_evaluator("square", number=2)(a, np.empty_like(a)),
                      rt.BenchmarkResult)
    assert json.loads(mod.get_source())["functions"][0]["info"]["name"] == "square"
    with pytest.raises(ValueError, match="only its metadata"):
        mod.get_source("asm")

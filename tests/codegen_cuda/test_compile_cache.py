"""codegen_cuda.compile_cache: PTX cached on disk across processes, compiled in parallel
workers, each distinct kernel once. NVVM runs without the simulator, so the checks run in a
child process with NUMBA_ENABLE_CUDASIM=0 (no GPU is needed for PTX)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent('''
    import os, sys, json
    import te
    from codegen_cuda import compile_ptx, compile_cache as cc
    from codegen_cuda.emit import emit_source
    from codegen_llvm import _shape_vars

    def source_of(n, scale):
        A = te.placeholder((n,), "float32", name="A")
        B = te.compute((n,), lambda i: A[i] * scale, name="B")
        s = te.create_schedule(B.op)
        bx, tx = s[B].split(B.op.axis[0], factor=64)
        s[B].bind(bx, te.thread_axis("blockIdx.x"))
        s[B].bind(tx, te.thread_axis("threadIdx.x"))
        func = te.lower(s, [A, B], target="cuda")
        src, kernels, _ = emit_source(func, _shape_vars(func))
        return s, [A, B], src, kernels

    mode = sys.argv[1]
    s1, args1, src1, k1 = source_of(256, 2.0)
    _, _, src2, k2 = source_of(512, 3.0)
    out = {}
    if mode == "first":
        log = []
        got = cc.ptx_many([(src1, k1), (src2, k2), (src1, k1)], workers=2,
                          log=lambda name, sec, cached: log.append(cached))
        out["compiled"] = log.count(False)
        out["cached"] = log.count(True)
        out["same_dup"] = got[0] == got[2]
        serial = cc.ptx_of(src1, k1, use_cache=False)
        out["same_as_serial"] = got[0] == serial
        out["entries"] = all(".entry" in p and ".target sm_90" in p for row in got for p in row)
        out["module_ptx"] = ".entry" in compile_ptx(te.build(s1, args1, target="cuda"))
        out["files"] = len(os.listdir(os.path.join(os.environ["TW_CACHE_DIR"], "cuda", "ptx")))
    else:
        def refuse(*a):
            raise AssertionError("compiled although cached")
        cc._compile = refuse
        log = []
        got = cc.ptx_many([(src1, k1), (src2, k2)], workers=2,
                          log=lambda name, sec, cached: log.append(cached))
        out["cached"] = log.count(True)
        out["module_ptx"] = ".entry" in compile_ptx(te.build(s1, args1, target="cuda"))
    print(json.dumps(out))
''')


def _run(mode, cache):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", TW_CACHE_DIR=str(cache),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_ptx_is_compiled_in_parallel_once_and_cached_across_processes(tmp_path):
    first = _run("first", tmp_path)
    assert first == {"compiled": 2, "cached": 0, "same_dup": True, "same_as_serial": True,
                     "entries": True, "module_ptx": True, "files": 3}
    second = _run("second", tmp_path)           # a new process: nothing compiles
    assert second == {"cached": 2, "module_ptx": True}


def test_workers_must_be_positive():
    from codegen_cuda import compile_cache
    import pytest
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        compile_cache.ptx_many([], workers=0)

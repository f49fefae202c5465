"""export_library of CUDA modules: a .tar of the host code's metadata, the numba.cuda source
and (where NVVM runs) the kernels' PTX; te.runtime.load_module gives back a callable module.
Export and load each run in a fresh process (on numba's simulator here; the PTX test compiles
without it)."""
import json
import os
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

BUILD = """
import os, sys
import numpy as np
import te
n = te.var("n")
A = te.placeholder((n,), name="A")
idx = te.placeholder((n,), dtype="int32", name="idx")
B = te.compute((n,), lambda i: A[idx[i]] * 2.0 + 1.0, name="B")
s = te.create_schedule(B.op)
bx, tx = s[B].split(B.op.axis[0], factor=32)
s[B].bind(bx, te.thread_axis("blockIdx.x"))
s[B].bind(tx, te.thread_axis("threadIdx.x"))
f = te.build(s, [A, idx, B], target="cuda", name="gather2")
f.export_library(sys.argv[1])
a = np.arange(5, dtype="float32")
try:
    f(a, np.array([0, 1, 7, 2, 3], "int32"), np.empty(5, "float32"))
except IndexError as err:
    print(repr(str(err)))
"""

LOAD = """
import json, sys
import numpy as np
import te.runtime as rt
mod = rt.load_module(sys.argv[1])
rng = np.random.default_rng(1)
for n in (5, 70):
    a = rng.standard_normal(n).astype("float32")
    idx = rng.integers(0, n, n).astype("int32")
    b = np.empty(n, "float32")
    mod(a, idx, b)
    assert np.allclose(b, a[idx] * 2 + 1), n
    mod["gather2"](a, idx, b)
out = {"repr": repr(mod), "llvm": sorted(m for m in sys.modules if m.startswith("codegen_llvm"))}
try:
    mod(np.zeros(4, "float32"), np.zeros(5, "int32"), np.zeros(4, "float32"))
except rt.ArgumentError as err:
    out["argument"] = str(err)
try:
    mod(np.arange(5, dtype="float32"), np.array([0, 1, 7, 2, 3], "int32"),
        np.empty(5, "float32"))
except IndexError as err:
    out["index"] = str(err)
print(json.dumps(out))
"""


def _run(code, path, sim):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if sim else "0", TW_CACHE_DIR="")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()


def test_exported_cuda_module_runs_in_a_fresh_simulator_process(tmp_path):
    path = tmp_path / "gather2.tar"
    built = _run(BUILD, path, sim=True)
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == ["kernels.py", "tensorweave.json"]   # no PTX: simulator
        meta = json.load(tar.extractfile("tensorweave.json"))
    assert meta["kind"] == "cuda" and meta["functions"][0]["kernels"]
    got = json.loads(_run(LOAD, path, sim=True)[-1])
    assert got["llvm"] == []
    assert got["repr"].startswith("Module(cuda, ") and "gather2(A: float32[n]" in got["repr"]
    assert got["argument"] == "argument idx: dimension 0 is 5 but n = 4 from an earlier argument"
    assert repr(got["index"]) == built[-1]          # the same message as the built module's
    assert "index 7 is out of bounds for dimension 0 of A with size 5" in got["index"]


PTX_LOAD = """
import sys
import te.runtime as rt
mod = rt.load_module(sys.argv[1])
print(".entry" in mod.get_source("ptx"), "@cuda.jit" in mod.get_source("cuda"))
"""


def test_export_without_the_simulator_stores_ptx(tmp_path):
    """With NVVM (nvidia-nvvm in the venv; no GPU needed to compile) the tar holds the PTX of
    every kernel, and the loaded module shows it."""
    path = tmp_path / "gather2.tar"
    _run(BUILD.split("a = np.arange")[0], path, sim=False)
    with tarfile.open(path) as tar:
        ptx = tar.extractfile("kernels.ptx").read().decode()
    assert ".entry" in ptx and ".target sm_90" in ptx
    assert _run(PTX_LOAD, path, sim=False)[-1] == "True True"

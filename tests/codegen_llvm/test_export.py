"""export_library / te.runtime.load_module: a CPU function exported in this process runs in a
fresh one that never loads LLVM or the compiler, with the same results, argument checks,
call-time preconditions, in-kernel index errors and thread pool."""
import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import te
from te.runtime import ArgumentError, LibraryError, load_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD_PRELUDE = """
import json, sys
import numpy as np
import te.runtime as rt
"""


def run_fresh(code, timeout=120, **env):
    """Run ``code`` in a new interpreter without the compile cache; its stdout."""
    full = dict(os.environ, TW_CACHE_DIR="", **env)
    proc = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + code], env=full, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    return proc.stdout


def matmul(parallel=False):
    """C[n, m] = A[n, k] @ B[k, m] with symbolic sizes (and a parallel outer loop)."""
    n, m, k = te.var("n"), te.var("m"), te.var("k")
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    if parallel:
        s[C].parallel(C.op.axis[0])
    return te.build(s, [A, B, C], name="matmul_par" if parallel else "matmul")


def gather():
    """B[i] = A[idx[i]]: an index read from data, checked in the kernel."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((m,), name="A")
    idx = te.placeholder((n,), dtype="int32", name="idx")
    B = te.compute((n,), lambda i: A[idx[i]], name="B")
    return te.build(te.create_schedule(B.op), [A, idx, B], name="gather")


def shifted():
    """B[i] = A[i + 2] for i < n with A of its own size m: a call-time precondition."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((m,), name="A")
    B = te.compute((n,), lambda i: A[i + 2], name="B")
    return te.build(te.create_schedule(B.op), [A, B], name="shifted")


def test_matmul_runs_in_a_process_without_llvm(tmp_path):
    """Symbolic shapes, three formats; the child never imports llvmlite, schedule or
    codegen_llvm, before or after calling."""
    f = matmul()
    for suffix in (".so", ".tar", ".o"):
        f.export_library(str(tmp_path / f"mm{suffix}"))
    out = run_fresh(f"""
rng = np.random.default_rng(0)
res = {{}}
for suffix in (".so", ".tar", ".o"):
    mod = rt.load_module({str(tmp_path)!r} + "/mm" + suffix)
    for n, k, m in ((3, 5, 7), (16, 1, 9)):
        a = rng.standard_normal((n, k)).astype("float32")
        b = rng.standard_normal((k, m)).astype("float32")
        c = np.empty((n, m), "float32")
        mod(a, b, c)
        assert np.allclose(c, a @ b, rtol=1e-5, atol=1e-5), suffix
        mod["matmul"](a, b, c)
        mod.get_function("matmul")(a, b, c)
    res[suffix] = repr(mod)
bad = [m for m in sys.modules if m.split(".")[0] in
       ("llvmlite", "schedule", "codegen_llvm", "codegen_cuda", "numba", "nn")]
print(json.dumps({{"bad": bad, "repr": res}}))
""")
    got = json.loads(out.strip().splitlines()[-1])
    assert got["bad"] == []
    assert "matmul(A: float32[n, k], B: float32[k, m], C: float32[n, m] out)" in got["repr"][".so"]


def test_parallel_kernel_uses_the_thread_pool(tmp_path):
    """A parallel loop in a loaded library runs on libgomp's pool (set_num_threads applies)
    and gives numpy's result; in a child made by fork it runs serially and still finishes."""
    f = matmul(parallel=True)
    path = str(tmp_path / "mmp.so")
    f.export_library(path)
    out = run_fresh(f"""
import os, threading
rt.set_num_threads(2)
mod = rt.load_module({path!r})
a = np.random.rand(64, 8).astype("float32"); b = np.random.rand(8, 5).astype("float32")
c = np.empty((64, 5), "float32")
before = len(os.listdir("/proc/self/task"))     # (OpenBLAS's threads, if any, are there already)
mod(a, b, c)
assert np.allclose(c, a @ b, rtol=1e-5)
print("threads", rt.get_num_threads(), len(os.listdir("/proc/self/task")) > before)
pid = os.fork()
if pid == 0:
    c2 = np.empty_like(c)
    mod(a, b, c2)
    os._exit(0 if np.allclose(c2, a @ b, rtol=1e-5) and rt.get_num_threads() == 1 else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
""")
    assert "threads 2 True" in out and "child 0" in out, out


def test_argument_checks_and_preconditions_match_the_built_module(tmp_path):
    """The loaded function refuses the same calls with the same messages as the built one."""
    mm, sh = matmul(), shifted()
    mm.export_library(str(tmp_path / "mm.so"))
    sh.export_library(str(tmp_path / "sh.so"))
    a, b = np.zeros((3, 4), "float32"), np.zeros((5, 2), "float32")
    cases = {"mm": [(a, b, np.zeros((3, 2), "float32")),
                    (a.astype("float64"), np.zeros((4, 2), "float32"), np.zeros((3, 2), "float32")),
                    (a, np.zeros((4, 2), "float32"))],
             "sh": [(np.zeros(5, "float32"), np.zeros(4, "float32"))]}
    want = {}
    for key, f in (("mm", mm), ("sh", sh)):
        for k, args in enumerate(cases[key]):
            with pytest.raises(ArgumentError) as err:
                f(*args)
            want[f"{key}{k}"] = str(err.value)
            np.save(tmp_path / f"{key}{k}.npy", np.array(args, dtype=object), allow_pickle=True)
    assert "ranges over [2, 5], but that dimension has size 5" in want["sh0"], want["sh0"]
    out = run_fresh(f"""
got = {{}}
for key in ("mm", "sh"):
    mod = rt.load_module({str(tmp_path)!r} + "/" + key + ".so")
    for k in range(3):
        try:
            args = np.load({str(tmp_path)!r} + f"/{{key}}{{k}}.npy", allow_pickle=True)
        except FileNotFoundError:
            break
        try:
            mod(*args)
        except rt.ArgumentError as err:
            got[f"{{key}}{{k}}"] = str(err)
# a good call of the shifted function: A covers [2, n + 2)
a = np.arange(7, dtype="float32"); b = np.empty(5, "float32")
rt.load_module({str(tmp_path)!r} + "/sh.so")(a, b)
assert np.array_equal(b, a[2:]), b
print(json.dumps(got))
""")
    assert json.loads(out.strip().splitlines()[-1]) == want


def test_gather_index_error_in_the_loaded_module(tmp_path):
    """An index read from data that is out of bounds: the kernel's record becomes the same
    IndexError as in the process that built it; good indices give numpy's result."""
    f = gather()
    path = str(tmp_path / "gather.tar")
    f.export_library(path)
    a = np.arange(6, dtype="float32")
    bad = np.array([0, 9, 2], "int32")
    with pytest.raises(IndexError) as err:
        f(a, bad, np.empty(3, "float32"))
    want = str(err.value)
    assert "index 9 is out of bounds for dimension 0 of A with size 6" in want, want
    out = run_fresh(f"""
mod = rt.load_module({path!r})
a = np.arange(6, dtype="float32")
good = np.array([5, 0, 3, 3], "int32"); b = np.empty(4, "float32")
mod(a, good, b)
assert np.array_equal(b, a[good])
try:
    mod(a, np.array([0, 9, 2], "int32"), np.empty(3, "float32"))
except IndexError as err:
    print(json.dumps(str(err)))
""")
    assert json.loads(out.strip().splitlines()[-1]) == want


def test_time_evaluator_of_a_loaded_module(tmp_path):
    f = matmul()
    path = str(tmp_path / "mm.so")
    f.export_library(path)
    mod = load_module(path)
    a, b = np.ones((4, 3), "float32"), np.ones((3, 2), "float32")
    c = np.empty((4, 2), "float32")
    result = mod.time_evaluator("matmul", te.cpu(0), number=3, repeat=2)(a, b, c)
    assert len(result.results) == 2 and result.mean > 0
    assert np.array_equal(c, a @ b)
    meta = json.loads(mod.get_source("json"))
    assert meta["entry"] == "matmul" and meta["functions"][0]["symbol"] == "tw_matmul"


def test_tar_holds_the_object_and_the_metadata(tmp_path):
    f = matmul()
    path = tmp_path / "mm.tar"
    f.export_library(str(path))
    with tarfile.open(path) as tar:
        names = sorted(tar.getnames())
        meta = json.load(tar.extractfile("tensorweave.json"))
    assert names == ["lib0.o", "tensorweave.json"]
    assert meta["kind"] == "llvm" and meta["target"]["triple"]
    assert [p.get("buffer") for p in meta["functions"][0]["info"]["params"]] == ["A", "B", "C"]


def _patched(src, dst, old, new):
    """``src`` with ``old`` replaced by ``new`` in its metadata, checksum made to match (what a
    hostile file can do)."""
    from te.runtime import library
    data = src.read_bytes()
    meta = library.read_trailer(data, "test")
    assert old in meta
    elf = data[:len(data) - len(meta) - 48]
    dst.write_bytes(library.with_trailer(elf, meta.replace(old, new, 1)))


def test_damaged_libraries_are_refused(tmp_path):
    """Garbage, a truncated library, a flipped byte, hostile metadata (checksum fixed up) and a
    foreign shared library are LibraryErrors that say what is wrong, before the dynamic loader
    sees the file, and the process goes on."""
    f = matmul()
    good = tmp_path / "mm.so"
    f.export_library(str(good))
    data = good.read_bytes()
    (tmp_path / "garbage.so").write_bytes(b"\x7fELF" + os.urandom(2000))
    (tmp_path / "short.so").write_bytes(data[:3000])
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0x40
    (tmp_path / "flipped.so").write_bytes(bytes(flipped))
    _patched(good, tmp_path / "dtype.so", b'"dtype":"float32","shape"',
             b'"dtype":"floatXY","shape"')
    _patched(good, tmp_path / "version.so", b'"version":1', b'"version":7')
    _patched(good, tmp_path / "json.so", b'"format":"tensorweave-library"',
             b'"format":"tensorweave-library{')
    _patched(good, tmp_path / "nvars.so", b'"vars":[["n","int32"],', b'"vars":[            ')
    from te.runtime import library
    elf = data[:len(data) - len(library.read_trailer(data, "test")) - 48]
    (tmp_path / "deep.so").write_bytes(library.with_trailer(elf, b"[" * 200000 + b"]" * 200000))
    expect = {"garbage.so": "no tensorweave trailer",
              "short.so": "no tensorweave trailer",
              "flipped.so": "is damaged (its checksum does not match)",
              "dtype.so": "the function metadata is invalid (buffer dtype 'floatXY')",
              "version.so": "library format version 7",
              "json.so": "metadata is not valid JSON",
              "nvars.so": "the function metadata is invalid",
              "deep.so": "metadata is not valid JSON"}
    for name, text in expect.items():
        with pytest.raises(LibraryError) as err:
            load_module(tmp_path / name)
        assert text in str(err.value), (name, str(err.value))
    from numpy._core import _multiarray_umath       # a shared library that is not ours
    with pytest.raises(LibraryError, match="no tensorweave trailer"):
        load_module(_multiarray_umath.__file__)
    (tmp_path / "junk.o").write_bytes(b"not an object")
    with pytest.raises(LibraryError, match="linking"):
        load_module(tmp_path / "junk.o")
    a, b = np.ones((2, 3), "float32"), np.ones((3, 1), "float32")
    c = np.empty((2, 1), "float32")
    load_module(good)["matmul"](a, b, c)
    assert np.array_equal(c, a @ b)


def test_hostile_tar_members_are_not_extracted(tmp_path):
    import io
    path = tmp_path / "evil.tar"
    with tarfile.open(path, "w") as tar:
        data = b"{}"
        info = tarfile.TarInfo("../evil.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(LibraryError, match="unexpected member"):
        load_module(path)
    assert not (tmp_path.parent / "evil.json").exists()


def test_workspace_and_vector_math_in_the_loaded_module(tmp_path):
    """A large intermediate (in the workspace arena) and vectorized exp (libmvec, which the
    library is linked against) work in a fresh process."""
    from codegen_llvm.emit import STACK_LIMIT
    N = STACK_LIMIT // 2 + 64                    # float64: more bytes than the stack takes
    A = te.placeholder((N,), "float64", name="A")
    B = te.compute((N,), lambda i: te.exp(A[i]), name="B")
    C = te.compute((N,), lambda i: B[N - 1 - i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(inner)
    s[B].vectorize(s[B].split(B.op.axis[0], factor=8)[1])
    f = te.build(s, [A, C], name="two_stage")
    assert f.workspace_bytes == N * 8 and "_ZGV" in f.get_source("ll")
    path = str(tmp_path / "ws.so")
    f.export_library(path)
    out = run_fresh(f"""
mod = rt.load_module({path!r})
a = np.random.rand({N})
c = np.empty({N})
for _ in range(2):
    mod(a, c)
    assert np.allclose(c, np.exp(a)[::-1] + 1, rtol=1e-12), c[:4]
print(mod["two_stage"].workspace_bytes, "llvmlite" in sys.modules)
""")
    assert out.split() == [str(N * 8), "False"]

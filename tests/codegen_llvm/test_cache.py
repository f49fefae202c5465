"""The on-disk compile cache: hits across processes, damaged entries, concurrent writers, off."""
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

import te
from codegen_llvm import cache

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Builds a tiled, vectorized GEMM followed by a parallel exp (libm through the JIT's symbol
# resolution), checks it against numpy and prints what the cache did as one JSON line.
# argv: [ready file, go file] to start several copies at the same moment.
BUILD_SCRIPT = r"""
import json, os, sys, time
import numpy as np
import te
from codegen_llvm import cache

n = 64
A = te.placeholder((n, n), name="A")
B = te.placeholder((n, n), name="B")
k = te.reduce_axis((0, n), name="k")
C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
D = te.compute((n, n), lambda i, j: te.exp(C[i, j] * 0.01), name="D")
s = te.create_schedule(D.op)
io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
s[C].vectorize(ji)
s[D].parallel(D.op.axis[0])
if len(sys.argv) > 2:
    open(sys.argv[1], "w").close()
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.005)
t0 = time.perf_counter()
f = te.build(s, [A, B, D], target="llvm", name="gemm_exp")
build_s = time.perf_counter() - t0
rng = np.random.default_rng(0)
a = rng.random((n, n), dtype=np.float32)
b = rng.random((n, n), dtype=np.float32)
d = np.empty((n, n), np.float32)
f(a, b, d)
np.testing.assert_allclose(d, np.exp((a @ b) * 0.01), rtol=1e-5)
print(json.dumps(dict(cache.stats(), from_cache=f._jit.from_cache, build_s=build_s,
                      cache_dir=cache.get_cache_dir(), asm=f.get_source("asm"),
                      ll=f.get_source("ll"))))
"""


def _env(cache_dir, **extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    if cache_dir is None:
        env.pop("TW_CACHE_DIR", None)
    else:
        env["TW_CACHE_DIR"] = str(cache_dir)
    return env


def _result(proc):
    assert proc.returncode == 0, f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _build_in_new_process(cache_dir, **extra):
    proc = subprocess.run([sys.executable, "-c", BUILD_SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, env=_env(cache_dir, **extra), timeout=300)
    return _result(proc)


def _entries(cache_dir):
    return sorted((pathlib.Path(cache_dir) / "llvm").glob("*"))


@pytest.fixture
def cache_dir(tmp_path):
    """The cache of this process points to a fresh directory for the test."""
    old = cache.get_cache_dir()
    cache.set_cache_dir(tmp_path / "cache")
    yield tmp_path / "cache"
    cache.set_cache_dir(old)


def _vector_add(n=1000):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.sqrt(A[i]) + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    return s, [A, B]


def _build_and_check(n=1000):
    s, args = _vector_add(n)
    f = te.build(s, args, target="llvm", name="vadd")
    a = np.random.default_rng(1).random(n, dtype=np.float32)
    b = np.empty(n, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, np.sqrt(a) + 1.0, rtol=1e-6)
    return f


def test_rebuild_in_new_process_hits_cache(tmp_path):
    cold = _build_in_new_process(tmp_path)
    assert (cold["hits"], cold["misses"], cold["stores"]) == (0, 1, 1)
    assert not cold["from_cache"]
    assert len(_entries(tmp_path)) == 1
    warm = _build_in_new_process(tmp_path)
    assert (warm["hits"], warm["misses"], warm["stores"]) == (1, 0, 0)
    assert warm["from_cache"]
    assert warm["ll"] == cold["ll"]
    assert warm["asm"] == cold["asm"]
    print(f"te.build cold {cold['build_s'] * 1e3:.1f} ms, warm {warm['build_s'] * 1e3:.1f} ms")


def test_hit_in_same_process(cache_dir):
    first = _build_and_check()
    second = _build_and_check()
    assert not first._jit.from_cache and second._jit.from_cache
    assert second.get_source("ll") == first.get_source("ll")
    assert "sqrt" in second.get_source("asm")


def test_different_ir_or_target_is_a_different_entry(cache_dir):
    _build_and_check(1000)
    _build_and_check(1001)
    assert len(_entries(cache_dir)) == 2
    k = cache.key("ir", "x86_64-unknown-linux-gnu", "skylake", "+avx2")
    assert k != cache.key("ir", "x86_64-unknown-linux-gnu", "skylake", "+avx2,+avx512f")
    assert k != cache.key("ir", "x86_64-unknown-linux-gnu", "znver4", "+avx2")
    assert k != cache.key("ir2", "x86_64-unknown-linux-gnu", "skylake", "+avx2")


def _truncate(data):
    return data[: len(data) // 2]


def _wrong_magic(data):
    return b"NOTCACHE" + data[8:]


def _flip_payload_byte(data):
    i = len(data) - 100
    return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]


def _header_only(data):
    return data[:40]


@pytest.mark.parametrize("damage", [_truncate, _wrong_magic, _flip_payload_byte, _header_only,
                                    lambda data: b""],
                         ids=["truncated", "magic", "checksum", "short", "empty"])
def test_damaged_entry_is_rebuilt(cache_dir, damage):
    _build_and_check()
    (path,) = _entries(cache_dir)
    good = path.read_bytes()
    path.write_bytes(damage(good))
    before = cache.stats()
    f = _build_and_check()
    after = cache.stats()
    assert not f._jit.from_cache
    assert after["corrupt"] == before["corrupt"] + 1
    assert after["stores"] == before["stores"] + 1
    assert path.read_bytes() == good            # rewritten (code generation is deterministic)
    assert _build_and_check()._jit.from_cache


def test_entry_under_another_key_is_not_loaded(cache_dir):
    _build_and_check(1000)
    _build_and_check(1001)
    first, second = _entries(cache_dir)
    first.write_bytes(second.read_bytes())     # a valid entry, but for other IR
    before = cache.stats()
    f1 = _build_and_check(1000)
    f2 = _build_and_check(1001)
    assert cache.stats()["corrupt"] == before["corrupt"] + 1
    assert not f1._jit.from_cache or not f2._jit.from_cache


def test_concurrent_writers_all_succeed(tmp_path):
    cache_dir = tmp_path / "cache"
    go = tmp_path / "go"
    procs = []
    for i in range(6):
        ready = tmp_path / f"ready{i}"
        procs.append((ready, subprocess.Popen(
            [sys.executable, "-c", BUILD_SCRIPT, str(ready), str(go)], cwd=ROOT,
            env=_env(cache_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    deadline = time.monotonic() + 120
    while not all(ready.exists() for ready, _ in procs) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()                                  # all six build the same function now
    results = []
    for _, proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        results.append(_result(subprocess.CompletedProcess(proc.args, proc.returncode, stdout,
                                                           stderr)))
    assert all(r["errors"] == 0 and r["corrupt"] == 0 for r in results)
    assert sum(r["stores"] for r in results) >= 1
    assert [p.name for p in _entries(cache_dir)] == [_entries(cache_dir)[0].name]  # no temp files
    assert _build_in_new_process(cache_dir)["from_cache"]


def test_empty_cache_dir_turns_cache_off(tmp_path):
    result = _build_in_new_process("", HOME=str(tmp_path))
    assert result["cache_dir"] is None
    assert not result["from_cache"]
    assert (result["hits"], result["misses"], result["stores"]) == (0, 0, 0)
    assert list(tmp_path.iterdir()) == []


def test_default_cache_dir_is_under_home(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", "from codegen_llvm import cache; print(cache.get_cache_dir())"],
        cwd=ROOT, capture_output=True, text=True, env=_env(None, HOME=str(tmp_path)), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / ".cache" / "tensorweave")


def test_set_cache_dir_none_turns_cache_off(cache_dir):
    cache.set_cache_dir(None)
    before = cache.stats()
    assert not _build_and_check()._jit.from_cache
    assert not _build_and_check()._jit.from_cache
    assert cache.stats() == before
    assert not cache_dir.exists()


def test_unusable_cache_dir_degrades_to_no_cache(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    old = cache.get_cache_dir()
    cache.set_cache_dir(blocker / "cache")       # cannot be created: its parent is a file
    try:
        before = cache.stats()
        f = _build_and_check()
        assert not f._jit.from_cache
        after = cache.stats()
        assert after["errors"] > before["errors"] and after["stores"] == before["stores"]
        assert after["last_error"].startswith(("NotADirectoryError", "FileExistsError"))
    finally:
        cache.set_cache_dir(old)

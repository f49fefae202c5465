"""Mistakes with export_library / load_module: each a clear error naming what to do."""
import os

import numpy as np
import pytest

import te
from te.runtime import LibraryError, load_module


def _square(name="square"):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * A[i], name="B")
    return te.build(te.create_schedule(B.op), [A, B], name=name)


def test_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"use a name ending in \.so .*\.tar .*\.o"):
        _square().export_library(str(tmp_path / "lib.dll"))


def test_no_c_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))          # nothing to run there
    monkeypatch.delenv("CC", raising=False)
    f = _square()
    with pytest.raises(LibraryError, match="needs a C compiler .*export a .tar or .o instead"):
        f.export_library(str(tmp_path / "sq.so"))
    f.export_library(str(tmp_path / "sq.tar"))          # a .tar needs none to write
    assert not os.path.exists(tmp_path / "sq.so")


def test_named_compiler_missing(tmp_path):
    with pytest.raises(LibraryError, match="the C compiler 'no-such-cc' was not found"):
        _square().export_library(str(tmp_path / "sq.so"), cc="no-such-cc")


def test_extern_functions_are_not_exported(tmp_path):
    @te.register_func("tw_test_export_copy", override=True)
    def copy(a, b):
        b.copyfrom(a)
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: te.call_packed("tw_test_export_copy", ins[0],
                                                              outs[0]), name="B")
    f = te.build(te.create_schedule(B.op), [A, B], name="ext")
    with pytest.raises(LibraryError, match="calls the Python function 'tw_test_export_copy'"):
        f.export_library(str(tmp_path / "ext.so"))


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file"):
        load_module(tmp_path / "nothing.so")


def test_load_a_tar_that_is_not_a_library(tmp_path):
    import tarfile
    path = tmp_path / "x.tar"
    (tmp_path / "a.txt").write_text("hello")
    with tarfile.open(path, "w") as tar:
        tar.add(tmp_path / "a.txt", arcname="a.txt")
    with pytest.raises(LibraryError, match="has no tensorweave.json"):
        load_module(path)
    (tmp_path / "y.tar").write_bytes(b"not a tar at all" * 100)
    with pytest.raises(LibraryError, match="not a readable tar archive"):
        load_module(tmp_path / "y.tar")


def test_loaded_function_names_its_arguments(tmp_path):
    f = _square()
    f.export_library(str(tmp_path / "sq.so"))
    mod = load_module(tmp_path / "sq.so")
    from te.runtime import ArgumentError
    with pytest.raises(ArgumentError, match=r"argument A: expected dtype float32, got float64"):
        mod(np.zeros(8), np.zeros(8, "float32"))
    with pytest.raises(ArgumentError, match="argument B is an output but is read-only"):
        b = np.zeros(8, "float32")
        b.flags.writeable = False
        mod(np.zeros(8, "float32"), b)


def test_library_for_a_cpu_this_one_lacks(tmp_path):
    """Running code for missing instructions would kill the process (SIGILL): refused."""
    from te.runtime import library
    assert library.missing_cpu_features("+sse2,-avx512f") == []
    missing = library.missing_cpu_features("+sse2,+avx512fp16,+amx-tile,+avx10.1-512")
    flags = open("/proc/cpuinfo").read()
    assert ("avx512fp16" in missing) == ("avx512_fp16" not in flags)
    assert "avx10.1-512" not in missing             # unknown to /proc/cpuinfo: not checked


def test_loading_code_for_missing_instructions_is_refused(tmp_path):
    """A library whose target has a feature this CPU lacks (no x86 CPU has both AMD's SSE4a
    and Intel's AMX) is refused before it is loaded."""
    from te.runtime import library
    missing = library.missing_cpu_features("+sse4a,+amx-tile")
    assert missing
    f = _square()
    good = tmp_path / "sq.so"
    f.export_library(str(good))
    data = good.read_bytes()
    meta = library.read_trailer(data, "test")
    elf = data[:len(data) - len(meta) - 48]
    import json
    doc = json.loads(meta)
    doc["target"]["features"] += ",+sse4a,+amx-tile"
    bad = tmp_path / "bad.so"
    bad.write_bytes(library.with_trailer(elf, json.dumps(doc).encode()))
    with pytest.raises(LibraryError, match=f"compiled for a CPU with {missing[0]}.*illegal "
                                           "instruction"):
        load_module(bad)

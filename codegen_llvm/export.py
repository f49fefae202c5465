"""``Module.export_library``: a built CPU function as a shared library, a ``.tar`` of its object
file, or the object file, for ``te.runtime.load_module`` (format: ``te/runtime/library.py``).

The optimized LLVM IR of the build is compiled again as position-independent code (the JIT's
object is not: a shared library needs PIC), with a small module linked in that defines the
metadata accessors and the fork flag of parallel loops; ``cc -shared`` links the object with
libgomp, libmvec and libm, as TVM links its libraries with the system compiler.
"""
from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
import time

import llvmlite.binding as llvm
from llvmlite import ir

from te.runtime import library
from te.runtime.errors import LibraryError
from te.runtime.linker import link_shared
from te.runtime.threads import FORKED_SYMBOL

from .emit import symbol
from .jit import _init, target_options

SUFFIXES = (".so", ".tar", ".o")


def export_library(module, path, cc=None):
    """Write ``module`` (a ``codegen_llvm.Module``) to ``path`` (.so, .tar or .o)."""
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1]
    if suffix not in SUFFIXES:
        raise ValueError(f"export_library: {path!r}: use a name ending in .so (a shared "
                         "library), .tar (its object file and metadata) or .o (the object)")
    problem = module.info.portable_problem()
    if problem is not None:
        raise LibraryError(f"export_library: {module.name} cannot be exported: {problem}; "
                           "keep it in the process that built it (te.build)")
    options = target_options(module.target.mcpu, tuple(module.target.mattr))
    meta = metadata(module, options)
    obj = compile_pic(module.get_source("ll"), options, meta)
    directory = os.path.dirname(os.path.abspath(path))
    if suffix == ".o":
        _write_atomic(path, obj)
    elif suffix == ".tar":
        _write_atomic(path, _tar({library.OBJECT_NAME: obj,
                                  library.METADATA_NAME: json.dumps(meta, indent=1).encode()}))
    else:
        with tempfile.TemporaryDirectory(prefix="tw-export-") as tmp:
            obj_path = os.path.join(tmp, library.OBJECT_NAME)
            with open(obj_path, "wb") as f:
                f.write(obj)
            out = os.path.join(tmp, "lib.so")
            link_shared([obj_path], out, _libraries(module.get_source("ll")), cc)
            with open(out, "rb") as f:
                linked = f.read()
            meta_bytes = json.dumps(meta, separators=(",", ":")).encode()
            _write_atomic(path, library.with_trailer(linked, meta_bytes), directory)
    return path


def metadata(module, options):
    """The JSON metadata of ``module``'s library (``te.runtime.library`` reads it)."""
    return {"format": library.LIBRARY_FORMAT, "version": library.LIBRARY_VERSION,
            "kind": "llvm", "entry": module.name,
            "target": {"triple": options.triple, "cpu": options.cpu,
                       "features": options.features},
            "functions": [{"symbol": symbol(module.name), "info": module.info.data}]}


def compile_pic(optimized_ir, options, meta):
    """Position-independent object code of ``optimized_ir`` with the metadata module."""
    _init()
    target = llvm.Target.from_triple(options.triple)
    tm = target.create_target_machine(cpu=options.cpu, features=options.features, opt=3,
                                      reloc="pic", codemodel="default")
    mod = llvm.parse_assembly(optimized_ir)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    extra = llvm.parse_assembly(_metadata_ir(json.dumps(meta, separators=(",", ":"))))
    extra.triple = tm.triple
    extra.data_layout = str(tm.target_data)
    mod.link_in(extra)
    mod.verify()
    return tm.emit_object(mod)


def _metadata_ir(text):
    """LLVM IR that defines the metadata accessors and the fork flag."""
    data = text.encode("utf-8")
    m = ir.Module(name="tw_library")
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    arr = ir.ArrayType(i8, len(data))
    blob = ir.GlobalVariable(m, arr, name="tw_library_metadata_data")
    blob.global_constant = True
    blob.linkage = "private"
    blob.initializer = ir.Constant(arr, bytearray(data))
    flag = ir.GlobalVariable(m, i32, name=FORKED_SYMBOL)
    flag.initializer = ir.Constant(i32, 0)
    get = ir.Function(m, ir.FunctionType(ir.PointerType(i8), []),
                      name=library.METADATA_SYMBOL)
    b = ir.IRBuilder(get.append_basic_block())
    b.ret(b.gep(blob, [ir.Constant(i32, 0), ir.Constant(i32, 0)], inbounds=True))
    size = ir.Function(m, ir.FunctionType(i64, []), name=library.METADATA_SYMBOL + "_size")
    b = ir.IRBuilder(size.append_basic_block())
    b.ret(ir.Constant(i64, len(data)))
    return str(m)


def _libraries(llvm_ir):
    """The sonames the library must load with: libgomp for parallel loops, libmvec for
    vectorized math, libm."""
    out = []
    if "GOMP_parallel" in llvm_ir:
        out.append(library._soname("gomp"))
    if "_ZGV" in llvm_ir:
        out.append(library._soname("mvec"))
    out.append(library._soname("m"))
    return [lib for lib in out if lib]


def _tar(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(time.time())
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _write_atomic(path, data, directory=None):
    """Write ``data`` to ``path`` through a temporary file renamed over it."""
    directory = directory or os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tw-export-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755 if path.endswith(".so") else 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

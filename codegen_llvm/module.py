"""The callable result of ``te.build(..., target="llvm")``: JIT code behind the calling
convention of ``te.runtime`` (``CPUFunction``), plus the sources and ``export_library``."""
from __future__ import annotations

from te.runtime.bench import BenchmarkResult  # noqa: F401  (codegen_llvm.module.BenchmarkResult)
from te.runtime.cpu import CPUFunction
from te.runtime.describe import describe

from .emit import symbol
from .runtime import PackedCallback


class Module(CPUFunction):
    """A compiled function: call it on arrays; inspect it with ``get_source``; write it to a
    shared library with ``export_library``."""

    type_key = "llvm"

    def __init__(self, func, shape_vars, jit, source_ll, target, workspace=None,
                 packed_sites=(), error_sites=()):
        info = describe(func, shape_vars, workspace, error_sites, packed_sites)
        # extern stages: the compiled code calls back into Python through this pointer
        packed = PackedCallback(list(packed_sites)) if packed_sites else None
        super().__init__(info, jit.address(symbol(func.name)), packed)
        self.lowered = func
        self.target = target
        self._jit = jit
        self._source_ll = source_ll
        self.imported_modules = []

    def get_source(self, fmt="ll"):
        """'ll': optimized LLVM IR; 'll-raw': LLVM IR as emitted; 'asm'; 'ir': the loop IR."""
        if fmt in ("ll", "llvm"):
            return self._jit.optimized_ir
        if fmt == "ll-raw":
            return self._source_ll
        if fmt in ("asm", "s"):
            return self._jit.asm
        if fmt in ("ir", "lowered", "tir"):
            return str(self.lowered)
        raise ValueError(f"get_source: unknown format {fmt!r}; use 'll', 'll-raw', 'asm' or 'ir'")

    def export_library(self, path, cc=None):
        """Write this function to ``path``: a shared library (``.so``), a ``.tar`` of its
        object file, or the object file (``.o``); ``te.runtime.load_module`` loads any of them
        in a process without the compiler. ``cc``: the C compiler that links the ``.so``
        (default: ``$CC``, else cc, gcc or clang on the PATH)."""
        from .export import export_library
        return export_library(self, path, cc)

    def __repr__(self):
        return f"Module(llvm, {self.name}: {self._sig.arg_names})"

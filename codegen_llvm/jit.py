"""LLVM IR text -> optimized machine code in memory (llvmlite's MCJIT), and the host target.

The target machine is made for the host CPU (or ``-mcpu``/``-mattr`` of the target string); the
module is optimized with LLVM's O3 pipeline (new pass manager) before code generation.
libm, libmvec and libgomp are loaded into the process so JIT code can call them.
"""
from __future__ import annotations

import ctypes.util
import functools

import llvmlite.binding as llvm


@functools.lru_cache(maxsize=None)
def _init():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for lib in ("m", "mvec", "gomp"):
        path = ctypes.util.find_library(lib)
        if path:
            try:
                llvm.load_library_permanently(path)
            except RuntimeError:
                pass
    return True


def has_openmp() -> bool:
    _init()
    return llvm.address_of_symbol("GOMP_parallel") is not None


def target_machine(mcpu=None, mattr=()):
    """A new TargetMachine for the host (or for ``mcpu``/``mattr``).

    Each JIT engine takes ownership of the machine it is given, so machines are not shared.
    """
    _init()
    if mcpu == "native":            # LLVM itself does not know "native": it means the host
        mcpu = None
    target = llvm.Target.from_default_triple()
    cpu = mcpu or llvm.get_host_cpu_name()
    if mattr:
        features = ",".join(mattr)
    elif mcpu:
        features = ""
    else:
        features = llvm.get_host_cpu_features().flatten()
    return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="default",
                                        codemodel="jitdefault")


def optimize(mod, tm, level=3):
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)


class JITModule:
    """Machine code for one LLVM module, kept alive with its execution engine."""

    def __init__(self, llvm_ir: str, tm):
        """Compile ``llvm_ir`` with ``tm``; the engine takes ownership of ``tm``."""
        _init()
        mod = llvm.parse_assembly(llvm_ir)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
        optimize(mod, tm)
        self.optimized_ir = str(mod)
        self.asm = tm.emit_assembly(mod)
        self.engine = llvm.create_mcjit_compiler(mod, tm)
        self.engine.finalize_object()
        self.engine.run_static_constructors()
        self._mod = mod

    def address(self, name) -> int:
        return self.engine.get_function_address(name)

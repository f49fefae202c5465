"""LLVM IR text -> optimized machine code in memory (llvmlite's MCJIT), and the host target.

The target machine is made for the host CPU (or ``-mcpu``/``-mattr`` of the target string); the
module is optimized with LLVM's O3 pipeline (new pass manager), compiled to a relocatable object
and loaded into an MCJIT engine. The object and the optimized IR are kept in the on-disk cache
(``cache.py``), keyed by the IR as emitted and the target, so a rebuild in a new process skips
LLVM's optimization and code generation. libm, libmvec and libgomp are loaded into the process
so JIT code can call them.
"""
from __future__ import annotations

import ctypes.util
import functools
import os
import sys
import tempfile
from typing import NamedTuple

import llvmlite.binding as llvm

from . import cache, runtime


# LLVM command-line options, set once per process before the first compilation.
LLVM_OPTIONS = (
    # The SLP vectorizer of LLVM 21+ models an instruction that does not match its neighbours
    # as a "copyable" one (x as x + 0). Combined with its narrowing of integer trees (values
    # extended from i8/i16) inside an integer min/max reduction, this trips an assertion
    # ("OpIdx < Operands.size() && Off bounds") that aborts the process: e.g. an unrolled
    # max over k of max(int64(a) + int64(b), int64(c)) of int16 inputs. The emitted form of
    # min/max does not matter (InstCombine makes llvm.smax of an icmp + select either way),
    # so the transform itself is turned off; SLP and loop vectorization otherwise stay on.
    "-slp-copyable-elements=false",
)


@functools.lru_cache(maxsize=None)
def _init():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for option in LLVM_OPTIONS:         # an option this LLVM does not know is ignored
        llvm.set_option("tensorweave", option)
    llvm.add_symbol(runtime.FORKED_SYMBOL, runtime.forked_flag_address())
    for lib in ("m", "mvec", "gomp"):
        path = ctypes.util.find_library(lib)
        if path:
            try:
                llvm.load_library_permanently(path)
            except RuntimeError:
                pass
    return True


def has_symbol(name) -> bool:
    """Whether ``name`` resolves in this process (libm, libmvec and libgomp are loaded)."""
    _init()
    return bool(llvm.address_of_symbol(name))


def mvec_isas(features: str) -> str:
    """The libmvec variants the target can call: "e" (AVX-512), "d" (AVX2)."""
    flags = set(f for f in features.split(",") if f.startswith("+"))
    out = ""
    if "+avx512f" in flags:
        out += "e"
    if "+avx2" in flags:
        out += "d"
    return out


def has_openmp() -> bool:
    _init()
    return llvm.address_of_symbol("GOMP_parallel") is not None


class TargetOptions(NamedTuple):
    """What code generation depends on besides the IR: the triple, CPU name and features."""

    triple: str
    cpu: str
    features: str


def target_options(mcpu=None, mattr=()) -> TargetOptions:
    """The options for the host (or for ``mcpu``/``mattr``)."""
    _init()
    if mcpu == "native":            # LLVM itself does not know "native": it means the host
        mcpu = None
    cpu = mcpu or llvm.get_host_cpu_name()
    if mattr:
        features = ",".join(mattr)
    elif mcpu:
        features = ""
    else:
        features = llvm.get_host_cpu_features().flatten()
    options = TargetOptions(llvm.get_default_triple(), cpu, features)
    if mcpu or mattr:
        _check_known(options)
    return options


@functools.lru_cache(maxsize=None)
def _check_known(options: TargetOptions):
    """Refuse a CPU or feature name that LLVM does not know: it only warns on stderr and may
    abort the process later, in code generation. (LLVM writes to file descriptor 2 itself, so
    it is redirected for the moment of the check; another thread's stderr output in that
    moment goes to the check's log. Once per target: the result is cached.)"""
    with tempfile.TemporaryFile() as log:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            target_machine(options)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        warnings = log.read().decode(errors="replace")
    for line in warnings.splitlines():
        if "not a recognized processor" in line:
            raise ValueError(f"target -mcpu={options.cpu}: LLVM does not know this CPU; use a "
                             "name such as native, skylake-avx512, znver3 or cortex-a72")
        if "not a recognized feature" in line:
            name = line.split("'")[1] if "'" in line else line
            raise ValueError(f"target -mattr: LLVM does not know the feature {name}; use "
                             "names such as +avx2,+fma,+avx512f")


def target_machine(options: TargetOptions):
    """A new TargetMachine for ``options``.

    Each JIT engine takes ownership of the machine it is given, so machines are not shared.
    """
    target = llvm.Target.from_triple(options.triple)
    return target.create_target_machine(cpu=options.cpu, features=options.features, opt=3,
                                        reloc="default", codemodel="jitdefault")


def optimize(mod, tm, level=3):
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)


def module_name(llvm_ir: str) -> str:
    """The name in the ``; ModuleID = "..."`` line of ``llvm_ir`` (the built function's)."""
    first = llvm_ir.split("\n", 1)[0]
    if first.startswith("; ModuleID = "):
        return first[len("; ModuleID = "):].strip().strip('"')
    return "<module>"


def compile_ir(llvm_ir: str, tm) -> cache.Entry:
    """Verify, optimize and compile ``llvm_ir``: object code plus the optimized IR text.

    LLVM's verifier runs on every module before optimization (LLVM's passes assume valid IR
    and may abort the process on invalid IR): a module that does not parse or verify is a
    ``CodegenError`` naming the function, never a crash."""
    from .emit import CodegenError
    try:
        mod = llvm.parse_assembly(llvm_ir)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        from .emit_calls import IMPORTS
        link_imports(mod, IMPORTS)
        mod.verify()
    except RuntimeError as err:
        why = " ".join(str(err).replace("^", "").split())       # LLVM's lines, as one
        raise CodegenError(f"llvm codegen of {module_name(llvm_ir)}: the emitted LLVM IR is "
                           f"invalid ({why}); this is a compiler bug, please report it with "
                           "the function's te.lower output") from None
    optimize(mod, tm)
    optimized_ir = str(mod)             # before code generation, whose passes edit the module
    return cache.Entry(tm.emit_object(mod), optimized_ir)


class JITModule:
    """Machine code for one LLVM module, kept alive with its execution engine."""

    def __init__(self, llvm_ir: str, options: TargetOptions):
        """Compile ``llvm_ir`` for ``options``, or load it from the compile cache."""
        _init()
        self._tm = target_machine(options)
        entry_key = cache.key(llvm_ir, *options)
        entry = cache.load(entry_key)
        self.from_cache = entry is not None
        if entry is None:
            entry = compile_ir(llvm_ir, self._tm)
            cache.store(entry_key, entry)
        self.optimized_ir = entry.optimized_ir
        self._asm = None
        # A fresh compile is loaded the same way as a cached one, so both paths run the same
        # code. Objects get no static constructors run; the emitter makes none.
        empty = llvm.parse_assembly("")
        empty.triple = self._tm.triple
        empty.data_layout = str(self._tm.target_data)
        self.engine = llvm.create_mcjit_compiler(empty, self._tm)     # owns self._tm now
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(entry.obj))
        self.engine.finalize_object()

    @property
    def asm(self) -> str:
        """Assembly text, generated again from the optimized IR on first use."""
        if self._asm is None:
            mod = llvm.parse_assembly(self.optimized_ir)
            self._asm = self._tm.emit_assembly(mod)
        return self._asm

    def address(self, name) -> int:
        return self.engine.get_function_address(name)



def link_imports(mod, imports: dict):
    """Link into ``mod`` the LLVM IR (``s[T].pragma(axis, "import_llvm", text)``, parsed and
    verified when the function was emitted) that defines the functions ``mod`` declares:
    ``imports`` maps a function name to that text. The functions are then compiled (and
    inlined) with the module, and its object code needs nothing else."""
    texts = dict.fromkeys(imports[f.name] for f in mod.functions
                          if f.is_declaration and f.name in imports)
    if texts:
        # only the imports of this module's own pragmas (their hashes are in its metadata)
        import hashlib
        source = str(mod)
        texts = [t for t in texts if hashlib.sha256(t.encode()).hexdigest() in source]
    for text in texts:
        extra = llvm.parse_assembly(text)
        extra.triple, extra.data_layout = mod.triple, mod.data_layout
        names = [f.name for f in extra.functions if not f.is_declaration]
        mod.link_in(extra)
        for name in names:          # private to the module: inlined, then dropped
            mod.get_function(name).linkage = "internal"

"""LLVM code for the calls of tensor intrinsics' bodies: ``call_llvm_intrin`` /
``call_llvm_pure_intrin`` (an LLVM intrinsic by name), ``call_extern`` (a C symbol of the
process, or a function of LLVM IR imported with ``pragma(axis, "import_llvm", text)``, which
``jit.compile_ir`` links into the module, so that LLVM inlines it), ``access_ptr``, ``vload`` /
``vstore`` and ``reinterpret``.

An LLVM intrinsic is declared with the call's own types (the return dtype and the values'
types; for an overloaded intrinsic give the mangled name, ``llvm.ctpop.v4i32``). LLVM aborts
the process on some wrong declarations (its parser upgrades old x86 intrinsics with casts
that assert) and on intrinsics the target cannot select, so each new (name, signature,
target) is first compiled alone in a child process: a bad one is a ``CodegenError`` with
LLVM's message. x86 intrinsics that need CPU features the target lacks are refused by name
first, with the features to look for.
"""
from __future__ import annotations

import functools
import hashlib
import subprocess
import sys

from llvmlite import ir

from te import dtypes

from .types import memory_type, value_type

PTR = ir.PointerType(ir.IntType(8))
IMPORTS = {}        # function name -> the LLVM IR text of a pragma import_llvm that defines it
IMPORT_TYPES = {}   # function name -> its type, as text

# x86 intrinsic name prefixes -> the CPU features (LLVM's names) they need
X86_FEATURES = (
    ("llvm.x86.avx512.vpdpbusd.512", ("avx512vnni",)),
    ("llvm.x86.avx512.vpdpbusds.512", ("avx512vnni",)),
    ("llvm.x86.avx512.vpdpwssd.512", ("avx512vnni",)),
    ("llvm.x86.avx512.vpdpbusd.256", ("avx512vnni", "avx512vl")),
    ("llvm.x86.avx512.vpdpbusd.128", ("avx512vnni", "avx512vl")),
    ("llvm.x86.avx512.pmaddubs.w.512", ("avx512bw",)),
    ("llvm.x86.avx512.pmaddw.d.512", ("avx512bw",)),
    ("llvm.x86.avx512.", ("avx512f",)),
    ("llvm.x86.avx2.", ("avx2",)),
)


# intrinsics that another feature set also provides: the 256/128-bit VNNI dot products are
# AVX-VNNI's VEX-encoded instructions too (LLVM has no llvm.x86.avxvnni.* intrinsics: on an
# AVX-VNNI host the llvm.x86.avx512.vpdpbusd.256 call is selected as {vex} vpdpbusd)
X86_ALTERNATIVES = (
    ("llvm.x86.avx512.vpdpbusd.256", ("avxvnni",)),
    ("llvm.x86.avx512.vpdpbusds.256", ("avxvnni",)),
    ("llvm.x86.avx512.vpdpbusd.128", ("avxvnni",)),
    ("llvm.x86.avx512.vpdpbusds.128", ("avxvnni",)),
)


def required_features(name) -> tuple:
    """The CPU features an x86 intrinsic needs (by its name's prefix); () if not known."""
    for prefix, feats in X86_FEATURES:
        if name.startswith(prefix):
            return feats
    return ()


def feature_options(name) -> list:
    """Every feature set that provides intrinsic ``name``: ``required_features`` first."""
    return [required_features(name)] + [feats for prefix, feats in X86_ALTERNATIVES
                                         if name.startswith(prefix)]


def _has(features: str, feat: str) -> bool:
    return f"+{feat}" in features.split(",")


_PROBE = r"""
import sys
import llvmlite.binding as llvm
llvm.initialize_native_target(); llvm.initialize_native_asmprinter()
text, cpu, features = sys.stdin.read().split("\0")
mod = llvm.parse_assembly(text)
mod.verify()
for f in mod.functions:     # LLVM gives its intrinsics attributes; another llvm.* is no intrinsic
    if f.is_declaration and f.name.startswith("llvm.") and not list(f.attributes):
        sys.exit(f"error: {f.name} is not an intrinsic this LLVM knows")
tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features)
tm.emit_object(mod)
engine = llvm.create_mcjit_compiler(mod, tm)     # resolves every symbol the code calls
engine.finalize_object()
engine.get_function_address("probe")
print("ok")
"""


@functools.lru_cache(maxsize=None)
def probe(text: str, cpu: str, features: str) -> str:
    """Compile ``text`` alone in a child process: "" if it compiles, else LLVM's message (the
    child may abort where this process must not)."""
    proc = subprocess.run([sys.executable, "-c", _PROBE], input=f"{text}\0{cpu}\0{features}",
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 0 and proc.stdout.strip() == "ok":
        return ""
    lines = [ln.strip() for ln in (proc.stderr or "").splitlines() if ln.strip()]
    useful = [ln for ln in lines if "LLVM ERROR" in ln or "Assertion" in ln or
              "error" in ln.lower()]
    return (useful or lines or [f"exit status {proc.returncode}"])[-1][:400]


class CallEmitter:
    """Mixin of ``Emitter``: the calls of tensor intrinsics' bodies."""

    CALLS = {"call_llvm_intrin": "_llvm_intrin", "call_llvm_pure_intrin": "_llvm_intrin",
             "call_extern": "_call_extern", "tvm_access_ptr": "_access_ptr",
             "tw_vload": "_vload", "tw_vstore": "_vstore", "reinterpret": "_reinterpret"}

    def _intrinsic_call(self, e):
        """The value of ``e``, a Call whose op is one of ``CALLS``."""
        return getattr(self, self.CALLS[e.op])(e)

    def _touched_addr(self, load):
        return self._addr(load.buffer, self._index(load.indices[0]))

    def _access_ptr(self, e):
        return self.b.bitcast(self._touched_addr(e.args[0]), PTR)

    def _vload(self, e):
        first = e.args[0]
        lanes = dtypes.lanes(e.dtype)
        mt = memory_type(first.buffer.dtype)
        addr = self._touched_addr(first)
        vt = ir.VectorType(mt, lanes) if lanes > 1 else mt
        addr = self.b.bitcast(addr, ir.PointerType(vt))
        v = self._tag(self.b.load(addr, align=max(1, _bits(mt) // 8)), first.buffer)
        return self._from_memory(v, e.dtype)

    def _vstore(self, e):
        first, value = e.args[0], e.args[2]
        v = self._to_memory(self.expr(value), value.dtype)
        addr = self.b.bitcast(self._touched_addr(first), ir.PointerType(v.type))
        mt = memory_type(first.buffer.dtype)
        self._tag(self.b.store(v, addr, align=max(1, _bits(mt) // 8)), first.buffer)
        return ir.Constant(ir.IntType(32), 0)

    def _reinterpret(self, e):
        return self.b.bitcast(self.expr(e.args[0]), value_type(e.dtype))

    def _args(self, args):
        return [self.expr(a) for a in args]

    def _ret_type(self, e, what):
        if e.dtype == "handle":
            return PTR
        try:
            return ir.VoidType() if e.dtype == "void" else value_type(e.dtype)
        except KeyError:
            from .emit import CodegenError
            raise CodegenError(f"llvm codegen: {what} returns {e.dtype}, which has no LLVM "
                               "type here") from None

    def _llvm_intrin(self, e):
        from .emit import CodegenError
        name = _name(e)
        ret = self._ret_type(e, name)
        values = self._args(e.args[2:])
        types = [v.type for v in values]
        features = self.features
        options = feature_options(name)
        missing = [f for f in options[0] if not _has(features, f)]
        if missing and any(all(_has(features, f) for f in alt) for alt in options[1:]):
            missing = []
        # a named CPU without -mattr (-mcpu=haswell): its features are LLVM's knowledge of
        # that CPU, not in the feature string; the probe below compiles for it and decides
        implied = bool(self.cpu) and not features
        if missing and not implied:
            raise CodegenError(f"llvm codegen: intrinsic {name} needs the CPU feature(s) "
                               f"{', '.join(missing)}, which the target "
                               f"({self.cpu or 'host'}) does not have; build for a CPU that has "
                               f"them (-mattr=+{',+'.join(missing)}) or use another intrinsic")
        sig = ir.FunctionType(ret, types)
        fn = self.module.globals.get(name)
        if fn is not None and fn.function_type != sig:
            raise CodegenError(f"llvm codegen: intrinsic {name} is called with two signatures "
                               f"({fn.function_type} and {sig})")
        why = probe(_probe_module(name, sig), self.cpu or "", features)
        if why and missing:
            raise CodegenError(f"llvm codegen: intrinsic {name} needs the CPU feature(s) "
                               f"{', '.join(missing)}, which -mcpu={self.cpu} does not have "
                               f"(LLVM: {why}); build for a CPU that has them "
                               f"(-mattr=+{',+'.join(missing)}) or use another intrinsic")
        if why:
            raise CodegenError(f"llvm codegen: LLVM refuses intrinsic {name} with signature "
                               f"{sig} ({why}); check its name (overloaded intrinsics need "
                               "the mangled name, e.g. llvm.ctpop.v4i32) and its argument "
                               "types")
        if fn is None:
            fn = ir.Function(self.module, sig, name=name)
        return self.b.call(fn, values)

    def _call_extern(self, e):
        from .emit import CodegenError
        from .jit import has_symbol
        name = _name(e)
        if name not in self.imported and not has_symbol(name):
            raise CodegenError(f"llvm codegen: call_extern({name!r}): no function {name} is "
                               "known to this process; import its LLVM IR with "
                               f"s[T].pragma(axis, 'import_llvm', ir_text) or load the library "
                               "that defines it (llvmlite.binding.load_library_permanently)")
        ret = self._ret_type(e, name)
        values = self._args(e.args[1:])
        sig = ir.FunctionType(ret, [v.type for v in values])
        if name not in self.imported and any(isinstance(t, ir.VectorType)
                                             for t in [ret] + list(sig.args)):
            raise CodegenError(f"llvm codegen: call_extern({name!r}) inside a vectorized loop "
                               "would pass vectors to a C function; vectorize another loop "
                               "(or tensorize, so that the call is outside the vectors)")
        want = IMPORT_TYPES.get(name) if name in self.imported else None
        if want is not None and _type_text(sig) != want:
            raise CodegenError(f"llvm codegen: call_extern({name!r}) passes {_type_text(sig)}, "
                               f"but the imported LLVM IR defines {name} as {want}; give "
                               "call_extern that return dtype and cast the arguments "
                               "(te.const(m, 'int64'), x.astype(...))")
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, sig, name=name)
        elif fn.function_type != sig:
            raise CodegenError(f"llvm codegen: call_extern({name!r}) is called with two "
                               f"signatures ({fn.function_type} and {sig})")
        call = self.b.call(fn, values)
        return call if ret != ir.VoidType() else ir.Constant(ir.IntType(32), 0)

    def _import_llvm(self, body):
        """Check the LLVM IR of every ``pragma(axis, "import_llvm", text)`` of ``body`` and
        remember the functions it defines: call_extern reaches them, and ``jit.compile_ir``
        links the text into the module. Its hash goes into the module (named metadata), so
        that the compile cache tells two imports apart."""
        from .emit import CodegenError
        from .jit import target_options
        from schedule.functor import post_order_visit
        from schedule.ir import For
        texts = []

        def visit(node):
            if isinstance(node, For):
                texts.extend(v for k, v in node.annotations if k == "import_llvm")
        post_order_visit(body, visit)
        for text in dict.fromkeys(texts):
            if not isinstance(text, str):
                raise CodegenError("pragma import_llvm: the value must be LLVM IR text (a "
                                   f"str), got {type(text).__name__}")
            options = target_options()._replace(cpu=self.cpu or target_options().cpu,
                                                features=self.features)
            why = probe(text, options.cpu, options.features)
            if why:
                raise CodegenError(f"pragma import_llvm: LLVM refuses the imported IR ({why})")
            names = _defined_functions(text)
            for name in names:
                if IMPORTS.get(name, text) != text:
                    raise CodegenError(f"pragma import_llvm: function {name} is already "
                                       "imported from different LLVM IR; give the new "
                                       "function another name")
            IMPORTS.update((name, text) for name in names)
            self.imported.update(names)
            IMPORT_TYPES.update(names)
            digest = hashlib.sha256(text.encode()).hexdigest()
            self.module.add_named_metadata("tw.import_llvm",
                                           [ir.MetaDataString(self.module, digest)])


def _name(call) -> str:
    """The function name of a call_extern / call_llvm_intrin (a vectorized loop broadcasts
    it with the other arguments)."""
    name = call.args[0]
    while not isinstance(getattr(name, "value", None), str):
        name = name.value
    return name.value


def _defined_functions(text) -> dict:
    """Name -> function type (as text) of the functions that LLVM IR ``text`` (already
    probed: it parses) defines."""
    import llvmlite.binding as llvm
    return {f.name: str(f.global_value_type)
            for f in llvm.parse_assembly(text).functions if not f.is_declaration}


def _type_text(sig) -> str:
    """An llvmlite function type as LLVM prints it with opaque pointers (``ptr``)."""
    def one(t):
        return "ptr" if isinstance(t, ir.PointerType) else str(t)
    return f"{one(sig.return_type)} ({', '.join(one(a) for a in sig.args)})"


def _bits(t):
    return t.width if isinstance(t, ir.IntType) else {ir.FloatType: 32, ir.DoubleType: 64,
                                                       ir.HalfType: 16}[type(t)]


def _probe_module(name, sig) -> str:
    m = ir.Module(name="probe")
    fn = ir.Function(m, sig, name=name)
    probe_fn = ir.Function(m, ir.FunctionType(sig.return_type, sig.args), name="probe")
    b = ir.IRBuilder(probe_fn.append_basic_block())
    r = b.call(fn, list(probe_fn.args))
    if isinstance(sig.return_type, ir.VoidType):
        b.ret_void()
    else:
        b.ret(r)
    return str(m)


"""Math intrinsics. Each builds a ``Call`` node that the backends map to machine code.

Float-only functions refuse integer arguments with a hint to cast; ``abs``, ``floor``, ``ceil``,
``round`` keep integers as they are. ``round`` rounds half to even, like numpy. ``isnan``,
``isinf`` and ``isfinite`` are comparisons (constants for integers); ``popcount`` and ``clz``
count the bits of an integer's pattern at its own width.
"""
from __future__ import annotations

from . import dtypes
from .expr import (Call, Expr, IntImm, compare, EQ, LT, NE, convert, const, select as _select,
                   truncmod, _convert_pair, _unify)

FLOAT_UNARY = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
               "sigmoid", "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh")


def _float_call(name):
    def fn(x) -> Expr:
        x = convert(x)
        if not dtypes.is_float(x.dtype):
            raise TypeError(f"te.{name} needs a floating-point argument; {x} has dtype "
                            f"{x.dtype} (use .astype('float32'))")
        return Call(name, (x,), x.dtype)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a floating-point expression."
    return fn


exp = _float_call("exp")
exp2 = _float_call("exp2")
exp10 = _float_call("exp10")
log = _float_call("log")
log2 = _float_call("log2")
log10 = _float_call("log10")
log1p = _float_call("log1p")
sqrt = _float_call("sqrt")
rsqrt = _float_call("rsqrt")
tanh = _float_call("tanh")
sigmoid = _float_call("sigmoid")
erf = _float_call("erf")
sin = _float_call("sin")
cos = _float_call("cos")
tan = _float_call("tan")
asin = _float_call("asin")
acos = _float_call("acos")
atan = _float_call("atan")
sinh = _float_call("sinh")
cosh = _float_call("cosh")


def _keep_int(name):
    def fn(x) -> Expr:
        x = convert(x)
        if not dtypes.is_float(x.dtype):
            return x
        return Call(name, (x,), x.dtype)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}; integers are returned unchanged."
    return fn


floor = _keep_int("floor")
ceil = _keep_int("ceil")
round = _keep_int("round")
trunc = _keep_int("trunc")
nearbyint = round


def abs(x) -> Expr:
    """Absolute value (integers and floats)."""
    x = convert(x)
    if dtypes.is_float(x.dtype):
        return Call("fabs", (x,), x.dtype)
    if not dtypes.is_signed(x.dtype):
        return x
    return _select(compare(LT, x, 0), -x, x)


def power(x, y) -> Expr:
    """``x ** y`` computed in floating point."""
    x, y = _convert_pair(x, y)
    x, y, t = _unify(x, y)
    if not dtypes.is_float(t):
        raise TypeError(f"te.power needs floating-point operands; got {t} (cast with .astype)")
    return Call("pow", (x, y), t)


pow = power


def if_then_else(cond, t, f) -> Expr:
    """``t`` where ``cond`` holds, else ``f``; the untaken side is not evaluated."""
    cond = convert(cond)
    t, f = _convert_pair(t, f)
    t, f, dt = _unify(t, f)
    if not dtypes.is_bool(cond.dtype):
        raise TypeError(f"te.if_then_else: condition {cond} has dtype {cond.dtype}, not bool")
    return Call("if_then_else", (cond, t, f), dt)



def isnan(x) -> Expr:
    """True where ``x`` is NaN (always false for integers)."""
    x = convert(x)
    if not dtypes.is_float(x.dtype):
        return const(False, "bool")
    return compare(NE, x, x)                  # the backends compare floats unordered for !=


def isinf(x) -> Expr:
    """True where ``x`` is +inf or -inf (always false for integers)."""
    x = convert(x)
    if not dtypes.is_float(x.dtype):
        return const(False, "bool")
    return compare(EQ, abs(x), const(float("inf"), x.dtype))


def isfinite(x) -> Expr:
    """True where ``x`` is neither NaN nor infinite (always true for integers)."""
    x = convert(x)
    if not dtypes.is_float(x.dtype):
        return const(True, "bool")
    return compare(LT, abs(x), const(float("inf"), x.dtype))     # ordered: NaN gives false


def fmod(x, y) -> Expr:
    """C's ``fmod``: the remainder of ``x / y`` with the sign of ``x`` (truncmod for integers)."""
    x, y = _convert_pair(x, y)
    x, y, t = _unify(x, y)
    if not dtypes.is_float(t):
        return truncmod(x, y)
    return Call("fmod", (x, y), t)


def _bit_call(name, what):
    def fn(x) -> Expr:
        x = convert(x)
        if not dtypes.is_int(x.dtype) or dtypes.is_bool(x.dtype):
            raise TypeError(f"te.{name} needs an integer argument; {x} has dtype {x.dtype}")
        return Call(name, (x,), x.dtype)
    fn.__name__ = name
    fn.__doc__ = f"The number of {what} in an integer's bit pattern, in the integer's dtype."
    return fn


popcount = _bit_call("popcount", "set bits")
clz = _bit_call("clz", "leading zero bits")


# ----------------------------------------------------------------------------- external calls
# (the bodies of tensor intrinsics: te.decl_tensor_intrin)

def _call_args(what, args):
    from .extern import ExternBuffer
    out = []
    for pos, a in enumerate(args):
        if isinstance(a, str):
            raise TypeError(f"{what}: argument {pos} is the string {a!r}; pass numbers, "
                            "expressions or buffer.access_ptr(...)")
        if isinstance(a, ExternBuffer):
            raise TypeError(f"{what}: argument {pos} is the buffer {a.name}; pass "
                            f"{a.name}.access_ptr('r') (a pointer) or {a.name}.vload(...)")
        out.append(convert(a))
    return tuple(out)


def call_extern(dtype, func_name, *args) -> Expr:
    """A call of the C function ``func_name`` returning ``dtype`` (TVM's
    ``tir.call_extern``): a symbol of the process (libc, ...) or of LLVM IR imported with
    ``s[C].pragma(axis, "import_llvm", ir_text)``; on the GPU a device function registered
    with ``codegen_cuda.emit_calls.register_extern``."""
    from .expr import StringImm
    if not isinstance(func_name, str) or not func_name.isidentifier():
        raise TypeError(f"te.tir.call_extern: the function name must be a C identifier, got "
                        f"{func_name!r}")
    return Call("call_extern", (StringImm(func_name),) + _call_args(
        f"call_extern({func_name!r})", args),
        dtype if dtype in ("handle", "void") else dtypes.canonical(dtype))


def _llvm_call(op, dtype, name, args):
    from .expr import StringImm
    if not isinstance(name, str) or not name.startswith("llvm."):
        raise TypeError(f"te.{op}: the intrinsic must be named as LLVM names it "
                        f"('llvm.x86.avx512.vpdpbusd.512'), got {name!r}")
    if not args:
        raise TypeError(f"te.{op}({name!r}): the first argument after the name is the number "
                        "of signature arguments (TVM's order: dtype, name, num_signature, "
                        "*args), e.g. te.const(0, 'uint32')")
    conv = _call_args(f"{op}({name!r})", args)
    if not isinstance(conv[0], IntImm):
        raise TypeError(f"te.{op}({name!r}): the first argument after the name must be the "
                        f"constant number of signature arguments, got {conv[0]}")
    return Call(op, (StringImm(name),) + conv, dtypes.canonical(dtype))


def call_llvm_intrin(dtype, name, *args) -> Expr:
    """A call of the LLVM intrinsic ``name`` (TVM's order: ``dtype, name, num_signature,
    *args``; ``num_signature`` counts the arguments whose types mangle an overloaded name)."""
    return _llvm_call("call_llvm_intrin", dtype, name, args)


def call_llvm_pure_intrin(dtype, name, *args) -> Expr:
    """``call_llvm_intrin`` of an intrinsic without side effects."""
    return _llvm_call("call_llvm_pure_intrin", dtype, name, args)


def reinterpret(dtype, value) -> Expr:
    """The bits of ``value`` read as ``dtype`` (same total width: int8x4 <-> int32)."""
    value = convert(value)
    dtype = dtypes.canonical(dtype)
    if dtypes.bits(dtype) * dtypes.lanes(dtype) != \
            dtypes.bits(value.dtype) * dtypes.lanes(value.dtype):
        raise TypeError(f"te.reinterpret: {value} has dtype {value.dtype}, whose width differs "
                        f"from {dtype}'s; reinterpret between types of one total width")
    return Call("reinterpret", (value,), dtype)

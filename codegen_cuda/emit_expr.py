"""The CUDA emitter's expressions: loop IR expressions -> numba.cuda source text (integer
arithmetic wrapped to its dtype, numpy's division and NaN-propagating min/max, saturating
float -> int casts, math intrinsics) and element indices (a base shared by a straight-line run
of statements computed once). A mixin of ``emit.CudaEmitter``.
"""
from __future__ import annotations

from te import dtypes
from te.expr import (Add, And, Call, EQ, FloorDiv, FloorMod, GE, GT, IntImm, LE, LT,
                     Mul, NE, Or, Sub, Div)
from schedule.functor import post_order_visit
from schedule.ir import BufferLoad

from .emit_base import NUMBA_TYPE, CudaCodegenError


INFIX = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//", FloorMod: "%", EQ: "==", NE: "!=",
         LT: "<", LE: "<=", GT: ">", GE: ">=", And: "and", Or: "or"}
MATH = {"exp": "math.exp", "log": "math.log", "log2": "math.log2", "log10": "math.log10",
        "log1p": "math.log1p", "sqrt": "math.sqrt", "tanh": "math.tanh", "erf": "math.erf",
        "sin": "math.sin", "cos": "math.cos", "tan": "math.tan", "asin": "math.asin",
        "acos": "math.acos", "atan": "math.atan", "sinh": "math.sinh", "cosh": "math.cosh",
        "fabs": "abs"}
TO_INT = {"floor": "math.floor", "ceil": "math.ceil", "trunc": "math.trunc", "round": "round"}


# Float max/min propagate NaN as numpy's maximum/minimum (te.max's documented semantics):
# Python's max(a, b), which numba follows, is order-dependent (max(nan, 1) is nan, max(1, nan)
# is 1), and numba's np.maximum returns a on ties (numpy: b). Functions, not inline expressions,
# which would repeat their operands (nested max would grow exponentially, a load be made twice);
# defined inside each kernel that calls them, where numba inlines them: a device function
# (cuda.jit(device=True)) would need a GPU to compile, and compile_ptx works without one.
NAN_MINMAX = {
    "fmax_nan": ("max", "a if a != a or a > b else b"),
    "fmin_nan": ("min", "a if a != a or a < b else b"),
}


class ExprEmitter:
    """The expression methods (``expr``, ``e_*``, ``index``) of ``emit.CudaEmitter``."""

    def expr(self, e) -> str:
        text = self._expr(e)
        if type(e) in (Add, Sub, Mul, FloorDiv, Div) and dtypes.is_int(e.dtype) and \
                dtypes.bits(e.dtype) < 32:
            # numba computes 8- and 16-bit integer arithmetic in int64 on the GPU: wrap each
            # result to its dtype, as the CPU backend and numpy do (int8(100) + int8(100) is
            # -56 before it meets a division or a comparison)
            text = f"{NUMBA_TYPE[e.dtype]}({_wrapped(text, 'int64', e.dtype)})"
        return text

    def _expr(self, e) -> str:
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is not None:
            return m(e)
        if type(e) in (FloorDiv, FloorMod) and dtypes.is_int(e.dtype) and \
                not (isinstance(e.b, IntImm) and e.b.value != 0):
            # x // 0 and x % 0 are 0, as numpy's and the CPU backend's (not an exception)
            b = self.expr(e.b)
            return f"(({self.expr(e.a)} {INFIX[type(e)]} {b}) if {b} != 0 else 0)"
        if type(e) in INFIX:
            return f"({self.expr(e.a)} {INFIX[type(e)]} {self.expr(e.b)})"
        raise CudaCodegenError(f"cuda codegen: no rule for {type(e).__name__}")

    def e_IntImm(self, e):
        if e.dtype == "bool":
            return "True" if e.value else "False"
        return str(e.value) if e.dtype in ("int32", "int64") else \
            f"{NUMBA_TYPE[e.dtype]}({e.value})"

    def e_FloatImm(self, e):
        v = repr(float(e.value))
        if v in ("inf", "-inf", "nan"):
            v = f"float('{v}')"
        return f"{NUMBA_TYPE[_compute(e.dtype)]}({v})"

    def e_Var(self, e):
        return self.names(e, e.name)

    def e_Div(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dtypes.is_float(e.dtype):
            return f"({a} / {b})"
        return _truncdiv(a, b)

    def e_Mod(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dtypes.is_float(e.dtype):
            return f"({a} - {_truncdiv(a, b)} * {b})"
        return f"(({a} - {_truncdiv(a, b)} * {b}) if {b} != 0 else 0)"

    def e_Min(self, e):
        return self._extreme("min", e)

    def e_Max(self, e):
        return self._extreme("max", e)

    def _extreme(self, op, e):
        if not dtypes.is_float(e.dtype):
            return f"{op}({self.expr(e.a)}, {self.expr(e.b)})"
        name = f"f{op}_nan"
        self.helpers.add(name)
        return f"{name}({self.expr(e.a)}, {self.expr(e.b)})"

    def _helper_source(self):
        """The NAN_MINMAX functions the kernel being emitted calls, as its first lines."""
        lines = []
        for name in sorted(self.helpers):
            op, body = NAN_MINMAX[name]
            lines += [f"    def {name}(a, b):",
                      f"        # {op}(a, b) of floats: NaN if a or b is NaN, b when they tie",
                      f"        return {body}"]
        return lines

    def e_Not(self, e):
        return f"(not {self.expr(e.a)})"

    def e_Select(self, e):
        return (f"({self.expr(e.true_value)} if {self.expr(e.condition)} else "
                f"{self.expr(e.false_value)})")

    def e_Cast(self, e):
        v = self.expr(e.value)
        if dtypes.is_bool(e.dtype):
            return f"({v} != 0)"
        if dtypes.is_float(e.value.dtype) and dtypes.is_int(e.dtype):
            # saturating, NaN -> 0, as the CPU backend (te.dtypes.float_to_int): the simulator's
            # math.trunc(nan) would raise; on the GPU cvt.rzi saturates already
            # (te.dtypes.float_to_int: int64 saturating, then wrapped to the target)
            t = NUMBA_TYPE[e.dtype]
            top = 2.0 ** 63
            wide = (f"(i64(0) if {v} != {v} else i64({-2**63}) if {v} < {-top!r} else "
                    f"i64({2**63 - 1}) if {v} >= {top!r} else i64(math.trunc({v})))")
            if dtypes.element(e.dtype) == "uint64":
                return (f"(u64({2**64 - 1}) if {v} >= {2.0**64!r} else "
                        f"u64(math.trunc({v})) if {v} >= {top!r} else u64({wide}))")
            return f"{t}({_wrapped(wide, 'int64', e.dtype)})"
        if e.dtype == "float16":
            return f"f32(f16({v}))"
        if dtypes.is_int(e.dtype) and dtypes.is_int(e.value.dtype):
            v = _wrapped(v, e.value.dtype, e.dtype)
        return f"{NUMBA_TYPE[e.dtype]}({v})"

    def e_Call(self, e):
        if e.op in self.CALLS:
            return self._intrinsic_call(e)
        args = [self.expr(a) for a in e.args]
        t = NUMBA_TYPE[_compute(e.dtype)]
        op = e.op
        if op == "if_then_else":
            return f"({args[1]} if {args[0]} else {args[2]})"
        if op in MATH:
            return f"{t}({MATH[op]}({args[0]}))"
        if op in TO_INT:
            return f"{t}({TO_INT[op]}({args[0]}))"
        if op == "rsqrt":
            return f"({t}(1.0) / math.sqrt({args[0]}))"
        if op == "sigmoid":
            return f"({t}(1.0) / ({t}(1.0) + math.exp(-{args[0]})))"
        if op == "exp2":
            return f"{t}(math.pow({t}(2.0), {args[0]}))"
        if op == "exp10":
            return f"{t}(math.pow({t}(10.0), {args[0]}))"
        if op == "pow":
            return f"{t}(math.pow({args[0]}, {args[1]}))"
        if op == "fmod":
            return f"{t}(math.fmod({args[0]}, {args[1]}))"
        if op in ("popcount", "clz"):
            return self._bit_count(op, args[0], e.args[0].dtype, t)
        bitwise = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
        if op in bitwise:
            return f"{t}({args[0]} {bitwise[op]} {args[1]})"
        if op in ("shift_left", "shift_right"):
            # numpy's rule: an amount outside [0, bits) gives 0 (or the sign, shifting right)
            x, n = args
            width = dtypes.bits(e.dtype)
            fill = "0" if op == "shift_left" or not dtypes.is_signed(e.dtype) else \
                f"(-1 if {x} < 0 else 0)"
            sym = "<<" if op == "shift_left" else ">>"
            return f"({t}({x} {sym} {n}) if 0 <= {n} < {width} else {t}({fill}))"
        raise CudaCodegenError(f"cuda codegen: unknown intrinsic {op}")

    @staticmethod
    def _bit_count(op, x, dtype, t):
        """popc/clz on the unsigned bit pattern: signed values would count their sign."""
        width = dtypes.bits(dtype)
        wide = 64 if width > 32 else 32
        pattern = f"u{wide}(u{width}({x}))"          # zero-extend, never sign-extend
        if op == "popcount":
            return f"{t}(cuda.popc({pattern}))"
        narrow = f" - {wide - width}" if wide > width else ""
        return f"{t}(cuda.clz({pattern}){narrow})"

    def e_Let(self, e):
        raise CudaCodegenError("cuda codegen: let expressions are not supported")

    def e_BufferLoad(self, e):
        if e.buffer in self.registers:
            return self._register(e.buffer, e.indices[0])
        v = f"{self.names(e.buffer, e.buffer.name)}[{self.index(e.indices[0])}]"
        return f"f32({v})" if e.buffer.dtype == "float16" else v

    def _register(self, buf, index):
        return f"{self.names(buf, buf.name)}_{index.value}"

    def index(self, e) -> str:
        """An element index; unsigned, so that numba skips its negative-index wraparound. A
        base that several statements of the current straight-line run share (``base + c``) is
        computed once, into a variable, before its first use."""
        if isinstance(e, IntImm):
            return str(e.value)
        base, offset = _base_offset(e)
        if self.bases is not None and _shareable(base):
            key = self.expr(base)
            entry = self.bases.get(key)
            if entry is not None:
                if entry[0] is None:
                    entry[0] = self.names(object(), "i")
                    self.emit(f"{entry[0]} = {key}", self.bases_indent)
                return f"u64({entry[0]} + {offset})" if offset else f"u64({entry[0]})"
        return f"u64({self.expr(e)})"

    def e_Ramp(self, e):
        raise CudaCodegenError("cuda codegen: vector expressions are not supported")

    e_Broadcast = e_Ramp


def _base_offset(e):
    """(base, constant offset) of an index ``base + c``; (e, 0) otherwise."""
    if isinstance(e, Add) and isinstance(e.b, IntImm):
        return e.a, e.b.value
    return e, 0


def _shareable(e):
    """Whether an index base is worth a variable of its own and safe to compute early: some
    arithmetic on variables (loop, thread and let variables do not change within a run), no
    loads (a store of the run might change what they read) and no calls."""
    if not isinstance(e, (Add, Sub, Mul, FloorDiv, FloorMod)):
        return False
    pure = [True]

    def visit(n):
        if isinstance(n, (BufferLoad, Call)):
            pure[0] = False
    post_order_visit(e, visit)
    return pure[0]


def _wrapped(v, src, dst):
    """``v`` reduced to ``dst``'s range as a two's-complement conversion does, for a cast that
    may not keep the value (narrower, or another signedness below 64 bits): numba's casts on
    the GPU wrap, but the simulator's refuse a Python int out of range (u8(-2))."""
    bits = dtypes.bits(dst)
    keeps = dtypes.is_signed(src) == dtypes.is_signed(dst) and bits >= dtypes.bits(src)
    if keeps or bits >= 64:
        return v
    mask = (1 << bits) - 1
    wide = f"{NUMBA_TYPE['int64']}({v})"       # int8 & 255 would not fit the simulator's int8
    if not dtypes.is_signed(dst):
        return f"({wide} & {mask})"
    half = 1 << (bits - 1)
    return f"((({wide} + {half}) & {mask}) - {half})"


def _truncdiv(a, b):
    # the floor quotient, moved up by one where it was rounded down past zero (abs() of the
    # dtype's minimum wraps: abs(int16(-32768)) // 2 gave +16384 for -32768 / 2)
    q = f"({a} // {b})"
    up = f"(1 if ({a} % {b} != 0 and (({a} < 0) != ({b} < 0))) else 0)"
    return f"(({q} + {up}) if {b} != 0 else 0)"


def _compute(dtype):
    return "float32" if dtypes.element(dtype) == "float16" else dtypes.element(dtype)

"""The LLVM emitter's math intrinsics: ``e_Call`` for te's math calls (exp, log, sigmoid, rsqrt,
bitwise ops and shifts, popcount, clz, ...), through LLVM intrinsics, an inline float32 vector
``exp``, glibc's libmvec vector functions, or libm per lane; ``e_Call`` hands tensor
intrinsics' calls to emit_calls.py, ``tvm_call_packed`` and ``if_then_else`` to emit.py.
A mixin of ``emit.Emitter``.
"""
from __future__ import annotations

from llvmlite import ir

from te import dtypes

from .emit_base import I32, CodegenError
from .jit import has_symbol
from .types import LIBM, LLVM_INTRINSICS, MVEC, mangle, value_type


class MathEmitter:
    """``e_Call`` and the math helpers of ``emit.Emitter``."""


    def e_Call(self, e):
        if e.op in self.CALLS:
            return self._intrinsic_call(e)
        if e.op == "tvm_call_packed":
            return self._call_packed(e)
        if e.op == "if_then_else":
            return self._if_then_else(e)
        args = [self.expr(a) for a in e.args]
        t = value_type(e.dtype)
        b = self.b
        if e.op == "exp" and _is_f32_vector(t):
            return self._exp_f32(args[0], t)
        if len(args) == 1 and e.op in MVEC:
            vec = self._mvec(e.op, args[0], t)
            if vec is not None:
                return vec
        if e.op in LLVM_INTRINSICS:
            fn = self._declare(f"llvm.{LLVM_INTRINSICS[e.op]}.{mangle(t)}", t, [t] * len(args))
            return b.call(fn, args)
        if e.op == "rsqrt":
            sq = self._declare(f"llvm.sqrt.{mangle(t)}", t, [t])
            return b.fdiv(self._splat(1.0, t), b.call(sq, args))
        if e.op == "sigmoid":
            neg = b.fsub(self._splat(0.0, t), args[0])
            ex = self._exp_f32(neg, t) if _is_f32_vector(t) else self._mvec("exp", neg, t)
            if ex is None:
                ex = b.call(self._declare(f"llvm.exp.{mangle(t)}", t, [t]), [neg])
            one = self._splat(1.0, t)
            return b.fdiv(one, b.fadd(one, ex))
        if e.op in LIBM:
            return self._libm(LIBM[e.op], args[0], t)
        bitwise = {"bitwise_and": "and_", "bitwise_or": "or_", "bitwise_xor": "xor"}
        if e.op in bitwise:
            return getattr(b, bitwise[e.op])(*args)
        if e.op in ("shift_left", "shift_right"):
            return self._shift(e.op, args[0], args[1], e.dtype, t)
        if e.op == "fmod":
            return b.frem(*args)                 # LLVM's frem is C's fmod
        if e.op == "popcount":
            return b.call(self._declare(f"llvm.ctpop.{mangle(t)}", t, [t]), args)
        if e.op == "clz":
            fn = self._declare(f"llvm.ctlz.{mangle(t)}", t, [t, ir.IntType(1)])
            return b.call(fn, [args[0], ir.Constant(ir.IntType(1), 0)])   # clz(0) = width
        raise CodegenError(f"llvm codegen: unknown intrinsic {e.op}")

    def _exp_f32(self, x, t):
        """``exp`` of a float32 vector, inline: x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite),
        exp(r) by its degree-6 Taylor polynomial (error below 2e-7, about one ulp), then the
        scale 2^n applied as two powers of two built in the exponent bits, so that results
        down to the denormals and up to inf come out right. About ten vector instructions
        per vector, against a call into libmvec."""
        b = self.b
        vi = ir.VectorType(I32, t.count)
        fma = self._declare(f"llvm.fma.{mangle(t)}", t, [t, t, t])
        rint = self._declare(f"llvm.rint.{mangle(t)}", t, [t])
        lo_clamp = self._declare(f"llvm.maxnum.{mangle(t)}", t, [t, t])
        hi_clamp = self._declare(f"llvm.minnum.{mangle(t)}", t, [t, t])
        xc = b.call(hi_clamp, [b.call(lo_clamp, [x, self._splat(-104.0, t)]),
                               self._splat(89.0, t)])
        n = b.call(rint, [b.fmul(xc, self._splat(1.4426950408889634, t))])
        r = b.call(fma, [n, self._splat(-0.693145751953125, t), xc])       # ln2, high bits
        r = b.call(fma, [n, self._splat(-1.428606765330187e-06, t), r])    # ln2, low bits
        p = self._splat(1.0 / 720, t)
        for c in (1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0):
            p = b.call(fma, [p, r, self._splat(c, t)])
        ni = b.fptosi(n, vi)
        half = b.ashr(ni, ir.Constant(vi, [ir.Constant(I32, 1)] * t.count))
        bias = ir.Constant(vi, [ir.Constant(I32, 127)] * t.count)
        shift = ir.Constant(vi, [ir.Constant(I32, 23)] * t.count)
        s1 = b.bitcast(b.shl(b.add(half, bias), shift), t)
        s2 = b.bitcast(b.shl(b.add(b.sub(ni, half), bias), shift), t)
        y = b.fmul(b.fmul(p, s1), s2)
        return b.select(b.fcmp_unordered("uno", x, x), x, y)     # NaN stays NaN

    def _mvec(self, name, x, t):
        """A vector math call through glibc's libmvec (AVX2 / AVX-512 variants), chunk by
        chunk; None when the type, the CPU or the library does not offer it."""
        if not isinstance(t, ir.VectorType) or not self.mvec:
            return None
        elem = t.element
        if isinstance(elem, ir.FloatType):
            suffix, widths = "f", ((16, "e"), (8, "d"))
        elif isinstance(elem, ir.DoubleType):
            suffix, widths = "", ((8, "e"), (4, "d"))
        else:
            return None
        for width, isa in widths:
            if isa not in self.mvec or t.count % width:
                continue
            sym = f"_ZGV{isa}N{width}v_{MVEC[name]}{suffix}"
            if not has_symbol(sym):
                continue
            ct = ir.VectorType(elem, width)
            fn = self._declare(sym, ct, [ct])
            parts = []
            for start in range(0, t.count, width):
                mask = ir.Constant(ir.VectorType(I32, width), list(range(start, start + width)))
                chunk = x if width == t.count else self.b.shuffle_vector(
                    x, ir.Constant(t, ir.Undefined), mask)
                parts.append(self.b.call(fn, [chunk]))
            while len(parts) > 1:
                merged = []
                for a, c in zip(parts[0::2], parts[1::2]):
                    n = a.type.count * 2
                    merged.append(self.b.shuffle_vector(
                        a, c, ir.Constant(ir.VectorType(I32, n), list(range(n)))))
                parts = merged
            return parts[0]
        return None

    def _shift(self, op, x, amount, dtype, t):
        """numpy's shifts: an amount of the bit width or more (negative ones too, read
        unsigned) gives 0, or the sign for an arithmetic right shift; LLVM's shl / ashr /
        lshr by such an amount are poison."""
        b = self.b
        width = dtypes.bits(dtype)
        big = b.icmp_unsigned(">=", amount, self._splat(width, t))
        amt = b.and_(amount, self._splat(width - 1, t))
        if op == "shift_left":
            return b.select(big, self._splat(0, t), b.shl(x, amt))
        if dtypes.is_signed(dtype):
            fill = b.ashr(x, self._splat(width - 1, t))
            return b.select(big, fill, b.ashr(x, amt))
        return b.select(big, self._splat(0, t), b.lshr(x, amt))

    def _libm(self, name, x, t):
        elem = t.element if isinstance(t, ir.VectorType) else t
        cname = name + ("f" if isinstance(elem, ir.FloatType) else "")
        fn = self._declare(cname, elem, [elem])
        if not isinstance(t, ir.VectorType):
            return self.b.call(fn, [x])
        out = ir.Constant(t, ir.Undefined)
        for k in range(t.count):
            lane = self.b.extract_element(x, ir.Constant(I32, k))
            out = self.b.insert_element(out, self.b.call(fn, [lane]), ir.Constant(I32, k))
        return out


def _is_f32_vector(t) -> bool:
    return isinstance(t, ir.VectorType) and isinstance(t.element, ir.FloatType) and \
        t.count >= 4

"""Loop IR -> LLVM IR (llvmlite.ir).

Each PrimFunc becomes ``i32 @name(ptr noalias %A, ..., i32 %n, ...)``: one data pointer per
buffer parameter, then the scalar parameters, then the symbolic shape variables. Parallel loops
are outlined into a function that each OpenMP thread (libgomp's ``GOMP_parallel``, a persistent
pool) runs on its chunk of iterations. Allocations of constant small size live on the stack of
the function that uses them. Larger constant ones at the function's own level (not inside a
parallel loop) live in a *workspace*: the function then takes one more pointer parameter, and
the caller passes a per-thread arena of ``Emitter.workspace_bytes`` that stays allocated from
call to call (malloc'ing megabytes per call cost page faults: a quarter of a convolution's
time). Nested allocations take the workspace as a stack. The others are malloc'ed.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from te import dtypes
from te.expr import (Add, Binary, Div, FloorDiv, FloorMod, IntImm, Max, Min, Mod, Mul, Sub,
                     Var)
from schedule.analysis import packed_calls, stored_buffers, uses
from schedule.functor import IRVisitor
from schedule.ir import (Broadcast, Buffer, BufferRef, For, ForKind, Ramp)
from schedule.simplify import INF, const_bounds

from .emit_calls import CallEmitter
from .jit import has_symbol
from .runtime import FORKED_SYMBOL
from .types import (ARITH, COMPARE, LIBM, LLVM_INTRINSICS, LOGIC, MVEC, mangle, memory_type,
                    value_type)

I32 = ir.IntType(32)
I64 = ir.IntType(64)
I8 = ir.IntType(8)
PTR = ir.PointerType(I8)     # llvmlite's typed pointers; LLVM reads them as opaque ptr
STACK_LIMIT = 256 * 1024
WORKSPACE_LIMIT = 1 << 30   # bytes: larger constant allocations are malloc'ed (and checked)
ERROR_STATUS = 1000         # status ERROR_STATUS + k: error site k (Emitter.error_sites) failed
INT32_MAX = 2**31 - 1
STREAM_ALIGN = 64           # bytes: the alignment that non-temporal vector stores need
WORKSPACE_ALIGN = 64        # bytes: each workspace buffer starts at a multiple of this


class CodegenError(RuntimeError):
    pass


@dataclass(frozen=True, eq=False)
class ErrorSite:
    """A place where the compiled function can stop with status ``ERROR_STATUS + k``; the
    caller (module.py) makes the message. ``kind``: "alloc" (the byte count of an allocation
    of ``buffer`` overflows 64 bits or malloc returned NULL) or "index_width" (an int32-indexed
    buffer of more than 2^31 - 1 elements). The element count is the product of ``factors``."""
    kind: str
    buffer: Buffer
    factors: tuple
    itemsize: int


def symbol(name) -> str:
    """The LLVM symbol of a built function: prefixed, so that a function named ``exp`` or
    ``malloc`` never replaces the library function that the generated code calls."""
    return "tw_" + name


class _Ctx:
    """Per-LLVM-function state: builder, variable values, buffer pointers, loop ranges."""

    def __init__(self, fn, vars_=None, bufs=None, ranges=None):
        self.fn = fn
        entry = fn.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.alloca_builder.branch(body)
        self.alloca_builder.position_at_start(entry)
        self.builder = ir.IRBuilder(body)
        self.vars = dict(vars_ or {})
        self.bufs = dict(bufs or {})
        self.ranges = dict(ranges or {})
        self.live = []              # malloc'ed pointers live here: freed on an error return
        self.status_ptr = None      # where an outlined loop reports an error (i32*)


class Emitter(CallEmitter):
    def __init__(self, module: ir.Module, parallel=True, mvec="", features=None, cpu=""):
        self.module = module
        if features is None:                # the host's (call_llvm_intrin checks them)
            from .jit import target_options
            host = target_options()
            features, cpu = host.features, host.cpu
        self.features, self.cpu = features, cpu
        self.imported = set()       # functions of pragma import_llvm IR (emit_calls.py)
        self.parallel = parallel
        self.mvec = mvec            # libmvec ISA variants usable here: "d" (AVX2), "e" (AVX-512)
        self.ctx: _Ctx | None = None
        self.counter = 0
        self.streaming = False      # inside a loop whose stores bypass the cache (see s_For)
        self.top = None             # the _Ctx of the function itself (not of outlined loops)
        self.workspace = None       # its workspace parameter, once an allocation needs it
        self.workspace_top = 0      # bytes of workspace in use at this point of the emission
        self.workspace_bytes = 0    # bytes of workspace the function needs
        self.alias_scopes = {}      # Buffer -> (its scope list, the other buffers' scopes)
        self.packed_sites = []      # per tvm_call_packed: (function name, argument kinds)
        self.packed_cb = None       # the callback parameter, when the function has such calls
        self.error_sites = []       # ErrorSite per error status (ERROR_STATUS + index)
        self.status_slot = None     # the function's i32 that outlined loops report errors in

    # ------------------------------------------------------------------ declarations
    def _declare(self, name, ret, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def _unique(self, base):
        self.counter += 1
        return f"{base}_{self.counter}"

    # ------------------------------------------------------------------ entry
    def emit_function(self, func, shape_vars):
        """Emit ``func``; ``shape_vars`` are the extra i32 parameters bound from shapes."""
        buffers = [p for p in func.params if isinstance(p, Buffer)]
        scalars = [p for p in func.params if isinstance(p, Var)] + list(shape_vars)
        arg_types = [ir.PointerType(memory_type(b.dtype)) for b in buffers] + \
            [value_type(v.dtype) for v in scalars]
        allocations = _allocations(func.body)
        workspace = any(not parallel and STACK_LIMIT < (_nbytes(b) or 0) <= WORKSPACE_LIMIT
                        for b, parallel in allocations)
        if workspace:
            arg_types.append(PTR)
        if packed_calls(func.body):
            arg_types.append(PTR)
        fn = ir.Function(self.module, ir.FunctionType(I32, arg_types), name=symbol(func.name))
        fn.attributes.add("nounwind")
        for k, b in enumerate(buffers):
            fn.args[k].name = b.name.replace(".", "_")
            fn.args[k].add_attribute("noalias")
        for k, v in enumerate(scalars):
            fn.args[len(buffers) + k].name = v.name
        ctx = _Ctx(fn, vars_={v: fn.args[len(buffers) + k] for k, v in enumerate(scalars)},
                   bufs={b: fn.args[k] for k, b in enumerate(buffers)},
                   ranges={v: (0, INF) for v in shape_vars})
        self.ctx = self.top = ctx
        self._import_llvm(func.body)
        self._alias_scopes(func.name, buffers + [b for b, _ in allocations])
        if workspace:
            self.workspace = fn.args[len(buffers) + len(scalars)]
            self.workspace.name = "workspace"
            self.workspace.add_attribute("noalias")
        if packed_calls(func.body):
            self.packed_cb = fn.args[-1]
            self.packed_cb.name = "packed_callback"
        try:
            self.stmt(func.body)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as err:
            if type(err).__module__ != "builtins":      # the project's own errors pass
                raise
            # llvmlite's IR builder refused an instruction ("Operands must be the same type")
            raise CodegenError(f"llvm codegen of {func.name}: {err} (while emitting LLVM IR "
                               "from the lowered function; this is a compiler bug, please "
                               "report it with te.lower's output)") from err
        self.ctx.builder.ret(ir.Constant(I32, 0))
        return fn

    def _alias_scopes(self, name, buffers):
        """One alias scope per buffer of function ``name`` (parameters and allocations)."""
        bufs = list(dict.fromkeys(buffers))
        if len(bufs) < 2:
            return
        md = self.module.add_metadata
        domain = md([ir.MetaDataString(self.module, f"tw.{name}")])
        scopes = [md([ir.MetaDataString(self.module, f"tw.{name}.{k}.{b.name}"), domain])
                  for k, b in enumerate(bufs)]
        for k, b in enumerate(bufs):
            others = [sc for j, sc in enumerate(scopes) if j != k]
            self.alias_scopes[b] = (md([scopes[k]]), md(others))

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.builder

    # ------------------------------------------------------------------ expressions
    def expr(self, e):
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, Binary):
                return self.e_Binary(e)
            raise CodegenError(f"llvm codegen: no rule for {type(e).__name__}")
        return method(e)

    def e_IntImm(self, e):
        return ir.Constant(value_type(e.dtype), e.value)

    def e_FloatImm(self, e):
        return ir.Constant(value_type(e.dtype), e.value)

    def e_Var(self, e):
        try:
            return self.ctx.vars[e]
        except KeyError:
            raise CodegenError(f"llvm codegen: variable {e.name} is used but not defined") \
                from None

    def _nonneg(self, e):
        return const_bounds(e, self.ctx.ranges)[0] >= 0

    def e_Binary(self, e):
        cls = type(e)
        src = e.a.dtype
        a, b = self.expr(e.a), self.expr(e.b)
        is_float = dtypes.is_float(src)
        signed = dtypes.is_signed(src)
        if cls in ARITH:
            if is_float:
                # 'contract' lets LLVM fuse a * b + c into one FMA (clang's -ffp-contract=on)
                return getattr(self.b, ARITH[cls][1])(a, b, flags=("contract",))
            return getattr(self.b, ARITH[cls][0])(a, b)
        if cls in COMPARE:
            op = COMPARE[cls]
            if is_float:
                return (self.b.fcmp_unordered if op == "!=" else self.b.fcmp_ordered)(op, a, b)
            return (self.b.icmp_signed if signed else self.b.icmp_unsigned)(op, a, b)
        if cls in LOGIC:
            return getattr(self.b, LOGIC[cls])(a, b)
        if cls in (Min, Max):
            op = "<" if cls is Min else ">"
            if is_float:
                # NaN-propagating, as numpy's maximum/minimum: NaN if a is NaN, else a if
                # a > b, else b (NaN when b is; b on ties: max(-0.0, 0.0) is 0.0, as numpy).
                # A NaN constant rather than a: LLVM would merge select(isnan(a), a,
                # select(a > b, a, b)) into one select on (isnan(a) or a > b), which x86
                # lowers to two compares on the accumulator's chain of a max-reduction
                # (3x slower); this way it is vmaxps and one blend.
                pick = self.b.select(self.b.fcmp_ordered(op, a, b), a, b)
                return self.b.select(self.b.fcmp_unordered("uno", a, a),
                                     self._splat(float("nan"), a.type), pick)
            else:
                cond = (self.b.icmp_signed if signed else self.b.icmp_unsigned)(op, a, b)
            return self.b.select(cond, a, b)
        if cls is Div and is_float:
            return self.b.fdiv(a, b)
        if cls in (Div, Mod, FloorDiv, FloorMod) and not is_float:
            b, zero = self._safe_divisor(e, a, b, signed)
            if cls is Div:
                q = self.b.sdiv(a, b) if signed else self.b.udiv(a, b)
            elif cls is Mod:
                q = self.b.srem(a, b) if signed else self.b.urem(a, b)
            else:
                q = self._floor_divmod(cls, e, a, b, signed)
            return q if zero is None else self.b.select(zero, self._splat(0, q.type), q)
        if cls is Mod:
            return self.b.srem(a, b) if signed else self.b.urem(a, b)
        raise CodegenError(f"llvm codegen: no rule for {cls.__name__}")

    def _safe_divisor(self, e, a, b, signed):
        """(divisor, is-zero) for an integer division: a zero divisor, and MIN / -1, would
        trap (SIGFPE); they divide by 1 instead and the result of x // 0 and x % 0 is 0, as
        numpy's (MIN // -1 wraps to MIN, MIN % -1 is 0). Constant divisors need nothing."""
        d = e.b.value if isinstance(e.b, Broadcast) else e.b
        if isinstance(d, IntImm) and d.value not in (0, -1):
            return b, None
        zero = self.b.icmp_unsigned("==", b, self._splat(0, b.type))
        bad = zero
        if signed:
            bits = b.type.element.width if isinstance(b.type, ir.VectorType) else b.type.width
            overflow = self.b.and_(
                self.b.icmp_signed("==", a, self._splat(-(1 << (bits - 1)), a.type)),
                self.b.icmp_signed("==", b, self._splat(-1, b.type)))
            bad = self.b.or_(zero, overflow)
        return self.b.select(bad, self._splat(1, b.type), b), zero

    def _floor_divmod(self, cls, e, a, b, signed):
        simple = not signed or (self._nonneg(e.a) and self._nonneg(e.b))
        if simple:
            if cls is FloorDiv:
                return self.b.sdiv(a, b) if signed else self.b.udiv(a, b)
            return self.b.srem(a, b) if signed else self.b.urem(a, b)
        zero = ir.Constant(a.type, None)
        q, r = self.b.sdiv(a, b), self.b.srem(a, b)
        adjust = self.b.and_(self.b.icmp_signed("!=", r, zero),
                             self.b.icmp_signed("!=", self.b.icmp_signed("<", r, zero),
                                                self.b.icmp_signed("<", b, zero)))
        if cls is FloorDiv:
            return self.b.sub(q, self.b.zext(adjust, a.type))
        return self.b.add(r, self.b.select(adjust, b, zero))

    def e_Not(self, e):
        return self.b.not_(self.expr(e.a))

    def e_Select(self, e):
        # both sides are evaluated; a select that guards a read was made an if_then_else
        # by schedule/bound_checks.py
        return self.b.select(self.expr(e.condition), self.expr(e.true_value),
                             self.expr(e.false_value))

    def e_Cast(self, e):
        return self.convert(self.expr(e.value), e.value.dtype, e.dtype)

    def convert(self, v, src, dst):
        """Convert value ``v`` from dtype ``src`` to dtype ``dst`` (float16 rounds via half)."""
        b = self.b
        st, dt = value_type(src), value_type(dst)
        fsrc, fdst = dtypes.is_float(src), dtypes.is_float(dst)
        if dtypes.is_bool(dst):
            zero = ir.Constant(st, None)
            return b.fcmp_unordered("!=", v, zero) if fsrc else b.icmp_unsigned("!=", v, zero)
        if fsrc and fdst:
            if dtypes.element(dst) == "float16":
                if _width(st) > 32:         # double -> half would call __truncdfhf2, which the
                    v = b.fptrunc(v, dt)    # JIT lacks: go through float (F16C converts it)
                ht = _with_elem(dt, ir.HalfType())
                return b.fpext(b.fptrunc(v, ht), dt)      # round through half
            if st == dt:
                return v
            return b.fpext(v, dt) if _width(st) < _width(dt) else b.fptrunc(v, dt)
        if fdst:
            if dtypes.element(dst) == "float16":
                v = self.convert(v, src, dtypes.with_lanes("float32", dtypes.lanes(dst)))
                return self.convert(v, dtypes.with_lanes("float32", dtypes.lanes(dst)), dst)
            return b.sitofp(v, dt) if dtypes.is_signed(src) else b.uitofp(v, dt)
        if fsrc:
            return self._float_to_int(v, st, dt, dst)
        ws, wd = _width(st), _width(dt)
        if ws == wd:
            return v
        if ws > wd:
            return b.trunc(v, dt)
        return b.sext(v, dt) if dtypes.is_signed(src) else b.zext(v, dt)

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

    def _float_to_int(self, v, st, dt, dst):
        """te.dtypes.float_to_int: truncate into int64 saturating (NaN -> 0), then wrap to the
        target; uint64 takes values from 2**63 up through fptoui. A plain fptosi / fptoui of
        NaN or of a value out of range is poison in LLVM (a branch on one let LLVM delete a
        function's body: the call jumped into nothing)."""
        b = self.b
        lanes = dt.count if isinstance(dt, ir.VectorType) else None
        i64 = ir.VectorType(ir.IntType(64), lanes) if lanes else ir.IntType(64)
        sat = self._declare(f"llvm.fptosi.sat.{mangle(i64)}.{mangle(st)}", i64, [st])
        wide = b.call(sat, [v])
        if dtypes.element(dst) == "uint64":
            usat = self._declare(f"llvm.fptoui.sat.{mangle(i64)}.{mangle(st)}", i64, [st])
            top = b.fcmp_ordered(">=", v, self._splat(2.0 ** 63, st))
            return b.select(top, b.call(usat, [v]), wide)
        return wide if _width(dt) == 64 else b.trunc(wide, dt)

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

    def _splat(self, value, t):
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
        return ir.Constant(t, value)

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

    def _if_then_else(self, e):
        cond = self.expr(e.args[0])
        if isinstance(cond.type, ir.VectorType):
            return self.b.select(cond, self.expr(e.args[1]), self.expr(e.args[2]))
        return self._branch(cond, e.args[1], e.args[2])

    def _branch(self, cond, true_value, false_value):
        """``cond ? true_value : false_value``, evaluating only the chosen side."""
        b = self.b
        with b.if_else(cond) as (then, otherwise):
            with then:
                tv = self.expr(true_value)
                tb = b.block
            with otherwise:
                fv = self.expr(false_value)
                fb = b.block
        phi = b.phi(tv.type)
        phi.add_incoming(tv, tb)
        phi.add_incoming(fv, fb)
        return phi

    def e_Let(self, e):
        self.ctx.vars[e.var] = self.expr(e.value)
        return self.expr(e.body)

    def e_Ramp(self, e):
        base = self.expr(e.base)
        t = value_type(e.dtype)
        if isinstance(e.stride, IntImm):
            offs = ir.Constant(t, [ir.Constant(t.element, k * e.stride.value)
                                   for k in range(e.lanes)])
        else:
            offs = self.b.mul(self._broadcast(self.expr(e.stride), e.lanes),
                              ir.Constant(t, [ir.Constant(t.element, k)
                                              for k in range(e.lanes)]))
        return self.b.add(self._broadcast(base, e.lanes), offs)

    def e_Broadcast(self, e):
        return self._broadcast(self.expr(e.value), e.lanes)

    def _broadcast(self, v, lanes):
        vt = ir.VectorType(v.type, lanes)
        one = self.b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(I32, 0))
        mask = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
        return self.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), mask)

    # ------------------------------------------------------------------ memory
    def _ptr(self, buf):
        try:
            return self.ctx.bufs[buf]
        except KeyError:
            raise CodegenError(f"llvm codegen: buffer {buf.name} is used outside its "
                               "allocation") from None

    def _addr(self, buf, index):
        idx = self.b.sext(index, I64) if index.type.width < 64 else index
        return self.b.gep(self._ptr(buf), [idx])

    def _index(self, e):
        """An index expression as i64 (or a vector of i64): unsigned ones zero-extended (a
        uint8 index 200 is element 200, not -56)."""
        v = self.expr(e)
        t = v.type
        width = t.element.width if isinstance(t, ir.VectorType) else t.width
        if width >= 64:
            return v
        wide = ir.VectorType(I64, t.count) if isinstance(t, ir.VectorType) else I64
        if dtypes.is_signed(e.dtype) or dtypes.is_bool(e.dtype):
            return self.b.sext(v, wide) if not dtypes.is_bool(e.dtype) else self.b.zext(v, wide)
        return self.b.zext(v, wide)

    def _from_memory(self, v, dtype):
        el = dtypes.element(dtype)
        if el == "float16":
            return self.b.fpext(v, value_type(dtype))
        if el == "bool":
            # any nonzero byte is true, as numpy reads it (a trunc would make 2 false);
            # _to_memory stores only 0 and 1
            return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, None))
        return v

    def _to_memory(self, v, dtype):
        el = dtypes.element(dtype)
        mt = memory_type(dtype)
        if isinstance(v.type, ir.VectorType):
            mt = ir.VectorType(mt, v.type.count)
        if el == "float16":
            return self.b.fptrunc(v, mt)
        if el == "bool":
            return self.b.zext(v, mt)
        return v

    def e_BufferLoad(self, e):
        buf, index = e.buffer, e.indices[0]
        lanes = dtypes.lanes(e.dtype)
        mt = memory_type(buf.dtype)
        align = max(1, _width(mt) // 8)
        if lanes == 1:
            v = self._tag(self.b.load(self._addr(buf, self._index(index)), align=align), buf)
            return self._from_memory(v, e.dtype)
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and \
                index.stride.value == 1:
            addr = self._addr(buf, self._index(index.base))
            addr = self.b.bitcast(addr, ir.PointerType(ir.VectorType(mt, lanes)))
            v = self._tag(self.b.load(addr, align=align), buf)
            return self._from_memory(v, e.dtype)
        out = ir.Constant(ir.VectorType(mt, lanes), ir.Undefined)
        for k, addr in enumerate(self._lane_addrs(buf, index, lanes)):
            v = self._tag(self.b.load(addr, align=align), buf)
            out = self.b.insert_element(out, v, ir.Constant(I32, k))
        return self._from_memory(out, e.dtype)

    def _tag(self, inst, buf):
        """Mark a load or store of ``buf`` as not aliasing any other buffer (LLVM's scoped
        alias metadata). Parameters carry ``noalias``, but parallel loops read the pointers
        from their closure, where that is lost: without these tags LLVM reloaded every value
        after each store in an outlined loop (a weight transform: 3136 loads instead of 144)."""
        scopes = self.alias_scopes.get(buf)
        if scopes is not None:
            inst.set_metadata("alias.scope", scopes[0])
            inst.set_metadata("noalias", scopes[1])
        return inst

    def _lane_addrs(self, buf, index, lanes):
        """The address of each lane of a vector access that is not one contiguous vector.
        A ramp with a constant stride is one base address plus constant offsets, so that LLVM
        sees the lanes' addresses (and merges the loads that several ramps share)."""
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm):
            base = self._addr(buf, self._index(index.base))
            return [self.b.gep(base, [ir.Constant(I64, k * index.stride.value)])
                    for k in range(lanes)]
        idx = self._index(index)
        return [self._addr(buf, self.b.extract_element(idx, ir.Constant(I32, k)))
                for k in range(lanes)]

    def s_BufferStore(self, s):
        buf, index = s.buffer, s.indices[0]
        value = self._to_memory(self.expr(s.value), s.value.dtype)
        mt = memory_type(buf.dtype)
        align = max(1, _width(mt) // 8)
        if not isinstance(value.type, ir.VectorType):
            self._tag(self.b.store(value, self._addr(buf, self._index(index)), align=align), buf)
            return
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and \
                index.stride.value == 1:
            addr = self.b.bitcast(self._addr(buf, self._index(index.base)),
                                  ir.PointerType(value.type))
            lanes = value.type.count
            if self.streaming and _divisible(index.base, lanes) and \
                    lanes * align in (16, 32, 64):
                # the buffer is STREAM_ALIGN-aligned (checked before the loop) and the vector
                # starts at a multiple of its lanes: a whole aligned vector, stored past the
                # caches (no read for ownership of the line)
                st = self._tag(self.b.store(value, addr, align=lanes * align), buf)
                st.set_metadata("nontemporal", self.module.add_metadata([ir.Constant(I32, 1)]))
                return
            self._tag(self.b.store(value, addr, align=align), buf)
            return
        for k, addr in enumerate(self._lane_addrs(buf, index, value.type.count)):
            self._tag(self.b.store(self.b.extract_element(value, ir.Constant(I32, k)), addr,
                                   align=align), buf)

    def _call_packed(self, e):
        """``callback(site, values)``, values an i64 array: per buffer its data pointer and
        shape, per scalar its value (floats as double bits). A nonzero status (the Python
        function raised) returns from the function at once."""
        if self.ctx is not self.top:
            raise CodegenError(f"llvm codegen: call_packed({e.args[0].value!r}) inside a "
                               "parallel loop is not supported")
        b = self.b
        kinds, values = [], []
        for a in e.args[1:]:
            if isinstance(a, BufferRef):
                kinds.append(("buffer", a.buffer.dtype, len(a.buffer.shape)))
                values.append(b.ptrtoint(self._ptr(a.buffer), I64))
                values += [self._to_i64(self.expr(d), d.dtype) for d in a.buffer.shape]
            elif getattr(a, "op", None) == "tw_region":      # a tensor intrinsic's region
                first, extents = a.args[0], a.args[2:]
                kinds.append(("buffer", first.buffer.dtype, len(extents)))
                values.append(b.ptrtoint(self._touched_addr(first), I64))
                values += [self._to_i64(self.expr(d), d.dtype) for d in extents]
            elif a.dtype == "handle":                       # access_ptr: the address
                kinds.append(("int", "int64"))
                values.append(b.ptrtoint(self.expr(a), I64))
            elif dtypes.is_float(a.dtype):
                kinds.append(("float", a.dtype))
                v = self.expr(a)
                if v.type != ir.DoubleType():
                    v = b.fpext(v, ir.DoubleType())
                values.append(b.bitcast(v, I64))
            else:
                kinds.append(("int", a.dtype))
                values.append(self._to_i64(self.expr(a), a.dtype))
        site = len(self.packed_sites)
        self.packed_sites.append((e.args[0].value, tuple(kinds)))
        arr = self.ctx.alloca_builder.alloca(ir.ArrayType(I64, max(1, len(values))),
                                             name=f"packed_args_{site}")
        for k, v in enumerate(values):
            b.store(v, b.gep(arr, [ir.Constant(I32, 0), ir.Constant(I32, k)]))
        cb_type = ir.FunctionType(I32, [I32, ir.PointerType(I64)])
        cb = b.bitcast(self.packed_cb, ir.PointerType(cb_type))
        status = b.call(cb, [ir.Constant(I32, site),
                             b.gep(arr, [ir.Constant(I32, 0), ir.Constant(I32, 0)])])
        with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
            self._error_return(status)
        return status

    def _to_i64(self, v, dtype):
        if v.type.width == 64:
            return v
        signed = dtypes.is_signed(dtype) and not dtypes.is_bool(dtype)
        return self.b.sext(v, I64) if signed else self.b.zext(v, I64)

    # ------------------------------------------------------------------ statements
    def stmt(self, s):
        getattr(self, "s_" + type(s).__name__)(s)

    def s_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def s_Evaluate(self, s):
        self.expr(s.value)

    def s_LetStmt(self, s):
        self.ctx.vars[s.var] = self.expr(s.value)
        self.stmt(s.body)

    def s_IfThenElse(self, s):
        cond = self.expr(s.condition)
        if s.else_case is None:
            with self.b.if_then(cond):
                self.stmt(s.then_case)
            return
        with self.b.if_else(cond) as (then, otherwise):
            with then:
                self.stmt(s.then_case)
            with otherwise:
                self.stmt(s.else_case)

    def s_Allocate(self, s):
        buf = s.buffer
        mt = memory_type(buf.dtype)
        nbytes = _nbytes(buf)
        if nbytes is not None and STACK_LIMIT < nbytes <= WORKSPACE_LIMIT and \
                self.ctx is self.top and self.workspace is not None:
            start = -(-self.workspace_top // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
            raw = self.b.gep(self.workspace, [ir.Constant(I64, start)])
            self.ctx.bufs[buf] = self.b.bitcast(raw, ir.PointerType(mt))
            saved, self.workspace_top = self.workspace_top, start + nbytes
            self.workspace_bytes = max(self.workspace_bytes, self.workspace_top)
            self.stmt(s.body)
            self.workspace_top = saved
            return
        if nbytes is not None and nbytes <= STACK_LIMIT:
            count = max(1, nbytes // max(1, _width(mt) // 8))
            ptr = self.ctx.alloca_builder.alloca(mt, size=ir.Constant(I64, count),
                                                 name=buf.name.replace(".", "_"))
            ptr.align = 64
            self.ctx.bufs[buf] = ptr
            self.stmt(s.body)
            return
        raw = self._malloc(buf, mt)
        self.ctx.bufs[buf] = self.b.bitcast(raw, ir.PointerType(mt))
        self.ctx.live.append(raw)
        self.stmt(s.body)
        self.ctx.live.pop()
        self.b.call(self._declare("free", ir.VoidType(), [PTR]), [raw])

    def _malloc(self, buf, mt):
        """malloc of ``buf``'s bytes, counted in 64 bits: a count that overflows, an int32-
        indexed buffer of more than 2^31 - 1 elements and a NULL from malloc stop the function
        with an error status (the caller raises MemoryError / ArgumentError naming ``buf``)."""
        b = self.b
        factors = (buf.shape[0], buf.strides[0]) if buf.strides else tuple(buf.shape)
        itemsize = max(1, _width(mt) // 8)
        count, over = ir.Constant(I64, 1), ir.Constant(ir.IntType(1), 0)
        smul = self._declare("llvm.smul.with.overflow.i64",
                             ir.LiteralStructType([I64, ir.IntType(1)]), [I64, I64])
        for f in factors:
            v = self._to_i64(self.expr(f), f.dtype)
            v = b.select(b.icmp_signed("<", v, ir.Constant(I64, 0)), ir.Constant(I64, 0), v)
            prod = b.call(smul, [count, v])
            count, over = b.extract_value(prod, 0), b.or_(over, b.extract_value(prod, 1))
        prod = b.call(smul, [count, ir.Constant(I64, itemsize)])
        nbytes, over = b.extract_value(prod, 0), b.or_(over, b.extract_value(prod, 1))
        self._check(over, ErrorSite("alloc", buf, factors, itemsize))
        from schedule.passes.storage_flatten import index_dtype
        if index_dtype(buf.shape) == "int32":
            self._check(b.icmp_signed(">", count, ir.Constant(I64, INT32_MAX)),
                        ErrorSite("index_width", buf, factors, itemsize))
        size = b.select(b.icmp_signed(">", nbytes, ir.Constant(I64, 0)), nbytes,
                        ir.Constant(I64, 1))        # malloc(0) may return NULL
        raw = b.call(self._declare("malloc", PTR, [I64]), [size])
        self._check(b.icmp_unsigned("==", raw, ir.Constant(PTR, None)),
                    ErrorSite("alloc", buf, factors, itemsize))
        return raw

    def _check(self, failed, site):
        """Stop with ``site``'s error status where ``failed`` (an i1) holds."""
        same = [k for k, e in enumerate(self.error_sites)
                if e.kind == site.kind and e.buffer is site.buffer]
        if not same:
            same = [len(self.error_sites)]
            self.error_sites.append(site)
        code = ir.Constant(I32, ERROR_STATUS + same[0])
        with self.b.if_then(failed, likely=False):
            self._error_return(code)

    def _error_return(self, status):
        """Free what this function malloc'ed so far and return ``status`` (an i32 value); in
        an outlined parallel loop, report it to the function and end this thread's chunk."""
        free = self._declare("free", ir.VoidType(), [PTR])
        for raw in reversed(self.ctx.live):
            self.b.call(free, [raw])
        if self.ctx is self.top:
            self.b.ret(status)
            return
        self.b.store_atomic(status, self.ctx.status_ptr, "monotonic", 4)
        self.b.ret_void()

    def _status_ptr(self):
        """The i32* that outlined loops report errors to (the function's, made on first use)."""
        if self.ctx is not self.top:
            return self.ctx.status_ptr
        if self.status_slot is None:
            ab = self.top.alloca_builder
            self.status_slot = ab.alloca(I32, name="loop_status")
            ab.store(ir.Constant(I32, 0), self.status_slot)
        return self.status_slot

    def s_For(self, s):
        if s.kind == ForKind.THREAD_BINDING:
            raise CodegenError(f"loop {s.loop_var.name} is bound to {s.thread_tag}, a GPU "
                               "thread index; build with target='cuda' or remove the bind")
        if any(key == "nontemporal" for key, _ in s.annotations) and not self.streaming:
            self._streaming_for(s)
            return
        if s.kind == ForKind.PARALLEL and self.parallel:
            self._parallel_for(s)
            return
        begin = self.expr(s.min)
        extent = self.expr(s.extent)
        self._loop(s.loop_var, begin, self.b.add(begin, extent), s.body, s.extent, s.min)

    def _streaming_for(self, s):
        """The loop of pragma "nontemporal": when every buffer it stores to is STREAM_ALIGN
        aligned, a copy whose aligned vector stores are non-temporal runs; else the plain loop.
        For outputs much larger than the caches, this saves the read of each line before it
        is written (a third of the traffic of ``c = a + b``)."""
        b = self.b
        aligned = ir.Constant(ir.IntType(1), 1)
        for buf in stored_buffers(s):
            addr = b.ptrtoint(self._ptr(buf), I64)
            low = b.and_(addr, ir.Constant(I64, STREAM_ALIGN - 1))
            aligned = b.and_(aligned, b.icmp_unsigned("==", low, ir.Constant(I64, 0)))
        with b.if_else(aligned) as (then, otherwise):
            with then:
                self.streaming = True
                self.s_For(s)
                self.streaming = False
            with otherwise:
                plain = For(s.loop_var, s.min, s.extent, s.kind, s.body, s.thread_tag,
                            tuple(p for p in s.annotations if p[0] != "nontemporal"))
                self.s_For(plain)

    def _loop(self, var, begin, end, body, extent_expr=None, begin_expr=None):
        b = self.b
        t = begin.type
        pre = b.block
        head = b.append_basic_block(self._unique(f"for_{var.name}"))
        loop = b.append_basic_block(self._unique(f"body_{var.name}"))
        done = b.append_basic_block(self._unique(f"end_{var.name}"))
        b.branch(head)
        b.position_at_end(head)
        phi = b.phi(t, name=var.name)
        phi.add_incoming(begin, pre)
        b.cbranch(b.icmp_signed("<", phi, end), loop, done)
        b.position_at_end(loop)
        self.ctx.vars[var] = phi
        lo = const_bounds(begin_expr, self.ctx.ranges)[0] if begin_expr is not None else 0
        hi = (const_bounds(begin_expr, self.ctx.ranges)[1] + extent_expr.value - 1
              if isinstance(extent_expr, IntImm) and begin_expr is not None else INF)
        self.ctx.ranges[var] = (lo, hi)
        self.stmt(body)
        self.ctx.ranges.pop(var, None)
        nxt = b.add(phi, ir.Constant(t, 1))
        phi.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)

    def _parallel_for(self, s):
        free, cap_bufs = uses(s)
        cap_vars = [v for v in free if v in self.ctx.vars]
        fields = [self.ctx.vars[v].type for v in cap_vars] + \
            [self._ptr(bf).type for bf in cap_bufs]
        it = value_type(s.loop_var.dtype)      # the loop's width: i64 for an int64 axis
        status_ptr = self._status_ptr()
        fields += [status_ptr.type, it, it]     # error status, begin, extent
        struct = ir.LiteralStructType(fields)
        outer = self.ctx
        frame = outer.alloca_builder.alloca(struct, name="closure")
        values = [outer.vars[v] for v in cap_vars] + [self._ptr(bf) for bf in cap_bufs]
        values += [status_ptr, self.expr(s.min), self.expr(s.extent)]
        for k, v in enumerate(values):
            self.b.store(v, self.b.gep(frame, [ir.Constant(I32, 0), ir.Constant(I32, k)]))
        worker = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR]),
                             name=self._unique(f"{outer.fn.name}_parallel"))
        worker.attributes.add("nounwind")
        inner = _Ctx(worker, ranges=outer.ranges)
        self.ctx = inner
        b = self.b
        loaded = []
        arg = b.bitcast(worker.args[0], ir.PointerType(struct))
        for k in range(len(fields)):
            loaded.append(b.load(b.gep(arg, [ir.Constant(I32, 0), ir.Constant(I32, k)])))
        inner.vars.update(zip(cap_vars, loaded))
        inner.bufs.update(zip(cap_bufs, loaded[len(cap_vars):]))
        inner.status_ptr, begin, extent = loaded[-3], loaded[-2], loaded[-1]
        sites = len(self.error_sites)
        tid = b.call(self._declare("omp_get_thread_num", I32, []), [])
        nth = b.call(self._declare("omp_get_num_threads", I32, []), [])
        if it != I32:
            tid, nth = b.sext(tid, it), b.sext(nth, it)
        chunk = b.sdiv(b.add(extent, b.sub(nth, ir.Constant(it, 1))), nth)
        lo = b.mul(tid, chunk)
        hi = b.add(lo, chunk)
        hi = b.select(b.icmp_signed("<", hi, extent), hi, extent)
        self._loop(s.loop_var, b.add(begin, lo), b.add(begin, hi), s.body)
        b.ret_void()
        self.ctx = outer
        gomp = self._declare("GOMP_parallel", ir.VoidType(), [PTR, PTR, I32, I32])
        # In a child made by fork after libgomp's pool started, GOMP_parallel waits forever
        # for the parent's threads: there (runtime.FORKED_SYMBOL is nonzero) the worker runs
        # alone, outside any OpenMP region, where it is thread 0 of 1 and takes every chunk.
        forked = self.module.globals.get(FORKED_SYMBOL)
        if forked is None:
            forked = ir.GlobalVariable(self.module, I32, name=FORKED_SYMBOL)
        in_child = self.b.icmp_signed("!=", self.b.load(forked), ir.Constant(I32, 0))
        with self.b.if_else(in_child, likely=False) as (serial, pool):
            with serial:
                self.b.call(worker, [self.b.bitcast(frame, PTR)])
            with pool:
                self.b.call(gomp, [self.b.bitcast(worker, PTR), self.b.bitcast(frame, PTR),
                                   ir.Constant(I32, 0), ir.Constant(I32, 0)])
        if len(self.error_sites) > sites:       # the loop can fail: pass its status on
            status = self.b.load_atomic(status_ptr, "monotonic", 4)
            with self.b.if_then(self.b.icmp_signed("!=", status, ir.Constant(I32, 0)),
                                likely=False):
                self._error_return(status)


def _is_f32_vector(t) -> bool:
    return isinstance(t, ir.VectorType) and isinstance(t.element, ir.FloatType) and \
        t.count >= 4


def _divisible(e, n) -> bool:
    """Whether integer expression ``e`` is provably a multiple of ``n``."""
    if isinstance(e, IntImm):
        return e.value % n == 0
    if isinstance(e, (Add, Sub)):
        return _divisible(e.a, n) and _divisible(e.b, n)
    if isinstance(e, Mul):
        return _divisible(e.a, n) or _divisible(e.b, n)
    return False


def _width(t):
    if isinstance(t, ir.VectorType):
        return _width(t.element)
    if isinstance(t, ir.IntType):
        return t.width
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]


def _with_elem(t, elem):
    return ir.VectorType(elem, t.count) if isinstance(t, ir.VectorType) else elem


def _nbytes(buf):
    """The bytes of an allocation of ``buf``: an int for a constant size, else None.
    Counted in Python's integers (alloc_size's int32 product wraps: 65536 * 65536 is 0)."""
    factors = (buf.shape[0], buf.strides[0]) if buf.strides else tuple(buf.shape)
    count = 1
    for f in factors:
        if not isinstance(f, IntImm):
            return None
        count *= max(0, f.value)
    return count * max(1, _width(memory_type(buf.dtype)) // 8)


def _allocations(body) -> list:
    """(buffer, whether inside a parallel loop) of each allocation in ``body``: the buffers
    get alias scopes; large constant ones outside parallel loops go to the workspace."""
    class Collect(IRVisitor):
        def __init__(self):
            self.found, self.parallel = [], 0

        def visit_For(self, node):
            inside = node.kind == ForKind.PARALLEL
            self.parallel += inside
            self.generic_visit(node)
            self.parallel -= inside

        def visit_Allocate(self, node):
            self.found.append((node.buffer, self.parallel > 0))
            self.generic_visit(node)
    collect = Collect()
    collect.visit(body)
    return collect.found

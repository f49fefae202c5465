"""Loop IR -> LLVM IR (llvmlite.ir): the ``Emitter``, its function entry, expressions and
memory accesses.

Each PrimFunc becomes ``i32 @name(ptr noalias %A, ..., i32 %n, ...)``: one data pointer per
buffer parameter, then the scalar parameters, then the symbolic shape variables, then the
workspace pointer (when an allocation needs it, see emit_loops.py) and the packed-call callback
(when the body has ``tvm_call_packed``). The emitter is assembled from mixins:
emit_math.py (math intrinsics: ``e_Call``), emit_loops.py (statements: loops, parallel loops,
allocations, error returns) and emit_calls.py (tensor intrinsics' calls); emit_base.py holds the
constants, ``CodegenError``, ``ErrorSite`` and the per-function context they share.
"""
from __future__ import annotations

from llvmlite import ir

from te import dtypes
from te.expr import (Add, Binary, Div, FloorDiv, FloorMod, IntImm, Max, Min, Mod, Mul, Sub,
                     Var)
from schedule.analysis import packed_calls
from schedule.functor import IRVisitor
from schedule.ir import (Broadcast, Buffer, BufferRef, ForKind, Ramp)
from schedule.simplify import INF, const_bounds

from .emit_base import (I32, I64, PTR, STACK_LIMIT, WORKSPACE_LIMIT, CodegenError, _Ctx,
                        _nbytes, _width)
# the other names that emit.py defined before the split stay importable from here
from .emit_base import (ERROR_STATUS, I8, INT32_MAX, STREAM_ALIGN,  # noqa: F401
                        WORKSPACE_ALIGN, ErrorSite)
from .emit_calls import CallEmitter
from .emit_loops import StmtEmitter
from .emit_math import MathEmitter
from .types import ARITH, COMPARE, LOGIC, mangle, memory_type, value_type


def symbol(name) -> str:
    """The LLVM symbol of a built function: prefixed, so that a function named ``exp`` or
    ``malloc`` never replaces the library function that the generated code calls."""
    return "tw_" + name


class Emitter(MathEmitter, StmtEmitter, CallEmitter):
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

    def _splat(self, value, t):
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
        return ir.Constant(t, value)

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



def _divisible(e, n) -> bool:
    """Whether integer expression ``e`` is provably a multiple of ``n``."""
    if isinstance(e, IntImm):
        return e.value % n == 0
    if isinstance(e, (Add, Sub)):
        return _divisible(e.a, n) and _divisible(e.b, n)
    if isinstance(e, Mul):
        return _divisible(e.a, n) or _divisible(e.b, n)
    return False




def _with_elem(t, elem):
    return ir.VectorType(elem, t.count) if isinstance(t, ir.VectorType) else elem




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

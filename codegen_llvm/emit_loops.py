"""The LLVM emitter's statements: sequences, lets, ifs, stores' loops (serial, streaming with
non-temporal stores, and parallel), allocations and error returns. A mixin of ``emit.Emitter``.

Parallel loops are outlined into a function that each OpenMP thread (libgomp's
``GOMP_parallel``, a persistent pool) runs on its chunk of iterations. Allocations of constant
small size live on the stack of the function that uses them. Larger constant ones at the
function's own level (not inside a parallel loop) live in a *workspace*: the function then takes
one more pointer parameter, and the caller passes a per-thread arena of
``Emitter.workspace_bytes`` that stays allocated from call to call (malloc'ing megabytes per
call cost page faults: a quarter of a convolution's time). Nested allocations take the
workspace as a stack. The others are malloc'ed.
"""
from __future__ import annotations

from llvmlite import ir

from te.expr import IntImm
from schedule.analysis import stored_buffers, uses
from schedule.ir import For, ForKind
from schedule.simplify import INF, const_bounds

from .emit_base import (ERROR_STATUS, I32, I64, INT32_MAX, PTR, STACK_LIMIT, STREAM_ALIGN,
                        WORKSPACE_ALIGN, WORKSPACE_LIMIT, CodegenError, ErrorSite, _Ctx,
                        _nbytes, _width)
from .runtime import FORKED_SYMBOL
from .types import memory_type, value_type


class StmtEmitter:
    """The statement methods (``stmt``, ``s_*``) of ``emit.Emitter`` and their helpers."""


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

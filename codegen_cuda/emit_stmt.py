"""The CUDA emitter's statements inside a kernel: straight-line runs (with their shared index
bases), stores, branches, loops (thread-bound ones read the hardware indices, guarded when the
launch is larger than the loop; ``vthread`` loops run serially in each thread), allocations
(shared and local arrays, or one variable per element for register buffers) and the
``syncthreads`` barriers around the fills of shared buffers. A mixin of ``emit.CudaEmitter``.
"""
from __future__ import annotations

import dataclasses
import re

from te import dtypes
from te.expr import IntImm
from schedule.analysis import (allocation_chain, has_storage_sync, loads_from, stores_to,
                               uses)
from schedule.interp import alloc_size
from schedule.ir import (Allocate, BufferLoad, BufferStore, For, IfThenElse, ForKind, LetStmt,
                         SeqStmt, is_storage_sync)
from schedule.functor import post_order_visit
from schedule.simplify import equal, simplify

from .emit_base import NUMBA_TYPE, CudaCodegenError
from .emit_expr import _base_offset, _shareable


HW = {"blockIdx": "cuda.blockIdx", "threadIdx": "cuda.threadIdx"}
_ARRAY_DECL = re.compile(r"\s*\w+ = cuda\.(shared|local)\.array\(")


def _guard_around_barriers(stmt, cond):
    """``stmt`` run where ``cond`` holds, except its barriers, which every thread reaches: the
    condition moves down to the largest parts without a barrier (a loop bound to fewer
    threads than the block has, around a cross-thread reduction, for one)."""
    if not has_storage_sync(stmt):
        return IfThenElse(cond, stmt)
    if isinstance(stmt, SeqStmt):
        return SeqStmt(tuple(_guard_around_barriers(c, cond) for c in stmt.seq))
    if isinstance(stmt, (For, Allocate, LetStmt)):
        return dataclasses.replace(stmt, body=_guard_around_barriers(stmt.body, cond))
    if isinstance(stmt, IfThenElse):
        return IfThenElse(stmt.condition, _guard_around_barriers(stmt.then_case, cond),
                          None if stmt.else_case is None else
                          _guard_around_barriers(stmt.else_case, cond))
    return stmt                         # the barrier itself


class StmtEmitter:
    """The statement methods (``stmt``, ``s_*``, ``run``) of ``emit.CudaEmitter``."""

    def run(self, items, indent):
        """A straight-line run of statements: their element indices are scanned first, and a
        base that two or more of them use (``(i * 32 + j) + 8``, ``(i * 32 + j) + 16``) is
        emitted once (numba compiles a long unrolled body much faster with fewer
        operations; NVVM would merge them anyway). The stores of nested sequences and
        allocations belong to the run (same level, no control flow); a statement in a loop,
        a branch or after a let starts a run of its own."""
        if self.bases is not None and indent == self.bases_indent:
            for item in items:                  # part of the run being emitted: scanned
                self._run_item(item, indent, self.bases)
            return
        counts = {}
        for store in self._run_stores(items):
            for idx in self._indices(store):
                base, _ = _base_offset(idx)
                if _shareable(base):
                    key = self.expr(base)
                    counts[key] = counts.get(key, 0) + 1
        shared = {k: [None] for k, n in counts.items() if n > 1}
        outer = self.bases, self.bases_indent
        self.bases_indent = indent
        for item in items:
            self._run_item(item, indent, shared)
        self.bases, self.bases_indent = outer

    def _run_item(self, item, indent, shared):
        self.bases = shared if isinstance(item, (BufferStore, Allocate, SeqStmt)) else None
        self.stmt(item, indent)

    def _run_stores(self, items):
        for item in items:
            if isinstance(item, BufferStore):
                yield item
            elif isinstance(item, SeqStmt):
                yield from self._run_stores(item.seq)
            elif isinstance(item, Allocate):
                yield from self._run_stores(allocation_chain(item)[1])

    def _indices(self, store):
        """The element indices of a store and of the loads in its value (not of registers)."""
        out = [] if store.buffer in self.registers else [store.indices[0]]

        def visit(n):
            if isinstance(n, BufferLoad) and n.buffer not in self.registers:
                out.append(n.indices[0])
        post_order_visit(store.value, visit)
        return out

    def emit(self, line, indent):
        self.lines.append("    " * indent + line)

    def stmt(self, s, indent):
        getattr(self, "s_" + type(s).__name__)(s, indent)

    def s_SeqStmt(self, s, indent):
        self.run(list(s.seq), indent)

    def s_Evaluate(self, s, indent):
        if is_storage_sync(s):
            self._sync(indent)
        else:
            self.emit(self.expr(s.value), indent)

    def _sync(self, indent):
        """A barrier, unless one already ends the code at this level (only array declarations
        after it: the fills of two shared stages share the barrier between them)."""
        line = "    " * indent + "cuda.syncthreads()"
        for prev in reversed(self.lines):
            if prev == line:
                return
            if not _ARRAY_DECL.match(prev):
                break
        self.emit("cuda.syncthreads()", indent)

    def s_LetStmt(self, s, indent):
        self.emit(f"{self.names(s.var, s.var.name)} = {self.expr(s.value)}", indent)
        self.stmt(s.body, indent)

    def s_BufferStore(self, s, indent):
        value = self.expr(s.value)
        if s.buffer.dtype == "float16":
            value = f"f16({value})"
        if s.buffer in self.registers:
            self.emit(f"{self._register(s.buffer, s.indices[0])} = {value}", indent)
            return
        name = self.names(s.buffer, s.buffer.name)
        self.emit(f"{name}[{self.index(s.indices[0])}] = {value}", indent)

    def block(self, s, indent):
        """A nested statement; ``pass`` where it emits nothing (a body simplified away)."""
        start = len(self.lines)
        self.stmt(s, indent)
        if len(self.lines) == start:
            self.emit("pass", indent)

    def s_IfThenElse(self, s, indent):
        self.emit(f"if {self.expr(s.condition)}:", indent)
        self.block(s.then_case, indent + 1)
        if s.else_case is not None:
            self.emit("else:", indent)
            self.block(s.else_case, indent + 1)

    def s_For(self, s, indent):
        var = self.names(s.loop_var, s.loop_var.name)
        if s.kind == ForKind.THREAD_BINDING and s.thread_tag != "vthread":
            kind, axis = s.thread_tag.split(".")
            launch = self.launch[s.thread_tag]
            if all(isinstance(e, IntImm) and e.value == 1 for e in (s.extent, launch)) and \
                    s.loop_var not in uses(s.body)[0]:
                self.block(s.body, indent)          # one thread along it: nothing to index
                return
            self.emit(f"{var} = {HW[kind]}.{axis}", indent)
            body = s.body
            if not equal(s.extent, launch):
                if has_storage_sync(body):      # every thread must reach the barriers
                    body = _guard_around_barriers(body, s.loop_var < s.extent)
                else:
                    self.emit(f"if {var} < {self.expr(s.extent)}:", indent)
                    indent += 1
            self.inside_threads += kind == "threadIdx"
            self.block(body, indent)
            self.inside_threads -= kind == "threadIdx"
            return
        start = self.expr(s.min)
        end = self.expr(simplify(s.min + s.extent))
        rng = end if start == "0" else f"{start}, {end}"
        self.emit(f"for {var} in range({rng}):", indent)
        self.block(s.body, indent + 1)

    def s_Allocate(self, s, indent):
        chain, items = allocation_chain(s)
        shared = []
        for buf in (a.buffer for a in chain):
            size = alloc_size(buf)
            if not isinstance(size, IntImm):
                raise CudaCodegenError(
                    f"buffer {buf.name} inside a GPU kernel has the non-constant size {size}; "
                    "use constant split factors for the loops it is computed at")
            scope = buf.scope
            if scope == "global":
                scope = "local" if self.inside_threads else "shared"
            if scope == "shared":
                shared.append(buf)
                nbytes = size.value * max(1, dtypes.bits(buf.dtype) // 8)
                self.shared_bytes += nbytes
                self.shared_bufs.append(f"{buf.name} {nbytes} bytes")
            kind = "shared" if scope == "shared" else "local"
            if buf in self.registers:       # one variable per element
                name = self.names(buf, buf.name)
                # defined once per kernel, at the first allocation: numba needs a definition
                # on every path to a read (guarded partial tiles assign under conditions)
                if name not in self.declared and size.value > 0:     # (size 0: unread)
                    self.declared.add(name)
                    zero = f"{NUMBA_TYPE[buf.dtype]}(0)"
                    self.emit(" = ".join(f"{name}_{k}" for k in range(size.value)) +
                              f" = {zero}", indent)
                continue
            # 16-byte aligned shared arrays let NVVM merge four neighbouring 32-bit loads
            # into one 128-bit ld.shared.v4 (numba's simulator takes no alignment argument)
            align = ", alignment=16" if kind == "shared" and self.align_shared else ""
            # a size-0 buffer (an empty stage: nothing reads it) gets one element: the
            # simulator cannot make an empty array
            self.emit(f"{self.names(buf, buf.name)} = cuda.{kind}.array({max(size.value, 1)}, "
                      f"{NUMBA_TYPE[buf.dtype]}{align})", indent)
        # Statements that fill shared buffers are fenced by barriers: before (the previous
        # readers are done) and after (the data is there). Consecutive fills share the pair
        # when none reads what an earlier one of them wrote, so that all their global loads
        # are in flight together.
        k = 0
        while k < len(items):
            end, filled = k, set()
            while end < len(items) and not loads_from(items[end], filled):
                written = {b for b in shared if stores_to(items[end], {b})}
                if not written:
                    break
                filled |= written
                end += 1
            if end == k:
                end = k + 1
                while end < len(items) and not stores_to(items[end], set(shared)):
                    end += 1
                self.run(items[k:end], indent)
                k = end
                continue
            self._sync(indent)
            self.run(items[k:end], indent)
            self._sync(indent)
            k = end

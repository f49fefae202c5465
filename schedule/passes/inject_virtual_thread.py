"""Lower ``vthread`` loops by interleaving: statements that do not depend on the virtual thread
run once, statements that do are repeated for each virtual thread, and buffers written per
virtual thread get one copy each (TVM's InjectVirtualThread).

The virtual-thread loop is pushed inward through loops, branches and allocations that do not
depend on it, so a shared-memory fetch inside it runs once per iteration, not once per virtual
thread, and the repeated innermost statements give the GPU independent work to overlap.
"""
from __future__ import annotations

from dataclasses import replace

from te.expr import IntImm, const
from te.functor import free_vars

from ..analysis import uses
from ..functor import IRMutator, IRVisitor, redirect, substitute
from ..interp import alloc_size
from ..ir import Allocate, Buffer, For, ForKind, IfThenElse, LetStmt, SeqStmt, seq


def _depends(node, var) -> bool:
    return var in uses(node)[0]


def _per_thread_buffers(body, var) -> set:
    """Buffers allocated in ``body`` whose contents differ between virtual threads: a store
    that depends on ``var`` or reads such a buffer (to a fixpoint)."""
    stores = []

    class _Stores(IRVisitor):
        def visit_BufferStore(self, node):
            stores.append(node)
            self.generic_visit(node)

    class _Allocs(IRVisitor):
        def __init__(self):
            self.bufs = set()

        def visit_Allocate(self, node):
            self.bufs.add(node.buffer)
            self.generic_visit(node)

    _Stores().visit(body)
    allocs = _Allocs()
    allocs.visit(body)
    found, changed = set(), True
    while changed:
        changed = False
        for st in stores:
            if st.buffer in found or st.buffer not in allocs.bufs:
                continue
            free, read = uses(st)
            if var in free or any(b in found for b in read if b is not st.buffer):
                found.add(st.buffer)
                changed = True
    return found


def var_in(expr, var) -> bool:
    return var in free_vars(expr)


def _interleave(s, var, n, per_thread):
    if not _depends(s, var):
        return s
    if isinstance(s, SeqStmt):
        return seq(*[_interleave(c, var, n, per_thread) for c in s.seq])
    if isinstance(s, Allocate):
        if s.buffer not in per_thread:
            return replace(s, body=_interleave(s.body, var, n, per_thread))
        size = alloc_size(s.buffer)
        if not isinstance(size, IntImm):
            return _replicate(s, var, n)
        buf = s.buffer
        new = Buffer(buf.name, (const(size.value * n),), buf.dtype, buf.scope)
        body = redirect(s.body, buf, new, var * size.value)
        return replace(s, buffer=new, body=_interleave(body, var, n, per_thread))
    if isinstance(s, For) and not (var_in(s.min, var) or var_in(s.extent, var)):
        return For(s.loop_var, s.min, s.extent, s.kind, _interleave(s.body, var, n, per_thread),
                   s.thread_tag, s.annotations)
    if isinstance(s, IfThenElse) and not var_in(s.condition, var):
        other = None if s.else_case is None else _interleave(s.else_case, var, n, per_thread)
        return IfThenElse(s.condition, _interleave(s.then_case, var, n, per_thread), other)
    if isinstance(s, LetStmt) and not var_in(s.value, var):
        return LetStmt(s.var, s.value, _interleave(s.body, var, n, per_thread))
    return _replicate(s, var, n)


def _replicate(s, var, n):
    return seq(*[substitute(s, {var: const(k, var.dtype)}) for k in range(n)])


class _Inject(IRMutator):
    def visit_For(self, node):
        node = self.generic_visit(node)
        if node.kind != ForKind.THREAD_BINDING or node.thread_tag != "vthread" or \
                not isinstance(node.extent, IntImm):
            return node
        var = node.loop_var
        return _interleave(node.body, var, node.extent.value,
                           _per_thread_buffers(node.body, var))


def inject_virtual_thread(stmt):
    """Replace every ``vthread`` loop of constant extent by interleaved copies of its body."""
    return _Inject().visit(stmt)

"""Simplify every expression, using the constant ranges of enclosing loops, and drop dead code."""
from __future__ import annotations

from te.expr import Expr, IntImm

from ..functor import IRMutator, substitute
from ..ir import Allocate, For, ForKind, IfThenElse, SeqStmt, seq
from ..simplify import Simplifier


class _Simplify(IRMutator):
    def __init__(self):
        self.simp = Simplifier()

    def visit_For(self, node):
        extent = self.simp.visit(node.extent)
        lo = self.simp.visit(node.min)
        if isinstance(extent, IntImm):
            if extent.value <= 0:
                return seq()
            if extent.value == 1 and node.kind != ForKind.THREAD_BINDING and \
                    not node.annotations:
                return self.visit(substitute(node.body, {node.loop_var: lo}))
        lo_b = self.simp.bounds(lo)
        hi_b = self.simp.bounds(lo + extent - 1) if not isinstance(extent, IntImm) else \
            (lo_b[1] + extent.value - 1, lo_b[1] + extent.value - 1)
        self.simp.ranges[node.loop_var] = (lo_b[0], hi_b[1])
        body = self.visit(node.body)
        self.simp.ranges.pop(node.loop_var, None)
        if isinstance(body, SeqStmt) and not body.seq:
            return body                              # nothing left to repeat
        if body is node.body and extent is node.extent and lo is node.min:
            return node
        return For(node.loop_var, lo, extent, node.kind, body, node.thread_tag,
                   node.annotations)

    def visit_IfThenElse(self, node):
        cond = self.simp.visit(node.condition)
        if isinstance(cond, IntImm):
            if cond.value:
                return self.visit(node.then_case)
            return self.visit(node.else_case) if node.else_case is not None else seq()
        then = self.visit(node.then_case)
        other = self.visit(node.else_case) if node.else_case is not None else None
        if isinstance(then, SeqStmt) and not then.seq and other is None:
            return then
        return IfThenElse(cond, then, other)

    def visit_Allocate(self, node):
        body = self.visit(node.body)
        if isinstance(body, SeqStmt) and not body.seq:
            return body                              # a buffer nothing uses any more
        if body is node.body:
            return node
        return Allocate(node.buffer, body, node.annotations)

    def visit_SeqStmt(self, node):
        return seq(*[self.visit(s) for s in node.seq])

    def generic_visit(self, node):
        if isinstance(node, Expr):
            return self.simp.visit(node)
        return super().generic_visit(node)


def simplify_stmt(stmt):
    """Simplify expressions and remove loops of extent 0, branches decided statically, and
    loops and allocations left with nothing to do."""
    return _Simplify().visit(stmt)

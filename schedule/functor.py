"""Visitor and mutator over the loop IR (statements and expressions).

They extend ``te.functor``: dispatch on ``visit_<Node>``, recursion by default, and the mutator
returns the same node when nothing changed.
"""
from __future__ import annotations

from te.functor import ExprMutator, ExprVisitor

from .ir import BufferLoad, BufferStore, Stmt


class IRVisitor(ExprVisitor):
    def _descend(self, node):
        return isinstance(node, Stmt)


class IRMutator(ExprMutator):
    def _descend(self, node):
        return isinstance(node, Stmt)


class IRSubstitute(IRMutator):
    def __init__(self, vmap):
        self.vmap = vmap

    def visit_Var(self, node):
        return self.vmap.get(node, node)


def substitute(node, vmap):
    """``node`` (statement or expression) with Vars replaced per ``vmap``."""
    return IRSubstitute(vmap).visit(node) if vmap else node


def post_order_visit(node, fn):
    """Call ``fn`` on every statement and expression under ``node``."""
    class _V(IRVisitor):
        def visit(self, n):
            fn(n)
            return super().visit(n)
    _V().visit(node)


class _Redirect(IRMutator):
    def __init__(self, old, new, offset):
        self.old, self.new, self.offset = old, new, offset

    def visit_BufferLoad(self, node):
        node = self.generic_visit(node)
        if node.buffer is not self.old:
            return node
        return BufferLoad(self.new, (self.offset + node.indices[0],), node.dtype)

    def visit_BufferStore(self, node):
        node = self.generic_visit(node)
        if node.buffer is not self.old:
            return node
        return BufferStore(self.new, node.value, (self.offset + node.indices[0],))


def redirect(node, old, new, offset):
    """``node`` with every (flat) access of buffer ``old`` moved to ``new`` at ``offset`` +
    the index: a buffer expanded into a bigger one (virtual-thread copies, double buffers)."""
    return _Redirect(old, new, offset).visit(node)

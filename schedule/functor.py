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


class _ReplaceBuffers(IRMutator):
    def __init__(self, bmap, offset):
        self.bmap, self.offset = bmap, offset

    def _indices(self, indices):
        return indices if self.offset is None else (self.offset + indices[0],)

    def _new(self, node):
        new = self.bmap.get(node.buffer)
        return None if new is None or (new is node.buffer and self.offset is None) else new

    def visit_BufferLoad(self, node):
        node = self.generic_visit(node)
        new = self._new(node)
        return node if new is None else BufferLoad(new, self._indices(node.indices), node.dtype)

    def visit_BufferStore(self, node):
        node = self.generic_visit(node)
        new = self._new(node)
        return node if new is None else \
            BufferStore(new, node.value, self._indices(node.indices))


def replace_buffers(node, bmap, offset=None):
    """``node`` with every access of a buffer in ``bmap`` {old: new} made to the buffer it
    maps to, with the same indices; with ``offset``, the accesses are flat (one index) and
    land at ``offset`` + the index."""
    return _ReplaceBuffers(bmap, offset).visit(node)


def redirect(node, old, new, offset):
    """``node`` with every (flat) access of buffer ``old`` moved to ``new`` at ``offset`` +
    the index: a buffer expanded into a bigger one (virtual-thread copies, double buffers)."""
    return replace_buffers(node, {old: new}, offset)

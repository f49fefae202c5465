"""Small analyses of the loop IR shared by the backends."""
from __future__ import annotations

from .functor import IRVisitor
from .ir import Allocate, ForKind, SeqStmt, is_storage_sync


class _Uses(IRVisitor):
    def __init__(self):
        self.vars, self.bufs, self.bound, self.local_bufs = {}, {}, set(), set()

    def visit_Var(self, node):
        if node not in self.bound:
            self.vars.setdefault(node, None)

    def visit_For(self, node):
        self.bound.add(node.loop_var)
        self.generic_visit(node)

    def visit_LetStmt(self, node):
        self.bound.add(node.var)
        self.generic_visit(node)

    visit_Let = visit_LetStmt

    def visit_Allocate(self, node):
        self.local_bufs.add(node.buffer)
        for s in node.buffer.shape + node.buffer.strides:
            self.visit(s)
        self.visit(node.body)

    def _buf(self, b):
        if b not in self.local_bufs:
            self.bufs.setdefault(b, None)

    def visit_BufferLoad(self, node):
        self._buf(node.buffer)
        self.generic_visit(node)

    def visit_BufferStore(self, node):
        self._buf(node.buffer)
        self.generic_visit(node)

    def visit_BufferRef(self, node):
        self._buf(node.buffer)
        for s in node.buffer.shape:
            self.visit(s)


def uses(node, bound=()):
    """(free variables, buffers used but not allocated) of ``node``, in first-use order."""
    v = _Uses()
    v.bound.update(bound)
    v.visit(node)
    return list(v.vars), list(v.bufs)


def thread_loops(node) -> list:
    """Every For bound to a GPU thread index under ``node``, outermost first."""
    found = []

    class _V(IRVisitor):
        def visit_For(self, n):
            if n.kind == ForKind.THREAD_BINDING:
                found.append(n)
            self.generic_visit(n)
    _V().visit(node)
    return found


def stored_buffers(node) -> list:
    """The buffers that ``node`` writes, in the order of their first store."""
    found = {}

    class _V(IRVisitor):
        def visit_BufferStore(self, n):
            found.setdefault(n.buffer, None)
            self.generic_visit(n)
    _V().visit(node)
    return list(found)


def packed_calls(node) -> list:
    """The ``tvm_call_packed`` calls of ``node`` (extern stages), in order."""
    found = []

    class _V(IRVisitor):
        def visit_Call(self, n):
            if n.op == "tvm_call_packed":
                found.append(n)
            self.generic_visit(n)
    _V().visit(node)
    return found


def has_storage_sync(node) -> bool:
    """Whether ``node`` contains a barrier (``storage_sync()``)."""
    found = []

    class _V(IRVisitor):
        def visit_Call(self, n):
            if is_storage_sync(n):
                found.append(n)
            self.generic_visit(n)
    _V().visit(node)
    return bool(found)


def stores_to(node, buffers) -> bool:
    """Whether ``node`` writes any of ``buffers``."""
    return _touches(node, buffers, "visit_BufferStore")


def loads_from(node, buffers) -> bool:
    """Whether ``node`` reads any of ``buffers``."""
    return _touches(node, buffers, "visit_BufferLoad")


def _touches(node, buffers, method):
    hit = []

    def visit(self, n):
        if n.buffer in buffers:
            hit.append(n)
        self.generic_visit(n)
    type("_V", (IRVisitor,), {method: visit})().visit(node)
    return bool(hit)


def allocation_chain(stmt):
    """(allocations, statements) of a chain of allocations: nested allocations that end a
    statement sequence are hoisted to its top (their declarations are static in a kernel), so
    that ``alloc A; fill A; alloc B; fill B; use`` is ``alloc A, B; fill A; fill B; use``."""
    chain, items = [], []
    while isinstance(stmt, Allocate):
        chain.append(stmt)
        stmt = stmt.body
        seq = list(stmt.seq) if isinstance(stmt, SeqStmt) else [stmt]
        if seq and isinstance(seq[-1], Allocate):
            items.extend(seq[:-1])
            stmt = seq[-1]
        else:
            items.extend(seq)
            break
    return chain, items

"""The branch-free twin of a checked kernel body (issue 16's fast path) and the lazy selects.

The checked body runs an access only when its index is in range and records the first failure;
on the CPU a twin of the body runs first: each checked index replaced by ``select(ok, index,
0)`` (an address inside the buffer), a per-thread failure flag raised instead of a branch, so
that the loop still vectorizes; the checked body runs again only when the flag is up.
``_LazySelects`` turns selects / and / or whose sides read out of range unless the condition
holds into ``if_then_else`` (LLVM evaluates both sides of a select).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from te.expr import GT, NE, And, Call, Expr, IntImm, Max, Select, cast, const as te_const

from .functor import IRMutator
from .ir import Allocate, Buffer, BufferLoad, BufferStore, ForKind, IfThenElse, Stmt, seq

ERROR_SLOTS = 8        # site, index value, up to five position indices, the failure flag
FLAG_SLOT = ERROR_SLOTS - 1

@dataclass(frozen=True, eq=False)
class _Check:
    guard: Expr                 # true when the access may run (in range, or not evaluated)
    record: Stmt                # what the checked body stores on failure
    node: object                # the BufferLoad / BufferStore
    dim: int
    ok: Expr                    # 0 <= index < size (int64)
    index: Expr
    size: Expr


def _fast_twin(s, checks, cond, err):
    """``s`` with each checked index replaced by ``select(ok, index, 0)`` (an address in the
    buffer), under ``size > 0`` for buffers that may be empty, and the failure flag raised
    when ``cond`` fails: no branch on the data, so the loop still vectorizes."""
    safe = {}
    sizes = []
    for c in checks:
        safe.setdefault(c.node, {})[c.dim] = c.size
        if not (isinstance(c.size, IntImm) and c.size.value > 0) and \
                all(c.size is not x for x in sizes):
            sizes.append(c.size)
    body = _SafeIndices(safe).visit(s)
    flag = BufferLoad(_FLAG, (te_const(0),), "int32")
    failed = Select(cond, te_const(0, "int32"), te_const(1, "int32"), "int32")
    update = BufferStore(_FLAG, Max(flag, failed, "int32"), (te_const(0),))
    if sizes:
        nonempty = GT(sizes[0], te_const(0, sizes[0].dtype), "bool")
        for z in sizes[1:]:
            nonempty = And(nonempty, GT(z, te_const(0, z.dtype), "bool"), "bool")
        body = IfThenElse(nonempty, body)
    return seq(update, body)


class _SafeIndices(IRMutator):
    """The statement's own accesses in ``safe`` ({node: {dim: index}}) get those indices;
    nested statements are left alone (they carry checks of their own)."""

    def __init__(self, safe):
        self.safe = safe
        self.top = True

    def visit(self, node):
        if isinstance(node, Stmt):
            if not self.top:
                return node
            self.top = False
        return super().visit(node)

    def _indices(self, node, new):
        dims = self.safe.get(node)
        if dims is None:
            return None
        out = []
        for d, i in enumerate(new.indices):       # the index with its own loads made safe
            if d in dims:
                i64 = i if i.dtype == "int64" else cast("int64", i)
                size = dims[d] if dims[d].dtype == "int64" else cast("int64", dims[d])
                ok = And(_ge(i64, 0), _lt(i64, size), "bool")
                i = Select(ok, i, te_const(0, i.dtype), i.dtype)
            out.append(i)
        return tuple(out)

    def visit_BufferLoad(self, node):
        new = self.generic_visit(node)
        idx = self._indices(node, new)
        return new if idx is None else BufferLoad(new.buffer, idx, new.dtype)

    def visit_BufferStore(self, node):
        new = self.generic_visit(node)
        idx = self._indices(node, new)
        return new if idx is None else BufferStore(new.buffer, new.value, idx)


_FLAG = Buffer("tw_failed", (te_const(1),), "int32", "local")


class _FastBody(IRMutator):
    """The body with each checked statement replaced by its branch-free twin. The twins
    raise a flag that is local to each thread (a register once LLVM promotes it: a max
    reduction that vectorizes), one per parallel or thread loop and one for the function;
    each scope ends with ``if flag: error[FLAG_SLOT] = 1``, a store that only ever writes 1,
    so threads cannot lose each other's failures."""

    def __init__(self, fast, err):
        self.fast = fast
        self.err = err
        self.count = 0

    def visit_IfThenElse(self, node):
        twin = self.fast.get(node)
        if twin is not None:
            return self.visit(twin)
        return self.generic_visit(node)

    def visit_For(self, node):
        new = self.generic_visit(node)
        if node.kind in (ForKind.PARALLEL, ForKind.THREAD_BINDING):
            body = self.scope(new.body)
            if body is not new.body:
                new = dataclasses.replace(new, body=body)
        return new

    def scope(self, body):
        """``body`` with its flag allocated, cleared first and reported last."""
        from .analysis import uses
        from .functor import replace_buffers
        if not _uses_buffer(body, _FLAG):
            return body
        self.count += 1
        mine = Buffer(f"tw_failed_{self.count}", (te_const(1),), "int32", "local")
        body = replace_buffers(body, {_FLAG: mine})
        flag = BufferLoad(mine, (te_const(0),), "int32")
        report = IfThenElse(NE(flag, te_const(0, "int32"), "bool"),
                            BufferStore(self.err, te_const(1, "int64"), (te_const(FLAG_SLOT),)))
        del uses
        return Allocate(mine, seq(BufferStore(mine, te_const(0, "int32"), (te_const(0),)),
                                  body, report))


class _LazySelects(IRMutator):
    """``select(c, a, b)`` -> ``if_then_else(c, a, b)`` for the given Select nodes: both
    evaluate to the same value, but if_then_else reads only the chosen side. Rebuilt
    statements are remembered, so that the fast twins map to the rebuilt wrappers."""

    def __init__(self, selects):
        self.selects = selects
        self.memo = {}

    def visit(self, node):
        key = id(node)
        hit = self.memo.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        out = super().visit(node)
        self.memo[key] = (node, out)
        return out

    def visit_Select(self, node):
        new = self.generic_visit(node)
        if node in self.selects:
            return Call("if_then_else", (new.condition, new.true_value, new.false_value),
                        node.dtype)
        return new

    def visit_And(self, node):
        new = self.generic_visit(node)
        if node in self.selects:
            return Call("if_then_else", (new.a, new.b, te_const(False, "bool")), "bool")
        return new

    def visit_Or(self, node):
        new = self.generic_visit(node)
        if node in self.selects:
            return Call("if_then_else", (new.a, te_const(True, "bool"), new.b), "bool")
        return new


def _uses_buffer(node, buf):
    from .functor import post_order_visit
    found = []
    post_order_visit(node, lambda n: found.append(1)
                     if isinstance(n, (BufferLoad, BufferStore)) and n.buffer is buf else None)
    return bool(found)


def _ge(a, v):
    from te.expr import GE
    return GE(a, te_const(v, a.dtype), "bool")


def _lt(a, b):
    from te.expr import LT
    return LT(a, b, "bool")

"""Replace each VECTORIZED loop of constant extent by one statement over vectors.

The loop variable becomes ``ramp(0, 1, lanes)``; scalars meeting vectors are broadcast, and
accesses whose index is a ramp of stride 1 become contiguous vector loads and stores. A body
that cannot be expressed lane-wise (a branch on a vector condition, an allocation, a store of a
vector to one address) keeps its loop, annotated with the reason, for LLVM to vectorize.
"""
from __future__ import annotations

from te import dtypes
from te.expr import (Add, Binary, Call, Cast, Mul, Not, Select, Sub, Var, IntImm)

from ..functor import IRMutator
from ..ir import (BufferLoad, BufferStore, For, ForKind, IfThenElse, LetStmt, Ramp,
                  broadcast, ramp)


class _Unvectorizable(Exception):
    pass


def _lanes(e):
    return dtypes.lanes(e.dtype)


class _Vectorizer(IRMutator):
    def __init__(self, var, lanes):
        self.var, self.lanes = var, lanes
        self.let_map = {}

    def _bc(self, e):
        return broadcast(e, self.lanes) if _lanes(e) == 1 else e

    def visit_Var(self, node):
        if node is self.var:
            return ramp(IntImm(0, node.dtype), IntImm(1, node.dtype), self.lanes)
        return self.let_map.get(node, node)

    def visit_Binary(self, node):
        a, b = self.visit(node.a), self.visit(node.b)
        if a is node.a and b is node.b:
            return node
        if _lanes(a) == 1 and _lanes(b) == 1:
            return type(node)(a, b, node.dtype)
        cls = type(node)
        ra, rb = isinstance(a, Ramp), isinstance(b, Ramp)
        if cls in (Add, Sub) and (ra or rb) and (ra or _lanes(a) == 1) and \
                (rb or _lanes(b) == 1):
            base = cls(a.base if ra else a, b.base if rb else b, dtypes.element(node.dtype))
            if ra and rb:
                stride = cls(a.stride, b.stride, a.stride.dtype)
            elif ra:
                stride = a.stride
            else:
                stride = b.stride if cls is Add else Sub(IntImm(0, b.stride.dtype), b.stride,
                                                          b.stride.dtype)
            return ramp(base, stride, self.lanes)
        if cls is Mul and ra != rb and _lanes(b if ra else a) == 1:
            r, s = (a, b) if ra else (b, a)
            return ramp(Mul(r.base, s, r.base.dtype), Mul(r.stride, s, r.stride.dtype),
                        self.lanes)
        return cls(self._bc(a), self._bc(b), dtypes.with_lanes(node.dtype, self.lanes))

    def visit_Not(self, node):
        a = self.visit(node.a)
        return node if a is node.a else Not(a, a.dtype)

    def visit_Select(self, node):
        c, t, f = (self.visit(x) for x in (node.condition, node.true_value, node.false_value))
        if all(_lanes(x) == 1 for x in (c, t, f)):
            return Select(c, t, f, node.dtype)
        return Select(self._bc(c), self._bc(t), self._bc(f),
                      dtypes.with_lanes(node.dtype, self.lanes))

    def visit_Cast(self, node):
        v = self.visit(node.value)
        if v is node.value:
            return node
        return Cast(v, dtypes.with_lanes(node.dtype, _lanes(v)))

    def visit_Call(self, node):
        args = [self.visit(a) for a in node.args]
        if all(a is b for a, b in zip(args, node.args)):
            return node
        if all(_lanes(a) == 1 for a in args):
            return Call(node.op, tuple(args), node.dtype)
        if node.op == "if_then_else":
            if _lanes(args[0]) > 1:
                raise _Unvectorizable("if_then_else on a vector condition")
            # one condition for all lanes: a branch between whole vectors keeps loads guarded
            return Call(node.op, (args[0], self._bc(args[1]), self._bc(args[2])),
                        dtypes.with_lanes(node.dtype, self.lanes))
        return Call(node.op, tuple(self._bc(a) for a in args),
                    dtypes.with_lanes(node.dtype, self.lanes))

    def visit_Let(self, node):
        raise _Unvectorizable("let expression")

    def visit_BufferLoad(self, node):
        idx = self.visit(node.indices[0])
        if idx is node.indices[0]:
            return node
        if _lanes(idx) == 1:
            return BufferLoad(node.buffer, (idx,), node.dtype)
        return BufferLoad(node.buffer, (idx,), dtypes.with_lanes(node.dtype, self.lanes))

    def visit_BufferStore(self, node):
        idx = self.visit(node.indices[0])
        value = self.visit(node.value)
        if idx is node.indices[0] and value is node.value:
            return node
        if _lanes(idx) == 1:
            if _lanes(value) > 1:
                raise _Unvectorizable(f"store of a vector to one element of {node.buffer.name}")
            return BufferStore(node.buffer, value, (idx,))
        return BufferStore(node.buffer, self._bc(value), (idx,))

    def visit_IfThenElse(self, node):
        cond = self.visit(node.condition)
        if _lanes(cond) > 1:
            raise _Unvectorizable("branch on a condition that varies across lanes")
        then = self.visit(node.then_case)
        other = self.visit(node.else_case) if node.else_case is not None else None
        return IfThenElse(cond, then, other)

    def visit_For(self, node):
        if _lanes(self.visit(node.extent)) > 1 or _lanes(self.visit(node.min)) > 1:
            raise _Unvectorizable("inner loop bounds depend on the vectorized variable")
        body = self.visit(node.body)
        if body is node.body:
            return node
        return For(node.loop_var, node.min, node.extent, node.kind, body, node.thread_tag,
                   node.annotations)

    def visit_LetStmt(self, node):
        value = self.visit(node.value)
        if _lanes(value) > 1:
            new = Var(node.var.name, value.dtype)
            self.let_map[node.var] = new
            return LetStmt(new, value, self.visit(node.body))
        body = self.visit(node.body)
        if value is node.value and body is node.body:
            return node
        return LetStmt(node.var, value, body)

    def visit_Allocate(self, node):
        raise _Unvectorizable("allocation inside the vectorized loop")

    def visit_Ramp(self, node):
        raise _Unvectorizable("nested vectorized loops")

    visit_Broadcast = visit_Ramp


for _cls in Binary.__subclasses__():
    setattr(_Vectorizer, "visit_" + _cls.__name__, _Vectorizer.visit_Binary)


class _VectorizeLoops(IRMutator):
    def visit_For(self, node):
        node = self.generic_visit(node)
        if node.kind != ForKind.VECTORIZED or not isinstance(node.extent, IntImm):
            return node
        lanes = node.extent.value
        if lanes == 1:
            from ..functor import substitute
            return substitute(node.body, {node.loop_var: node.min})
        try:
            return _Vectorizer(node.loop_var, lanes).visit(node.body)
        except _Unvectorizable as err:
            return For(node.loop_var, node.min, node.extent, node.kind, node.body,
                       node.thread_tag, node.annotations + (("scalarized", str(err)),))


def vectorize_loops(stmt):
    """Lower VECTORIZED loops to Ramp/Broadcast vector expressions where lane-wise."""
    return _VectorizeLoops().visit(stmt)

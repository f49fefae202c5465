"""Split loops so that the guards of non-divisible splits vanish from the main body.

For a loop ``v`` whose body is guarded by ``a*v + rest < bound`` (``a > 0``, ``rest`` made of
loops inside ``v`` with constant ranges, ``bound`` invariant), the loop becomes a main part
``v < main_end``, where the guard always holds and is removed, and a tail that keeps it. The
main part then vectorizes and unrolls cleanly. A parallel loop is not cut in two (its tail
would run alone, after the threads finished the main part): each iteration branches to the
clean body or to the guarded one.
"""
from __future__ import annotations

from te.expr import IntImm, LT, Max, Min, Var, const
from te.functor import free_vars

from ..functor import IRMutator, IRVisitor, substitute
from ..ir import For, ForKind, IfThenElse, SeqStmt, seq
from ..simplify import INF, Linear, const_bounds, simplify, skey
from .simplify import simplify_stmt

PARTITIONABLE = (ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED, ForKind.VECTORIZED)


def _conjuncts(cond):
    from te.expr import And
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


class _Guards(IRVisitor):
    """Guard conjuncts in a loop body, the loops inside it and their constant ranges."""

    def __init__(self):
        self.conds, self.ranges, self.loops = [], {}, set()

    def visit_For(self, node):
        self.loops.add(node.loop_var)
        if isinstance(node.extent, IntImm) and isinstance(node.min, IntImm):
            self.ranges[node.loop_var] = (node.min.value,
                                          node.min.value + node.extent.value - 1)
        self.generic_visit(node)

    def visit_IfThenElse(self, node):
        if node.else_case is None:
            self.conds.extend(_conjuncts(node.condition))
        self.generic_visit(node)


class _DropGuard(IRMutator):
    """Replace the conjunct with key ``key`` by True in every guard."""

    def __init__(self, key):
        self.key = key

    def visit_IfThenElse(self, node):
        node = self.generic_visit(node)
        if node.else_case is not None:
            return node
        keep = [c for c in _conjuncts(node.condition) if skey(c) != self.key]
        if len(keep) == len(_conjuncts(node.condition)):
            return node
        if not keep:
            return node.then_case
        from te.expr import all_
        return IfThenElse(all_(*keep), node.then_case)


def _main_end(cond, v, inner_ranges, bound_vars):
    """The first value of ``v`` for which ``cond`` may fail, or None."""
    if not isinstance(cond, LT):
        return None
    lin = Linear.of(simplify(cond.a - cond.b))
    coeff, rest = 0, Linear(const_=lin.const)
    for key, (atom, c) in lin.terms.items():
        if atom is v:
            coeff = c
        else:
            rest.terms[key] = [atom, c]
    if coeff <= 0:
        return None
    rest_expr = rest.to_expr(v.dtype)
    inner = [x for x in free_vars(rest_expr) if x in inner_ranges]
    if any(x in bound_vars and x not in inner_ranges for x in free_vars(rest_expr)):
        return None                       # depends on an outer loop: partition there instead
    inner_lin, outer_lin = Linear(const_=rest.const), Linear()
    for key, (atom, c) in rest.terms.items():
        target = inner_lin if set(free_vars(atom)) <= set(inner) else outer_lin
        if set(free_vars(atom)) & set(inner) and target is outer_lin:
            return None
        target.terms[key] = [atom, c]
    hi = const_bounds(inner_lin.to_expr(v.dtype), inner_ranges)[1]
    if hi == INF:
        return None
    # coeff*v + hi + outer < 0  <=>  v < ceil(-(hi + outer) / coeff)
    neg = simplify(const(-int(hi), v.dtype) - outer_lin.to_expr(v.dtype))
    return simplify((neg + (coeff - 1)) // coeff)


class _Partition(IRMutator):
    def __init__(self):
        self.bound = set()

    def visit_For(self, node):
        self.bound.add(node.loop_var)
        node = self.generic_visit(node)
        if node.kind not in PARTITIONABLE:
            return node
        if node.kind == ForKind.PARALLEL:
            return self._partition_parallel(node)
        return self._partition(node)

    def _partition_parallel(self, node):
        """``node`` partitioned as a serial loop, its pieces then the branches of one
        parallel loop: a tail loop of its own would run after the main part, alone (5 + 1
        row blocks on 2 threads took the time of 4)."""
        serial = For(node.loop_var, node.min, node.extent, ForKind.SERIAL, node.body,
                     node.thread_tag, node.annotations)
        done = self._partition(serial)
        if done is serial:
            return node
        parts = list(done.seq) if isinstance(done, SeqStmt) else [done]
        if not all(isinstance(p, For) for p in parts):
            return node
        v = node.loop_var

        def body_of(p):
            if isinstance(p.extent, IntImm) and p.extent.value == 1:
                # one iteration (a last, partial block): with the variable a constant, the
                # loops inside it can split their own guards off
                return self.visit(simplify_stmt(substitute(p.body, {p.loop_var: p.min})))
            return p.body if p.loop_var is v else substitute(p.body, {p.loop_var: v})
        body = body_of(parts[-1])
        for p in reversed(parts[:-1]):
            body = IfThenElse(LT(v, simplify(p.min + p.extent), "bool"), body_of(p), body)
        return For(v, node.min, node.extent, node.kind, body, node.thread_tag,
                   node.annotations)

    def _partition(self, node):
        guards = _Guards()
        guards.visit(node.body)
        v = node.loop_var
        for cond in guards.conds:
            if v not in free_vars(cond):
                continue
            # inner loops count as bound too: a tail loop made by an inner partition has a
            # fresh variable that self.bound has never seen
            end = _main_end(cond, v, guards.ranges, self.bound | guards.loops)
            if end is None:
                continue
            lo, ext = node.min, node.extent
            end = simplify(Max(Min(end, lo + ext, v.dtype), lo, v.dtype))
            if isinstance(end, IntImm) and isinstance(lo, IntImm) and end.value <= lo.value:
                continue
            main_body = _DropGuard(skey(cond)).visit(node.body)
            main = For(v, lo, simplify(end - lo), node.kind, main_body, node.thread_tag,
                       node.annotations)
            tail_ext = simplify(lo + ext - end)
            if isinstance(tail_ext, IntImm) and tail_ext.value <= 0:
                return self._partition(main)
            tail_kind = ForKind.SERIAL if node.kind == ForKind.VECTORIZED else node.kind
            tail_body, tail_var = _rename(node.body, v)
            tail = For(tail_var, end, tail_ext, tail_kind, tail_body, node.thread_tag,
                       node.annotations)
            return seq(self._partition(main), tail)
        return node


def _rename(body, v):
    new = Var(v.name, v.dtype)
    return substitute(body, {v: new}), new


def loop_partition(stmt):
    """Split loops at the point where the guards of non-divisible splits start to matter."""
    return _Partition().visit(stmt)

"""Reads that are out of bounds on every run of a stage, found when it is lowered.

With constant shapes and axis ranges, the range of an index such as ``A[i + 10]`` is known
(``const_bounds``): a read that is not under a condition (``te.if_then_else``, ``te.select``,
a reduction's ``where=``) and whose index range leaves the tensor is a mistake that would read
garbage (or crash). An index whose range is only an estimate (a variable used twice, a product
of variables) is reported only when it lies wholly outside the tensor; one whose range is
unbounded (a size variable, a variable range) is not reported.
"""
from __future__ import annotations

from te.expr import (Add, And, Call, Expr, IntImm, Mul, Or, ProducerLoad, Reduce, Select, Sub,
                     Var)
from te.functor import _fields

from .simplify import INF, const_bounds


def check_reads(axes, bodies) -> str | None:
    """A message for the first read of ``bodies`` that is out of bounds, or None.

    ``axes``: the compute's IterVars and its reduction's (their ranges bound the index)."""
    ranges = {}
    for iv in axes:
        lo, ext = iv.dom.min, iv.dom.extent
        if isinstance(lo, IntImm) and isinstance(ext, IntImm):
            if ext.value <= 0:
                return None                 # the body never runs
            ranges[iv.var] = (lo.value, lo.value + ext.value - 1)
    for body in bodies:
        found = _walk(body, ranges, guarded=False)
        if found:
            return found
    return None


def _walk(node, ranges, guarded):
    if isinstance(node, ProducerLoad):
        if not guarded:
            found = _check_load(node, ranges)
            if found:
                return found
        children = node.indices
    elif isinstance(node, Reduce):
        cond = node.condition
        inner = guarded or not (isinstance(cond, IntImm) and cond.value)
        for s in node.source:
            found = _walk(s, ranges, inner)
            if found:
                return found
        return _walk(cond, ranges, guarded)
    elif isinstance(node, Select) or (isinstance(node, Call) and node.op == "if_then_else"):
        cond, *sides = (node.condition, node.true_value, node.false_value) \
            if isinstance(node, Select) else node.args
        return _walk(cond, ranges, guarded) or next(
            (f for f in (_walk(s, ranges, True) for s in sides) if f), None)
    elif isinstance(node, (And, Or)):          # the right side may not be evaluated
        return _walk(node.a, ranges, guarded) or _walk(node.b, ranges, True)
    else:
        children = [getattr(node, f) for f in _fields(node)]
    for child in children:
        for c in (child if isinstance(child, tuple) else (child,)):
            found = _walk(c, ranges, guarded) if isinstance(c, Expr) else None
            if found:
                return found
    return None


def _check_load(load, ranges):
    tensor = load.producer
    for d, (index, size) in enumerate(zip(load.indices, tensor.shape)):
        if not isinstance(size, IntImm):
            continue
        lo, hi = const_bounds(index, ranges)
        if INF in (lo, hi) or -INF in (lo, hi):
            continue                        # unbounded: not provably out of bounds
        outside = hi < 0 or lo >= size.value
        if outside or ((lo < 0 or hi >= size.value) and _exact(index, {})):
            read = f"{tensor.name}[{', '.join(str(i) for i in load.indices)}]"
            return (f"the read {read} indexes dimension {d} of {tensor.name} with {index}, "
                    f"which ranges over [{lo}, {hi}], but that dimension has size "
                    f"{size.value}; fix the index, or guard the read with te.if_then_else")
    return None


def _exact(e, seen) -> bool:
    """Whether the interval of ``e`` is its exact range: a sum of variables (each once) times
    constants, plus a constant."""
    if isinstance(e, IntImm):
        return True
    if isinstance(e, Var):
        if e in seen:
            return False
        seen[e] = True
        return True
    if isinstance(e, (Add, Sub)):
        return _exact(e.a, seen) and _exact(e.b, seen)
    if isinstance(e, Mul):
        return (isinstance(e.b, IntImm) and _exact(e.a, seen)) or \
            (isinstance(e.a, IntImm) and _exact(e.b, seen))
    return False

"""Counting the arithmetic of a tensor-expression graph, for GFLOP/s when a template gives none.

As AutoTVM's ``compute_flop``: each compute element costs the operators of its body (arithmetic,
comparisons, logic), a reduction its combiner and source once per reduction point, a select its
condition and the costlier branch; indices, casts and constants are free. Unlike AutoTVM an
intrinsic call (``exp``, ``sqrt``, ...) counts as one operation, so elementwise math is not zero.
Every operator counts whatever its dtype; a template that knows better calls ``cfg.add_flop(n)``.
"""
from __future__ import annotations

import math

from te import expr as E
from te.tensor import ComputeOp, Tensor


def count_flop(tensors):
    """Operations to compute the outputs among ``tensors`` (each operation counted once)."""
    seen, total = set(), 0
    todo = [t.op for t in tensors if isinstance(t, Tensor)]
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        if isinstance(op, ComputeOp):
            per_element = _count(op.body[0]) if len(op.body) == 1 else sum(map(_count, op.body))
            total += _extent(op.axis) * per_element
            todo.extend(t.op for t in op.input_tensors)
    return total


def _extent(axes):
    sizes = [getattr(iv.dom.extent, "value", None) for iv in axes]
    return math.prod(sizes) if all(isinstance(s, int) for s in sizes) else 0


def _count(node):
    if isinstance(node, E.Reduce):
        combine = node.combiner.result[node.value_index]
        return _extent(node.axis) * (_count(combine) + _count(node.source[node.value_index]))
    if isinstance(node, E.ProducerLoad):
        return 0
    if isinstance(node, E.Select):
        return _count(node.condition) + max(_count(node.true_value), _count(node.false_value))
    if isinstance(node, E.Call):
        if node.op == "if_then_else":
            cond, then, other = node.args
            return _count(cond) + max(_count(then), _count(other))
        return 1 + sum(_count(a) for a in node.args if isinstance(a, E.Expr))
    if isinstance(node, E.Let):
        return _count(node.value) + _count(node.body)
    if isinstance(node, E.Cast):
        return _count(node.value)
    if isinstance(node, E.Not):
        return 1 + _count(node.a)
    if isinstance(node, E.Binary):
        return 1 + _count(node.a) + _count(node.b)
    return 0

"""Helpers shared by the operators and their schedules (TVM's ``topi.utils``)."""
from __future__ import annotations

from ..expr import IntImm, convert
from ..tensor import ComputeOp, Tensor, TEError


def get_const_int(value, what="value") -> int:
    """``value`` as a Python int; a symbolic expression is refused, naming ``what``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    e = convert(value)
    if not isinstance(e, IntImm):
        raise TEError(f"{what} must be a constant integer, got {e}")
    return e.value


def get_const_tuple(shape, what="shape") -> tuple:
    """A shape as a tuple of ints (symbolic entries stay expressions, as TVM's)."""
    out = []
    for d in shape:
        e = d if isinstance(d, int) else convert(d)
        out.append(e.value if isinstance(e, IntImm) else e)
    return tuple(out)


def const_shape(t, what) -> tuple:
    """The shape of tensor ``t`` as ints; a symbolic size is refused, naming ``what``."""
    shape = []
    for d in t.shape:
        if not isinstance(d, IntImm):
            raise ValueError(f"{what}: {t.name} has the symbolic size {d}; it needs constant "
                             "shapes (declare the placeholder with ints)")
        shape.append(d.value)
    return tuple(shape)


def const_size(d):
    """A dimension as an int when it is constant, else the expression itself."""
    value = getattr(d, "value", d)
    return value if isinstance(value, int) else d


def as_tensors(outs) -> list:
    """``outs`` (one tensor or a list of them) as a list."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    for t in outs:
        if not isinstance(t, Tensor):
            raise TEError(f"a schedule takes the output tensors of the operators, got "
                          f"{type(t).__name__} {t!r}")
    return outs


def create_schedule(outs):
    """A schedule for the output tensors ``outs`` (through te's facade, imported on use)."""
    from .. import create_schedule as make
    return make([t.op for t in outs])


def inline_injective(s, outs=(), keep=()):
    """Inline every injective compute stage of ``s`` that is not an output and whose tag is
    not in ``keep`` (TVM's ``te.schedule.AutoInlineInjective``): its values are computed
    where they are read."""
    out_ops = {t.op for t in outs}
    for stage in s.stages:
        op = stage.op
        if isinstance(op, ComputeOp) and op not in out_ops and not op.is_reduction \
                and op.tag not in keep and stage.attach_type == "root":
            stage.compute_inline()


def traverse(outs):
    """Every compute op the outputs depend on, each once, producers first."""
    order, seen = [], set()

    def visit(op):
        if op in seen:
            return
        seen.add(op)
        for t in op.input_tensors():
            visit(t.op)
        order.append(op)
    for t in outs:
        visit(t.op)
    return [op for op in order if isinstance(op, ComputeOp)]

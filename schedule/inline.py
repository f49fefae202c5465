"""compute_inline: substitute the bodies of inlined stages into the stages that read them."""
from __future__ import annotations

from te.expr import cast
from te.functor import ExprMutator, substitute
from te.tensor import ComputeOp


class _Inline(ExprMutator):
    def __init__(self, inlined):
        self.inlined = inlined      # op -> bodies (already inlined themselves)

    def visit_ProducerLoad(self, node):
        node = self.generic_visit(node)
        op = node.producer.op
        bodies = self.inlined.get(op)
        if bodies is None:
            return node
        # each index in its axis's width: the body's nodes keep their dtypes, so an int64
        # index (of an int64 consumer loop) in place of an int32 axis would mix widths
        vmap = {iv.var: cast(iv.var.dtype, idx) for iv, idx in zip(op.axis, node.indices)}
        return substitute(bodies[node.producer.value_index], vmap)


def inline_bodies(sch) -> dict:
    """Map every computed stage to its body tuple with inlined stages substituted."""
    inlined, bodies = {}, {}
    for stage in sch.stages:
        if not isinstance(stage.op, ComputeOp):
            continue
        mut = _Inline(inlined)
        body = tuple(mut.visit(b) for b in stage.op.body)
        if stage.attach_type == "inline":
            inlined[stage.op] = body
        else:
            bodies[stage] = body
    return bodies

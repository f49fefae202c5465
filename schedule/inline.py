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
        if getattr(stage.op, "intrin", None) is not None and (
                stage.attach_type == "inline" or any(a is not b for a, b in
                                                     zip(body, stage.op.body))):
            from .stage import ScheduleError
            raise ScheduleError(f"compute_inline: stage {stage.name} calls tensor intrinsic "
                                f"{stage.op.intrin.name}, which reads and writes buffers; it "
                                "cannot be inlined, nor can the stages it reads")
        if stage.attach_type == "inline":
            inlined[stage.op] = body
        else:
            bodies[stage] = body
    return bodies


# ----------------------------------------------------------------------------- TVM's auto-inline

def _unscheduled_compute(stage) -> bool:
    """A computed stage that is no output, at the root, with no relations (TVM's
    ``!is_scheduled() && !is_output``), and no reduction."""
    return isinstance(stage.op, ComputeOp) and not stage.is_output and \
        stage.attach_type == "root" and not stage.relations and \
        not stage.op.reduce_axis and stage.scan is None


def _elementwise(op) -> bool:
    """Every read indexes with the operation's own axes, in order (TVM's IsElemWise)."""
    from te.expr import ProducerLoad
    from te.functor import post_order_visit
    axes = [iv.var for iv in op.axis]
    ok = []

    def visit(node):
        if isinstance(node, ProducerLoad):
            ok.append(len(node.indices) == len(axes) and
                      all(i is v for i, v in zip(node.indices, axes)))
    for b in op.body:
        post_order_visit(b, visit)
    return all(ok)


def _auto_inline(sch, accept):
    for stage in list(sch.stages):
        if _unscheduled_compute(stage) and accept(stage.op):
            stage.compute_inline()


def AutoInlineElemWise(sch):        # noqa: N802  (TVM's names)
    """Inline every unscheduled intermediate stage that reads its inputs elementwise."""
    _auto_inline(sch, _elementwise)


def AutoInlineBroadcast(sch):       # noqa: N802
    """Inline every unscheduled intermediate stage tagged ``"broadcast"`` or elementwise."""
    _auto_inline(sch, lambda op: op.tag == "broadcast" or _elementwise(op))


def AutoInlineInjective(sch):       # noqa: N802
    """Inline every unscheduled intermediate stage without a reduction (injective)."""
    _auto_inline(sch, lambda op: True)

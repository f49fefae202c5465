"""The loop nest of a ``TensorComputeOp`` (a tensor intrinsic called inside ``te.compute``,
te/tensor_compute.py), as TVM's ``TensorComputeOpNode::BuildProvide``.

The stage's loops (its schedulable axes and the call's reduction axes, as scheduled) run
around the intrinsic; its buffers are bound to the regions of the call (inputs: the regions
as written, at the loops' values; the output: one element of each schedulable axis and the
whole of the others), leading dimensions of one element left out, and the body runs once per
iteration. With reduction axes, ``reduce_reset`` runs before the reduction loops and
``reduce_update`` inside them (without a reset: ``body`` on their first iteration). Binding
and its checks are tensorize's (schedule/tensorize.py).
"""
from __future__ import annotations

from te.functor import free_vars, substitute
from te.tensor import COMM_REDUCE

from .bound import axis_values, pass_up
from .ir import ForKind
from .simplify import simplify
from .stage import ScheduleError
from .tensorize import _Tensorize


def tensor_compute_nest(builder, stage):
    """The loop nest of ``stage``, whose operation is a TensorComputeOp."""
    return _TensorCompute(builder, stage).nest()


class _TensorCompute(_Tensorize):
    def __init__(self, b, stage):     # noqa: super().__init__ finds a tensorized leaf
        self.b, self.stage = b, stage
        self.sb = b.bounds[stage]
        self.intrin = stage.op.intrin
        self.axis = None
        self.outer, self.inner = list(stage.leaf_iter_vars), []

    def fail(self, msg):
        raise ScheduleError(f"compute {self.stage.name} (a call of tensor intrinsic "
                            f"{self.intrin.name}): {msg}")

    def nest(self):
        b, stage, sb, op = self.b, self.stage, self.sb, self.stage.op
        from .build_loops import _inner_split_guards
        leaves = stage.leaf_iter_vars
        for lv in leaves:
            if b._kind(stage, lv) == ForKind.VECTORIZED:
                self.fail(f"loop {lv.var.name} is vectorized; the intrinsic computes its "
                          "region as one piece of code (leave vectors to the intrinsic)")
        offsets = pass_up(stage.relations, {lv: lv.var for lv in leaves}, sb.extents)
        roots = list(op.schedulable_axis) + list(op.reduce_axis)
        vmap = axis_values({iv: sb.root[iv] for iv in roots}, offsets, b.ranges)
        for iv in op.axis[op.schedulable_ndim:]:
            vmap[iv.var] = iv.dom.min
        conds = []
        for iv in roots:
            conds += b._guards(iv, offsets[iv], vmap[iv.var], sb)
        conds += _inner_split_guards(stage, offsets, sb, reduce=False)
        conds += _inner_split_guards(stage, offsets, sb, reduce=True)
        red_vars = {lv.var for lv in leaves if lv.iter_type == COMM_REDUCE}
        outer_conds = [c for c in conds if not set(free_vars(c)) & red_vars]
        red_conds = [c for c in conds if set(free_vars(c)) & red_vars]

        def at(e):
            return simplify(substitute(e, vmap), b.ranges)
        intrin = self.intrin
        entries = []
        for t, region, db in zip(op.inputs, op.input_regions, intrin.buffers):
            entries.append((t, [at(r.min) for r in region], [at(r.extent) for r in region],
                            db))
        out_begin, out_ext = [], []
        for k, iv in enumerate(op.axis):
            inner = k >= op.schedulable_ndim
            out_begin.append(iv.dom.min if inner else vmap[iv.var])
            out_ext.append(iv.dom.extent if inner else 1)
        from te.expr import convert
        entries.append((op.output(0), out_begin, [convert(e) for e in out_ext],
                        intrin.buffers[-1]))
        self.scalars = {p: at(v) for p, v in zip(intrin.scalar_params, op.scalar_inputs)}
        for child in b.sch.stages:
            if child.attach_type == "scope" and child.attach_stage is stage and \
                    child.attach_ivar not in leaves:
                self.fail(f"stage {child.name} is attached to {child.attach_ivar.var.name}, "
                          "which is not one of its loops")
        return self.build(entries, outer_conds, red_conds)

"""Stages to a loop nest: interpret each stage's relations and attachments as For loops.

Every stage becomes a nest of its leaf loops (each loop runs from 0 over the leaf's extent)
around a store of its body; root values are recovered from the leaves by ``pass_up``.
Reductions get an init nest before their first reduction loop (build_reduce.py). Stages
attached with compute_at are emitted, with their allocation, inside the consumer's attach
loop.
"""
from __future__ import annotations

from te.expr import IntImm, Reduce, Var, const
from te.functor import ExprMutator, free_vars, substitute
from te.extern import ExternBuffer, ExternOp
from te.scan import ScanOp
from te.tensor_compute import TensorComputeOp
from te.tensor import COMM_REDUCE, ComputeOp, PlaceholderOp, Tensor

from .bound import _loads, axis_values, loop_ranges, pass_up
from .build_reduce import bind_combiner, cross_thread_nest, reduction, thread_reduce_leaf
# the guards shared with plain stages (tensorize.py imports them from here)
from .build_reduce import guard as _guard, inner_split_guards as _inner_split_guards
from .check_reads import check_reads
from .ir import (Allocate, Buffer, BufferLoad, BufferRef, BufferStore, Evaluate, For, ForKind,
                 PrimFunc, Stmt, seq)
from .ir_builder import extern_body
from .simplify import can_prove, simplify
from .stage import ScheduleError

SCAN_STEPS = "scan_steps"      # the annotation of a scan's time loop


class _ToBufferLoad(ExprMutator):
    def __init__(self, ctx):
        self.ctx = ctx

    def visit_ProducerLoad(self, node):
        node = self.generic_visit(node)
        buf, mins = self.ctx.buffer_of(node.producer)
        idx = tuple(i if isinstance(m, IntImm) and m.value == 0 else
                    simplify(i - m, self.ctx.ranges) for i, m in zip(node.indices, mins))
        return BufferLoad(buf, idx, node.dtype)


class _Builder:
    def __init__(self, sch, bounds, bodies, args, name):
        self.sch, self.bounds, self.bodies = sch, bounds, bodies
        self.ranges = loop_ranges(bounds)
        self.tensor_buf = {}       # Tensor -> Buffer
        self.params, self.outputs = [], []
        for k, a in enumerate(args):
            # an operation makes its output tensors once (Operation.outputs): a repeat is `is`
            if any(a is b for b in args[:k]):
                raise ScheduleError(f"lower: {getattr(a, 'name', a)} appears twice in the "
                                    "arguments; pass each tensor and var once")
            if isinstance(a, Var):
                self.params.append(a)
                continue
            if not isinstance(a, Tensor):
                raise ScheduleError(f"lower: argument {a!r} must be a te Tensor or te.var")
            cur = sch.current(a) if a.op in sch.stage_map else a
            buf = Buffer(a.name, tuple(a.shape), a.dtype)
            self.tensor_buf[cur] = buf
            self.tensor_buf[a] = buf
            self.params.append(buf)
            if isinstance(cur.op, (ComputeOp, ScanOp, ExternOp)):
                stage = sch[cur]
                if stage.attach_type == "inline":
                    raise ScheduleError(f"lower: {a.name} is an argument, so it must be stored; "
                                        "it is inlined (remove compute_inline or drop it from "
                                        "the arguments)")
                if stage.scope != "global":
                    raise ScheduleError(f"lower: {a.name} is an argument, so it lives in global "
                                        f"memory, but set_scope gave it scope {stage.scope!r}; "
                                        "remove set_scope (cache_write(..., scope) stages an "
                                        "output through a faster memory)")
                self.outputs.append(buf)
        self._check_outputs_passed(args)
        self._check_reads()
        self.full_bufs = list(self.outputs)    # stored at their full shape
        for stage in sch.stages:
            if isinstance(stage.op, ScanOp):
                self._bind_scan_buffers(stage)
            if isinstance(stage.op, ExternOp):      # written whole by the external function
                self.full_bufs += [self.stage_buffer(stage, k)
                                   for k in range(stage.op.num_outputs)]
        for stage in sch.stages:
            if isinstance(stage.op, PlaceholderOp):
                for t in stage.op.outputs:
                    if t not in self.tensor_buf and self._used(t):
                        raise ScheduleError(f"lower: placeholder {t.name} is read but is not in "
                                            "the argument list; pass it to te.lower/te.build")
        self.name = name

    def _check_outputs_passed(self, args):
        """Every output of the schedule that no stage reads is an argument (else its values
        would be computed and thrown away)."""
        passed = {id(a.op) for a in args if isinstance(a, Tensor)}
        passed |= {id(self.sch.current(a).op) for a in args
                   if isinstance(a, Tensor) and a.op in self.sch.stage_map}
        read = {id(t.op) for stage in self.sch.stages for t in stage.op.input_tensors}
        for op in self.sch.outputs:
            if id(op) not in passed and id(op) not in read:
                raise ScheduleError(f"lower: {op.name} is an output of the schedule but not "
                                    "in the arguments, so its values would be lost; add "
                                    f"{op.name} to the arguments of te.lower/te.build")

    def _check_reads(self):
        """No stage computed over its whole domain (at the root) reads outside a tensor where
        no condition guards the read (check_reads.py). Attached and inlined stages compute
        parts of their domain, scan steps start after the init, a store predicate guards
        the whole body: they are not checked."""
        for stage in self.sch.stages:
            if isinstance(stage.op, ComputeOp) and stage.attach_type == "root" and \
                    stage.scan is None and stage.store_predicate is None:
                bad = check_reads(stage.op.axis + stage.op.reduce_axis, stage.op.body)
                if bad:
                    raise ScheduleError(f"lower: compute {stage.op.name}: {bad}")

    def _bind_scan_buffers(self, stage):
        """A scan's init, update and state are its output buffer, indexed by step."""
        op = stage.op
        for k, out in enumerate(op.outputs):
            buf = self.tensor_buf.get(out)
            if buf is None:
                buf = Buffer(out.name, tuple(out.shape), out.dtype)
                self.tensor_buf[out] = buf
            self.full_bufs.append(buf)
            for t in (op.init[k], op.update[k], op.state_placeholder[k]):
                if t in self.tensor_buf and self.tensor_buf[t] is not buf:
                    raise ScheduleError(f"lower: {t.name} is part of scan {op.name}; pass "
                                        f"the scan's output {out.name} as the argument instead")
                self.tensor_buf[t] = buf

    def _used(self, t):
        return any(_loads(body, t.op) for body in self.bodies.values())

    def stage_buffer(self, stage, value_index=0) -> Buffer:
        t = stage.op.output(value_index)
        buf = self.tensor_buf.get(t)
        if buf is None and isinstance(stage.op, ExternOp):
            buf = self.tensor_buf[t] = Buffer(t.name, tuple(t.shape), t.dtype, stage.scope)
        if buf is None:
            sb = self.bounds[stage]
            shape = tuple(sb.root[iv].extent for iv in stage.op.axis)
            strides = self._strides(stage, shape)
            buf = Buffer(t.name, shape, t.dtype, stage.scope, strides)
            self.tensor_buf[t] = buf
        return buf

    @staticmethod
    def _strides(stage, shape):
        if not stage.align:
            return ()
        strides = [const(1)] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            s = simplify(strides[d + 1] * shape[d + 1])
            if d in stage.align:
                factor, offset = stage.align[d]
                s = simplify(((s + factor - 1 - offset) // factor) * factor + offset)
            strides[d] = s
        return tuple(strides)

    def buffer_of(self, tensor):
        stage = self.sch[tensor] if tensor.op in self.sch.stage_map else None
        if stage is None or isinstance(stage.op, PlaceholderOp):
            return self.tensor_buf[tensor], [const(0)] * len(tensor.shape)
        buf = self.stage_buffer(stage, tensor.value_index)
        if buf in self.full_bufs:               # arguments are stored at their full shape
            return buf, [const(0)] * len(tensor.shape)
        sb = self.bounds[stage]
        return buf, [sb.root[iv].min for iv in stage.op.axis]

    # ------------------------------------------------------------------ one stage
    def stage_nest(self, stage):
        if isinstance(stage.op, ScanOp):
            return self._scan_nest(stage)
        if isinstance(stage.op, ExternOp):
            return self._extern_call(stage)
        if isinstance(stage.op, TensorComputeOp):
            from .tensor_compute import tensor_compute_nest
            return tensor_compute_nest(self, stage)
        if any(a.tensor_intrin is not None for a in stage.iter_attrs.values()):
            from .tensorize import tensorize_nest       # s[T].tensorize: its own lowering
            return tensorize_nest(self, stage)
        op, sb = stage.op, self.bounds[stage]
        leaves = stage.leaf_iter_vars
        offsets = pass_up(stage.relations, {lv: lv.var for lv in leaves}, sb.extents)
        vmap = axis_values(sb.root, offsets, self.ranges)
        conv = _ToBufferLoad(self)
        bufs = [self.stage_buffer(stage, k) for k in range(op.num_outputs)]
        store_idx, data_conds, _, bound_conds = self._store_part(
            stage, {lv: lv.var for lv in leaves}, offsets, vmap, bufs, conv)
        body = self.bodies[stage]
        if isinstance(body[0], Reduce):
            body = bind_combiner(body, vmap)
            if thread_reduce_leaf(stage) is not None:
                return cross_thread_nest(self, stage, body[0], bufs, store_idx, data_conds,
                                         bound_conds, conv, offsets, vmap)
            update, init_pos, init = reduction(self, stage, body[0], bufs, store_idx,
                                               data_conds, conv, offsets, vmap)
        else:
            stores = [BufferStore(b, conv.visit(substitute(v, vmap)), store_idx)
                      for b, v in zip(bufs, body)]
            update = _guard(seq(*stores), data_conds, self.ranges)
            init_pos, init = None, None
        stmt = update
        for pos in range(len(leaves) - 1, -1, -1):
            if pos + 1 == init_pos:
                stmt = seq(init, stmt)
            stmt = self._attached(stage, leaves[pos], stmt)
            stmt = self._loop(stage, leaves[pos], sb.extents[leaves[pos]], stmt)
        if init_pos == 0:
            stmt = seq(init, stmt)
        return stmt

    def _store_part(self, stage, leaf_values, offsets, vmap, bufs, conv):
        """The store index of a stage's outputs at the loop values ``leaf_values`` (with the
        ``offsets`` and axis values ``vmap`` they give) and the conditions on it: those of the
        update (split tails and the store predicate), those of a reduction's init (the
        predicate only where it does not read a reduction axis, as TVM) and the split tails
        alone."""
        op, sb = stage.op, self.bounds[stage]
        if bufs[0] in self.full_bufs:           # arguments are stored at their full shape
            store_idx = tuple(vmap[iv.var] for iv in op.axis)
        else:
            store_idx = tuple(offsets[iv] for iv in op.axis)
        data_conds = []
        for iv in op.axis:
            data_conds += self._guards(iv, offsets[iv], vmap[iv.var], sb)
        data_conds += _inner_split_guards(stage, offsets, sb, reduce=False)
        init_conds = list(data_conds)
        bound_conds = list(data_conds)          # the tails of split axes, no store predicate
        if stage.store_predicate is not None:
            # on thread indices (their loops' variables) or on the stage's own axes (their
            # values from the loops after splits and fuses)
            names = {iv.var: vmap[iv.var] for iv in op.axis}
            names.update({a.bind.var: leaf_values.get(lv, lv.var)
                          for lv, a in stage.iter_attrs.items() if a.bind is not None})
            pred = conv.visit(substitute(stage.store_predicate, names))
            data_conds.append(pred)
            # a predicate on reduction axes guards the update only (as TVM): the init runs
            # before the reduction loops
            reduce_vars = {iv.var for iv in op.reduce_axis}
            reduce_vars |= {lv.var for lv in stage.leaf_iter_vars
                            if lv.iter_type == COMM_REDUCE}
            if not reduce_vars & set(free_vars(pred)):
                init_conds.append(pred)
        return store_idx, data_conds, init_conds, bound_conds

    def _scan_nest(self, stage):
        """The inits, then a serial loop over the steps that computes each step's body."""
        axis = stage.op.scan_axis
        inits = []
        for s in self.sch.stages:
            if s.scan is stage and s.scan_role == "init":
                inits.append(self._with_alloc(s, self.stage_nest(s)))
        for s in self.sch.stages:
            if s.scan is stage and s.scan_role == "update":
                if s.leaf_iter_vars[0] is not s.op.axis[0]:
                    raise ScheduleError(f"stage {s.name}: its time axis {s.op.axis[0].var.name}"
                                        f" must stay the outermost loop (scan {stage.name} runs "
                                        "the steps in order); reorder the other axes inside it")
            elif s.scan is stage and s.scan_role == "body" and s.attach_type == "root":
                raise ScheduleError(f"stage {s.name} reads the state of scan {stage.name}; it "
                                    "must be computed at each step: compute_at it in the update "
                                    "or leave it where the scan puts it")
        step = self._attached(stage, axis, None)
        loop = For(axis.var, const(0), self.bounds[stage].extents[axis], ForKind.SERIAL,
                   step if step is not None else seq(), "", ((SCAN_STEPS, stage.name),))
        return seq(*inits, loop)

    def _extern_call(self, stage):
        """The external function's calls, on whole buffers: Evaluate(tvm_call_packed(...))."""
        op = stage.op
        refs = {}
        for ph, t in zip(op.input_placeholders, op.inputs):
            producer = self.sch[t] if t.op in self.sch.stage_map else None
            if producer is not None and producer.attach_type != "root" and \
                    not isinstance(producer.op, (PlaceholderOp, ScanOp)):
                raise ScheduleError(f"stage {t.op.name} is read by the extern stage {op.name} "
                                    "as a whole buffer; it must be computed at the root "
                                    f"(s[{t.op.name}].compute_root()), not attached or inlined")
            if t not in self.tensor_buf and (producer is None or
                                             isinstance(producer.op, PlaceholderOp)):
                raise ScheduleError(f"lower: placeholder {t.name} is read by the extern stage "
                                    f"{op.name} but is not in the argument list; pass it to "
                                    "te.lower/te.build")
            refs[ph] = BufferRef(self.buffer_of(t)[0])
        for k, ph in enumerate(op.output_placeholders):
            refs[ph] = BufferRef(self.stage_buffer(stage, k))
        calls = []
        for call in op.body:
            if isinstance(call, Stmt):              # loop IR from te.tir.ir_builder
                calls.append(extern_body(call, {ph: ref.buffer for ph, ref in refs.items()}))
                continue
            args = tuple(refs[a] if isinstance(a, ExternBuffer) else a for a in call.args)
            calls.append(Evaluate(type(call)(call.op, args, call.dtype)))
        return seq(*calls)

    def _guards(self, iv, offset, value, sb):
        conds = []
        ext = sb.extents[iv]
        if offset is not iv.var and not can_prove(offset < ext, self.ranges):
            conds.append(offset < ext)
        dom = sb.clip.get(iv)
        if dom is not None:
            if not can_prove(value >= 0, self.ranges):
                conds.append(value >= 0)
            if not can_prove(value < dom, self.ranges):
                conds.append(value < dom)
        return conds

    def _kind(self, stage, lv):
        attr = stage.iter_attrs.get(lv)
        return attr.kind if attr else ForKind.SERIAL

    def _tag(self, stage, lv):
        attr = stage.iter_attrs.get(lv)
        return attr.bind.thread_tag if attr and attr.bind else ""

    def _loop(self, stage, lv, extent, body):
        attr = stage.iter_attrs.get(lv)
        kind = self._kind(stage, lv)
        if kind in (ForKind.VECTORIZED, ForKind.UNROLLED) and not isinstance(extent, IntImm):
            what = "vectorize" if kind == ForKind.VECTORIZED else "unroll"
            raise ScheduleError(f"{what} on stage {stage.name}: axis {lv.var.name} has the "
                                f"non-constant extent {extent}; split it by a constant factor "
                                f"and {what} the inner axis")
        pragmas = tuple(attr.pragmas) if attr else ()
        bind = attr.bind if attr else None
        if bind is not None and bind.dom is not None and isinstance(extent, IntImm) and \
                isinstance(bind.dom.extent, IntImm) and extent.value > bind.dom.extent.value:
            raise ScheduleError(f"stage {stage.name}: axis {lv.var.name} has extent "
                                f"{extent.value} but is bound to {bind.thread_tag} declared with "
                                f"extent {bind.dom.extent.value}; split the axis by "
                                f"{bind.dom.extent.value} (or declare the thread axis without "
                                "a range)")
        return For(lv.var, const(0), extent, kind, body, self._tag(stage, lv), pragmas)

    def _attached(self, stage, lv, stmt):
        children = [s for s in self.sch.stages
                    if s.attach_type == "scope" and s.attach_stage is stage
                    and s.attach_ivar is lv]
        for child in reversed(children):
            stmt = self._with_alloc(child, seq(self.stage_nest(child), stmt))
        return stmt

    def _with_alloc(self, stage, stmt):
        for k in range(stage.op.num_outputs - 1, -1, -1):
            buf = self.stage_buffer(stage, k)
            if buf not in self.outputs and (stage.scan_role is None or
                                            buf not in self.full_bufs):
                stmt = Allocate(buf, stmt, ("double_buffer",) if stage.double_buffered else ())
        return stmt

    # ------------------------------------------------------------------ whole function
    def build(self) -> PrimFunc:
        roots = [s for s in self.sch.stages
                 if isinstance(s.op, (ComputeOp, ScanOp, ExternOp)) and s.attach_type == "root"]
        for s in self.sch.stages:
            if s.attach_type == "scope" and s.attach_stage.attach_type == "inline":
                raise ScheduleError(f"compute_at: stage {s.name} is attached to "
                                    f"{s.attach_stage.name}, which is inlined")
            if s.double_buffered and s.attach_type != "scope":
                raise ScheduleError(f"double_buffer on stage {s.name}: the stage is not computed "
                                    "at a loop; attach it to the loop whose iterations should "
                                    "overlap, e.g. s[AA].compute_at(s[CL], ko) for the outer "
                                    "reduction loop ko")
        stmt = None
        for stage in reversed(roots):
            stmt = self._with_alloc(stage, seq(self.stage_nest(stage), stmt))
        tensor_map = {t: b for t, b in self.tensor_buf.items() if b in self.params}
        if stmt is not None and any(a.bind is not None for st in self.sch.stages
                                    for a in st.iter_attrs.values()):
            from .thread_vars import unify_thread_vars
            stmt = unify_thread_vars(stmt)
        return PrimFunc(self.name, self.params, stmt if stmt is not None else seq(),
                        tensor_map, tuple(self.outputs))


def schedule_ops(sch, bounds, bodies, args, name) -> PrimFunc:
    """Build the loop nest of schedule ``sch`` as a PrimFunc over ``args``."""
    return _Builder(sch, bounds, bodies, args, name).build()


def ScheduleOps(sch, bounds=None, debug_keep_trivial_loop=False):     # noqa: N802
    """The loop nest of ``sch`` before the lowering passes (TVM's ``te.schedule.ScheduleOps``):
    its statement, over the placeholders it reads and the schedule's outputs. ``bounds`` is
    ``te.schedule.InferBound(sch)`` (computed when omitted)."""
    from .bound import InferBound
    if getattr(bounds, "stage_bounds", None) is None:
        bounds = InferBound(sch)
    states = {t for st in sch.stages if isinstance(st.op, ScanOp)
              for t in st.op.state_placeholder}
    args = [t for st in sch.stages if isinstance(st.op, PlaceholderOp)
            for t in st.op.outputs if t not in states]
    args += [t for op in sch.outputs for t in op.outputs]
    return schedule_ops(sch, bounds.stage_bounds, bounds.bodies, args, "main").body

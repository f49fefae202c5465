"""The Schedule: stages in dependency order, and the primitives that rewrite the te graph.

``cache_read``, ``cache_write`` and ``rfactor`` add a stage and replace the operations that read
the rewritten tensor; the replacements keep their IterVars, so earlier relations stay valid and
``s[T]`` still finds a stage by the tensor the user holds.
"""
from __future__ import annotations

import copy
import dataclasses
import functools

from te.expr import IntImm, ProducerLoad, Reduce, Var
from te.intrin import if_then_else
from te.functor import ExprMutator, Substitute, substitute
from te.tensor import COMM_REDUCE, DATA_PAR, ComputeOp, IterVar, Operation, Range, \
    Tensor, _REDUCE_VARS
from te.expr import Min, all_, binary, cast, const

from te.scan import ScanOp
from te.tensor_compute import TensorComputeOp

from .attach import Group, legalize_attach
from .stage import Fuse, ScheduleError, Singleton, Split, Stage, check_scope


def _as_ops(ops):
    if not isinstance(ops, (list, tuple)):
        ops = [ops]
    out = []
    for o in ops:
        if isinstance(o, Tensor):
            o = o.op
        if not isinstance(o, Operation):
            raise ScheduleError(f"create_schedule expects operations or tensors, got {o!r}")
        out.append(o)
    return out


def _post_order(ops):
    order, seen = [], set()
    stack = [(op, False) for op in reversed(ops)]
    while stack:
        op, done = stack.pop()
        if done:
            if op not in seen:
                seen.add(op)
                order.append(op)
            continue
        if op in seen:
            continue
        stack.append((op, True))
        for t in reversed(op.input_tensors()):
            if t.op not in seen:
                stack.append((t.op, False))
    return order


class _ReplaceTensors(ExprMutator):
    def __init__(self, tmap):
        self.tmap = tmap

    def visit_ProducerLoad(self, node):
        node = self.generic_visit(node)
        new = self.tmap.get(node.producer)
        return node if new is None else ProducerLoad(new, node.indices, node.dtype)


class _DeepSubstitute(Substitute):
    """Replaces variables also where a reduction keeps expressions outside its source: the
    ranges of its axes (``te.reduce_axis((0, i))``: a triangular sum) and its combiner's
    identity and result (a ``comm_reducer`` whose functions mention a loop variable), as
    TVM's VarReplacer. An axis or combiner that does not change stays the same object."""

    def __init__(self, vmap, range_vmap=None):
        super().__init__(vmap)
        self.axes, self.combiners = {}, {}
        self.ranges = Substitute(range_vmap) if range_vmap is not None else self

    def _axis(self, iv):
        new = self.axes.get(iv)
        if new is None:
            lo, ext = self.ranges.visit(iv.dom.min), self.ranges.visit(iv.dom.extent)
            new = iv if lo is iv.dom.min and ext is iv.dom.extent else \
                IterVar(Range(lo, ext), iv.var, iv.iter_type, iv.thread_tag)
            self.axes[iv] = new
        return new

    def _combiner(self, c):
        new = self.combiners.get(c)
        if new is None:
            ident = tuple(self.visit(x) for x in c.identity)
            result = tuple(self.visit(x) for x in c.result)
            same = all(a is b for a, b in zip(ident + result, c.identity + c.result))
            new = c if same else dataclasses.replace(c, identity=ident, result=result)
            self.combiners[c] = new
        return new

    def visit_Reduce(self, node):
        node = self.generic_visit(node)
        axis = tuple(self._axis(iv) for iv in node.axis)
        combiner = self._combiner(node.combiner)
        if combiner is node.combiner and all(a is b for a, b in zip(axis, node.axis)):
            return node
        return dataclasses.replace(node, axis=axis, combiner=combiner)


def _min(a, b):
    return binary(Min, a, b)


def deep_substitute(exprs, vmap, range_vmap=None) -> tuple:
    """``exprs`` (a compute's bodies) with Vars replaced per ``vmap``, inside reductions'
    axis ranges (per ``range_vmap`` where given) and combiners too (one replacement object
    per axis and combiner)."""
    mut = _DeepSubstitute(vmap, range_vmap)
    return tuple(mut.visit(e) for e in exprs)


def _with_body(op, body, **changes):
    if isinstance(op, TensorComputeOp) and not changes:    # the call on other tensors
        return op.replace_body(body)
    return ComputeOp(op.name, changes.get("axis", op.axis),
                     changes.get("reduce_axis", op.reduce_axis), tuple(body), op.tag, op.attrs)


_STAGE_STATE = ("op", "all_iter_vars", "leaf_iter_vars", "iter_attrs", "relations")


def _shallow(value):
    """A copy of a list or dict field (operations and nodes are immutable: kept as they are)."""
    return copy.copy(value) if isinstance(value, (list, dict)) else value


def _atomic(method):
    """A graph rewrite that leaves the schedule as it was when it raises (a stage inserted
    before a later check refused the rewrite is taken out again)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        saved = (list(self.stages), dict(self.stage_map), list(self.outputs),
                 {st: {k: _shallow(getattr(st, k)) for k in _STAGE_STATE}
                  for st in self.stages})
        try:
            return method(self, *args, **kwargs)
        except Exception:
            self.stages, self.stage_map, self.outputs, states = saved
            for st, state in states.items():
                for k, v in state.items():
                    setattr(st, k, v)
            raise
    return run


class Schedule:
    """A schedule for a set of output operations; ``s[T]`` is the stage of tensor T."""

    def __init__(self, ops):
        self.outputs = _as_ops(ops)
        self.stages = []
        self.stage_map = {}
        for op in _post_order(self.outputs):
            stage = Stage(op, self)
            self.stages.append(stage)
            self.stage_map[op] = stage
        for op in self.outputs:
            self.stage_map[op].is_output = True
        for stage in list(self.stages):
            if isinstance(stage.op, ScanOp):
                self._place_scan(stage)

    def _place_scan(self, scan):
        """The inits run before the steps; the update and the computed producers that read a
        state (the step's body) run at every step, inside the scan's time loop."""
        op = scan.op
        for role, tensors in (("init", op.init), ("update", op.update)):
            for t in tensors:
                stage = self.stage_map[t.op]
                if stage.scan is not None and stage.scan is not scan:
                    raise ScheduleError(f"stage {stage.name} belongs to two scans ("
                                        f"{stage.scan.name}, {scan.name}); give each scan its "
                                        "own init and update")
                stage.scan, stage.scan_role = scan, role
                stage.attach_type = "scope" if role == "update" else "scan"
                stage.attach_stage = scan
                stage.attach_ivar = op.scan_axis if role == "update" else None
        for body in op.body_ops():
            stage = self.stage_map[body]
            if stage.scan_role is None:
                stage.scan, stage.scan_role = scan, "body"
                stage.compute_root()

    def __getitem__(self, key) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        stage = self.stage_map.get(op)
        if stage is None:
            name = getattr(key, "name", repr(key))
            raise ScheduleError(f"{name} is not part of this schedule; create the schedule from "
                                "the outputs that use it (te.create_schedule(out.op))")
        return stage

    def current(self, tensor: Tensor) -> Tensor:
        """The tensor that stands for ``tensor`` after graph rewrites."""
        return self[tensor].op.output(tensor.value_index)

    def readers(self, stage) -> list:
        outs = set(stage.op.outputs)
        return [s for s in self.stages
                if isinstance(s.op, ComputeOp) and outs & set(s.op.input_tensors())]

    def reads_transitively(self, consumer, producer) -> bool:
        return consumer.op.reads(producer.op)

    def create_group(self, outputs, inputs, include_inputs=False):
        """TVM's ``create_group``: the stages from ``inputs`` (excluded unless
        ``include_inputs``) up to ``outputs`` as one Group, which ``compute_at`` places as a
        whole: each member left at the root is computed where the group is. A group made of
        stages of an earlier group contains that group."""
        outs = [self[t] for t in (outputs if isinstance(outputs, (list, tuple)) else [outputs])]
        ins = {self[t].op for t in (inputs if isinstance(inputs, (list, tuple)) else [inputs])}
        members, todo = [], list(outs)
        while todo:
            st = todo.pop()
            if st in members or (st.op in ins and not include_inputs):
                continue
            members.append(st)
            if st.op not in ins:
                todo += [self[t] for t in st.op.input_tensors() if t.op in self.stage_map]
        group = Group(self, [st for st in self.stages if st in members])
        for st in group.members:
            top = st
            while top.group is not None and top.group is not group:
                top = top.group
            if top is st:
                st.group = group
            elif top is not group and all(m in members for m in top.members):
                top.group = group           # a group inside the new one
        return group

    def normalize(self):
        """TVM's ``Schedule.normalize``, returned for chaining: attachments to axes that were
        split or fused afterwards follow them (``legalize_attach``; lowering does it too).

        TVM also rebases every loop to start at 0 before bound inference; here loop nests
        are built from zero-based loops already, so there is nothing to rebase.
        """
        legalize_attach(self)
        return self

    # ------------------------------------------------------------------ graph rewriting
    def _replace_op(self, stage, new_op, reads_only=False):
        """Give ``stage`` a new operation and update every reader of its outputs
        (``reads_only``: the new operation only reads other tensors, as cache_read makes it;
        a scan's init or update may change so)."""
        if not reads_only:
            _refuse_scan_rewrite(stage)
        tmap = dict(zip(stage.op.outputs, new_op.outputs))
        if stage.op in self.outputs:
            self.outputs[self.outputs.index(stage.op)] = new_op
        stage.op = new_op
        self.stage_map[new_op] = stage
        self._propagate(tmap)

    def _propagate(self, tmap):
        for s in self.stages:           # producers first: a scan after its init and update
            if isinstance(s.op, ScanOp):
                self._propagate_scan(s, tmap)
                continue
            if not isinstance(s.op, ComputeOp):
                continue
            mut = _ReplaceTensors(tmap)
            body = tuple(mut.visit(b) for b in s.op.body)
            if any(a is not b for a, b in zip(body, s.op.body)):
                new_op = _with_body(s.op, body)
                tmap.update(zip(s.op.outputs, new_op.outputs))
                if s.op in self.outputs:
                    self.outputs[self.outputs.index(s.op)] = new_op
                s.op = new_op
                self.stage_map[new_op] = s

    def _propagate_scan(self, s, tmap):
        """A scan whose init, update or inputs were rewritten (their readers now read a
        cache) gets a new operation over the new tensors."""
        op = s.op
        new = {k: tuple(tmap.get(t, t) for t in getattr(op, k))
               for k in ("init", "update", "inputs")}
        if all(all(a is b for a, b in zip(new[k], getattr(op, k))) for k in new):
            return
        new_op = dataclasses.replace(op, **new)
        tmap.update(zip(op.outputs, new_op.outputs))
        if op in self.outputs:
            self.outputs[self.outputs.index(op)] = new_op
        s.op = new_op
        self.stage_map[new_op] = s

    def _insert_stage(self, op, before) -> Stage:
        stage = Stage(op, self)
        self.stages.insert(self.stages.index(before), stage)
        self.stage_map[op] = stage
        return stage

    @_atomic
    def cache_read(self, tensor, scope, readers):
        """Copy ``tensor`` into a ``scope`` buffer that ``readers`` read instead."""
        from te.tensor import compute
        if not isinstance(tensor, Tensor):
            raise ScheduleError("cache_read: the first argument must be a tensor")
        check_scope(scope, "cache_read")
        src = self.current(tensor)
        if not isinstance(readers, (list, tuple)):
            readers = [readers]
        if not readers:
            raise ScheduleError(f"cache_read of {src.name}: readers is empty; pass the stages "
                                f"that read {src.name} (e.g. [C] or [C.op])")
        reader_stages = [self[r] for r in readers]
        for rs in reader_stages:
            if src not in rs.op.input_tensors():
                raise ScheduleError(f"cache_read: stage {rs.name} does not read {src.name}; "
                                    "pass the stages that read the tensor as readers")
        names = [f"ax{k}" for k in range(len(src.shape))]
        fn = eval(f"lambda {', '.join(names)}: src[{', '.join(names)}]", {"src": src})
        cache = compute(src.shape, fn, name=f"{src.name}.{scope}")
        first = min(reader_stages, key=self.stages.index)
        stage = self._insert_stage(cache.op, first)
        stage.scope = scope
        for rs in reader_stages:
            mut = _ReplaceTensors({src: cache})
            self._replace_op(rs, _with_body(rs.op, [mut.visit(b) for b in rs.op.body]),
                             reads_only=True)
        return cache

    @_atomic
    def cache_write(self, tensor, scope):
        """Compute ``tensor`` into a ``scope`` buffer, then copy it to the original.

        As TVM, a stage already split, fused or reordered is relaid out: the cache stage's
        axes are the stage's data-parallel leaf axes, in their loop order and with their
        extents (a split that does not divide its axis computes a guarded tail), and the
        original stage becomes a copy that reads the cache at the leaf indices. The
        reduction axes stay the same axes (``s[CC].split(k, ...)`` after cache_write)."""
        if isinstance(tensor, (list, tuple)):
            tensor = tensor[0]
        stage = self[tensor]
        stage._need_compute("cache_write")
        check_scope(scope, "cache_write")
        op = stage.op
        if isinstance(op, TensorComputeOp):
            return self._cache_write_call(stage, scope)
        roots = set(op.axis)
        for lv in stage.leaf_iter_vars:
            if lv.iter_type == COMM_REDUCE and lv not in op.reduce_axis:
                raise ScheduleError(f"cache_write on stage {stage.name}: its reduction axis "
                                    f"was split or fused ({lv.var.name}); the cache is laid "
                                    "out by the data-parallel axes only (as TVM); call "
                                    "cache_write first and split the reduction of the cache "
                                    "stage instead")
        data_rels = [r for r in stage.relations if _rel_is_data(r)]
        leaves = [lv for lv in stage.leaf_iter_vars if lv.iter_type != COMM_REDUCE]
        from .bound import pass_down, pass_up
        extents = pass_down(data_rels, {iv: iv.dom.extent for iv in op.axis})
        new_axis, leaf_vals = [], {}
        for lv in leaves:
            name = lv.var.name + "_c"
            niv = IterVar(Range(const(0), extents[lv]), Var(name, lv.var.dtype), DATA_PAR)
            new_axis.append(niv)
            leaf_vals[lv] = niv.var
        plain = [dataclasses.replace(r, tail="guard") if isinstance(r, Split) else r
                 for r in data_rels]        # the cache has no shifted tail: its own layout
        offsets = pass_up(plain, leaf_vals, extents)
        vmap = {iv.var: offsets[iv] for iv in op.axis}
        conds = [offsets[iv] < iv.dom.extent for iv in op.axis
                 if offsets[iv] is not leaf_vals.get(iv)]
        conds += [offsets[r.parent] < extents[r.parent] for r in plain
                  if isinstance(r, Split) and r.parent not in roots]
        # a reduction range in the tail of a split that passes the axis's end: clamped (the
        # update is skipped there), so that the reduction stays inside the axis's range
        clamped = {v: val if val is v else _min(val, cast(v.dtype, iv.dom.extent - 1))
                   for iv in op.axis for v, val in [(iv.var, vmap[iv.var])]}
        body = deep_substitute(op.body, vmap, clamped)
        if conds:
            cond = all_(*conds)
            if isinstance(body[0], Reduce):
                body = tuple(dataclasses.replace(b, condition=all_(cond, b.condition))
                             for b in body)
            else:       # if_then_else: the body may read out of bounds in the padded tail
                body = tuple(if_then_else(cond, b, const(0, b.dtype)) for b in body)
        new_reduce = tuple(body[0].axis) if isinstance(body[0], Reduce) else ()
        cache_op = ComputeOp(f"{op.name}.{scope}", tuple(new_axis), new_reduce, body,
                             op.tag, op.attrs)
        cstage = self._insert_stage(cache_op, stage)
        cstage.scope = scope
        index = _pass_down_index(data_rels, {iv: iv.var for iv in op.axis}, extents)
        idx = tuple(index[lv] for lv in leaves)
        copy = [ProducerLoad(t, idx, t.dtype) for t in cache_op.outputs]
        stage.all_iter_vars = list(op.axis)
        stage.leaf_iter_vars = list(op.axis)
        stage.relations = []
        stage.iter_attrs = {}
        self._replace_op(stage, _with_body(op, copy, reduce_axis=()))
        outs = cache_op.outputs
        return outs[0] if len(outs) == 1 else list(outs)

    def _cache_write_call(self, stage, scope):
        """cache_write of a tensor intrinsic's call (TVM's TensorComputeOp): the call
        writes the cache; the stage copies it (over every dimension)."""
        op = stage.op
        if stage.relations or stage.leaf_iter_vars != stage.all_iter_vars:
            raise ScheduleError(f"cache_write on stage {stage.name}: it calls tensor "
                                f"intrinsic {op.intrin.name} and was split, fused or "
                                "reordered already; call cache_write first and schedule the "
                                "cache stage")
        cache_op = op.renamed(f"{op.name}.{scope}")
        cstage = self._insert_stage(cache_op, stage)
        cstage.scope = scope
        axis = tuple(iv if iv.iter_type == DATA_PAR else IterVar(iv.dom, iv.var, DATA_PAR)
                     for iv in op.axis)
        copy = [ProducerLoad(t, tuple(iv.var for iv in axis), t.dtype)
                for t in cache_op.outputs]
        plain = ComputeOp(op.name, axis, (), tuple(copy), op.tag, op.attrs)
        stage.all_iter_vars = list(plain.axis)
        stage.leaf_iter_vars = list(plain.axis)
        stage.iter_attrs = {}
        self._replace_op(stage, plain)
        return cache_op.output(0)

    @_atomic
    def rfactor(self, tensor, axis, factor_axis=0):
        """Factor the reduction over ``axis`` into a new stage that keeps it as a data axis."""
        from .bound import leaf_extents, pass_up
        stage = self[tensor]
        stage._need_compute("rfactor")
        op = stage.op
        if not op.is_reduction:
            raise ScheduleError(f"rfactor on stage {stage.name}: it is not a reduction")
        stage._leaf(axis, "rfactor")
        if axis.iter_type != COMM_REDUCE:
            raise ScheduleError(f"rfactor on stage {stage.name}: {axis.var.name} is not a "
                                "reduction axis; split the reduce axis and pass one of its parts")
        if not 0 <= factor_axis <= len(op.axis):
            raise ScheduleError(f"rfactor on stage {stage.name}: factor_axis must be in "
                                f"[0, {len(op.axis)}], got {factor_axis}")
        reduce_rels = [r for r in stage.relations if _rel_is_reduce(r)]
        extents = leaf_extents(op, reduce_rels)
        leaves = [iv for iv in stage.leaf_iter_vars if iv.iter_type == COMM_REDUCE]
        # the factored stage: data axes (+ the factor axis), remaining reduce leaves
        data_axis, vmap = [], {}
        for iv in op.axis:
            niv = IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), DATA_PAR)
            vmap[iv.var] = niv.var
            data_axis.append(niv)
        fiv = IterVar(Range(const(0), extents[axis]), Var(axis.var.name + "_v", axis.var.dtype),
                      DATA_PAR)
        data_axis.insert(factor_axis, fiv)
        leaf_vals, new_reduce = {axis: fiv.var}, []
        # the remaining reduction axes keep their variables (an untouched root axis stays
        # the same IterVar), in the order they were made, as TVM's rfactor
        for iv in [v for v in stage.all_iter_vars if v in leaves]:
            if iv is axis:
                continue
            root = iv in op.reduce_axis and isinstance(iv.dom.min, IntImm) and \
                iv.dom.min.value == 0
            niv = iv if root else IterVar(Range(const(0), extents[iv]), iv.var, COMM_REDUCE)
            _REDUCE_VARS.add(niv.var)
            leaf_vals[iv] = niv.var
            new_reduce.append(niv)
        offsets = pass_up(reduce_rels, leaf_vals, extents)
        conds = []
        for root in op.reduce_axis:
            vmap[root.var] = cast(root.var.dtype, root.dom.min + offsets[root])
            if offsets[root] is not leaf_vals.get(root):
                conds.append(offsets[root] < root.dom.extent)
        for rel in reduce_rels:     # a split of a split axis must not spill into the next value
            if isinstance(rel, Split) and rel.parent not in op.reduce_axis:
                conds.append(offsets[rel.parent] < extents[rel.parent])
        red = op.body[0]
        cond = all_(substitute(red.condition, vmap), *conds)
        sources = tuple(substitute(s, vmap) for s in red.source)
        if new_reduce:
            bodies = [Reduce(red.combiner, sources, tuple(new_reduce), cond, k, b.dtype)
                      for k, b in enumerate(op.body)]
        else:
            # if_then_else, not select: the source may read out of bounds where cond fails
            bodies = [if_then_else(cond, sources[k], red.combiner.identity[k])
                      for k in range(len(op.body))]
        rf_op = ComputeOp(f"{op.name}.rf", tuple(data_axis), tuple(new_reduce), tuple(bodies),
                          op.tag, op.attrs)
        self._insert_stage(rf_op, stage)
        # the original stage now reduces the factored results over the factor axis
        rv = IterVar(Range(const(0), extents[axis]), Var(axis.var.name + "_v", axis.var.dtype),
                     COMM_REDUCE)
        _REDUCE_VARS.add(rv.var)
        idx = [iv.var for iv in op.axis]
        idx.insert(factor_axis, rv.var)
        loads = tuple(t[tuple(idx)] for t in rf_op.outputs)
        new_bodies = [Reduce(red.combiner, loads, (rv,), const(True), k, b.dtype)
                      for k, b in enumerate(op.body)]
        stage.relations = [r for r in stage.relations if not _rel_is_reduce(r)]
        keep = [iv for iv in stage.leaf_iter_vars if iv.iter_type != COMM_REDUCE]
        stage.leaf_iter_vars = keep + [rv]
        stage.all_iter_vars = [iv for iv in stage.all_iter_vars
                               if iv.iter_type != COMM_REDUCE] + [rv]
        stage.iter_attrs = {k: v for k, v in stage.iter_attrs.items() if k in stage.all_iter_vars}
        self._replace_op(stage, _with_body(op, new_bodies, reduce_axis=(rv,)))
        outs = rf_op.outputs
        return outs[0] if len(outs) == 1 else list(outs)


def _refuse_scan_rewrite(stage):
    if stage.scan_role in ("init", "update"):
        raise ScheduleError(f"stage {stage.name} is the {stage.scan_role} of scan "
                            f"{stage.scan.name}: cache_write and rfactor cannot rewrite it "
                            "(cache_read of what it reads can); declare the cached or "
                            "factored stage in te instead")


def _rel_is_reduce(rel):
    if isinstance(rel, Singleton):
        return False
    first = rel.parent if isinstance(rel, Split) else rel.outer
    return first.iter_type == COMM_REDUCE


def _rel_is_data(rel):
    """A relation among data-parallel axes only (a data axis fused with a reduction axis
    makes a reduction axis)."""
    if isinstance(rel, Singleton):
        return True
    if isinstance(rel, Fuse):
        return rel.fused.iter_type != COMM_REDUCE
    return rel.parent.iter_type != COMM_REDUCE


def _pass_down_index(relations, values, extents) -> dict:
    """The leaf values of given root values (TVM's PassDownIndex): a split axis's pieces are
    ``v // inner_extent`` and ``v % inner_extent``, a fused axis ``outer * inner_extent +
    inner``, a singleton 0."""
    val = dict(values)
    for rel in relations:
        if isinstance(rel, Split):
            f = extents[rel.inner]
            val[rel.outer] = val[rel.parent] // f
            val[rel.inner] = val[rel.parent] % f
        elif isinstance(rel, Fuse):
            t = rel.fused.var.dtype
            val[rel.fused] = cast(t, val[rel.outer]) * cast(t, extents[rel.inner]) + \
                cast(t, val[rel.inner])
        elif isinstance(rel, Singleton):
            val[rel.iter] = const(0, rel.iter.var.dtype)
    return val


def create_schedule(ops) -> Schedule:
    """A default schedule (every stage computed at the root, in order) for ``ops``."""
    return Schedule(ops)

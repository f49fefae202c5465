"""``s[C].tensorize(axis, intrin)``: the loop nest from ``axis`` inward is replaced by the body
of a tensor intrinsic (``te.decl_tensor_intrin``), after checking that it computes the
intrinsic's declaration.

The match (TVM's ``VerifyTensorizeBody``): the trailing data axes and the trailing reduction
axes of the stage correspond, in order, to the intrinsic's axes; each covers, inside the
nest, exactly one leaf loop whose extent is the intrinsic axis's extent (the other axes are
wholly outside); the stage's body, with its axes renamed to the intrinsic's and each input's
indices taken relative to the region that the nest reads, is the intrinsic's body. Inputs
correspond in the order in which the bodies first read them.

The binding (TVM's ``buffer_bind_scope``): each buffer of the intrinsic gets the element
offset of its region in the real buffer and the real strides (its stride variables are bound;
constant or compact strides must agree); every vload / vstore / access_ptr of the body must
stay inside that region (proved here), and the region lies inside the tensor because the
splits that make the nest divide their axes (refused otherwise). The touched first and last
elements stay in the IR as loads that the bound checks see (the body's rewriting:
tensorize_body.py).

Reductions (TVM's semantics): when every reduction loop is inside the nest, ``body`` computes
the whole result; otherwise ``reduce_reset`` runs in an init nest before the outer reduction
loops and ``reduce_update`` inside them (without a reset: ``body`` on the first iteration of
the outer reduction loops, ``reduce_update`` on the others).
"""
from __future__ import annotations

from te.expr import Call, IntImm, ProducerLoad, Reduce, Var, all_, const
from te.functor import ExprMutator, free_vars, substitute
from te.tensor import COMM_REDUCE

from .bound import axis_values, pass_up
from .functor import post_order_visit
from .functor import substitute as ir_substitute
from .ir import BufferLoad, BufferRef, For, ForKind, IfThenElse, seq
from .simplify import can_prove, equal, simplify
from .stage import ScheduleError
from .tensorize_body import Retarget, simplify_vectors


def tensorize_nest(builder, stage):
    """The loop nest of ``stage`` with its tensorized part replaced by the intrinsic."""
    return _Tensorize(builder, stage).nest()


class _Tensorize:
    scalars = {}        # the intrinsic's scalar_params bound (a TensorComputeOp's; none here)

    def __init__(self, b, stage):
        self.b, self.stage = b, stage
        self.sb = b.bounds[stage]
        leaves = stage.leaf_iter_vars
        self.tloc = next(p for p, lv in enumerate(leaves)
                         if stage.iter_attrs.get(lv) and stage.iter_attrs[lv].tensor_intrin)
        self.axis = leaves[self.tloc]
        self.intrin = stage.iter_attrs[self.axis].tensor_intrin
        self.outer, self.inner = leaves[:self.tloc], leaves[self.tloc:]

    def fail(self, msg):
        raise ScheduleError(f"tensorize on stage {self.stage.name}, axis {self.axis.var.name} "
                            f"(intrinsic {self.intrin.name}): {msg}")

    # ------------------------------------------------------------------ the match
    def _axes(self):
        """Root axis -> (inner leaf or None, the intrinsic's IterVar or None), checked."""
        stage, sb, iop = self.stage, self.sb, self.intrin.op
        zero = {lv: const(0, lv.var.dtype) for lv in self.inner}
        full = pass_up(stage.relations, {lv: lv.var for lv in stage.leaf_iter_vars}, sb.extents)
        base = pass_up(stage.relations, {**{lv: lv.var for lv in self.outer}, **zero},
                       sb.extents)
        inner_vars = {lv.var: lv for lv in self.inner}
        self.full, self.base = full, base
        mapping, used = {}, set()
        for kind, roots, iaxes in (("data", stage.op.axis, iop.axis),
                                   ("reduction", stage.op.reduce_axis, iop.reduce_axis)):
            if len(roots) < len(iaxes):
                self.fail(f"the intrinsic has {len(iaxes)} {kind} axes, the stage only "
                          f"{len(roots)}")
            start = len(roots) - len(iaxes)
            for pos, iv in enumerate(roots):
                if set(free_vars(base[iv])) & set(inner_vars):
                    self.fail(f"axis {iv.var.name} is fused or split more than once inside "
                              "the tensorized nest; tensorize a nest of plain leaf loops")
                d = simplify(full[iv] - base[iv])
                leaf = None
                if isinstance(d, Var) and d in inner_vars:
                    leaf = inner_vars[d]
                elif not (isinstance(d, IntImm) and d.value == 0):
                    self.fail(f"axis {iv.var.name} is {full[iv]} inside the nest; each axis "
                              "must be one leaf loop there (or wholly outside)")
                if leaf is not None:
                    used.add(leaf)
                ext = sb.extents[leaf] if leaf is not None else const(1)
                target = iaxes[pos - start] if pos >= start else None
                want = target.dom.extent if target is not None else const(1)
                if not (isinstance(ext, IntImm) and isinstance(want, IntImm) and
                        ext.value == want.value):
                    what = (f"the intrinsic's {kind} axis {target.var.name} has {want}"
                            if target is not None else
                            f"the intrinsic has no {kind} axis for it (it has "
                            f"{len(iaxes)}, matched with the stage's last ones)")
                    self.fail(f"{kind} axis {iv.var.name} covers {ext} values inside the "
                              f"tensorized nest, but {what}; split it so that the inner loop "
                              "has the intrinsic's extent")
                mapping[iv] = (leaf, target)
        unused = [lv.var.name for lv in self.inner if lv not in used]
        if unused:
            self.fail(f"loops {', '.join(unused)} inside the nest do not correspond to axes")
        return mapping

    def _check_divides(self, mapping):
        """Guards of the stage that mention the nest's loops must hold everywhere in it (the
        intrinsic computes whole regions); the others guard the intrinsic call."""
        b, stage, sb = self.b, self.stage, self.sb
        from .build_loops import _inner_split_guards
        vmap = axis_values(sb.root, self.full, b.ranges)
        conds = []
        for iv in list(stage.op.axis) + list(stage.op.reduce_axis):
            conds += b._guards(iv, self.full[iv], vmap[iv.var], sb)
        conds += _inner_split_guards(stage, self.full, sb, reduce=False)
        conds += _inner_split_guards(stage, self.full, sb, reduce=True)
        inner = {lv.var: lv for lv in self.inner}
        outer_conds, red_conds = [], []
        for c in conds:
            vs = [v for v in free_vars(c) if v in inner]
            if not vs:
                reduce_vars = {lv.var for lv in self.outer if lv.iter_type == COMM_REDUCE}
                (red_conds if set(free_vars(c)) & reduce_vars else outer_conds).append(c)
                continue
            for corner in (0, 1):
                at = {v: const(0 if corner == 0 else sb.extents[inner[v]].value - 1, v.dtype)
                      for v in vs}
                if not can_prove(substitute(c, at), b.ranges):
                    names = ", ".join(inner[v].var.name for v in vs)
                    self.fail(f"the split that makes loop {names} does not divide its axis "
                              f"(the guard {c} would cut the intrinsic's region); choose a "
                              "factor that divides the axis")
        return outer_conds, red_conds

    def _inputs(self, body):
        order = []

        def visit(node):
            if isinstance(node, ProducerLoad) and node.producer not in order:
                order.append(node.producer)
        for e in body:
            post_order_visit(e, visit)
        return order

    def match(self):
        """Check the body; the regions {tensor: (begin, extents)} in global indices."""
        stage, intrin = self.stage, self.intrin
        if stage.store_predicate is not None:
            self.fail("the stage has a store predicate, which cannot guard an intrinsic")
        body = self.b.bodies[stage]
        if len(body) != 1 or intrin.op.num_outputs != 1:
            self.fail("only single-output computes can be tensorized")
        mapping = self._axes()
        self.mapping = mapping
        self.ranges = dict(self.b.ranges)        # and the intrinsic's axes
        self.ranges.update({t.var: (0, t.dom.extent.value - 1)
                            for _, t in mapping.values() if t is not None})
        rename = {}             # the stage's values, in the intrinsic's variables
        for iv, (leaf, target) in mapping.items():
            rename[iv.var] = self.sb.root[iv].min + self.base[iv] + \
                (target.var if target is not None else 0)
        self.rename = {k: simplify(v, self.ranges) for k, v in rename.items()}
        zero = {t.var: const(0, t.var.dtype) for _, t in mapping.values() if t is not None}
        top = {t.var: const(t.dom.extent.value - 1, t.var.dtype)
               for _, t in mapping.values() if t is not None}
        tensors = self._inputs(body)
        if len(tensors) != len(intrin.inputs):
            self.fail(f"the stage reads {len(tensors)} tensors "
                      f"({', '.join(t.name for t in tensors)}), the intrinsic "
                      f"{len(intrin.inputs)} ({', '.join(t.name for t in intrin.inputs)})")
        first_idx = {}

        def first(node):
            if isinstance(node, ProducerLoad):
                first_idx.setdefault(node.producer, node.indices)
        for e in body:
            post_order_visit(e, first)
        for e in intrin.op.body:
            post_order_visit(e, first)
        regions = {}
        for t, p in zip(tensors, intrin.inputs):
            if t.dtype != p.dtype:
                self.fail(f"input {t.name} has dtype {t.dtype}, the intrinsic's {p.name} has "
                          f"{p.dtype}")
            if len(t.shape) < len(p.shape):
                self.fail(f"input {t.name} has {len(t.shape)} dimensions, fewer than the "
                          f"intrinsic's {p.name} ({len(p.shape)})")
            lead = len(t.shape) - len(p.shape)
            s_idx = [simplify(substitute(i, self.rename), self.ranges)
                     for i in first_idx[t]]
            p_idx = [simplify(substitute(i, zero)) for i in first_idx[p]]
            begin = [simplify(substitute(i, zero), self.ranges) for i in s_idx]
            begin = begin[:lead] + [simplify(bg - pi) for bg, pi in zip(begin[lead:], p_idx)]
            last = [simplify(substitute(i, top), self.ranges) for i in s_idx]
            for d in range(lead):
                if not can_prove(last[d] - begin[d] <= 0):
                    self.fail(f"input {t.name}: dimension {d} varies inside the nest, but the "
                              f"intrinsic's {p.name} has only its last {len(p.shape)} "
                              "dimensions")
            regions[t] = (begin, (const(1),) * lead + tuple(p.shape), p)
        self._compare(body[0], intrin.op.body[0], regions)
        out = stage.op.output(0)
        iout = intrin.op.output(0)
        obegin = [simplify(substitute(self.rename[iv.var], zero), self.ranges)
                  for iv in stage.op.axis]
        lead = len(stage.op.axis) - len(intrin.op.axis)
        regions[out] = (obegin, (const(1),) * lead + tuple(iout.shape), iout)
        return regions

    def matched_body(self, se, ie, regions):
        """The stage's body ``se`` as the intrinsic sees it (TVM's MatchTensorizeBody): its
        axes renamed to the intrinsic's, its inputs the intrinsic's placeholders indexed
        relative to the regions."""
        prep = self._prep(regions)
        if isinstance(se, Reduce) and isinstance(ie, Reduce):
            combiner = ie.combiner if _same_combiner(se.combiner, ie.combiner) else se.combiner
            return Reduce(combiner, tuple(prep(x) for x in se.source), ie.axis,
                          prep(se.condition), se.value_index, se.dtype, se.init)
        return prep(se)

    def _prep(self, regions):
        class Rel(ExprMutator):
            def visit_ProducerLoad(inner, node):
                node = inner.generic_visit(node)
                begin, _, p = regions[node.producer]
                lead = len(node.indices) - len(p.shape)
                idx = tuple(simplify(i - bg, self.ranges)
                            for i, bg in zip(node.indices[lead:], begin[lead:]))
                return ProducerLoad(p, idx, node.dtype)

        def prep(e):
            return simplify(Rel().visit(substitute(e, self.rename)), self.ranges)
        return prep

    def _compare(self, se, ie, regions):
        prep = self._prep(regions)
        if isinstance(se, Reduce) != isinstance(ie, Reduce):
            what = "a reduction" if isinstance(se, Reduce) else "not a reduction"
            self.fail(f"the stage's body is {what}, the intrinsic's is not")
        if isinstance(se, Reduce):
            if not _same_combiner(se.combiner, ie.combiner):
                self.fail(f"the stage reduces with {se.combiner.name}, the intrinsic with "
                          f"{ie.combiner.name}")
            pairs = list(zip(se.source, ie.source)) + [(se.condition, ie.condition)]
            if len(se.source) != len(ie.source) or se.init or ie.init:
                self.fail("the reductions differ in their number of values or their init")
        else:
            pairs = [(se, ie)]
        for s, i in pairs:
            got, want = prep(s), simplify(i)
            if not equal(got, want):
                self.fail(f"the body does not match the intrinsic's declaration: the stage "
                          f"computes {got} (its axes renamed to the intrinsic's, indices "
                          f"relative to the region read), the intrinsic {want}")

    # ------------------------------------------------------------------ the binding
    def bind(self, stmt, regions, vmap):
        """``stmt`` (one of the intrinsic's statements) on the real buffers; ``vmap`` renames
        the outer loops' variables (the init nest's copies)."""
        bufmap, values, packed = {}, {}, {}
        for sp, value in self.scalars.items():      # TensorComputeOp's scalars
            values[sp] = ir_substitute(value, vmap)
        for t, begin, extents, db in regions:
            real, mins = self.b.buffer_of(t)
            begin = [simplify(ir_substitute(bg - m, vmap), self.b.ranges)
                     for bg, m in zip(begin, mins)]
            extents = [simplify(ir_substitute(e, vmap), self.b.ranges) for e in extents]
            self._bind_shape(db, t, extents, values)
            if real.strides:
                self.fail(f"tensor {t.name} is padded by storage_align; the intrinsic's "
                          "buffers address it as a dense array (remove storage_align)")
            strides = _compact(real.shape)
            lead = len(real.shape) - db.ndim
            offset = const(0)
            for bg, s in zip(begin, strides):
                offset = offset + bg * s
            offset = simplify(offset, self.b.ranges)
            self._bind_value(db.elem_offset, offset, db, t, "elem_offset",
                             "pass offset_factor=1 to te.tir.decl_buffer (TVM's "
                             "default_buffer_params={'offset_factor': 1})", values)
            factor = db.offset_factor
            if factor > 1 and not can_prove((offset % factor).equal(0), self.b.ranges):
                self.fail(f"buffer {db.name} has offset_factor={factor}, but the region of "
                          f"{t.name} starts at element {offset}, which may not be a multiple "
                          "of it; split so that the regions start at multiples, or lower "
                          "offset_factor")
            compact = _compact([substitute(x, values) for x in db.shape])
            for d in range(db.ndim):
                real_s = simplify(strides[lead + d])
                if db.declared_strides:
                    self._bind_value(db.declared_strides[d], real_s, db, t, f"stride {d}",
                                     "declare it as a variable: strides=[te.var('s'), 1]",
                                     values)
                elif not is_one(db.shape[d]) and not can_prove(real_s.equal(compact[d])):
                    self.fail(f"buffer {db.name} is compact (no strides declared), but the "
                              f"region of {t.name} has stride {real_s} in dimension {d} (a "
                              f"compact {list(db.shape)} buffer has {compact[d]}); declare "
                              "strides=[te.var('s'), 1] in te.tir.decl_buffer")
            span = const(0)
            for d in range(db.ndim):
                span = span + (db.shape[d] - 1) * strides[lead + d]
            span = simplify(substitute(span, values))       # shape variables bound
            bufmap[db.view] = (real, offset, simplify(offset + span, self.b.ranges), db, t,
                               strides[lead:])
            values[db.data] = BufferRef(real)           # the base pointer, as TVM's .data
            whole = all(can_prove(bg.equal(0), self.b.ranges) for bg in begin) and \
                all(can_prove(e.equal(d)) for e, d in zip(extents, real.shape))
            if whole:
                packed[db] = BufferRef(real)
            elif all(can_prove(simplify(strides[lead + d]).equal(compact[d]))
                     for d in range(db.ndim) if not is_one(db.shape[d])):
                # a compact region: the packed function gets an array view of it
                first = BufferLoad(real, (offset,), real.dtype)
                last = BufferLoad(real, (simplify(offset + span, self.b.ranges),), real.dtype)
                packed[db] = Call("tw_region", (first, last) + tuple(db.shape), "handle")
            else:
                packed[db] = None
        out = ir_substitute(stmt, values)
        out = Retarget(self, bufmap, packed).visit(out)
        return simplify_vectors(out)

    def _bind_shape(self, db, t, extents, values):
        """The region's extents against the buffer's shape (TVM's fuzzy match: leading
        dimensions of one element dropped); variables of the shape are bound."""
        lead = len(extents) - db.ndim
        if lead < 0:
            self.fail(f"buffer {db.name} has {db.ndim} dimensions, the region of {t.name} "
                      f"only {len(extents)}")
        for d in range(lead):
            if not can_prove(extents[d].equal(1), self.b.ranges):
                self.fail(f"the region of {t.name} covers {extents[d]} values in dimension "
                          f"{d}, which buffer {db.name} ({db.ndim} dimensions) does not have; "
                          "only dimensions of one value can be left out")
        for d in range(db.ndim):
            self._bind_value(db.shape[d], extents[lead + d], db, t, f"shape {d}",
                             "make the region as large as the buffer", values)

    def _bind_value(self, declared, real, db, t, what, hint, values):
        if isinstance(declared, Var):
            prev = values.get(declared)
            if prev is not None and not can_prove(prev.equal(real), self.b.ranges):
                self.fail(f"buffer {db.name}: variable {declared.name} is bound to {prev} and "
                          f"to {real}")
            values[declared] = real
            return
        if not can_prove(declared.equal(real), self.b.ranges):
            self.fail(f"buffer {db.name} declares {what} {declared}, but the region of "
                      f"{t.name} has {real}; {hint}")

    # ------------------------------------------------------------------ the nest
    def nest(self):
        b, stage = self.b, self.stage
        regions = self.match()
        outer_conds, red_conds = self._check_divides(self.mapping)
        for lv in stage.leaf_iter_vars:
            kind = b._kind(stage, lv)
            inside = lv in self.inner
            if (inside and kind in (ForKind.PARALLEL, ForKind.THREAD_BINDING)) or \
                    (not inside and kind == ForKind.VECTORIZED):
                where = "inside" if inside else "around"
                self.fail(f"loop {lv.var.name} {where} the tensorized nest is "
                          f"{kind.value}; the intrinsic computes the nest as one piece of "
                          "code (bind or parallelize the loops around it, and leave vectors "
                          "to the intrinsic)")
        for child in b.sch.stages:
            if child.attach_type == "scope" and child.attach_stage is stage and \
                    child.attach_ivar in self.inner:
                self.fail(f"stage {child.name} is computed at loop {child.attach_ivar.var.name}"
                          ", inside the tensorized nest; attach it outside")
        intrin = self.intrin
        entries = [(t, begin, extents,
                    intrin.buffers[list(intrin.inputs).index(p)] if p in intrin.inputs
                    else intrin.buffers[-1])
                   for t, (begin, extents, p) in regions.items()]
        return self.build(entries, outer_conds, red_conds)

    def build(self, regions, outer_conds, red_conds):
        """The loops outside the intrinsic around its body, or (a reduction with axes
        outside) its reset in an init nest and its update inside the reduction loops;
        ``regions``: (tensor, begin, extents, the intrinsic's buffer) of each region."""
        b, stage, sb, intrin = self.b, self.stage, self.sb, self.intrin
        leaves = self.outer
        common = next((p for p, lv in enumerate(leaves) if lv.iter_type == COMM_REDUCE),
                      len(leaves))
        from .build_loops import _guard
        if common == len(leaves):           # the whole reduction is inside the nest
            if intrin.body is None:
                self.fail("the intrinsic has no body (only reduce_update), but the whole "
                          "reduction is inside the nest")
            stmt = _guard(self.bind(intrin.body, regions, {}), outer_conds + red_conds,
                          b.ranges)
            return self._loops(leaves, stmt)
        if intrin.reduce_update is None:
            self.fail("reduction axes are outside the tensorized nest, so the intrinsic needs "
                      "reduce_update (return (body, reduce_reset, reduce_update) from fcompute)")
        update = _guard(self.bind(intrin.reduce_update, regions, {}),
                        outer_conds + red_conds, b.ranges)
        if intrin.reduce_init is None:
            if intrin.body is None:
                self.fail("the intrinsic has neither reduce_reset nor a body for the first "
                          "reduction step")
            first = all_(*[lv.var.equal(0) for lv in leaves if lv.iter_type == COMM_REDUCE])
            body = _guard(self.bind(intrin.body, regions, {}), outer_conds + red_conds,
                          b.ranges)
            return self._loops(leaves, IfThenElse(first, body, update))
        rest = [lv for lv in leaves[common:] if lv.iter_type != COMM_REDUCE]
        rename = {lv.var: Var(lv.var.name + "_init", lv.var.dtype) for lv in rest}
        reset = self.bind(intrin.reduce_init, regions, rename)
        reset = _guard(reset, [ir_substitute(c, rename) for c in outer_conds], b.ranges)
        for lv in reversed(rest):
            kind = b._kind(stage, lv)
            reset = For(rename[lv.var], const(0), sb.extents[lv],
                        ForKind.SERIAL if kind == ForKind.PARALLEL else kind, reset)
        inner = self._loops(leaves[common:], update)
        return self._loops(leaves[:common], seq(reset, inner))

    def _loops(self, leaves, stmt):
        b, stage, sb = self.b, self.stage, self.sb
        for lv in reversed(leaves):
            stmt = b._loop(stage, lv, sb.extents[lv], b._attached(stage, lv, stmt))
        return stmt


def is_one(e) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _compact(shape):
    out, step = [], const(1)
    for d in reversed(tuple(shape)):
        out.append(simplify(step))
        step = step * d
    return list(reversed(out))


def _same_combiner(a, b) -> bool:
    if a is b:
        return True
    if len(a.result) != len(b.result) or len(a.identity) != len(b.identity):
        return False
    xs = [Var(f"x{k}", v.dtype) for k, v in enumerate(a.lhs)]
    ys = [Var(f"y{k}", v.dtype) for k, v in enumerate(a.rhs)]
    return all(equal(simplify(p), simplify(q))
               for p, q in zip(a.combine(xs, ys), b.combine(xs, ys))) and \
        all(equal(simplify(p), simplify(q)) for p, q in zip(a.identity, b.identity))


# ----------------------------------------------------------------------------- TVM's test hooks
# TVM's tensorize unit tests call its C++ matcher through two registered functions; the same
# two, on this matcher (``te.get_global_func("test.op.InferTensorizeRegion")``).

class _Facade:
    """What the matcher reads of a loop-nest builder, from ``te.schedule.InferBound``'s map."""

    def __init__(self, bound_map):
        from .bound import loop_ranges
        self.bounds, self.bodies = bound_map.stage_bounds, bound_map.bodies
        self.ranges = loop_ranges(self.bounds)


class RegionMap(dict):
    """TVM's Map: ``items()`` is a list (the tests index it)."""

    def items(self):
        return list(super().items())


def _matcher(stage, bound_map):
    t = _Tensorize(_Facade(bound_map), stage)
    regions = t.match()
    return t, regions


def infer_tensorize_region(stage, bound_map):
    """(out_dom {root axis: Range}, in_dom {input tensor: [Range per dimension]}) of the
    tensorized nest of ``stage`` (TVM's InferTensorizeRegion)."""
    from te.tensor import Range
    t, regions = _matcher(stage, bound_map)
    zero = {tg.var: const(0, tg.var.dtype) for _, tg in t.mapping.values() if tg is not None}
    out_dom = RegionMap()
    for iv, (leaf, target) in t.mapping.items():
        ext = target.dom.extent if target is not None else const(1)
        out_dom[iv] = Range(simplify(substitute(t.rename[iv.var], zero), t.ranges), ext)
    in_dom = RegionMap()
    for tensor, (begin, extents, _) in regions.items():
        if tensor.op is not stage.op:
            in_dom[tensor] = [Range(bg, ext) for bg, ext in zip(begin, extents)]
    return out_dom, in_dom


def match_tensorize_body(stage, out_dom, in_dom, intrin):
    """The body of ``stage`` rewritten for the intrinsic (TVM's MatchTensorizeBody), to
    compare with ``intrin.op.body``."""
    from .bound import InferBound
    t, regions = _matcher(stage, InferBound(stage.schedule))
    if intrin is not t.intrin:
        t.fail(f"match_tensorize_body: the stage is tensorized with {t.intrin.name}")
    return [t.matched_body(se, ie, regions)
            for se, ie in zip(t.b.bodies[stage], intrin.op.body)]


def _register_test_hooks():
    from te.extern import get_global_func, register_func
    for name, fn in (("test.op.InferTensorizeRegion", infer_tensorize_region),
                     ("test.op.MatchTensorizeBody", match_tensorize_body)):
        if get_global_func(name, allow_missing=True) is None:
            register_func(name, fn)


_register_test_hooks()

"""Bound inference: the range of every IterVar of every stage.

A stage at the root computes its whole domain. A stage attached with ``compute_at`` computes the
region its consumer reads during one iteration of the attach loop: the consumer's index
expressions are evaluated as intervals with the loops inside the attach point relaxed to their
ranges. Relations then pass ranges down (root -> leaves) and values up (leaves -> roots).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from te.expr import (Add, Call, Cast, Div, Expr, FloorDiv, FloorMod, IntImm, Max, Min, Mod, Mul,
                     ProducerLoad, Select, Sub, Var, binary, cast, const)
from te.functor import free_vars, post_order_visit, substitute
from te.scan import ScanOp
from te.tensor import COMM_REDUCE, ComputeOp, Range

from .simplify import INF, can_prove, const_bounds, simplify
from .attach import check_attach, legalize_attach, place_groups
from .bound_root import root_region
from .stage import Fuse, ScheduleError, Singleton, Split


def ceildiv(a, b) -> Expr:
    return simplify((a + b - 1) // b)


def pass_down(relations, extents, tighten=None) -> dict:
    """Extents of derived IterVars from the extents of their parents.

    With ``tighten`` (the set of IterVars from which a thread-bound leaf derives), a split
    piece is no longer than its axis, as TVM's PassDownDomain: splitting 8 values by
    factor=32 makes an inner loop of 8 (nparts=32: an outer loop of 8), unless a thread
    index is bound to it (the split then sets the thread count). Relations whose parents
    have no extent yet are skipped."""
    ext = dict(extents)
    for rel in relations:
        if isinstance(rel, Split):
            if rel.parent not in ext:
                continue
            e = ext[rel.parent]
            if rel.factor is not None:
                ext[rel.inner] = _no_longer(e, rel.factor, rel.inner, tighten)
                ext[rel.outer] = ceildiv(e, rel.factor)
            else:
                ext[rel.outer] = _no_longer(e, rel.nparts, rel.outer, tighten)
                ext[rel.inner] = ceildiv(e, rel.nparts)
        elif isinstance(rel, Fuse):     # in the fused loop's width: 65536 * 65536 fits int64
            if rel.outer not in ext or rel.inner not in ext:
                continue
            t = rel.fused.var.dtype
            ext[rel.fused] = simplify(cast(t, ext[rel.outer]) * cast(t, ext[rel.inner]))
        elif isinstance(rel, Singleton):
            ext[rel.iter] = const(1, rel.iter.var.dtype)
    return ext


def _no_longer(extent, amount, piece, tighten):
    """``min(extent, amount)`` where that is provably ``extent`` (and tightening applies)."""
    if tighten is None or piece in tighten or not can_prove(extent < amount) or \
            (isinstance(extent, IntImm) and extent.value == 0):     # (an empty axis: as TVM)
        return amount
    return simplify(extent)


def thread_dominated(stage) -> set:
    """The IterVars of ``stage`` from which a leaf bound to a thread index derives (TVM's
    PassUpThreadBinding)."""
    bound = {lv for lv, a in stage.iter_attrs.items() if a.bind is not None}
    for rel in reversed(stage.relations):
        if isinstance(rel, Split) and (rel.outer in bound or rel.inner in bound):
            bound.add(rel.parent)
        elif isinstance(rel, Fuse) and rel.fused in bound:
            bound |= {rel.outer, rel.inner}
    return bound


def leaf_extents(op: ComputeOp, relations) -> dict:
    roots = {iv: iv.dom.extent for iv in list(op.axis) + list(op.reduce_axis)}
    return pass_down(relations, roots)


def pass_up(relations, leaf_values, extents) -> dict:
    """Offsets (from the root minimum) of every IterVar given the values of the leaves.

    Each value has its IterVar's width: the axes of an int64 fused loop are recovered as
    ``fused // n`` in int64 and cast back to the (int32) width of the axis they replace, so
    that substituting them into the body (which does not re-type its nodes) keeps every
    operation's operands of one width. The values fit: they range over the axis."""
    val = dict(leaf_values)
    for rel in reversed(relations):
        if isinstance(rel, Split):
            if rel.outer in val and rel.inner in val:
                start = val[rel.outer] * extents[rel.inner]
                if rel.tail == "shift":
                    start = _shifted(rel, start, extents)
                val[rel.parent] = _as_axis(rel.parent, simplify(start + val[rel.inner]))
        elif isinstance(rel, Fuse) and rel.fused in val:
            val[rel.outer] = _as_axis(rel.outer, simplify(val[rel.fused] // extents[rel.inner]))
            val[rel.inner] = _as_axis(rel.inner, simplify(val[rel.fused] % extents[rel.inner]))
    return val


def _as_axis(iv, value, ranges=None):
    """``value`` in the width of axis ``iv``'s variable."""
    return simplify(cast(iv.var.dtype, value), ranges)


def reader_values(r, rb) -> dict:
    """Var -> value of every root axis of stage ``r`` (bound ``rb``) at its leaf loops'
    variables; a tensor intrinsic's dimensions (no loops) from their minimum."""
    offsets = pass_up(r.relations, {lv: lv.var for lv in r.leaf_iter_vars}, rb.extents)
    for iv in rb.root:
        offsets.setdefault(iv, const(0, iv.var.dtype))
    return axis_values(rb.root, offsets)


def axis_values(root, offsets, ranges=None) -> dict:
    """Var -> value of every root axis from its range's minimum (which may be computed in a
    wider consumer's width) and its offset, in the axis variable's own width."""
    return {iv.var: _as_axis(iv, r.min + offsets[iv], ranges) for iv, r in root.items()}


def _shifted(rel, start, extents):
    """The start of a piece of a ``tail="shift"`` split: at most ``extent - factor``."""
    extent, factor = simplify(extents[rel.parent]), simplify(extents[rel.inner])
    if isinstance(extent, IntImm) and isinstance(factor, IntImm):
        if extent.value % factor.value == 0:
            return start
        if extent.value < factor.value:
            raise ScheduleError(f"split of axis {rel.parent.var.name} with tail='shift': the "
                                f"axis has {extent.value} values, fewer than the factor "
                                f"{factor.value}; use a smaller factor or tail='guard'")
    return _min(start, simplify(extent - factor))


# ----------------------------------------------------------------------------- intervals

def _min(a, b):
    return binary(Min, a, b)        # operands of one width (an int64 axis meets int32 ones)


def _max(a, b):
    return binary(Max, a, b)


def _relaxed(leaf, extent):
    """The interval [0, extent - 1] of a relaxed loop, in its variable's width."""
    return (const(0, leaf.var.dtype), simplify(cast(leaf.var.dtype, extent) - 1))


def interval(e, relax):
    """Inclusive (lo, hi) expressions of ``e`` when Vars in ``relax`` range over their bounds.

    Symbolic sizes are assumed non-negative. Returns None when the bound is unknown.
    """
    if not any(v in relax for v in free_vars(e)):
        return (e, e)
    if isinstance(e, Var):
        return relax[e]
    if isinstance(e, (Add, Sub)):
        a, b = interval(e.a, relax), interval(e.b, relax)
        if a is None or b is None:
            return None
        if isinstance(e, Add):
            return (a[0] + b[0], a[1] + b[1])
        return (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Mul):
        a, b = interval(e.a, relax), interval(e.b, relax)
        if a is None or b is None:
            return None
        for x, y in ((a, b), (b, a)):
            if x[0] is x[1] and isinstance(x[0], IntImm) and x[0].value < 0:
                return (y[1] * x[0], y[0] * x[0])
        return (a[0] * b[0], a[1] * b[1])
    if isinstance(e, (FloorDiv, Div)) and _positive_divisor(e.b, relax):
        a = interval(e.a, relax)
        return None if a is None else (a[0] // e.b, a[1] // e.b)
    if isinstance(e, (FloorMod, Mod)) and isinstance(e.b, IntImm) and e.b.value > 0:
        a = interval(e.a, relax)
        c = e.b.value
        if a is not None:
            lo, hi = simplify(a[0]), simplify(a[1])
            if isinstance(lo, IntImm) and isinstance(hi, IntImm) and lo.value >= 0 and \
                    lo.value // c == hi.value // c:
                return (const(lo.value % c, e.dtype), const(hi.value % c, e.dtype))
            width = simplify(hi - lo)
            if isinstance(e, FloorMod) and isinstance(width, IntImm) and 0 <= width.value and \
                    _mod_max(lo, c) + width.value < c:
                # a window that does not wrap: [lo % c, lo % c + width] (a tile of a fused
                # axis that stays in one row)
                return (lo % e.b, lo % e.b + width)
        return (const(0, e.dtype), const(c - 1, e.dtype))
    if isinstance(e, (Min, Max)):
        a, b = interval(e.a, relax), interval(e.b, relax)
        if a is None or b is None:
            return None
        f = type(e)
        return (binary(f, a[0], b[0]), binary(f, a[1], b[1]))
    if isinstance(e, Select) or (isinstance(e, Call) and e.op == "if_then_else"):
        t, f = (e.true_value, e.false_value) if isinstance(e, Select) else e.args[1:]
        a, b = interval(t, relax), interval(f, relax)
        if a is None or b is None:
            return None
        return (_min(a[0], b[0]), _max(a[1], b[1]))
    if isinstance(e, Cast):
        return interval(e.value, relax)
    return None


def _positive_divisor(b, relax) -> bool:
    """A divisor that the interval of a floordiv may divide both ends by: a positive
    constant, or a symbolic size that does not vary with the relaxed loops."""
    if isinstance(b, IntImm):
        return b.value > 0
    return not any(v in relax for v in free_vars(b))


def _mod_max(e, c) -> int:
    """An upper bound of ``e % c`` from the gcd of ``e``'s coefficients: ``(3 * x) % 6`` is 0
    or 3; c - 1 when nothing is known."""
    coeffs = []

    def terms(x):
        if isinstance(x, Add):
            return terms(x.a) and terms(x.b)
        if isinstance(x, Mul) and isinstance(x.b, IntImm):
            coeffs.append(abs(x.b.value))
            return True
        if isinstance(x, Mul) and isinstance(x.a, IntImm):
            coeffs.append(abs(x.a.value))
            return True
        if isinstance(x, IntImm):
            return x.value == 0
        return False
    if not terms(e) or not coeffs:
        return c - 1
    g = c
    for k in coeffs:
        g = math.gcd(g, k)
    return c - g


# ----------------------------------------------------------------------------- inference

@dataclass
class StageBound:
    root: dict                       # root IterVar -> Range (min may use outer loop vars)
    extents: dict                    # every IterVar -> extent
    clip: dict = field(default_factory=dict)   # root IterVar -> domain extent to guard against
    # root IterVar -> the region one iteration of the attach loop reads, where its extent
    # varies with the loops (the allocation, ``root``, holds the largest): InferBound's answer
    exact: dict = field(default_factory=dict)


def shift_splits(bounds) -> list:
    """(stage name, axis name, extent, factor) of every ``tail="shift"`` split whose extent
    is not a constant: a call with an extent between 1 and factor - 1 would shift the last
    piece below the axis's start (a call-time condition)."""
    out = []
    for stage, sb in bounds.items():
        for rel in getattr(stage, "relations", ()):
            if isinstance(rel, Split) and rel.tail == "shift" and rel.parent in sb.extents:
                ext, factor = simplify(sb.extents[rel.parent]), simplify(sb.extents[rel.inner])
                if not (isinstance(ext, IntImm) and isinstance(factor, IntImm)):
                    out.append((stage.op.name, rel.parent.var.name, ext, factor))
    return out


def loop_ranges(bounds) -> dict:
    """Inclusive constant ranges of every loop variable (non-constant extents: (0, inf))."""
    ranges = {}
    for sb in bounds.values():
        for iv, ext in sb.extents.items():
            ranges[iv.var] = (0, ext.value - 1) if isinstance(ext, IntImm) else (0, INF)
    return ranges


def infer_bound(sch, bodies, keep=()) -> dict:
    """Map every computed stage to its StageBound. ``bodies`` are the bodies after inlining;
    a stage at the root computes what its readers read (bound_root.py) unless its operation
    is in ``keep`` (the function's arguments, stored whole).

    Groups are placed and attachments checked and legalized first (``place_groups``,
    ``check_attach``, ``legalize_attach``)."""
    place_groups(sch)
    check_attach(sch)
    legalize_attach(sch)
    bounds = {}
    for stage in reversed(sch.stages):
        if isinstance(stage.op, ScanOp):
            # the time loop runs from 0; the update at loop value v computes step first + v
            ext = simplify(stage.op.scan_axis.dom.extent)
            bounds[stage] = StageBound({stage.op.scan_axis: Range(const(0), ext)},
                                       {stage.op.scan_axis: ext})
    for stage in reversed(sch.stages):
        if not isinstance(stage.op, ComputeOp) or stage.attach_type == "inline":
            continue
        op = stage.op
        root = {iv: Range(const(0), iv.dom.extent) for iv in op.axis}
        clip, exact = {}, {}
        if stage.scan_role == "update":
            scan = stage.scan.op
            step = simplify(scan.scan_axis.var + scan.scan_axis.dom.min)
            root[op.axis[0]] = Range(step, const(1))
        elif stage.attach_type == "scope":
            root, clip, exact = _attached_region(sch, stage, bounds, bodies)
        elif stage.attach_type == "root":
            root.update(root_region(sch, stage, bounds, bodies, keep) or {})
        for iv in op.axis[getattr(op, "schedulable_ndim", len(op.axis)):]:
            root[iv] = Range(const(0), iv.dom.extent)   # a tensor intrinsic's whole output
            clip.pop(iv, None)
            exact.pop(iv, None)
        tighten = thread_dominated(stage)
        data_vars = {iv.var for iv in op.axis}
        vmap = None
        for iv in op.reduce_axis:
            if vmap is None and data_vars & set(free_vars(iv.dom.extent) + free_vars(iv.dom.min)):
                # a reduction over a range that depends on the data axes (a triangular
                # sum): its range in the loops' variables
                ext = pass_down(stage.relations, {v: r.extent for v, r in root.items()},
                                tighten)
                leaves = {lv: lv.var for lv in stage.leaf_iter_vars
                          if lv.iter_type != COMM_REDUCE}
                offsets = pass_up(stage.relations, leaves, ext)
                vmap = axis_values({v: r for v, r in root.items() if v in offsets}, offsets)
                # in the guarded tail of a split the value passes the axis's end (the update
                # is skipped there): clamped, the reduction's range stays the axis's
                vmap = {v: val if val is v else
                        simplify(_min(val, cast(v.dtype, ax.dom.extent - 1)))
                        for ax in op.axis for v, val in [(ax.var, vmap.get(ax.var, ax.var))]}
            root[iv] = iv.dom if vmap is None else \
                Range(simplify(substitute(iv.dom.min, vmap)),
                      simplify(substitute(iv.dom.extent, vmap)))
            if vmap is not None:
                _check_dependent_range(stage, iv, root[iv])
        extents = pass_down(stage.relations, {iv: r.extent for iv, r in root.items()},
                            tighten)
        bounds[stage] = StageBound(root, extents, clip, exact)
    return bounds


def _check_dependent_range(stage, iv, rng):
    """A reduction whose range mentions data axes (``te.reduce_axis((0, i))``) needs their
    loops outside its own: refused where it was reordered outward or fused with them."""
    leaves = stage.leaf_iter_vars
    mine = {iv}
    for rel in stage.relations:
        if isinstance(rel, Split) and rel.parent in mine:
            mine |= {rel.outer, rel.inner}
        elif isinstance(rel, Fuse) and (rel.outer in mine or rel.inner in mine):
            mine.add(rel.fused)
    first = min(p for p, lv in enumerate(leaves) if lv in mine)
    used = set(free_vars(rng.min) + free_vars(rng.extent))
    data_roots = {a.var: a for a in stage.op.axis}
    late = [lv.var.name for lv in leaves[first:] if lv.var in used]
    late += [v.name for v in used if v in data_roots and all(lv.var is not v for lv in leaves)]
    if late:
        raise ScheduleError(f"stage {stage.name}: the range of reduction axis {iv.var.name} "
                            f"depends on {', '.join(sorted(set(late)))}, whose loops must run "
                            f"outside {iv.var.name}'s; do not reorder {iv.var.name} outward "
                            "or fuse it with them")


class BoundMap(dict):
    """``te.schedule.InferBound``'s answer: IterVar -> Range for every axis of every stage
    (roots, reduction axes, split and fused pieces), as TVM's Map. Attached stages' ranges
    start at expressions of their consumers' loop variables."""
    stage_bounds: dict
    bodies: dict


def InferBound(sch) -> BoundMap:      # noqa: N802  (TVM's name)
    """The range of every IterVar of schedule ``sch`` (TVM's ``te.schedule.InferBound``)."""
    from .inline import inline_bodies
    bodies = inline_bodies(sch)
    bounds = infer_bound(sch, bodies)
    out = BoundMap()
    out.stage_bounds, out.bodies = bounds, bodies
    for stage, sb in bounds.items():
        for iv, ext in sb.extents.items():
            out[iv] = Range(const(0, iv.var.dtype), ext)
        for iv, r in sb.root.items():
            out[iv] = sb.exact.get(iv, r)
        if isinstance(stage.op, ScanOp):        # the steps after the init's rows
            out[stage.op.scan_axis] = stage.op.scan_axis.dom
    return out


def _attached_region(sch, stage, bounds, bodies):
    parent, ivar = stage.attach_stage, stage.attach_ivar
    op = stage.op
    if parent not in bounds:
        raise ScheduleError(f"compute_at: stage {stage.name} is attached to {parent.name}, "
                            f"which is not computed in a loop nest (inlined?); attach it to a "
                            "stage that is computed")
    if ivar not in parent.leaf_iter_vars:
        raise ScheduleError(f"compute_at: stage {stage.name} is attached to axis "
                            f"{ivar.var.name} of {parent.name}, which is no longer a leaf (it "
                            "was fused after compute_at as the outer axis, which has no loop of "
                            "its own; TVM refuses it too); attach to one of "
                            f"{', '.join(v.var.name for v in parent.leaf_iter_vars)}")
    pos = parent.leaf_iter_vars.index(ivar)
    readers = [r for r in sch.stages if r in bodies and _reads(bodies[r], op)]
    if parent not in readers and not readers:
        raise ScheduleError(f"compute_at: stage {parent.name} does not read {stage.name}; "
                            "attach a stage to its consumer")
    relax = {}
    outer = _enclosing_tags(parent, pos)
    for r in readers:
        if r is not parent:
            for inner in _chain_inside(r, parent, pos, stage):
                for leaf in inner.leaf_iter_vars:
                    if not _per_thread(stage, inner, leaf, outer):
                        relax[leaf.var] = _relaxed(leaf, bounds[inner].extents[leaf])
    pb = bounds[parent]
    for k, leaf in enumerate(parent.leaf_iter_vars):
        if (k > pos and not _per_thread(stage, parent, leaf, outer)) or \
                _shared_by_threads(stage, parent, leaf):
            relax[leaf.var] = _relaxed(leaf, pb.extents[leaf])
    ancestor = parent
    while ancestor.attach_type == "scope":       # thread loops of enclosing stages
        ancestor = ancestor.attach_stage
        for leaf in ancestor.leaf_iter_vars:
            if _shared_by_threads(stage, ancestor, leaf):
                relax[leaf.var] = _relaxed(leaf, bounds[ancestor].extents[leaf])
    ranges = loop_ranges(bounds)
    regions = [None] * len(op.axis)
    inside = [True] * len(op.axis)      # every read of the dimension provably in its domain
    for r in readers:
        rb = bounds[r]
        vmap = reader_values(r, rb)
        # the reader's axes range over their regions where it reads (the tails of its
        # splits are guarded): whether its reads stay inside this stage's domain
        rranges = dict(ranges)
        for riv, rg in rb.root.items():
            if isinstance(rg.min, IntImm) and isinstance(rg.extent, IntImm) and \
                    rg.extent.value > 0:
                rranges[riv.var] = (rg.min.value, rg.min.value + rg.extent.value - 1)
        for load in _loads(bodies[r], op):
            for d, idx in enumerate(load.indices):
                at_root = idx
                idx = substitute(idx, vmap)
                # a data-dependent index (A[I[i]]) reads anywhere: the whole axis (a region
                # placed at I[i] would read I where the producer is computed, maybe before I
                # is, and its minimum would be a load in the loop IR's index arithmetic)
                itv = None if _has_load(idx) else interval(idx, relax)
                if itv is None or regions[d] == "full":
                    regions[d] = "full"
                    continue
                dom = op.axis[d].dom.extent
                inside[d] = inside[d] and can_prove(at_root >= 0, rranges) and \
                    can_prove(at_root < dom, rranges)
                if regions[d] is None:
                    regions[d] = itv
                else:
                    lo, hi = regions[d]
                    regions[d] = (_min(lo, itv[0]), _max(hi, itv[1]))
    root, clip, exact = {}, {}, {}
    for d, iv in enumerate(op.axis):
        dom = iv.dom.extent
        reg = regions[d]
        if reg is None or reg == "full":
            root[iv] = Range(const(0), dom)
            continue
        lo, hi = simplify(reg[0], ranges), simplify(reg[1], ranges)
        ext = simplify(hi - lo + 1, ranges)
        if any(v in ranges for v in free_vars(ext)):
            exact[iv] = Range(lo, ext)
            ub = const_bounds(ext, ranges)[1]
            if ub == INF:
                root[iv] = Range(const(0), dom)
                continue
            ext = const(int(ub))
        # relaxed loops of no iterations (a size-0 axis split by 4: its outer loop runs 0
        # times) make hi < lo: the region is empty, never a negative allocation
        if isinstance(ext, IntImm) and ext.value < 0:
            ext = const(0, ext.dtype)
        if iv in exact:
            exact[iv] = Range(lo, simplify(_min(exact[iv].extent, ext)))
        elif not can_prove(ext >= 0, ranges):
            ext = simplify(_max(ext, const(0, ext.dtype)), ranges)
        if isinstance(ext, IntImm) and isinstance(dom, IntImm) and ext.value >= dom.value \
                and (not free_vars(lo) or inside[d]):
            # the whole axis; when the region moves with a loop (lo depends on it), keep it
            # relative to lo, so that a thread past the end of a guarded split reads its own
            # element instead of one past the buffer, unless every read is inside the axis
            # (B[j] and B[(j + 1) % n]: a region [min(j, ..), ..] that no check could place)
            root[iv] = Range(const(0), dom)
            continue
        root[iv] = Range(lo, ext)
        lo_b = const_bounds(lo, ranges)
        hi_b = const_bounds(simplify(lo + ext), ranges)
        if (lo_b[0] < 0 or not (isinstance(dom, IntImm) and hi_b[1] <= dom.value)) and \
                not _within_steps(sch, lo, ext, dom):
            clip[iv] = dom
    return root, clip, exact


def _within_steps(sch, lo, ext, dom) -> bool:
    """Whether ``[lo, lo + ext)`` lies in ``[0, dom)`` for every step of the scans whose time
    variables ``lo`` uses (and no other variable): a step's rows are inside the state."""
    steps = {s.op.scan_axis.var: s.op.scan_axis.dom.extent for s in sch.stages
             if isinstance(s.op, ScanOp)}
    used = free_vars(lo)
    if not used or any(v not in steps for v in used):
        return False
    first = substitute(lo, {v: const(0) for v in used})
    last = substitute(lo + ext, {v: steps[v] - 1 for v in used})
    return can_prove(first >= 0) and can_prove(last <= dom)


def _chain_inside(reader, parent, pos, stage):
    """The stages from ``reader`` up to (not including) ``parent``, checking that ``reader``
    is computed inside ``parent``'s loop at ``pos`` or deeper."""
    chain, cur = [], reader
    while cur is not parent:
        if cur.attach_type != "scope":
            raise ScheduleError(f"compute_at: stage {stage.name} is attached to {parent.name} "
                                f"but {reader.name} reads it too and is not computed inside "
                                f"{parent.name}; attach {reader.name} inside {parent.name} as "
                                f"well, or use compute_root for {stage.name}")
        chain.append(cur)
        if cur.attach_stage is parent and \
                parent.leaf_iter_vars.index(cur.attach_ivar) < pos:
            raise ScheduleError(f"compute_at: {reader.name} reads {stage.name} but is computed "
                                f"outside the loop where {stage.name} is computed; attach "
                                f"{stage.name} at an outer loop")
        cur = cur.attach_stage
    return chain


def _shared_by_threads(stage, parent, leaf) -> bool:
    """A shared-memory stage serves every thread of the block, warp memory every lane of
    the warp (threadIdx.x, as TVM): relax their loops too."""
    attr = parent.iter_attrs.get(leaf)
    if attr is None or attr.bind is None or stage.scope not in ("shared", "warp"):
        return False
    tag = attr.bind.thread_tag
    if stage.scope == "warp":
        return tag == "threadIdx.x"
    return tag.startswith("threadIdx") or tag == "vthread"


def _enclosing_tags(parent, pos) -> set:
    """The thread indices bound to the loops around the attach point (``parent``'s leaves
    up to ``pos`` and the loops its own attach points are in)."""
    tags, cur, upto = set(), parent, pos
    while True:
        for lv in cur.leaf_iter_vars[:upto + 1]:
            attr = cur.iter_attrs.get(lv)
            if attr is not None and attr.bind is not None:
                tags.add(attr.bind.thread_tag)
        if cur.attach_type != "scope" or cur.attach_ivar not in cur.attach_stage.leaf_iter_vars:
            return tags
        cur, upto = cur.attach_stage, cur.attach_stage.leaf_iter_vars.index(cur.attach_ivar)


def _per_thread(stage, owner, leaf, outer) -> bool:
    """A loop of ``owner`` bound to a thread index over which a local (or warp) stage is not
    relaxed even inside its attach point: each thread has its own copy (TVM's NeedRelax:
    relaxed only where the storage rank is at most the thread's; warp memory spans the
    lanes of threadIdx.x). Here only where a loop around the attach point is bound to that
    index too (the stage's region is placed at its value)."""
    attr = owner.iter_attrs.get(leaf)
    if attr is None or attr.bind is None or stage.scope not in ("local", "warp"):
        return False
    tag = attr.bind.thread_tag
    if (stage.scope == "warp" and tag == "threadIdx.x") or tag not in outer or \
            tag == "vthread":
        return False
    # a stage whose own loops are bound to that index computes a part of the region on each
    # thread: the region must be the same on every thread (TVM places it per thread there
    # too, and each thread then fills elements that another one reads)
    return not any(a.bind is not None and a.bind.thread_tag == tag
                   for a in stage.iter_attrs.values())


def _loads(exprs, op):
    found = []

    def visit(node):
        if isinstance(node, ProducerLoad) and node.producer.op is op:
            found.append(node)
    for e in exprs:
        post_order_visit(e, visit)
    return found


def _has_load(e) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, ProducerLoad) else None)
    return bool(found)


def _reads(exprs, op):
    return bool(_loads(exprs, op))

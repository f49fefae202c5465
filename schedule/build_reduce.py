"""A reduction's loop nest: its update, the init nest before its first reduction loop, and
the tree combine of a reduction across the threads of a block.

``builder`` is build_loops.py's loop-nest builder (its bounds, loop ranges, loops and
attachments). The guards that plain stages share (``guard``, ``inner_split_guards``) are at
the end.
"""
from __future__ import annotations

import dataclasses

from te.expr import IntImm, Var, all_, const
from te.functor import substitute
from te.tensor import COMM_REDUCE

from .bound import axis_values, pass_up
from .ir import (Allocate, Buffer, BufferLoad, BufferStore, For, ForKind, IfThenElse,
                 LetStmt, seq, storage_sync)
from .simplify import INF, simplify, skey
from .stage import Fuse, ScheduleError, Split


def reduction(builder, stage, red, bufs, store_idx, data_conds, conv, offsets, vmap):
    """The guarded update of reduction ``red`` at the leaves' loop values, the position of
    its first reduction leaf (the init goes just outside it) and the init nest."""
    op, sb = stage.op, builder.bounds[stage]
    leaves = stage.leaf_iter_vars
    red_conds = []
    for iv in op.reduce_axis:
        red_conds += builder._guards(iv, offsets[iv], vmap[iv.var], sb)
    red_conds += inner_split_guards(stage, offsets, sb, reduce=True)
    red_conds.append(conv.visit(substitute(red.condition, vmap)))
    sources = [conv.visit(substitute(s, vmap)) for s in red.source]
    update = reduce_update(red, bufs, store_idx, sources)
    update = guard(update, data_conds + red_conds, builder.ranges)
    init_pos = next((p for p, lv in enumerate(leaves) if lv.iter_type == COMM_REDUCE),
                    len(leaves))
    check_shift_recompute(stage, init_pos, sb)
    return update, init_pos, reduce_init(builder, stage, red, bufs, init_pos, conv)


def reduce_update(red, bufs, idx, sources):
    """``bufs[idx] = combine(bufs[idx], sources)`` (a tuple reducer through LetStmts, so that
    every result reads the old values)."""
    acc = [BufferLoad(b, idx, b.dtype) for b in bufs]
    if len(bufs) == 1:
        (new,) = red.combiner.combine(acc, sources)
        return BufferStore(bufs[0], new, idx)
    temps = [Var(f"{b.name}_v{k}", b.dtype) for k, b in enumerate(bufs)]
    srcs = [Var(f"{b.name}_s{k}", s.dtype) for k, (b, s) in enumerate(zip(bufs, sources))]
    results = red.combiner.combine(acc, srcs)
    stmt = seq(*[BufferStore(b, t, idx) for b, t in zip(bufs, temps)])
    for t, r in reversed(list(zip(temps, results))):
        stmt = LetStmt(t, r, stmt)
    for v, s in reversed(list(zip(srcs, sources))):
        stmt = LetStmt(v, s, stmt)
    return stmt


def reduce_init(builder, stage, red, bufs, init_pos, conv):
    """The loops that store the reduction's identity (or init) into every output that
    the loops inside ``init_pos`` (the first reduction leaf) reduce into.

    They iterate the data leaves inside it and, for a leaf that fuses data axes with
    reduction axes, those data axes themselves (the pieces of data that flow into it):
    the fused leaf's own loop would cover no output when a reduction extent is 0. The
    leaves outside ``init_pos`` keep their loops' values (a data axis split with one
    piece outside has that piece fixed)."""
    sb, leaves = builder.bounds[stage], stage.leaf_iter_vars
    reduce = _derived_all(stage.relations, stage.op.reduce_axis)
    values = {lv: lv.var for lv in leaves[:init_pos]}
    loops = []                              # (IterVar, loop kind)
    for lv in leaves[init_pos:]:
        if lv not in reduce:                # a data leaf
            kind = builder._kind(stage, lv)
            loops.append((lv, kind if kind != ForKind.PARALLEL else ForKind.SERIAL))
        else:                               # its data pieces, if any (a fused leaf)
            for iv in _data_sources(stage.relations, lv, reduce):
                if iv not in [x for x, _ in loops]:     # (a piece reached twice: once)
                    loops.append((iv, ForKind.SERIAL))
    for iv, _ in loops:
        var = values[iv] = Var(iv.var.name + "_init", iv.var.dtype)
        ext = sb.extents[iv]
        builder.ranges[var] = (0, ext.value - 1) if isinstance(ext, IntImm) else (0, INF)
    offsets = pass_up(stage.relations, values, sb.extents)
    vmap = axis_values({iv: sb.root[iv] for iv in stage.op.axis}, offsets, builder.ranges)
    idx, _, conds, _ = builder._store_part(stage, values, offsets, vmap, bufs, conv)
    inits = red.init if red.init else red.combiner.identity
    inits = [conv.visit(substitute(i, vmap)) for i in inits]
    stores = [BufferStore(b, v, idx) for b, v in zip(bufs, inits)]
    stmt = guard(seq(*stores), conds, builder.ranges)
    for iv, kind in reversed(loops):
        stmt = For(values[iv], const(0), sb.extents[iv], kind, stmt,
                   builder._tag(stage, iv) if iv in leaves else "")
    return stmt


def thread_reduce_leaf(stage):
    """The reduction leaf bound to a threadIdx (a cross-thread reduction), or None."""
    bound = [lv for lv in stage.leaf_iter_vars if lv.iter_type == COMM_REDUCE
             and lv in stage.iter_attrs and stage.iter_attrs[lv].bind is not None
             and stage.iter_attrs[lv].bind.thread_tag.startswith("threadIdx")]
    if len(bound) > 1:
        raise ScheduleError(f"stage {stage.name}: only one reduction axis can be bound to "
                            "a thread index; fuse the reduction axes first")
    return bound[0] if bound else None


def cross_thread_nest(builder, stage, red, bufs, store_idx, data_conds, bound_conds, conv,
                      offsets, vmap):
    """A reduction across the threads of a block: per-thread partial results, then a
    tree combine in shared memory; one thread stores the result.

    The tree's steps are separate thread loops with the barriers between them, outside
    any thread guard: every thread of the block reaches every barrier, also where the
    block has more threads than the reduction (another stage of the kernel needs them).
    Threads of the block along indices this stage does not bind (and that no enclosing
    stage binds) compute the partial results redundantly; only those at index 0 combine
    them, so that they do not add into each other's slots."""
    op, sb = stage.op, builder.bounds[stage]
    leaves = stage.leaf_iter_vars
    tleaf = thread_reduce_leaf(stage)
    p0 = next(p for p, lv in enumerate(leaves) if lv.iter_type == COMM_REDUCE)
    inner_data = [lv.var.name for lv in leaves[p0:] if lv.iter_type != COMM_REDUCE]
    if inner_data:
        raise ScheduleError(f"cross-thread reduction of stage {stage.name}: data-parallel "
                            f"axes {', '.join(inner_data)} are inside the reduction loops; "
                            "put the reduction axes innermost")
    data = _derived_all(stage.relations, op.axis)
    mixed = [lv.var.name for lv in leaves[p0:] if lv in data]
    if mixed:
        raise ScheduleError(f"cross-thread reduction of stage {stage.name}: "
                            f"{', '.join(mixed)} fuses data-parallel axes with reduction "
                            "axes; the threads reduce one output at a time: fuse only "
                            "reduction axes together")
    T = sb.extents[tleaf]
    if not isinstance(T, IntImm):
        raise ScheduleError(f"cross-thread reduction of stage {stage.name}: axis "
                            f"{tleaf.var.name} bound to a thread needs a constant extent")
    tag = stage.iter_attrs[tleaf].bind.thread_tag
    red_conds = []
    for iv in op.reduce_axis:
        red_conds += builder._guards(iv, offsets[iv], vmap[iv.var], sb)
    red_conds.append(conv.visit(substitute(red.condition, vmap)))
    sources = [conv.visit(substitute(s, vmap)) for s in red.source]
    # one accumulator and one shared row per output (a tuple reducer, argmax: two)
    suffix = [""] if len(bufs) == 1 else [str(k) for k in range(len(bufs))]
    accs = [Buffer(f"{op.name}.acc{x}", (const(1),), b.dtype, "local")
            for x, b in zip(suffix, bufs)]
    update = reduce_update(red, accs, (const(0),), sources)
    stmt = guard(update, bound_conds + red_conds, builder.ranges)
    for pos in range(len(leaves) - 1, p0 - 1, -1):
        stmt = builder._attached(stage, leaves[pos], stmt)
        stmt = builder._loop(stage, leaves[pos], sb.extents[leaves[pos]], stmt)
    # one row of slots per combination of the other thread indices in scope (this
    # stage's data axes and the enclosing stages' axes bound to threads)
    lin, size = const(0), 1
    for owner, lv in _thread_leaves(stage, leaves[:p0]):
        if owner.iter_attrs[lv].bind.thread_tag == tag:
            continue
        ext = builder.bounds[owner].extents[lv]
        if not isinstance(ext, IntImm):
            raise ScheduleError(f"cross-thread reduction of stage {stage.name}: "
                                f"thread axis {lv.var.name} needs a constant extent")
        lin, size = lin * ext + lv.var, size * ext.value
    red_bufs = [Buffer(f"{op.name}.red{x}", (const(size * T.value),), b.dtype, "shared")
                for x, b in zip(suffix, bufs)]
    tx = Var(tleaf.var.name + "_red")
    base = simplify(lin * T)
    slot = simplify(base + tx)
    phases = [seq(*[BufferStore(r, BufferLoad(a, (const(0),), a.dtype), (slot,))
                    for r, a in zip(red_bufs, accs)])]
    width = T.value
    step = 1 << max(0, (width - 1).bit_length() - 1)
    while width > 1:
        others = [BufferLoad(r, (simplify(slot + step),), r.dtype) for r in red_bufs]
        phases.append(IfThenElse(tx < width - step,
                                 reduce_update(red, red_bufs, (slot,), others)))
        width, step = step, step // 2
    conds = [substitute(c, {tleaf.var: tx}) for c in data_conds]
    results = [BufferStore(b, BufferLoad(r, (base,), r.dtype), store_idx)
               for b, r in zip(bufs, red_bufs)]
    # an argument is stored once; an intermediate by every thread (it may be a register
    # of each thread, when the stage is computed inside thread loops)
    argument = bufs[0] in builder.full_bufs
    phases.append(guard(seq(*results), conds + [tx.equal(0)] * argument, builder.ranges))
    bound = {owner.iter_attrs[lv].bind.thread_tag
             for owner, lv in _thread_leaves(stage, leaves[:p0])} | {tag}
    idle = [t for t in ("threadIdx.x", "threadIdx.y", "threadIdx.z") if t not in bound]
    tree = []
    for k, phase in enumerate(phases):
        phase = For(tx, const(0), T, ForKind.THREAD_BINDING, phase, tag)
        if k < len(phases) - 1 or argument:
            for t in idle:          # only the threads at index 0 of the others
                phase = For(Var(f"{op.name}_{t.replace('.', '_')}"), const(0), const(1),
                            ForKind.THREAD_BINDING, phase, t)
        tree += [phase] if k == len(phases) - 1 else [phase, storage_sync()]
    cross = seq(*tree)
    inits = red.init or red.combiner.identity
    idents = [BufferStore(a, conv.visit(substitute(v, vmap)), (const(0),))
              for a, v in zip(accs, inits)]
    stmt = seq(*idents, stmt, cross)
    for buf in reversed(accs + red_bufs):
        stmt = Allocate(buf, stmt)
    for pos in range(p0 - 1, -1, -1):
        stmt = builder._attached(stage, leaves[pos], stmt)
        stmt = builder._loop(stage, leaves[pos], sb.extents[leaves[pos]], stmt)
    return stmt


def _thread_leaves(stage, own):
    """(stage, leaf) of the loops bound to a threadIdx around a stage's reduction: its
    ``own`` outer leaves, then those of the stages it is computed inside, down to where
    it is attached."""
    found, leaves = [], own
    while True:
        found += [(stage, lv) for lv in leaves if lv in stage.iter_attrs and
                  stage.iter_attrs[lv].bind is not None and
                  stage.iter_attrs[lv].bind.thread_tag.startswith("threadIdx")]
        if stage.attach_type != "scope":
            return found
        parent = stage.attach_stage
        leaves = parent.leaf_iter_vars[:parent.leaf_iter_vars.index(stage.attach_ivar) + 1]
        stage = parent


def bind_combiner(body, vmap) -> tuple:
    """Reductions whose combiner's result mentions the stage's axes (a ``comm_reducer``
    written with a loop variable) with the axes' values from the loops."""
    red = body[0]
    result = tuple(substitute(r, vmap) for r in red.combiner.result)
    if all(a is b for a, b in zip(result, red.combiner.result)):
        return body
    combiner = dataclasses.replace(red.combiner, result=result)
    return tuple(dataclasses.replace(b, combiner=combiner) for b in body)


def _derived_all(relations, roots) -> set:
    """Every IterVar split or fused from one of ``roots`` (and the roots)."""
    found = set()
    for iv in roots:
        found |= _derived(relations, iv)
    return found


def _data_sources(relations, iv, reduce) -> list:
    """The IterVars of data only (outside ``reduce``, the IterVars made from reduction axes)
    that flow into ``iv`` through fuses and splits, outermost first: none for a reduction
    axis, ``j`` for ``fuse(j, k)`` or its split pieces, ``ii`` for ``fuse(ii, k)``."""
    if iv not in reduce:
        return [iv]
    for rel in relations:
        if isinstance(rel, Split) and iv in (rel.outer, rel.inner):
            return _data_sources(relations, rel.parent, reduce)
        if isinstance(rel, Fuse) and iv is rel.fused:
            return (_data_sources(relations, rel.outer, reduce) +
                    _data_sources(relations, rel.inner, reduce))
    return []                                   # a reduction axis


def _derived(relations, iv) -> set:
    """``iv`` and every IterVar split or fused from it (in the relations' order)."""
    found = {iv}
    for rel in relations:
        if isinstance(rel, Split) and rel.parent in found:
            found |= {rel.outer, rel.inner}
        elif isinstance(rel, Fuse) and (rel.outer in found or rel.inner in found):
            found.add(rel.fused)
    return found


def check_shift_recompute(stage, init_pos, sb):
    """Refuse a ``tail="shift"`` split of a data axis whose recomputed values a reduction
    would add twice (Halide's ShiftInwards is only valid where recomputing is idempotent).

    The init nest runs once per iteration of the leaves outside the first reduction leaf
    (``init_pos``); inside it, every update of one output element must come from one point
    of the data leaves. A shifted split maps two points to one element only when both its
    outer and its inner piece vary there, i.e. when leaves made from both are inside the
    first reduction loop; when either is outside, the element is re-initialized before it is
    reduced again (a plain recomputation). A split whose axis is a constant multiple of the
    factor shifts nothing."""
    inside = set(stage.leaf_iter_vars[init_pos:])
    for rel in stage.relations:
        if not (isinstance(rel, Split) and rel.tail == "shift"):
            continue
        ext, factor = simplify(sb.extents[rel.parent]), simplify(sb.extents[rel.inner])
        if isinstance(ext, IntImm) and isinstance(factor, IntImm) and \
                ext.value % factor.value == 0:
            continue
        outer_in = _derived(stage.relations, rel.outer) & inside
        inner_in = _derived(stage.relations, rel.inner) & inside
        if outer_in and inner_in:
            red = stage.leaf_iter_vars[init_pos].var.name
            why = (f"its {ext.value} values are not" if isinstance(ext, IntImm) else
                   f"its {ext} values may not be")
            raise ScheduleError(
                f"split on stage {stage.name}, axis {rel.parent.var.name} with tail='shift': "
                f"the last piece recomputes values of {rel.parent.var.name} ({why} a multiple "
                f"of the factor {factor}), and both pieces "
                f"({rel.outer.var.name}, {rel.inner.var.name}) are inside the reduction loop "
                f"{red}, so the reduction would add the recomputed values twice; use "
                f"tail='guard', or reorder so that {rel.outer.var.name} or "
                f"{rel.inner.var.name} is outside every reduction axis")


def inner_split_guards(stage, offsets, sb, reduce):
    """``parent < extent`` for split axes that are not roots: a split that does not divide
    such an axis would otherwise spill into the next value of the axis it was split from."""
    roots = set(stage.op.axis) | set(stage.op.reduce_axis)
    return [offsets[r.parent] < sb.extents[r.parent] for r in stage.relations
            if isinstance(r, Split) and r.parent not in roots
            and (r.parent.iter_type == COMM_REDUCE) == reduce]


def guard(stmt, conds, ranges):
    """``stmt`` under the conditions that ``ranges`` do not prove (each once)."""
    kept, seen = [], set()
    for c in (simplify(c, ranges) for c in conds):
        key = skey(c)
        if not (isinstance(c, IntImm) and c.value) and key not in seen:
            seen.add(key)
            kept.append(c)
    conds = kept
    if not conds:
        return stmt
    return IfThenElse(all_(*conds), stmt)

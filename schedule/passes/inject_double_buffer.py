"""Double buffering for GPU kernels (TVM's InjectDoubleBuffer, with register staging).

A stage marked ``s[AA].double_buffer()`` is filled at the top of the loop it is computed at
(the outer reduction loop ``ko`` of a tiled GEMM). Its buffer gets two halves and the loop
computes on one half while the other is filled for the next iteration:

    fill half 0 for ko = min; sync
    for ko in range(min, end):
        if ko + 1 < end: load this thread's share of the next tile into registers
        compute on half (ko - min) % 2         # the global loads are in flight meanwhile
        if ko + 1 < end: store the registers into the other half
        sync

One barrier per iteration instead of two, and the latency of the global loads hidden behind
the computation. The tile goes through registers when each thread's share of the fill is a
nest of constant loops of at most ``STAGE_MAX`` elements (the usual cooperative fetch);
otherwise the other half is filled directly at the top of the iteration.
"""
from __future__ import annotations

from dataclasses import replace

from te.expr import IntImm, const

from ..analysis import allocation_chain, loads_from, stored_buffers, stores_to
from ..functor import IRMutator, redirect, substitute
from ..interp import alloc_size
from ..ir import (Allocate, Buffer, BufferLoad, BufferStore, For, ForKind, IfThenElse, seq,
                  storage_sync)
from ..simplify import simplify
from ..stage import ScheduleError

DOUBLE_BUFFER = "double_buffer"
STAGE_MAX = 64          # registers per thread and buffer for the staged copy of the next tile


def _error(buf, what):
    raise ScheduleError(f"double_buffer on stage {buf.name}: {what}")


def _staging(fill):
    """The loops of ``fill`` not bound to threads (each thread's share of it) when ``fill`` is
    loops and guards around one store and that share is at most STAGE_MAX constant
    iterations; else None."""
    loops, s, count = [], fill, 1
    while not isinstance(s, BufferStore):
        if isinstance(s, For):
            if s.kind != ForKind.THREAD_BINDING:
                if not isinstance(s.extent, IntImm):
                    return None
                loops.append(s)
                count *= s.extent.value
        elif not (isinstance(s, IfThenElse) and s.else_case is None):
            return None
        s = s.then_case if isinstance(s, IfThenElse) else s.body
    return loops if count <= STAGE_MAX else None


def _rebuild(s, leaf):
    """``s`` (loops and guards around one store) with the store replaced by ``leaf(store)`` and
    the loops not bound to threads unrolled (constant register indices)."""
    if isinstance(s, For):
        kind = s.kind if s.kind == ForKind.THREAD_BINDING else ForKind.UNROLLED
        return replace(s, kind=kind, body=_rebuild(s.body, leaf))
    if isinstance(s, IfThenElse):
        return replace(s, then_case=_rebuild(s.then_case, leaf))
    return leaf(s)


def _fills(loop, chain, items):
    """{index in ``items``: allocation} of the double-buffered allocations' fills, checked."""
    v = loop.loop_var
    db = [a for a in chain if DOUBLE_BUFFER in a.annotations]
    if loop.kind not in (ForKind.SERIAL, ForKind.UNROLLED):
        _error(db[0].buffer, f"it is computed at loop {v.name}, which is "
               f"{loop.thread_tag or loop.kind.value}; compute it at a serial loop (the outer "
               "loop of a split reduction axis)")
    fills = {}
    for a in db:
        writers = [k for k, it in enumerate(items) if stores_to(it, {a.buffer})]
        if len(writers) != 1 or any(loads_from(items[j], {a.buffer}) for j in range(writers[0])):
            _error(a.buffer, f"the body of loop {v.name} must fill it once before reading it")
        fills[writers[0]] = a
    written = set().union(*(stored_buffers(it) for it in items))
    for k, a in fills.items():
        if stored_buffers(items[k]) != [a.buffer] or loads_from(items[k], written):
            _error(a.buffer, f"its fill must read only data that loop {v.name} does not write, "
                   "so that the next iteration's tile can be loaded early")
    return fills


def _double(loop, chain, items):
    v, start = loop.loop_var, loop.min
    end, nxt = simplify(start + loop.extent), simplify(v + 1)
    fills = _fills(loop, chain, items)
    rest = [it for k, it in enumerate(items) if k not in fills]
    prologue, loads, stores, allocs = [], [], [], []
    for k, a in fills.items():
        buf, fill = a.buffer, items[k]
        size = alloc_size(buf)
        if not isinstance(size, IntImm):
            _error(buf, f"its size {size} is not a constant; split the loops it is computed at "
                   "by constant factors")
        both = Buffer(buf.name, (const(2 * size.value),), buf.dtype, buf.scope)
        allocs.append(replace(a, buffer=both, annotations=()))
        current = simplify((v - start) % 2 * size.value)
        following = simplify((v - start + 1) % 2 * size.value)
        prologue.append(redirect(substitute(fill, {v: start}), buf, both, const(0)))
        rest = [redirect(it, buf, both, current) for it in rest]
        ahead = substitute(fill, {v: nxt})
        regs = _staging(ahead)
        if regs is None:                # the other half is filled directly, first thing
            loads.append(redirect(ahead, buf, both, following))
            continue
        count, index = 1, const(0)
        for lp in reversed(regs):
            index = index + (lp.loop_var - lp.min) * count
            count *= lp.extent.value
        index = simplify(index)
        reg = Buffer(f"{buf.name}.next", (const(count),), buf.dtype, "local")
        allocs.append(Allocate(reg, None))
        loads.append(_rebuild(ahead, lambda st: BufferStore(reg, st.value, (index,))))
        stores.append(_rebuild(ahead, lambda st: BufferStore(
            both, BufferLoad(reg, (index,), reg.dtype), (following + st.indices[0],))))
    body = seq(*rest)
    for a in reversed([a for a in chain if DOUBLE_BUFFER not in a.annotations]):
        body = replace(a, body=body)
    has_next = simplify(nxt < end)
    body = seq(IfThenElse(has_next, seq(*loads)) if loads else None, body,
               IfThenElse(has_next, seq(*stores)) if stores else None, storage_sync())
    out = seq(*prologue, storage_sync(), replace(loop, body=body))
    extent = simplify(loop.extent)
    if not (isinstance(extent, IntImm) and extent.value > 0):
        out = IfThenElse(simplify(extent > 0), out)
    for a in reversed(allocs):
        out = replace(a, body=out)
    return out


class _Inject(IRMutator):
    def visit_For(self, node):
        node = self.generic_visit(node)
        chain, items = allocation_chain(node.body)
        if any(DOUBLE_BUFFER in a.annotations for a in chain):
            return _double(node, chain, items)
        return node


class _Leftover(IRMutator):
    """A double buffer whose loop ran once and was simplified away: nothing to overlap."""

    def visit_Allocate(self, node):
        node = self.generic_visit(node)
        if DOUBLE_BUFFER in node.annotations:
            return replace(node, annotations=())
        return node


def inject_double_buffer(stmt):
    """Rewrite the loops that fill double-buffered allocations (see the module docstring)."""
    return _Leftover().visit(_Inject().visit(stmt))

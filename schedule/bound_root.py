"""The region a stage computed at the root computes: what its readers read (TVM's
``InferRootBound`` for a stage that is no output), every loop of the readers relaxed.

A stage keeps its whole domain where the region is not known to be smaller: it is an
output or an argument of the function, a reader is no compute (an extern function, a scan)
or reads it at a data-dependent index, it belongs to a scan or a group, or the region's
ends are not constants inside the domain.
"""
from __future__ import annotations

from te.arith import skey
from te.expr import IntImm, const
from te.tensor import ComputeOp, Range

from .simplify import simplify


def root_region(sch, stage, bounds, bodies, keep):
    """{root axis: Range} of the root stage ``stage``, or None for its whole domain."""
    from .bound import _has_load, _loads, _relaxed, interval, reader_values
    op = stage.op
    if stage.is_output or op in keep or stage.scan is not None or stage.group is not None \
            or not op.axis:
        return None
    readers = [r for r in sch.stages if op in {t.op for t in r.op.input_tensors()}]
    direct = [r for r in sch.stages if r in bodies and _loads(bodies[r], op)]
    if not direct:
        return None
    for r in readers:
        if r.attach_type != "inline" and (r not in bodies or not isinstance(r.op, ComputeOp)):
            return None         # read whole (an extern function, a scan)
    regions = [None] * len(op.axis)
    for r in direct:
        if r not in bounds:
            return None
        relax = {}
        cur = r
        while True:
            for leaf in cur.leaf_iter_vars:
                if leaf in bounds[cur].extents:
                    relax[leaf.var] = _relaxed(leaf, bounds[cur].extents[leaf])
            if cur.attach_type != "scope":
                break
            cur = cur.attach_stage
        vmap = reader_values(r, bounds[r])
        from te.functor import substitute
        seen = set()
        for load in _loads(bodies[r], op):
            key = skey(load.indices)
            if key in seen:         # the same read again (Winograd's selects repeat them)
                continue
            seen.add(key)
            for d, idx in enumerate(load.indices):
                idx = substitute(idx, vmap)
                itv = None if _has_load(idx) else interval(idx, relax)
                if itv is None:
                    return None
                lo, hi = simplify(itv[0]), simplify(itv[1])
                if not (isinstance(lo, IntImm) and isinstance(hi, IntImm)):
                    return None
                old = regions[d]
                regions[d] = (lo.value, hi.value) if old is None else \
                    (min(old[0], lo.value), max(old[1], hi.value))
    out, smaller = {}, False
    for iv, reg in zip(op.axis, regions):
        dom = iv.dom.extent
        if not isinstance(dom, IntImm) or not isinstance(iv.dom.min, IntImm) or \
                iv.dom.min.value != 0:
            out[iv] = Range(const(0), dom)
            continue
        lo, hi = max(reg[0], 0), min(reg[1], dom.value - 1)
        if lo > 0 or hi < dom.value - 1:
            if hi < lo:
                return None         # reads nothing of the domain: left whole
            smaller = True
            out[iv] = Range(const(lo), const(hi - lo + 1))
        else:
            out[iv] = Range(const(0), dom)
    return out if smaller else None

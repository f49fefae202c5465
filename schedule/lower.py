"""lower(): a schedule and its arguments to a PrimFunc, as a short script of passes.

    bodies = inline_bodies(sch)            # compute_inline
    bounds = infer_bound(sch, bodies)      # ranges of every IterVar
    func   = schedule_ops(...)             # stages -> loop nest
    func   = insert_bound_checks(func)     # every access proved, checked per call or in the kernel
    for p in PASSES: func.body = p(func.body)

``PASSES`` is a plain tuple that users may extend. With ``TW_DEBUG=2`` (or ``debug=True``) the IR
is printed after each pass; with ``TW_VERIFY=1`` the verifier runs between passes.
"""
from __future__ import annotations

import dataclasses

from . import config
from .bound import infer_bound, shift_splits
from .bound_checks import insert_bound_checks
from .build_loops import schedule_ops
from .inline import inline_bodies
from .passes.inject_double_buffer import inject_double_buffer
from .passes.inject_virtual_thread import inject_virtual_thread
from .passes.loop_partition import loop_partition
from .passes.simplify import simplify_stmt
from .passes.storage_flatten import storage_flatten
from .passes.unroll_loops import unroll_loops
from .passes.vectorize_loops import vectorize_loops
from .schedule import Schedule
from te.tensor import Tensor
from .stage import ScheduleError

PASSES = (
    simplify_stmt,
    storage_flatten,
    inject_virtual_thread,
    loop_partition,
    unroll_loops,
    simplify_stmt,      # guards and clamps that the partition or unrolling made constant
    vectorize_loops,
    simplify_stmt,
)


GPU_PASSES = (
    simplify_stmt,
    storage_flatten,
    inject_virtual_thread,
    loop_partition,
    inject_double_buffer,   # after the partition: its `ko + 1 < end` guard stays in the loop
    unroll_loops,
    simplify_stmt,
)


def lower(sch, args, name="main", simple_mode=None, binds=None, debug=None, passes=None,
          target=None):
    """Lower schedule ``sch`` over ``args`` (tensors and vars) to a PrimFunc.

    ``target="cuda"`` picks ``GPU_PASSES`` (no SIMD vectorization: lanes are threads there).
    """
    if passes is None and target is not None and str(target).split()[0] == "cuda":
        passes = GPU_PASSES
    if not isinstance(sch, Schedule):
        raise ScheduleError("te.lower expects a schedule from te.create_schedule(...)")
    if not isinstance(args, (list, tuple)):
        raise ScheduleError("te.lower: args must be a list of the tensors (and vars) of the "
                            "function, e.g. [A, B, C]")
    if not isinstance(name, str) or not name:
        raise ScheduleError(f"te.lower/te.build: name must be a non-empty string, got {name!r}")
    for st in sch.stages:
        if st.scope == "warp":
            raise ScheduleError(f"lower: stage {st.name} has scope 'warp' (TVM's warp memory, "
                                "which TVM lowers to warp shuffles); its bounds are inferred "
                                "as TVM's, but this compiler does not lower it: use 'shared' "
                                "or 'local'")
    bodies = inline_bodies(sch)
    keep = {t.op for t in args if isinstance(t, Tensor)}
    keep |= {sch.current(t).op for t in args if isinstance(t, Tensor) and t.op in sch.stage_map}
    bounds = infer_bound(sch, bodies, keep)
    func = schedule_ops(sch, bounds, bodies, list(args), name)
    if config.BOUND_CHECKS:
        func = insert_bound_checks(func, fast=passes is not GPU_PASSES,
                                   shifts=shift_splits(bounds))
    show = config.DEBUG >= 2 if debug is None else debug
    if config.VERIFY:
        from .verify import verify
        verify(func)
    for p in (PASSES if passes is None else passes):
        body = p(func.body)
        if show:
            print(f"# after {p.__name__}" + ("" if body is not func.body else " (unchanged)"))
            if body is not func.body:
                print(dataclasses.replace(func, body=body))
        func = dataclasses.replace(func, body=body)
        if config.VERIFY:
            from .verify import verify
            verify(func)
    if config.DEBUG >= 1:
        print(f"# lowered {func.name}\n{func}")
    return func

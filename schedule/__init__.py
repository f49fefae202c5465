"""Schedules (how to compute a te graph) and lowering to the loop IR.

As ``te.schedule`` it also answers TVM's names of that module: ``InferBound``, ``ScheduleOps``,
the relations ``Split`` / ``Fuse`` / ``Singleton``, ``AutoInlineElemWise`` and its kin.
"""
from te.tensor import IterVar

from .bound import InferBound
from .build_loops import ScheduleOps
from .inline import AutoInlineBroadcast, AutoInlineElemWise, AutoInlineInjective
from .ir import Buffer as _LoopBuffer
from .schedule import Schedule, create_schedule
from .stage import Fuse, ScheduleError, Singleton, Split, Stage
from .lower import PASSES, lower

__all__ = ["Schedule", "Stage", "ScheduleError", "create_schedule", "lower", "PASSES",
           "InferBound", "ScheduleOps", "Split", "Fuse", "Singleton", "IterVar", "Buffer",
           "AutoInlineElemWise", "AutoInlineBroadcast", "AutoInlineInjective"]


class _AnyBuffer(type):
    def __instancecheck__(cls, obj):
        from te.extern import ExternBuffer
        kinds = [_LoopBuffer, ExternBuffer]
        try:
            from te.tensor_intrin import DeclBuffer
            kinds.append(DeclBuffer)
        except ImportError:         # pragma: no cover (tensorize not installed)
            pass
        return isinstance(obj, tuple(kinds))


class Buffer(metaclass=_AnyBuffer):
    """TVM's ``tir.Buffer`` as ``isinstance`` sees it: the loop IR's buffers, the buffers an
    extern function receives (``te.extern``) and those of tensor intrinsics
    (``te.tir.decl_buffer``)."""

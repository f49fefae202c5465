"""Schedules (how to compute a te graph) and lowering to the loop IR.

As ``te.schedule`` it also answers TVM's names of that module: ``InferBound``, ``ScheduleOps``,
the relations ``Split`` / ``Fuse`` / ``Singleton``, ``AutoInlineElemWise`` and its kin.
"""
from te.tensor import IterVar

from .bound import InferBound
from .build_loops import ScheduleOps
from .inline import AutoInlineBroadcast, AutoInlineElemWise, AutoInlineInjective
from .ir import Buffer
from .schedule import Schedule, create_schedule
from .stage import Fuse, ScheduleError, Singleton, Split, Stage
from .lower import PASSES, lower

__all__ = ["Schedule", "Stage", "ScheduleError", "create_schedule", "lower", "PASSES",
           "InferBound", "ScheduleOps", "Split", "Fuse", "Singleton", "IterVar", "Buffer",
           "AutoInlineElemWise", "AutoInlineBroadcast", "AutoInlineInjective"]

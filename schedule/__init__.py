"""Schedules (how to compute a te graph) and lowering to the loop IR."""
from .schedule import Schedule, create_schedule
from .stage import ScheduleError, Stage
from .lower import PASSES, lower

__all__ = ["Schedule", "Stage", "ScheduleError", "create_schedule", "lower", "PASSES"]

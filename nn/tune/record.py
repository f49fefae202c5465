"""Tuning records: one JSON line per trial, and building with the best recorded config.

A line holds the workload (template name and arguments), the target, the config, the run times
in seconds, the error (or null), the build time and a timestamp. ``apply_history_best(log)`` reads
them back; inside it, calling a template (``gemm(512, 512, 512)``) or ``build_best`` uses the
fastest error-free config recorded for that workload and target. The target is the one asked for,
else the current ``te.target.Target``, else the only target the workload has records for.
"""
from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass

import te
from te.target import Target

from .measure import MeasureResult
from .space import ConfigEntity
from .template import CURRENT_CONTEXT, canonical_args, get_template

VERSION = 1


@dataclass(frozen=True)
class TuningRecord:
    """One trial read back from a log: workload ``(name, args)``, target, config and result."""

    workload: tuple
    target: str
    config: ConfigEntity
    result: MeasureResult


def encode(inp, result):
    """The JSON line (without newline) for one measured input."""
    task = inp.task
    return json.dumps({
        "workload": [task.name, task.args], "target": task.target,
        "config": inp.config.to_json(), "costs": list(result.costs), "error": result.error,
        "error_kind": result.error_kind, "build_time": result.build_time,
        "timestamp": result.timestamp, "version": VERSION})


def decode(line):
    """The TuningRecord of one JSON line."""
    data = json.loads(line)
    name, args = data["workload"]
    result = MeasureResult(costs=tuple(data["costs"]), error=data.get("error"),
                           error_kind=data.get("error_kind"),
                           build_time=data.get("build_time", 0.0),
                           timestamp=data.get("timestamp", 0.0))
    return TuningRecord((name, canonical_args(args)), data["target"],
                        ConfigEntity.from_json(data["config"]), result)


def load_records(path):
    """All records of a log file; a line that does not parse (a cut-off write) is skipped."""
    records = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                records.append(decode(line))
            except (ValueError, KeyError, TypeError) as err:
                warnings.warn(f"{path}:{lineno}: skipping a record that does not parse ({err})",
                              stacklevel=2)
    return records


class apply_history_best:
    """A context in which templates use the fastest error-free config recorded for each
    workload and target; ``records`` is a log path or a list of TuningRecords, ``target``
    keeps only the records of that target."""

    def __init__(self, records, target=None):
        if isinstance(records, (str, os.PathLike)):
            records = load_records(records)
        self.target = None if target is None else str(target)
        self.best: dict[tuple, dict[str, TuningRecord]] = {}    # workload -> target -> record
        for rec in records:
            if (self.target is not None and rec.target != self.target) or not rec.result.ok:
                continue
            by_target = self.best.setdefault(rec.workload, {})
            known = by_target.get(rec.target)
            if known is None or rec.result.cost < known.result.cost:
                by_target[rec.target] = rec
        self._tokens = []

    def targets(self, name, args):
        """The targets with an error-free record of template ``name`` on ``args``, sorted."""
        return sorted(self.best.get((name, canonical_args(args)), {}))

    def query_target(self, target=None):
        """The target a query means: ``target``, else the current ``te.target.Target``, else
        this context's target (None: any one target recorded)."""
        if target is None:
            target = Target.current() or self.target
        return None if target is None else str(target)

    def query(self, name, args, target=None):
        """The best config for template ``name`` on ``args`` for ``query_target(target)``, or
        None; without a target, ValueError if the records hold several targets for it."""
        args = canonical_args(args)
        by_target = self.best.get((name, args), {})
        target = self.query_target(target)
        if target is not None:
            rec = by_target.get(target)
        elif len(by_target) > 1:
            raise ValueError(
                f"the tuning records hold configs of {name}{args} for targets {sorted(by_target)}"
                f"; say which one: build_best(..., target=...), apply_history_best(log, "
                f"target=...) or call the template inside `with te.target.Target(...)`")
        else:
            rec = next(iter(by_target.values()), None)
        return rec.config if rec is not None else None

    def __enter__(self):
        self._tokens.append(CURRENT_CONTEXT.set(self))
        return self

    def __exit__(self, *exc):
        CURRENT_CONTEXT.reset(self._tokens.pop())

    def __repr__(self):
        return f"apply_history_best({len(self.best)} workloads)"


def build_best(tmpl, *args, target=None, log=None):
    """Build template ``tmpl`` (a name or a Template) on ``args`` with its best config for
    ``target``: from ``log`` if given, else from the enclosing ``apply_history_best``.

    Without ``target``: the current ``te.target.Target``, else the one target the records hold
    for this workload (ValueError if they hold several), else 'llvm'.
    """
    tmpl = get_template(tmpl) if isinstance(tmpl, str) else tmpl
    args = canonical_args(args)
    context = apply_history_best(log) if log is not None else CURRENT_CONTEXT.get()
    if target is None:
        target = _records_target(context, tmpl.name, args)
    with Target(str(target)):
        if log is None:
            sch, tensors = tmpl(*args)
        else:
            with context:
                sch, tensors = tmpl(*args)
    return te.build(sch, tensors, target=target, name=tmpl.name)


def _records_target(context, name, args):
    current = Target.current()
    if current is not None:
        return str(current)
    if context is None:
        return "llvm"
    found = context.targets(name, args)
    if len(found) > 1:
        raise ValueError(f"build_best({name!r}, ...): the records hold configs of {name}{args} "
                         f"for targets {found}; pass target= to say which one to build")
    return found[0] if found else context.target or "llvm"

"""Tuning records: one JSON line per trial, and building with the best recorded config.

A line holds the workload (template name and arguments), the target, the config, the run times
in seconds, the error (or null), the build time and a timestamp. ``apply_history_best(log)`` reads
them back; inside it, calling a template (``gemm(512, 512, 512)``) or ``build_best`` uses the
fastest error-free config recorded for that workload.
"""
from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass

import te

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
    workload; ``records`` is a log path or a list of TuningRecords."""

    def __init__(self, records, target=None):
        if isinstance(records, (str, os.PathLike)):
            records = load_records(records)
        self.best: dict[tuple, TuningRecord] = {}
        for rec in records:
            if (target is not None and rec.target != str(target)) or not rec.result.ok:
                continue
            known = self.best.get(rec.workload)
            if known is None or rec.result.cost < known.result.cost:
                self.best[rec.workload] = rec
        self._tokens = []

    def query(self, name, args):
        """The best config for template ``name`` on ``args``, or None."""
        rec = self.best.get((name, canonical_args(args)))
        return rec.config if rec is not None else None

    def __enter__(self):
        self._tokens.append(CURRENT_CONTEXT.set(self))
        return self

    def __exit__(self, *exc):
        CURRENT_CONTEXT.reset(self._tokens.pop())

    def __repr__(self):
        return f"apply_history_best({len(self.best)} workloads)"


def build_best(tmpl, *args, target="llvm", log=None):
    """Build template ``tmpl`` (a name or a Template) on ``args`` with its best config: from
    ``log`` if given, else from the enclosing ``apply_history_best``."""
    tmpl = get_template(tmpl) if isinstance(tmpl, str) else tmpl
    if log is not None:
        with apply_history_best(log, target=target):
            return build_best(tmpl, *args, target=target)
    sch, tensors = tmpl(*args)
    return te.build(sch, tensors, target=target, name=tmpl.name)


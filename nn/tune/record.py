"""Tuning records: one JSON line per trial, and building with the best recorded config.

A line holds the workload (template name and arguments), the target, the config, the run times
in seconds, the error (or null), the build time and a timestamp. ``apply_history_best(log)`` reads
them back; inside it, calling a template (``gemm(512, 512, 512)``) or ``build_best`` uses the
fastest error-free config recorded for that workload and target. The target is the one asked for,
else the current ``te.target.Target``, else the only target the workload has records for.
Targets are compared canonically (kind, then options sorted), so the spelling of a target string
does not matter. A line that does not parse or has a field of the wrong type is skipped with a
warning naming the file and line, and so is a line that is not valid UTF-8, nests arrays and
objects more than ``MAX_DEPTH`` deep, or is longer than ``MAX_LINE`` bytes (it is never read
whole); the rest of the file loads. A record whose config does not fit the template's current
space is skipped with a warning when the best is chosen. ``Tuner.load_history(log)`` resumes a
search.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import te
from te.target import Target

from .. import safe_json
from .check import json_value, warn_user
from .measure import MeasureResult
from .space import ConfigEntity
from .template import _TEMPLATES, CURRENT_CONTEXT, canonical_args, canonical_target, get_template

VERSION = 1
MAX_LINE = 1 << 20          # bytes in one record line (a record is a few hundred)
MAX_DEPTH = 32              # arrays and objects nested in one record line


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
    """The TuningRecord of one JSON line (str, or bytes in UTF-8); ValueError if it does not
    parse, nests deeper than ``MAX_DEPTH``, or a field has the wrong type."""
    data = safe_json.loads(line, MAX_DEPTH)
    if not isinstance(data, dict):
        raise ValueError(f"a record is a JSON object, got {type(data).__name__}")
    version = data.get("version", VERSION)
    if type(version) is not int or version < 1:
        raise ValueError(f"version should be a positive integer, got {version!r}")
    if version > VERSION:
        raise ValueError(f"the record is of version {version}, written by a newer tensorweave "
                         f"(this one reads version {VERSION})")
    for key in ("workload", "target", "config", "costs"):
        if key not in data:
            raise ValueError(f"the record has no {key!r} field")
    workload = data["workload"]
    if not (isinstance(workload, list) and len(workload) == 2 and isinstance(workload[0], str)
            and isinstance(workload[1], list)):
        raise ValueError(f"workload should be [template name, [args]], got {workload!r}")
    name, args = workload
    args = json_value("record", "workload argument", args)   # numbers, strings, lists: no dict
    if not isinstance(data["target"], str):
        raise ValueError(f"target should be a string, got {data['target']!r}")
    canonical_target(data["target"])                       # ValueError if it does not parse
    costs = data["costs"]
    if not (isinstance(costs, list) and all(_is_time(c) for c in costs)):
        raise ValueError(f"costs should be a list of run times in seconds, got {costs!r}")
    for key in ("error", "error_kind"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise ValueError(f"{key} should be a string or null, got {data[key]!r}")
    for key in ("build_time", "timestamp"):
        if not _is_time(data.get(key, 0.0)):
            raise ValueError(f"{key} should be a number of seconds, got {data[key]!r}")
    result = MeasureResult(costs=tuple(costs), error=data.get("error"),
                           error_kind=data.get("error_kind"),
                           build_time=data.get("build_time", 0.0),
                           timestamp=data.get("timestamp", 0.0))
    config = ConfigEntity.from_json(data["config"])
    for knob, entity in config.entities.items():
        json_value("record", f"knob {knob!r}", entity.value)       # as define_knob takes
    return TuningRecord((name, canonical_args(args)), data["target"], config, result)


def _is_time(value):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        value = float(value)
    except OverflowError:                       # an int too large for a float
        return False
    return math.isfinite(value) and value >= 0


def load_records(path):
    """All records of a log file; a line that does not parse (a cut-off write, invalid UTF-8,
    nested too deep), is too long or has a field of the wrong type is skipped with a warning
    naming the file and line."""
    records = []
    with open(path, "rb") as f:
        for lineno, line in enumerate(_lines(f), 1):
            if isinstance(line, int):
                warn_user(f"{path}:{lineno}: skipping a line of {line} bytes, longer than the "
                          f"{MAX_LINE} bytes a record may have")
                continue
            if not line.strip():
                continue
            try:
                records.append(decode(line))
            except (ValueError, KeyError, TypeError) as err:
                text = str(err)
                text = text if len(text) <= 300 else text[:297] + "..."
                warn_user(f"{path}:{lineno}: skipping a record that does not parse ({text})")
    return records


def _lines(f):
    """The lines of a binary file, each as bytes, or as its length (an int) when it is longer
    than ``MAX_LINE``: a long line is read in bounded pieces and dropped."""
    while True:
        line = f.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) <= MAX_LINE or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = f.readline(MAX_LINE)
            if not line:
                break
            size += len(line)
        yield size - line.endswith(b"\n")          # without its newline


def as_records(records, owner):
    """``records`` as a list of TuningRecords: read from a log path, or given as a list."""
    if isinstance(records, (str, os.PathLike)):
        return load_records(records)
    records = list(records)
    for rec in records:
        if not isinstance(rec, TuningRecord):
            raise TypeError(f"{owner}: records must be a log path or a list of TuningRecords "
                            f"(from tune.load_records), got an item {rec!r}")
    return records


def _describe(rec):
    name, args = rec.workload
    return f"{name}{args} (target {rec.target!r}, config {rec.config!r})"


class apply_history_best:
    """A context in which templates use the fastest error-free config recorded for each
    workload and target; ``records`` is a log path or a list of TuningRecords, ``target``
    keeps only the records of that target.

    Targets are compared canonically: ``'llvm -mcpu=haswell -mattr=+avx2'`` and
    ``'llvm -mattr=+avx2  -mcpu=haswell'`` are the same target. A record whose config does not
    fit the template's current space (a knob missing or extra, a value that is not a choice) is
    skipped with a warning and the next fastest is used. Nested contexts behave as TVM's
    dispatch contexts: a workload the inner one has no record of is looked up in the enclosing
    one.
    """

    def __init__(self, records, target=None):
        records = as_records(records, "apply_history_best")
        self.target = None if target is None else canonical_target(target)
        # workload -> canonical target -> error-free records, fastest first
        self._records: dict[tuple, dict[str, list[TuningRecord]]] = {}
        for rec in records:
            key = canonical_target(rec.target)
            if (self.target is not None and key != self.target) or not rec.result.ok:
                continue
            self._records.setdefault(rec.workload, {}).setdefault(key, []).append(rec)
        for by_target in self._records.values():
            for recs in by_target.values():
                recs.sort(key=lambda r: r.result.cost)
        self._chosen: dict[tuple, ConfigEntity | None] = {}     # checked against the space
        self._tokens = []
        self._parents = []

    @property
    def best(self):
        """workload -> target -> the fastest error-free record (before checking it against
        the template's space)."""
        return {w: {t: recs[0] for t, recs in by_target.items()}
                for w, by_target in self._records.items()}

    def targets(self, name, args):
        """The targets with an error-free record of template ``name`` on ``args``, sorted (from
        the enclosing context if this one has none)."""
        found = sorted(self._records.get((name, canonical_args(args)), {}))
        parent = self._parent()
        return found if found or parent is None else parent.targets(name, args)

    def query_target(self, target=None):
        """The target a query means, canonical: ``target``, else the current
        ``te.target.Target``, else this context's target (None: any one target recorded)."""
        if target is None:
            target = Target.current() or self.target
        return None if target is None else canonical_target(str(target))

    def query(self, name, args, target=None):
        """The best config for template ``name`` on ``args`` for ``query_target(target)``, or
        None; without a target, ValueError if the records hold several targets for it."""
        args = canonical_args(args)
        by_target = self._records.get((name, args), {})
        key = self.query_target(target)
        if key is None and len(by_target) > 1:
            raise ValueError(
                f"the tuning records hold configs of {name}{args} for targets {sorted(by_target)}"
                f"; say which one: build_best(..., target=...), apply_history_best(log, "
                f"target=...) or call the template inside `with te.target.Target(...)`")
        if key is None:
            key = next(iter(by_target), None)
        config = self._fitting(name, args, key) if key is not None else None
        parent = self._parent()
        if config is None and parent is not None:
            return parent.query(name, args, target)
        return config

    def _fitting(self, name, args, target):
        """The fastest recorded config that fits the template's space, or None."""
        if (name, args, target) not in self._chosen:
            recs = self._records.get((name, args), {}).get(target, [])
            self._chosen[name, args, target] = _first_fitting(name, args, recs)
        return self._chosen[name, args, target]

    def _parent(self):
        parent = self._parents[-1] if self._parents else None
        return parent if parent is not self else None

    def __enter__(self):
        self._parents.append(CURRENT_CONTEXT.get())
        self._tokens.append(CURRENT_CONTEXT.set(self))
        return self

    def __exit__(self, *exc):
        CURRENT_CONTEXT.reset(self._tokens.pop())
        self._parents.pop()

    def __repr__(self):
        return f"apply_history_best({len(self._records)} workloads)"


def _first_fitting(name, args, recs):
    if not recs:
        return None
    if name not in _TEMPLATES:                  # nothing to check against
        return recs[0].config
    space = get_template(name).space(*args)
    for rec in recs:
        index = fitting_index(space, rec)
        if index is not None:
            return space.get(index)
    return None


def fitting_index(space, rec, owner=None):
    """The index of ``rec``'s config in ``space`` (its template's space), or None with a
    warning that the record is skipped because it does not fit."""
    try:
        return space.index_of(rec.config)
    except ValueError as err:
        warn_user(f"{owner + ': ' if owner else ''}skipping the record of {_describe(rec)}: it "
                  f"does not fit the space of template {rec.workload[0]!r} ({err}); was it "
                  "tuned with another version of the template?")
        return None


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

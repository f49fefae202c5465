"""Schedule templates: functions ``f(cfg, *args) -> (schedule, tensors)`` registered by name.

``@template("gemm")`` registers a function. Calling the result as ``gemm(M, N, K)`` asks the
current dispatch context (``apply_history_best``) for the best known config of that workload for
the current target (``with te.target.Target(...)``, else the one target it has records for) and
falls back to the space's first point (``cfg.is_fallback``), with a warning, when there is none.
A ``Task`` fixes the arguments and the target: it is what tuners search, and its workload
``(name, args)`` and target are the key of the tuning records.
"""
from __future__ import annotations

import contextvars
import functools
import importlib


from te.target import Target

from .check import json_value, plain, warn_user
from .flop import count_flop
from .space import ConfigSpace

TUNING_TARGETS = ("llvm", "cuda")

_TEMPLATES: dict[str, "Template"] = {}

# the innermost active dispatch context (an ApplyHistoryBest), or None
CURRENT_CONTEXT = contextvars.ContextVar("nn_tune_dispatch", default=None)


def template(name, reference=None):
    """Register a schedule template under ``name``.

    ``reference(*inputs, *args)``, if given, computes the outputs with numpy from the input
    arrays (the placeholders among the returned tensors, in order) and the template arguments;
    tuning then rejects any candidate whose result differs.
    """
    def register(func):
        tmpl = Template(name, func, reference)
        _TEMPLATES[name] = tmpl      # a re-run notebook cell replaces its earlier definition
        return tmpl
    return register


def get_template(name):
    """The registered template called ``name``."""
    try:
        return _TEMPLATES[name]
    except KeyError:
        raise KeyError(f"no template {name!r}; registered: {sorted(_TEMPLATES)} (import the "
                       "module that defines it)") from None


class Template:
    """A registered template; call it with the workload arguments to get ``(sch, tensors)``."""

    def __init__(self, name, func, reference=None):
        self.name = name
        self.func = func
        self.reference = reference
        self.module = func.__module__
        functools.update_wrapper(self, func)
        self._warned = set()

    def __call__(self, *args):
        args = canonical_args(args)
        context = CURRENT_CONTEXT.get()
        config = context.query(self.name, args) if context is not None else None
        if config is None:
            message = _no_config_message(self.name, args, context)
            if (args, message) not in self._warned:
                self._warned.add((args, message))
                warn_user(message)
            config = self.space(*args).fallback()
        return self.func(config, *args)

    def space(self, *args):
        """The configuration space of this template for ``args``; its ``flop`` is what the
        template gave to ``cfg.add_flop``, else the count of its compute's operations."""
        space = ConfigSpace()
        built = self.func(space, *canonical_args(args))
        tensors = built[1] if isinstance(built, (tuple, list)) and len(built) == 2 else ()
        if not space.flop and isinstance(tensors, (tuple, list)):
            space.flop = count_flop(tensors)
        return space

    def instantiate(self, config, *args):
        """``(sch, tensors)`` for the given point of the space."""
        return self.func(config, *canonical_args(args))

    def __reduce__(self):
        # by name, so that a worker process finds the same registered template; a template
        # defined in __main__ (a notebook) travels by value, which needs cloudpickle
        if self.module == "__main__":
            return (Template, (self.name, self.func, self.reference))
        return (_find_template, (self.module, self.name))

    def __repr__(self):
        return f"<template {self.name!r} from {self.module}>"


def _no_config_message(name, args, context):
    workload = f"{name}{args}"
    if context is None:
        return (f"no tuned config for {workload}: using the default (the first point of its "
                "space); tune it and build inside apply_history_best(log)")
    target = context.query_target()
    others = [t for t in context.targets(name, args) if t != target]
    if not others:
        where = f" for target {target!r}" if target is not None else ""
        return (f"no tuned config for {workload}{where} in the records: using the default (the "
                "first point of its space); tune it for this target and log the trials")
    found = ", ".join(repr(t) for t in others)
    return (f"no tuned config for {workload} for target {target!r}, but the records hold configs "
            f"for target {found}: using the default (the first point of its space); pass "
            f"target={others[0]!r} to build_best or apply_history_best if that target is meant")


def _find_template(module, name):
    if name not in _TEMPLATES:
        importlib.import_module(module)
    return get_template(name)


def canonical_args(args):
    """Workload arguments as a hashable tuple (lists become tuples, numpy scalars Python
    numbers), as records store them."""
    return plain(tuple(args))


def canonical_target(target):
    """The target as records compare it: the kind, then its options sorted by name (and
    ``-mattr`` features sorted), single spaces: ``'llvm -mattr=+avx2,+fma -mcpu=haswell'``."""
    parsed = Target(target)
    opts = dict(parsed.opts)
    if parsed.mcpu is not None:
        opts["mcpu"] = parsed.mcpu
    if parsed.mattr:
        opts["mattr"] = ",".join(sorted(parsed.mattr))
    return " ".join([parsed.kind.name, *(f"-{k}={v}" for k, v in sorted(opts.items()))])


class Task:
    """One template applied to fixed arguments, for one target: what a tuner searches."""

    def __init__(self, tmpl, args, target="llvm"):
        self.template = get_template(tmpl) if isinstance(tmpl, str) else tmpl
        if not isinstance(self.template, Template):
            raise TypeError(f"Task: tmpl must be a template name or a @tune.template function, "
                            f"got {tmpl!r}")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"Task({self.template.name!r}): args must be a tuple of the "
                            f"template's arguments, e.g. (64,), got {args!r}")
        self.args = json_value(f"Task({self.template.name!r})", "args", args)
        self.target = _tuning_target(self.template.name, target)
        self.space = self.template.space(*self.args)

    @property
    def name(self):
        return self.template.name

    @property
    def workload(self):
        """``(template name, args)``: the key of this task's records."""
        return (self.name, self.args)

    @property
    def flop(self):
        """Operations per run: the template's ``cfg.add_flop`` total, else the count of its
        compute's operations (0 for pure data movement: tuners then report run time)."""
        return self.space.flop

    def __repr__(self):
        return (f"Task({self.name}{self.args}, target={self.target!r}, "
                f"space={len(self.space)} configs)")



def _tuning_target(name, target):
    try:
        kind = Target(target).kind.name
    except ValueError as err:
        raise ValueError(f"Task({name!r}): target={target!r}: {err}") from None
    if kind not in TUNING_TARGETS:
        raise ValueError(f"Task({name!r}): target={str(target)!r} cannot be tuned; use 'llvm' "
                         "(the CPU, optionally 'llvm -mcpu=... -mattr=...') or 'cuda'")
    if kind == "cuda":
        _check_cuda(name)
    return str(target)


def _check_cuda(name):
    """Refuse a cuda task up front where no trial could run: no GPU and no simulator."""
    device = importlib.import_module("nn.device")    # numba is imported only for cuda tasks
    if not device.cuda_available():
        raise RuntimeError(
            f"Task({name!r}): target='cuda' needs an NVIDIA GPU, and numba finds none "
            "(numba.cuda.is_available() is False), so every trial would fail. Tune on a machine "
            "with a GPU and its driver, tune for 'llvm' instead, or set NUMBA_ENABLE_CUDASIM=1 "
            "before numba is imported to measure on numba's (slow) simulator")

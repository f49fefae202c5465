"""Generic expression traversal: a visitor and a mutator that recurse by default.

Dispatch is on ``"visit_" + type(node).__name__`` like ``ast.NodeVisitor``; a node without a
handler is visited field by field. The mutator returns the same node when nothing changed, so
callers can test ``new is old``. ``schedule.functor`` extends both to statements.
"""
from __future__ import annotations

import dataclasses

from .expr import Expr, Var


_FIELDS = {}    # dataclass type -> its field names (dataclasses.fields is slow per call)


def _fields(node):
    cls = type(node)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _is_node(x):
    return hasattr(type(x), "__dataclass_fields__") and not isinstance(x, type)


class ExprVisitor:
    """Walks expressions (and, in subclasses, statements); override ``visit_<Node>``."""

    def visit(self, node):
        cls = type(self)
        table = cls.__dict__.get("_dispatch")
        if table is None:
            table = {}
            setattr(cls, "_dispatch", table)
        key = type(node)
        if key not in table:
            table[key] = getattr(cls, "visit_" + key.__name__, None)
        method = table[key]
        if method is not None:
            return method(self, node)
        return self.generic_visit(node)

    def generic_visit(self, node):
        for name in _fields(node):
            self._visit_value(getattr(node, name))

    def _visit_value(self, value):
        if isinstance(value, Expr) or (_is_node(value) and self._descend(value)):
            self.visit(value)
        elif isinstance(value, tuple):
            for v in value:
                self._visit_value(v)

    def _descend(self, node) -> bool:
        """Whether a non-Expr dataclass field (a statement) is traversed."""
        return False


class ExprMutator(ExprVisitor):
    """Rebuilds expressions bottom-up; returns the same node when nothing changed."""

    def generic_visit(self, node):
        changes = None
        for name in _fields(node):
            old = getattr(node, name)
            new = self._mutate_value(old)
            if new is not old:
                if changes is None:
                    changes = {}
                changes[name] = new
        return dataclasses.replace(node, **changes) if changes else node

    def _mutate_value(self, value):
        if isinstance(value, Expr) or (_is_node(value) and self._descend(value)):
            return self.visit(value)
        if isinstance(value, tuple):
            new = tuple(self._mutate_value(v) for v in value)
            return value if all(a is b for a, b in zip(new, value)) else new
        return value


class Substitute(ExprMutator):
    """Replaces variables by expressions."""

    def __init__(self, vmap):
        self.vmap = vmap

    def visit_Var(self, node):
        return self.vmap.get(node, node)


def substitute(node, vmap):
    """``node`` with every Var in ``vmap`` replaced by its value."""
    if not vmap:
        return node
    return Substitute(vmap).visit(node)


class _Collector(ExprVisitor):
    def __init__(self, fn):
        self.fn = fn

    def visit(self, node):
        self.fn(node)
        return super().visit(node)


def post_order_visit(node, fn):
    """Call ``fn`` on every expression node under ``node`` (parents before children)."""
    _Collector(fn).visit(node)


def free_vars(node) -> list:
    """The Vars used in ``node``, in first-use order."""
    seen = {}
    post_order_visit(node, lambda n: seen.setdefault(n, None) if isinstance(n, Var) else None)
    return list(seen)

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


_MISSING = object()
_LEAF, _NODE, _TUPLE = 0, 1, 2


class ExprVisitor:
    """Walks expressions (and, in subclasses, statements); override ``visit_<Node>``.

    Each visitor class keeps two tables, filled as types are met: the handler of each node type
    and the kind of each field value's type (a leaf, a node to visit, a tuple), so that
    ``_descend`` is asked once per type."""

    _dispatch: dict = {}
    _kinds: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._dispatch, cls._kinds = {}, {}

    def visit(self, node):
        key = type(node)
        method = self._dispatch.get(key, _MISSING)
        if method is _MISSING:
            method = self._dispatch[key] = getattr(type(self), "visit_" + key.__name__, None)
        if method is not None:
            return method(self, node)
        return self.generic_visit(node)

    def _kind(self, value):
        t = type(value)
        kind = self._kinds.get(t)
        if kind is None:
            if isinstance(value, Expr) or (_is_node(value) and self._descend(value)):
                kind = _NODE
            elif isinstance(value, tuple):
                kind = _TUPLE
            else:
                kind = _LEAF
            self._kinds[t] = kind
        return kind

    def generic_visit(self, node):
        for name in _fields(node):
            value = getattr(node, name)
            kind = self._kind(value)
            if kind == _NODE:
                self.visit(value)
            elif kind == _TUPLE:
                self._visit_value(value)

    def _visit_value(self, value):
        kind = self._kind(value)
        if kind == _NODE:
            self.visit(value)
        elif kind == _TUPLE:
            for v in value:
                self._visit_value(v)

    def _descend(self, node) -> bool:
        """Whether a non-Expr dataclass field (a statement) is traversed (asked once per type)."""
        return False


class ExprMutator(ExprVisitor):
    """Rebuilds expressions bottom-up; returns the same node when nothing changed."""

    def generic_visit(self, node):
        changes = None
        for name in _fields(node):
            old = getattr(node, name)
            kind = self._kind(old)
            if kind == _LEAF:
                continue
            new = self.visit(old) if kind == _NODE else self._mutate_value(old)
            if new is not old:
                if changes is None:
                    changes = {}
                changes[name] = new
        return dataclasses.replace(node, **changes) if changes else node

    def _mutate_value(self, value):
        kind = self._kind(value)
        if kind == _NODE:
            return self.visit(value)
        if kind == _TUPLE:
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

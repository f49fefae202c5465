"""Structural equality of loop IR: same shape, same constants, variables matched by binding.

Variables bound by a For or Let in ``a`` correspond to those bound at the same place in ``b``;
free variables and buffers must correspond consistently (a one-to-one map built on first use).
"""
from __future__ import annotations

import dataclasses

from te.expr import Expr, Var

from .ir import Buffer, Stmt


def structural_equal(a, b) -> bool:
    """True if ``a`` and ``b`` are the same IR up to renaming of variables and buffers (for
    the same expression, each variable its own identity, see ``schedule.simplify.equal``)."""
    return _Eq().eq(a, b)


class _Eq:
    def __init__(self):
        self.fwd, self.bwd = {}, {}

    def _map(self, x, y):
        if x in self.fwd or y in self.bwd:
            return self.fwd.get(x) is y and self.bwd.get(y) is x
        self.fwd[x], self.bwd[y] = y, x
        return True

    def eq(self, x, y):
        if isinstance(x, Var) or isinstance(y, Var):
            return isinstance(x, Var) and isinstance(y, Var) and x.dtype == y.dtype and \
                self._map(x, y)
        if isinstance(x, Buffer) or isinstance(y, Buffer):
            return isinstance(x, Buffer) and isinstance(y, Buffer) and \
                x.dtype == y.dtype and self.eq(x.shape, y.shape) and self._map(x, y)
        if isinstance(x, (Expr, Stmt)):
            if type(x) is not type(y):
                return False
            return all(self.eq(getattr(x, f.name), getattr(y, f.name))
                       for f in dataclasses.fields(x))
        if isinstance(x, tuple):
            return isinstance(y, tuple) and len(x) == len(y) and \
                all(self.eq(p, q) for p, q in zip(x, y))
        return x == y

"""Reverse-mode differentiation of one scalar expression: the local adjoint of each load.

``backprop(expr, adj, wanted)`` walks ``expr`` from the top with the adjoint ``adj`` of its
value and returns, for every ``ProducerLoad`` of a tensor in ``wanted``, the adjoint reaching
that load and the conditions under which it does (the branches of ``select`` /
``if_then_else`` taken on the way). The conditions are kept apart rather than multiplied in,
so that the adjoint compute evaluates a guarded branch only where its guard holds (the loads
inside it may be out of bounds elsewhere). Integer and boolean subexpressions have no
derivative; an intrinsic without a known derivative raises ``TEError`` naming it.
"""
from __future__ import annotations

import math

from .. import dtypes
from ..expr import Expr, FloatImm, IntImm, cast, const, select
from ..functor import substitute
from ..intrin import cos, cosh, exp, log, power, sin, sinh, sqrt, trunc
from ..tensor import TEError

_ZERO_DERIVATIVE = {"floor", "ceil", "round", "trunc", "nearbyint"}


def is_zero(e):
    return isinstance(e, (IntImm, FloatImm)) and e.value == 0


def fadd(a, b):
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return a + b


def fmul(a, b):
    if is_zero(a) or is_zero(b):
        return const(0, a.dtype if isinstance(a, Expr) else b.dtype)
    if isinstance(a, FloatImm) and a.value == 1:
        return b
    if isinstance(b, FloatImm) and b.value == 1:
        return a
    return a * b


def fneg(a):
    if isinstance(a, FloatImm):
        return const(-a.value, a.dtype)
    return -a


class Site:
    """A load of a wanted tensor with the adjoint that reaches it."""

    def __init__(self, load, adjoint, conditions):
        self.load, self.adjoint, self.conditions = load, adjoint, conditions


def backprop(expr, adj, wanted, where=""):
    """The sites of ``expr``'s loads of tensors in ``wanted`` (a set of Tensors)."""
    sites = []
    _Backprop(wanted, sites, where).run(expr, adj, ())
    return sites


class _Backprop:
    def __init__(self, wanted, sites, where):
        self.wanted, self.sites, self.where = wanted, sites, where

    def run(self, e, adj, conds):
        if is_zero(adj) or not dtypes.is_float(e.dtype):
            return
        method = getattr(self, "visit_" + type(e).__name__, None)
        if method is None:
            raise TEError(f"te.gradient: cannot differentiate {type(e).__name__} node {e} "
                          f"in {self.where}")
        method(e, adj, conds)

    def visit_ProducerLoad(self, e, adj, conds):
        if e.producer in self.wanted:
            self.sites.append(Site(e, adj, conds))

    def visit_FloatImm(self, e, adj, conds):
        pass

    visit_Var = visit_IntImm = visit_FloatImm

    def visit_Add(self, e, adj, conds):
        self.run(e.a, adj, conds)
        self.run(e.b, adj, conds)

    def visit_Sub(self, e, adj, conds):
        self.run(e.a, adj, conds)
        self.run(e.b, fneg(adj), conds)

    def visit_Mul(self, e, adj, conds):
        self.run(e.a, fmul(adj, e.b), conds)
        self.run(e.b, fmul(adj, e.a), conds)

    def visit_Div(self, e, adj, conds):
        self.run(e.a, adj / e.b, conds)
        self.run(e.b, fneg(adj * e.a / (e.b * e.b)), conds)

    def visit_Max(self, e, adj, conds):         # te.max(a, b) is b on ties
        self.run(e.a, adj, conds + (e.a > e.b,))
        self.run(e.b, adj, conds + (e.a <= e.b,))

    def visit_Min(self, e, adj, conds):
        self.run(e.a, adj, conds + (e.a < e.b,))
        self.run(e.b, adj, conds + (e.a >= e.b,))

    def visit_Select(self, e, adj, conds):
        self.run(e.true_value, adj, conds + (e.condition,))
        self.run(e.false_value, adj, conds + (~e.condition,))

    def visit_Cast(self, e, adj, conds):
        if dtypes.is_float(e.value.dtype):
            self.run(e.value, cast(e.value.dtype, adj), conds)

    def visit_Let(self, e, adj, conds):
        self.run(substitute(e.body, {e.var: e.value}), adj, conds)

    def visit_Reduce(self, e, adj, conds):
        raise TEError(f"te.gradient: a reduction inside an expression in {self.where}")

    def visit_Call(self, e, adj, conds):
        name = e.op
        if name == "if_then_else":
            c, t, f = e.args
            self.run(t, adj, conds + (c,))
            self.run(f, adj, conds + (~c,))
            return
        if name in _ZERO_DERIVATIVE:
            return
        rule = _RULES.get(name)
        if rule is None:
            raise TEError(f"te.gradient: no derivative is known for the intrinsic '{name}' "
                          f"in {self.where}; write the computation with differentiable "
                          "operations, or give the gradient by hand")
        for arg, d in zip(e.args, rule(e, *e.args)):
            if d is not None:
                self.run(arg, fmul(adj, d), conds)


def _c(value, like):
    return const(value, like.dtype)


def _pow_rule(node, x, y):
    dx = y * power(x, y - _c(1, y))
    dy = select(x > _c(0, x), node * log(x), _c(0, x))
    return dx, dy


def _rules():
    ln2, ln10 = math.log(2.0), math.log(10.0)
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    one = _c
    return {
        "exp": lambda n, x: (n,),
        "exp2": lambda n, x: (n * one(ln2, x),),
        "exp10": lambda n, x: (n * one(ln10, x),),
        "log": lambda n, x: (one(1.0, x) / x,),
        "log2": lambda n, x: (one(1.0, x) / (x * one(ln2, x)),),
        "log10": lambda n, x: (one(1.0, x) / (x * one(ln10, x)),),
        "log1p": lambda n, x: (one(1.0, x) / (one(1.0, x) + x),),
        "sqrt": lambda n, x: (one(0.5, x) / n,),
        "rsqrt": lambda n, x: (one(-0.5, x) * n / x,),
        "tanh": lambda n, x: (one(1.0, x) - n * n,),
        "sigmoid": lambda n, x: (n * (one(1.0, x) - n),),
        "erf": lambda n, x: (one(two_over_sqrt_pi, x) * exp(fneg(x * x)),),
        "sin": lambda n, x: (cos(x),),
        "cos": lambda n, x: (fneg(sin(x)),),
        "tan": lambda n, x: (one(1.0, x) + n * n,),
        "asin": lambda n, x: (one(1.0, x) / sqrt(one(1.0, x) - x * x),),
        "acos": lambda n, x: (one(-1.0, x) / sqrt(one(1.0, x) - x * x),),
        "atan": lambda n, x: (one(1.0, x) / (one(1.0, x) + x * x),),
        "sinh": lambda n, x: (cosh(x),),
        "cosh": lambda n, x: (sinh(x),),
        "fabs": lambda n, x: (select(x > one(0, x), one(1.0, x),
                                     select(x < one(0, x), one(-1.0, x), one(0.0, x))),),
        "pow": _pow_rule,
        "fmod": lambda n, x, y: (one(1.0, x), fneg(trunc(x / y))),
    }


_RULES = _rules()

"""Solving a load's index equations for the consumer's loop variables.

A consumer reads ``X[g(v)]`` over its loop variables ``v`` (data axes and reduce axes). The
adjoint of ``X`` at ``j`` sums the consumer's local adjoint over every ``v`` with ``g(v) == j``.
``solve`` turns that set into a substitution (the variables that the equations determine, as
expressions of ``j`` and of the rest), guards (the determined variables stay in their domains,
divisibility) and the free variables left to sum over, with ranges tightened where a guard
bounds one of them by a constant-width window (a convolution's d(input) then sums over
``ceil(kernel / stride)`` taps, not the whole output). Affine equations with integer
coefficients are solved exactly; ``floordiv`` / ``floormod`` by constants become affine
equations with a new bounded variable; any other index (``min``, a data-dependent load) stays a
guard ``g(v) == j`` over the free variables it mentions.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..expr import (GE, GT, LE, LT, Add, And, Cast, Expr, FloorDiv, FloorMod, IntImm, Max,
                    Min, Mul, Not, Sub, Var, const,
                    floordiv, floormod)
from ..functor import _fields, free_vars, substitute
from .. import dtypes


# ----------------------------------------------------------------------------- folding helpers

def is_int_const(e, value=None):
    return isinstance(e, IntImm) and (value is None or e.value == value)


def iadd(a, b):
    """``a + b`` on integer expressions, folding constants."""
    if is_int_const(a, 0):
        return b
    if is_int_const(b, 0):
        return a
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return const(a.value + b.value, dtypes.promote(a.dtype, b.dtype))
    return a + b


def imul(c: int, e):
    """``c * e`` for a Python int ``c``."""
    if c == 0:
        return const(0, e.dtype)
    if c == 1:
        return e
    if isinstance(e, IntImm):
        return const(c * e.value, e.dtype)
    return const(c, e.dtype) * e


def ceildiv(e, c: int):
    """``ceil(e / c)`` for a positive constant ``c``."""
    if isinstance(e, IntImm):
        return const(-((-e.value) // c), e.dtype)
    return e if c == 1 else floordiv(iadd(e, const(c - 1, e.dtype)), c)


# ----------------------------------------------------------------------------- affine forms

@dataclass
class Linear:
    """``sum(coeffs[v] * v) + rest``: integer coefficients, ``rest`` free of the variables."""
    coeffs: dict
    rest: Expr

    def expr(self):
        out = self.rest
        for v, c in self.coeffs.items():
            out = iadd(out, imul(c, v))
        return out


def _mentions(e, variables) -> bool:
    return any(v in variables for v in free_vars(e))


def linear(e, variables):
    """The affine form of integer expression ``e`` in ``variables``, or None."""
    if not _mentions(e, variables):
        return Linear({}, e)
    if isinstance(e, Var):
        return Linear({e: 1}, const(0, e.dtype))
    if isinstance(e, (Add, Sub)):
        a, b = linear(e.a, variables), linear(e.b, variables)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, Add) else -1
        coeffs = dict(a.coeffs)
        for v, c in b.coeffs.items():
            coeffs[v] = coeffs.get(v, 0) + sign * c
        rest = iadd(a.rest, b.rest) if sign == 1 else _isub(a.rest, b.rest)
        return Linear({v: c for v, c in coeffs.items() if c}, rest)
    if isinstance(e, Mul):
        a, b = linear(e.a, variables), linear(e.b, variables)
        if a is None or b is None:
            return None
        if not a.coeffs and isinstance(a.rest, IntImm):
            return _scale(b, a.rest.value)
        if not b.coeffs and isinstance(b.rest, IntImm):
            return _scale(a, b.rest.value)
        return None
    if isinstance(e, Cast) and dtypes.is_int(e.dtype) and dtypes.is_int(e.value.dtype):
        return linear(e.value, variables)
    return None


def _isub(a, b):
    if is_int_const(b, 0):
        return a
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return const(a.value - b.value, dtypes.promote(a.dtype, b.dtype))
    return a - b


def _scale(form, c):
    return Linear({v: k * c for v, k in form.coeffs.items() if k * c},
                  imul(c, form.rest) if c != 1 else form.rest)


# ----------------------------------------------------------------------------- clamps

def unclamp(indices, conditions):
    """``indices`` with each ``min`` / ``max`` clamp that ``conditions`` make inactive
    replaced by its clamped operand: ``x[min(k, n - 1)]`` under ``k < n`` reads ``x[k]``,
    as padding and concatenation written with clamped indices do."""
    facts = []
    for c in conditions:
        _facts(c, facts)
    if not facts:
        return tuple(indices)
    return tuple(_unclamp(e, facts) for e in indices)


def _facts(c, out, negated=False):
    """Affine forms ``L`` with ``L >= 0`` that condition ``c`` implies."""
    if isinstance(c, Not):
        return _facts(c.a, out, not negated)
    if isinstance(c, And) and not negated:
        _facts(c.a, out)
        _facts(c.b, out)
        return
    kind = type(c)
    if negated:
        kind = {LT: GE, LE: GT, GT: LE, GE: LT}.get(kind)
    if kind not in (LT, LE, GT, GE) or not dtypes.is_int(c.a.dtype):
        return
    a, b = (c.a, c.b) if kind in (GT, GE) else (c.b, c.a)      # a > b or a >= b
    form = _difference(a, b)
    if form is not None:
        out.append(_shifted(form, -1) if kind in (LT, GT) else form)


def _difference(a, b):
    """The affine form of ``a - b`` in all the variables it mentions, or None."""
    e = a - b
    return linear(e, set(free_vars(e)))


def _shifted(form, c):
    return Linear(form.coeffs, iadd(form.rest, const(c, form.rest.dtype)))


def _implied(form, facts):
    """Whether ``form >= 0`` follows from one fact (same coefficients, no smaller rest)."""
    if form is None or not isinstance(form.rest, IntImm):
        return False
    for f in facts:
        if f.coeffs == form.coeffs and isinstance(f.rest, IntImm) and \
                form.rest.value >= f.rest.value:
            return True
    return False


def _unclamp(e, facts):
    if isinstance(e, (Min, Max)):
        a, b = _unclamp(e.a, facts), _unclamp(e.b, facts)
        for inner, bound in ((a, b), (b, a)):       # min(inner, bound): bound - inner >= 0
            form = _difference(bound, inner) if isinstance(e, Min) else \
                _difference(inner, bound)
            if _implied(form, facts):
                return inner
        return e
    if isinstance(e, (Add, Sub, Mul)):
        a, b = _unclamp(e.a, facts), _unclamp(e.b, facts)
        return e if a is e.a and b is e.b else type(e)(a, b, e.dtype)
    return e


# ----------------------------------------------------------------------------- the solver

@dataclass
class Domain:
    """``min <= v < min + extent``."""
    min: Expr
    extent: Expr


@dataclass
class Guard:
    """A condition of a solution: ``value`` itself (a boolean), or with a ``domain``,
    ``domain.min <= value < domain.min + domain.extent`` (an eliminated variable's range)."""
    value: Expr
    domain: Domain | None = None

    def substituted(self, vmap):
        return Guard(substitute(self.value, vmap), self.domain)


@dataclass
class Solution:
    subst: dict          # consumer variable -> expression of j and the free variables
    guards: list         # boolean expressions that must hold
    free: list           # [(Var, Domain)] to sum over


class _Solver:
    def __init__(self, domains, targets):
        self.domains = dict(domains)        # every variable that may be eliminated or summed
        self.targets = targets              # bounds of the j variables (for floormod)
        self.subst = {}
        self.guards = []                    # [Guard]
        self.pinned = set()

    def eliminate(self, v, value):
        self.subst = {k: substitute(e, {v: value}) for k, e in self.subst.items()}
        self.guards = [g.substituted({v: value}) for g in self.guards]
        self.subst[v] = value
        self.guards.append(Guard(value, self.domains.pop(v)))

    def remaining(self):
        return set(self.domains)

    def equation(self, lhs, rhs, pending):
        lhs = substitute(lhs, self.subst)
        form = linear(lhs, self.remaining() - self.pinned)
        if form is not None:        # its rest may mention pinned variables: they stay free
            return self._affine(form, rhs)
        if isinstance(lhs, FloorDiv) and is_int_const(lhs.b) and lhs.b.value > 0:
            c = lhs.b.value
            t = Var(f"t{len(self.domains)}", lhs.dtype)
            self.domains[t] = Domain(const(0, lhs.dtype), const(c, lhs.dtype))
            return self.equation(lhs.a, iadd(imul(c, rhs), t), pending)
        if isinstance(lhs, FloorMod) and is_int_const(lhs.b) and lhs.b.value > 0:
            c = lhs.b.value
            for k, (other, orhs) in enumerate(pending):     # a reshape: e // c and e % c
                other = substitute(other, self.subst)
                if isinstance(other, FloorDiv) and same(other.a, lhs.a) and \
                        is_int_const(other.b, c):
                    del pending[k]
                    return self.equation(lhs.a, iadd(imul(c, orhs), rhs), pending)
            bounds = self.bounds(lhs.a)
            if bounds is not None:
                q = Var(f"q{len(self.domains)}", lhs.dtype)
                lo, hi = bounds[0] // c, bounds[1] // c
                self.domains[q] = Domain(const(lo, lhs.dtype), const(hi - lo + 1, lhs.dtype))
                return self.equation(lhs.a, iadd(imul(c, q), rhs), pending)
        self._pin(lhs, rhs)

    def _pin(self, lhs, rhs):
        """An equation we cannot solve: its variables stay free, the equation a guard."""
        self.pinned.update(v for v in free_vars(lhs) if v in self.domains)
        self.guards.append(Guard(lhs.equal(rhs)))

    def _affine(self, form, rhs):
        if not form.coeffs:
            if not (isinstance(form.rest, IntImm) and isinstance(rhs, IntImm)
                    and form.rest.value == rhs.value):
                self.guards.append(Guard(form.rest.equal(rhs)))
            return
        units = [v for v, c in form.coeffs.items() if abs(c) == 1]
        pool = units or list(form.coeffs)
        # eliminate the widest variable, so that the narrow ones (kernel taps) stay to sum
        v = max(pool, key=lambda u: (-abs(form.coeffs[u]), _width(self.domains[u])))
        c = form.coeffs[v]
        others = Linear({u: k for u, k in form.coeffs.items() if u is not v}, form.rest)
        residual = _isub(rhs, others.expr())        # c * v == residual
        if c < 0:
            c, residual = -c, _isub(const(0, residual.dtype), residual)
        if c == 1:
            self.eliminate(v, residual)
            return
        self.guards.append(Guard(floormod(residual, c).equal(0)))
        self.eliminate(v, floordiv(residual, c))

    def bounds(self, e):
        """Constant (lo, hi) of affine ``e`` over the domains, or None."""
        form = linear(e, set(self.domains) | set(self.targets))
        if form is None or not isinstance(form.rest, IntImm):
            return None
        lo = hi = form.rest.value
        for v, c in form.coeffs.items():
            dom = self.domains.get(v) or self.targets.get(v)
            if dom is None or not (isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm)):
                return None
            a, b = dom.min.value, dom.min.value + dom.extent.value - 1
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi


def _width(dom):
    return dom.extent.value if isinstance(dom.extent, IntImm) else float("inf")


def solve(indices, targets, domains, target_domains) -> Solution:
    """Solve ``indices[d] == targets[d]`` for the variables of ``domains`` ({Var: Domain})."""
    solver = _Solver(domains, target_domains)
    pending = list(zip(indices, targets))
    while pending:
        lhs, rhs = pending.pop(0)
        solver.equation(lhs, rhs, pending)
    free = dict(solver.domains)
    subst = dict(solver.subst)
    guards = list(solver.guards)
    _tighten(free, subst, guards, target_domains)
    exprs = [_guard_expr(g, target_domains) for g in guards]
    return Solution(subst, [e for e in exprs if e is not None], list(free.items()))


def _tighten(free, subst, guards, target_domains):
    """Narrow a free variable to the window that a range guard allows it."""
    for f in list(free):
        dom = free[f]
        if not isinstance(dom.extent, IntImm):
            continue
        best = None
        for g in guards:
            if g.domain is None or not isinstance(g.domain.extent, IntImm):
                continue
            form = linear(g.value, set(free))
            if form is None or set(form.coeffs) != {f}:
                continue
            a, m, ext = form.coeffs[f], g.domain.min, g.domain.extent.value
            count = -(-ext // abs(a))
            if count >= dom.extent.value or (best is not None and count >= best[0]):
                continue
            if a > 0:
                lo = ceildiv(_isub(m, form.rest), a)
            else:
                lo = ceildiv(iadd(_isub(form.rest, m), const(1 - ext, f.dtype)), -a)
            best = (count, lo)
        if best is None:
            continue
        count, lo = best
        t = Var(f.name + "_t", f.dtype)
        value = iadd(lo, t)
        for k in list(subst):
            subst[k] = substitute(subst[k], {f: value})
        guards[:] = [g.substituted({f: value}) for g in guards]
        guards.append(Guard(value, dom))
        subst[f] = value
        del free[f]
        free[t] = Domain(const(0, f.dtype), const(count, f.dtype))


def _guard_expr(g, target_domains):
    """The boolean expression of guard ``g``, or None when it always holds."""
    if g.domain is None:
        return g.value
    value, dom = g.value, g.domain
    # v == j over the same domain as j: always true
    tdom = target_domains.get(value) if isinstance(value, Var) else None
    if tdom is not None and same(tdom.min, dom.min) and same(tdom.extent, dom.extent):
        return None
    lo = value >= dom.min
    hi = value < iadd(dom.min, dom.extent)
    if isinstance(value, IntImm) and isinstance(dom.min, IntImm) and \
            isinstance(dom.extent, IntImm):
        ok = dom.min.value <= value.value < dom.min.value + dom.extent.value
        return None if ok else const(False)
    return lo & hi


def same(a, b) -> bool:
    """Structural equality of two expressions (variables and tensors by identity)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, Var):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if not isinstance(a, Expr):
        return a == b if isinstance(a, (int, float, str, bool)) else a is b
    return all(same(getattr(a, n), getattr(b, n)) for n in _fields(a))

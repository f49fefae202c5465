"""Arithmetic simplification of index and value expressions (TVM's ``tvm.arith``, below both
the te graph and the loop IR; the lowering passes import it through their own package).

Integer sums are brought to a canonical linear form (``sum(coeff * atom) + const``) so that
terms cancel (``(io*32 + 31) - io*32 + 1`` becomes ``32``); floordiv/floormod by constants are
simplified using the constant bounds of loop variables; comparisons that the bounds decide
become constants, which removes guards of divisible splits. Floating-point expressions are only
constant-folded (reassociation would change results).
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes
from .expr import (Add, Binary, Cast, Div, EQ, Expr, FloatImm, FloorDiv, FloorMod, GE, GT, IntImm,
                   LE, LT, Max, Min, Mod, Mul, NE, Select, Sub, Var, cast, const)
from .functor import ExprMutator
from .tensor import is_size_var

INF = float("inf")


def _is_int(e):
    # index arithmetic: signed 32/64-bit integers, assumed not to overflow (as in TVM); narrower
    # and unsigned integers wrap around, so linear forms and bounds do not hold for them
    return dtypes.is_signed(e.dtype) and dtypes.bits(e.dtype) >= 32 and \
        dtypes.lanes(e.dtype) == 1


def skey(e):
    """A hashable structural key: equal keys mean structurally equal expressions."""
    if isinstance(e, Var):
        return e
    if isinstance(e, (IntImm, FloatImm)):
        return (type(e).__name__, e.value, e.dtype)
    if isinstance(e, Expr):
        parts = [type(e).__name__]
        for name in e.__dataclass_fields__:
            parts.append(skey(getattr(e, name)))
        return tuple(parts)
    if isinstance(e, tuple):
        return tuple(skey(x) for x in e)
    return e


def equal(a, b) -> bool:
    return skey(a) == skey(b)


# ----------------------------------------------------------------------------- constant bounds

def const_bounds(e, ranges) -> tuple:
    """Inclusive integer bounds of ``e`` given ``ranges`` {Var: (lo, hi)}; +-inf if unknown."""
    if isinstance(e, IntImm):
        return (e.value, e.value)
    if isinstance(e, Var):
        got = ranges.get(e)
        if got is not None:
            return got
        return (0, INF) if is_size_var(e) else (-INF, INF)
    if isinstance(e, Add):
        a, b = const_bounds(e.a, ranges), const_bounds(e.b, ranges)
        return (a[0] + b[0], a[1] + b[1])
    if isinstance(e, Sub):
        a, b = const_bounds(e.a, ranges), const_bounds(e.b, ranges)
        return (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Mul):
        a, b = const_bounds(e.a, ranges), const_bounds(e.b, ranges)
        prods = [_mul(x, y) for x in a for y in b]
        return (min(prods), max(prods))
    if isinstance(e, (FloorDiv, Div)) and isinstance(e.b, IntImm) and e.b.value > 0:
        a, c = const_bounds(e.a, ranges), e.b.value
        if isinstance(e, Div) and a[0] < 0:
            return (-INF, INF)
        return (_fdiv(a[0], c), _fdiv(a[1], c))
    if isinstance(e, (FloorMod, Mod)) and isinstance(e.b, IntImm) and e.b.value > 0:
        a, c = const_bounds(e.a, ranges), e.b.value
        if a[0] >= 0 and a[1] < c:
            return a
        if isinstance(e, Mod) and a[0] < 0:
            return (-(c - 1), c - 1)
        return (0, c - 1)
    if isinstance(e, Min):
        a, b = const_bounds(e.a, ranges), const_bounds(e.b, ranges)
        return (min(a[0], b[0]), min(a[1], b[1]))
    if isinstance(e, Max):
        a, b = const_bounds(e.a, ranges), const_bounds(e.b, ranges)
        return (max(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, Select):
        a, b = const_bounds(e.true_value, ranges), const_bounds(e.false_value, ranges)
        return (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, Cast) and _is_int(e.value) and _is_int(e):
        return const_bounds(e.value, ranges)
    return (-INF, INF)


def _mul(x, y):
    if x == 0 or y == 0:
        return 0
    return x * y


def _fdiv(x, c):
    if x in (INF, -INF):
        return x
    return x // c


# ----------------------------------------------------------------------------- linear form

class Linear:
    """``sum(coeff * atom) + const`` over structurally keyed atoms, in first-use order."""

    def __init__(self, terms=None, const_=0):
        self.terms = dict(terms or {})   # key -> [atom, coeff]
        self.const = const_

    @staticmethod
    def of(e) -> "Linear":
        if isinstance(e, IntImm):
            return Linear(const_=e.value)
        if isinstance(e, Add):
            return Linear.of(e.a).add(Linear.of(e.b), 1)
        if isinstance(e, Sub):
            return Linear.of(e.a).add(Linear.of(e.b), -1)
        if isinstance(e, Mul):
            if isinstance(e.b, IntImm):
                return Linear.of(e.a).scale(e.b.value)
            if isinstance(e.a, IntImm):
                return Linear.of(e.b).scale(e.a.value)
        return Linear({skey(e): [e, 1]})

    def add(self, other, sign) -> "Linear":
        out = Linear({k: list(v) for k, v in self.terms.items()}, self.const + sign * other.const)
        for k, (atom, c) in other.terms.items():
            if k in out.terms:
                out.terms[k][1] += sign * c
            else:
                out.terms[k] = [atom, sign * c]
        out.terms = {k: v for k, v in out.terms.items() if v[1] != 0}
        return out

    def scale(self, s) -> "Linear":
        if s == 0:
            return Linear()
        return Linear({k: [a, c * s] for k, (a, c) in self.terms.items()}, self.const * s)

    def merge_div_mod(self) -> "Linear":
        """``k * c * (x // c) + k * (y % c)`` is ``k * x`` when ``x - y`` is a multiple of
        ``c`` (a flattened ``[x // c, x % c]``, after the modulo dropped multiples of c)."""
        for key, (atom, coeff) in list(self.terms.items()):
            if not (isinstance(atom, FloorDiv) and isinstance(atom.b, IntImm)
                    and atom.b.value > 0 and coeff % atom.b.value == 0):
                continue
            c, k = atom.b.value, coeff // atom.b.value
            for mkey, (mod, mcoeff) in list(self.terms.items()):
                if not (isinstance(mod, FloorMod) and isinstance(mod.b, IntImm)
                        and mod.b.value == c and mcoeff == k):
                    continue
                diff = Linear.of(atom.a).add(Linear.of(mod.a), -1)
                if diff.const % c or any(v % c for _, v in diff.terms.values()):
                    continue
                rest = Linear({q: v for q, v in self.terms.items() if q not in (key, mkey)},
                              self.const)
                return rest.add(Linear.of(atom.a).scale(k), 1).merge_div_mod()
        return self

    def split(self, c):
        """(terms divisible by c, divided by c; the remainder, with the constant)."""
        q, r = Linear(), Linear(const_=self.const)
        for k, (atom, coeff) in self.terms.items():
            if coeff % c == 0:
                q.terms[k] = [atom, coeff // c]
            else:
                r.terms[k] = [atom, coeff]
        return q, r

    def split_small(self, c, bounds):
        """Where ``self`` is ``d * p + s`` with ``d`` a proper divisor of ``c``, ``p`` linear and
        ``0 <= s < d`` (``s``'s bounds by ``bounds``): ``(d, p, s)``, else None. Then
        ``self // c == p // (c // d)`` and ``self % c == d * (p % (c // d)) + s``: the small part
        never carries into the next multiple of ``c`` (``(tx*8 + ii) // 16`` with ii < 8 is
        ``tx // 2``)."""
        divisors = sorted({math.gcd(coeff, c) for _, coeff in self.terms.values()}, reverse=True)
        for d in divisors:
            if d in (1, c):
                continue
            p, s = self.split(d)
            if not p.terms:
                continue
            if s.const % d == 0 and s.terms:        # a constant multiple of d joins p
                p.const, s.const = s.const // d, 0
            lo, hi = bounds(s.to_expr("int64"))
            if 0 <= lo and hi < d:
                return d, p, s
        return None

    def to_expr(self, dtype) -> Expr:
        out = None
        for atom, c in self.terms.values():
            term = atom if abs(c) == 1 else Mul(atom, IntImm(abs(c), dtype), dtype)
            if out is None:
                out = term if c > 0 else (Mul(atom, IntImm(c, dtype), dtype) if c != -1
                                          else Sub(IntImm(0, dtype), atom, dtype))
            else:
                out = Add(out, term, dtype) if c > 0 else Sub(out, term, dtype)
        if out is None:
            return IntImm(self.const, dtype)
        if self.const < 0 and -self.const <= dtypes.max_value(dtype):
            out = Sub(out, IntImm(-self.const, dtype), dtype)
        elif self.const != 0:       # x + INT_MIN has no in-range Sub form
            out = Add(out, IntImm(dtypes.wrap(self.const, dtype), dtype), dtype)
        return out


# ----------------------------------------------------------------------------- folding tables

_FOLD_INT = {
    Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
    FloorDiv: lambda a, b: a // b if b else None, FloorMod: lambda a, b: a % b if b else None,
    Div: lambda a, b: int(a / b) if b else None,
    Mod: lambda a, b: int(math.fmod(a, b)) if b else None,
    Min: min, Max: max,
}
_FOLD_FLOAT = {Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
               Div: lambda a, b: a / b if b else None,
               Min: np.minimum, Max: np.maximum}     # NaN-propagating, as te.min/te.max
_FOLD_CMP = {EQ: lambda a, b: a == b, NE: lambda a, b: a != b, LT: lambda a, b: a < b,
             LE: lambda a, b: a <= b, GT: lambda a, b: a > b, GE: lambda a, b: a >= b}


class Simplifier(ExprMutator):
    def __init__(self, ranges=None):
        self.ranges = dict(ranges or {})

    def bounds(self, e):
        return const_bounds(e, self.ranges)

    def visit_Binary(self, node):
        node = self.generic_visit(node)
        a, b = node.a, node.b
        cls = type(node)
        if dtypes.lanes(node.dtype) > 1:
            return node
        if isinstance(a, IntImm) and isinstance(b, IntImm) and cls in _FOLD_INT:
            v = _FOLD_INT[cls](a.value, b.value)
            if v is not None:
                return const(dtypes.wrap(v, node.dtype), node.dtype)
        if isinstance(a, FloatImm) and isinstance(b, FloatImm) and cls in _FOLD_FLOAT:
            t = np.float64 if node.dtype == "float64" else np.float32   # round as the CPU does
            v = _FOLD_FLOAT[cls](t(a.value), t(b.value))
            if v is not None:
                return const(float(v), node.dtype)
        if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)) \
                and cls in _FOLD_CMP:
            return const(bool(_FOLD_CMP[cls](a.value, b.value)), "bool")
        handler = getattr(self, "rule_" + cls.__name__, None)
        return handler(node, a, b) if handler else node


    # integer sums: canonical linear form; floats: identities only
    def rule_Add(self, node, a, b):
        if _is_int(node):
            return Linear.of(node).merge_div_mod().to_expr(node.dtype)
        if _is_zero(b):
            return a
        if _is_zero(a):
            return b
        return node

    def rule_Sub(self, node, a, b):
        if _is_int(node):
            return Linear.of(node).merge_div_mod().to_expr(node.dtype)
        return a if _is_zero(b) else node

    def rule_Mul(self, node, a, b):
        if _is_int(node):
            if isinstance(a, IntImm) or isinstance(b, IntImm):
                return Linear.of(node).to_expr(node.dtype)
            return node
        if _is_one(b):
            return a
        if _is_one(a):
            return b
        return node

    def rule_Div(self, node, a, b):
        if _is_one(b):
            return a
        if _is_int(node) and self.bounds(a)[0] >= 0 and isinstance(b, IntImm) and b.value > 0:
            return self.rule_FloorDiv(FloorDiv(a, b, node.dtype), a, b)
        return node

    def rule_Mod(self, node, a, b):
        if _is_int(node) and self.bounds(a)[0] >= 0 and isinstance(b, IntImm) and b.value > 0:
            return self.rule_FloorMod(FloorMod(a, b, node.dtype), a, b)
        return node

    def rule_FloorDiv(self, node, a, b):
        if not (_is_int(node) and isinstance(b, IntImm) and b.value > 0):
            return node
        c = b.value
        if c == 1:
            return a
        if isinstance(a, FloorDiv) and isinstance(a.b, IntImm) and a.b.value > 0:
            return self.rule_FloorDiv(FloorDiv(a.a, IntImm(c * a.b.value, node.dtype),
                                               node.dtype), a.a,
                                      IntImm(c * a.b.value, node.dtype))
        q, r = Linear.of(a).split(c)
        lo, hi = self.bounds(r.to_expr(node.dtype))
        if lo != -INF and hi != INF and lo // c == hi // c:
            return Linear.of(q.to_expr(node.dtype)).add(Linear(const_=lo // c), 1) \
                .to_expr(node.dtype)
        lo, hi = self.bounds(a)
        if 0 <= lo and hi < c:
            return IntImm(0, node.dtype)
        small = r.split_small(c, self.bounds)
        if small is not None:
            d, p, _ = small
            div = self.rule_FloorDiv(FloorDiv(p.to_expr(node.dtype), IntImm(c // d, node.dtype),
                                              node.dtype), p.to_expr(node.dtype),
                                     IntImm(c // d, node.dtype))
            return Linear.of(q.to_expr(node.dtype)).add(Linear.of(div), 1).to_expr(node.dtype)
        return node

    def rule_FloorMod(self, node, a, b):
        if not (_is_int(node) and isinstance(b, IntImm) and b.value > 0):
            return node
        c = b.value
        if c == 1:
            return IntImm(0, node.dtype)
        q, r = Linear.of(a).split(c)
        r_expr = r.to_expr(node.dtype)
        lo, hi = self.bounds(r_expr)
        if lo != -INF and hi != INF and lo // c == hi // c:
            return Linear.of(r_expr).add(Linear(const_=(lo // c) * c), -1).to_expr(node.dtype)
        if q.terms and not r.terms:
            return IntImm(r.const % c, node.dtype)
        small = r.split_small(c, self.bounds)
        if small is not None:
            d, p, s = small
            m = IntImm(c // d, node.dtype)
            mod = self.rule_FloorMod(FloorMod(p.to_expr(node.dtype), m, node.dtype),
                                     p.to_expr(node.dtype), m)
            return Linear.of(mod).scale(d).add(s, 1).to_expr(node.dtype)
        if q.terms:
            return FloorMod(r_expr, b, node.dtype)
        return node

    def _order(self, a, b):
        """-1 if a <= b always, 1 if a >= b always, 0 if unknown (integers)."""
        if not (_is_int(a) and _is_int(b)):
            return 0
        if isinstance(a, FloorDiv) and isinstance(b, FloorDiv) and \
                isinstance(a.b, IntImm) and isinstance(b.b, IntImm) and \
                a.b.value == b.b.value and a.b.value > 0:
            return self._order(a.a, b.a)          # floordiv by c > 0 is monotonic
        lo, hi = self.bounds(Linear.of(a).add(Linear.of(b), -1).to_expr(a.dtype))
        if hi <= 0:
            return -1
        if lo >= 0:
            return 1
        return 0

    def rule_Min(self, node, a, b):
        if equal(a, b):
            return a
        o = self._order(a, b)
        return a if o < 0 else b if o > 0 else node

    def rule_Max(self, node, a, b):
        if equal(a, b):
            return a
        o = self._order(a, b)
        return b if o < 0 else a if o > 0 else node

    def _cmp(self, node, a, b, decide):
        if not (_is_int(a) and _is_int(b)):
            return node
        diff = Linear.of(a).add(Linear.of(b), -1)
        lo, hi = self.bounds(diff.to_expr(a.dtype))
        verdict = decide(lo, hi)
        return node if verdict is None else const(verdict, "bool")

    def rule_LT(self, node, a, b):
        return self._cmp(node, a, b, lambda lo, hi: True if hi < 0 else False if lo >= 0 else None)

    def rule_LE(self, node, a, b):
        return self._cmp(node, a, b, lambda lo, hi: True if hi <= 0 else False if lo > 0 else None)

    def rule_GT(self, node, a, b):
        return self._cmp(node, a, b, lambda lo, hi: True if lo > 0 else False if hi <= 0 else None)

    def rule_GE(self, node, a, b):
        return self._cmp(node, a, b, lambda lo, hi: True if lo >= 0 else False if hi < 0 else None)

    def rule_EQ(self, node, a, b):
        return self._cmp(node, a, b,
                         lambda lo, hi: True if lo == hi == 0 else False if lo > 0 or hi < 0
                         else None)

    def rule_NE(self, node, a, b):
        return self._cmp(node, a, b,
                         lambda lo, hi: False if lo == hi == 0 else True if lo > 0 or hi < 0
                         else None)

    def rule_And(self, node, a, b):
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                return y if x.value else x
        return node

    def rule_Or(self, node, a, b):
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                return x if x.value else y
        return node

    def visit_Not(self, node):
        node = self.generic_visit(node)
        if isinstance(node.a, IntImm):
            return const(not node.a.value, "bool")
        return node

    def visit_Select(self, node):
        # the condition first: when it is constant (a select on an unrolled loop variable),
        # only the chosen value is simplified; a chain of selects costs one path, not all
        cond = self.visit(node.condition)
        if isinstance(cond, IntImm):
            return self.visit(node.true_value if cond.value else node.false_value)
        return self.generic_visit(node)

    def visit_Call(self, node):
        node = self.generic_visit(node)
        if node.op == "if_then_else" and isinstance(node.args[0], IntImm):
            return node.args[1] if node.args[0].value else node.args[2]
        return node

    def visit_Cast(self, node):
        node = self.generic_visit(node)
        v = node.value
        if isinstance(v, (IntImm, FloatImm)) and dtypes.lanes(node.dtype) == 1:
            return cast(node.dtype, v)
        if v.dtype == node.dtype:
            return v
        return node


for _cls in Binary.__subclasses__():      # every binary node goes through visit_Binary
    setattr(Simplifier, "visit_" + _cls.__name__, Simplifier.visit_Binary)


def _is_zero(e):
    return isinstance(e, (IntImm, FloatImm)) and e.value == 0


def _is_one(e):
    return isinstance(e, (IntImm, FloatImm)) and e.value == 1


def simplify(e, ranges=None):
    """Simplify ``e``; ``ranges`` maps loop Vars to inclusive constant bounds (lo, hi)."""
    return Simplifier(ranges).visit(e)


def can_prove(cond, ranges=None) -> bool:
    c = simplify(cond, ranges)
    return isinstance(c, IntImm) and bool(c.value)

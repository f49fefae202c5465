"""Symbolic ranges of index expressions: polynomials over size variables, loop variables eliminated.

An index such as ``io * 32 + ii + 1`` is first put in a normal form (a polynomial: monomials of
atoms with integer coefficients; an atom is a variable, or an opaque node such as
``floordiv(x, 32)``, ``min(a, b)`` or a load), so that the same variable appears once and
``e - g`` cancels exactly. Loop variables are then eliminated innermost first, each replaced by
its first or last value by the sign of its coefficient (so ``i - j`` over ``j < i`` has the
exact lower bound 1), which leaves bounds that are polynomials over the function's parameters
and can be proved at lowering or evaluated once per call. Guards (``if g < n``) are facts
``f <= 0``: ``e <= e - k*f`` for any ``k >= 0``, which turns ``A[io*32 + ii]`` under
``io*32 + ii < n`` into the bound ``n - 1``.
"""
from __future__ import annotations

from te import dtypes
from te.expr import (EQ, Expr, GE, GT, LE, LT, NE, Add, And, Call, Cast, FloorDiv, FloorMod, IntImm,
                     Let, Max, Min, Mul, Not, Or, Sub, Var)

from .ir import Broadcast, BufferLoad, Ramp


# ----------------------------------------------------------------------------- polynomials
# A polynomial is a dict {monomial: coefficient}; a monomial is a sorted tuple of atoms (with
# repetition for powers), () is the constant term. Atoms are hashable tuples:
#   ("var", v)  ("floordiv", P, Q)  ("floormod", P, Q)  ("min", P, Q)  ("max", P, Q)
#   ("data", key, lo, hi)  -- a value read from memory (lo/hi: its dtype's range, or None)
#   ("opaque", key)        -- anything else (bitwise ops, calls): unbounded
# where P, Q are frozen polynomials (frozenset of items).

def _sort_key(atom):
    return hash(atom)


def const(c):
    return {(): c} if c else {}


def atom(a):
    return {(a,): 1}


def add(p, q, k=1):
    out = dict(p)
    for m, c in q.items():
        v = out.get(m, 0) + k * c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def sub(p, q):
    return add(p, q, -1)


def scale(p, k):
    return {m: c * k for m, c in p.items()} if k else {}


def mul(p, q):
    out = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(sorted(m1 + m2, key=_sort_key))
            v = out.get(m, 0) + c1 * c2
            if v:
                out[m] = v
            else:
                out.pop(m, None)
    return out


def freeze(p):
    return frozenset(p.items())


def thaw(f):
    return dict(f)


def const_value(p):
    """The integer value of a constant polynomial, or None."""
    if not p:
        return 0
    if len(p) == 1 and () in p:
        return p[()]
    return None


def atoms_of(p):
    return {a for m in p for a in m}


# ----------------------------------------------------------------------------- normal form

class Normalizer:
    """Expressions -> polynomials. ``lets``: Var -> polynomial of its value."""

    def __init__(self, lets=None, whole_divisions=False, loops=None):
        self.lets = lets if lets is not None else {}
        # Var -> (min poly, extent poly) of the enclosing loops: x % c and x // c of an x
        # that stays in one period are written without the atom (x - k*c, k), so that a
        # guard simplified that way and an index that was not meet as the same polynomial
        self.loops = loops
        # keep floordiv(4*i + j, 2) whole instead of 2*i + floordiv(j, 2): a guard on
        # 4*i + j then bounds the division as one (the split form bounds its parts apart)
        self.whole = whole_divisions

    def __call__(self, e):
        if isinstance(e, IntImm):
            return const(int(e.value))
        if isinstance(e, Var):
            if e in self.lets:
                return self.lets[e]
            if self.loops and e in self.loops and const_value(self.loops[e][1]) == 1:
                return self.loops[e][0]         # a loop of one iteration: its start
            return atom(("var", e))
        if isinstance(e, Add):
            return merge_divmod(add(self(e.a), self(e.b)))
        if isinstance(e, Sub):
            return merge_divmod(sub(self(e.a), self(e.b)))
        if isinstance(e, Mul):
            return mul(self(e.a), self(e.b))
        if isinstance(e, Cast):
            if dtypes.is_int(e.dtype) and dtypes.is_int(e.value.dtype) and \
                    dtypes.bits(e.dtype) >= dtypes.bits(e.value.dtype) and \
                    dtypes.is_signed(e.dtype) == dtypes.is_signed(e.value.dtype):
                return self(e.value)                  # a widening cast keeps the value
            if dtypes.is_int(e.dtype) and dtypes.is_bool(e.value.dtype):
                return atom(("data", ("bool", _key(e.value)), 0, 1))
            if dtypes.is_int(e.dtype) and dtypes.is_int(e.value.dtype) and \
                    not dtypes.is_signed(e.value.dtype) and \
                    dtypes.bits(e.dtype) > dtypes.bits(e.value.dtype):
                return self(e.value)                  # unsigned into a wider signed type
            if dtypes.is_int(e.dtype) and dtypes.is_int(e.value.dtype):
                inner = self(e.value)
                v = const_value(inner)
                if v is not None:
                    return const(dtypes.wrap(v, e.dtype))
                return atom(("cast", e.dtype, freeze(inner)))     # may wrap around
            return atom(("opaque", _key(e)))
        if isinstance(e, FloorDiv):
            a, b = self(e.a), self(e.b)
            k = self._one_period(a, b)
            if k is not None:
                return const(k)
            if self.whole and const_value(b) is not None and const_value(a) is None and \
                    not all(c % const_value(b) == 0 for c in a.values()):
                return atom(("floordiv", freeze(a), freeze(b)))
            return self._floordiv(a, b)
        if isinstance(e, FloorMod):
            a, b = self(e.a), self(e.b)
            bv = const_value(b)
            if bv is not None and bv > 0 and all(c % bv == 0 for m, c in a.items() if m):
                return const(a.get((), 0) % bv)
            k = self._one_period(a, b)
            if k is not None:
                return add(a, const(-k * bv))
            return atom(("floormod", freeze(a), freeze(b)))
        if isinstance(e, (Min, Max)):
            a, b = self(e.a), self(e.b)
            if a == b:
                return a
            kind = "min" if isinstance(e, Min) else "max"
            pa, pb = sorted((freeze(a), freeze(b)), key=hash)
            return atom((kind, pa, pb))
        if isinstance(e, Let):
            self.lets[e.var] = self(e.value)
            return self(e.body)
        if isinstance(e, BufferLoad):
            lo, hi = _dtype_range(e.dtype)
            key = ("load", e.buffer, tuple(freeze(self(i)) for i in e.indices))
            return atom(("data", key, lo, hi))
        if isinstance(e, Ramp) or isinstance(e, Broadcast):
            return atom(("opaque", _key(e)))
        return atom(("opaque", _key(e)))

    def _one_period(self, a, b):
        """k when ``a`` lies in [k*b, k*b + b) for constant b > 0 over the enclosing loops'
        constant ranges, else None."""
        bv = const_value(b)
        if not self.loops or bv is None or bv <= 0 or const_value(a) is not None:
            return None
        lo = hi = 0
        for m, c in a.items():
            if not m:
                lo, hi = lo + c, hi + c
                continue
            if len(m) != 1 or m[0][0] != "var" or m[0][1] not in self.loops:
                return None
            vmin, vext = self.loops[m[0][1]]
            mn, ext = const_value(vmin), const_value(vext)
            if mn is None or ext is None or ext <= 0:
                return None
            ends = (c * mn, c * (mn + ext - 1))
            lo, hi = lo + min(ends), hi + max(ends)
        return lo // bv if lo // bv == hi // bv else None

    def _floordiv(self, a, b):
        bv = const_value(b)
        if bv is not None and bv > 0:
            if all(c % bv == 0 for c in a.values()):
                return scale(a, 0) if not a else {m: c // bv for m, c in a.items()}
            # floordiv(k*b*X + r, b) = k*X + floordiv(r, b): move the divisible monomials out
            whole = {m: c // bv for m, c in a.items() if m and c % bv == 0}
            rest = {m: c for m, c in a.items() if not (m and c % bv == 0)}
            if whole:
                return add(whole, self._floordiv(rest, b))
            rv = const_value(rest)
            if rv is not None:
                return const(rv // bv)
        elif len(b) == 1 and () not in b and list(b.values())[0] == 1:
            # a symbolic divisor m (one atom): floordiv(m*Q + r, m) = Q + floordiv(r, m)
            (mono,) = b
            whole, rest = {}, {}
            for m, c in a.items():
                if _divides(mono, m):
                    whole[_remove(m, mono)] = c
                else:
                    rest[m] = c
            if whole:
                return add(whole, self._floordiv(rest, b))
        return atom(("floordiv", freeze(a), freeze(b)))


def merge_divmod(p):
    """``k*c*floordiv(x, c) + k*floormod(x, c)`` -> ``k*x`` (a split of a fused axis put
    back together), for constant and symbolic ``c``; and ``floordiv(x + d, c) -
    floordiv(x, c)`` -> ``floordiv(floormod(x, c) + d, c)`` (an attached region's start
    taken off an index: the difference is bounded, the two floordivs alone are not)."""
    p = _merge_floordiv_differences(p)
    mods = [(m, c) for m, c in p.items() if len(m) == 1 and m[0][0] == "floormod"]
    for m, k in mods:
        x, d = m[0][1], m[0][2]
        dp = thaw(d)
        div = ("floordiv", x, d)
        dv = const_value(dp)
        if dv is not None:
            key, need = (div,), k * dv
        elif len(dp) == 1 and list(dp.values())[0] == 1 and () not in dp:
            (mono,) = dp
            key, need = tuple(sorted((div,) + mono, key=_sort_key)), k
        else:
            continue
        if p.get(key) == need and m in p:
            p = add(p, {key: need, m: k}, -1)
            p = add(p, scale(thaw(x), k))
    return p


def _merge_floordiv_differences(p):
    divs = [(m[0], c) for m, c in p.items() if len(m) == 1 and m[0][0] == "floordiv" and
            const_value(thaw(m[0][2])) is not None and const_value(thaw(m[0][2])) > 0]
    for (a1, k1) in divs:
        for (a2, k2) in divs:
            if a1 is a2 or k1 != -k2 or k1 <= 0 or a1[2] != a2[2]:
                continue
            if (a1,) not in p or (a2,) not in p:
                continue
            x, d = thaw(a2[1]), sub(thaw(a1[1]), thaw(a2[1]))
            if const_value(d) is not None and const_value(d) == 0:
                continue
            mod = atom(("floormod", a2[1], a2[2]))
            inner = Normalizer()._floordiv(add(mod, d), thaw(a2[2]))
            p = add(p, {(a1,): k1, (a2,): k2}, -1)
            p = add(p, scale(inner, k1))
            del x
    return p


def _divides(d, m):
    rest = list(m)
    for a in d:
        if a in rest:
            rest.remove(a)
        else:
            return False
    return True


def _remove(m, d):
    rest = list(m)
    for a in d:
        rest.remove(a)
    return tuple(rest)


def _key(e):
    """A structural key of an expression (variables by identity)."""
    from te.functor import _fields
    if isinstance(e, Var):
        return e
    if isinstance(e, (IntImm,)):
        return ("int", e.value, e.dtype)
    if not isinstance(e, Expr):
        return e                            # buffers, strings: by identity / value
    parts = [type(e).__name__]
    for f in _fields(e):
        v = getattr(e, f)
        parts.append(tuple(_key(x) for x in v) if isinstance(v, tuple) else _key(v))
    return tuple(parts)


def _dtype_range(dtype):
    if dtype == "bool":
        return 0, 1
    if dtypes.is_int(dtype):
        return dtypes.min_value(dtype), dtypes.max_value(dtype)
    return None, None


# ----------------------------------------------------------------------------- facts

def facts_of(cond, norm, negate=False, bounder=None, usable=None):
    """Polynomials ``f`` with ``f <= 0`` whenever ``cond`` (or ``not cond``) holds.

    ``x != c`` says something when ``c`` is an end of ``x``'s range (``i != 0`` over
    ``i >= 0`` is ``i >= 1``): ``bounder`` gives that range. ``usable(comparison)``, when
    given, says whether a comparison's fact may be taken (its arithmetic cannot wrap); one
    conjunct that may wrap leaves the facts of the others."""
    def rec(c, neg):
        return facts_of(c, norm, neg, bounder, usable)
    if isinstance(cond, IntImm):
        return [const(1)] if bool(cond.value) == negate else []     # never holds: 1 <= 0
    if isinstance(cond, Not):
        return rec(cond.a, not negate)
    if isinstance(cond, And) and not negate:
        return rec(cond.a, False) + rec(cond.b, False)
    if isinstance(cond, Or) and negate:             # not (a or b): not a, and not b
        return rec(cond.a, True) + rec(cond.b, True)
    if isinstance(cond, Call) and cond.op == "logical_and" and not negate:
        return [f for a in cond.args for f in rec(a, False)]
    if isinstance(cond, Call) and cond.op == "logical_or" and negate:
        return [f for a in cond.args for f in rec(a, True)]
    if isinstance(cond, Call) and cond.op == "if_then_else" and len(cond.args) == 3:
        c, t, f = cond.args                 # the lazy forms of and / or
        if isinstance(f, IntImm) and not f.value and not negate:
            return rec(c, False) + rec(t, False)
        if isinstance(t, IntImm) and t.value and negate:
            return rec(c, True) + rec(f, True)
        return []
    if not isinstance(cond, (LT, LE, GT, GE, EQ, NE)) or not dtypes.is_int(cond.a.dtype) or \
            not dtypes.is_int(cond.b.dtype):
        return []
    if usable is not None and not usable(cond):
        return []
    a, b = norm(cond.a), norm(cond.b)
    cls = type(cond)
    if negate:
        cls = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}[cls]
    if cls is LT:
        return [add(sub(a, b), const(1))]
    if cls is LE:
        return [sub(a, b)]
    if cls is GT:
        return [add(sub(b, a), const(1))]
    if cls is GE:
        return [sub(b, a)]
    if cls is EQ:
        return [sub(a, b), sub(b, a)]
    # a != b: a fact only where b is an end of a's range
    if bounder is None:
        return []
    d = sub(a, b)
    lo, hi = bounder.bound(d, -1), bounder.bound(d, 1)
    out = []
    if lo is not None and const_value(lo) == 0:
        out.append(add(scale(d, -1), const(1)))         # a - b >= 1
    if hi is not None and const_value(hi) == 0:
        out.append(add(d, const(1)))                    # a - b <= -1
    return out


# ----------------------------------------------------------------------------- bounds

class Bounder:
    """Bounds of polynomials over the loop variables in ``loops`` (a dict, innermost last:
    Var -> (min polynomial, extent polynomial)), leaving only ``params`` (``nonneg``: those known
    to be >= 0, such as shape variables)."""

    def __init__(self, loops, params, nonneg, facts=()):
        self.facts = list(facts)
        self.loops = loops
        self.order = {v: k for k, v in enumerate(loops)}
        self.params = params
        self.nonneg_vars = nonneg

    # --- signs
    def is_nonneg(self, p) -> bool:
        """Provably >= 0 (only parameters)."""
        for m, c in p.items():
            if c < 0:
                return False
            if not all(self._atom_nonneg(a) for a in m):
                return False
        return True

    def _atom_nonneg(self, a):
        kind = a[0]
        if kind == "var":
            return a[1] in self.nonneg_vars
        if kind == "floordiv":
            return self.is_nonneg(thaw(a[1])) and self.is_nonneg(thaw(a[2]))
        if kind == "floormod":
            return self.is_nonneg(thaw(a[2]))
        if kind == "min":
            return self.is_nonneg(thaw(a[1])) and self.is_nonneg(thaw(a[2]))
        if kind == "max":
            return self.is_nonneg(thaw(a[1])) or self.is_nonneg(thaw(a[2]))
        if kind == "data":
            return a[2] is not None and a[2] >= 0
        if kind in ("cast", "castb"):
            return not dtypes.is_signed(a[1])
        return False

    def sign(self, p):
        """+1 (>= 0), -1 (<= 0) or None."""
        if self.is_nonneg(p):
            return 1
        if self.is_nonneg(scale(p, -1)):
            return -1
        return None

    # --- which loop variables a polynomial depends on
    def _loop_vars(self, p, out=None):
        out = set() if out is None else out
        for m in p:
            for a in m:
                self._atom_loop_vars(a, out)
        return out

    def _atom_loop_vars(self, a, out):
        kind = a[0]
        if kind == "var":
            if a[1] in self.order:
                out.add(a[1])
        elif kind in ("floordiv", "floormod", "min", "max"):
            self._loop_vars(thaw(a[1]), out)
            self._loop_vars(thaw(a[2]), out)
        elif kind == "cast":
            self._loop_vars(thaw(a[2]), out)
        elif kind == "castb":
            self._loop_vars(thaw(a[3]), out)
            self._loop_vars(thaw(a[4]), out)

    def is_param_level(self, p) -> bool:
        """Only parameters (no loop variables, no data, nothing opaque)."""
        for m in p:
            for a in m:
                if not self._param_atom(a):
                    return False
        return True

    def _param_atom(self, a):
        kind = a[0]
        if kind == "var":
            return a[1] in self.params
        if kind in ("floordiv", "floormod", "min", "max"):
            return self.is_param_level(thaw(a[1])) and self.is_param_level(thaw(a[2]))
        if kind == "cast":
            return self.is_param_level(thaw(a[2]))
        if kind == "castb":
            return self.is_param_level(thaw(a[3])) and self.is_param_level(thaw(a[4]))
        return False

    # --- bounds
    def bound(self, p, side, depth=0):
        """A polynomial over the parameters that is >= p (side +1) or <= p (side -1) for
        every value of the loop variables, or None."""
        if depth > 64:
            return None
        lv = self._loop_vars(p)
        if not lv:
            return self._bound_atoms(p, side, depth)
        v = max(lv, key=self.order.__getitem__)           # the innermost
        # monomials with v inside an atom: bound the atom (it depends on v)
        direct, rest = {}, {}
        va = ("var", v)
        for m, c in p.items():
            if va in m:
                if m.count(va) > 1:
                    return None                            # v squared: not monotone
                others = _remove(m, (va,))
                direct = add(direct, {others: c})
            else:
                rest[m] = c
        if any(v in self._loop_vars({m: 1}) for m in rest):
            rest = self._bound_atoms_with(rest, side, v, depth)
            if rest is None:
                return None
        if not direct:
            return self.bound(rest, side, depth + 1)
        if v in self._loop_vars(direct):
            return None
        s = self.sign(direct) if self.is_param_level(direct) else _const_sign(direct)
        vmin, vext = self.loops[v]
        last = add(add(vmin, vext), const(-1))
        if s is None and self.is_param_level(direct):
            # a coefficient of unknown sign (a size formula that may be negative): linear in
            # v, so the bound is at one of v's ends, whichever is larger (smaller)
            ends = [self.bound(add(mul(direct, e), rest), side, depth + 1)
                    for e in (vmin, last)]
            if any(e is None for e in ends):
                return None
            return _minmax("max" if side > 0 else "min", ends[0], ends[1])
        if s is None:
            # the coefficient depends on outer loops: bound both ends
            lo_c, hi_c = self.bound(direct, -1, depth + 1), self.bound(direct, 1, depth + 1)
            if lo_c is None or hi_c is None:
                return None
            s = self.sign(lo_c) if self.sign(lo_c) == 1 else (
                -1 if self.sign(hi_c) == -1 else None)
            if s is None:
                return None
        pick = last if s * side > 0 else vmin
        return self.bound(add(mul(direct, pick), rest), side, depth + 1)

    def _bound_atoms_with(self, p, side, v, depth):
        """``p`` with every atom that depends on loop variable ``v`` replaced by its bound."""
        out = {}
        for m, c in p.items():
            dep = [a for a in m if v in self._atom_loop_vars_set(a)]
            if not dep:
                out = add(out, {m: c})
                continue
            if len(dep) > 1 or len(m) > 1:
                others = _remove(m, (dep[0],))
                coef = {others: c}
                s = _const_sign(coef) if not others else (
                    self.sign(coef) if self.is_param_level(coef) else None)
                if s is None or len(dep) > 1:
                    return None
            else:
                coef, s = {(): c}, (1 if c > 0 else -1)
            b = self._atom_bound(dep[0], side * s, depth)
            if b is None:
                return None
            out = add(out, mul(coef, b))
        return out

    def _atom_loop_vars_set(self, a):
        out = set()
        self._atom_loop_vars(a, out)
        return out

    def _bound_atoms(self, p, side, depth):
        """``p`` has no loop variables; atoms that are not parameter-level (data) get their
        dtype range."""
        out = {}
        for m, c in p.items():
            bad = [a for a in m if not self._param_atom(a)]
            if not bad:
                out = add(out, {m: c})
                continue
            if len(m) != 1:
                return None
            b = self._atom_bound(m[0], side * (1 if c > 0 else -1), depth)
            if b is None:
                return None
            out = add(out, scale(b, c))
        return out

    def _atom_bound(self, a, side, depth):
        kind = a[0]
        if kind == "data":
            v = a[2] if side < 0 else a[3]
            return None if v is None else const(v)
        if kind == "var":
            return atom(a) if a[1] in self.params else None
        if kind == "opaque":
            return None
        if kind in ("cast", "castb"):
            # the operand's bound when the operand's whole range fits the dtype; if either
            # end may not fit, a value may wrap to anywhere in the dtype's range
            lo, hi = _dtype_range(a[1])
            inner = thaw(a[-1])
            bl, bh = self.best(inner, -1, depth + 1), self.best(inner, 1, depth + 1)
            if bl is None or bh is None:
                return const(lo if side < 0 else hi)
            vl, vh = const_value(bl), const_value(bh)
            if vl is not None and vh is not None:
                if lo <= vl and vh <= hi:
                    return const(vl if side < 0 else vh)
                return const(lo if side < 0 else hi)
            return atom(("castb", a[1], side, freeze(bl), freeze(bh)))
        x, y = thaw(a[1]), thaw(a[2])
        if kind in ("min", "max"):
            bx, by = self.best(x, side, depth + 1), self.best(y, side, depth + 1)
            if (kind == "min") == (side > 0):
                # hi(min) <= hi of either; lo(max) >= lo of either
                if bx is None:
                    return by
                if by is None:
                    return bx
            if bx is None or by is None:
                return None
            return _minmax(kind, bx, by)
        yv = const_value(y)
        if kind == "floormod":
            if yv is not None and yv > 0:
                # x in one period [k*y, k*y + y) (by its bounds, guards included): x - k*y
                xl, xh = self.best(x, -1, depth + 1), self.best(x, 1, depth + 1)
                vl = const_value(xl) if xl is not None else None
                vh = const_value(xh) if xh is not None else None
                if vl is not None and vh is not None and vl // yv == vh // yv:
                    return const((vl if side < 0 else vh) - vl // yv * yv)
                return const(0 if side < 0 else yv - 1)
            if self.is_param_level(y) and self.is_nonneg(y):
                # x % 0 is 0 (the compiled code's rule): [0, max(y - 1, 0)]
                return const(0) if side < 0 else _minmax("max", add(y, const(-1)), const(0))
            return None
        # floordiv: monotone in x for a positive divisor
        if yv is not None and yv > 0:
            bx = self.best(x, side, depth + 1)
            if bx is None:
                return None
            return Normalizer()._floordiv(bx, const(yv))
        if self.is_param_level(y) and self.is_nonneg(y):
            bx = self.best(x, side, depth + 1)
            if bx is None:
                return None
            if side < 0 and not self.is_nonneg(bx):
                return None                 # floordiv(negative, m) depends on m's size
            return Normalizer()._floordiv(bx, y)
        return None

    def best(self, p, side, depth=0):
        """One bound of ``p`` that uses the facts: the tightest of the candidates."""
        if depth > 8:
            return self.bound(p, side, depth)
        cands = self.candidates(p, side, self.facts, depth)
        if not cands:
            return None
        values = [const_value(c) for c in cands]
        if all(v is not None for v in values):
            return const(min(values) if side > 0 else max(values))
        out = cands[0]
        for c in cands[1:]:
            out = _minmax("min" if side > 0 else "max", out, c)
        return out

    def candidates(self, p, side, facts, depth=0):
        """Bounds of ``p`` (any one holds); facts ``f <= 0`` give more."""
        out = []
        b = self.bound(p, side, depth)
        if b is not None:
            out.append(b)
        for f in facts:
            for k in _scales(p, f, side):
                q = add(p, f, -k) if side > 0 else add(p, f, k)
                b = self.bound(q, side, depth)
                if b is not None and b not in out:
                    out.append(b)
        return out


def _data_atoms(p):
    return {a for m in p for a in m if a[0] == "data"}


def _scales(p, f, side):
    """Factors k > 0 for which ``p - k*f`` (upper bounds) or ``p + k*f`` (lower bounds)
    cancels a term of ``p``."""
    ks = []
    for m, c in f.items():
        if m:
            pc = p.get(m)
            if pc and pc % c == 0:
                k = pc // c * (1 if side > 0 else -1)
                if k > 0 and k not in ks:
                    ks.append(k)
    return ks


def _const_sign(p):
    v = const_value(p)
    if v is None:
        return None
    return 1 if v >= 0 else -1


def _minmax(kind, a, b):
    if a == b:
        return a
    av, bv = const_value(a), const_value(b)
    if av is not None and bv is not None:
        return const(min(av, bv) if kind == "min" else max(av, bv))
    pa, pb = sorted((freeze(a), freeze(b)), key=hash)
    return atom((kind, pa, pb))


# ----------------------------------------------------------------------------- to Python

def py_source(p, name) -> str:
    """Python source of polynomial ``p`` over parameters; ``name(var)`` names a variable."""
    if not p:
        return "0"
    terms = []
    for m, c in sorted(p.items(), key=lambda mc: (len(mc[0]), hash(mc[0]))):
        factors = [_atom_source(a, name) for a in m]
        if c != 1 or not factors:
            factors.insert(0, str(c))
        terms.append("*".join(factors))
    return "(" + " + ".join(terms) + ")"


def _atom_source(a, name):
    kind = a[0]
    if kind == "var":
        return name(a[1])
    if kind == "cast":
        return f"_wrap({py_source(thaw(a[2]), name)}, {dtypes.bits(a[1])}, " \
            f"{dtypes.is_signed(a[1])})"
    if kind == "castb":
        lo, hi = _dtype_range(a[1])
        return f"_clampb({py_source(thaw(a[3]), name)}, {py_source(thaw(a[4]), name)}, " \
            f"{lo}, {hi}, {a[2]})"
    x, y = py_source(thaw(a[1]), name), py_source(thaw(a[2]), name)
    if kind == "floordiv":
        return f"_fdiv({x}, {y})"
    if kind == "floormod":
        return f"_fmod({x}, {y})"
    return f"{kind}({x}, {y})"


def describe(p, name=lambda v: v.name) -> str:
    """A readable rendering of a parameter polynomial (for messages)."""
    s = py_source(p, name)
    return s[1:-1] if s.startswith("(") and s.endswith(")") else s


def wrap(x, bits, signed):
    """``x`` wrapped into a ``bits``-wide integer (a narrowing cast)."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if signed and x >= 1 << (bits - 1) else x


def clamp_bound(xlo, xhi, lo, hi, side):
    """A bound of ``cast(x)`` for ``x`` in [xlo, xhi]: that bound if the whole range fits
    [lo, hi] (no value wraps), else the end of the dtype's range."""
    if lo <= xlo and xhi <= hi:
        return xhi if side > 0 else xlo
    return hi if side > 0 else lo


PY_HELPERS = {"_fdiv": lambda a, b: a // b if b else 0, "_fmod": lambda a, b: a % b if b else 0,
              "_wrap": wrap, "_clampb": clamp_bound}


def numeric_range(p, nonneg):
    """(lo, hi) numbers that contain every value of parameter polynomial ``p`` when each
    variable ranges over its dtype (variables in ``nonneg``, the sizes, from 0), or None."""
    total = (0, 0)
    for m, c in p.items():
        r = (c, c)
        for a in m:
            ar = _atom_range(a, nonneg)
            if ar is None:
                return None
            r = _mul_range(r, ar)
        total = (total[0] + r[0], total[1] + r[1])
    return total


def _mul_range(x, y):
    prods = [x[0] * y[0], x[0] * y[1], x[1] * y[0], x[1] * y[1]]
    return min(prods), max(prods)


def _atom_range(a, nonneg):
    kind = a[0]
    if kind == "var":
        v = a[1]
        if not dtypes.is_int(v.dtype):
            return None
        lo, hi = dtypes.min_value(v.dtype), dtypes.max_value(v.dtype)
        return (max(lo, 0), hi) if v in nonneg else (lo, hi)
    if kind in ("cast", "castb"):
        return _dtype_range(a[1])
    x = numeric_range(thaw(a[1]), nonneg)
    y = numeric_range(thaw(a[2]), nonneg)
    if x is None or y is None:
        return None
    if kind == "min":
        return min(x[0], y[0]), min(x[1], y[1])
    if kind == "max":
        return max(x[0], y[0]), max(x[1], y[1])
    if kind == "floordiv" and y[0] > 0:
        return min(x[0] // y[0], x[0] // y[1]), max(x[1] // y[0], x[1] // y[1])
    if kind == "floormod" and y[0] >= 0:
        return 0, max(y[1] - 1, 0)
    return None

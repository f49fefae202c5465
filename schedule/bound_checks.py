"""Every buffer access of a lowered function is in bounds: proved, checked once per call, or checked
in the kernel.

For each index of each ``BufferLoad`` / ``BufferStore`` (before flattening, so per dimension),
``access_bounds`` derives lower and upper bounds as polynomials over the function's parameters
(size variables and scalar arguments), using the loop ranges and the guards around the access:

- proved at lowering (``0 <= lo`` and ``hi < size`` hold for all parameters): nothing to do;
- bounds known but not proved: a **precondition** that the caller checks once per call, before
  any code runs (``Precondition``; the runtime raises ``ArgumentError`` naming the tensor, the
  dimension, the index range and the size);
- bounds unknown or only from the dtype of data read from memory (``A[Idx[i]]``): a check in
  the kernel. The statement that makes the access runs only when every such index is in range;
  otherwise the kernel records (site, index value, position) in the hidden int64 buffer
  ``tw_index_error`` and skips it, and the runtime raises ``IndexError`` after the call.
  ``s[T].pragma(axis, "no_bound_check")`` turns the kernel checks off inside that loop (for code
  that proves its indices itself); preconditions stay.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from te import dtypes
from te.expr import NE, And, Call, Expr, Not, Or, Select, Var, cast, const as te_const
from te.arith import skey
from te.functor import _fields, free_vars

from . import access_bounds as ab
from .ir import (Allocate, Buffer, BufferLoad, BufferStore, Evaluate, For, ForKind, IfThenElse,
                 LetStmt, SeqStmt, Stmt, seq)

from te.runtime.errors import ArgumentError  # noqa: E402,F401  (raised by interp too)
from .bound_fast import (ERROR_SLOTS, FLAG_SLOT, _Check, _FastBody, _LazySelects,  # noqa: F401
                         _fast_twin, _ge, _lt)


NO_CHECK_PRAGMA = "no_bound_check"


@dataclass(frozen=True, eq=False)
class Precondition:
    """``hi_k <= 0`` for some enclosing extent, or ``max(lo) >= 0 and min(hi) < size``."""
    buffer: str
    dim: int
    access: str                 # the access as printed, e.g. "A[i + 1]"
    index: str                  # the index expression of the dimension
    lo: tuple                   # candidate lower bounds (polynomials; the largest holds)
    hi: tuple                   # candidate upper bounds (the smallest holds)
    size: dict                  # the dimension's size (polynomial)
    extents: tuple              # upper bounds of the enclosing loops' extents
    write: bool
    least: int = 0              # the lowest valid value (0 for an index)
    dtype: str = ""             # set for an overflow check: the arithmetic's dtype
    shift: tuple = ()           # set for a tail="shift" split: (stage, axis, factor text)


@dataclass(frozen=True, eq=False)
class CheckSite:
    """An index checked in the kernel."""
    buffer: str
    dim: int
    access: str
    index: str
    size: Expr
    size_poly: dict
    position: str               # what the recorded position indices are, e.g. "B[i, j]"
    target: str                 # the buffer whose element was being computed ("" if none)
    npos: int                   # how many position indices the record holds
    write: bool

    def message(self, func_name, record, size) -> str:
        if record[0] < 0:           # the flag without a record: should not happen
            return (f"{func_name}: an index read from data is out of bounds (the "
                    f"{'write' if self.write else 'read'} {self.access} or another checked "
                    "access)")
        """The IndexError text for a failed check, from the kernel's error record."""
        what = "write" if self.write else "read"
        at = ""
        if self.target:
            at = f" while computing {self.target}[{', '.join(str(int(record[2 + j])) for j in range(self.npos))}]"
        return (f"{func_name}: index {int(record[1])} is out of bounds for dimension {self.dim} "
                f"of {self.buffer} with size {size} (the {what} {self.access}{at}); the index "
                f"must be in [0, {size})")


def insert_bound_checks(func, fast=True, shifts=()):
    """``func`` with ``preconditions`` and ``check_sites`` set, and its body checked.

    ``fast``: run a branch-free twin of the body first and the checked body only when an index
    failed (the CPU); without it (the GPU) the checked body runs alone. ``shifts``: (stage,
    axis, extent, factor) of ``tail="shift"`` splits with symbolic extents (each gets the
    call-time condition ``extent <= 0 or extent >= factor``)."""
    params = set(p for p in func.params if isinstance(p, Var))
    nonneg = set()
    for p in func.params:
        if isinstance(p, Buffer):
            for d in p.shape:
                nonneg.update(free_vars(d))
    params |= nonneg
    w = _Walker(params, nonneg)
    _shift_conditions(w, shifts)
    body = w.stmt(func.body)
    if w.lazy:
        lazy = _LazySelects(w.lazy)
        body = lazy.visit(body)
        w.fast = {lazy.visit(k): lazy.visit(v) for k, v in w.fast.items()}
    if w.sites and fast:
        # run the branch-free body; only when its flag says an index failed, run the
        # checked body, which records which index, where
        flag = BufferLoad(w.error_marker, (te_const(FLAG_SLOT),), "int64")
        fb = _FastBody(w.fast, w.error_marker)
        body = seq(fb.scope(fb.visit(body)),
                   IfThenElse(NE(flag, te_const(0, "int64"), "bool"), body))
    pre = _dedupe(w.preconditions)
    out = dataclasses.replace(func, body=body, preconditions=tuple(pre),
                              check_sites=tuple(w.sites))
    if w.sites:
        err = Buffer("tw_index_error", (te_const(ERROR_SLOTS),), "int64")
        out = dataclasses.replace(out, params=list(out.params) + [err], index_error=err)
        out.body = _bind_error(out.body, w.error_marker, err)
    return out


def _shift_conditions(w, shifts):
    """A call-time precondition per shifted split whose extent and factor are formulas of the
    parameters: ``extent - factor >= 0`` unless the axis is empty. (Other ones, sized by
    outer loops, are left to the access checks.)"""
    b = ab.Bounder({}, w.params, w.nonneg)
    for stage, axis, extent, factor in shifts:
        n = ab.Normalizer()
        e, f = n(extent), n(factor)
        if not (b.is_param_level(e) and b.is_param_level(f)):
            continue
        w.preconditions.append(Precondition(
            stage, 0, axis, str(extent), (ab.sub(e, f),), (ab.const(0),), ab.const(1),
            (e,), False, shift=(stage, axis, str(factor))))


def _bind_error(body, marker, err):
    from .functor import replace_buffers
    return replace_buffers(body, {marker: err})


class _NeedsGuard(Exception):
    """Ends a dry walk at the first read that needs the select's condition."""


class _Walker:
    def __init__(self, params, nonneg):
        self.params = params
        self.nonneg = nonneg
        self.loops = {}             # Var -> (min poly, extent poly), outermost first
        self.facts = []
        self.lets = {}
        self.unchecked = 0          # depth of no_bound_check pragmas
        self.preconditions = []
        self.sites = []
        self.error_marker = Buffer("tw_index_error", (te_const(ERROR_SLOTS),), "int64")
        self.in_vector = 0
        self.fast = {}              # checked statement -> its branch-free twin
        self.lazy = set()           # Selects that guard a read: made if_then_else
        self.dry = False            # in _needs_guard's walk
        self._memo = {}             # _access results
        self._overflow_memo = {}    # _no_overflow results (they keep their node alive)
        self._fkeys = {}            # id(facts list) -> (the list, its key)
        self._free = {}             # _access results without checks, whatever the conds
        self._ivars = {}            # id(expr) -> (expr, the variables its reads depend on)

    def norm(self):
        return ab.Normalizer(dict(self.lets), loops=self.loops)

    def _bounder(self, facts=()):
        """Bounds under the enclosing loops (and ``facts``)."""
        return ab.Bounder(self.loops, self.params, self.nonneg, facts)

    # ------------------------------------------------------------------ statements
    def stmt(self, s):
        if isinstance(s, SeqStmt):
            new = tuple(self.stmt(x) for x in s.seq)
            return s if all(a is b for a, b in zip(new, s.seq)) else SeqStmt(new)
        if isinstance(s, For):
            checks = self._exprs_checks([s.min, s.extent], s)
            for e in (s.min, s.extent):
                # a loop bound such as (n + 15) // 16 wraps for n near the dtype's end (the
                # loop would silently skip its tail): a call-time condition on the sizes
                self._no_overflow(e)
            n = self.norm()
            self.loops[s.loop_var] = (n(s.min), n(s.extent))
            off = any(k == NO_CHECK_PRAGMA for k, _ in s.annotations if isinstance(k, str)) \
                if s.annotations else False
            self.unchecked += off
            vec = s.kind == ForKind.VECTORIZED
            self.in_vector += vec
            body = self.stmt(s.body)
            self.in_vector -= vec
            self.unchecked -= off
            del self.loops[s.loop_var]
            out = s if body is s.body else dataclasses.replace(s, body=body)
            return self._wrap(out, checks)
        if isinstance(s, IfThenElse):
            checks = self._exprs_checks([s.condition], s)
            n = self.norm()
            then = self._with_facts(self._facts(s.condition, n), s.then_case)
            other = None if s.else_case is None else \
                self._with_facts(self._facts(s.condition, n, negate=True), s.else_case)
            out = s if then is s.then_case and other is s.else_case else \
                IfThenElse(s.condition, then, other)
            return self._wrap(out, checks)
        if isinstance(s, LetStmt):
            checks = self._exprs_checks([s.value], s)
            self.lets[s.var] = self.norm()(s.value)
            body = self.stmt(s.body)
            del self.lets[s.var]
            out = s if body is s.body else LetStmt(s.var, s.value, body)
            return self._wrap(out, checks)
        if isinstance(s, Allocate):
            body = self.stmt(s.body)
            return s if body is s.body else dataclasses.replace(s, body=body)
        if isinstance(s, BufferStore):
            # inner reads first: the store's own index may read through them
            checks = self._exprs_checks(list(s.indices) + [s.value], s)
            checks += self._access(s.buffer, s.indices, [], s, write=True, node=s)
            return self._wrap(s, checks)
        if isinstance(s, Evaluate):
            return self._wrap(s, self._exprs_checks([s.value], s))
        # other statements (extern calls...): check their expressions generically
        exprs = [getattr(s, f) for f in _fields(s)]
        flat = [e for v in exprs for e in (v if isinstance(v, tuple) else (v,))
                if isinstance(e, Expr)]
        subs = [e for v in exprs for e in (v if isinstance(v, tuple) else (v,))
                if isinstance(e, Stmt)]
        checks = self._exprs_checks(flat, s)
        if subs:
            new = {id(x): self.stmt(x) for x in subs}
            changed = {f: (tuple(new.get(id(x), x) for x in getattr(s, f))
                           if isinstance(getattr(s, f), tuple) else new.get(id(getattr(s, f)),
                                                                            getattr(s, f)))
                       for f in _fields(s)}
            if any(changed[f] is not getattr(s, f) for f in changed):
                s = dataclasses.replace(s, **changed)
        return self._wrap(s, checks)

    def _with_facts(self, facts, body):
        saved = self.facts
        self.facts = saved + facts
        try:
            return self.stmt(body)
        finally:
            self.facts = saved

    # ------------------------------------------------------------------ expressions
    def _exprs_checks(self, exprs, owner):
        checks = []
        for e in exprs:
            self._expr(e, [], checks, owner)
        return checks

    def _expr(self, e, conds, checks, owner):
        """Walk ``e``; ``conds``: expression-level guards on the path (lazy evaluation)."""
        if isinstance(e, BufferLoad):
            for i in e.indices:
                self._expr(i, conds, checks, owner)
            checks += self._access(e.buffer, e.indices, conds, owner, write=False, node=e)
            return
        if isinstance(e, Select) or (isinstance(e, Call) and e.op == "if_then_else"):
            c, t, f = (e.condition, e.true_value, e.false_value) if isinstance(e, Select) \
                else e.args
            self._expr(c, conds, checks, owner)
            if isinstance(e, Select) and not self.dry and self._needs_guard(t, f, owner, c):
                self.lazy.add(e)            # evaluated eagerly, a side would read outside
            if self._bears_on(c, t, f):
                n = self.norm()
                tf, ff = self._facts(c, n), self._facts(c, n, negate=True)
            else:                           # a condition on other variables than the reads'
                tf = ff = []
            self._guarded(t, conds + [c], tf, checks, owner)
            self._guarded(f, conds + [Not(c, "bool")], ff, checks, owner)
            return
        if isinstance(e, (And, Or)):
            # both sides are evaluated (an i1 and/or); one whose reads are in bounds only
            # when the other holds becomes a lazy if_then_else
            self._expr(e.a, conds, checks, owner)
            if not self.dry and self._needs_guard(e.b, None, owner, e.a):
                self.lazy.add(e)
            guard = e.a if isinstance(e, And) else Not(e.a, "bool")
            facts = self._facts(e.a, self.norm(), negate=isinstance(e, Or)) \
                if self._bears_on(e.a, e.b, None) else []
            self._guarded(e.b, conds + [guard], facts, checks, owner)
            return
        if isinstance(e, Expr):
            if type(e).__name__ == "Let":
                self._expr(e.value, conds, checks, owner)
                self.lets[e.var] = self.norm()(e.value)
                self._expr(e.body, conds, checks, owner)
                del self.lets[e.var]
                return
            for f in _fields(e):
                v = getattr(e, f)
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, Expr):
                        self._expr(x, conds, checks, owner)

    def _bears_on(self, cond, t, f) -> bool:
        """Whether the facts of ``cond`` can bound a read in ``t`` or ``f``: only through a
        variable that the condition and a read's index (or a let it goes through) share.
        (Winograd's transforms select on the tile position among sums of reads that do not
        depend on it: their facts only made every read of every branch be analysed again.)"""
        reads = self._read_vars(t) | (self._read_vars(f) if f is not None else frozenset())
        if not reads:
            return False
        if any(v in self.lets for v in reads):
            return True
        return not reads.isdisjoint(free_vars(cond))

    def _read_vars(self, e):
        """The variables the reads in ``e`` depend on: their indices', and those of the values
        of lets in ``e`` (memoized per node)."""
        hit = self._ivars.get(id(e))
        if hit is not None:
            return hit[1]
        out = set()
        if isinstance(e, BufferLoad):
            for i in e.indices:
                out.update(free_vars(i))
                out |= self._read_vars(i)
        elif isinstance(e, Expr):
            if type(e).__name__ == "Let":
                out.update(free_vars(e.value))
            for name in _fields(e):
                v = getattr(e, name)
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, Expr):
                        out |= self._read_vars(x)
        out = frozenset(out)
        self._ivars[id(e)] = (e, out)
        return out

    # ------------------------------------------------------------------ overflow
    def _facts(self, cond, norm, negate=False):
        """The facts of ``cond``, or none when its arithmetic may wrap around (a guard
        ``i + 2147483600 < 2147483603`` holds again past the wrap: its fact would lie)."""
        return ab.facts_of(cond, norm, negate, self._bounder(), usable=self._no_overflow)

    def _no_overflow(self, e, access=None) -> bool:
        """False when integer arithmetic in ``e`` may wrap (provably, or unboundedly); True
        otherwise, with a call-time check recorded for bounds that are formulas. With
        ``access`` (an index), arithmetic that wraps on every run is refused: the lowering
        passes, like the math of the bounds, take integers as exact."""
        key = (id(e), access is not None, tuple(self.loops), tuple(self.lets))
        hit = self._overflow_memo.get(key)
        if hit is not None:
            self.preconditions.extend(hit[1])
            return hit[0]
        start = len(self.preconditions)
        ok = self._no_overflow_uncached(e, access)
        self._overflow_memo[key] = (ok, self.preconditions[start:], e)
        return ok

    def _no_overflow_uncached(self, e, access):
        from te.dtypes import is_int, max_value, min_value
        ok = True
        b = None
        for node in _arith_nodes(e):
            if not is_int(node.dtype) or node.dtype.startswith("uint"):
                continue
            if b is None:
                b = self._bounder()
            p = self.norm()(node)
            lo, hi = b.bound(p, -1), b.bound(p, 1)
            if lo is None or hi is None:
                ok = False
                continue
            if any(a[0] in ("data", "opaque") for a in _all_atoms(p)):
                # arithmetic on values read from memory: its range is the dtype's, not a
                # call-time condition; an index of it is checked in the kernel
                vl, vh = ab.const_value(lo), ab.const_value(hi)
                if vl is None or vh is None or not (min_value(node.dtype) <= vl and
                                                    vh <= max_value(node.dtype)):
                    ok = False
                    continue
            dmin, dmax = min_value(node.dtype), max_value(node.dtype)
            vl, vh = ab.const_value(lo), ab.const_value(hi)
            if vl is not None and vh is not None:
                fits = dmin <= vl and vh <= dmax
                from_data = any(a[0] in ("data", "opaque", "cast", "castb")
                                for a in _all_atoms(p))
                if not fits and access is not None and not from_data:
                    from .stage import ScheduleError
                    raise ScheduleError(
                        f"the index {e} of {access} computes {node}, which ranges over "
                        f"[{vl}, {vh}] and wraps around in {node.dtype}; compute the index "
                        "in int64 (cast its operands with .astype('int64'))")
                ok = ok and fits
                continue
            # formulas: every size variable is at most its dtype's largest value (the call
            # checks that the arrays fit); if the formulas stay in range for all of them,
            # nothing can wrap
            rl, rh = ab.numeric_range(lo, self.nonneg), ab.numeric_range(hi, self.nonneg)
            if rl is not None and rh is not None and dmin <= rl[0] and rh[1] <= dmax:
                continue
            if dtypes.bits(node.dtype) < 32:
                # 8- and 16-bit arithmetic wraps as values do (numpy's int8 * int8): not a
                # size that is too large, so not a reason to refuse the call; unproved
                ok = False
                continue
            extents = self._loop_extents(b)
            if extents is None:
                continue                    # under a loop that never runs
            self.preconditions.append(Precondition(
                "", 0, str(node), str(node), (lo,), (hi,), ab.const(dmax + 1),
                tuple(extents), False, least=dmin, dtype=node.dtype))
        return ok

    def _needs_guard(self, t, f, owner, cond=None):
        """Whether a read in ``t`` or ``f`` is in bounds only under the select's condition."""
        # the condition's facts can only matter to reads whose indices share a variable
        # with it (a fact bounds an index through a common term)
        if cond is not None and not self._bears_on(cond, t, f):
            return False
        # a dry walk (nested selects are not asked again: asking at every level was
        # exponential in the nesting depth)
        saved = (self.preconditions, self.sites, self.fast)
        self.preconditions, self.sites, self.fast = [], [], {}
        self.dry = True
        try:
            scratch = []
            try:
                for x in (t, f):
                    if x is not None:
                        self._expr(x, [], scratch, owner)
            except _NeedsGuard:
                return True
            return bool(scratch or any(not p.dtype for p in self.preconditions))
        finally:
            self.dry = False
            self.preconditions, self.sites, self.fast = saved

    def _guarded(self, e, conds, facts, checks, owner):
        saved = self.facts
        self.facts = saved + facts
        try:
            self._expr(e, conds, checks, owner)
        finally:
            self.facts = saved

    # ------------------------------------------------------------------ one access
    def _access(self, buf, indices, conds, owner, write, node=None):
        """In-kernel checks (conditions) for the dimensions of one access; preconditions
        and proofs are recorded on the way. The same access under the same loops, facts
        and lets is analysed once (selects repeat their operands many times)."""
        if buf is self.error_marker or not indices:
            return []
        if id(self.facts) not in self._fkeys:
            self._fkeys[id(self.facts)] = (self.facts, frozenset(ab.freeze(f)
                                                                 for f in self.facts))
        key = (id(node), id(owner), tuple(id(c) for c in conds), tuple(self.loops),
               self._fkeys[id(self.facts)][1], tuple(self.lets), self.unchecked, self.dry)
        hit = self._memo.get(key)
        if hit is None:
            # the expression-level guards only go into checks: an access that needed none
            # needs none under other guards either
            free_key = self._free_key(buf, indices, write, key)
            hit = self._free.get(free_key)
        if hit is not None:
            checks, pre = hit[0], hit[1]
            if self.dry and (checks or any(not p.dtype for p in pre)):
                raise _NeedsGuard()
            self.preconditions.extend(pre)
            return list(checks)
        start = len(self.preconditions)
        out = self._access_uncached(buf, indices, conds, owner, write, node)
        self._memo[key] = (list(out), self.preconditions[start:], node, owner, conds)
        if not out:
            self._free[self._free_key(buf, indices, write, key)] = self._memo[key]
        if self.dry and (out or any(not p.dtype for p in self.preconditions[start:])):
            raise _NeedsGuard()             # the dry walk has its answer
        return out

    def _free_key(self, buf, indices, write, key):
        """The key of an access by its structure (not its node) in this context: the
        enclosing loops' and lets' values too, not only their variables (one variable bound
        by two loops of different ranges must not share an answer)."""
        loops = tuple((v, ab.freeze(lo), ab.freeze(ext)) for v, (lo, ext) in self.loops.items())
        lets = tuple((v, ab.freeze(p)) for v, p in self.lets.items())
        return (id(buf), write, skey(tuple(indices)), loops, lets) + key[4:5] + key[6:]

    def _access_uncached(self, buf, indices, conds, owner, write, node):
        if any(ab.const_value(f) is not None and ab.const_value(f) > 0 for f in self.facts):
            return []                           # under a guard that is always false
        n = self.norm()
        b = self._bounder(self.facts)
        extents = self._loop_extents(b)
        if extents is None:
            return []                           # a loop around it never runs
        out = []
        shape = buf.shape
        if len(indices) != len(shape):      # one flat index into the whole buffer
            shape = (_flat_size(buf),)
        for d, (index, size) in enumerate(zip(indices, shape)):
            p = n(index)
            sp = n(size)
            if not b.is_param_level(sp):
                sp = b.bound(sp, -1)            # an allocation sized by an outer loop
            lo = b.candidates(p, -1, self.facts)
            hi = b.candidates(p, 1, self.facts)
            if any(a[0] == "floordiv" for a in _all_atoms(p)):
                whole = ab.Normalizer(dict(self.lets), whole_divisions=True,
                                         loops=self.loops)(index)
                lo += [c for c in b.candidates(whole, -1, self.facts) if c not in lo]
                hi += [c for c in b.candidates(whole, 1, self.facts) if c not in hi]
            # an index whose arithmetic may wrap is checked in the kernel, on its value:
            # its bounds (exact integers) do not hold
            wraps = not self._no_overflow(index, _access_text(buf, indices))
            data = wraps or any(a[0] in ("data", "opaque") for a in _all_atoms(p))
            if not wraps and sp is not None and lo and hi and \
                    self._proved(lo, hi, sp, extents):
                continue
            if sp is not None and lo and hi and not data:
                self.preconditions.append(Precondition(
                    buf.name, d, _access_text(buf, indices), str(index), tuple(lo),
                    tuple(hi), sp, tuple(extents), write))
                continue
            if self.unchecked:
                continue
            if sp is None and not data and lo and hi:
                continue                        # cannot happen for parameter buffers
            out.append(self._site(buf, d, index, size, indices, conds, owner, write, node))
        return out

    def _loop_extents(self, b):
        """Upper bounds (formulas) of the enclosing loops' extents: where one is <= 0 at call
        time, nothing inside runs. None when one is a constant <= 0."""
        extents = []
        for v, (vmin, vext) in self.loops.items():
            hi = b.bound(vext, 1)
            if hi is not None and ab.const_value(hi) is None:
                extents.append(hi)
            elif hi is not None and ab.const_value(hi) <= 0:
                return None
        return extents

    def _proved(self, lo, hi, size, extents):
        b = ab.Bounder({}, self.params, self.nonneg)
        assumptions = [ab.add(e, ab.const(-1)) for e in extents]      # each extent >= 1

        def nonneg(q):
            if b.is_nonneg(q):
                return True
            return any(b.is_nonneg(ab.sub(q, a)) for a in assumptions)
        if any(nonneg(ab.add(ab.sub(l, h), ab.const(-1))) for l in lo for h in hi):
            return True                 # lo > hi: under its guards the access never runs
        return any(nonneg(c) for c in lo) and \
            any(nonneg(ab.sub(ab.add(size, ab.const(-1)), c)) for c in hi)

    def _site(self, buf, d, index, size, indices, conds, owner, write, node):
        k = len(self.sites)
        # the element being computed, when its indices read nothing (they could read
        # through the failed index itself)
        computing = isinstance(owner, BufferStore) and not any(_loads_in(i) for i in owner.indices)
        pos = tuple(owner.indices[:ERROR_SLOTS - 3]) if computing else ()
        where = f"{owner.buffer.name}[{', '.join(str(i) for i in owner.indices)}]" \
            if computing else ""
        self.sites.append(CheckSite(buf.name, d, _access_text(buf, indices), str(index), size,
                                    self.norm()(size), where,
                                    owner.buffer.name if computing else "",
                                    len(pos), write))
        idx = index if index.dtype == "int64" else cast("int64", index)
        sz = size if size.dtype == "int64" else cast("int64", size)
        ok = And(_ge(idx, 0), _lt(idx, sz), "bool")
        guard = ok
        for c in reversed(conds):       # lazily: the index may only be readable under c
            guard = Call("if_then_else", (c, guard, te_const(True, "bool")), "bool")
        record = [BufferStore(self.error_marker, te_const(k, "int64"), (te_const(0),)),
                  BufferStore(self.error_marker, idx, (te_const(1),))]
        for j, p in enumerate(pos):
            record.append(BufferStore(self.error_marker,
                                      p if p.dtype == "int64" else cast("int64", p),
                                      (te_const(2 + j),)))
        # the first failure is kept (in a serial nest: the lowest position, as PyTorch's)
        first = _lt(BufferLoad(self.error_marker, (te_const(0),), "int64"),
                    te_const(0, "int64"))
        return _Check(guard, IfThenElse(first, seq(*record)), node, d, ok, index, size)

    def _wrap(self, s, checks):
        """The checked statement: it runs only when every index is in range, else records
        the failure. Outside vectorized loops, the fast body gets a branch-free twin (safe
        indices, a failure flag) that LLVM can vectorize."""
        if not checks:
            return s
        # lazily, in order: an inner index (Idx[i] of A[Idx[J[i]]]) is checked before the
        # outer one reads through it
        cond = checks[-1].guard
        for c in reversed(checks[:-1]):
            cond = Call("if_then_else", (c.guard, cond, te_const(False, "bool")), "bool")
        if len(checks) == 1:
            out = IfThenElse(cond, s, checks[0].record)
        else:
            # the first failing check is recorded; later ones may read through it
            chain = IfThenElse(Not(checks[-1].guard, "bool"), checks[-1].record)
            for c in reversed(checks[:-1]):
                chain = IfThenElse(Not(c.guard, "bool"), c.record, chain)
            out = IfThenElse(cond, s, chain)
        if not self.in_vector:
            self.fast[out] = _fast_twin(s, checks, cond, self.error_marker)
        return out


def _loads_in(e):
    from .functor import post_order_visit
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def _arith_nodes(e):
    """The Add / Sub / Mul nodes of ``e`` (not inside loads: those are data)."""
    from te.expr import Add, Mul, Sub
    out = []
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, (Add, Sub, Mul)):
            out.append(n)
        if isinstance(n, Expr) and not isinstance(n, BufferLoad):
            for f in _fields(n):
                v = getattr(n, f)
                stack.extend(x for x in (v if isinstance(v, tuple) else (v,))
                             if isinstance(x, Expr))
    return out


def _flat_size(buf):
    if buf.strides:
        return buf.shape[0] * buf.strides[0]
    size = buf.shape[0] if buf.shape else te_const(1)
    for d in buf.shape[1:]:
        size = size * d
    return size


def _all_atoms(p):
    out = []
    stack = [p]
    while stack:
        q = stack.pop()
        for m in q:
            for a in m:
                out.append(a)
                if a[0] in ("floordiv", "floormod", "min", "max"):
                    stack += [ab.thaw(a[1]), ab.thaw(a[2])]
                elif a[0] == "cast":
                    stack.append(ab.thaw(a[2]))
                elif a[0] == "castb":
                    stack += [ab.thaw(a[3]), ab.thaw(a[4])]
    return out


def _access_text(buf, indices):
    return f"{buf.name}[{', '.join(str(i) for i in indices)}]"


def _dedupe(pre):
    seen, out = set(), []
    for p in pre:
        key = (p.buffer, p.dim, frozenset(ab.freeze(x) for x in p.lo),
               frozenset(ab.freeze(x) for x in p.hi), ab.freeze(p.size),
               frozenset(ab.freeze(x) for x in p.extents))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


# ----------------------------------------------------------------------------- call time

def compile_preconditions(pre, names):
    """A function of the parameter values (in the order of ``names``: Vars) that returns the
    index of the first failing precondition, or -1; None when there are none."""
    if not pre:
        return None
    index = {v: f"v{k}" for k, v in enumerate(names)}
    for p in pre:
        for poly in (*p.lo, *p.hi, p.size, *p.extents):
            for a in _all_atoms(poly):
                if a[0] == "var" and a[1] not in index:
                    return None             # a variable the caller does not know
    lines = [f"def check({', '.join(index.values())}):"]
    for k, p in enumerate(pre):
        src = lambda q: ab.py_source(q, index.__getitem__)      # noqa: E731
        runs = " or ".join(f"{src(e)} <= 0" for e in p.extents)
        lo = src(p.lo[0]) if len(p.lo) == 1 else f"max({', '.join(src(q) for q in p.lo)})"
        hi = src(p.hi[0]) if len(p.hi) == 1 else f"min({', '.join(src(q) for q in p.hi)})"
        # an empty range (lo > hi): under its guards the access never runs
        ok = f"({lo} > {hi} or ({lo} >= {p.least} and {hi} < {src(p.size)}))"
        lines.append(f"    if not ({runs + ' or ' if runs else ''}{ok}):")
        lines.append(f"        return {k}")
    lines.append("    return -1")
    g = dict(ab.PY_HELPERS)
    exec("\n".join(lines), g)
    return g["check"]


def site_size(site, names, values):
    """The size of a check site's dimension for these parameter values."""
    env = dict(zip(names, values))
    try:
        return eval(ab.py_source(site.size_poly, lambda v: repr(env[v])),
                    dict(ab.PY_HELPERS))
    except (KeyError, NameError):
        return str(site.size)


def precondition_message(func_name, p, names, values):
    """The ArgumentError text for failing precondition ``p``."""
    env = dict(zip(names, values))
    val = lambda q: eval(ab.py_source(q, lambda v: repr(env[v])),   # noqa: E731
                         dict(ab.PY_HELPERS))
    lo = max(val(q) for q in p.lo)
    hi = min(val(q) for q in p.hi)
    size = val(p.size)
    used = sorted({a[1] for q in (*p.lo, *p.hi, p.size) for a in _all_atoms(q)
                   if a[0] == "var"}, key=lambda v: v.name)
    given = ", ".join(f"{v.name} = {env[v]}" for v in used if v in env)
    what = "writes" if p.write else "reads"
    if p.shift:
        stage, axis, factor = p.shift
        return (f"{func_name}: stage {stage} splits axis {axis} with tail='shift' and "
                f"factor {factor}, but the axis has {val(p.extents[0])} values"
                + (f" (with {given})" if given else "") +
                f", fewer than the factor: the shifted last piece would start before the "
                f"axis; pass arrays where {axis} has at least {factor} values, or split with "
                "tail='guard'")
    if p.dtype:
        return (f"{func_name}: the index arithmetic {p.access} ranges over [{lo}, {hi}]"
                + (f" (with {given})" if given else "") +
                f", beyond {p.dtype}: it would wrap around; declare the sizes as "
                f"te.var(name, 'int64') or pass smaller arrays")
    return (f"{func_name}: {what} {p.access}, whose index {p.index} in dimension {p.dim} of "
            f"{p.buffer} ranges over [{lo}, {hi}], but that dimension has size {size}"
            + (f" (with {given})" if given else "") +
            f"; pass a {p.buffer} with a dimension {p.dim} that covers [{lo}, {hi}], or guard "
            "the access with te.if_then_else")

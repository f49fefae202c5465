"""Random DSL programs with random schedules, written out as runnable Python source.

``generate(seed)`` returns a Case: the source of a program that builds te tensors and a
schedule, the same program's meaning as a numpy ``reference`` (written with tests.fuzz.harness'
helpers) and the arrays to run it on. Each expression node is drawn once and rendered twice,
as te and as numpy, so the two meanings cannot drift apart. The schedule is drawn while the
program runs (each line is executed as it is written), so that it can name the axes that exist;
a line that raises ScheduleError / TEError ends the schedule (the case is then a refusal).

Programs: one or two stages (an elementwise or reduction stage, optionally read by a second
stage), 1-3 output dimensions of constant or symbolic size (te.var, int32 or int64) including
0 and 1, int8/16/32/64, uint8, float32/64 values, casts, select / if_then_else, floordiv /
floormod / truncdiv / truncmod with negative operands, min/max, guarded stencils, reads through
// and % of an axis, padded inputs with expression shapes (n + 2), gathers through index
tensors (a few out of range: then the compiled code must raise IndexError), sum/max/min
reductions. Values stay where the DSL defines them: signed 32/64-bit arithmetic never
overflows (checked on the actual inputs, else another case is drawn), float->int casts are
clamped into range, divisors are never 0 or -1, floats are quarters so that most float
results are exact and comparisons of them agree everywhere.
"""
from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field

from te import dtypes
from te.tensor import COMM_REDUCE

VALUE_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "float32", "float64")
SIZES = (0, 1, 1, 2, 3, 3, 4, 5, 7, 8, 8, 9, 16, 17)
REFUSALS = ("ScheduleError", "TEError")


@dataclass
class Case:
    seed: int
    source: str
    expect: str = "ok"                   # "ok" or "IndexError"
    features: set = field(default_factory=set)


@dataclass
class Node:
    te: str                              # te source
    np: str                              # numpy source (harness helpers as H)
    dt: str
    mag: float                           # bound on |value|
    exact: bool = True                   # float: no rounding anywhere below (ints: always)
    frac: int = 0                        # float: fractional bits of the values


@dataclass
class Axis:
    name: str
    te_ext: str                          # extent in te source (a constant or a var name)
    ext: int                             # its value in this case
    reduce: bool = False


class _Program:
    """The state of one program being drawn: its lines, inputs and features."""

    def __init__(self, rng: random.Random, seed: int):
        self.rng, self.seed = rng, seed
        self.lines = []                  # te program lines
        self.inputs = []                 # (name, te shape src, shape, dtype, init src)
        self.vars = {}                   # name -> (dtype, value)
        self.features = set()
        self.expect = "ok"
        self.bad_gather_allowed = False
        self.readers = {}                # input name -> stage names that read it

    # ------------------------------------------------------------------ sizes
    def size(self):
        """(te source, value) of a dimension: a constant or a fresh/reused te.var."""
        r = self.rng
        value = r.choice(SIZES)
        if value == 0:
            self.features.add("size0")
        elif value == 1:
            self.features.add("size1")
        if r.random() < 0.45:
            if self.vars and r.random() < 0.3:
                name = r.choice(sorted(self.vars))
                return name, self.vars[name][1]
            name = f"n{len(self.vars)}"
            dt = "int64" if r.random() < 0.25 else "int32"
            self.vars[name] = (dt, value)
            self.features.add("var_" + dt)
            return name, value
        return str(value), value

    # ------------------------------------------------------------------ inputs
    def new_input(self, shape_src, shape, dt, lo=None, hi=None, index_bound=None, bad=None):
        name = f"A{len(self.inputs)}" if index_bound is None else f"I{len(self.inputs)}"
        seed = self.seed * 31 + len(self.inputs)
        if index_bound is not None:
            init = f"H.indices({seed}, {tuple(shape)}, {dt!r}, {index_bound}, bad={bad!r})"
        else:
            if lo is None:
                lo, hi = value_range(self.rng, dt)
            init = f"H.rand({seed}, {tuple(shape)}, {dt!r}, {lo!r}, {hi!r})"
        self.inputs.append((name, shape_src, tuple(shape), dt, init))
        return name, (lo, hi)


def value_range(rng, dt):
    if dtypes.is_float(dt):
        return -4.0, 4.0
    if dt in ("int32", "int64"):
        return -40, 40
    if rng.random() < 0.5:
        return dtypes.min_value(dt), dtypes.max_value(dt)
    return (0, 20) if dt == "uint8" else (-20, 20)


def _shape_src(parts):
    return "(" + "".join(p + ", " for p in parts) + ")"


# ----------------------------------------------------------------------------- expressions

class _Exprs:
    """Draws expression trees over the axes of one stage."""

    def __init__(self, prog: _Program, axes, sources=()):
        self.p, self.rng, self.axes = prog, prog.rng, axes
        self.sources = list(sources)     # stage tensors this stage may read: (name, dt, axes)
        self.stage = None

    # ------------------------------------------------------------------ leaves
    def const(self, dt):
        r = self.rng
        if dtypes.is_float(dt):
            v = r.randint(-16, 16) / 4
            return Node(f"te.const({v!r}, {dt!r})", f"np.{dt}({v!r})", dt, abs(v), True, 2)
        lo, hi = dtypes.min_value(dt), dtypes.max_value(dt)
        if dt in ("int32", "int64"):
            lo, hi = -40, 40
        v = r.choice([0, 1, -1, 2, -3, 7, lo, hi]) if r.random() < 0.5 else r.randint(
            max(lo, -100), min(hi, 100))
        v = min(max(v, lo), hi)
        return Node(f"te.const({v}, {dt!r})", f"np.{dt}({v})", dt, abs(v))

    def index(self, dt):
        ax = self.rng.choice(self.axes)
        mag = max(ax.ext, 1)
        self.p.features.add("index_value")
        src, c = ax.name, 0
        if self.rng.random() < 0.4:     # a negative operand
            c = self.rng.randint(1, 9)
            src = f"({ax.name} - {c})"
        mag = mag + c
        if dtypes.is_int(dt) and (-mag < dtypes.min_value(dt) or mag > dtypes.max_value(dt)):
            mag = max(abs(dtypes.min_value(dt)), dtypes.max_value(dt))
        return Node(f"{src}.astype({dt!r})", f"H.cast({dt!r}, {src})", dt, mag, True, 0)

    def load(self, dt, top):
        r = self.rng
        roll = r.random()
        if self.sources and roll < 0.5:
            return self.load_stage(dt)
        if roll < 0.45:
            return self.cast_to(self.load_direct(dt), dt)
        if roll < 0.6:
            return self.cast_to(self.load_stencil(dt), dt)
        if roll < 0.7:
            return self.cast_to(self.load_padded(dt), dt)
        if roll < 0.85:
            return self.cast_to(self.load_divmod(dt), dt)
        return self.cast_to(self.load_gather(dt, top), dt)

    def _input_dtype(self, dt):
        return dt if self.rng.random() < 0.6 else self.rng.choice(VALUE_DTYPES)

    def _leaf_node(self, te_src, np_src, dt, rng):
        lo, hi = rng
        mag = max(abs(lo), abs(hi))
        frac = 2 if dtypes.is_float(dt) else 0
        return Node(te_src, np_src, dt, mag, True, frac)

    def _note_reader(self, name):
        self.p.readers.setdefault(name, set()).add(self.stage)

    def load_direct(self, dt):
        """A[axes in some order, some dropped] (identity, transpose, broadcast)."""
        r = self.rng
        axes = list(self.axes)
        r.shuffle(axes)
        axes = axes[:r.randint(1, len(axes))]
        if len(axes) < len(self.axes):
            self.p.features.add("broadcast")
        if [a.name for a in axes] != [a.name for a in self.axes][:len(axes)]:
            self.p.features.add("transpose")
        idt = self._input_dtype(dt)
        name, vr = self.p.new_input(_shape_src([a.te_ext for a in axes]),
                                    [a.ext for a in axes], idt)
        self._note_reader(name)
        idx = ", ".join(a.name for a in axes)
        return self._leaf_node(f"{name}[{idx}]", f"H.load({name}, {idx})", idt, vr)

    def load_stencil(self, dt):
        """if_then_else(0 <= ax + off < n, A[.., ax + off, ..], c): a guarded stencil."""
        r = self.rng
        self.p.features.add("stencil")
        idt = self._input_dtype(dt)
        name, vr = self.p.new_input(_shape_src([a.te_ext for a in self.axes]),
                                    [a.ext for a in self.axes], idt)
        self._note_reader(name)
        ax = r.choice(self.axes)
        off = r.choice([-2, -1, 1, 2])
        moved = f"{ax.name} + {off}" if off > 0 else f"{ax.name} - {-off}"
        idx = ", ".join(moved if a is ax else a.name for a in self.axes)
        fill = self.const(idt)
        cond_te = f"te.all({moved} >= 0, {moved} < {ax.te_ext})"
        cond_np = f"(({moved}) >= 0) & (({moved}) < {ax.ext})"
        return Node(f"te.if_then_else({cond_te}, {name}[{idx}], {fill.te})",
                    f"H.where({idt!r}, {cond_np}, H.load({name}, {idx}), {fill.np})", idt,
                    max(max(abs(vr[0]), abs(vr[1])), fill.mag), True,
                    2 if dtypes.is_float(idt) else 0)

    def load_padded(self, dt):
        """A[ax + q] over an A of shape (n + p) with 0 <= q <= p: in range, unguarded."""
        r = self.rng
        self.p.features.add("padded")
        ax = r.choice(self.axes)
        pad = r.randint(1, 3)
        q = r.randint(0, pad)
        shape_src = [f"{a.te_ext} + {pad}" if a is ax else a.te_ext for a in self.axes]
        shape = [a.ext + pad if a is ax else a.ext for a in self.axes]
        idt = self._input_dtype(dt)
        name, vr = self.p.new_input(_shape_src(shape_src), shape, idt)
        self._note_reader(name)
        idx = ", ".join(f"{a.name} + {q}" if a is ax else a.name for a in self.axes)
        return self._leaf_node(f"{name}[{idx}]", f"H.load({name}, {idx})", idt, vr)

    def load_divmod(self, dt):
        """A[ax // d], A[ax % d], A[ax // d, ax % d] or A[(ax - c) % d]."""
        r = self.rng
        self.p.features.add("divmod_index")
        ax = r.choice(self.axes)
        d = r.choice([2, 3, 4, 8])
        kind = r.choice(["div", "mod", "divmod", "negmod"])
        ceil_src = f"({ax.te_ext} + {d - 1}) // {d}"
        ceil = (ax.ext + d - 1) // d
        if kind == "div":
            shape_src, shape, idx = [ceil_src], [ceil], [f"{ax.name} // {d}"]
        elif kind == "mod":
            shape_src, shape, idx = [str(d)], [d], [f"{ax.name} % {d}"]
        elif kind == "divmod":
            shape_src, shape = [ceil_src, str(d)], [ceil, d]
            idx = [f"{ax.name} // {d}", f"{ax.name} % {d}"]
        else:
            c = r.randint(1, 9)
            shape_src, shape, idx = [str(d)], [d], [f"({ax.name} - {c}) % {d}"]
        idt = self._input_dtype(dt)
        name, vr = self.p.new_input(_shape_src(shape_src), shape, idt)
        self._note_reader(name)
        idx = ", ".join(idx)
        return self._leaf_node(f"{name}[{idx}]", f"H.load({name}, {idx})", idt, vr)

    def load_gather(self, dt, top):
        """A[I[ax]] with the index tensor's values in range (or one out of range)."""
        r = self.rng
        self.p.features.add("gather")
        ax = r.choice(self.axes)
        before = set(self.p.vars)
        m_src, m = self.p.size()
        if m == 0:                      # no index fits a size-0 source
            if m_src not in before:
                self.p.vars.pop(m_src, None)
            m_src, m = "3", 3
        idt_index = r.choice(["int32", "int64"])
        bad = None
        runs = all(a.ext > 0 for a in self.axes)       # the gather is executed at all
        if top and self.p.bad_gather_allowed and runs and r.random() < 0.6:
            bad = r.choice([m, m + 5, -1, -1000])
            self.p.expect = "IndexError"
            self.p.bad_gather_allowed = False
            self.p.features.add("gather_out_of_range")
        iname, _ = self.p.new_input(f"({ax.te_ext}, )", [ax.ext], idt_index, index_bound=m,
                                    bad=bad)
        idt = self._input_dtype(dt)
        name, vr = self.p.new_input(f"({m_src}, )", [m], idt)
        self._note_reader(name)
        self._note_reader(iname)
        return self._leaf_node(f"{name}[{iname}[{ax.name}]]",
                               f"H.load({name}, H.load({iname}, {ax.name}))", idt, vr)

    def load_stage(self, dt):
        """A read of an earlier stage: at the same index or a guarded stencil."""
        r = self.rng
        name, sdt, mag, frac, exact = r.choice(self.sources)
        idx = [a.name for a in self.axes]
        if r.random() < 0.4:
            self.p.features.add("stage_stencil")
            ax = r.choice(self.axes)
            off = r.choice([-1, 1, 2])
            moved = f"{ax.name} + {off}" if off > 0 else f"{ax.name} - {-off}"
            sidx = ", ".join(moved if a is ax else a.name for a in self.axes)
            fill = self.const(sdt)
            cond_te = f"te.all({moved} >= 0, {moved} < {ax.te_ext})"
            cond_np = f"(({moved}) >= 0) & (({moved}) < {ax.ext})"
            node = Node(f"te.if_then_else({cond_te}, {name}[{sidx}], {fill.te})",
                        f"H.where({sdt!r}, {cond_np}, H.load({name}, {sidx}), {fill.np})",
                        sdt, max(mag, fill.mag), exact, max(frac, fill.frac))
        else:
            node = Node(f"{name}[{', '.join(idx)}]", f"H.load({name}, {', '.join(idx)})", sdt,
                        mag, exact, frac)
        return self.cast_to(node, dt)

    # ------------------------------------------------------------------ casts
    def cast_to(self, node, dt):
        """``node`` as ``dt``: te's astype; float->int clamped into range first."""
        if node.dt == dt:
            return node
        self.p.features.add("cast")
        if dtypes.is_float(node.dt) and dtypes.is_int(dt):
            if not node.exact:
                # an inexact float (a quotient, a sum in another order) may round to either
                # side of an integer: truncating it compares orders of summation, not the
                # compiler (F9). Its sign is robust enough only at 0: cast an exact 0 of it.
                node = Node(f"({node.te} * te.const(0.0, {node.dt!r}))",
                            f"({node.np} * np.{node.dt}(0.0))", node.dt, 0.0, True, 0)
            lo, hi = (dtypes.min_value(dt), dtypes.max_value(dt)) if dt not in (
                "int32", "int64") else (-1000, 1000)
            te_c = (f"te.min(te.max({node.te}, te.const({float(lo)!r}, {node.dt!r})), "
                    f"te.const({float(hi)!r}, {node.dt!r}))")
            np_c = f"H.clamp({node.dt!r}, {node.np}, {float(lo)!r}, {float(hi)!r})"
            return Node(f"{te_c}.astype({dt!r})", f"H.cast({dt!r}, {np_c})", dt,
                        max(abs(lo), abs(hi)))
        te_s, np_s = f"{node.te}.astype({dt!r})", f"H.cast({dt!r}, {node.np})"
        if dtypes.is_float(dt):
            exact = node.exact and _fits_float(node.mag, node.frac, dt)
            return Node(te_s, np_s, dt, node.mag, exact, node.frac)
        if node.dt == "int64" and node.mag < 2**31 and dt in ("int32", "int64"):
            return Node(te_s, np_s, dt, node.mag)
        lo, hi = dtypes.min_value(dt), dtypes.max_value(dt)
        mag = node.mag if lo <= -node.mag and node.mag <= hi else max(abs(lo), abs(hi))
        return Node(te_s, np_s, dt, mag)

    # ------------------------------------------------------------------ trees
    def expr(self, dt, depth, top=False):
        """A tree of dtype ``dt`` (after a final cast)."""
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            roll = r.random()
            if roll < 0.65:
                return self.load(dt, top)
            if roll < 0.85:
                return self.const(dt)
            return self.index(dt)
        kinds = ["arith", "arith", "minmax", "select", "cast"]
        if dtypes.is_int(dt):
            kinds += ["div", "div"]
        else:
            kinds += ["fdiv"]
        kind = r.choice(kinds)
        return getattr(self, "op_" + kind)(dt, depth, top)

    def operand_dtype(self, dt):
        return dt if self.rng.random() < 0.7 else self.rng.choice(VALUE_DTYPES)

    def op_arith(self, dt, depth, top):
        r = self.rng
        a = self.expr(self.operand_dtype(dt), depth - 1, top)
        b = self.expr(self.operand_dtype(dt), depth - 1, top and False)
        t = dtypes.promote(a.dt, b.dt)
        op = r.choice(["add", "sub", "mul"])
        if t in ("int32", "int64"):
            bound = a.mag * b.mag if op == "mul" else a.mag + b.mag
            if bound >= (2**30 if t == "int32" else 2**61):
                op = r.choice(["min", "max"])
        sym = {"add": "+", "sub": "-", "mul": "*"}.get(op)
        te_s = f"({a.te} {sym} {b.te})" if sym else f"te.{op}({a.te}, {b.te})"
        helper = {"min": "minimum", "max": "maximum"}.get(op, op)
        np_s = f"H.{helper}({t!r}, {a.np}, {b.np})"
        node = self._combine(t, op, a, b, te_s, np_s)
        return self.cast_to(node, dt)

    def _combine(self, t, op, a, b, te_s, np_s):
        a_mag, b_mag = a.mag, b.mag
        if op == "mul":
            mag, frac = a_mag * b_mag, a.frac + b.frac
        elif op in ("add", "sub"):
            mag, frac = a_mag + b_mag, max(a.frac, b.frac)
        else:
            mag, frac = max(a_mag, b_mag), max(a.frac, b.frac)
        if dtypes.is_float(t):
            exact = a.exact and b.exact and _fits_float(mag, frac, t)
            return Node(te_s, np_s, t, mag, exact, frac)
        if t not in ("int32", "int64"):
            lo, hi = dtypes.min_value(t), dtypes.max_value(t)
            if not (lo <= -mag and mag <= hi) or op in ("add", "sub", "mul"):
                mag = min(mag, max(abs(lo), abs(hi)))
        return Node(te_s, np_s, t, mag)

    def op_minmax(self, dt, depth, top):
        a = self.expr(dt, depth - 1, top)
        b = self.expr(self.operand_dtype(dt), depth - 1)
        t = dtypes.promote(a.dt, b.dt)
        op = self.rng.choice(["min", "max"])
        self.p.features.add("minmax")
        node = self._combine(t, op, a, b, f"te.{op}({a.te}, {b.te})",
                             f"H.{op}imum({t!r}, {a.np}, {b.np})")
        return self.cast_to(node, dt)

    def op_div(self, dt, depth, top):
        r = self.rng
        a = self.expr(dt, depth - 1, top)
        op = r.choice(["floordiv", "floormod", "floordiv", "floormod", "truncdiv", "truncmod"])
        self.p.features.add(op)
        if r.random() < 0.5:
            choices = [2, 3, 5, 8] if not dtypes.is_signed(dt) else [-7, -3, -2, 2, 3, 5, 8]
            d = r.choice(choices)
            b_te, b_np, b_mag = f"te.const({d}, {dt!r})", f"np.{dt}({d})", abs(d)
        else:
            b = self.expr(dt, depth - 1)
            b_te = f"te.select({b.te} > 0, {b.te}, te.const(1, {dt!r}) - {b.te})"
            b_np = f"H.nonzero({dt!r}, {b.np})"
            b_mag = b.mag + 1
        te_s = f"te.{op}({a.te}, {b_te})"
        np_s = f"H.{op}({dt!r}, {a.np}, {b_np})"
        mag = a.mag if "div" in op else min(b_mag, a.mag + b_mag)
        if not dtypes.is_signed(dt) or dt in ("int8", "int16"):
            mag = max(abs(dtypes.min_value(dt)), dtypes.max_value(dt)) if mag > \
                dtypes.max_value(dt) else mag
        return Node(te_s, np_s, dt, mag)

    def op_fdiv(self, dt, depth, top):
        a = self.expr(dt, depth - 1, top)
        b = self.expr(dt, depth - 1)
        self.p.features.add("fdiv")
        return Node(f"({a.te} / (te.abs({b.te}) + te.const(1.0, {dt!r})))",
                    f"H.fdiv({dt!r}, {a.np}, {b.np})", dt, a.mag, False, 0)

    def cond(self, depth):
        """A comparison of two exact subtrees (so that every backend takes the same branch)."""
        r = self.rng
        for _ in range(4):
            t = r.choice(VALUE_DTYPES)
            a = self.expr(t, max(depth - 1, 0))
            b = self.expr(r.choice([t, a.dt]), max(depth - 1, 0))
            if a.exact and b.exact:
                break
        else:
            a, b = self.index("int32"), self.const("int32")
        ct = dtypes.promote(a.dt, b.dt)
        op = r.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}.get(op)
        if sym:
            te_s = f"({a.te} {sym} {b.te})"
        else:
            te_s = f"({a.te}).{'equal' if op == 'eq' else 'not_equal'}({b.te})"
        return te_s, f"H.compare({op!r}, {ct!r}, {a.np}, {b.np})"

    def op_select(self, dt, depth, top):
        r = self.rng
        c_te, c_np = self.cond(depth)
        a = self.expr(dt, depth - 1)
        b = self.expr(self.operand_dtype(dt), depth - 1)
        t = dtypes.promote(a.dt, b.dt)
        fn = r.choice(["select", "if_then_else"])
        self.p.features.add(fn)
        node = self._combine(t, "max", a, b, f"te.{fn}({c_te}, {a.te}, {b.te})",
                             f"H.where({t!r}, {c_np}, {a.np}, {b.np})")
        return self.cast_to(node, dt)

    def op_cast(self, dt, depth, top):
        src = self.rng.choice(VALUE_DTYPES)
        return self.cast_to(self.expr(src, depth - 1, top), dt)


def _fits_float(mag, frac, dt):
    bits = 24 if dt in ("float32", "float16") else 53
    return mag < 2.0**(bits - frac - 1)


# ----------------------------------------------------------------------------- schedules

_SCHEDULE_HEADER = "# the schedule"


def _draw_schedule(prog: _Program, ns, out: str, stage_names, inter, reduce_stage):
    """Append schedule lines, executing each; stop at the first refusal."""
    import te
    r = prog.rng
    lines = [_SCHEDULE_HEADER]

    def emit(line):
        lines.append(line)
        try:
            exec(line, ns)
        except (te.ScheduleError, te.TEError):
            prog.features.add("refused_at_schedule")
            return False
        except Exception:                # a compiler bug: the worker reports it as an error
            prog.features.add("schedule_raised")
            return False
        return True

    stages = list(stage_names)
    ok = True
    if prog.readers and r.random() < 0.15:
        name = r.choice(sorted(prog.readers))
        prog.features.add("cache_read")
        ok = emit(f"{name}_r = s.cache_read({name}, {r.choice(['local', 'global'])!r}, "
                  f"[{', '.join(sorted(prog.readers[name]))}])")
        if ok:
            stages.append(f"{name}_r")
    if ok and r.random() < 0.12:
        prog.features.add("cache_write")
        ok = emit(f"{out}_c = s.cache_write({out}, {r.choice(['local', 'global'])!r})")
        if ok:
            stages.append(f"{out}_c")
        if ok and reduce_stage == out:
            reduce_stage = f"{out}_c"
    if ok and reduce_stage and r.random() < 0.3:
        rs = reduce_stage
        prog.features.add("rfactor")
        ok = emit(f"_ko, _ki = s[{rs}].split(s[{rs}].op.reduce_axis[0], "
                  f"factor={r.choice([2, 3, 4])})")
        if ok:
            ok = emit(f"{rs}_rf = s.rfactor({rs}, {r.choice(['_ko', '_ki'])})")
            if ok:
                stages.append(f"{rs}_rf")
    placed = set()
    for st in [x for x in stages if x in inter]:
        roll = r.random()
        if ok and roll < 0.25 and (st != reduce_stage or r.random() < 0.1):
            prog.features.add("compute_inline")
            ok = emit(f"s[{st}].compute_inline()")
            placed.add(st)
        elif ok and roll < 0.35:
            prog.features.add("storage_align")
            f = r.choice([4, 8, 16])
            ok = emit(f"s[{st}].storage_align(s[{st}].op.axis[0], {f}, {r.randint(0, f - 1)})")
    for st in stages:
        if st in placed:
            continue
        for _ in range(r.randint(0, 4)):
            if not ok:
                break
            ok = _primitive(prog, emit, ns, st)
    sched = ns["s"]
    stage_name = {sched[ns[x]]: x for x in stages}
    for st in stages:
        if not ok or st == out or st in placed or r.random() < 0.5:
            continue
        readers = [stage_name[x] for x in sched.readers(sched[ns[st]]) if x in stage_name]
        readers = [x for x in readers if x not in placed] or [out]
        consumer = r.choice(readers)
        prog.features.add("compute_at")
        ok = emit(f"s[{st}].compute_at(s[{consumer}], r_leaf(s[{consumer}], {r.randint(0, 5)}))")
    return lines


def _primitive(prog, emit, ns, st):
    """One random loop primitive on stage ``st``."""
    r = prog.rng
    leaves = ns["s"][ns[st]].leaf_iter_vars
    n = len(leaves)
    k = r.randrange(n)
    leaf = f"s[{st}].leaf_iter_vars[{k}]"
    kind = r.choice(["split", "split", "split_nparts", "split_shift", "fuse", "reorder",
                     "vectorize", "unroll", "parallel"])
    prog.features.add(kind)
    if kind == "split":
        return emit(f"s[{st}].split({leaf}, factor={r.choice([1, 2, 3, 4, 8, 16])})")
    if kind == "split_nparts":
        return emit(f"s[{st}].split({leaf}, nparts={r.choice([1, 2, 3, 4])})")
    if kind == "split_shift":
        return emit(f"s[{st}].split({leaf}, factor={r.choice([2, 4, 8])}, tail='shift')")
    if kind == "fuse":
        pairs = [j for j in range(n - 1) if r.random() < 0.1 or
                 leaves[j].iter_type == leaves[j + 1].iter_type]
        if not pairs:
            return True
        k = r.choice(pairs)
        return emit(f"s[{st}].fuse(s[{st}].leaf_iter_vars[{k}], s[{st}].leaf_iter_vars[{k + 1}])")
    if kind == "reorder":
        perm = list(range(n))
        r.shuffle(perm)
        return emit(f"s[{st}].reorder(*[s[{st}].leaf_iter_vars[j] for j in {perm}])")
    if kind == "vectorize":
        data = [j for j, iv in enumerate(leaves) if iv.iter_type != COMM_REDUCE]
        k = data[-1] if data and r.random() < 0.9 else n - 1
        return emit(f"s[{st}].vectorize(s[{st}].leaf_iter_vars[{k}])")
    if kind == "unroll":
        return emit(f"s[{st}].unroll({leaf})")
    return emit(f"s[{st}].parallel(s[{st}].leaf_iter_vars[0])")


def r_leaf(stage, k):
    """The leaf axis ``k`` of ``stage`` (modulo the leaf count): for compute_at lines."""
    leaves = stage.leaf_iter_vars
    return leaves[k % len(leaves)]


# ----------------------------------------------------------------------------- whole cases

def _stage_axes(prog, ndim):
    axes = []
    for d in range(ndim):
        src, value = prog.size()
        axes.append(Axis(f"i{d}", src, value))
    return axes


def _draw(seed: int, attempt: int):
    rng = random.Random(seed * 1000 + attempt)
    prog = _Program(rng, seed)
    prog.bad_gather_allowed = rng.random() < 0.3
    ndim = rng.choice([1, 1, 2, 2, 2, 3])
    axes = _stage_axes(prog, ndim)
    depth = rng.choice([1, 2, 2, 3])
    out_dt = rng.choice(VALUE_DTYPES)
    two = rng.random() < 0.4
    red = rng.random() < 0.35
    stage_lines, ref_lines, stages, inter = [], [], [], set()
    shape = tuple(a.ext for a in axes)
    shape_src = _shape_src([a.te_ext for a in axes])
    params = ", ".join(a.name for a in axes)
    sources = []
    reduce_stage = None
    names = ["C", "B"] if two else ["B"]
    for si, name in enumerate(names):
        last = si == len(names) - 1
        dt = out_dt if last else rng.choice(VALUE_DTYPES)
        ex = _Exprs(prog, axes, sources)
        ex.stage = name
        if red and si == 0:
            ksrc, kval = prog.size()
            kax = Axis("k", ksrc, kval, reduce=True)
            ex.axes = axes + [kax]
            body = ex.expr(dt, depth, top=last)
            kind = rng.choice(["sum", "max", "min"])
            prog.features.add("reduce_" + kind)
            if kind == "sum" and dt in ("int32", "int64") and \
                    body.mag * max(kval, 1) >= (2**30 if dt == "int32" else 2**61):
                kind = "max"
            stage_lines.append(f"k = te.reduce_axis((0, {ksrc}), name='k')")
            stage_lines.append(f"{name} = te.compute({shape_src}, lambda {params}: "
                               f"te.{kind}({body.te}, axis=k), name={name!r})")
            full = shape + (kval,)
            ref_lines.append(f"{params}, k = H.grid({full})")
            ref_lines.append(f"{name} = H.reduce({kind!r}, {dt!r}, {body.np}, {full})")
            exact = body.exact
            reduce_stage = name
            mag = body.mag * max(kval, 1) if kind == "sum" else body.mag
            if dtypes.is_int(dt) and dt not in ("int32", "int64"):
                mag = max(abs(dtypes.min_value(dt)), dtypes.max_value(dt))
            frac = body.frac
            if dtypes.is_float(dt) and not _fits_float(mag, frac, dt):
                exact = False
        else:
            body = ex.expr(dt, depth, top=last)
            if sources and sources[0][0] + "[" not in body.te:      # make it read the stage
                extra = ex.load_stage(dt)
                body = ex.cast_to(ex._combine(
                    dtypes.promote(body.dt, extra.dt), "max", body, extra,
                    f"te.max({body.te}, {extra.te})",
                    f"H.maximum({dtypes.promote(body.dt, extra.dt)!r}, {body.np}, {extra.np})"),
                    dt)
            stage_lines.append(f"{name} = te.compute({shape_src}, lambda {params}: {body.te}, "
                               f"name={name!r})")
            ref_lines.append(f"{params}, = H.grid({shape})" if ndim == 1 else
                             f"{params} = H.grid({shape})")
            ref_lines.append(f"{name} = H.full({dt!r}, {shape}, {body.np})")
            exact, mag, frac = body.exact, body.mag, body.frac
        stages.append(name)
        if not last:
            inter.add(name)
            sources.append((name, dt, mag, frac, exact))
        last_exact = exact
    out = names[-1]
    return prog, axes, stage_lines, ref_lines, stages, inter, out, reduce_stage, last_exact


def generate(seed: int) -> Case:
    """The fuzz case of ``seed``: deterministic, well defined on its inputs."""
    from . import harness
    for attempt in range(50):
        drawn = _draw(seed, attempt)
        prog, axes, stage_lines, ref_lines, stages, inter, out, reduce_stage, exact = drawn
        head = ["import numpy as np", "import te", "from tests.fuzz import harness as H",
                "from tests.fuzz.gen import r_leaf", ""]
        for name, (dt, _) in prog.vars.items():
            head.append(f"{name} = te.var({name!r}, {dt!r})")
        for name, shape_src, _, dt, _ in prog.inputs:
            head.append(f"{name} = te.placeholder({shape_src}, {dt!r}, name={name!r})")
        body = head + stage_lines + ["s = te.create_schedule(%s.op)" % out]
        ns = {"__name__": "fuzzcase"}
        try:
            exec("\n".join(body), ns)
        except (ValueError, TypeError) as err:       # a constant that does not fit, ...
            if attempt == 49:
                raise RuntimeError(f"seed {seed}: the generator keeps drawing invalid "
                                   f"programs: {err}") from err
            continue
        # stages that only an intermediate reads are valid readers for cache_read
        prog.readers = {k: {x for x in v if x in ns}
                        for k, v in prog.readers.items() if k in ns and k not in stages}
        prog.readers = {k: v for k, v in prog.readers.items() if v}
        sched = _draw_schedule(prog, ns, out, stages, inter, reduce_stage)
        inputs = [init for *_, init in prog.inputs]
        in_names = [n for n, *_ in prog.inputs]
        # a size that no argument's shape holds as a whole dimension is a scalar argument
        bare = {a.te_ext for a in axes} | {d.strip() for _, shape_src, *_ in prog.inputs
                                           for d in shape_src.strip("()").split(",")}
        for name, (_, value) in prog.vars.items():
            if name not in bare:
                prog.features.add("scalar_arg")
                in_names.append(name)
                inputs.append(str(value))
        ref = [f"def reference({', '.join(in_names)}):"] + ["    " + x for x in ref_lines] + \
            [f"    return [{out}]"]
        tail = [f"ARGS = [{', '.join(in_names + [out])}]",
                f"INPUTS = [{', '.join(inputs)}]", f"EXPECT = {prog.expect!r}",
                f"EXACT = {exact!r}", "", 'if __name__ == "__main__":', "    H.main(globals())"]
        source = "\n".join(body + sched + [""] + ref + [""] + tail) + "\n"
        check = {"__name__": "fuzzcase"}
        harness.STRICT = True
        try:
            exec("\n".join(body + ref + tail[:-2]), check)   # the schedule is not needed
            check["reference"](*check["INPUTS"])
        except harness.Undefined:
            continue
        finally:
            harness.STRICT = False
        features = set(prog.features) | {"dims%d" % len(axes)}
        if reduce_stage:
            features.add("reduce")
        header = textwrap.dedent(f'''\
            """Fuzz case {seed}: {", ".join(sorted(features))}.

            Run it from the repository root: python <this file> (prints the outcome)."""
            import sys, os
            sys.path.insert(0, os.environ.get("TW_ROOT", "."))
            os.environ.setdefault("TW_VERIFY", "1")     # IR checked between passes, as in CI
            ''')
        return Case(seed, header + source, prog.expect, features)
    raise RuntimeError(f"seed {seed}: no well-defined program in 50 draws")

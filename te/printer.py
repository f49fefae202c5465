"""Renders expressions as readable pseudo-Python (``str()`` of every expression node).

The output is deterministic, so tests may compare it with expected text. The node types of a
lower layer (the loop IR's ``BufferLoad``, ``Ramp``, ...) register how they print with
``register``; the package that defines them does so in its ``printer`` module, which is
imported the first time one of its nodes is printed (the loop IR's printer does so;
te itself never imports that package). Statements print there too, sharing this module's
display names for variables (``scoped_names``).
"""
from __future__ import annotations

import importlib

from . import dtypes
from .expr import (Add, And, Call, Cast, Div, EQ, FloatImm, FloorDiv, FloorMod, GE, GT, IntImm,
                   LE, LT, Let, Max, Min, Mod, Mul, NE, Not, Or, ProducerLoad, Reduce, Select,
                   StringImm, Sub, Var)
from .extern import ExternBuffer

# operator -> (symbol, precedence); higher binds tighter
INFIX = {Or: ("or", 1), And: ("and", 2), EQ: ("==", 4), NE: ("!=", 4), LT: ("<", 4),
         LE: ("<=", 4), GT: (">", 4), GE: (">=", 4), Add: ("+", 5), Sub: ("-", 5),
         Mul: ("*", 6), FloorDiv: ("//", 6), FloorMod: ("%", 6)}
ATOM = 10

_PRINTERS = {}          # node type of another layer -> fn(node) -> text (printed as an atom)
_LOADED = set()         # packages whose printer module was imported


def register(cls, fn):
    """Print nodes of type ``cls`` (defined outside te) as ``fn(node)``, an atom."""
    _PRINTERS[cls] = fn


def _registered(e):
    cls = type(e)
    fn = _PRINTERS.get(cls)
    if fn is None:
        package = cls.__module__.rpartition(".")[0]
        if package and package not in _LOADED and package != __package__:
            _LOADED.add(package)
            try:
                importlib.import_module(f"{package}.printer")
            except ImportError:
                pass
            fn = _PRINTERS.get(cls)
    return fn


def _p(e) -> tuple[str, int]:
    cls = type(e)
    if isinstance(e, IntImm):
        if e.dtype == "bool":
            return ("True" if e.value else "False"), ATOM
        text = str(e.value)
        return (text, ATOM) if e.value >= 0 else (text, 7)
    if isinstance(e, FloatImm):
        return repr(e.value) if e.dtype == "float32" else f"{e.dtype}({e.value!r})", ATOM
    if isinstance(e, Var):
        return display_name(e), ATOM
    if cls in INFIX:
        sym, prec = INFIX[cls]
        a, pa = _p(e.a)
        b, pb = _p(e.b)
        if pa < prec:
            a = f"({a})"
        if pb <= prec:
            b = f"({b})"
        return f"{a} {sym} {b}", prec
    if isinstance(e, Div):
        if dtypes.is_float(e.dtype):
            a, pa = _p(e.a)
            b, pb = _p(e.b)
            return f"{a if pa >= 6 else f'({a})'} / {b if pb > 6 else f'({b})'}", 6
        return f"truncdiv({expr_str(e.a)}, {expr_str(e.b)})", ATOM
    if isinstance(e, Mod):
        return f"truncmod({expr_str(e.a)}, {expr_str(e.b)})", ATOM
    if isinstance(e, (Min, Max)):
        return f"{cls.__name__.lower()}({expr_str(e.a)}, {expr_str(e.b)})", ATOM
    if isinstance(e, Not):
        a, pa = _p(e.a)
        return f"not {a if pa >= 3 else f'({a})'}", 3
    if isinstance(e, Select):
        return (f"select({expr_str(e.condition)}, {expr_str(e.true_value)}, "
                f"{expr_str(e.false_value)})", ATOM)
    if isinstance(e, Cast):
        return f"{e.dtype}({expr_str(e.value)})", ATOM
    if isinstance(e, StringImm):
        return repr(e.value), ATOM
    if isinstance(e, ExternBuffer):
        return e.name, ATOM
    if isinstance(e, Call):
        return f"{e.op}({', '.join(expr_str(a) for a in e.args)})", ATOM
    if isinstance(e, Let):
        return f"(let {e.var.name} = {expr_str(e.value)} in {expr_str(e.body)})", ATOM
    if isinstance(e, ProducerLoad):
        return f"{e.producer.name}[{', '.join(expr_str(i) for i in e.indices)}]", ATOM
    if isinstance(e, Reduce):
        src = ", ".join(expr_str(s) for s in e.source)
        if len(e.source) > 1:
            src = f"({src})"
        axes = ", ".join(iv.var.name for iv in e.axis)
        where = "" if isinstance(e.condition, IntImm) and e.condition.value else \
            f", where={expr_str(e.condition)}"
        idx = f"[{e.value_index}]" if len(e.source) > 1 else ""
        return f"{e.combiner.name}({src}, axis=[{axes}]{where}){idx}", ATOM
    fn = _registered(e)
    if fn is not None:
        return fn(e), ATOM
    return f"<{cls.__name__}>", ATOM


_NAMES = []     # while printing a statement: (Var -> unique display name, names taken)


def display_name(v) -> str:
    """The name ``v`` prints with: its own, or inside ``scoped_names`` one unique to it."""
    if not _NAMES:
        return v.name
    names, taken = _NAMES[-1]
    shown = names.get(v)
    if shown is None:
        shown, k = v.name, 1
        while shown in taken:
            shown, k = f"{v.name}_{k}", k + 1
        names[v] = shown
        taken.add(shown)
    return shown


class scoped_names:
    """Within ``with scoped_names():``, two different variables never print the same name
    (the second ``i`` prints ``i_1``); ``fresh=False`` reuses an enclosing scope."""

    def __init__(self, fresh=True):
        self.fresh = fresh or not _NAMES
        self.pushed = False

    def __enter__(self):
        if self.fresh:
            _NAMES.append(({}, set()))
            self.pushed = True
        return self

    def __exit__(self, *exc):
        if self.pushed:
            _NAMES.pop()
        return False


def expr_str(e) -> str:
    """The pseudo-Python text of expression ``e``."""
    return _p(e)[0]

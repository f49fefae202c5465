"""Renders expressions, statements and lowered functions as readable pseudo-Python.

The output is deterministic, so tests may compare it with expected text. Loops show their kind:
``range`` (serial), ``parallel``, ``vectorized``, ``unroll`` or ``thread_binding``.
"""
from __future__ import annotations

from te import dtypes
from te.expr import (Add, And, Call, Cast, Div, EQ, FloatImm, FloorDiv, FloorMod, GE, GT, IntImm,
                     LE, LT, Let, Max, Min, Mod, Mul, NE, Not, Or, ProducerLoad, Reduce, Select,
                     StringImm, Sub, Var)
from te.extern import ExternBuffer

from .ir import (Allocate, Broadcast, Buffer, BufferLoad, BufferRef, BufferStore, Evaluate, For, ForKind,
                 IfThenElse, LetStmt, PrimFunc, Ramp, SeqStmt)

# operator -> (symbol, precedence); higher binds tighter
INFIX = {Or: ("or", 1), And: ("and", 2), EQ: ("==", 4), NE: ("!=", 4), LT: ("<", 4),
         LE: ("<=", 4), GT: (">", 4), GE: (">=", 4), Add: ("+", 5), Sub: ("-", 5),
         Mul: ("*", 6), FloorDiv: ("//", 6), FloorMod: ("%", 6)}
ATOM = 10


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
        return _name(e), ATOM
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
    if isinstance(e, (BufferRef, ExternBuffer)):
        return (e.buffer if isinstance(e, BufferRef) else e).name, ATOM
    if isinstance(e, Call):
        return f"{e.op}({', '.join(expr_str(a) for a in e.args)})", ATOM
    if isinstance(e, Let):
        return f"(let {e.var.name} = {expr_str(e.value)} in {expr_str(e.body)})", ATOM
    if isinstance(e, ProducerLoad):
        return f"{e.producer.name}[{', '.join(expr_str(i) for i in e.indices)}]", ATOM
    if isinstance(e, BufferLoad):
        return f"{e.buffer.name}[{', '.join(expr_str(i) for i in e.indices)}]", ATOM
    if isinstance(e, Ramp):
        return f"ramp({expr_str(e.base)}, {expr_str(e.stride)}, {e.lanes})", ATOM
    if isinstance(e, Broadcast):
        return f"broadcast({expr_str(e.value)}, {e.lanes})", ATOM
    if isinstance(e, Reduce):
        src = ", ".join(expr_str(s) for s in e.source)
        if len(e.source) > 1:
            src = f"({src})"
        axes = ", ".join(iv.var.name for iv in e.axis)
        where = "" if isinstance(e.condition, IntImm) and e.condition.value else \
            f", where={expr_str(e.condition)}"
        idx = f"[{e.value_index}]" if len(e.source) > 1 else ""
        return f"{e.combiner.name}({src}, axis=[{axes}]{where}){idx}", ATOM
    return f"<{cls.__name__}>", ATOM


_NAMES = []     # while printing a statement: Var -> unique display name


def _name(v):
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


def expr_str(e) -> str:
    return _p(e)[0]


_KIND = {ForKind.SERIAL: "range", ForKind.PARALLEL: "parallel",
         ForKind.VECTORIZED: "vectorized", ForKind.UNROLLED: "unroll",
         ForKind.THREAD_BINDING: "thread_binding"}


def _stmt_lines(s, indent, out):
    pad = "    " * indent
    if isinstance(s, SeqStmt):
        for x in s.seq:
            _stmt_lines(x, indent, out)
    elif isinstance(s, For):
        for key, value in s.annotations:
            out.append(f"{pad}# pragma {key}" + ("" if value is None else f" = {value}"))
        rng = expr_str(s.extent)
        if not (isinstance(s.min, IntImm) and s.min.value == 0):
            from .simplify import simplify
            rng = f"{expr_str(s.min)}, {expr_str(simplify(s.min + s.extent))}"
        if s.kind == ForKind.THREAD_BINDING:
            rng = f'{rng}, "{s.thread_tag}"'
        out.append(f"{pad}for {_name(s.loop_var)} in {_KIND[s.kind]}({rng}):")
        _stmt_lines(s.body, indent + 1, out)
    elif isinstance(s, BufferStore):
        idx = ", ".join(expr_str(i) for i in s.indices)
        out.append(f"{pad}{s.buffer.name}[{idx}] = {expr_str(s.value)}")
    elif isinstance(s, Allocate):
        b = s.buffer
        shape = ", ".join(expr_str(x) for x in b.shape)
        extra = "" if not b.strides else f", strides=[{', '.join(expr_str(x) for x in b.strides)}]"
        extra += "".join(f", {a}" for a in s.annotations)
        out.append(f'{pad}{b.name} = allocate([{shape}], "{b.dtype}", "{b.scope}"{extra})')
        _stmt_lines(s.body, indent, out)
    elif isinstance(s, IfThenElse):
        out.append(f"{pad}if {expr_str(s.condition)}:")
        _stmt_lines(s.then_case, indent + 1, out)
        if s.else_case is not None:
            out.append(f"{pad}else:")
            _stmt_lines(s.else_case, indent + 1, out)
    elif isinstance(s, LetStmt):
        out.append(f"{pad}{_name(s.var)} = {expr_str(s.value)}")
        _stmt_lines(s.body, indent, out)
    elif isinstance(s, Evaluate):
        out.append(f"{pad}{expr_str(s.value)}")
    else:
        out.append(f"{pad}<{type(s).__name__}>")


def stmt_str(s, indent=0) -> str:
    out = []
    fresh = not _NAMES
    if fresh:
        _NAMES.append(({}, set()))
    try:
        _stmt_lines(s, indent, out)
    finally:
        if fresh:
            _NAMES.pop()
    return "\n".join(out)


def func_str(f: PrimFunc) -> str:
    _NAMES.append(({}, set()))
    try:
        return _func_str(f)
    finally:
        _NAMES.pop()


def _func_str(f: PrimFunc) -> str:
    params = []
    for p in f.params:
        if isinstance(p, Buffer):
            params.append(f"{p.name}: {p.dtype}[{', '.join(expr_str(x) for x in p.shape)}]")
        else:
            params.append(f"{_name(p)}: {p.dtype}")
    return f"def {f.name}({', '.join(params)}):\n{stmt_str(f.body, 1)}"

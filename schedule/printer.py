"""Renders statements and lowered functions as readable pseudo-Python.

Expressions print through ``te.printer`` (below both IRs); this module adds the loop IR's
expression nodes to it and prints statements. The output is deterministic, so tests may compare
it with expected text. Loops show their kind: ``range`` (serial), ``parallel``, ``vectorized``,
``unroll`` or ``thread_binding``.
"""
from __future__ import annotations

from te.expr import IntImm
from te.printer import ATOM, INFIX, display_name as _name, expr_str, register, scoped_names

from .ir import (Allocate, Broadcast, Buffer, BufferLoad, BufferRef, BufferStore, Evaluate, For,
                 ForKind, IfThenElse, LetStmt, PrimFunc, Ramp, SeqStmt)

__all__ = ["expr_str", "stmt_str", "func_str", "INFIX", "ATOM"]

register(BufferRef, lambda e: e.buffer.name)
register(BufferLoad, lambda e: f"{e.buffer.name}[{', '.join(expr_str(i) for i in e.indices)}]")
register(Ramp, lambda e: f"ramp({expr_str(e.base)}, {expr_str(e.stride)}, {e.lanes})")
register(Broadcast, lambda e: f"broadcast({expr_str(e.value)}, {e.lanes})")


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
    """The pseudo-Python text of statement ``s``, indented by ``indent`` levels."""
    out = []
    with scoped_names(fresh=False):
        _stmt_lines(s, indent, out)
    return "\n".join(out)


def func_str(f: PrimFunc) -> str:
    """The text of a lowered function: its signature and its body."""
    with scoped_names():
        return _func_str(f)


def _func_str(f: PrimFunc) -> str:
    params = []
    for p in f.params:
        if isinstance(p, Buffer):
            params.append(f"{p.name}: {p.dtype}[{', '.join(expr_str(x) for x in p.shape)}]")
        else:
            params.append(f"{_name(p)}: {p.dtype}")
    return f"def {f.name}({', '.join(params)}):\n{stmt_str(f.body, 1)}"

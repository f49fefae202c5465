"""A lowered function's calling convention as plain data (``FunctionInfo``): made at build time
from the ``PrimFunc``, read by ``Signature`` on every call, and stored in exported libraries.

``describe`` is the only part of ``te.runtime`` that reads compiler objects; it runs inside a
build (the compiler is loaded then) and imports ``schedule`` lazily, like te's facades.
"""
from __future__ import annotations

from . import poly
from .info import FunctionInfo


def shape_vars(func):
    """The size variables of ``func``'s buffer shapes that are not explicit parameters, in order
    of first appearance (the compiled function takes them after its scalar arguments)."""
    from te.expr import Var
    from te.functor import free_vars
    explicit = set(p for p in func.params if isinstance(p, Var))
    found = {}
    for p in func.params:
        if hasattr(p, "shape") and not isinstance(p, Var):
            for dim in p.shape:
                for v in free_vars(dim):
                    if v not in explicit:
                        found.setdefault(v, None)
    return list(found)


def describe(func, shape_vars, workspace=None, error_sites=(), packed_sites=()):
    """The FunctionInfo of lowered function ``func`` whose hidden size arguments are
    ``shape_vars``; ``workspace``, ``error_sites`` and ``packed_sites`` come from the CPU
    emitter (None / empty for the GPU)."""
    from schedule.ir import Buffer
    from schedule.passes.storage_flatten import index_dtype
    from te.expr import Var
    index_error = getattr(func, "index_error", None)
    params = [p for p in func.params if p is not index_error]
    scalars = [p for p in params if isinstance(p, Var)]
    table = scalars + list(shape_vars)
    index = {v: k for k, v in enumerate(table)}
    outputs = set(id(b) for b in func.outputs)
    local_dims = {}
    pdata, nscalar = [], 0
    for p in params:
        if isinstance(p, Var):
            pdata.append({"scalar": nscalar})
            nscalar += 1
            continue
        assert isinstance(p, Buffer), p
        dims = []
        for d, dim in enumerate(p.shape):
            dims.append(_dim(dim, index, local_dims, (len(pdata), d)))
        pdata.append({"buffer": p.name, "dtype": p.dtype, "shape": dims,
                      "out": id(p) in outputs, "index": index_dtype(p.shape),
                      "narrow": list(_narrow_dims(p))})
    pre, unbound = [], False
    for p in getattr(func, "preconditions", ()):
        try:
            pre.append(_precondition(p, index))
        except KeyError:            # a bound over a variable that the caller does not give
            unbound = True
    data = {"name": func.name, "vars": [[v.name, v.dtype] for v in table],
            "params": pdata, "index_error": index_error is not None,
            "preconditions": pre, "unbound_precondition": unbound,
            "check_sites": [_check_site(s, index) for s in getattr(func, "check_sites", ())],
            "error_sites": [_error_site(s, index) for s in error_sites],
            "workspace": workspace, "packed_calls": [name for name, _ in packed_sites]}
    return FunctionInfo(data, local_dims)


def _narrow_dims(buf):
    from te import dtypes
    from te.expr import IntImm
    return tuple(d for d, dim in enumerate(buf.shape)
                 if not isinstance(dim, IntImm) and dtypes.element(dim.dtype) != "int64")


def _to_poly(e, index):
    """The JSON polynomial of expression ``e``, or None when it has no such form."""
    from schedule import access_bounds as ab
    try:
        return poly.from_polynomial(ab.Normalizer()(e), index)
    except (KeyError, ValueError, TypeError, IndexError):
        return None


def _dim(dim, index, local_dims, where):
    from te.expr import IntImm, Var
    if isinstance(dim, IntImm):
        return dim.value
    if isinstance(dim, Var):
        return {"var": index[dim], "text": dim.name}
    p = _to_poly(dim, index)
    if p is not None:
        return {"poly": p, "text": str(dim)}
    local_dims[where] = _slow_evaluator(dim, index)      # in this process only
    return {"text": str(dim)}


def _slow_evaluator(dim, index):
    """An evaluator ({var index: int} -> int) of a shape expression with no polynomial form."""
    from schedule.simplify import simplify
    from te.expr import const
    from te.functor import free_vars, substitute
    names = {k: v for v, k in index.items()}

    def value(env):
        for v in free_vars(dim):
            env[index[v]]                   # KeyError for an unbound variable
        vmap = {names[k]: const(x, names[k].dtype) for k, x in env.items()}
        return simplify(substitute(dim, vmap)).value
    return value


def _precondition(p, index):
    conv = lambda q: poly.from_polynomial(q, index)      # noqa: E731
    return {"buffer": p.buffer, "dim": p.dim, "access": p.access, "index": p.index,
            "lo": [conv(q) for q in p.lo], "hi": [conv(q) for q in p.hi],
            "size": conv(p.size), "extents": [conv(q) for q in p.extents],
            "write": bool(p.write), "least": int(p.least), "dtype": p.dtype,
            "shift": [str(x) for x in p.shift]}


def _check_site(s, index):
    try:
        size = poly.from_polynomial(s.size_poly, index)
    except (KeyError, ValueError):
        size = None
    return {"buffer": s.buffer, "dim": s.dim, "access": s.access, "write": bool(s.write),
            "target": s.target, "npos": int(s.npos), "size": size, "size_text": str(s.size)}


def _error_site(s, index):
    return {"kind": s.kind, "buffer": s.buffer.name, "itemsize": int(s.itemsize),
            "factors": [_to_poly(f, index) for f in s.factors],
            "factors_text": [str(f) for f in s.factors]}

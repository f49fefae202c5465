"""Turn multi-dimensional buffer accesses into one flat element index (row-major or strided),
computed in the buffer's index width (``index_dtype``)."""
from __future__ import annotations

from te import dtypes
from te.expr import (Add, Cast, Div, FloorDiv, FloorMod, IntImm, Max, Min, Mod, Mul, Select,
                     Sub, cast, const)

from te.arith import skey

from ..functor import IRMutator
from ..ir import BufferLoad, BufferStore
from ..simplify import simplify

INT32_MAX = 2**31 - 1


def index_dtype(shape) -> str:
    """The width of a buffer's flat index: "int64" when a dimension is int64 (an int64 size
    variable) or the constant dimensions alone hold more than 2^31 - 1 elements; else
    "int32", and then the call checks that the buffer has at most 2^31 - 1 elements
    (codegen_llvm.runtime.check_index_width), so that no int32 index overflows."""
    consts = 1
    for d in shape:
        if dtypes.element(d.dtype) == "int64":
            return "int64"
        if isinstance(d, IntImm):
            consts *= d.value
    return "int64" if consts > INT32_MAX else "int32"


_WIDE = (Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod, Min, Max)


def widen(e, dtype="int64"):
    """``e`` with its integer arithmetic done in ``dtype``: each operation's operands are
    widened first (casting ``i * 100000`` after an int32 multiply would keep the overflow);
    loads, calls and explicit narrowing casts are widened as values."""
    if e.dtype == dtype or not dtypes.is_int(e.dtype) or dtypes.lanes(e.dtype) != 1:
        return e
    if isinstance(e, IntImm):
        return const(e.value, dtype)
    if not dtypes.is_signed(e.dtype):
        return cast(dtype, e)               # unsigned arithmetic wraps: keep it as it is
    if isinstance(e, _WIDE):
        return type(e)(widen(e.a, dtype), widen(e.b, dtype), dtype)
    if isinstance(e, Select):
        return Select(e.condition, widen(e.true_value, dtype), widen(e.false_value, dtype),
                      dtype)
    if isinstance(e, Cast) and dtypes.bits(e.value.dtype) <= dtypes.bits(e.dtype):
        return widen(e.value, dtype)        # a widening cast: the value is the same
    return cast(dtype, e)


def flat_index(buffer, indices):
    """The element offset of ``indices`` in ``buffer``, in its index width."""
    wide = index_dtype(buffer.shape) == "int64"
    if wide:
        indices = tuple(widen(i) for i in indices)
    if len(indices) == 1 and not buffer.strides:
        return indices[0]
    if not indices:                     # a rank-0 buffer holds one element
        return const(0)
    strides = buffer.strides or row_major_strides(buffer.shape)
    if wide:
        strides = tuple(widen(s) if not isinstance(s, int) else const(s, "int64")
                        for s in strides)
    out = None
    for i, s in zip(indices, strides):
        term = i * s
        out = term if out is None else out + term
    return simplify(out)


def row_major_strides(shape):
    strides, acc = [], None
    for ext in reversed(shape):
        strides.append(acc if acc is not None else 1)
        acc = ext if acc is None else acc * ext
    return tuple(simplify(s) if not isinstance(s, int) else s for s in reversed(strides))


class _Flatten(IRMutator):
    def __init__(self):
        self._seen = {}         # (buffer, indices' structure) -> flat index

    def _flat(self, buffer, indices):
        key = (id(buffer), skey(indices))
        hit = self._seen.get(key)
        if hit is None:         # (Winograd's transforms read the same elements many times)
            flat = flat_index(buffer, indices)
            same = len(indices) == 1 and flat is indices[0]
            hit = self._seen[key] = (flat, same, buffer)
        return indices[0] if hit[1] else hit[0]

    def visit_BufferLoad(self, node):
        node = self.generic_visit(node)
        index = self._flat(node.buffer, node.indices)
        if len(node.indices) == 1 and index is node.indices[0]:
            return node
        return BufferLoad(node.buffer, (index,), node.dtype)

    def visit_BufferStore(self, node):
        node = self.generic_visit(node)
        index = self._flat(node.buffer, node.indices)
        if len(node.indices) == 1 and index is node.indices[0]:
            return node
        return BufferStore(node.buffer, node.value, (index,))


def storage_flatten(stmt):
    """Every BufferLoad/BufferStore gets a single flat index; buffers keep their shape."""
    return _Flatten().visit(stmt)

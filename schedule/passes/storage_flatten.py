"""Turn multi-dimensional buffer accesses into one flat element index (row-major or strided)."""
from __future__ import annotations

from te.expr import const

from ..functor import IRMutator
from ..ir import BufferLoad, BufferStore
from ..simplify import simplify


def flat_index(buffer, indices):
    """The element offset of ``indices`` in ``buffer``."""
    if len(indices) == 1 and not buffer.strides:
        return indices[0]
    if not indices:                     # a rank-0 buffer holds one element
        return const(0)
    strides = buffer.strides or row_major_strides(buffer.shape)
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
    def visit_BufferLoad(self, node):
        node = self.generic_visit(node)
        if len(node.indices) == 1 and not node.buffer.strides:
            return node
        return BufferLoad(node.buffer, (flat_index(node.buffer, node.indices),), node.dtype)

    def visit_BufferStore(self, node):
        node = self.generic_visit(node)
        if len(node.indices) == 1 and not node.buffer.strides:
            return node
        return BufferStore(node.buffer, node.value, (flat_index(node.buffer, node.indices),))


def storage_flatten(stmt):
    """Every BufferLoad/BufferStore gets a single flat index; buffers keep their shape."""
    return _Flatten().visit(stmt)

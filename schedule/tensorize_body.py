"""A tensor intrinsic's body on the real buffers (the binding half of schedule/tensorize.py).

``Retarget`` puts the real buffer in place of each intrinsic buffer's view in the
``vload`` / ``vstore`` / ``access_ptr`` calls and proves that the elements each touches lie in
the region bound to the buffer; ``call_packed`` arguments become the whole real buffer or an
array view of a compact region. ``simplify_vectors`` makes TVM's implicit broadcasts explicit.
"""
from __future__ import annotations

from te import dtypes
from te.expr import (EQ, GE, GT, LE, LT, NE, Add, Cast, Div, IntImm, Max, Min, Mul, Sub,
                     const)
from te.extern import ExternBuffer

from .functor import IRMutator
from .ir import BufferLoad, BufferStore, Broadcast
from .simplify import can_prove, simplify

TOUCHING = {"tw_vload": "vload", "tw_vstore": "vstore", "tvm_access_ptr": "access_ptr"}


class Retarget(IRMutator):
    """The intrinsic's buffer views -> the real buffers; each touched range checked to lie in
    the region bound to the buffer."""

    def __init__(self, owner, bufmap, packed):
        self.owner, self.bufmap, self.packed = owner, bufmap, packed
        self.ranges = dict(owner.b.ranges)      # and those of the body's own loops

    def _packed_arg(self, a):
        if a not in self.packed:
            if isinstance(a, ExternBuffer):
                self.owner.fail(f"call_packed passes buffer {a.name}, which is not one of the "
                                "intrinsic's ins/outs")
            return self.visit(a)
        ref = self.packed[a]
        if ref is None:
            self.owner.fail(f"call_packed passes buffer {a.name}, whose region is strided; "
                            "the packed function receives compact arrays, so pass "
                            f"{a.name}.data (the base pointer) with its elem_offset and "
                            "strides, or use call_extern with access_ptr")
        return ref

    def visit_For(self, node):
        ext = simplify(node.extent)
        if isinstance(ext, IntImm):
            self.ranges[node.loop_var] = (0, ext.value - 1)
        try:
            return self.generic_visit(node)
        finally:
            self.ranges.pop(node.loop_var, None)

    def visit_Call(self, node):
        if node.op == "tvm_call_packed":
            args = node.args[:1] + tuple(self._packed_arg(a) for a in node.args[1:])
            return type(node)(node.op, args, node.dtype)
        if node.op not in TOUCHING:
            return self.generic_visit(node)
        lo, hi = node.args[0], node.args[1]
        rest = tuple(self.visit(a) for a in node.args[2:])
        entry = self.bufmap.get(lo.buffer)
        if entry is None:
            self.owner.fail(f"the body uses buffer {lo.buffer.name}, which is not one of the "
                            "intrinsic's ins/outs")
        real, first, last, db, t, _ = entry
        a, z = simplify(lo.indices[0], self.ranges), simplify(hi.indices[0], self.ranges)
        if not (can_prove(a >= first, self.ranges) and can_prove(z <= last, self.ranges)):
            self.owner.fail(f"{TOUCHING[node.op]} of buffer {db.name} touches elements "
                            f"[{a}, {z}] of {t.name}, outside the region [{first}, {last}] "
                            "that the intrinsic covers (check the buffer's strides and the "
                            "vector's length)")
        touched = (BufferLoad(real, (a,), lo.dtype), BufferLoad(real, (z,), hi.dtype))
        return type(node)(node.op, touched + rest, node.dtype)

    def _element(self, node, what):
        """The real buffer and the flat index of an element access ``b[i, j]`` of an
        intrinsic buffer's view (ir_builder's ``buffer_ptr``), checked inside the region."""
        entry = self.bufmap.get(node.buffer)
        if entry is None:
            self.owner.fail(f"the body {what} buffer {node.buffer.name}, which is not one of "
                            "the intrinsic's ins/outs")
        real, first, last, db, t, strides = entry
        idx = [self.visit(i) for i in node.indices]
        flat = first
        if len(idx) == 1 and db.ndim > 1:
            flat = flat + idx[0]                    # one flat element index
        else:
            for i, s in zip(idx, strides):
                flat = flat + i * s
        flat = simplify(flat, self.ranges)
        if not (can_prove(flat >= first, self.ranges) and can_prove(flat <= last, self.ranges)):
            self.owner.fail(f"{node.buffer.name}[{', '.join(str(i) for i in node.indices)}] "
                            f"is element {flat} of {t.name}, outside the region [{first}, "
                            f"{last}] that the intrinsic covers")
        return real, flat

    def visit_BufferLoad(self, node):
        if node.buffer.__dict__.get("_decl") is None:
            return self.generic_visit(node)
        real, flat = self._element(node, "reads")
        return BufferLoad(real, (flat,), node.dtype)

    def visit_BufferStore(self, node):
        if node.buffer.__dict__.get("_decl") is None:
            return self.generic_visit(node)
        real, flat = self._element(node, "writes")
        return BufferStore(real, self.visit(node.value), (flat,))


class _Vectors(IRMutator):
    """A scalar cast to a vector type (TVM's ``x.astype('int32x16')``) and a constant of a
    vector type (``const(0, 'int32x16')``) are broadcasts."""

    def visit_IntImm(self, node):
        lanes = dtypes.lanes(node.dtype)
        if lanes == 1:
            return node
        return Broadcast(const(node.value, dtypes.element(node.dtype)), lanes, node.dtype)

    visit_FloatImm = visit_IntImm

    def _binary(self, node):
        """A vector and a scalar operand (``vload(...) * 3.0``): the scalar broadcast."""
        node = self.generic_visit(node)
        la, lb = dtypes.lanes(node.a.dtype), dtypes.lanes(node.b.dtype)
        if la == lb or min(la, lb) != 1:
            return node
        lanes = max(la, lb)
        a, b = (node.a, Broadcast(node.b, lanes, dtypes.with_lanes(node.b.dtype, lanes))) \
            if lb == 1 else (Broadcast(node.a, lanes, dtypes.with_lanes(node.a.dtype, lanes)),
                             node.b)
        return type(node)(a, b, dtypes.with_lanes(dtypes.element(node.dtype), lanes))

    def visit_Cast(self, node):
        node = self.generic_visit(node)
        lanes = dtypes.lanes(node.dtype)
        if lanes > 1 and dtypes.lanes(node.value.dtype) == 1:
            elem = dtypes.element(node.dtype)
            value = node.value if node.value.dtype == elem else Cast(node.value, elem)
            return Broadcast(value, lanes, node.dtype)
        return node


for _cls in (Add, Sub, Mul, Div, Min, Max, EQ, NE, LT, LE, GT, GE):
    setattr(_Vectors, "visit_" + _cls.__name__, _Vectors._binary)


def simplify_vectors(stmt):
    """``stmt`` with TVM's implicit broadcasts made explicit (``_Vectors``)."""
    return _Vectors().visit(stmt)

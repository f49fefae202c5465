"""Tensor intrinsics (TVM's ``te.decl_tensor_intrin``): a small compute declaration paired with
the code that computes it at once, for ``s[C].tensorize(axis, intrin)``.

    a = te.placeholder((l,), name="a"); b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Bb = te.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1,
                            strides=[te.var("s1"), 1])
    def intrin_func(ins, outs):
        aa, bb = ins
        return te.tir.call_extern("int32", "gemv_update", outs[0].access_ptr("w"),
                                  aa.access_ptr("r"), bb.access_ptr("r"), m, l, bb.strides[0])
    gemv = te.decl_tensor_intrin(c.op, intrin_func, binds={b: Bb})

``fn(ins, outs)`` is called once, here, with one ``DeclBuffer`` per input and output of the
declaration (from ``binds`` or made with ``default_buffer_params``). It returns the body (a
statement, or an expression evaluated for its effect), or ``(body, reduce_reset,
reduce_update)`` for a reduction. Buffers are used through ``vload`` / ``vstore`` (contiguous
elements from a start index), ``b[i, j]``, ir_builder's ``ib.buffer_ptr(b)`` (elements to read
and store in loops), ``access_ptr`` (a pointer for an extern call) and ``call_packed(.., b)``;
their ``elem_offset`` and ``strides`` are variables that tensorize binds to the region of the
real tensor that the intrinsic covers. Every such use carries the first and last element it
may touch, so that the compiler's bound checks prove (or check) the region in the real buffer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import dtypes
from .expr import Call, Expr, Var, const, convert
from .extern import ExternBuffer
from .tensor import ComputeOp, PlaceholderOp, TEError, Tensor


class DeclBuffer(ExternBuffer):
    """TVM's ``tir.Buffer`` as an intrinsic sees it: ``shape``, ``dtype``, ``strides``
    (expressions; variables are bound by tensorize), ``elem_offset``, ``offset_factor`` and
    ``data`` (the base pointer of the real buffer, for ``call_packed``). Passed whole to
    ``te.tir.call_packed``, it is the region (tensorize accepts that when the region is the
    whole real buffer)."""

    def __init__(self, shape, dtype="float32", name="buffer", strides=None, elem_offset=None,
                 scope="", offset_factor=0):
        shape = shape if isinstance(shape, (list, tuple)) else (shape,)
        super().__init__(name, tuple(convert(s) for s in shape), dtypes.canonical(dtype))
        declared = tuple(convert(s) for s in strides) if strides else ()
        if declared and len(declared) != len(self.shape):
            raise TEError(f"decl_buffer {name}: {len(declared)} strides for "
                          f"{len(self.shape)} dimensions; give one stride per dimension")
        if elem_offset is None:
            elem_offset = Var(f"{name}_elem_offset") if offset_factor else const(0)
        extra = {"scope": scope or "global", "offset_factor": int(offset_factor),
                 "declared_strides": declared, "elem_offset": convert(elem_offset),
                 "_data": Var(f"{name}_data", "handle"), "_view": None}
        for key, value in extra.items():     # a frozen dataclass: its extras set once, here
            object.__setattr__(self, key, value)

    @property
    def data(self) -> Var:
        """The base pointer of the real buffer (TVM's ``buffer.data``): ``call_packed``
        passes the whole real buffer for it; ``elem_offset`` says where the region starts."""
        return self._data

    @property
    def strides(self) -> tuple:
        """The declared strides, or the compact (row-major) ones."""
        if self.declared_strides:
            return self.declared_strides
        out, step = [], const(1)
        for d in reversed(self.shape):
            out.append(step)
            step = step * d
        return tuple(reversed(out))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def view(self):
        """The loop-IR Buffer that stands for this buffer in the intrinsic's body until
        tensorize puts the real buffer in its place."""
        if self._view is None:
            from schedule.ir import Buffer       # te does not import schedule at import time
            view = self.__dict__.get("_ir_buffer")      # made by ir_builder's buffer_ptr
            if view is None:
                view = Buffer(self.name, self.shape, self.dtype, self.scope)
            view.__dict__["_decl"] = self
            object.__setattr__(self, "_view", view)
            object.__setattr__(self, "_ir_buffer", view)    # ir_builder's buffer_ptr(self)
        return self._view

    def __repr__(self):
        return f"decl_buffer({self.name}, {list(self.shape)}, {self.dtype})"

    # ------------------------------------------------------------------ element offsets
    def _offset(self, begin, what) -> Expr:
        begin = begin if isinstance(begin, (list, tuple)) else (begin,)
        idx = [convert(b) for b in begin]
        for b in idx:
            if not dtypes.is_int(b.dtype):
                raise TEError(f"{what} of buffer {self.name}: index {b} has dtype {b.dtype}; "
                              "indices must be integers")
        if len(idx) == 1 and self.ndim > 1:
            return self.elem_offset + idx[0]            # a flat element index
        if len(idx) != max(self.ndim, 1):
            raise TEError(f"{what} of buffer {self.name}: {len(idx)} indices for a buffer of "
                          f"{self.ndim} dimensions; give one per dimension (or one flat index)")
        flat = self.elem_offset
        for i, s in zip(idx, self.strides):
            flat = flat + i * s
        return flat

    def _touch(self, first, count):
        """The loads of the first and last elements an access covers (never evaluated: the
        bound checks see them)."""
        from schedule.ir import BufferLoad
        elem = dtypes.element(self.dtype)
        return (BufferLoad(self.view, (first,), elem),
                BufferLoad(self.view, (first + (count - 1),), elem))

    def vload(self, begin, dtype=None) -> Expr:
        """``lanes`` contiguous elements from ``begin`` as one value of ``dtype`` (default
        the buffer's dtype: one element)."""
        dtype = dtypes.canonical(dtype or self.dtype)
        if dtypes.element(dtype) != dtypes.element(self.dtype):
            raise TEError(f"vload of buffer {self.name}: dtype {dtype} has elements of "
                          f"{dtypes.element(dtype)}, the buffer holds {self.dtype}")
        first = self._offset(begin, "vload")
        return Call("tw_vload", self._touch(first, dtypes.lanes(dtype)), dtype)

    def vstore(self, begin, value):
        """Store ``value`` (a vector of the buffer's elements) at ``begin``: a statement."""
        value = convert(value)
        if dtypes.element(value.dtype) != dtypes.element(self.dtype):
            raise TEError(f"vstore of buffer {self.name}: the value has dtype {value.dtype}; "
                          f"the buffer holds {self.dtype} (cast it first)")
        from schedule.ir import Evaluate
        first = self._offset(begin, "vstore")
        return Evaluate(Call("tw_vstore", self._touch(first, dtypes.lanes(value.dtype)) +
                             (value,), "int32"))

    def __getitem__(self, index):
        return self.vload(index if isinstance(index, tuple) else (index,))

    def access_ptr(self, access_mask, ptr_type="handle", content_lanes=1, offset=0,
                   extent=None) -> Expr:
        """A pointer to the element at ``offset`` (past ``elem_offset``) for an extern call;
        ``access_mask`` is "r", "w", "rw" (or TVM's 1 | 2 bits). It covers ``extent``
        elements (default: the region the buffer spans)."""
        mask = access_mask
        if isinstance(access_mask, str):
            if not access_mask or set(access_mask) - set("rw"):
                raise TEError(f"access_ptr of buffer {self.name}: access mask {access_mask!r} "
                              "must be 'r', 'w' or 'rw'")
            mask = ("r" in access_mask) * 1 + ("w" in access_mask) * 2
        first = self.elem_offset + convert(offset)
        if extent is None:
            span = const(1)
            for d, s in zip(self.shape, self.strides):
                span = span + (d - 1) * s
            count = span - convert(offset)
        else:
            count = convert(extent)
        return Call("tvm_access_ptr", self._touch(first, count) + (const(int(mask)),),
                    "handle")


def decl_buffer(shape, dtype="float32", name="buffer", data=None, strides=None,
                elem_offset=None, scope="", data_alignment=-1, offset_factor=0,
                buffer_type="", axis_separators=None, span=None) -> DeclBuffer:
    """A buffer for a tensor intrinsic's inputs and outputs (``tvm.tir.decl_buffer``)."""
    if data is not None:
        raise TEError(f"decl_buffer {name}: data= is not supported; the data is the real "
                      "tensor's, bound by tensorize")
    if axis_separators:
        raise TEError(f"decl_buffer {name}: axis_separators are not supported")
    return DeclBuffer(shape, dtype, name, strides, elem_offset, scope, offset_factor)


@dataclass(frozen=True, eq=False)
class TensorIntrin:
    """A declaration (``op``) and the statements that compute it: ``body`` (the whole
    computation), and for reductions ``reduce_init`` / ``reduce_update`` (set the output to
    the identity: fcompute's ``reduce_reset``; add one more part of the reduction)."""
    name: str
    op: ComputeOp
    inputs: tuple               # the declaration's input tensors, in reading order
    buffers: tuple              # one DeclBuffer per input, then one per output
    body: object
    reduce_init: object = None
    reduce_update: object = None
    attrs: dict = field(default_factory=dict)
    scalar_params: tuple = ()   # variables of the declaration given by each call's scalars

    def __repr__(self):
        return f"TensorIntrin({self.name})"

    def __call__(self, *args, **kwargs):
        """``intrin(A[i, 0:16], B[i, 0:16], reduce_axis=k)`` inside ``te.compute``: the
        intrinsic computes the compute's trailing dimensions (te/tensor_compute.py)."""
        from .tensor_compute import intrin_call
        return intrin_call(self, args, kwargs)


def _as_stmt(x, what, name):
    if x is None:
        return None
    from schedule.ir import Evaluate, Stmt
    if isinstance(x, Expr):
        return Evaluate(x)
    if isinstance(x, Stmt):
        return x
    raise TEError(f"decl_tensor_intrin {name}: the {what} must be a statement (ib.get(), "
                  f"buf.vstore(...)) or an expression (te.tir.call_extern(...)); got {x!r}")


def decl_tensor_intrin(op, fcompute, name="tensor_intrin", binds=None, scalar_params=None,
                       default_buffer_params=None) -> TensorIntrin:
    """A tensor intrinsic: ``op`` (a compute over placeholders) and ``fcompute(ins, outs)``,
    which returns its body or ``(body, reduce_reset, reduce_update)``."""
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, ComputeOp):
        raise TEError(f"decl_tensor_intrin {name}: op must be the compute op of the "
                      f"intrinsic's declaration (c.op), got {op!r}")
    scalar_params = tuple(scalar_params or ())
    for v in scalar_params:
        if not isinstance(v, Var):
            raise TEError(f"decl_tensor_intrin {name}: scalar_params must be te.var variables "
                          f"of the declaration, got {v!r}")
    binds = dict(binds or {})
    params = dict(default_buffer_params or {})
    inputs = tuple(op.input_tensors)
    for t in inputs:
        if not isinstance(t.op, PlaceholderOp):
            raise TEError(f"decl_tensor_intrin {name}: input {t.name} of {op.name} is not a "
                          "placeholder; declare the intrinsic over te.placeholder inputs")
    buffers = []
    for t in inputs + tuple(op.outputs):
        buf = binds.pop(t, None)
        if buf is None:
            buf = decl_buffer(t.shape, t.dtype, t.op.name, **params)
        if not isinstance(buf, DeclBuffer):
            raise TEError(f"decl_tensor_intrin {name}: binds[{t.name}] must be a "
                          f"te.tir.decl_buffer(...), got {buf!r}")
        from .arith import equal
        if len(buf.shape) != len(t.shape) or buf.dtype != t.dtype or \
                not all(equal(x, y) for x, y in zip(buf.shape, t.shape)):
            raise TEError(f"decl_tensor_intrin {name}: buffer {buf.name} has shape "
                          f"{list(buf.shape)} and dtype {buf.dtype}, but tensor {t.name} has "
                          f"{list(t.shape)} and {t.dtype}")
        buffers.append(buf)
    if binds:
        extra = ", ".join(getattr(t, "name", repr(t)) for t in binds)
        raise TEError(f"decl_tensor_intrin {name}: binds names {extra}, which the "
                      f"declaration {op.name} does not read or write")
    ins, outs = buffers[:len(inputs)], buffers[len(inputs):]
    result = fcompute(list(ins), list(outs), list(scalar_params)) if scalar_params else \
        fcompute(list(ins), list(outs))
    if isinstance(result, (list, tuple)):
        if len(result) == 1:
            result = (result[0], None, None)
        if len(result) != 3:
            raise TEError(f"decl_tensor_intrin {name}: fcompute returned {len(result)} items; "
                          "return the body, or (body, reduce_reset, reduce_update)")
        body, reset, update = result
    else:
        body, reset, update = result, None, None
    body = _as_stmt(body, "body", name)
    reset = _as_stmt(reset, "reduce_reset", name)
    update = _as_stmt(update, "reduce_update", name)
    if body is None and update is None:
        raise TEError(f"decl_tensor_intrin {name}: fcompute returned no body")
    if (reset is not None or update is not None) and not op.is_reduction:
        raise TEError(f"decl_tensor_intrin {name}: reduce_reset/reduce_update given for "
                      f"{op.name}, which is not a reduction")
    return TensorIntrin(name, op, inputs, tuple(buffers), body, reset, update,
                        scalar_params=scalar_params)


"""A tensor intrinsic called inside ``te.compute`` (TVM's ``TensorComputeOp``).

    vadd = te.decl_tensor_intrin(z.op, intrin_func)          # z: a compute over (16,)
    C = te.compute((64, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]))

The lambda names the first (schedulable) axes; the remaining dimensions of the shape are the
intrinsic's output, computed whole by one call of its body. Arguments are regions of tensors
(``A[i, 0:16]``, or ``A[i, j]`` for one element) or scalars (bound to the intrinsic's
``scalar_params``); ``reduce_axis=k`` names the reduction axes of the call (the intrinsic
then runs ``reduce_reset`` before them and ``reduce_update`` inside them).

The operation is a ``ComputeOp`` whose axes are all the output's dimensions (TVM's
``op.axis``; the stage's loops are the schedulable ones and the reduction axes). Its body,
one opaque ``tw_tensor_compute`` call per output, reads the first and last element of every
region: bound inference, cache_read and compute_at see the regions through it; lowering
(schedule/tensor_compute.py) binds the intrinsic's buffers to the regions.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import dtypes
from .expr import Call, IntImm, ProducerLoad, Var, const, convert
from .tensor import (DATA_PAR, OPAQUE, ComputeOp, IterVar, Range, TEError, Tensor,
                     TensorSlice, index_dtype)


@dataclass(frozen=True, eq=False)
class TensorIntrinCall:
    """``intrin(regions..., reduce_axis=...)`` inside a compute lambda (TVM's
    ``TensorIntrinCall``)."""
    intrin: object
    tensors: tuple
    regions: tuple              # one tuple of Range per tensor
    reduce_axis: tuple
    scalar_inputs: tuple


def region_of(arg, what):
    """(tensor, regions) of ``A[i, 0:16]`` (a TensorSlice) or ``A[i, j]`` (one element)."""
    if isinstance(arg, TensorSlice):
        tensor, indices = arg.tensor, arg.indices
    else:
        tensor, indices = arg.producer, arg.indices
    if len(indices) != len(tensor.shape):
        raise TEError(f"{what}: region of {tensor.name} has {len(indices)} indices for "
                      f"{len(tensor.shape)} dimensions; give one index or slice per dimension")
    region = []
    for pos, idx in enumerate(indices):
        if isinstance(idx, slice):
            if idx.step is not None:
                raise TEError(f"{what}: the slice of {tensor.name} in dimension {pos} has a "
                              "step; regions are contiguous (begin:end)")
            begin = const(0) if idx.start is None else convert(idx.start)
            end = tensor.shape[pos] if idx.stop is None else convert(idx.stop)
            region.append(Range.make(begin, end))
        else:
            begin = idx.var if isinstance(idx, IterVar) else convert(idx)
            region.append(Range(begin, const(1)))
        for e in (region[-1].min, region[-1].extent):
            if not dtypes.is_int(e.dtype):
                raise TEError(f"{what}: the region of {tensor.name} in dimension {pos} is "
                              f"{e} of dtype {e.dtype}; regions are integers")
    return tensor, tuple(region)


def intrin_call(intrin, args, kwargs) -> TensorIntrinCall:
    """``TensorIntrin.__call__``: tensor regions and scalar inputs, in order."""
    what = f"tensor intrinsic {intrin.name}"
    unknown = set(kwargs) - {"reduce_axis"}
    if unknown:
        raise TEError(f"{what}: unknown keyword arguments {sorted(unknown)}; the only one is "
                      "reduce_axis=")
    tensors, regions, scalars = [], [], []
    for a in args:
        if isinstance(a, (TensorSlice, ProducerLoad)):
            t, r = region_of(a, what)
            tensors.append(t)
            regions.append(r)
        elif isinstance(a, Tensor):
            raise TEError(f"{what}: pass a region of tensor {a.name} ({a.name}[i, 0:n]), not "
                          "the tensor")
        else:
            scalars.append(convert(a))
    if len(tensors) != len(intrin.inputs):
        raise TEError(f"{what}: called with {len(tensors)} tensor regions, but it reads "
                      f"{len(intrin.inputs)} ({', '.join(t.name for t in intrin.inputs)})")
    if len(scalars) != len(intrin.scalar_params):
        raise TEError(f"{what}: called with {len(scalars)} scalar arguments, but it has "
                      f"{len(intrin.scalar_params)} scalar_params")
    red = kwargs.get("reduce_axis", ())
    red = tuple(red) if isinstance(red, (list, tuple)) else (red,)
    for r in red:
        if not isinstance(r, IterVar) or r.iter_type != 2:
            raise TEError(f"{what}: reduce_axis must be te.reduce_axis(...) axes, got {r!r}")
    return TensorIntrinCall(intrin, tuple(tensors), tuple(regions), red, tuple(scalars))


@dataclass(frozen=True, eq=False, repr=False)
class TensorComputeOp(ComputeOp):
    """A compute whose trailing dimensions are one call of a tensor intrinsic."""
    schedulable_ndim: int = 0
    intrin: object = None
    inputs: tuple = ()
    input_regions: tuple = ()
    scalar_inputs: tuple = ()

    @property
    def schedulable_axis(self) -> tuple:
        return tuple(self.axis[:self.schedulable_ndim])

    def replace_body(self, body) -> "TensorComputeOp":
        """The same call on the tensors that ``body`` (a rewritten body: cache_read) reads."""
        loads = [a for a in body[0].args if isinstance(a, ProducerLoad)]
        inputs = tuple(loads[2 * k].producer for k in range(len(self.inputs)))
        return make(self.name, self.axis, self.reduce_axis, self.schedulable_ndim,
                    self.intrin, inputs, self.input_regions, self.scalar_inputs, self.tag,
                    self.attrs)

    def renamed(self, name) -> "TensorComputeOp":
        """The same call under another name, over axes of its own (cache_write's cache)."""
        from .functor import substitute
        axis = tuple(IterVar(iv.dom, Var(iv.var.name + ".c", iv.var.dtype), iv.iter_type)
                     for iv in self.axis)
        vmap = {a.var: b.var for a, b in zip(self.axis, axis)}
        regions = tuple(tuple(Range(substitute(r.min, vmap), substitute(r.extent, vmap))
                              for r in region) for region in self.input_regions)
        scalars = tuple(substitute(s, vmap) for s in self.scalar_inputs)
        return make(name, axis, self.reduce_axis, self.schedulable_ndim, self.intrin,
                    self.inputs, regions, scalars, self.tag, self.attrs)


def _corner_loads(inputs, regions) -> tuple:
    from .arith import simplify
    out = []
    for t, region in zip(inputs, regions):
        first = tuple(simplify(r.min) for r in region)
        last = tuple(simplify(r.min + r.extent - 1) for r in region)
        out += [ProducerLoad(t, first, t.dtype), ProducerLoad(t, last, t.dtype)]
    return tuple(out)


def make(name, axis, reduce_axis, ndim, intrin, inputs, regions, scalars, tag, attrs):
    outs = intrin.buffers[len(intrin.inputs):]
    loads = _corner_loads(inputs, regions)
    body = tuple(Call("tw_tensor_compute", loads + tuple(scalars), b.dtype) for b in outs)
    return TensorComputeOp(name, tuple(axis), tuple(reduce_axis), body, tag, dict(attrs),
                           ndim, intrin, tuple(inputs), tuple(regions), tuple(scalars))


def tensor_compute(shape, names, fcompute, name, tag, attrs, axis=None, call=None):
    """``te.compute`` whose lambda returns a tensor intrinsic call (or takes fewer
    parameters than the shape has dimensions; ``axis`` and ``call``: the lambda's axes
    and result, where it was called already)."""
    if axis is None:
        axis = [IterVar(Range(const(0), ext), Var(n, index_dtype(ext)), DATA_PAR)
                for n, ext in zip(names, shape)]
        try:
            call = fcompute(*[iv.var for iv in axis])
        except Exception as err:        # (the lambda wants one index per dimension)
            call = err
    axis = list(axis)
    if not isinstance(call, TensorIntrinCall):
        cause = call if isinstance(call, Exception) else None
        raise TEError(f"compute {name}: the lambda takes {len(names)} arguments "
                      f"({', '.join(names)}) but the shape has {len(shape)} dimensions; give "
                      "the lambda one parameter per dimension (fewer only when it returns a "
                      "tensor intrinsic's call, whose output fills the other dimensions)") from cause
    intrin = call.intrin
    what = f"compute {name}"
    if intrin.op.num_outputs != 1:
        raise TEError(f"{what}: tensor intrinsic {intrin.name} has "
                      f"{intrin.op.num_outputs} outputs; one is supported")
    for k, ext in enumerate(shape[len(names):]):
        axis.append(IterVar(Range(const(0), ext), Var(f"ax{k}", index_dtype(ext)), OPAQUE))
    out_buf = intrin.buffers[-1]
    if len(out_buf.shape) > len(axis):
        raise TEError(f"{what}: the intrinsic's output has {len(out_buf.shape)} dimensions, "
                      f"more than the compute's {len(axis)}")
    lead = len(axis) - len(out_buf.shape)
    for pos, (iv, want) in enumerate(zip(axis[lead:], out_buf.shape)):
        got = iv.dom.extent if iv.iter_type == OPAQUE else const(1)
        if isinstance(want, IntImm) and isinstance(got, IntImm) and want.value != got.value:
            raise TEError(f"{what}: dimension {lead + pos} covers {got.value} values per "
                          f"call, but the intrinsic's output {out_buf.name} has "
                          f"{want.value} there")
    return make(name, axis, call.reduce_axis, len(names), intrin, call.tensors, call.regions,
                call.scalar_inputs, tag, attrs or {}).output(0)


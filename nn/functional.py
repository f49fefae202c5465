"""Differentiable operators on nn.Tensor, each a small autograd Function.

Forward runs a compiled te kernel from ``nn.ops.cpu`` (plus the few declarations below that
the library lacks: comparisons, a scalar power, a cast, broadcast_to, argmax); backward is
written in these same operators, so gradients have graphs of their own under
``create_graph=True``. Operations that only rearrange memory (view, reshape, transpose,
squeeze) are numpy views sharing storage, as PyTorch's are; no arithmetic runs in numpy.
``kernel_calls`` counts the kernel calls per declaration, so tests can see where work ran.
"""
from __future__ import annotations

import builtins
import collections

import numpy as np

import te
from nn.ops import cpu

from .autograd import Function
from .tensor import FLOATING, Tensor, _dim, arange, max_result

kernel_calls = collections.Counter()

# ----------------------------------------------------------------------------- declarations


def _compare(fn, name):
    def declare(a, b):
        return cpu.broadcast(fn, a, b, name=name)
    declare.__name__ = name
    return declare


cmp_lt = _compare(lambda x, y: x < y, "lt")
cmp_le = _compare(lambda x, y: x <= y, "le")
cmp_gt = _compare(lambda x, y: x > y, "gt")
cmp_ge = _compare(lambda x, y: x >= y, "ge")
cmp_eq = _compare(lambda x, y: x.equal(y), "eq")
cmp_ne = _compare(lambda x, y: x.not_equal(y), "ne")


def power_scalar(x, exponent):
    """``x ** exponent`` for a constant exponent."""
    return cpu.broadcast(lambda v: te.power(v, te.const(exponent, x.dtype)), x, name="power")


def astype(x, to):
    """``x`` converted to dtype ``to``."""
    return te.compute(x.shape, lambda *i: x[i].astype(to), name="cast", tag="elemwise")


def broadcast_to(x, shape):
    """``x`` repeated along its size-1 (and missing leading) axes up to ``shape``."""
    lead = len(shape) - len(x.shape)

    def body(*idx):
        return x[tuple(0 if x.shape[k].value == 1 and shape[lead + k] != 1 else idx[lead + k]
                       for k in range(len(x.shape)))]
    return te.compute(shape, body, name="broadcast_to", tag="elemwise")


def argmax(x, axis, keepdims=False):
    """The first index of the maximum along ``axis`` (int64), as numpy's ``argmax``."""
    top = cpu.max(x, axis=axis, keepdims=True)
    k = te.reduce_axis((0, x.shape[axis]), name="k")
    never = te.const(np.iinfo("int64").max, "int64")

    def body(*idx):
        full = list(idx) if keepdims else list(idx[:axis]) + [0] + list(idx[axis:])
        src = full[:axis] + [k] + full[axis + 1:]
        at_top = full[:axis] + [0] + full[axis + 1:]
        hit = x[tuple(src)].equal(top[tuple(at_top)])
        return te.min(te.select(hit, k.var.astype("int64"), never), axis=k)
    shape = [1 if d == axis else x.shape[d] for d in range(len(x.shape))
             if keepdims or d != axis]
    return te.compute(shape, body, name="argmax")


def _kernel(declare, *arrays, out_shape, **params):
    """Run the compiled ``declare`` on ``arrays``, the result reshaped to ``out_shape``.

    Kernels take contiguous arrays of rank 1 or more: 0-d operands run as shape (1,).
    """
    arrays = [np.ascontiguousarray(a).reshape(a.shape or (1,)) for a in arrays]
    f = cpu.build(declare, [a.shape for a in arrays], [a.dtype.name for a in arrays], **params)
    kernel_calls[declare.__name__] += 1
    return Tensor(f(*arrays).reshape(out_shape))


# ----------------------------------------------------------------------------- dtypes, shapes

_KIND = {"b": 0, "u": 1, "i": 1, "f": 2}


def result_type(a, b) -> str:
    """PyTorch's promotion: floating > integral > bool; the wider of one kind; a Python
    number takes the tensor's dtype unless it is of a higher kind (then float32 or int64)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        ka, kb = _KIND[a._data.dtype.kind], _KIND[b._data.dtype.kind]
        if ka == kb:
            return np.promote_types(a.dtype, b.dtype).name
        return a.dtype if ka > kb else b.dtype
    t, number = (a, b) if isinstance(a, Tensor) else (b, a)
    kind = 0 if isinstance(number, (bool, np.bool_)) else 1 if isinstance(
        number, (int, np.integer)) else 2
    if kind <= _KIND[t._data.dtype.kind]:
        return t.dtype
    return "float32" if kind == 2 else "int64"


def _operands(a, b, dtype=None):
    """``a`` and ``b`` as tensors of one dtype (a Python number becomes a 0-d tensor)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"expected a Tensor operand, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    dtype = dtype or result_type(a, b)
    return tuple(cast(x, dtype) if isinstance(x, Tensor) else Tensor(np.array(x, dtype))
                 for x in (a, b))


def broadcast_shape(*shapes) -> tuple:
    """numpy's broadcast of ``shapes``, with PyTorch's message when they do not broadcast."""
    ndim = builtins.max(len(s) for s in shapes)
    out = []
    for d in range(-ndim, 0):
        sizes = [s[d] for s in shapes if len(s) >= -d]
        size = builtins.max(sizes)
        for k, n in enumerate(sizes):
            if n not in (1, size):
                raise RuntimeError(f"The size of tensor a ({sizes[0]}) must match the size of "
                                   f"tensor b ({sizes[-1]}) at non-singleton dimension "
                                   f"{ndim + d}")
        out.append(size)
    return tuple(out)


def _sum_to(g, shape):
    """``g`` summed over the axes that broadcasting added or repeated to reach ``shape``."""
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + k] != 1)
    return g.sum(dims, keepdim=True).reshape(shape) if dims else g.reshape(shape)


def _floating(x, what):
    if not x.is_floating_point():
        raise RuntimeError(f"{what}: expected a floating point tensor, got {x.dtype}")


def _binary(declare, a, b):
    return _kernel(declare, a._data, b._data, out_shape=broadcast_shape(a.shape, b.shape))


class Op(Function):
    """A built-in operator: its node is named as PyTorch's (``MulBackward0``)."""
    node_suffix = "Backward0"


# ----------------------------------------------------------------------------- elementwise

class Add(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        return _binary(cpu.add, a, b)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (_sum_to(g, ctx.shapes[0]) if need[0] else None,
                _sum_to(g, ctx.shapes[1]) if need[1] else None)


class Sub(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        return _binary(cpu.subtract, a, b)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (_sum_to(g, ctx.shapes[0]) if need[0] else None,
                _sum_to(-g, ctx.shapes[1]) if need[1] else None)


class Mul(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary(cpu.multiply, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g * b, a.shape) if need[0] else None,
                _sum_to(g * a, b.shape) if need[1] else None)


class Div(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary(cpu.divide, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g / b, a.shape) if need[0] else None,
                _sum_to(-(g * a) / (b * b), b.shape) if need[1] else None)


class Neg(Op):
    @staticmethod
    def forward(ctx, x):
        return _kernel(cpu.negative, x._data, out_shape=x.shape)

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Op):
    @staticmethod
    def forward(ctx, x, exponent):
        ctx.save_for_backward(x)
        ctx.exponent = exponent
        return _kernel(power_scalar, x._data, out_shape=x.shape, exponent=exponent)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 0:
            return g * 0.0, None
        return g * (x ** (p - 1) * p), None


def _unary(declare, name, derivative, save):
    """An Op whose gradient is ``g * derivative(saved)``; ``save`` is "input" or "output"."""

    def forward(ctx, x):
        _floating(x, name)
        out = _kernel(declare, x._data, out_shape=x.shape)
        ctx.save_for_backward(x if save == "input" else out)
        return out

    def backward(ctx, g):
        (saved,) = ctx.saved_tensors
        return g * derivative(saved)
    return type(name, (Op,), {"forward": staticmethod(forward),
                              "backward": staticmethod(backward), "__module__": __name__,
                              "__doc__": f"Elementwise {name.lower()}."})


Exp = _unary(cpu.exp, "Exp", lambda out: out, "output")
Log = _unary(cpu.log, "Log", lambda x: 1.0 / x, "input")
Sqrt = _unary(cpu.sqrt, "Sqrt", lambda out: 0.5 / out, "output")
Tanh = _unary(cpu.tanh, "Tanh", lambda out: 1.0 - out * out, "output")
Sigmoid = _unary(cpu.sigmoid, "Sigmoid", lambda out: out * (1.0 - out), "output")
Relu = _unary(cpu.relu, "Relu", lambda out: (out > 0).to(out.dtype), "output")


class ToCopy(Op):
    """A conversion to another dtype."""

    @staticmethod
    def forward(ctx, x, to):
        ctx.dtype = x.dtype
        return _kernel(astype, x._data, out_shape=x.shape, to=to)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None


class Expand(Op):
    """``x`` broadcast to a larger shape (a copy, unlike PyTorch's ``expand`` view)."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return _kernel(broadcast_to, x._data, out_shape=shape, shape=shape)

    @staticmethod
    def backward(ctx, g):
        return _sum_to(g, ctx.shape), None


# ----------------------------------------------------------------------------- matmul

def _batched(x, batch):
    """``x`` (..., M, K) as a 3-d array over the flattened ``batch`` (1 when it broadcasts)."""
    if int(np.prod(x.shape[:-2])) == 1:
        return x.reshape((1,) + x.shape[-2:])
    return np.broadcast_to(x, batch + x.shape[-2:]).reshape((-1,) + x.shape[-2:])


class Mm(Op):
    """The product of two matrices (``Bmm`` for stacks of them)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
        if k != k2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({'x'.join(map(str, a.shape))} and "
                               f"{'x'.join(map(str, b.shape))})")
        if a.ndim == b.ndim == 2:
            return _kernel(cpu.matmul, a._data, b._data, out_shape=(m, n))
        batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
        return _kernel(cpu.batch_matmul, _batched(a._data, batch), _batched(b._data, batch),
                       out_shape=batch + (m, n))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (_sum_to(g @ b.transpose(-1, -2), a.shape) if need[0] else None,
                _sum_to(a.transpose(-1, -2) @ g, b.shape) if need[1] else None)


class Bmm(Mm):
    """Batched matrix product: the code of ``Mm``, the node name of PyTorch's ``bmm``."""


# ----------------------------------------------------------------------------- reductions

def _dims(dim, ndim):
    """Reduced axes as a sorted tuple; None means all."""
    if dim is None:
        return tuple(range(ndim))
    dims = sorted({_dim(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)})
    return tuple(d for d in dims if d < ndim)


def _kept(shape, dims):
    """``shape`` with the ``dims`` set to 1 (the keepdim shape)."""
    return tuple(1 if d in dims else n for d, n in enumerate(shape))


def _reduced(shape, dims, keepdim):
    return _kept(shape, dims) if keepdim else tuple(n for d, n in enumerate(shape)
                                                     if d not in dims)


class Sum(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims = x.shape, dims
        return _kernel(cpu.sum, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                       axis=dims or None, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        kept = g.reshape(_kept(ctx.shape, ctx.dims))
        return expand(kept, ctx.shape), None, None


class Mean(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims = x.shape, dims
        ctx.count = int(np.prod([x.shape[d] for d in dims]))
        return _kernel(cpu.mean, x._data, out_shape=_reduced(x.shape, dims, keepdim),
                       axis=dims or None, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        kept = g.reshape(_kept(ctx.shape, ctx.dims)) * (1.0 / ctx.count)
        return expand(kept, ctx.shape), None, None


class Max(Op):
    """The maximum along one dimension, and its (first) index."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.shape, ctx.dim = x.shape, dim
        out_shape = _reduced(x.shape, (dim,), keepdim)
        values = _kernel(cpu.max, x._data, out_shape=out_shape, axis=dim, keepdims=keepdim)
        indices = _kernel(argmax, x._data, out_shape=out_shape, axis=dim, keepdims=keepdim)
        ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        kept = _kept(ctx.shape, (ctx.dim,))
        positions = arange(ctx.shape[ctx.dim]).reshape(
            tuple(-1 if d == ctx.dim else 1 for d in range(len(ctx.shape))))
        mask = (positions == indices.reshape(kept)).to(g.dtype)
        return mask * g.reshape(kept), None, None


# ----------------------------------------------------------------------------- views

class View(Op):
    """A new shape on the same storage (``reshape`` copies when it must)."""

    @staticmethod
    def forward(ctx, x, shape, copy):
        ctx.shape = x.shape
        try:
            return Tensor(np.reshape(x._data, shape, copy=copy))
        except ValueError as err:
            if "copy" not in str(err):
                raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size "
                                   f"{x.numel()}") from None
            raise RuntimeError("view size is not compatible with input tensor's size and "
                               "stride (at least one dimension spans across two contiguous "
                               "subspaces). Use .reshape(...) instead.") from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None, None


class Permute(Op):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(np.argsort(dims))
        return Tensor(np.transpose(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        return permute(g, ctx.inverse), None


class Transpose(Permute):
    """Two dimensions swapped: ``Permute`` under PyTorch's node name."""


class Unsqueeze(Op):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return Tensor(np.expand_dims(x._data, dim))

    @staticmethod
    def backward(ctx, g):
        return g.squeeze(ctx.dim), None


class Squeeze(Op):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.shape = x.shape
        return Tensor(np.squeeze(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


# ----------------------------------------------------------------------------- functions

def add(a, b, alpha=1):
    """``a + alpha * b`` with broadcasting."""
    if alpha != 1:
        b = mul(b, alpha)
    return Add.apply(*_operands(a, b))


def sub(a, b, alpha=1):
    """``a - alpha * b`` with broadcasting."""
    if alpha != 1:
        b = mul(b, alpha)
    return Sub.apply(*_operands(a, b))


def mul(a, b):
    return Mul.apply(*_operands(a, b))


def div(a, b):
    """True division: integer operands give float32, as in PyTorch."""
    dtype = result_type(a, b)
    return Div.apply(*_operands(a, b, dtype if dtype in FLOATING else "float32"))


def neg(x):
    return Neg.apply(x)


def pow(x, exponent):
    """``x ** exponent`` for a Python number ``exponent``."""
    if isinstance(exponent, Tensor) or not isinstance(exponent, (int, float)):
        raise TypeError(f"pow: the exponent must be a Python number for now, got "
                        f"{type(exponent).__name__}")
    if not x.is_floating_point():
        x = cast(x, "float32")
    return Pow.apply(x, float(exponent))


def exp(x):
    return Exp.apply(x)


def log(x):
    return Log.apply(x)


def sqrt(x):
    return Sqrt.apply(x)


def tanh(x):
    return Tanh.apply(x)


def sigmoid(x):
    return Sigmoid.apply(x)


def relu(x):
    return Relu.apply(x)


def cast(x, dtype):
    """``x`` converted to ``dtype`` (``x`` itself when it has it)."""
    dtype = np.dtype(dtype).name
    return x if x.dtype == dtype else ToCopy.apply(x, dtype)


def expand(x, shape):
    """``x`` broadcast to ``shape`` (a new tensor)."""
    shape = tuple(shape)
    return x if x.shape == shape else Expand.apply(x, shape)


def matmul(a, b):
    """Matrix product with PyTorch's rules: 1-d operands are vectors, batch axes broadcast."""
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a.ndim == 1 or b.ndim == 1:
        out = matmul(a.unsqueeze(0) if a.ndim == 1 else a, b.unsqueeze(-1) if b.ndim == 1 else b)
        if b.ndim == 1:
            out = out.squeeze(-1)
        return out.squeeze(-2 if b.ndim > 1 else -1) if a.ndim == 1 else out
    a, b = _operands(a, b)
    return (Mm if a.ndim == b.ndim == 2 else Bmm).apply(a, b)


def sum(x, dim=None, keepdim=False):
    """Sum over ``dim`` (an int, a tuple, or None for all); bool and int sum to int64."""
    if not x.is_floating_point():
        x = cast(x, "int64")
    return Sum.apply(x, _dims(dim, x.ndim), keepdim)


def mean(x, dim=None, keepdim=False):
    if not x.is_floating_point():
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {x.dtype}")
    return Mean.apply(x, _dims(dim, x.ndim), keepdim)


def max(x, dim=None, keepdim=False):
    """The largest element, or over ``dim`` a (values, indices) named tuple."""
    if dim is None:
        return max(x.reshape(-1), 0).values
    values, indices = Max.apply(x, _dim(dim, x.ndim), keepdim)
    return max_result(values, indices)


def view(x, shape):
    return View.apply(x, tuple(shape), False)


def reshape(x, shape):
    return View.apply(x, tuple(shape), None)


def permute(x, dims):
    dims = tuple(_dim(d, x.ndim) for d in dims)
    if sorted(dims) != list(range(x.ndim)):
        raise RuntimeError(f"permute(): dims {dims} are not a permutation of "
                           f"{x.ndim} dimensions")
    return Permute.apply(x, dims)


def transpose(x, dim0, dim1):
    dims = list(range(x.ndim))
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    dims[d0], dims[d1] = d1, d0
    return Transpose.apply(x, tuple(dims))


def unsqueeze(x, dim):
    return Unsqueeze.apply(x, _dim(dim, x.ndim + 1))


def squeeze(x, dim=None):
    """``x`` without its size-1 dimensions (only ``dim`` when given; kept if not size 1)."""
    if dim is None:
        dims = tuple(d for d, n in enumerate(x.shape) if n == 1)
    else:
        d = _dim(dim, x.ndim)
        dims = (d,) if x.ndim and x.shape[d] == 1 else ()
    return Squeeze.apply(x, dims) if dims else x


def _comparison(declare, name):
    def compare(a, b):
        a, b = _operands(a, b)
        return _binary(declare, a, b)
    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` with broadcasting: a bool tensor without grad."
    return compare


lt = _comparison(cmp_lt, "lt")
le = _comparison(cmp_le, "le")
gt = _comparison(cmp_gt, "gt")
ge = _comparison(cmp_ge, "ge")
eq = _comparison(cmp_eq, "eq")
ne = _comparison(cmp_ne, "ne")

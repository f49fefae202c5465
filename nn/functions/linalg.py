"""Matrix products: ``mm``, ``bmm``, ``matmul`` (PyTorch's rules for vectors and batch axes),
``linear`` (one fused dense-with-bias kernel), ``bilinear``, ``addmm``, ``mv``, ``dot``, ``outer``,
and ``cdist`` (the p-norm distances between two sets of row vectors).

The backward of a product never copies an operand transposed: for matrices ``g @ B^T`` is a
``dense`` kernel (which reads B's rows along k) and ``A^T @ g`` a ``matmul_tn`` kernel (which
reads A's columns in place); batched products read either operand transposed in place.
Backward functions are written in these differentiable operators, so ``create_graph=True``
differentiates them again.
"""
from __future__ import annotations

import warnings

import numpy as np

from nn.ops import cpu, cpu_matmul

from ..tensor import zeros
from .base import Op, _kernel_f32, _operands, _sum_to, broadcast_shape, torch_name

__all__ = ["mm", "bmm", "matmul", "linear", "bilinear", "addmm", "mv", "dot", "outer", "cdist",
           "addmv", "tensordot", "kron", "cross"]


def _dims(shape):
    return "x".join(map(str, shape))


def _same_dtype(a, b, what):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{what}: expected both operands to have the same dtype, but got "
                           f"{a.dtype} and {b.dtype}")


def _mm_dtypes(a, b):
    """PyTorch's check of ``mm`` (and of ``matmul`` where it folds to ``mm``)."""
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{torch_name(a.dtype, True)} != {torch_name(b.dtype, True)}")


def _bmm_dtypes(a, b):
    """PyTorch's check of ``bmm`` (and of batched ``matmul``)."""
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {torch_name(a.dtype)} but found "
                           f"{torch_name(b.dtype)}")


def _matmul_dtypes(a, b):
    """The dtype check of ``matmul`` as PyTorch makes it for each case of ranks: ``dot``,
    ``mv``, ``mm`` (a batch folded into rows) or ``bmm``."""
    if a.dtype == b.dtype:
        return
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{torch_name(a.dtype)} and {torch_name(b.dtype)}")
    if a.ndim == 2 and b.ndim == 1:
        v, m = torch_name(b.dtype), torch_name(a.dtype)
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, "
                           f"and {v}")
    if b.ndim <= 2:
        _mm_dtypes(a, b)
    _bmm_dtypes(a, b)


def _save_crossed(ctx, a, b):
    """Keep each factor of a product only for the other's gradient, as PyTorch's ``mm``: a
    frozen weight's product does not keep the input (which may then be written in place)."""
    need = ctx.needs_input_grad
    ctx.save_for_backward(a if need[1] else None, b if need[0] else None)


class Mm(Op):
    """``a @ b`` for two matrices."""

    @staticmethod
    def forward(ctx, a, b):
        _save_crossed(ctx, a, b)
        return _kernel_f32(cpu.matmul, a._data, b._data, out_shape=(a.shape[0], b.shape[1]))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (Addmm.apply(g, b, None) if need[0] else None,      # g @ b^T
                MmTN.apply(a, g) if need[1] else None)             # a^T @ g


class MmTN(Op):
    """``a^T @ b`` with ``a`` read transposed in place (the weight gradient of ``linear``)."""

    @staticmethod
    def forward(ctx, a, b):
        _save_crossed(ctx, a, b)
        return _kernel_f32(cpu_matmul.matmul_tn, a._data, b._data,
                           out_shape=(a.shape[1], b.shape[1]), schedule=cpu_matmul.schedule_matmul)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (Addmm.apply(b, g, None) if need[0] else None,      # b @ g^T
                Mm.apply(a, g) if need[1] else None)


class Addmm(Op):
    """``x @ weight^T + bias`` in one ``dense`` kernel, for x (M, K), weight (N, K), bias (N,)
    or None (named as the node of PyTorch's linear)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        _save_crossed(ctx, x, weight)
        arrays = (x._data, weight._data) + (() if bias is None else (bias._data,))
        return _kernel_f32(cpu.dense, *arrays, out_shape=(x.shape[0], weight.shape[0]))

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (Mm.apply(g, weight) if need[0] else None,
                MmTN.apply(g, x) if need[1] else None,
                g.sum(0) if need[2] else None)


def _batched(x, batch):
    """``x`` (..., M, K) as a 3-d array over the flattened ``batch`` (1 when it broadcasts).

    Only a batch that really broadcasts is expanded (by numpy, so on the CPU); the others are
    reshaped in place, which GPU arrays allow too."""
    if int(np.prod(x.shape[:-2])) == 1:
        return x.reshape((1,) + x.shape[-2:])
    if tuple(x.shape[:-2]) == tuple(batch):
        return x.reshape((-1,) + x.shape[-2:])
    return np.broadcast_to(x, batch + x.shape[-2:]).reshape((-1,) + x.shape[-2:])


class Bmm(Op):
    """Batched ``op(a) @ op(b)``, ``op`` a transpose where ``ta`` / ``tb`` say (read in place
    by the kernel); batch axes broadcast (a batch of 1 is read once)."""

    @staticmethod
    def forward(ctx, a, b, ta=False, tb=False):
        _save_crossed(ctx, a, b)
        ctx.shapes, ctx.transposed = (a.shape, b.shape), (ta, tb)
        m = a.shape[-1] if ta else a.shape[-2]
        n = b.shape[-2] if tb else b.shape[-1]
        batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
        if 0 in a.shape + b.shape:      # an empty operand: the product is empty or zero
            return zeros(batch + (m, n), dtype=a.dtype, device=a.device)
        return _kernel_f32(cpu.batch_matmul, _batched(a._data, batch),
                           _batched(b._data, batch), out_shape=batch + (m, n),
                           transpose_a=ta, transpose_b=tb)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ta, tb = ctx.transposed
        need = ctx.needs_input_grad
        ga = gb = None
        if need[0]:         # d op(a) = g @ op(b)^T; transposed back when ta
            ga = _sum_to(Bmm.apply(b, g, tb, True) if ta else Bmm.apply(g, b, False, not tb),
                         ctx.shapes[0])
        if need[1]:         # d op(b) = op(a)^T @ g; transposed back when tb
            gb = _sum_to(Bmm.apply(g, a, True, ta) if tb else Bmm.apply(a, g, not ta, False),
                         ctx.shapes[1])
        return ga, gb, None, None


def _check_inner(a_shape, b_shape, shown_a, shown_b):
    if a_shape[-1] != b_shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_dims(shown_a)} and "
                           f"{_dims(shown_b)})")


def mm(input, mat2):
    """The product of two matrices (2-d tensors; ``matmul`` broadcasts, ``mm`` does not)."""
    if input.ndim != 2:
        raise RuntimeError(f"self must be a matrix (a 2-D tensor), got a {input.ndim}-D tensor "
                           f"of shape {list(input.shape)}")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix (a 2-D tensor), got a {mat2.ndim}-D tensor "
                           f"of shape {list(mat2.shape)}")
    _check_inner(input.shape, mat2.shape, input.shape, mat2.shape)
    _mm_dtypes(input, mat2)
    return Mm.apply(input, mat2)


def bmm(input, mat2):
    """The products of two stacks of matrices, (b, n, m) @ (b, m, p) -> (b, n, p)."""
    for name, t in (("batch1", input), ("batch2", mat2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor, got a {t.ndim}-D tensor of shape "
                               f"{list(t.shape)}")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{input.shape[0]} and {mat2.shape[0]}")
    if input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")
    _bmm_dtypes(input, mat2)
    return Bmm.apply(input, mat2, False, False)


def matmul(input, other):
    """Matrix product with PyTorch's rules: 1-d operands are vectors, batch axes broadcast."""
    a, b = input, other
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    _matmul_dtypes(a, b)
    if a.ndim == 1 or b.ndim == 1:
        out = matmul(a.unsqueeze(0) if a.ndim == 1 else a, b.unsqueeze(-1) if b.ndim == 1 else b)
        if b.ndim == 1:
            out = out.squeeze(-1)
        return out.squeeze(-2 if b.ndim > 1 else -1) if a.ndim == 1 else out
    a, b = _operands(a, b)
    _check_inner(a.shape, b.shape, a.shape, b.shape)
    if a.ndim == b.ndim == 2:
        return Mm.apply(a, b)
    return Bmm.apply(a, b, False, False)


def linear(input, weight, bias=None):
    """``input @ weight^T + bias`` over the last axis of ``input`` (``*, in_features``), for
    weight (out_features, in_features): one fused kernel forward."""
    if weight.ndim != 2:
        raise RuntimeError(f"linear(): weight must be a 2-D tensor (out_features, in_features), "
                           f"got shape {list(weight.shape)}")
    if input.ndim == 0:
        raise RuntimeError("linear(): input must be at least 1-D, got a 0-D tensor")
    out_features, in_features = weight.shape
    if input.shape[-1] != in_features:
        rows = int(np.prod(input.shape[:-1], dtype=np.int64))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                           f"{input.shape[-1]} and {in_features}x{out_features})")
    _same_dtype(input, weight, "linear")
    if bias is not None:
        if bias.shape != (out_features,):
            raise RuntimeError(f"linear(): bias must have shape ({out_features},) to match "
                               f"weight {list(weight.shape)}, got {list(bias.shape)}")
        _same_dtype(input, bias, "linear")
    x = input.reshape((-1, in_features)) if input.ndim != 2 else input
    out = Addmm.apply(x, weight, bias)
    return out if input.ndim == 2 else out.reshape(input.shape[:-1] + (out_features,))


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``: one dense
    kernel computes ``weight @ input2``, then a product and a sum over i."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out_features, in1_features, "
                           f"in2_features), got shape {list(weight.shape)}")
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    if bias is not None and bias.shape != (out_features,):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{list(bias.shape)} but expected [{out_features}]")
    u = linear(input2, weight.reshape((out_features * in1, in2)))
    u = u.reshape(input2.shape[:-1] + (out_features, in1))
    out = (u * input1.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


def _scaled_add(product, input, beta, alpha):
    """``beta * input + alpha * product``: with ``beta`` 0, as PyTorch, ``input`` is ignored
    (nan and inf in it do not propagate)."""
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product."""
    return _scaled_add(mm(mat1, mat2), input, beta, alpha)


def mv(input, vec):
    """The product of a matrix and a vector."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    _matmul_dtypes(input, vec)
    return mm(input, vec.unsqueeze(1)).squeeze(1)


def dot(input, other):
    """The inner product of two 1-d tensors of the same size."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    if input.shape != other.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{other.shape[0]}] to have the same number of elements, but "
                           "got different sizes")
    _matmul_dtypes(input, other)
    return mm(input.unsqueeze(0), other.unsqueeze(1)).reshape(())


def outer(input, vec2):
    """The outer product of two 1-d tensors."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got {input.ndim}-D and "
                           f"{vec2.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between the rows of ``x1`` (..., P, M) and of ``x2`` (..., R, M):
    (..., P, R), batch dimensions broadcast. Composed of a broadcast difference and a vector
    norm, so its gradients are the norm's (zero where a difference is zero, for p >= 1)."""
    from .reduce import norm
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.ndim}D")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{torch_name(t.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return norm(diff, float(p), -1)


# ----------------------------------------------------------------------------- composed products

def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``; ``input`` broadcasts to the product."""
    if mat.ndim == 2 and vec.ndim == 1 and (mat.shape[1] != vec.shape[0] or input.ndim > 1 or
                                            input.numel() not in (1, mat.shape[0])):
        raise RuntimeError(f"size mismatch, got input ({input.numel()}), mat "
                           f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    if len({input.dtype, mat.dtype, vec.dtype}) > 1:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{torch_name(input.dtype)}, {torch_name(mat.dtype)}, and "
                           f"{torch_name(vec.dtype)}")
    return _scaled_add(mv(mat, vec), input, beta, alpha)


def tensordot(a, b, dims=2):
    """The sum of products of ``a`` and ``b`` over the last ``dims`` dimensions of ``a`` and
    the first of ``b`` (or over the dimensions listed, a pair of lists), as one ``mm``."""
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if hasattr(dims, "tolist"):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        left, right = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        left, right = dims
        left = [left] if isinstance(left, int) else list(left)
        right = [right] if isinstance(right, int) else list(right)
        if len(left) != len(right):
            raise RuntimeError("both dimension lists should have same length")
    left = [a.ndim + d if d < 0 else d for d in left]
    right = [b.ndim + d if d < 0 else d for d in right]
    for da, db in zip(left, right):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[da]} in dim {da} and second has size {b.shape[db]} "
                               f"in dim {db}")
    free_a = [d for d in range(a.ndim) if d not in left]
    free_b = [d for d in range(b.ndim) if d not in right]
    k = int(np.prod([a.shape[d] for d in left]))
    out_shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    a2 = a.permute(free_a + left).reshape(-1, k)
    b2 = b.permute(right + free_b).reshape(k, -1)
    return mm(a2, b2).reshape(out_shape)


def kron(input, other):
    """The Kronecker product: every element of ``input`` times the whole of ``other``."""
    ndim = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (ndim - input.ndim) + input.shape)
    b = other.reshape((1,) * (ndim - other.ndim) + other.shape)
    spread_a = a.reshape([n for m in a.shape for n in (m, 1)])
    spread_b = b.reshape([n for m in b.shape for n in (1, m)])
    return (spread_a * spread_b).reshape([m * n for m, n in zip(a.shape, b.shape)])


def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim`` (the first dimension of size 3 when
    None, as ``torch.cross``); ``input`` and ``other`` broadcast."""
    shape = broadcast_shape(input.shape, other.shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use "
                      "torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning,
                      stacklevel=2)
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross("linalg.cross", input, other, dim)


def _cross(name, input, other, dim):
    from ..tensor import tensor
    from .base import _dim, to_device
    if input.ndim != other.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    shape = broadcast_shape(input.shape, other.shape)
    d = _dim(dim, len(shape))
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    a, b = input.expand(shape), other.expand(shape)

    def turned(x, order):
        return x.index_select(d, to_device(tensor(order), x.device))
    return turned(a, [1, 2, 0]) * turned(b, [2, 0, 1]) - \
        turned(a, [2, 0, 1]) * turned(b, [1, 2, 0])

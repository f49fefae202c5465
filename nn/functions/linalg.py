"""Matrix products: ``matmul`` with PyTorch's rules for vectors and batch axes."""
from __future__ import annotations


import numpy as np

from nn.ops import cpu

from .base import (Op, _kernel,
                   _operands, _sum_to, broadcast_shape)


__all__ = ['matmul']


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

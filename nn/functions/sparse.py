"""Embedding lookups and one_hot, as PyTorch's ``F.embedding`` and ``F.one_hot``.

The lookup is a compiled gather; its gradient a compiled segment sum over the positions of
each used row (sorted on the host, see nn/ops/sparse.py), placed into a zero table; the
``padding_idx`` row gets no gradient.
"""
from __future__ import annotations

import numpy as np

from nn.ops import sparse as ops

from .. import autograd
from .base import Op, Tensor
from .fused import run_kernel

__all__ = ["embedding", "one_hot"]


class Embedding(Op):
    @staticmethod
    def forward(ctx, indices, weight, padding_idx, by_frequency):
        flat = indices._data.reshape(-1).astype("int64")
        ctx.save_for_backward(indices)
        ctx.table, ctx.padding_idx, ctx.by_frequency = weight.shape, padding_idx, by_frequency
        (out,) = run_kernel(ops.embedding, weight._data, flat)
        return Tensor(out.reshape(indices.shape + (weight.shape[1],)))

    @staticmethod
    def backward(ctx, g):
        (indices,) = ctx.saved_tensors
        rows = EmbeddingDenseBackward.apply(g.reshape(-1, ctx.table[1]), indices, ctx.table,
                                            ctx.padding_idx, ctx.by_frequency)
        return None, rows, None, None


class EmbeddingDenseBackward(Op):
    """The scatter-add of gradient rows into a zero table (its own gradient is a lookup)."""
    host_only = True        # on the GPU: on host copies, the table moved back to the GPU

    @staticmethod
    def forward(ctx, g, indices, table, padding_idx, by_frequency):
        ctx.save_for_backward(indices)
        flat = indices._data.reshape(-1).astype("int64")
        positions = np.arange(flat.size)
        if padding_idx is not None:
            positions = positions[flat != padding_idx]
        order = positions[np.argsort(flat[positions], kind="stable")]
        used, start, count = np.unique(flat[order], return_index=True, return_counts=True)
        out = np.zeros(table, g.dtype)
        if used.size:
            (rows,) = run_kernel(ops.embedding_backward, g._data, order, start.astype("int64"),
                                 count.astype("int64"), longest=int(count.max()),
                                 by_frequency=bool(by_frequency))
            out[used] = rows
        return Tensor(out)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        return embedding(indices, gg).reshape(-1, gg.shape[1]), None, None, None, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """The rows of ``weight`` at the integer ``input`` indices: shape ``input.shape + (D,)``.
    ``max_norm`` renormalizes the looked-up rows of ``weight`` in place first."""
    if input.dtype not in ("int64", "int32"):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead "
                           "(while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {list(weight.shape)}")
    if sparse:
        raise RuntimeError("embedding: sparse=True needs sparse gradients, which nn does not "
                           "have; use sparse=False (dense gradients)")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % rows
    flat = input._data.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= rows):
        bad = flat[(flat < 0) | (flat >= rows)][0]
        raise IndexError(f"index {int(bad)} is out of range for an embedding of {rows} rows "
                         f"(weight of shape {list(weight.shape)})")
    if max_norm is not None:
        _renorm_(weight, np.unique(flat.astype("int64")), float(max_norm), float(norm_type))
    return Embedding.apply(input, weight, padding_idx, bool(scale_grad_by_freq))


def _renorm_(weight, rows, max_norm, norm_type):
    """Scale the ``rows`` of ``weight`` whose norm exceeds ``max_norm`` down to it, in place
    (outside the graph, as PyTorch's ``embedding_renorm_``)."""
    if not rows.size:
        return
    with autograd.no_grad():
        (new,) = run_kernel(ops.embedding_renorm, weight._data, rows, max_norm=max_norm,
                            norm_type=norm_type)
    weight._data[rows] = new


def one_hot(tensor, num_classes=-1):
    """int64 ``tensor.shape + (num_classes,)``: 1 at each value's position;
    ``num_classes=-1`` takes the largest value plus one."""
    if tensor.dtype != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    flat = tensor._data.reshape(-1)
    if flat.size and flat.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if not flat.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(flat.max()) + 1
    elif flat.size and flat.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    (out,) = run_kernel(ops.one_hot, flat, classes=int(num_classes))
    return Tensor(out.reshape(tensor.shape + (num_classes,)))

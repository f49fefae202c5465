"""Sorting along a dimension: ``sort``, ``argsort`` and ``topk``, with PyTorch's signatures.

The permutation is computed on the host by numpy's stable sort (a GPU tensor's values are
copied to the host for it); the values are then gathered with ``gather``, so their gradient
is ``gather``'s: the output gradient scattered back to the positions each value came from.
Orders follow PyTorch's: NaN sorts above every number (last ascending, first descending), and
equal elements keep their input order (PyTorch's ``stable=True``; its default sort does not
promise an order among ties).
"""
from __future__ import annotations

import builtins
import collections

import numpy as np

from .. import device as devices
from .base import Op, Tensor, _dim, to_device
from .index import gather

__all__ = ["sort", "argsort", "topk", "msort", "searchsorted", "bucketize"]

sort_result = collections.namedtuple("sort", ["values", "indices"])
topk_result = collections.namedtuple("topk", ["values", "indices"])


def _check(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")


def _permutation(data, dim, descending):
    """The stable sorting permutation of host array ``data`` along ``dim`` (int64)."""
    if not descending:
        return np.argsort(data, axis=dim, kind="stable")
    # descending and stable: sort the reversed axis ascending, then reverse the result
    # (ties come back in input order; NaN, the largest, first)
    n = data.shape[dim]
    backward = np.argsort(np.flip(data, dim), axis=dim, kind="stable")
    return np.flip(n - 1 - backward, dim)


def _indices(input, dim, descending):
    """The permutation of ``input`` along ``dim`` as an int64 tensor on its device."""
    perm = _permutation(devices.host(input._data), dim, descending)
    return to_device(Tensor(np.ascontiguousarray(perm, dtype="int64")), input.device)


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) of ``input`` sorted along ``dim``; the values are differentiable.
    The permutation is computed by numpy on the host; the sort is always stable."""
    _check(input, "sort")
    if input.ndim == 0:
        return sort_result(input * 1, to_device(Tensor(np.zeros((), "int64")), input.device))
    d = _dim(dim, input.ndim)
    indices = _indices(input, d, descending)
    return sort_result(gather(input, d, indices), indices)


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``)."""
    _check(input, "argsort")
    if input.ndim == 0:
        return to_device(Tensor(np.zeros((), "int64")), input.device)
    return _indices(input, _dim(dim, input.ndim), descending)


def msort(input):
    """``input`` sorted along its first dimension (the values of ``sort(input, 0)``)."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) elements along
    ``dim``, largest first (smallest first); NaN counts as the largest. The permutation is
    computed by numpy on the host; ``sorted=False`` returns them sorted too."""
    _check(input, "topk")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"topk(): argument 'k' must be int, not {type(k).__name__}")
    size = input.shape[_dim(dim, input.ndim)] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"selected index k out of range: topk(k={k}) along a dimension of "
                           f"size {size}; choose 0 <= k <= {size}")
    if input.ndim == 0:
        return topk_result(*sort(input))
    d = _dim(dim, input.ndim)
    perm = _permutation(devices.host(input._data), d, largest)
    first = np.take(perm, np.arange(builtins.int(k)), axis=d)
    indices = to_device(Tensor(np.ascontiguousarray(first, dtype="int64")), input.device)
    return topk_result(gather(input, d, indices), indices)


def _positions(boundaries, values, right, sorter=None):
    """The insertion positions of host array ``values`` in sorted host ``boundaries`` (1-D,
    or one row per leading index of ``values``); NaN sorts last, as PyTorch's."""
    side = "right" if right else "left"
    if boundaries.ndim == 1:
        rows = boundaries if sorter is None else boundaries[sorter]
        return np.searchsorted(rows, values, side=side)
    flat_b = boundaries.reshape(-1, boundaries.shape[-1])
    flat_v = values.reshape(flat_b.shape[0], -1)
    flat_s = None if sorter is None else sorter.reshape(flat_b.shape[0], -1)
    out = np.stack([np.searchsorted(b if flat_s is None else b[flat_s[k]], v, side=side)
                    for k, (b, v) in enumerate(zip(flat_b, flat_v))])
    return out.reshape(values.shape)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """The indices where the elements of ``input`` would be inserted into the innermost
    dimension of ``sorted_sequence`` to keep it sorted (after equal elements with
    ``right``/``side="right"``). Computed on the host by numpy."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    values = np.asarray(input if scalar else devices.host(input._data))
    boundaries = devices.host(sorted_sequence._data)
    if boundaries.ndim > 1 and (scalar or values.shape[:-1] != boundaries.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(boundaries.shape)} and input value tensor "
                           f"{list(values.shape)}")
    order = None if sorter is None else devices.host(sorter._data)
    found = _positions(boundaries, values, right, order)
    out = Tensor(np.array(found, dtype="int32" if out_int32 else "int64"))
    return to_device(out, sorted_sequence.device)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element of ``input`` among the 1-D ``boundaries``:
    ``boundaries[i-1] < x <= boundaries[i]`` (``<= x <`` with ``right``)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim"
                           f"({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ----------------------------------------------------------------------------- median

def _lower_median(data, ignore_nan):
    """The lower median of host array ``data`` (flat): NaN when an element is NaN, or with
    ``ignore_nan`` the median of the others (NaN when all are)."""
    nans = np.isnan(data) if data.dtype.kind == "f" else np.zeros(data.shape, bool)
    if nans.any() and not ignore_nan:
        return np.array(np.nan, data.dtype)
    valid = data[~nans]
    if valid.size == 0:
        return np.array(np.nan, data.dtype)
    return np.sort(valid)[(valid.size - 1) // 2]


class Median(Op):
    """The lower median of all elements (PyTorch's ``median()``): NaN when an element is.
    Its gradient is shared evenly by the elements equal to it (the NaNs when it is NaN),
    as PyTorch's; the node keeps the input and the result, as PyTorch's."""
    ignore_nan = False

    @staticmethod
    def forward(ctx, x):
        value = _lower_median(devices.host(x._data).reshape(-1), ctx._forward_cls.ignore_nan)
        out = to_device(Tensor(np.array(value, x._data.dtype)), x.device)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        hit = ((x == out) | (x.isnan() & out.isnan())).to(g.dtype)
        return hit * (g / hit.sum())


class Nanmedian(Median):
    """``nanmedian()``: the lower median of the elements that are not NaN."""
    ignore_nan = True


def median_along(input, dim, keepdim, ignore_nan):
    """(values, indices) of the lower median along ``dim``, as PyTorch's: a slice with a NaN
    gives its first NaN (``ignore_nan``: the median of its other elements; its first NaN
    when all are). The values are gathered, so the gradient goes to the chosen elements."""
    d = _dim(dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    if input.ndim == 0:
        return input * 1, to_device(Tensor(np.zeros((), "int64")), input.device)
    data = devices.host(input._data)
    perm = np.argsort(data, axis=d, kind="stable")          # NaN last, ties in input order
    n = data.shape[d]
    nans = np.isnan(data) if data.dtype.kind == "f" else np.zeros(data.shape, bool)
    if ignore_nan:
        count = n - nans.sum(axis=d, keepdims=True)
        index = np.take_along_axis(perm, np.maximum(count - 1, 0) // 2, axis=d)
    else:
        index = np.take(perm, [(n - 1) // 2], axis=d)
        index = np.where(nans.any(axis=d, keepdims=True),
                         np.argmax(nans, axis=d, keepdims=True), index)
    indices = to_device(Tensor(np.ascontiguousarray(index, dtype="int64")), input.device)
    values = gather(input, d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values, indices

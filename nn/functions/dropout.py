"""Dropout: dropout, alpha_dropout, feature_alpha_dropout, dropout1d, dropout2d, as PyTorch's.

The noise is drawn from nn's generator (``nn.manual_seed`` makes it reproducible); the masking
and scaling run as one compiled kernel (nn/ops/dropout.py) that also returns the scaled mask.
The gradient is the incoming gradient times that mask, written as ``mul``, so it can be
differentiated again.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from nn.ops import dropout as ops

from .. import autograd
from .. import tensor as _tensor
from .base import Op, Tensor
from .fused import run_kernel
from .index import rebase_inplace

__all__ = ["dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
           "dropout3d"]

ALPHA = 1.7580993408473766      # SELU's -alpha * scale: the value a dropped unit takes


class NativeDropout(Op):
    """``x * keep * scale + (keep - 1 + p) * shift``, with one draw per element or, given
    ``features`` (the number of leading dimensions that index a channel), one per channel."""

    @staticmethod
    def forward(ctx, x, p, scale, shift, features):
        rows = int(np.prod(x.shape[:features], dtype=np.int64)) if features else 1
        x2 = x._data.reshape(rows, -1)
        noise = _tensor._generator.random((rows, 1) if features else x2.shape, dtype="float32")
        y, mask = run_kernel(ops.dropout_mask, x2, noise.astype(x.dtype, copy=False), p=p,
                             scale=scale, shift=shift)
        ctx.mask = Tensor(mask.reshape(x.shape[:features] + (1,) * (x.ndim - features)
                                       if features else x.shape))
        return Tensor(y.reshape(x.shape))

    @staticmethod
    def backward(ctx, g):
        return g * ctx.mask, None, None, None, None


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply(input, p, training, inplace, alpha, features):
    """The shared body: identity when not training or p == 0, zeros when p == 1."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        out = input * 0.0
    elif alpha:
        a = 1.0 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
        out = NativeDropout.apply(input, float(p), a, ALPHA * a, features)
    else:
        out = NativeDropout.apply(input, float(p), 1.0 / (1.0 - p), 0.0, features)
    if not inplace:
        return out
    in_graph = input._records_inplace([])
    with autograd.no_grad():
        input._assign(out)
    if in_graph:
        rebase_inplace(input, out)
    return input


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    return _apply(input, p, training, inplace, alpha=False, features=0)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units take SELU's negative saturation value and
    the output is scaled and shifted to keep zero mean and unit variance."""
    return _apply(input, p, training, inplace, alpha=True, features=0)


def _feature_dims(input, what):
    if input.ndim < 2:
        raise RuntimeError(f"{what}: Feature dropout requires at least 2 dimensions in the "
                           f"input, got {input.ndim}")
    return 2


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels of (N, C, *) ``input``."""
    return _apply(input, p, training, inplace, alpha=True,
                  features=_feature_dims(input, "feature_alpha_dropout"))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or unbatched (C, L) ``input``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:         # unbatched (C, L): its channels are the first dimension
        return _apply(input, p, training, inplace, alpha=False, features=1)
    return _apply(input, p, training, inplace, alpha=False, features=2)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or unbatched (C, H, W) ``input``."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).")
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-"
                      "wise 1D dropout behavior is desired - input is interpreted as shape (N, "
                      "C, L), where C is the channel dim. This behavior will change in a future "
                      "release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.")
    return _apply(input, p, training, inplace, alpha=False,
                  features=_feature_dims(input, "dropout2d"))


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or unbatched (C, D, H, W) ``input``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).")
    # PyTorch takes anything but 5-D as unbatched: its channels are the first dimension
    return _apply(input, p, training, inplace, alpha=False, features=2 if input.ndim == 5 else 1)

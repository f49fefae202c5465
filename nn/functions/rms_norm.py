"""Root-mean-square normalization, as ``torch.nn.functional.rms_norm``: composed from
differentiable operators, ``x * rsqrt(mean(x^2) + eps) * weight`` over the trailing
``normalized_shape`` dimensions."""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["rms_norm"]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Normalize ``input`` by the root mean square of its last ``len(normalized_shape)``
    dimensions; ``eps`` defaults to the machine epsilon of the input's dtype."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.ndim - k:]) != normalized_shape or k > input.ndim:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(normalized_shape)}")
    if eps is None:
        eps = float(np.finfo(input.dtype if isinstance(input.dtype, str) else
                             str(input.dtype)).eps)
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * (input * input).mean(dims, keepdim=True).add(eps).rsqrt()
    return out if weight is None else out * weight

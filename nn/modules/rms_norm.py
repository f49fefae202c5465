"""RMSNorm, as torch.nn has it (``weight`` of ones; ``eps`` None means the dtype's epsilon)."""
from __future__ import annotations

import numbers

import numpy as np

from .. import functional as F
from .module import Module, Parameter
from ..tensor import get_default_dtype

__all__ = ["RMSNorm"]


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dimensions (``normalized_shape``)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dtype = np.dtype(dtype or get_default_dtype()).name
        self.register_parameter("weight", Parameter(np.ones(self.normalized_shape, dtype))
                                if elementwise_affine else None)
        if device is not None:
            self.to(device=device)

    def reset_parameters(self):
        if self.weight is not None:
            self.weight.detach().fill_(1)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")

"""Identity and Linear, with PyTorch's default initialization."""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor, rand
from .module import Module, Parameter

__all__ = ["Identity", "Linear"]


def _uniform_(tensor: Tensor, low: float, high: float) -> Tensor:
    """Fill ``tensor`` in place from U(low, high), drawn from nn's generator (manual_seed)."""
    draw = rand(tensor.shape, dtype="float64")._data
    np.copyto(tensor._data, low + (high - low) * draw, casting="unsafe")
    return tensor


def _fan_in(tensor: Tensor) -> int:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    return tensor.shape[1] * int(np.prod(tensor.shape[2:], dtype=np.int64))


def _kaiming_uniform_(tensor: Tensor, a: float) -> Tensor:
    """PyTorch's kaiming_uniform_(mode="fan_in", nonlinearity="leaky_relu")."""
    gain = math.sqrt(2.0 / (1 + a * a))
    bound = math.sqrt(3.0) * gain / math.sqrt(_fan_in(tensor)) if _fan_in(tensor) else 0.0
    return _uniform_(tensor, -bound, bound)


class Identity(Module):
    """Returns its input; any constructor arguments are ignored, as PyTorch's are."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; weight is (out_features, in_features).

    Initialized as PyTorch's: weight by kaiming_uniform_(a=sqrt(5)), that is
    U(-1/sqrt(in_features), 1/sqrt(in_features)), and bias from the same range.
    """

    def __init__(self, in_features, out_features, bias=True, dtype=None):
        super().__init__()
        dtype = np.dtype(dtype or "float32").name
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(np.empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(np.empty((out_features,), dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = _fan_in(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            _uniform_(self.bias, -bound, bound)

    def forward(self, input):
        out = input @ self.weight.t()
        return out if self.bias is None else out + self.bias

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")

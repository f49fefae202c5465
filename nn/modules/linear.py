"""Identity, Linear, Bilinear and LazyLinear, with PyTorch's default initialization."""
from __future__ import annotations

import math

import numpy as np

from .. import functions as F, init
from ..device import move
from ..tensor import Tensor, _check_device, dtype_name, get_default_dtype
from .module import LazyModuleMixin, Module, Parameter, UninitializedParameter

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


def _features(layer, **sizes):
    for name, n in sizes.items():
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{layer}: {name} must be a non-negative int, got {n!r}")


def _check_tensor(fn, value, name="input", position=1):
    """PyTorch's TypeError when a layer gets something that is not a Tensor (an array, a list):
    ``linear(): argument 'input' (position 1) must be Tensor, not numpy.ndarray``."""
    if not isinstance(value, Tensor):
        kind = type(value)
        kind = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, "
                        f"not {kind}")


def _parameter(shape, device, dtype):
    """A Parameter of ``shape`` on ``device`` with unset values (reset_parameters fills it)."""
    data = np.empty(shape, dtype_name(dtype or get_default_dtype()))
    return Parameter(Tensor(move(data, _check_device(device))))


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

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        _features(type(self).__name__, in_features=in_features, out_features=out_features)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = _parameter((out_features, in_features), device, dtype)
        self.register_parameter("bias", _parameter((out_features,), device, dtype) if bias
                                else None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        _check_tensor("linear", input)
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b`` per output feature; weight is (out, in1, in2).

    Initialized as PyTorch's: weight and bias from U(-1/sqrt(in1), 1/sqrt(in1)).
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        _features("Bilinear", in1_features=in1_features, in2_features=in2_features,
                  out_features=out_features)
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = _parameter((out_features, in1_features, in2_features), device, dtype)
        self.register_parameter("bias", _parameter((out_features,), device, dtype) if bias
                                else None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        _check_tensor("bilinear", input1, "input1", 1)
        _check_tensor("bilinear", input2, "input2", 2)
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is the size of the last axis of its first input.

    Until that first call (or a ``load_state_dict``) its parameters are
    ``UninitializedParameter``s, which refuse to be used; then they are materialized and
    initialized as Linear's, and the module becomes a ``Linear``, as PyTorch's does.
    """
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Module.__init__(self)
        _features("LazyLinear", out_features=out_features)
        self.in_features = 0
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.register_parameter("bias", UninitializedParameter(device=device, dtype=dtype)
                                if bias else None)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Materialize the parameters for ``input``'s last axis and initialize them."""
        if self.has_uninitialized_params():
            if input.ndim == 0:
                raise RuntimeError("LazyLinear: the input must be at least 1-D to infer "
                                   "in_features, got a 0-D tensor")
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()
        else:               # loaded from a state_dict: the weight knows in_features
            self.in_features = self.weight.shape[1]

    def forward(self, input):
        _check_tensor("linear", input)
        return super().forward(input)

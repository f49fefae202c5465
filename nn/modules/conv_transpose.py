"""ConvTranspose1d, ConvTranspose2d and ConvTranspose3d, as torch.nn has them: weight
(in, out / groups, k...), PyTorch's initialization, and ``forward(input, output_size=None)``
(``output_size`` picks the output padding that reaches it)."""
from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from .. import init
from .conv import conv_extra_repr
from .module import Module, Parameter
from ..tensor import get_default_dtype

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _ntuple(value, n):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    values = tuple(int(v) for v in value)
    return values * n if len(values) == 1 else values


class _ConvTransposeNd(Module):
    nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        n = self.nd
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.padding, self.dilation = _ntuple(padding, n), _ntuple(dilation, n)
        self.output_padding = _ntuple(output_padding, n)
        self.groups, self.padding_mode, self.transposed = groups, padding_mode, True
        dtype = np.dtype(dtype or get_default_dtype()).name
        self.weight = Parameter(np.empty((in_channels, out_channels // groups)
                                         + self.kernel_size, dtype))
        self.register_parameter("bias", Parameter(np.empty((out_channels,), dtype))
                                if bias else None)
        self.reset_parameters()
        if device is not None:
            self.to(device=device)

    def reset_parameters(self):
        """PyTorch's: kaiming_uniform_(a=sqrt(5)) (fan_in from weight.size(1) * kernel), the
        bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self.nd
        output_size = list(output_size)[-n:]
        spatial = input.shape[-n:]
        pads = []
        for d in range(n):
            least = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            if not least <= output_size[d] < least + self.stride[d]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {least} to {least + self.stride[d] - 1} (for an "
                                 f"input of {list(spatial)})")
            pads.append(output_size[d] - least)
        return tuple(pads)

    def extra_repr(self):
        return conv_extra_repr(self)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over (N, C_in, H, W); weight (C_in, C_out / groups, kH, kW)."""
    nd = 2

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over (N, C_in, L); weight (C_in, C_out / groups, k)."""
    nd = 1

    def forward(self, input, output_size=None):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over (N, C_in, D, H, W); weight
    (C_in, C_out / groups, kD, kH, kW)."""
    nd = 3

    def forward(self, input, output_size=None):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)

"""Conv1d, Conv2d and Conv3d, as torch.nn has them: PyTorch's arguments, checks, default
initialization and repr; the padding modes other than zeros pad with ``nn.functional.pad``
first and convolve without padding."""
from __future__ import annotations

import math

import numpy as np

from .. import init
from ..functions import conv as F
from ..tensor import get_default_dtype
from .module import LazyModuleMixin, Module, Parameter, UninitializedParameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "LazyConv1d", "LazyConv2d", "LazyConv3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(value, n):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    values = tuple(int(v) for v in value)
    return values * n if len(values) == 1 else values


class _ConvNd(Module):
    """What Conv1d and Conv2d share: arguments, parameters, initialization, repr."""
    nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride = _ntuple(kernel_size, self.nd), _ntuple(stride, self.nd)
        dilation = _ntuple(dilation, self.nd)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, self.nd)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {sorted(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.groups, self.padding_mode = dilation, groups, padding_mode
        self.output_padding = (0,) * self.nd
        self.transposed = False
        self._reversed_padding_repeated_twice = self._pad_sizes()
        dtype = np.dtype(dtype or get_default_dtype()).name
        self.weight = Parameter(np.empty((out_channels, in_channels // groups) + kernel_size,
                                         dtype=dtype))
        self.register_parameter("bias", Parameter(np.empty((out_channels,), dtype=dtype))
                                if bias else None)
        self.reset_parameters()
        if device is not None:
            self.to(device=device)

    def _pad_sizes(self):
        """The padding as ``F.pad`` takes it: last dimension first, (before, after) each."""
        sizes = []
        for k in reversed(range(self.nd)):
            if self.padding == "same":
                total = self.dilation[k] * (self.kernel_size[k] - 1)
                sizes += [total // 2, total - total // 2]
            elif self.padding == "valid":
                sizes += [0, 0]
            else:
                sizes += [self.padding[k], self.padding[k]]
        return tuple(sizes)

    def reset_parameters(self):
        """PyTorch's: kaiming_uniform_(a=sqrt(5)) for the weight (U(-1/sqrt(fan_in),
        1/sqrt(fan_in))), the bias from the same range."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _convolve(self, conv, input, weight, bias):
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return conv_extra_repr(self)


def conv_extra_repr(m):
    """PyTorch's repr arguments of a (transposed) convolution: the non-default ones."""
    s = f"{m.in_channels}, {m.out_channels}, kernel_size={m.kernel_size}, stride={m.stride}"
    if m.padding != (0,) * m.nd:
        s += f", padding={m.padding}"
    if m.dilation != (1,) * m.nd:
        s += f", dilation={m.dilation}"
    if getattr(m, "output_padding", (0,) * m.nd) != (0,) * m.nd:
        s += f", output_padding={m.output_padding}"
    if m.groups != 1:
        s += f", groups={m.groups}"
    if m.bias is None:
        s += ", bias=False"
    if getattr(m, "padding_mode", "zeros") != "zeros":
        s += f", padding_mode={m.padding_mode}"
    return s


class Conv1d(_ConvNd):
    """1-d convolution over (N, C, L) or (C, L); weight (out, in / groups, k)."""
    nd = 1

    def forward(self, input):
        return self._convolve(F.conv1d, input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-d convolution over (N, C, H, W) or (C, H, W); weight (out, in / groups, kH, kW).

    ``padding``: int, pair, "valid" or "same"; ``padding_mode``: "zeros", "reflect",
    "replicate" or "circular".
    """
    nd = 2

    def forward(self, input):
        return self._convolve(F.conv2d, input, self.weight, self.bias)


class Conv3d(_ConvNd):
    """3-d convolution over (N, C, D, H, W) or (C, D, H, W); weight
    (out, in / groups, kD, kH, kW). ``padding`` and ``padding_mode`` as Conv2d's."""
    nd = 3

    def forward(self, input):
        return self._convolve(F.conv3d, input, self.weight, self.bias)


class _LazyConvNd(LazyModuleMixin):
    """A convolution whose ``in_channels`` is the channel count of its first input (the
    first dimension of an unbatched one). Until then its parameters are
    ``UninitializedParameter``s; then they are materialized and initialized as the
    convolution's, and the module becomes that convolution (``cls_to_become``), as PyTorch's
    lazy modules do; ``load_state_dict`` materializes them too."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        # built with 0 input channels (an empty weight, nothing drawn, as PyTorch's), then
        # made lazy
        self.cls_to_become.__init__(self, 0, out_channels, kernel_size, stride, padding,
                                    dilation, groups, bias, padding_mode, None, dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.register_parameter("bias", UninitializedParameter(device=device, dtype=dtype)
                                if bias else None)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Materialize the parameters for ``input``'s channels and initialize them."""
        if not self.has_uninitialized_params():
            self.in_channels = self.weight.shape[1] * self.groups
            return
        unbatched, batched = self.nd + 1, self.nd + 2
        if input.dim() not in (unbatched, batched):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {batched}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        self.in_channels = input.shape[1] if input.dim() == batched else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        self.weight.materialize((self.out_channels, self.in_channels // self.groups)
                                + tuple(self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class LazyConv1d(_LazyConvNd, Conv1d):
    """Conv1d with ``in_channels`` from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """Conv2d with ``in_channels`` from the first input."""
    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """Conv3d with ``in_channels`` from the first input."""
    cls_to_become = Conv3d

"""``nn.quantized.Conv2d`` and the fused ``ConvReLU2d`` (PyTorch's
``torch.ao.nn.quantized.Conv2d`` / ``torch.ao.nn.intrinsic.quantized.ConvReLU2d``): NCHW
quint8 in and out, qint8 weights (per tensor or per output channel), float bias; stride,
padding, dilation, groups; one te kernel per call (im2col and the product,
``nn.ops.quantized.qconv2d``)."""
from __future__ import annotations

import numpy as np

from ...modules.conv import Conv2d as FloatConv2d
from ...tensor import Tensor
from .. import functional_layers as qfl
from ..dtypes import qint8
from ..qgemm import PackedWeight, check_mode
from ..qtensor import QTensor, quantize_per_tensor
from .utils import QuantizedModule, float_weight_qparams, inner, output_qparams

__all__ = ["Conv2d", "ConvReLU2d"]


def _fold_bn(conv, bn):
    """Conv weight and bias with a BatchNorm's running statistics folded in."""
    w = conv.weight.detach().numpy().astype("float64")
    b = np.zeros(w.shape[0]) if conv.bias is None else conv.bias.detach().numpy()
    mean, var = bn.running_mean.numpy(), bn.running_var.numpy()
    gamma = bn.weight.detach().numpy() if bn.weight is not None else np.ones_like(mean)
    beta = bn.bias.detach().numpy() if bn.bias is not None else np.zeros_like(mean)
    inv = gamma / np.sqrt(var + bn.eps)
    return (Tensor((w * inv.reshape(-1, 1, 1, 1)).astype("float32")),
            Tensor(((b - mean) * inv + beta).astype("float32")))


class Conv2d(QuantizedModule):
    """A quantized 2-d convolution; ``mode`` picks the requantization ("float" or
    "integer")."""
    _FLOAT_MODULE = FloatConv2d
    _relu = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError("Only zero-padding is supported!")
        pair = qfl._pair
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = pair(kernel_size, "kernel_size")
        self.stride, self.padding = pair(stride, "stride"), pair(padding, "padding")
        self.dilation, self.groups = pair(dilation, "dilation"), int(groups)
        self.padding_mode = padding_mode
        self.scale, self.zero_point = 1.0, 0
        self.mode = "float"
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        w = quantize_per_tensor(Tensor(np.zeros(shape, "float32")), 1.0, 0, qint8)
        self.set_weight_bias(w, Tensor(np.zeros(self.out_channels, "float32")) if bias
                             else None)

    def _get_name(self):
        return "QuantizedConvReLU2d" if self._relu else "QuantizedConv2d"

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias() is None:
            text += ", bias=False"
        return text

    def set_weight_bias(self, w: QTensor, b=None):
        """Set (and pack) the qint8 weight (OC, C / groups, KH, KW) and the float bias."""
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        if tuple(w.shape) != shape:
            raise RuntimeError(f"set_weight_bias: the weight must have shape {shape}, got "
                               f"{tuple(w.shape)}")
        self._packed = PackedWeight(w, b, self.groups)

    def weight(self) -> QTensor:
        return self._packed.weight

    def bias(self):
        return self._packed.bias

    def forward(self, input):
        check_mode(self.mode, self._get_name())
        return qfl.conv2d_packed(input, self._packed, self.kernel_size, self.stride,
                                 self.padding, self.dilation, self.scale, self.zero_point,
                                 self._relu, self.mode)

    # state dict: PyTorch's keys weight, bias, scale, zero_point
    def _extra_state(self):
        return [("weight", self.weight()), ("bias", self.bias())]

    def _load_extra(self, state, prefix):
        self.set_weight_bias(state["weight"], state["bias"])

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized conv of a calibrated float (fused, QAT, or QAT conv-bn) ``mod``."""
        float_mod = inner(mod, FloatConv2d, cls.__name__)
        scale, zp = output_qparams(mod, cls.__name__)
        weight, bias = float_mod.weight, float_mod.bias
        bn = getattr(mod, "bn", None)
        if bn is not None:                       # a QAT ConvBn: BN folded first
            weight, bias = _fold_bn(float_mod, bn)
        holder = _WeightHolder(weight, float_mod)
        w = float_weight_qparams(holder, cls.__name__)
        new = cls(float_mod.in_channels, float_mod.out_channels, float_mod.kernel_size,
                  float_mod.stride, float_mod.padding, float_mod.dilation, float_mod.groups,
                  bias is not None, float_mod.padding_mode)
        new.set_weight_bias(w, None if bias is None else bias.detach())
        new.scale, new.zero_point = scale, zp
        return new

    @classmethod
    def from_reference(cls, ref, output_scale, output_zero_point):
        w = ref.get_quantized_weight() if hasattr(ref, "get_quantized_weight") else ref.weight
        new = cls(ref.in_channels, ref.out_channels, ref.kernel_size, ref.stride,
                  ref.padding, ref.dilation, ref.groups, ref.bias is not None,
                  ref.padding_mode)
        new.set_weight_bias(w, None if ref.bias is None else ref.bias.detach())
        new._set_qparams(output_scale, output_zero_point, cls.__name__)
        return new


class _WeightHolder:
    """A module's weight (maybe BN-folded) with its qconfig / weight_fake_quant."""

    def __init__(self, weight, mod):
        self.weight = weight
        self.qconfig = getattr(mod, "qconfig", None)
        fake = getattr(mod, "weight_fake_quant", None)
        if fake is not None:
            self.weight_fake_quant = fake


class ConvReLU2d(Conv2d):
    """``relu(conv2d(x))`` fused: the ReLU is the epilogue's lower clamp at ``zero_point``."""
    _relu = True

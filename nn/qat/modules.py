"""Quantization-aware-training modules, as PyTorch's ``torch.ao.nn.qat``: a float layer whose
weight passes through ``weight_fake_quant`` (``qconfig.weight()``) in every forward, so that
training sees the rounding of the int8 weight; gradients go straight through."""
from __future__ import annotations

from .. import functional as F
from ..modules.conv import Conv1d as FloatConv1d
from ..modules.conv import Conv2d as FloatConv2d
from ..modules.conv import Conv3d as FloatConv3d
from ..modules.linear import Linear as FloatLinear

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d"]


def _need_qconfig(qconfig, what):
    if not qconfig:
        raise AssertionError(f"qconfig must be provided for QAT module {what}")


def _float_part(mod, cls):
    """The float layer of ``mod`` (itself, or ``mod[0]`` of a fused module), checked."""
    from ..intrinsic.modules import _FusedModule
    if not getattr(mod, "qconfig", None):
        raise AssertionError("Input float module must have a valid qconfig")
    layer = mod[0] if isinstance(mod, _FusedModule) else mod
    if type(layer) is not cls._FLOAT_MODULE:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                             f"{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
    return layer


class Linear(FloatLinear):
    """``linear(x, weight_fake_quant(weight), bias)``."""
    _FLOAT_MODULE = FloatLinear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        _need_qconfig(qconfig, type(self).__name__)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT module of a float (or fused) one, sharing its parameters."""
        return cls._from_layer(_float_part(mod, cls), mod.qconfig)

    @classmethod
    def _from_layer(cls, layer, qconfig):
        """The QAT module sharing the float ``layer``'s parameters."""
        qat = cls(layer.in_features, layer.out_features, bias=layer.bias is not None,
                  qconfig=qconfig)
        qat.weight, qat.bias = layer.weight, layer.bias
        return qat

    def to_float(self):
        linear = FloatLinear(self.in_features, self.out_features, self.bias is not None)
        linear.weight, linear.bias = self.weight, self.bias
        return linear


class _ConvQat:
    """What the QAT convolutions share: the fake-quantized weight in the forward."""
    _conv = None

    def _qat_init(self, qconfig):
        _need_qconfig(qconfig, type(self).__name__)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return self._convolve(self._conv, input, self.weight_fake_quant(self.weight),
                              self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls._from_layer(_float_part(mod, cls), mod.qconfig)

    @classmethod
    def _from_layer(cls, layer, qconfig):
        """The QAT module sharing the float ``layer``'s parameters."""
        qat = cls(layer.in_channels, layer.out_channels, layer.kernel_size,
                  stride=layer.stride, padding=layer.padding, dilation=layer.dilation,
                  groups=layer.groups, bias=layer.bias is not None,
                  padding_mode=layer.padding_mode, qconfig=qconfig)
        qat.weight, qat.bias = layer.weight, layer.bias
        return qat

    def to_float(self):
        conv = self._FLOAT_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                  self.stride, self.padding, self.dilation, self.groups,
                                  self.bias is not None, self.padding_mode)
        conv.weight, conv.bias = self.weight, self.bias
        return conv


def _conv_class(name, float_cls, conv):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", qconfig=None,
                 device=None, dtype=None):
        float_cls.__init__(self, in_channels, out_channels, kernel_size, stride, padding,
                           dilation, groups, bias, padding_mode, device, dtype)
        self._qat_init(qconfig)
    return type(name, (_ConvQat, float_cls),
                {"__init__": __init__, "_FLOAT_MODULE": float_cls, "_conv": staticmethod(conv),
                 "__module__": __name__,
                 "__doc__": f"{float_cls.__name__} with a fake-quantized weight."})


Conv1d = _conv_class("Conv1d", FloatConv1d, F.conv1d)
Conv2d = _conv_class("Conv2d", FloatConv2d, F.conv2d)
Conv3d = _conv_class("Conv3d", FloatConv3d, F.conv3d)

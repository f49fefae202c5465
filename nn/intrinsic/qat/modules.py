"""Fused quantization-aware-training modules, as PyTorch's ``torch.ao.nn.intrinsic.qat``:
``LinearReLU`` / ``ConvReLU2d`` (fake-quantized weight, then ReLU) and ``ConvBn2d`` /
``ConvBnReLU2d``, which train the batch norm while the convolution sees the weight the
quantized model will use, the BN scale folded in: ``w' = fake_quant(w * gamma / std)``,
``y = bn(conv(x, w') * std / gamma + b)`` (PyTorch's "approximate" fold: one forward)."""
from __future__ import annotations

from ... import functional as F
from ...modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from ...modules.conv import Conv1d, Conv2d, Conv3d
from ...qat import modules as nnqat
from ...tensor import zeros
from .. import modules as nni

__all__ = ["LinearReLU", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "ConvBn1d", "ConvBn2d",
           "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "freeze_bn_stats",
           "update_bn_stats"]


class LinearReLU(nnqat.Linear):
    """``relu(linear(x, weight_fake_quant(weight), bias))``; from an ``nni.LinearReLU``."""
    _FLOAT_MODULE = nni.LinearReLU
    _is_fused_module = True

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not nni.LinearReLU:
            raise AssertionError(f"qat.LinearReLU.from_float only works for LinearReLU, got "
                                 f"{type(mod).__name__}")
        return cls._from_layer(mod[0], mod.qconfig)


def _conv_relu(name, base, fused):
    def forward(self, input):
        return F.relu(base.forward(self, input))

    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not fused:
            raise AssertionError(f"qat.{name}.from_float only works for {fused.__name__}, "
                                 f"got {type(mod).__name__}")
        return cls._from_layer(mod[0], mod.qconfig)
    return type(name, (base,), {"forward": forward, "from_float": classmethod(from_float),
                                "_FLOAT_MODULE": fused, "__module__": __name__,
                                "_is_fused_module": True,
                                "__doc__": f"qat.{base.__name__}, then ReLU."})


ConvReLU1d = _conv_relu("ConvReLU1d", nnqat.Conv1d, nni.ConvReLU1d)
ConvReLU2d = _conv_relu("ConvReLU2d", nnqat.Conv2d, nni.ConvReLU2d)
ConvReLU3d = _conv_relu("ConvReLU3d", nnqat.Conv3d, nni.ConvReLU3d)


class _ConvBnNd:
    """Conv + BatchNorm trained with the BN scale folded into the fake-quantized weight."""
    _FLOAT_CONV_MODULE = _FLOAT_BN_MODULE = _FLOAT_MODULE = None
    _relu = False
    _conv = None
    _is_fused_module = True

    def _setup(self, out_channels, bias, eps, momentum, freeze_bn, qconfig):
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = self._FLOAT_BN_MODULE(out_channels, eps, momentum, True, True)
        self.weight_fake_quant = qconfig.weight()
        if not bias:
            self.bias = None
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def reset_bn_parameters(self):
        self.bn.reset_running_stats()
        self.bn.reset_parameters()

    def update_bn_stats(self):
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _forward(self, input):
        running_std = (self.bn.running_var + self.bn.eps).sqrt()
        scale_factor = self.bn.weight / running_std
        ndim = self.weight.ndim
        weight_shape = [-1] + [1] * (ndim - 1)
        bias_shape = [1, -1] + [1] * (ndim - 2)
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        zero_bias = zeros(self.out_channels, dtype=input.dtype, device=input.device)
        conv = self._convolve(self._conv, input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        out = self.bn(conv_orig)
        return F.relu(out) if self._relu else out

    def forward(self, input):
        return self._forward(input)

    def train(self, mode=True):
        """As PyTorch's: a frozen BN keeps its mode."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat.weight, qat.bias = conv.weight, conv.bias
        qat.bn.weight, qat.bn.bias = bn.weight, bn.bias
        qat.bn.running_mean, qat.bn.running_var = bn.running_mean, bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat

    def to_float(self):
        """The float conv with the BN folded in (eval-mode statistics)."""
        from ...quantization.fuse_modules import fuse_conv_bn_weights
        conv = self._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                       self.stride, self.padding, self.dilation, self.groups,
                                       True, self.padding_mode)
        conv.weight, conv.bias = fuse_conv_bn_weights(
            self.weight, self.bias, self.bn.running_mean, self.bn.running_var, self.bn.eps,
            self.bn.weight, self.bn.bias)
        if self._relu:
            from ...modules.activation import ReLU
            fused = {Conv1d: nni.ConvReLU1d, Conv2d: nni.ConvReLU2d,
                     Conv3d: nni.ConvReLU3d}[self._FLOAT_CONV_MODULE]
            return fused(conv, ReLU())
        return conv


def _conv_bn(name, conv_cls, bn_cls, fused, conv_fn, relu):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None):
        conv_cls.__init__(self, in_channels, out_channels, kernel_size, stride, padding,
                          dilation, groups, True, padding_mode)
        _ConvBnNd._setup(self, out_channels, bias, eps, momentum, freeze_bn, qconfig)
    return type(name, (_ConvBnNd, conv_cls), {
        "__init__": __init__, "_FLOAT_CONV_MODULE": conv_cls, "_FLOAT_BN_MODULE": bn_cls,
        "_FLOAT_MODULE": fused, "_conv": staticmethod(conv_fn), "_relu": relu,
        "__module__": __name__,
        "__doc__": f"{conv_cls.__name__} + {bn_cls.__name__}{' + ReLU' if relu else ''} for "
                   "QAT, the BN scale folded into the fake-quantized weight."})


ConvBn1d = _conv_bn("ConvBn1d", Conv1d, BatchNorm1d, nni.ConvBn1d, F.conv1d, False)
ConvBn2d = _conv_bn("ConvBn2d", Conv2d, BatchNorm2d, nni.ConvBn2d, F.conv2d, False)
ConvBn3d = _conv_bn("ConvBn3d", Conv3d, BatchNorm3d, nni.ConvBn3d, F.conv3d, False)
ConvBnReLU1d = _conv_bn("ConvBnReLU1d", Conv1d, BatchNorm1d, nni.ConvBnReLU1d, F.conv1d, True)
ConvBnReLU2d = _conv_bn("ConvBnReLU2d", Conv2d, BatchNorm2d, nni.ConvBnReLU2d, F.conv2d, True)
ConvBnReLU3d = _conv_bn("ConvBnReLU3d", Conv3d, BatchNorm3d, nni.ConvBnReLU3d, F.conv3d, True)


def update_bn_stats(mod):
    """For ``model.apply``: let the QAT conv-bn modules update their BN statistics."""
    if isinstance(mod, _ConvBnNd):
        mod.update_bn_stats()


def freeze_bn_stats(mod):
    """For ``model.apply``: freeze the BN statistics of the QAT conv-bn modules."""
    if isinstance(mod, _ConvBnNd):
        mod.freeze_bn_stats()

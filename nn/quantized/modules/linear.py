"""``nn.quantized.Linear`` and the fused ``LinearReLU`` (PyTorch's
``torch.ao.nn.quantized.Linear`` / ``torch.ao.nn.intrinsic.quantized.LinearReLU``): quint8 in
and out, qint8 weights (per tensor or per output channel) packed once, float bias; one te
kernel per call (``nn.ops.quantized.qlinear``)."""
from __future__ import annotations

import numpy as np

from ...modules.linear import Linear as FloatLinear
from ...tensor import Tensor
from .. import functional_layers as qfl
from ..dtypes import qint8
from ..qgemm import PackedWeight, check_mode
from ..qtensor import QTensor, quantize_per_tensor
from .utils import QuantizedModule, float_weight_qparams, inner, output_qparams

__all__ = ["Linear", "LinearReLU"]


class Linear(QuantizedModule):
    """A quantized linear layer: ``y = x @ w^T + b`` quantized to ``(scale, zero_point)``.
    ``mode`` ("float", as PyTorch, or "integer", gemmlowp) picks the requantization."""
    _FLOAT_MODULE = FloatLinear
    _relu = False

    def __init__(self, in_features, out_features, bias_=True, dtype=qint8):
        super().__init__()
        if dtype != qint8:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.scale, self.zero_point = 1.0, 0
        self.mode = "float"
        w = quantize_per_tensor(Tensor(np.zeros((self.out_features, self.in_features),
                                                "float32")), 1.0, 0, qint8)
        b = Tensor(np.zeros(self.out_features, "float32")) if bias_ else None
        self.set_weight_bias(w, b)

    def _get_name(self):
        return "QuantizedLinearReLU" if self._relu else "QuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()!r}")

    def set_weight_bias(self, w: QTensor, b=None):
        """Set (and pack) the qint8 weight ``w`` (out_features, in_features) and float bias."""
        if tuple(w.shape) != (self.out_features, self.in_features):
            raise RuntimeError(f"set_weight_bias: the weight must have shape "
                               f"({self.out_features}, {self.in_features}), got "
                               f"{tuple(w.shape)}")
        self._packed = PackedWeight(w, b)

    def weight(self) -> QTensor:
        return self._packed.weight

    def bias(self):
        return self._packed.bias

    def forward(self, x):
        check_mode(self.mode, self._get_name())
        return qfl.linear_packed(x, self._packed, self.scale, self.zero_point, self._relu,
                                 self.mode)

    # state dict: PyTorch's keys (scale, zero_point, _packed_params.dtype,
    # _packed_params._packed_params = (weight, bias))
    def _extra_state_after(self):
        return [("_packed_params.dtype", "qint8"),
                ("_packed_params._packed_params", (self.weight(), self.bias()))]

    def _load_extra(self, state, prefix):
        w, b = state["_packed_params._packed_params"]
        self.set_weight_bias(w, b)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized layer of a calibrated float (fused, or QAT) ``mod``."""
        float_mod = inner(mod, FloatLinear, cls.__name__)
        scale, zp = output_qparams(mod, cls.__name__)
        w = float_weight_qparams(float_mod, cls.__name__)
        new = cls(float_mod.in_features, float_mod.out_features,
                  float_mod.bias is not None)
        new.set_weight_bias(w, None if float_mod.bias is None else float_mod.bias.detach())
        new.scale, new.zero_point = scale, zp
        return new

    @classmethod
    def from_reference(cls, ref, output_scale, output_zero_point):
        """From a reference module: ``ref.get_quantized_weight()`` (or a QTensor
        ``ref.weight``) and ``ref.bias``."""
        w = ref.get_quantized_weight() if hasattr(ref, "get_quantized_weight") else ref.weight
        new = cls(ref.in_features, ref.out_features, ref.bias is not None)
        new.set_weight_bias(w, None if ref.bias is None else ref.bias.detach())
        new._set_qparams(output_scale, output_zero_point, cls.__name__)
        return new


class LinearReLU(Linear):
    """``relu(linear(x))`` fused: the ReLU is the epilogue's lower clamp at ``zero_point``."""
    _relu = True

    def __init__(self, in_features, out_features, bias=True, dtype=qint8):
        super().__init__(in_features, out_features, bias, dtype)

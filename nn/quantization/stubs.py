"""``QuantStub`` / ``DeQuantStub`` / ``QuantWrapper`` (PyTorch's ``torch.ao.quantization.stubs``):
where the float model's input becomes quantized and its output float again; and the modules
``convert`` turns them into, ``Quantize`` and ``DeQuantize`` (PyTorch's
``torch.ao.nn.quantized.Quantize`` / ``DeQuantize``)."""
from __future__ import annotations

import numpy as np

from ..modules.module import Module
from ..quantized.dtypes import as_qdtype
from ..quantized.qtensor import QTensor, quantize_per_tensor
from ..tensor import Tensor

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper", "Quantize", "DeQuantize"]


class QuantStub(Module):
    """The identity before preparation; observed by ``prepare``; ``convert`` makes it a
    ``Quantize`` with the observed parameters."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(Module):
    """The identity before conversion; ``convert`` makes it a ``DeQuantize``."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(Module):
    """``dequant(module(quant(x)))``: a float module made quantizable as a whole."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))


class Quantize(Module):
    """Quantizes its float input per tensor with ``(scale, zero_point, dtype)``; ``scale`` and
    ``zero_point`` are buffers (in ``state_dict``, as PyTorch's)."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        self.register_buffer("scale", Tensor(np.array([float(scale)], np.float32)))
        self.register_buffer("zero_point", Tensor(np.array([int(zero_point)], np.int64)))
        self.dtype = as_qdtype(dtype, "Quantize")

    def forward(self, X):
        if isinstance(X, QTensor):
            raise RuntimeError("Quantize: the input is already quantized")
        return quantize_per_tensor(X, float(self.scale.item()), int(self.zero_point.item()),
                                   self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        """The Quantize of a calibrated ``QuantStub`` (its ``activation_post_process``)."""
        observer = mod.activation_post_process
        scale, zero_point = observer.calculate_qparams()
        return Quantize(float(scale.numpy().reshape(-1)[0]),
                        int(zero_point.numpy().reshape(-1)[0]), observer.dtype)

    def extra_repr(self):
        return (f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype!r}")


class DeQuantize(Module):
    """Dequantizes its quantized input to float32."""

    def forward(self, Xq):
        if not isinstance(Xq, QTensor):
            raise RuntimeError("DeQuantize: the input is not a quantized tensor (got "
                               f"{type(Xq).__name__})")
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return DeQuantize()



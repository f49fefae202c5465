"""``QuantStub`` / ``DeQuantStub`` / ``QuantWrapper`` (PyTorch's ``torch.ao.quantization.stubs``):
where the float model's input becomes quantized and its output float again (``convert`` makes
them ``nn.quantized.Quantize`` / ``DeQuantize``)."""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


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

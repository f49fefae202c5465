"""Quantized modules (PyTorch's ``torch.ao.nn.quantized.modules``)."""
from .functional_modules import FloatFunctional, QFunctional  # noqa: F401

__all__ = ["FloatFunctional", "QFunctional"]

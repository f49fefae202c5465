"""Quantized modules (PyTorch's ``torch.ao.nn.quantized.modules``)."""
from .conv import Conv2d, ConvReLU2d  # noqa: F401
from .functional_modules import FloatFunctional, QFunctional  # noqa: F401
from .layers import (AdaptiveAvgPool2d, BatchNorm2d, DeQuantize, Embedding,  # noqa: F401
                     MaxPool2d, Quantize, ReLU, ReLU6)
from .linear import Linear, LinearReLU  # noqa: F401

__all__ = ["FloatFunctional", "QFunctional", "Linear", "LinearReLU", "Conv2d", "ConvReLU2d",
           "Quantize", "DeQuantize", "ReLU", "ReLU6", "MaxPool2d", "AdaptiveAvgPool2d",
           "BatchNorm2d", "Embedding"]

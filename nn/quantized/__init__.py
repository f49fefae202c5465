"""nn.quantized, PyTorch's ``torch.ao.nn.quantized``: quantized tensors (``QTensor``, made by
``nn.quantize_per_tensor`` / ``nn.quantize_per_channel``), their te kernels
(``nn.quantized.kernels``; the products in ``nn.ops.quantized``), the quantized operators
(``nn.quantized.functional``) and modules (``Linear``, ``Conv2d``, ``LinearReLU``,
``ConvReLU2d``, ``ReLU``, ``ReLU6``, ``BatchNorm2d``, ``MaxPool2d``, ``AdaptiveAvgPool2d``,
``Embedding``, ``Quantize``, ``DeQuantize``, ``FloatFunctional``, ``QFunctional``)."""
from .dtypes import (qdtype, qint8, qint32, qscheme, quint8, per_channel_affine,
                     per_channel_symmetric, per_tensor_affine, per_tensor_symmetric)
from .qtensor import QTensor, quantize_per_channel, quantize_per_tensor
from . import functional, kernels
from .modules import (AdaptiveAvgPool2d, BatchNorm2d, Conv2d, ConvReLU2d, DeQuantize,
                      Embedding, FloatFunctional, Linear, LinearReLU, MaxPool2d, QFunctional,
                      Quantize, ReLU, ReLU6)

__all__ = ["qdtype", "qint8", "qint32", "qscheme", "quint8", "per_channel_affine",
           "per_channel_symmetric", "per_tensor_affine", "per_tensor_symmetric", "QTensor",
           "quantize_per_channel", "quantize_per_tensor", "functional", "kernels",
           "FloatFunctional", "QFunctional", "Linear", "LinearReLU", "Conv2d", "ConvReLU2d",
           "Quantize", "DeQuantize", "ReLU", "ReLU6", "MaxPool2d", "AdaptiveAvgPool2d",
           "BatchNorm2d", "Embedding"]

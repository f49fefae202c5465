"""nn.quantized, PyTorch's ``torch.ao.nn.quantized``: quantized tensors (``QTensor``, made by
``nn.quantize_per_tensor`` / ``nn.quantize_per_channel``), their te kernels
(``nn.quantized.kernels``), the quantized operators (``nn.quantized.functional``) and modules
(``FloatFunctional``, ``QFunctional``)."""
from .dtypes import (qdtype, qint8, qint32, qscheme, quint8, per_channel_affine,
                     per_channel_symmetric, per_tensor_affine, per_tensor_symmetric)
from .qtensor import QTensor, quantize_per_channel, quantize_per_tensor
from . import functional, kernels
from .modules import FloatFunctional, QFunctional

__all__ = ["qdtype", "qint8", "qint32", "qscheme", "quint8", "per_channel_affine",
           "per_channel_symmetric", "per_tensor_affine", "per_tensor_symmetric", "QTensor",
           "quantize_per_channel", "quantize_per_tensor", "functional", "kernels",
           "FloatFunctional", "QFunctional"]

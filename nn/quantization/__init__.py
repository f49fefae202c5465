"""nn.quantization, PyTorch's ``torch.ao.quantization``: the quantization flow. This slice
has ``requantize`` (float and TFLite/gemmlowp integer arithmetic) and TFLite's
``quantize_multiplier``; observers, ``prepare`` / ``convert`` and QAT come later."""
from ..quantized.functional import requantize  # noqa: F401
from ..quantized.kernels import quantize_multiplier  # noqa: F401

__all__ = ["requantize", "quantize_multiplier"]

"""nn.intrinsic.quantized, PyTorch's ``torch.ao.nn.intrinsic.quantized``: the fused quantized
layers, which live in ``nn.quantized`` (one te kernel each, the ReLU in the epilogue)."""
from ...quantized.modules import ConvReLU2d, LinearReLU  # noqa: F401

__all__ = ["ConvReLU2d", "LinearReLU"]

"""nn.qat, PyTorch's ``torch.ao.nn.qat``: float layers with fake-quantized weights for
quantization-aware training (made by ``nn.quantization.prepare_qat``)."""
from .modules import Conv1d, Conv2d, Conv3d, Linear  # noqa: F401

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d"]

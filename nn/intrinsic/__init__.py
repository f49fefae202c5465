"""nn.intrinsic, PyTorch's ``torch.ao.nn.intrinsic``: the fused float modules made by
``nn.quantization.fuse_modules`` (``ConvReLU2d``, ``LinearReLU``, ``ConvBn2d``, ...); in
``nn.intrinsic.qat`` their quantization-aware-training versions, in
``nn.intrinsic.quantized`` the quantized ones."""
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import qat  # noqa: F401,E402
from . import quantized  # noqa: F401,E402

__all__ = list(_modules_all) + ["qat", "quantized"]

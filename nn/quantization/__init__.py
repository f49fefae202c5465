"""nn.quantization, PyTorch's ``torch.ao.quantization``: the eager-mode quantization flow.

Observers (``MinMaxObserver``, ``HistogramObserver``, ...) record statistics and give
``(scale, zero_point)``; ``FakeQuantize`` simulates quantization in training; ``QConfig`` /
``get_default_qconfig`` say which observers a module gets; ``QuantStub`` / ``DeQuantStub``
mark where tensors become quantized and float again; ``fuse_modules``, ``prepare`` /
``prepare_qat`` and ``convert`` run the flow (module swaps through mapping dicts). Also
``requantize`` (float and TFLite/gemmlowp integer arithmetic) and TFLite's
``quantize_multiplier``.
"""
from ..quantized.functional import requantize  # noqa: F401
from ..quantized.kernels import quantize_multiplier  # noqa: F401
from .observer import *  # noqa: F401,F403
from .observer import __all__ as _observer_all
from .histogram import HistogramObserver, default_histogram_observer  # noqa: F401
from .fake_quantize import *  # noqa: F401,F403
from .fake_quantize import __all__ as _fake_quantize_all
from .qconfig import *  # noqa: F401,F403
from .qconfig import __all__ as _qconfig_all
from .stubs import DeQuantStub, QuantStub, QuantWrapper  # noqa: F401
from .fuse_modules import *  # noqa: F401,F403
from .fuse_modules import __all__ as _fuse_all
from .quantization_mappings import *  # noqa: F401,F403
from .quantization_mappings import __all__ as _mappings_all
from .quantize import *  # noqa: F401,F403
from .quantize import __all__ as _quantize_all

__all__ = (["requantize", "quantize_multiplier", "HistogramObserver",
            "default_histogram_observer", "QuantStub",
            "DeQuantStub", "QuantWrapper"] + _observer_all
           + _fake_quantize_all + _qconfig_all + _fuse_all + _mappings_all + _quantize_all)

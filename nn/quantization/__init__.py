"""nn.quantization, PyTorch's ``torch.ao.quantization``: the eager-mode quantization flow.

Observers (``MinMaxObserver``, ``HistogramObserver``, ...) record statistics and give
``(scale, zero_point)``; ``FakeQuantize`` simulates quantization in training; ``QConfig`` /
``get_default_qconfig`` say which observers a module gets; ``QuantStub`` / ``DeQuantStub``
mark where tensors become quantized and float again. Also ``requantize`` (float and
TFLite/gemmlowp integer arithmetic) and TFLite's ``quantize_multiplier``.
"""
from ..quantized.functional import requantize  # noqa: F401
from ..quantized.kernels import quantize_multiplier  # noqa: F401
from .observer import *  # noqa: F401,F403
from .observer import __all__ as _observer_all
from .histogram import HistogramObserver  # noqa: F401
from .fake_quantize import *  # noqa: F401,F403
from .fake_quantize import __all__ as _fake_quantize_all
from .qconfig import *  # noqa: F401,F403
from .qconfig import __all__ as _qconfig_all
from .stubs import DeQuantStub, DeQuantize, Quantize, QuantStub, QuantWrapper  # noqa: F401

__all__ = (["requantize", "quantize_multiplier", "HistogramObserver", "QuantStub",
            "DeQuantStub", "QuantWrapper", "Quantize", "DeQuantize"] + _observer_all
           + _fake_quantize_all + _qconfig_all)

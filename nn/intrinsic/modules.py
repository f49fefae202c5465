"""Fused float modules, as PyTorch's ``torch.ao.nn.intrinsic``: containers (``Sequential``)
of the modules that ``fuse_modules`` merged, so that quantization treats them as one layer
(one observer after the last one, one quantized module after ``convert``)."""
from __future__ import annotations

import collections

from ..modules.activation import ReLU
from ..modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from ..modules.container import Sequential
from ..modules.conv import Conv1d, Conv2d, Conv3d
from ..modules.linear import Linear

__all__ = ["_FusedModule", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU",
           "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "BNReLU2d", "BNReLU3d", "LinearBn1d"]


class _FusedModule(Sequential):
    """The base of fused modules: a Sequential whose parts have checked types."""
    _parts: tuple = ()

    def __init__(self, *modules):
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            modules = tuple(modules[0].values())        # Sequential's slicing
        if len(modules) != len(self._parts) or not all(
                type(m) is kind for m, kind in zip(modules, self._parts)):
            names = ", ".join(k.__name__ for k in self._parts)
            got = ", ".join(type(m).__name__ for m in modules)
            raise AssertionError(f"Incorrect types for input modules of {type(self).__name__}"
                                 f": expected ({names}), got ({got})")
        super().__init__(*modules)


def _fused(name, parts, doc):
    return type(name, (_FusedModule,), {"_parts": parts, "__doc__": doc,
                                        "__module__": __name__})


ConvReLU1d = _fused("ConvReLU1d", (Conv1d, ReLU), "Conv1d then ReLU.")
ConvReLU2d = _fused("ConvReLU2d", (Conv2d, ReLU), "Conv2d then ReLU.")
ConvReLU3d = _fused("ConvReLU3d", (Conv3d, ReLU), "Conv3d then ReLU.")
LinearReLU = _fused("LinearReLU", (Linear, ReLU), "Linear then ReLU.")
ConvBn1d = _fused("ConvBn1d", (Conv1d, BatchNorm1d), "Conv1d then BatchNorm1d (for QAT).")
ConvBn2d = _fused("ConvBn2d", (Conv2d, BatchNorm2d), "Conv2d then BatchNorm2d (for QAT).")
ConvBn3d = _fused("ConvBn3d", (Conv3d, BatchNorm3d), "Conv3d then BatchNorm3d (for QAT).")
ConvBnReLU1d = _fused("ConvBnReLU1d", (Conv1d, BatchNorm1d, ReLU),
                      "Conv1d, BatchNorm1d, ReLU (for QAT).")
ConvBnReLU2d = _fused("ConvBnReLU2d", (Conv2d, BatchNorm2d, ReLU),
                      "Conv2d, BatchNorm2d, ReLU (for QAT).")
ConvBnReLU3d = _fused("ConvBnReLU3d", (Conv3d, BatchNorm3d, ReLU),
                      "Conv3d, BatchNorm3d, ReLU (for QAT).")
BNReLU2d = _fused("BNReLU2d", (BatchNorm2d, ReLU), "BatchNorm2d then ReLU.")
BNReLU3d = _fused("BNReLU3d", (BatchNorm3d, ReLU), "BatchNorm3d then ReLU.")
LinearBn1d = _fused("LinearBn1d", (Linear, BatchNorm1d), "Linear then BatchNorm1d (for QAT).")

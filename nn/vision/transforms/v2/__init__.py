"""``nn.vision.transforms.v2``, as ``torchvision.transforms.v2``: the same transforms under the
v2 names (``Compose``, ``Resize``, ``ToTensor``...), plus ``ToImage`` (a uint8 ``(C, H, W)``
tensor, unscaled), ``ToDtype`` and ``ToPureTensor``. Inputs and outputs are as in v1; v2's
bounding boxes / masks (tv_tensors) are not modelled."""
from __future__ import annotations

import numpy as np

from ....tensor import Tensor, from_numpy
from .. import functional  # noqa: F401
from ..autoaugment import (AutoAugment, AutoAugmentPolicy, RandAugment,  # noqa: F401
                           TrivialAugmentWide)
from ..functional import InterpolationMode  # noqa: F401
from ..transforms import *  # noqa: F401,F403
from ..transforms import Transform
from ..transforms import __all__ as _v1

__all__ = list(_v1) + ["ToImage", "ToDtype", "ToPureTensor", "InterpolationMode",
                       "AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide",
                       "functional"]


class ToImage(Transform):
    """PIL / numpy ``(H, W, C)`` / tensor -> a ``(C, H, W)`` tensor of the same dtype."""

    def forward(self, img):
        if isinstance(img, Tensor):
            return img
        if isinstance(img, np.ndarray):
            a = img[:, :, None] if img.ndim == 2 else img
            return from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))
        return functional.pil_to_tensor(img)


class ToDtype(Transform):
    """The image cast to ``dtype``; with ``scale=True`` its values rescaled between the
    integer and float ranges (uint8 [0, 255] <-> float [0, 1])."""

    def __init__(self, dtype, scale=False):
        self.dtype, self.scale = dtype, scale

    def forward(self, img):
        if self.scale:
            return functional.convert_image_dtype(img, self.dtype)
        return img.to(self.dtype)


class ToPureTensor(Transform):
    def forward(self, img):
        return img

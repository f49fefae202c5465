"""``nn.vision.transforms``, as ``torchvision.transforms``: the transform classes, the
``functional`` module, the augmentation policies, and ``v2``. Images are PIL images (when
Pillow is installed), ``nn.Tensor`` ``(..., C, H, W)``, or numpy ``(H, W, C)`` / ``(H, W)``."""
from . import functional  # noqa: F401
from .autoaugment import (AutoAugment, AutoAugmentPolicy, RandAugment,  # noqa: F401
                          TrivialAugmentWide)
from .functional import InterpolationMode  # noqa: F401
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all
from . import v2  # noqa: F401,E402

__all__ = list(_transforms_all) + ["functional", "InterpolationMode", "AutoAugment",
                                   "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide",
                                   "v2"]

import torch

from nn.vision.transforms import functional as _F
from nn.vision.transforms import Compose, Resize  # noqa: F401  (PIL in, PIL out)

from . import v2  # noqa: F401


class ToTensor:
    def __call__(self, pic):
        return torch.from_numpy(_F.to_tensor(pic).numpy().copy())

"""``FakeData``: random images and labels, sample ``i`` drawn from a generator seeded with
``i + random_offset`` (as torchvision's), so a sample is the same each time it is read."""
from __future__ import annotations

import numpy as np

from ...random import Generator
from .vision import VisionDataset, to_image

__all__ = ["FakeData"]


class FakeData(VisionDataset):
    """``size`` samples of ``image_size`` (C, H, W) normal noise as images, with labels in
    ``[0, num_classes)``."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size, self.image_size = int(size), tuple(image_size)
        self.num_classes, self.random_offset = int(num_classes), int(random_offset)
        if len(self.image_size) != 3 or self.image_size[0] not in (1, 3, 4):
            raise ValueError(f"FakeData: image_size must be (C, H, W) with C in 1, 3, 4, got "
                             f"{image_size}")

    def __getitem__(self, index):
        index = int(index)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        g = Generator().manual_seed(index + self.random_offset)
        noise = g.standard_normal(self.image_size).astype(np.float32)
        target = int(g.integers(0, self.num_classes))
        # ToPILImage of a float image: mul(255), then byte() (which wraps, as torch's cast)
        pixels = (noise * 255).astype(np.int64).astype(np.uint8).transpose(1, 2, 0)
        return self._apply(to_image(pixels[..., 0] if pixels.shape[2] == 1 else pixels), target)

    def __len__(self):
        return self.size

"""The base of the vision datasets, as torchvision's ``VisionDataset``: a root folder and the
``transform`` / ``target_transform`` (or a joint ``transforms``) applied to each sample."""
from __future__ import annotations

import os

from ...data.dataset import Dataset

__all__ = ["VisionDataset", "pil_module", "to_image"]


def pil_module():
    """``PIL.Image``, or None where Pillow is not installed."""
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


def to_image(array):
    """A uint8 ``(H, W)`` / ``(H, W, C)`` array as a PIL image (as torchvision's datasets return
    samples), or the array itself where Pillow is not installed."""
    image = pil_module()
    if image is None:
        return array
    return image.fromarray(array)


class _Joint:
    """``transforms`` made from a ``transform`` and a ``target_transform``."""

    def __init__(self, transform, target_transform):
        self.transform, self.target_transform = transform, target_transform

    def __call__(self, sample, target):
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target


class VisionDataset(Dataset):
    """A dataset under ``root`` whose samples go through ``transform`` (the input) and
    ``target_transform`` (the label), or ``transforms`` (both at once; not with the others)."""

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        has_separate = transform is not None or target_transform is not None
        if transforms is not None and has_separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as "
                             "argument")
        self.transform, self.target_transform = transform, target_transform
        self.transforms = _Joint(transform, target_transform) if has_separate else transforms

    def _apply(self, sample, target):
        return self.transforms(sample, target) if self.transforms is not None else (sample,
                                                                                     target)

    def __len__(self):
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        lines = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"Root location: {self.root}")
        lines += [line for line in self.extra_repr().splitlines() if line]
        for name, label in (("transform", "Transform"), ("target_transform",
                                                           "Target transform")):
            if getattr(self, name) is not None:
                lines.append(f"{label}: {getattr(self, name)!r}")
        body = "\n".join("    " + line for line in lines)
        return f"Dataset {type(self).__name__}\n{body}"

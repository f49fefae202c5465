"""``nn.vision.utils``, as ``torchvision.utils``: ``make_grid`` (a batch of images tiled into
one, with torchvision's padding, normalization and grey-to-RGB rules) and ``save_image``."""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor, from_numpy

__all__ = ["make_grid", "save_image"]


def _normalize(a, value_range):
    low, high = value_range if value_range is not None else (float(a.min()), float(a.max()))
    a = np.clip(a, low, high)
    return (a - a.dtype.type(low)) / a.dtype.type(max(high - low, 1e-5))


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0) -> Tensor:
    """Images ``(B, C, H, W)`` (or a list of ``(C, H, W)``) tiled ``nrow`` to a row."""
    if isinstance(tensor, list):
        if not all(isinstance(t, Tensor) for t in tensor):
            raise TypeError(f"tensor or list of tensors expected, got a list containing "
                            f"{sorted({type(t).__name__ for t in tensor})}")
        a = np.stack([t.detach().numpy() for t in tensor])
    elif isinstance(tensor, Tensor):
        a = tensor.detach().numpy()
    else:
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor).__name__}")
    if a.ndim == 2:
        a = a[None]
    if a.ndim == 3:
        a = (np.concatenate([a, a, a], 0) if a.shape[0] == 1 else a)[None]
    if a.ndim == 4 and a.shape[1] == 1:
        a = np.concatenate([a, a, a], 1)
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max "
                            "are numbers")
        a = (np.stack([_normalize(t, value_range) for t in a]) if scale_each
             else _normalize(a, value_range)).astype(a.dtype)
    if a.shape[0] == 1:
        return from_numpy(np.ascontiguousarray(a[0]))
    nmaps = a.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = a.shape[2] + padding, a.shape[3] + padding
    grid = np.full((a.shape[1], height * ymaps + padding, width * xmaps + padding), pad_value,
                   a.dtype)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid[:, y * height + padding:(y + 1) * height,
             x * width + padding:(x + 1) * width] = a[k]
    return from_numpy(grid)


def save_image(tensor, fp, format=None, **kwargs):
    """``make_grid(tensor, **kwargs)`` written as an image file (values in [0, 1] -> 0-255,
    rounded, as torchvision's)."""
    from PIL import Image
    grid = make_grid(tensor, **kwargs).numpy()
    pixels = np.clip(grid * 255 + 0.5, 0, 255).transpose(1, 2, 0).astype(np.uint8)
    Image.fromarray(pixels).save(fp, format=format)

"""The transforms on PIL images, as torchvision's ``_functional_pil``: Pillow's own resampling,
rotation, enhancement and ImageOps (so results equal torchvision's on the same image)."""
from __future__ import annotations

import numpy as np

__all__ = ["is_pil", "resize", "rotate", "affine", "adjust_hue", "to_grayscale", "enhance",
           "imageops", "to_array", "from_array"]

_INTERPOLATION = {"nearest": 0, "bilinear": 2, "bicubic": 3, "box": 4, "hamming": 5,
                  "lanczos": 1, "nearest-exact": 0}


def _image():
    from PIL import Image
    return Image


def is_pil(img) -> bool:
    try:
        from PIL import Image
    except ImportError:
        return False
    return isinstance(img, Image.Image)


def to_array(img) -> np.ndarray:
    """A PIL image as ``(C, H, W)``."""
    a = np.asarray(img)
    return (a[None] if a.ndim == 2 else a.transpose(2, 0, 1)).copy()


def from_array(a, like):
    """``(C, H, W)`` back to a PIL image of ``like``'s mode."""
    out = a[0] if a.shape[0] == 1 else a.transpose(1, 2, 0)
    return _image().fromarray(np.ascontiguousarray(out.astype(np.asarray(like).dtype)))


def _fill(fill, img):
    if fill is None:
        return {}
    bands = len(img.getbands())
    if isinstance(fill, (int, float)) and bands > 1:
        fill = tuple([fill] * bands)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = fill * bands
        if len(fill) != bands:
            raise ValueError(f"The number of elements in 'fill' does not match the number of "
                             f"bands of the image ({len(fill)} != {bands})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, tuple) else int(fill)
    return {"fillcolor": fill}


def resize(img, size, interpolation):
    h, w = size
    return img.resize((w, h), _INTERPOLATION[interpolation])


def rotate(img, angle, interpolation, expand, center, fill):
    return img.rotate(angle, _INTERPOLATION[interpolation], expand, center, **_fill(fill, img))


def affine(img, matrix, interpolation, fill):
    return img.transform(img.size, _image().AFFINE, matrix, _INTERPOLATION[interpolation],
                         **_fill(fill, img))


def adjust_hue(img, factor):
    if not -0.5 <= factor <= 0.5:
        raise ValueError(f"hue_factor ({factor}) is not in [-0.5, 0.5].")
    mode = img.mode
    if mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    hue = np.array(h, dtype=np.uint8)
    hue += np.array(int(factor * 255)).astype(np.uint8)       # wraps, as torchvision's
    image = _image()
    return image.merge("HSV", (image.fromarray(hue), s, v)).convert(mode)


def to_grayscale(img, num_output_channels):
    gray = img.convert("L")
    if num_output_channels == 3:
        a = np.asarray(gray)
        return _image().fromarray(np.dstack([a, a, a]))
    return gray


def enhance(img, kind, factor):
    from PIL import ImageEnhance
    return getattr(ImageEnhance, kind)(img).enhance(factor)


def imageops(img, name, *args):
    from PIL import ImageOps
    return getattr(ImageOps, name)(img, *args)

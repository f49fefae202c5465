"""``nn.vision.transforms.functional``, as torchvision's: each function takes a PIL image
(Pillow does the work, as in torchvision), an ``nn.Tensor`` ``(..., C, H, W)`` or a numpy image
``(H, W, C)`` / ``(H, W)`` (both computed by ``_array``, torchvision's tensor arithmetic) and
returns the same kind."""
from __future__ import annotations

import enum
import numbers

import numpy as np

from ...tensor import Tensor, from_numpy
from . import _array as A
from . import _pil as P

__all__ = ["InterpolationMode", "to_tensor", "pil_to_tensor", "to_pil_image", "normalize",
           "resize", "crop", "center_crop", "resized_crop", "hflip", "vflip", "pad", "rotate",
           "affine", "five_crop", "ten_crop", "rgb_to_grayscale", "to_grayscale",
           "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "adjust_sharpness", "posterize", "solarize", "autocontrast", "equalize", "invert",
           "erase", "get_dimensions", "get_image_size", "get_image_num_channels",
           "convert_image_dtype"]


class InterpolationMode(enum.Enum):
    """torchvision's interpolation names."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _mode(interpolation) -> str:
    if isinstance(interpolation, InterpolationMode):
        return interpolation.value
    if isinstance(interpolation, int):      # PIL's constants, as torchvision accepts them
        table = {0: "nearest", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming",
                 1: "lanczos"}
        if interpolation in table:
            return table[interpolation]
    if isinstance(interpolation, str) and interpolation in {m.value for m in InterpolationMode}:
        return interpolation
    raise TypeError(f"interpolation should be an InterpolationMode, got {interpolation!r}")


def _kind(img) -> str:
    if isinstance(img, Tensor):
        return "tensor"
    if isinstance(img, np.ndarray):
        return "array"
    if P.is_pil(img):
        return "pil"
    raise TypeError(f"img should be a PIL Image, an nn.Tensor (C, H, W) or a numpy array "
                    f"(H, W, C), got {type(img).__name__}")


def _chw(img):
    """``(array (..., C, H, W), back)``: the pixels and the function returning a result as
    ``img``'s kind."""
    kind = _kind(img)
    if kind == "tensor":
        a = np.asarray(img.detach().numpy())
        if a.ndim < 2:
            raise ValueError(f"expected a tensor image (..., C, H, W), got shape {a.shape}")
        if a.ndim == 2:
            return a[None], lambda out: from_numpy(np.ascontiguousarray(out[0]))
        return a, lambda out: from_numpy(np.ascontiguousarray(out))
    if kind == "array":
        if img.ndim == 2:
            return img[None], lambda out: np.ascontiguousarray(out[0])
        if img.ndim != 3:
            raise ValueError(f"expected a numpy image (H, W) or (H, W, C), got {img.shape}")
        return img.transpose(2, 0, 1), lambda out: np.ascontiguousarray(out.transpose(1, 2, 0))
    return P.to_array(img), lambda out: P.from_array(out, img)


def _on_pixels(img, fn):
    a, back = _chw(img)
    return back(fn(a))


def get_dimensions(img):
    """``[channels, height, width]``."""
    if _kind(img) == "pil":
        return [len(img.getbands()), img.height, img.width]
    a, _ = _chw(img)
    return [a.shape[-3], a.shape[-2], a.shape[-1]]


def get_image_size(img):
    """``[width, height]``."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img) -> int:
    return get_dimensions(img)[0]


# ----------------------------------------------------------------------------- conversion

def to_tensor(pic) -> Tensor:
    """A PIL image or numpy ``(H, W[, C])`` as a ``(C, H, W)`` tensor; uint8 becomes float32
    in [0, 1]."""
    kind = _kind(pic)
    if kind == "tensor":
        raise TypeError("pic should be PIL Image or ndarray. Got nn.Tensor")
    if kind == "pil":
        mode = {"I": np.int32, "I;16": np.int16, "F": np.float32}.get(pic.mode)
        a = np.array(pic, mode) if mode is not None else np.array(pic)
        if pic.mode == "1":
            a = 255 * a.astype(np.uint8)
    else:
        a = pic
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {a.ndim} dimensions.")
    chw = np.ascontiguousarray(a.transpose(2, 0, 1))
    if chw.dtype == np.uint8:
        return from_numpy(chw.astype(np.float32) / np.float32(255))
    return from_numpy(chw.copy())


def pil_to_tensor(pic) -> Tensor:
    """A PIL image as a ``(C, H, W)`` tensor of its own dtype (no scaling)."""
    if _kind(pic) != "pil":
        raise TypeError(f"pic should be PIL Image. Got {type(pic).__name__}")
    return from_numpy(P.to_array(pic))


def to_pil_image(pic, mode=None):
    """A ``(C, H, W)`` tensor or ``(H, W[, C])`` numpy image as a PIL image (float images are
    scaled by 255 and truncated, as torchvision's ``mul(255).byte()``)."""
    from PIL import Image
    kind = _kind(pic)
    if kind == "pil":
        return pic
    if kind == "tensor":
        a = np.asarray(pic.detach().numpy())
        if a.ndim == 2:
            a = a[None]
        if a.ndim != 3:
            raise ValueError(f"pic should be 2/3 dimensional. Got {a.ndim} dimensions.")
        if np.issubdtype(a.dtype, np.floating) and mode != "F":
            a = (a * np.float32(255)).astype(np.int64).astype(np.uint8)
        a = a.transpose(1, 2, 0)
    else:
        a = pic[:, :, None] if pic.ndim == 2 else pic
        if a.ndim != 3:
            raise ValueError(f"pic should be 2/3 dimensional. Got {a.ndim} dimensions.")
    if a.shape[2] == 1:
        a = a[:, :, 0]
        if mode == "F" or a.dtype == np.float32:
            return Image.fromarray(a.astype(np.float32))
    if a.dtype not in (np.uint8, np.int16, np.int32, np.float32):
        raise TypeError(f"Input type {a.dtype} is not supported")
    image = Image.fromarray(np.ascontiguousarray(a))
    return image.convert(mode) if mode is not None and image.mode != mode else image


def convert_image_dtype(image: Tensor, dtype="float32") -> Tensor:
    """uint8 <-> float images, rescaled (``[0, 255]`` <-> ``[0, 1]``)."""
    a = image.numpy()
    dtype = np.dtype(str(dtype))
    if a.dtype == dtype:
        return image
    if np.issubdtype(dtype, np.floating):
        scale = np.iinfo(a.dtype).max if not np.issubdtype(a.dtype, np.floating) else 1
        return from_numpy((a.astype(dtype) / dtype.type(scale)).astype(dtype))
    top = np.iinfo(dtype).max
    if np.issubdtype(a.dtype, np.floating):
        eps = 1e-3
        return from_numpy((a * (top + 1.0 - eps)).astype(dtype))
    return from_numpy((a.astype(np.int64) * (top + 1) // (np.iinfo(a.dtype).max + 1))
                      .astype(dtype))


def normalize(tensor: Tensor, mean, std, inplace=False) -> Tensor:
    """``(tensor - mean) / std`` per channel, for float tensors ``(..., C, H, W)``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be an nn.Tensor. Got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tensor.shape}")
    a = tensor.detach().numpy()
    mean_ = np.asarray(mean, a.dtype).reshape(-1, 1, 1)
    std_ = np.asarray(std, a.dtype).reshape(-1, 1, 1)
    if (std_ == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {a.dtype}, leading to "
                         "division by zero.")
    out = (a - mean_) / std_
    if inplace:
        a[...] = out
        return tensor
    return from_numpy(out.astype(a.dtype))


# ----------------------------------------------------------------------------- geometry

def _output_size(h, w, size, max_size):
    """torchvision's ``_compute_resized_output_size``: ``[new_h, new_w]``."""
    if isinstance(size, numbers.Number):
        size = [int(size)]
    size = list(size) if size is not None else None
    if size is None or len(size) == 1:
        short, long = (w, h) if w <= h else (h, w)
        if size is None:
            if max_size is None:
                raise ValueError("size=None needs max_size")
            new_short, new_long = int(max_size * short / long), max_size
        else:
            new_short, new_long = size[0], int(size[0] * long / short)
            if max_size is not None:
                if max_size <= size[0]:
                    raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                     f"requested size for the smaller edge size = {size}")
                if new_long > max_size:
                    new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        return [new_h, new_w]
    if max_size is not None:
        raise ValueError("max_size should only be passed if size specifies the length of the "
                         "smaller edge, i.e. size should be an int or a sequence of length 1 "
                         "in torchscript mode.")
    if len(size) != 2:
        raise ValueError(f"If size is a sequence, it should have 1 or 2 values, got {size}")
    return [int(size[0]), int(size[1])]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """``img`` resized to ``size`` ((h, w), or the smaller edge when an int)."""
    mode = _mode(interpolation)
    _, h, w = get_dimensions(img)
    out_size = _output_size(h, w, size, max_size)
    if [h, w] == out_size:
        return img
    if _kind(img) == "pil":
        return P.resize(img, out_size, mode)
    if mode not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"interpolation {mode!r} is only supported for PIL images")
    return _on_pixels(img, lambda a: A.resize(a, out_size, mode, antialias))


def crop(img, top, left, height, width):
    """The window ``[top, top + height) x [left, left + width)``, zero-padded outside."""
    if _kind(img) == "pil":
        return img.crop((left, top, left + width, top + height))
    return _on_pixels(img, lambda a: A.crop(a, int(top), int(left), int(height), int(width)))


def _pair(size, name="size"):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = tuple(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {name}.")
    return int(size[0]), int(size[1])


def center_crop(img, output_size):
    crop_h, crop_w = _pair(output_size, "output_size")
    _, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        padding = [(crop_w - w) // 2 if crop_w > w else 0, (crop_h - h) // 2 if crop_h > h else 0,
                   (crop_w - w + 1) // 2 if crop_w > w else 0,
                   (crop_h - h + 1) // 2 if crop_h > h else 0]
        img = pad(img, padding, fill=0)
        _, h, w = get_dimensions(img)
        if crop_w == w and crop_h == h:
            return img
    top = int(round((h - crop_h) / 2.0))
    left = int(round((w - crop_w) / 2.0))
    return crop(img, top, left, crop_h, crop_w)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    if _kind(img) == "pil":
        return img.transpose(0)         # FLIP_LEFT_RIGHT
    return _on_pixels(img, lambda a: a[..., ::-1].copy())


def vflip(img):
    if _kind(img) == "pil":
        return img.transpose(1)         # FLIP_TOP_BOTTOM
    return _on_pixels(img, lambda a: a[..., ::-1, :].copy())


def _padding(padding):
    if isinstance(padding, numbers.Number):
        return [int(padding)] * 4
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    if len(padding) == 4:
        return padding
    raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a "
                     f"{len(padding)} element tuple")


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad by ``padding`` (all sides / (left-right, top-bottom) / (left, top, right, bottom))."""
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    ltrb = _padding(padding)
    a, back = _chw(img)
    if padding_mode == "constant" and not isinstance(fill, numbers.Number):
        fill = list(fill)
        outs = [A.pad(a[..., c:c + 1, :, :], ltrb, fill[c % len(fill)], "constant")
                for c in range(a.shape[-3])]
        return back(np.concatenate(outs, axis=-3))
    return back(A.pad(a, ltrb, fill if fill is not None else 0, padding_mode))


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotated ``angle`` degrees counter-clockwise."""
    mode = _mode(interpolation)
    if _kind(img) == "pil":
        return P.rotate(img, angle, mode, expand, center, fill)
    return _on_pixels(img, lambda a: A.rotate(a, angle, mode, expand, center, fill))


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Rotation, translation, scale and shear about the centre (or ``center``)."""
    mode = _mode(interpolation)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = [float(s) for s in shear] + ([0.0] if len(shear) == 1 else [])
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if _kind(img) == "pil":
        _, h, w = get_dimensions(img)
        c = [w * 0.5, h * 0.5] if center is None else center
        matrix = A.inverse_affine_matrix(c, angle, translate, scale, shear)
        return P.affine(img, matrix, mode, fill)
    return _on_pixels(img, lambda a: A.affine(a, angle, translate, scale, shear, mode, fill,
                                              center))


def five_crop(img, size):
    """The four corner crops and the centre crop."""
    crop_h, crop_w = _pair(size)
    _, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        raise ValueError(f"Requested crop size {(crop_h, crop_w)} is bigger than input size "
                         f"{(h, w)}")
    return (crop(img, 0, 0, crop_h, crop_w), crop(img, 0, w - crop_w, crop_h, crop_w),
            crop(img, h - crop_h, 0, crop_h, crop_w),
            crop(img, h - crop_h, w - crop_w, crop_h, crop_w), center_crop(img, [crop_h, crop_w]))


def ten_crop(img, size, vertical_flip=False):
    """``five_crop`` of the image and of its flip (horizontal unless ``vertical_flip``)."""
    flipped = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(flipped, size)


# ----------------------------------------------------------------------------- colour

def rgb_to_grayscale(img, num_output_channels=1):
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if _kind(img) == "pil":
        return P.to_grayscale(img, num_output_channels)
    return _on_pixels(img, lambda a: A.rgb_to_grayscale(a, num_output_channels))


to_grayscale = rgb_to_grayscale


def _factor(value, name):
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")
    return value


def adjust_brightness(img, brightness_factor):
    _factor(brightness_factor, "brightness_factor")
    if _kind(img) == "pil":
        return P.enhance(img, "Brightness", brightness_factor)
    return _on_pixels(img, lambda a: A.adjust_brightness(a, brightness_factor))


def adjust_contrast(img, contrast_factor):
    _factor(contrast_factor, "contrast_factor")
    if _kind(img) == "pil":
        return P.enhance(img, "Contrast", contrast_factor)
    return _on_pixels(img, lambda a: A.adjust_contrast(a, contrast_factor))


def adjust_saturation(img, saturation_factor):
    _factor(saturation_factor, "saturation_factor")
    if _kind(img) == "pil":
        return P.enhance(img, "Color", saturation_factor)
    return _on_pixels(img, lambda a: A.adjust_saturation(a, saturation_factor))


def adjust_hue(img, hue_factor):
    if _kind(img) == "pil":
        return P.adjust_hue(img, hue_factor)
    return _on_pixels(img, lambda a: A.adjust_hue(a, hue_factor))


def adjust_sharpness(img, sharpness_factor):
    _factor(sharpness_factor, "sharpness_factor")
    if _kind(img) == "pil":
        return P.enhance(img, "Sharpness", sharpness_factor)
    return _on_pixels(img, lambda a: A.adjust_sharpness(a, sharpness_factor))


def posterize(img, bits):
    if not 0 <= int(bits) <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    if _kind(img) == "pil":
        return P.imageops(img, "posterize", int(bits))
    return _on_pixels(img, lambda a: A.posterize(a, bits))


def solarize(img, threshold):
    if _kind(img) == "pil":
        return P.imageops(img, "solarize", threshold)
    return _on_pixels(img, lambda a: A.solarize(a, threshold))


def autocontrast(img):
    if _kind(img) == "pil":
        return P.imageops(img, "autocontrast")
    return _on_pixels(img, A.autocontrast)


def equalize(img):
    if _kind(img) == "pil":
        return P.imageops(img, "equalize")
    return _on_pixels(img, A.equalize)


def invert(img):
    if _kind(img) == "pil":
        return P.imageops(img, "invert")
    return _on_pixels(img, A.invert)


def erase(img, i, j, h, w, v, inplace=False):
    """``img[..., i:i+h, j:j+w] = v`` (tensors and numpy images)."""
    if _kind(img) == "pil":
        raise TypeError("erase: img should be a tensor (or numpy) image, got a PIL Image")
    value = v.numpy() if isinstance(v, Tensor) else np.asarray(v)
    if _kind(img) == "tensor" and inplace:
        img.numpy()[..., i:i + h, j:j + w] = value
        return img
    if _kind(img) == "array" and value.ndim == 3:       # a numpy patch is (h, w, C) too
        value = value.transpose(2, 0, 1)
    return _on_pixels(img, lambda a: A.erase(a, i, j, h, w, value))



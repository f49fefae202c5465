"""The transform classes of ``torchvision.transforms``, over ``functional``: each is a callable
(``forward`` / ``__call__``); the random ones draw from nn's default generator (seed it with
``nn.manual_seed``) and expose torchvision's ``get_params``."""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from ...tensor import Tensor, _rng, from_numpy
from . import functional as F
from .functional import InterpolationMode

__all__ = ["Compose", "ToTensor", "PILToTensor", "ToPILImage", "ConvertImageDtype",
           "Normalize", "Resize", "CenterCrop", "Pad", "Lambda", "RandomApply",
           "RandomChoice", "RandomOrder", "RandomCrop", "RandomHorizontalFlip",
           "RandomVerticalFlip", "RandomResizedCrop", "FiveCrop", "TenCrop", "ColorJitter",
           "RandomRotation", "RandomAffine", "Grayscale", "RandomGrayscale", "RandomErasing",
           "Transform"]


def _uniform(low, high) -> float:
    return float(_rng(None).uniform(low, high))


def _randint(low, high) -> int:
    """An int in ``[low, high)``."""
    return int(_rng(None).integers(low, high))


def _rand() -> float:
    return float(_rng(None).random())


class Transform:
    """The base: ``__call__`` runs ``forward``; ``repr`` names the arguments."""

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, img):
        raise NotImplementedError

    def _args(self) -> str:
        return ""

    def __repr__(self):
        return f"{type(self).__name__}({self._args()})"


class Compose(Transform):
    """The transforms applied one after the other."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def forward(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        inner = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({inner}\n)"


class ToTensor(Transform):
    """PIL / numpy ``(H, W, C)`` -> float ``(C, H, W)`` tensor in [0, 1] (uint8 input)."""

    def forward(self, pic):
        return F.to_tensor(pic)


class PILToTensor(Transform):
    def forward(self, pic):
        return F.pil_to_tensor(pic)


class ToPILImage(Transform):
    def __init__(self, mode=None):
        self.mode = mode

    def forward(self, pic):
        return F.to_pil_image(pic, self.mode)


class ConvertImageDtype(Transform):
    def __init__(self, dtype):
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class Normalize(Transform):
    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def _args(self):
        return f"mean={self.mean}, std={self.std}"


def _check_size(size, name="size"):
    if size is not None and not isinstance(size, (int, Sequence)):
        raise TypeError(f"{name} should be int or sequence. Got {type(size).__name__}")
    if isinstance(size, Sequence) and len(size) not in (1, 2):
        raise ValueError(f"If {name} is a sequence, it should have 1 or 2 values")
    return size


class Resize(Transform):
    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        self.size = _check_size(size)
        self.interpolation, self.max_size, self.antialias = interpolation, max_size, antialias
        F._mode(interpolation)

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def _args(self):
        return (f"size={self.size}, interpolation={F._mode(self.interpolation)}, "
                f"max_size={self.max_size}, antialias={self.antialias}")


class CenterCrop(Transform):
    def __init__(self, size):
        self.size = F._pair(size)

    def forward(self, img):
        return F.center_crop(img, self.size)

    def _args(self):
        return f"size={self.size}"


class Pad(Transform):
    def __init__(self, padding, fill=0, padding_mode="constant"):
        F._padding(padding)
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or "
                             "symmetric")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class Lambda(Transform):
    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def forward(self, img):
        return self.lambd(img)


class RandomApply(Transform):
    """The transforms, all applied with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        self.transforms, self.p = list(transforms), p

    def forward(self, img):
        if self.p < _rand():
            return img
        for t in self.transforms:
            img = t(img)
        return img


class RandomChoice(Transform):
    def __init__(self, transforms, p=None):
        self.transforms = list(transforms)
        self.p = None if p is None else [x / sum(p) for x in p]

    def forward(self, *args):
        index = int(_rng(None).choice(len(self.transforms), p=self.p))
        return self.transforms[index](*args)


class RandomOrder(Transform):
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def forward(self, img):
        for i in _rng(None).permutation(len(self.transforms)):
            img = self.transforms[i](img)
        return img


class RandomCrop(Transform):
    """A crop at a uniformly random place, after optional ``padding`` / ``pad_if_needed``."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0,
                 padding_mode="constant"):
        self.size = F._pair(size)
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    @staticmethod
    def get_params(img, output_size):
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size "
                             f"{(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def _args(self):
        return f"size={self.size}, padding={self.padding}"


class RandomHorizontalFlip(Transform):
    def __init__(self, p=0.5):
        self.p = p

    def forward(self, img):
        return F.hflip(img) if _rand() < self.p else img

    def _args(self):
        return f"p={self.p}"


class RandomVerticalFlip(RandomHorizontalFlip):
    def forward(self, img):
        return F.vflip(img) if _rand() < self.p else img


def _range(value, name, center=1.0, bound=(0, float("inf")), clip_first_on_zero=True):
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        value = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {value}.")
    return None if value[0] == value[1] == center else tuple(value)


class ColorJitter(Transform):
    """Brightness, contrast, saturation and hue changed by random factors, in random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _range(brightness, "brightness")
        self.contrast = _range(contrast, "contrast")
        self.saturation = _range(saturation, "saturation")
        self.hue = _range(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        order = from_numpy(_rng(None).permutation(4))
        factors = [None if r is None else _uniform(r[0], r[1])
                   for r in (brightness, contrast, saturation, hue)]
        return (order, *factors)

    def forward(self, img):
        order, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation,
                                            self.hue)
        for fn_id in order.tolist():
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def _args(self):
        return (f"brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue}")


def _degrees(degrees, name="degrees"):
    if isinstance(degrees, numbers.Number):
        if degrees < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(degrees), float(degrees)]
    if len(degrees) != 2:
        raise ValueError(f"If {name} is a sequence, it must be of len 2.")
    return [float(d) for d in degrees]


def _tensor_fill(fill, img):
    if F._kind(img) != "pil" and isinstance(fill, (int, float)):
        return [float(fill)] * F.get_dimensions(img)[0]
    if F._kind(img) != "pil" and fill is not None:
        return [float(f) for f in fill]
    return fill


class RandomRotation(Transform):
    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        self.degrees = _degrees(degrees)
        self.interpolation, self.expand, self.center, self.fill = (interpolation, expand,
                                                                   center, fill)

    @staticmethod
    def get_params(degrees) -> float:
        return _uniform(degrees[0], degrees[1])

    def forward(self, img):
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center,
                        _tensor_fill(self.fill, img))

    def _args(self):
        return f"degrees={self.degrees}, interpolation={F._mode(self.interpolation)}"


class RandomAffine(Transform):
    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        self.degrees = _degrees(degrees)
        self.translate, self.scale = translate, scale
        self.shear = None if shear is None else (
            _degrees(shear, "shear") + [0.0, 0.0] if isinstance(shear, numbers.Number)
            or len(shear) == 2 else [float(s) for s in shear])
        self.interpolation, self.fill, self.center = interpolation, fill, center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        angle = _uniform(degrees[0], degrees[1])
        if translate is not None:
            max_dx, max_dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            translations = (int(round(_uniform(-max_dx, max_dx))),
                            int(round(_uniform(-max_dy, max_dy))))
        else:
            translations = (0, 0)
        scale = 1.0 if scale_ranges is None else _uniform(scale_ranges[0], scale_ranges[1])
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        params = self.get_params(self.degrees, self.translate, self.scale, self.shear,
                                 F.get_image_size(img))
        return F.affine(img, *params, interpolation=self.interpolation,
                        fill=_tensor_fill(self.fill, img), center=self.center)


class RandomResizedCrop(Transform):
    """A random area / aspect-ratio crop, resized to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        self.size = F._pair(size)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        self.scale, self.ratio = scale, ratio
        self.interpolation, self.antialias = interpolation, antialias

    @staticmethod
    def get_params(img, scale, ratio):
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = np.log(np.asarray(ratio, np.float32))
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, self.antialias)

    def _args(self):
        return f"size={self.size}, scale={self.scale}, ratio={self.ratio}"


class FiveCrop(Transform):
    def __init__(self, size):
        self.size = F._pair(size)

    def forward(self, img):
        return F.five_crop(img, self.size)


class TenCrop(Transform):
    def __init__(self, size, vertical_flip=False):
        self.size, self.vertical_flip = F._pair(size), vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)


class Grayscale(Transform):
    def __init__(self, num_output_channels=1):
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)


class RandomGrayscale(Transform):
    def __init__(self, p=0.1):
        self.p = p

    def forward(self, img):
        channels = F.get_dimensions(img)[0]
        return F.rgb_to_grayscale(img, channels) if _rand() < self.p else img


class RandomErasing(Transform):
    """Erase a random rectangle of a tensor image (``value``: a number, per-channel values, or
    "random" for normal noise)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        a, _ = F._chw(img)
        img_c, img_h, img_w = a.shape[-3:]
        area = img_h * img_w
        log_ratio = np.log(np.asarray(ratio, np.float32))
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            h = int(round(math.sqrt(erase_area * aspect)))
            w = int(round(math.sqrt(erase_area / aspect)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = _rng(None).standard_normal((img_c, h, w)).astype(np.float32)
            else:
                v = np.asarray(value, np.float32)[:, None, None]
            return _randint(0, img_h - h + 1), _randint(0, img_w - w + 1), h, w, from_numpy(v)
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if _rand() >= self.p:
            return img
        value = self.value
        if isinstance(value, (int, float)):
            value = [float(value)]
        elif isinstance(value, str):
            value = None
        elif isinstance(value, tuple):
            value = list(value)
        channels = F.get_dimensions(img)[0]
        if value is not None and len(value) not in (1, channels):
            raise ValueError(f"If value is a sequence, it should have either a single value or "
                             f"{channels} (number of input channels)")
        i, j, h, w, v = self.get_params(img, self.scale, self.ratio, value)
        if isinstance(v, Tensor) and v is not img:
            v_array = v.numpy()
            if F._kind(img) == "array":
                v_array = v_array.transpose(1, 2, 0)
            return F.erase(img, i, j, h, w, v_array if F._kind(img) == "array" else v,
                           self.inplace)
        return img

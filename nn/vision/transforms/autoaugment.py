"""AutoAugment (the ImageNet / CIFAR-10 / SVHN policies of Cubuk et al., 2019), RandAugment and
TrivialAugmentWide, as torchvision builds them: the same operation spaces, magnitude bins and
sampling steps, drawn from nn's default generator."""
from __future__ import annotations

import enum
import math

import numpy as np

from ...tensor import _rng
from . import functional as F
from .functional import InterpolationMode
from .transforms import Transform

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide"]


class AutoAugmentPolicy(enum.Enum):
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# (operation, probability, magnitude bin) pairs, from the AutoAugment paper's appendix
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: """
        Posterize .4 8 Rotate .6 9|Solarize .6 5 AutoContrast .6 -|Equalize .8 - Equalize .6 -
        Posterize .6 7 Posterize .6 6|Equalize .4 - Solarize .2 4|Equalize .4 - Rotate .8 8
        Solarize .6 3 Equalize .6 -|Posterize .8 5 Equalize 1 -|Rotate .2 3 Solarize .6 8
        Equalize .6 - Posterize .4 6|Rotate .8 8 Color .4 0|Rotate .4 9 Equalize .6 -
        Equalize 0 - Equalize .8 -|Invert .6 - Equalize 1 -|Color .6 4 Contrast 1 8
        Rotate .8 8 Color 1 2|Color .8 8 Solarize .8 7|Sharpness .4 7 Invert .6 -
        ShearX .6 5 Equalize 1 -|Color .4 0 Equalize .6 -|Equalize .4 - Solarize .2 4
        Solarize .6 5 AutoContrast .6 -|Invert .6 - Equalize 1 -|Color .6 4 Contrast 1 8
        Equalize .8 - Equalize .6 -""",
    AutoAugmentPolicy.CIFAR10: """
        Invert .1 - Contrast .2 6|Rotate .7 2 TranslateX .3 9|Sharpness .8 1 Sharpness .9 3
        ShearY .5 8 TranslateY .7 9|AutoContrast .5 - Equalize .9 -|ShearY .2 7 Posterize .3 7
        Color .4 3 Brightness .6 7|Sharpness .3 9 Brightness .7 9|Equalize .6 - Equalize .5 -
        Contrast .6 7 Sharpness .6 5|Color .7 7 TranslateX .5 8|Equalize .3 - AutoContrast .4 -
        TranslateY .4 3 Sharpness .2 6|Brightness .9 6 Color .2 8|Solarize .5 2 Invert 0 -
        Equalize .2 - AutoContrast .6 -|Equalize .2 - Equalize .6 -|Color .9 9 Equalize .6 -
        AutoContrast .8 - Solarize .2 8|Brightness .1 3 Color .7 0|Solarize .4 5 AutoContrast .9 -
        TranslateY .9 9 TranslateY .7 9|AutoContrast .9 - Solarize .8 3|Equalize .8 - Invert .1 -
        TranslateY .7 9 AutoContrast .9 -""",
    AutoAugmentPolicy.SVHN: """
        ShearX .9 4 Invert .2 -|ShearY .9 8 Invert .7 -|Equalize .6 - Solarize .6 6
        Invert .9 - Equalize .6 -|Equalize .6 - Rotate .9 3|ShearX .9 4 AutoContrast .8 -
        ShearY .9 8 Invert .4 -|ShearY .9 5 Solarize .2 6|Invert .9 - AutoContrast .8 -
        Equalize .6 - Rotate .9 3|ShearX .9 4 Solarize .3 3|ShearY .8 8 Invert .7 -
        Equalize .9 - TranslateY .6 6|Invert .9 - Equalize .6 -|Contrast .3 3 Rotate .8 4
        Invert .8 - TranslateY 0 2|ShearY .7 6 Solarize .4 8|Invert .6 - Rotate .8 4
        ShearY .3 7 TranslateX .9 3|ShearX .1 6 Invert .6 -|Solarize .7 2 TranslateY .6 7
        ShearY .8 4 Invert .8 -|ShearX .7 9 TranslateY .8 3|ShearY .8 5 AutoContrast .7 -
        ShearX .7 2 Invert .1 -""",
}


def _parse(text):
    policies = []
    for entry in text.replace("\n", "|").split("|"):
        words = entry.split()
        if not words:
            continue
        ops = tuple((words[k], float(words[k + 1]), None if words[k + 2] == "-"
                     else int(words[k + 2])) for k in (0, 3))
        policies.append(ops)
    return policies


def _linspace(start, end, n):
    return np.linspace(start, end, n, dtype=np.float32)


def _posterize_bins(n, divisor):
    return (8 - np.round(np.arange(n, dtype=np.float32) / np.float32((n - 1) / divisor))
            ).astype(np.int32)


def apply_op(img, op_name, magnitude, interpolation, fill):
    """One augmentation operation at ``magnitude`` (torchvision's ``_apply_op``)."""
    if op_name == "ShearX":
        return F.affine(img, 0.0, [0, 0], 1.0, [math.degrees(math.atan(magnitude)), 0.0],
                        interpolation, fill, center=[0, 0])
    if op_name == "ShearY":
        return F.affine(img, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(magnitude))],
                        interpolation, fill, center=[0, 0])
    if op_name == "TranslateX":
        return F.affine(img, 0.0, [int(magnitude), 0], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "TranslateY":
        return F.affine(img, 0.0, [0, int(magnitude)], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation, fill=fill)
    enhance = {"Brightness": F.adjust_brightness, "Color": F.adjust_saturation,
               "Contrast": F.adjust_contrast, "Sharpness": F.adjust_sharpness}
    if op_name in enhance:
        return enhance[op_name](img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    simple = {"AutoContrast": F.autocontrast, "Equalize": F.equalize, "Invert": F.invert}
    if op_name in simple:
        return simple[op_name](img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _fill(fill, img):
    if F._kind(img) == "pil":
        return fill
    channels = F.get_dimensions(img)[0]
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return None if fill is None else [float(f) for f in fill]


def _check_uint8(img, name):
    if F._kind(img) != "pil":
        a, _ = F._chw(img)
        if a.dtype != np.uint8:
            raise TypeError(f"{name}: expected a uint8 image (as torchvision), got {a.dtype}")


class AutoAugment(Transform):
    """One of the policy's 25 sub-policies, picked at random; each of its two operations is
    applied with its probability, at its magnitude with a random sign."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy, self.interpolation, self.fill = policy, interpolation, fill
        self.policies = _parse(_POLICIES[policy])

    @staticmethod
    def _augmentation_space(num_bins, image_size):
        h, w = image_size
        return {
            "ShearX": (_linspace(0.0, 0.3, num_bins), True),
            "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, 150.0 / 331.0 * w, num_bins), True),
            "TranslateY": (_linspace(0.0, 150.0 / 331.0 * h, num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Brightness": (_linspace(0.0, 0.9, num_bins), True),
            "Color": (_linspace(0.0, 0.9, num_bins), True),
            "Contrast": (_linspace(0.0, 0.9, num_bins), True),
            "Sharpness": (_linspace(0.0, 0.9, num_bins), True),
            "Posterize": (_posterize_bins(num_bins, 4), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (np.float32(0.0), False),
            "Equalize": (np.float32(0.0), False),
            "Invert": (np.float32(0.0), False),
        }

    @staticmethod
    def get_params(transform_num):
        rng = _rng(None)
        return int(rng.integers(0, transform_num)), rng.random(2), rng.integers(0, 2, 2)

    def forward(self, img):
        _check_uint8(img, type(self).__name__)
        fill = _fill(self.fill, img)
        _, height, width = F.get_dimensions(img)
        policy_id, probs, signs = self.get_params(len(self.policies))
        space = self._augmentation_space(10, (height, width))
        for i, (op_name, p, bin_id) in enumerate(self.policies[policy_id]):
            if probs[i] <= p:
                magnitudes, signed = space[op_name]
                magnitude = float(magnitudes[bin_id]) if bin_id is not None else 0.0
                if signed and signs[i] == 0:
                    magnitude *= -1.0
                img = apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def _args(self):
        return f"policy={self.policy}, fill={self.fill}"


class RandAugment(Transform):
    """``num_ops`` operations drawn uniformly, each at bin ``magnitude`` of
    ``num_magnitude_bins``, with a random sign."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        if not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(f"magnitude must be in [0, num_magnitude_bins={num_magnitude_bins})"
                             f", got {magnitude}")
        self.num_ops, self.magnitude = num_ops, magnitude
        self.num_magnitude_bins, self.interpolation, self.fill = (num_magnitude_bins,
                                                                  interpolation, fill)

    def _augmentation_space(self, num_bins, image_size):
        space = {"Identity": (np.float32(0.0), False)}
        space.update(AutoAugment._augmentation_space(num_bins, image_size))
        del space["Invert"]
        return space

    def forward(self, img):
        _check_uint8(img, type(self).__name__)
        fill = _fill(self.fill, img)
        _, height, width = F.get_dimensions(img)
        space = self._augmentation_space(self.num_magnitude_bins, (height, width))
        rng = _rng(None)
        for _ in range(self.num_ops):
            op_name = list(space)[int(rng.integers(0, len(space)))]
            magnitudes, signed = space[op_name]
            magnitude = float(magnitudes[self.magnitude]) if np.ndim(magnitudes) > 0 else 0.0
            if signed and rng.integers(0, 2):
                magnitude *= -1.0
            img = apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def _args(self):
        return (f"num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={F._mode(self.interpolation)}, fill={self.fill}")


class TrivialAugmentWide(Transform):
    """One operation drawn uniformly, at a magnitude drawn uniformly from its bins."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        self.num_magnitude_bins, self.interpolation, self.fill = (num_magnitude_bins,
                                                                  interpolation, fill)

    @staticmethod
    def _augmentation_space(num_bins):
        return {
            "Identity": (np.float32(0.0), False),
            "ShearX": (_linspace(0.0, 0.99, num_bins), True),
            "ShearY": (_linspace(0.0, 0.99, num_bins), True),
            "TranslateX": (_linspace(0.0, 32.0, num_bins), True),
            "TranslateY": (_linspace(0.0, 32.0, num_bins), True),
            "Rotate": (_linspace(0.0, 135.0, num_bins), True),
            "Brightness": (_linspace(0.0, 0.99, num_bins), True),
            "Color": (_linspace(0.0, 0.99, num_bins), True),
            "Contrast": (_linspace(0.0, 0.99, num_bins), True),
            "Sharpness": (_linspace(0.0, 0.99, num_bins), True),
            "Posterize": (_posterize_bins(num_bins, 6), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (np.float32(0.0), False),
            "Equalize": (np.float32(0.0), False),
        }

    def forward(self, img):
        _check_uint8(img, type(self).__name__)
        fill = _fill(self.fill, img)
        space = self._augmentation_space(self.num_magnitude_bins)
        rng = _rng(None)
        op_name = list(space)[int(rng.integers(0, len(space)))]
        magnitudes, signed = space[op_name]
        magnitude = (float(magnitudes[int(rng.integers(0, len(magnitudes)))])
                     if np.ndim(magnitudes) > 0 else 0.0)
        if signed and rng.integers(0, 2):
            magnitude *= -1.0
        return apply_op(img, op_name, magnitude, self.interpolation, fill)

    def _args(self):
        return (f"num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={F._mode(self.interpolation)}, fill={self.fill}")

"""Padding layers, as torch.nn has them: constant (and zero), reflection, replication and
circular padding of the last 1, 2 or 3 dimensions. ``padding`` is an int (every side) or the
sizes in ``nn.functional.pad``'s order: (left, right, top, bottom, front, back)."""
from __future__ import annotations

from ..functions import conv as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _sizes(padding, nd):
    if isinstance(padding, int):
        return (padding,) * (2 * nd)
    padding = tuple(padding)
    if len(padding) != 2 * nd:
        raise ValueError(f"padding must be an int or a tuple of {2 * nd} ints, got {padding}")
    return padding


class _PadNd(Module):
    nd = 1
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _sizes(padding, self.nd)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


def _layer(base, name, nd, doc, **attrs):
    return type(name, (base,), {"nd": nd, "__doc__": doc, "__module__": __name__, **attrs})


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


ConstantPad1d = _layer(_ConstantPadNd, "ConstantPad1d", 1, "Pads the last dimension with "
                       "``value``.")
ConstantPad2d = _layer(_ConstantPadNd, "ConstantPad2d", 2, "Pads the last 2 dimensions with "
                       "``value``.")
ConstantPad3d = _layer(_ConstantPadNd, "ConstantPad3d", 3, "Pads the last 3 dimensions with "
                       "``value``.")
ZeroPad1d = _layer(_ZeroPadNd, "ZeroPad1d", 1, "Pads the last dimension with zeros.")
ZeroPad2d = _layer(_ZeroPadNd, "ZeroPad2d", 2, "Pads the last 2 dimensions with zeros.")
ZeroPad3d = _layer(_ZeroPadNd, "ZeroPad3d", 3, "Pads the last 3 dimensions with zeros.")
ReflectionPad1d = _layer(_PadNd, "ReflectionPad1d", 1, "Pads the last dimension with its "
                         "reflection (the edge not repeated).", mode="reflect")
ReflectionPad2d = _layer(_PadNd, "ReflectionPad2d", 2, "Pads the last 2 dimensions with their "
                         "reflection (the edge not repeated).", mode="reflect")
ReflectionPad3d = _layer(_PadNd, "ReflectionPad3d", 3, "Pads the last 3 dimensions with their "
                         "reflection (the edge not repeated).", mode="reflect")
ReplicationPad1d = _layer(_PadNd, "ReplicationPad1d", 1, "Pads the last dimension with copies "
                          "of its edge values.", mode="replicate")
ReplicationPad2d = _layer(_PadNd, "ReplicationPad2d", 2, "Pads the last 2 dimensions with "
                          "copies of their edge values.", mode="replicate")
ReplicationPad3d = _layer(_PadNd, "ReplicationPad3d", 3, "Pads the last 3 dimensions with "
                          "copies of their edge values.", mode="replicate")
CircularPad1d = _layer(_PadNd, "CircularPad1d", 1, "Pads the last dimension by wrapping "
                       "around.", mode="circular")
CircularPad2d = _layer(_PadNd, "CircularPad2d", 2, "Pads the last 2 dimensions by wrapping "
                       "around.", mode="circular")
CircularPad3d = _layer(_PadNd, "CircularPad3d", 3, "Pads the last 3 dimensions by wrapping "
                       "around.", mode="circular")

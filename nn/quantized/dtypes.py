"""The quantized dtypes and quantization schemes, as PyTorch's: ``nn.quint8``, ``nn.qint8``,
``nn.qint32``; ``nn.per_tensor_affine``, ``nn.per_channel_affine``, ``nn.per_tensor_symmetric``,
``nn.per_channel_symmetric``.

A quantized dtype is an ``nn.dtype`` (a ``str``: ``nn.quint8 == "quint8"``) that also knows its
storage (the integer dtype of ``int_repr()``) and its range.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import dtype

__all__ = ["qdtype", "quint8", "qint8", "qint32", "qscheme", "per_tensor_affine",
           "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric",
           "as_qdtype"]


class qdtype(dtype):
    """A quantized element type: integers ``q`` standing for ``scale * (q - zero_point)``."""
    __slots__ = ()

    @property
    def storage(self) -> str:
        """The integer dtype of ``int_repr()``: ``uint8``, ``int8`` or ``int32``."""
        return _STORAGE[str.__str__(self)]

    @property
    def is_floating_point(self):
        return False

    @property
    def is_signed(self):
        return self.storage != "uint8"

    @property
    def itemsize(self):
        return np.dtype(self.storage).itemsize

    @property
    def qmin(self) -> int:
        return _RANGE[str.__str__(self)][0]

    @property
    def qmax(self) -> int:
        return _RANGE[str.__str__(self)][1]


_STORAGE = {"quint8": "uint8", "qint8": "int8", "qint32": "int32"}
# (min, max) of each storage dtype, once (np.iinfo costs microseconds a call)
_RANGE = {name: (int(np.iinfo(st).min), int(np.iinfo(st).max)) for name, st in _STORAGE.items()}
QDTYPES = {name: qdtype(name) for name in _STORAGE}
quint8, qint8, qint32 = QDTYPES["quint8"], QDTYPES["qint8"], QDTYPES["qint32"]


def as_qdtype(value, what):
    """``value`` as a quantized dtype, or a RuntimeError naming argument ``what``."""
    if isinstance(value, str) and str.__str__(value) in QDTYPES:
        return QDTYPES[str.__str__(value)]
    raise RuntimeError(f"{what}: argument 'dtype' must be a quantized dtype (nn.quint8, "
                       f"nn.qint8 or nn.qint32), got {value!r}")


class qscheme:
    """A quantization scheme (``nn.per_tensor_affine``...); compared by identity."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"nn.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (_scheme_named, (self.name,))


def _scheme_named(name):
    return SCHEMES[name]


SCHEMES = {name: qscheme(name) for name in ("per_tensor_affine", "per_channel_affine",
                                              "per_tensor_symmetric", "per_channel_symmetric")}
per_tensor_affine = SCHEMES["per_tensor_affine"]
per_channel_affine = SCHEMES["per_channel_affine"]
per_tensor_symmetric = SCHEMES["per_tensor_symmetric"]
per_channel_symmetric = SCHEMES["per_channel_symmetric"]

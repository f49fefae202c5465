"""nn's dtype objects, as PyTorch's: ``nn.float32``, ``nn.int64``, ``nn.long``, ``nn.bool``...

A dtype is its numpy name as a ``str`` subclass: every call that takes a dtype accepts either
form (``nn.zeros(3, dtype=nn.int64)`` is ``nn.zeros(3, dtype="int64")``), ``Tensor.dtype``
returns one (``t.dtype == nn.float32`` and ``t.dtype == "float32"`` are both true) and it
formats as the name, so messages read as before; only ``repr`` says ``nn.float32``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["dtype", "float16", "float32", "float64", "half", "float", "double", "uint8",
           "int8", "int16", "int32", "int64", "short", "int", "long", "bool"]


class dtype(str):
    """A tensor element type (the numpy name, as a string)."""
    __slots__ = ()

    def __repr__(self):
        return f"nn.{str.__str__(self)}"

    @property
    def is_floating_point(self):
        return self.startswith("float")

    @property
    def is_signed(self):
        return not self.startswith(("uint", "bool"))

    @property
    def itemsize(self):
        return np.dtype(str.__str__(self)).itemsize


DTYPES = {name: dtype(name) for name in ("float16", "float32", "float64", "uint8", "int8",
                                         "int16", "int32", "int64", "bool")}


def as_dtype(name):
    """The dtype object of numpy name ``name`` (the name itself for a dtype nn has none of)."""
    return DTYPES.get(name, name)


float16, float32, float64 = DTYPES["float16"], DTYPES["float32"], DTYPES["float64"]
uint8, int8, int16 = DTYPES["uint8"], DTYPES["int8"], DTYPES["int16"]
int32, int64 = DTYPES["int32"], DTYPES["int64"]
half, double, short, long = float16, float64, int16, int64
# PyTorch's short names; defined last, as they hide the builtins in this module
float, int, bool = float32, int32, DTYPES["bool"]

"""Devices and arrays in TVM's shape: ``te.nd.array(np_array, te.cpu(0))`` and ``.numpy()``.

An NDArray is a thin holder of a numpy array (host memory); built functions accept it, numpy
arrays and anything with ``__array_interface__`` or DLPack alike.
"""
from __future__ import annotations

import math

import numpy as np


class Device:
    def __init__(self, kind="cpu", index=0):
        self.kind, self.index = kind, index
        self.device_type = {"cpu": 1, "llvm": 1, "cuda": 2, "gpu": 2}.get(kind, 1)

    def sync(self):
        """Wait for the device (a no-op on the CPU)."""

    def __repr__(self):
        return f"{self.kind}({self.index})"


def device(kind="cpu", index=0) -> Device:
    kind = getattr(kind, "name", kind)
    return Device("cpu" if kind in ("llvm", "cpu", "c") else kind, index)


def cpu(index=0) -> Device:
    return Device("cpu", index)


def cuda(index=0) -> Device:
    return Device("cuda", index)


class NDArray:
    """An array on a device; on the CPU it wraps a C-contiguous numpy array."""

    def __init__(self, data: np.ndarray, dev: Device):
        self._data = data
        self.device = dev

    @property
    def __array_interface__(self):
        return self._data.__array_interface__

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return str(self._data.dtype)

    def numpy(self) -> np.ndarray:
        return self._data.copy()

    asnumpy = numpy

    def copyfrom(self, source):
        np.copyto(self._data, np.asarray(source))
        return self

    def copyto(self, target):
        """Copy into ``target``: an NDArray of the same shape (returned), or a Device (a new
        NDArray there)."""
        if isinstance(target, NDArray):
            if target.shape != self.shape:
                raise ValueError(f"copyto: target shape {target.shape} differs from this "
                                 f"array's {self.shape}; give an array of the same shape")
            return target.copyfrom(self._data)
        if isinstance(target, Device):
            return NDArray(self._data.copy(), target)
        raise TypeError(f"copyto: target must be an NDArray or a Device (te.cpu(0)), got "
                        f"{type(target).__name__}")

    def __repr__(self):
        return f"<te.nd.NDArray shape={self.shape}, {self.device}>\n{self._data}"


def array(arr, device=None) -> NDArray:
    """Copy ``arr`` into a new NDArray on ``device`` (the CPU by default)."""
    return NDArray(np.ascontiguousarray(np.array(arr)), device or cpu(0))


def empty(shape, dtype="float32", device=None) -> NDArray:
    """A new uninitialized array, 64-byte aligned (see ``aligned_empty``)."""
    return NDArray(aligned_empty(shape, dtype), device or cpu(0))


def aligned_empty(shape, dtype="float32", alignment=64) -> np.ndarray:
    """``np.empty`` whose data starts on an ``alignment``-byte boundary. numpy aligns large
    arrays to 16 bytes only; kernels with streaming stores (pragma "nontemporal") use them
    only on outputs aligned to 64 bytes, so te allocates its outputs this way."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    start = -raw.__array_interface__["data"][0] % alignment
    return raw[start:start + nbytes].view(dtype).reshape(shape)

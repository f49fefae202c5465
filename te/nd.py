"""Devices and arrays in TVM's shape: ``te.nd.array(np_array, te.cpu(0))`` and ``.numpy()``.

An NDArray is a thin holder of a numpy array (host memory); built functions accept it, numpy
arrays and anything with ``__array_interface__`` or DLPack alike.
"""
from __future__ import annotations

import math

import numpy as np


DEVICE_TYPES = {"cpu": 1, "llvm": 1, "c": 1, "cuda": 2, "gpu": 2}


class Device:
    def __init__(self, kind="cpu", index=0):
        if kind not in DEVICE_TYPES:
            raise ValueError(f"unknown device {kind!r}: use 'cpu' (te.cpu(0)) or 'cuda' "
                             "(te.cuda(0))")
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or index < 0:
            raise ValueError(f"device {kind}: the index must be an int >= 0, got {index!r}")
        self.kind, self.index = kind, int(index)
        self.device_type = DEVICE_TYPES[kind]

    @property
    def exist(self) -> bool:
        """Whether this device is there (the CPU always; a GPU when numba sees one)."""
        if self.device_type == 1:
            return self.index == 0
        from numba import cuda
        return cuda.is_available() and self.index < len(cuda.gpus)

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

    def __setitem__(self, index, value):
        """``x[:] = values``, as TVM's NDArray (any numpy index works here)."""
        self._data[index] = np.asarray(value)

    def copyfrom(self, source):
        """Copy ``source`` (an array of this shape; converted to this dtype) in; returns self."""
        source = np.asarray(source)
        if source.shape != self.shape:
            raise ValueError(f"copyfrom: source shape {source.shape} differs from this array's "
                             f"{self.shape}; give an array of the same shape")
        np.copyto(self._data, source, casting="unsafe")
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
    """Copy ``arr`` into a new NDArray on ``device`` (the CPU by default), in the machine's
    byte order."""
    data = np.array(arr)
    if not data.dtype.isnative:
        data = data.astype(data.dtype.newbyteorder("="))
    # (np.ascontiguousarray makes a 0-d array 1-d)
    return NDArray(np.ascontiguousarray(data).reshape(data.shape), _as_device(device))


def _as_device(dev) -> Device:
    if dev is None:
        return cpu(0)
    if isinstance(dev, Device):
        return dev
    if isinstance(dev, str):
        return device(dev)
    raise TypeError(f"device must be a te device (te.cpu(0), te.cuda(0)) or its name, got "
                    f"{type(dev).__name__}")


def empty(shape, dtype="float32", device=None) -> NDArray:
    """A new uninitialized array, 64-byte aligned (see ``aligned_empty``)."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in dims):
        raise ValueError(f"te.nd.empty: shape {shape} must be ints >= 0")
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"te.nd.empty: unknown dtype {dtype!r}; use a name such as 'float32', "
                        "'int32' or 'float16'") from None
    return NDArray(aligned_empty(dims, dtype), _as_device(device))


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

"""Devices: where a tensor's storage lives.

On ``cpu`` a tensor's storage is a numpy array; on ``cuda`` it is a numba device array (on
numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1``, as in the test suite), and operators
run the GPU build of their te declaration (``nn.ops.gpu.build``). The functions here are the
only places that move or copy storage between the two.
"""
from __future__ import annotations

import numpy as np

__all__ = ["device"]


class device:
    """A device, as ``torch.device``: ``device("cuda")``, ``device("cuda:0")``,
    ``device("cuda", 0)``, ``device("cpu")``. Compares equal to its string form."""

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        kind, _, number = str(type).partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                               f"string: {type}")
        if number:
            if index is not None:
                raise ValueError(f"device(): the index is given twice ({type!r}, {index})")
            index = int(number)
        if kind == "cuda" and index not in (None, 0):
            raise RuntimeError(f"nn uses one GPU: device index {index} is not available "
                               "(use 'cuda' or 'cuda:0')")
        self.type = kind
        self.index = 0 if kind == "cuda" else index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        extra = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{extra})"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError):
                return False
        return isinstance(other, device) and (self.type, self.index) == (other.type,
                                                                         other.index)

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")
CUDA = device("cuda", 0)


def is_gpu(array) -> bool:
    """Whether ``array`` is GPU storage (a numba device array)."""
    return hasattr(array, "copy_to_host")


def of(array) -> device:
    return CUDA if is_gpu(array) else CPU


def cuda_available() -> bool:
    try:
        from numba import cuda
    except ImportError:
        return False
    return cuda.is_available()


def move(array, to: device):
    """``array`` on device ``to`` (itself when it is there already)."""
    if to.type == "cuda":
        if is_gpu(array):
            return array
        if not cuda_available():
            raise RuntimeError("Found no NVIDIA driver on your system: CUDA tensors need an "
                               "NVIDIA GPU (or numba's simulator: NUMBA_ENABLE_CUDASIM=1)")
        from numba import cuda
        # (np.ascontiguousarray would make a 0-d array 1-d)
        return cuda.to_device(np.ascontiguousarray(array).reshape(array.shape))
    return array.copy_to_host() if is_gpu(array) else array


def host(array) -> np.ndarray:
    """The values of ``array`` as a numpy array (a copy when it lives on the GPU)."""
    return array.copy_to_host() if is_gpu(array) else array


def copy(array):
    """A new buffer with the values of ``array``, on the same device."""
    if is_gpu(array):
        from numba import cuda
        out = cuda.device_array(array.shape, array.dtype)
        out.copy_to_device(array)
        return out
    return array.copy()


def write(dst, src):
    """Copy the values of ``src`` into the storage ``dst`` (same shape, same device)."""
    if is_gpu(dst):
        dst.copy_to_device(src)
    else:
        np.copyto(dst, src)


def common(arrays, what="") -> device:
    """The one device that all ``arrays`` live on, or PyTorch's error."""
    found = {of(a) for a in arrays}
    if len(found) > 1:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, cuda:0 and cpu!{' (' + what + ')' if what else ''}")
    return found.pop() if found else CPU

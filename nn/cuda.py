"""``nn.cuda``: whether tensors can live on an NVIDIA GPU, as ``torch.cuda``."""
from __future__ import annotations

from .device import cuda_available

__all__ = ["is_available", "device_count", "synchronize"]


def is_available() -> bool:
    """True where numba finds a CUDA GPU (or runs its simulator)."""
    return cuda_available()


def device_count() -> int:
    return 1 if cuda_available() else 0


def synchronize():
    """Wait for the kernels launched so far to finish."""
    if cuda_available():
        from numba import cuda
        cuda.synchronize()

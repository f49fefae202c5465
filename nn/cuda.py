"""``nn.cuda``: whether tensors can live on an NVIDIA GPU, and the device queries of
``torch.cuda`` (answered through numba.cuda). Without a GPU the queries that need one raise a
RuntimeError that says so (as PyTorch's do); ``empty_cache``, ``manual_seed``,
``manual_seed_all`` and ``synchronize`` do nothing, and the memory counters are 0."""
from __future__ import annotations

import dataclasses

from .device import cuda_available

__all__ = ["is_available", "device_count", "synchronize", "current_device", "set_device",
           "get_device_name", "get_device_capability", "get_device_properties",
           "mem_get_info", "empty_cache", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "reset_peak_memory_stats", "is_initialized", "manual_seed",
           "manual_seed_all", "device_of"]


def is_available() -> bool:
    """True where numba finds a CUDA GPU (or runs its simulator)."""
    return cuda_available()


def device_count() -> int:
    return 1 if cuda_available() else 0


def is_initialized() -> bool:
    return cuda_available()


def synchronize(device=None):
    """Wait for the kernels launched so far to finish."""
    if cuda_available():
        from numba import cuda
        cuda.synchronize()


def _require(what):
    if not cuda_available():
        raise RuntimeError(f"nn.cuda.{what}: no CUDA GPU is available (numba.cuda finds none; "
                           "nn runs on the CPU here). Check nn.cuda.is_available() first.")
    from numba import cuda
    return cuda


def _index(device, what):
    """The GPU index a ``device`` argument names (nn uses one GPU: index 0)."""
    if device is None:
        return 0
    index = getattr(device, "index", device)
    if isinstance(device, str):
        kind, _, number = device.partition(":")
        if kind != "cuda":
            raise ValueError(f"nn.cuda.{what}: expected a cuda device, got {device!r}")
        index = int(number) if number else 0
    index = 0 if index is None else int(index)
    if index != 0:
        raise ValueError(f"nn.cuda.{what}: device index {index} is out of range (nn uses one "
                         "GPU, index 0)")
    return index


def current_device() -> int:
    """The index of the GPU in use (always 0: nn uses one GPU)."""
    _require("current_device")
    return 0


def set_device(device):
    """Select a GPU; only index 0 exists for nn."""
    _index(device, "set_device")
    _require("set_device")


@dataclasses.dataclass(frozen=True)
class _CudaDeviceProperties:
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def _memory(cuda):
    try:
        free, total = cuda.current_context().get_memory_info()
    except (AttributeError, NotImplementedError):
        return 0, 0
    if free == float("inf"):            # numba's simulator: no device memory to count
        return 0, 0
    return int(free), int(total)


def get_device_properties(device=None) -> _CudaDeviceProperties:
    """The GPU's name, compute capability, memory and multiprocessor count."""
    _index(device, "get_device_properties")
    cuda = _require("get_device_properties")
    gpu = cuda.get_current_device()
    name = getattr(gpu, "name", "numba CUDA simulator")     # the simulator's has none
    name = name.decode() if isinstance(name, bytes) else str(name)
    major, minor = gpu.compute_capability
    return _CudaDeviceProperties(name, int(major), int(minor), _memory(cuda)[1],
                                 int(getattr(gpu, "MULTIPROCESSOR_COUNT", 0)))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple:
    props = get_device_properties(device)
    return props.major, props.minor


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes of GPU memory."""
    _index(device, "mem_get_info")
    return _memory(_require("mem_get_info"))


def empty_cache():
    """Release cached GPU memory: numba frees device arrays when they are collected, so this
    flushes numba's deferred deallocations where a GPU is present, and does nothing otherwise."""
    if cuda_available():
        from numba import cuda
        try:
            cuda.current_context().deallocations.clear()
        except AttributeError:
            pass


def memory_allocated(device=None) -> int:
    """Bytes held by live tensors: 0 without a GPU; numba keeps no such counter, so with one
    this is total minus free memory (every allocation on the GPU, not only nn's)."""
    if not cuda_available():
        return 0
    free, total = mem_get_info(device)
    return total - free


max_memory_allocated = memory_allocated
memory_reserved = memory_allocated


def reset_peak_memory_stats(device=None):
    """Nothing to reset: nn keeps no peak counter."""


def manual_seed(seed):
    """nn draws GPU randomness from ``nn.default_generator`` (``nn.manual_seed``): nothing to do."""


manual_seed_all = manual_seed


class device_of:
    """``with nn.cuda.device_of(t):`` — one GPU, nothing to switch."""

    def __init__(self, obj):
        self.obj = obj

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

"""Top-level names PyTorch scripts reach for that are not tensor operations: the version and
the CPU thread count (``torch.set_num_threads``), here the size of the OpenMP pool that nn's
compiled ``parallel`` loops run on (``te.runtime.set_num_threads``)."""
from __future__ import annotations

import importlib.metadata

__all__ = ["__version__", "set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads"]

try:
    __version__ = importlib.metadata.version("tensorweave")
except importlib.metadata.PackageNotFoundError:      # run from a checkout not installed
    __version__ = "0.1.0"

_INTEROP = [1]


def set_num_threads(n):
    """Use ``n`` threads in nn's compiled parallel loops (as ``torch.set_num_threads``)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: expected a positive int, got {n!r}")
    from te.runtime.threads import set_num_threads as set_pool
    set_pool(n)


def get_num_threads() -> int:
    """The number of threads nn's compiled parallel loops use."""
    from te.runtime.threads import get_num_threads as get_pool
    return get_pool()


def set_num_interop_threads(n):
    """Recorded only: nn runs one operator at a time (no inter-op pool)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_interop_threads: expected a positive int, got {n!r}")
    _INTEROP[0] = n


def get_num_interop_threads() -> int:
    return _INTEROP[0]

"""``nn.backends.cudnn``, as ``torch.backends.cudnn``: ``benchmark``, ``deterministic``,
``enabled``, ``allow_tf32`` can be set and read as scripts do. nn runs no cuDNN: its GPU
kernels are its own compiled te kernels, deterministic whatever ``deterministic`` says, so
``is_available()`` is False and ``version()`` None (as torch says where cuDNN is absent)."""
from __future__ import annotations

import contextlib

__all__ = ["benchmark", "deterministic", "enabled", "allow_tf32", "is_available", "version",
           "flags"]

benchmark = False
deterministic = False
enabled = True
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    """False: nn calls no cuDNN."""
    return False


def version():
    """None: no cuDNN library is loaded."""
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """Set the flags inside a ``with`` block, restoring them after."""
    module = globals()
    saved = {k: module[k] for k in ("enabled", "benchmark", "deterministic", "allow_tf32")}
    module.update(enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                  allow_tf32=allow_tf32)
    try:
        yield
    finally:
        module.update(saved)

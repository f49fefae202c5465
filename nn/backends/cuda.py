"""``nn.backends.cuda``: ``is_built()`` and the ``matmul.allow_tf32`` flag scripts set."""
from __future__ import annotations

import types

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """Whether nn can run on an NVIDIA GPU at all (numba's CUDA support is importable)."""
    try:
        import numba.cuda  # noqa: F401
    except ImportError:
        return False
    return True


matmul = types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)

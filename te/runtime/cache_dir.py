"""Where compiled code is cached on disk, shared by both backends (``llvm/`` and ``cuda/``
below it): ``TW_CACHE_DIR`` (default ``~/.cache/tensorweave``; empty turns the caches off), read
once at import; ``set_cache_dir`` changes it at run time."""
from __future__ import annotations

import os


def _from_env():
    path = os.environ.get("TW_CACHE_DIR", "~/.cache/tensorweave")
    return os.path.abspath(os.path.expanduser(path)) if path else None


_cache_dir = _from_env()


def set_cache_dir(path):
    """Use ``path`` for the compile caches from now on; ``None`` (or "") turns them off."""
    global _cache_dir
    _cache_dir = os.path.abspath(os.path.expanduser(os.fspath(path))) if path else None


def get_cache_dir():
    """The cache directory in use, or ``None`` when the caches are off."""
    return _cache_dir

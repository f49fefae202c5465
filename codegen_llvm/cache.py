"""On-disk compile cache: (LLVM IR as emitted, target) -> object code and optimized LLVM IR.

One file per entry, ``<dir>/llvm/<key>.twc``, where ``key`` is the sha256 of the unoptimized IR
text, the target (triple, CPU, features), the llvmlite and LLVM versions and ``FORMAT_VERSION``.
A file is written to a temporary name in the same directory and renamed over the entry
(``os.replace`` is atomic), so a reader sees a whole entry or none, even with several processes
writing the same key. Every entry carries a header with a magic, its key and the sha256 of its
payload; a truncated, foreign or damaged file is reported as a miss (and then rewritten), never
loaded. A directory that cannot be created, read or written makes the cache a no-op.

The directory is ``TW_CACHE_DIR`` (default ``~/.cache/tensorweave``; empty turns the cache off),
read once at import by ``te.runtime.cache_dir`` (shared with the GPU backend's cache);
``set_cache_dir`` changes it at run time, for both.
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import zlib
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm

from te.runtime.cache_dir import get_cache_dir, set_cache_dir  # noqa: F401

# Bump when the layout of an entry, or the meaning of its contents (jit.py's optimization
# pipeline, how the object is loaded), changes: old entries then simply stop matching.
FORMAT_VERSION = 2
MAGIC = b"TWCACHE\x00"
# magic, key (sha256 hex), payload sha256, payload length, object length; the payload is the
# object followed by the optimized IR, zlib-compressed (IR text is most of an entry's bytes)
_HEADER = struct.Struct("<8s64s32sQQ")

_stats = {"hits": 0, "misses": 0, "stores": 0, "corrupt": 0, "errors": 0}
_last_error = None


@dataclass(frozen=True)
class Entry:
    """What a build leaves behind: relocatable object code and the optimized LLVM IR."""

    obj: bytes
    optimized_ir: str


def stats():
    """Counters since the process started: hits, misses, stores, corrupt entries, I/O errors."""
    return dict(_stats, last_error=_last_error)


def key(llvm_ir: str, triple: str, cpu: str, features: str) -> str:
    """The entry name for ``llvm_ir`` compiled for a target: a sha256 hex digest."""
    h = hashlib.sha256()
    parts = (f"tensorweave-llvm-cache/{FORMAT_VERSION}", llvmlite.__version__,
             ".".join(map(str, llvm.llvm_version_info)), triple, cpu, features, llvm_ir)
    for part in parts:
        data = part.encode()
        h.update(struct.pack("<Q", len(data)))      # length-prefixed: no two splits collide
        h.update(data)
    return h.hexdigest()


def _entry_path(entry_key):
    return os.path.join(get_cache_dir(), "llvm", entry_key + ".twc")


def _error(err):
    global _last_error
    _stats["errors"] += 1
    _last_error = f"{type(err).__name__}: {err}"


def load(entry_key: str):
    """The entry stored under ``entry_key``, or ``None`` (cache off, missing or damaged)."""
    if get_cache_dir() is None:
        return None
    try:
        with open(_entry_path(entry_key), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        _stats["misses"] += 1
        return None
    except OSError as err:                      # unreadable file or directory: build instead
        _error(err)
        _stats["misses"] += 1
        return None
    entry = _decode(data, entry_key)
    if entry is None:
        _stats["corrupt"] += 1
        _stats["misses"] += 1
        return None
    _stats["hits"] += 1
    return entry


def store(entry_key: str, entry: Entry) -> bool:
    """Write ``entry`` under ``entry_key`` atomically; False if the cache is off or unwritable."""
    if get_cache_dir() is None:
        return False
    path = _entry_path(entry_key)
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".twc", dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as f:
            f.write(_encode(entry, entry_key))
        os.replace(tmp, path)
        tmp = None
    except OSError as err:                      # read-only, full or missing directory: no cache
        _error(err)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _stats["stores"] += 1
    return True


def _encode(entry, entry_key):
    payload = entry.obj + zlib.compress(entry.optimized_ir.encode(), 1)
    digest = hashlib.sha256(payload).digest()
    return _HEADER.pack(MAGIC, entry_key.encode(), digest, len(payload), len(entry.obj)) + payload


def _decode(data, entry_key):
    if len(data) < _HEADER.size:
        return None
    magic, stored_key, digest, size, obj_size = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if (magic != MAGIC or stored_key != entry_key.encode() or size != len(payload)
            or obj_size > size or hashlib.sha256(payload).digest() != digest):
        return None
    try:
        optimized_ir = zlib.decompress(payload[obj_size:]).decode()
    except (zlib.error, UnicodeDecodeError):
        return None
    return Entry(payload[:obj_size], optimized_ir)

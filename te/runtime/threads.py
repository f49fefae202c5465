"""The thread pool of ``parallel`` loops (libgomp's, one per process) and the fork flag.

Compiled code (JIT or loaded from a library) runs a parallel loop with ``GOMP_parallel``;
``set_num_threads`` (or the environment variable ``TW_NUM_THREADS``) sets the pool's size. In a
process made by ``fork`` (``os.fork``, multiprocessing's "fork" start method, the default on
Linux before Python 3.14) parallel loops run serially on the calling thread, whatever
``set_num_threads`` says: libgomp's pool does not survive fork (the child has none of its
threads, and a parallel loop would wait for them forever). Compiled code reads an int32 flag
before each parallel loop: the JIT resolves ``FORKED_SYMBOL`` to this module's flag, and each
loaded library has a flag of its own that ``register_forked_flag`` adds to the ones set in a
child. Use the "spawn" or "forkserver" start method for parallel children.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

FORKED_SYMBOL = "tw_forked"
_FORKED = ctypes.c_int32(0)
_LIBRARY_FLAGS = []             # the flags of loaded libraries (ctypes objects)


def _after_fork_in_child():
    _FORKED.value = 1
    for flag in _LIBRARY_FLAGS:
        flag.value = 1


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_flag_address() -> int:
    """The address of the flag that JIT code reads as ``FORKED_SYMBOL``."""
    return ctypes.addressof(_FORKED)


def register_forked_flag(flag):
    """Set ``flag`` (a ctypes c_int32 in a loaded library) now and in every forked child,
    as the process's own flag is."""
    flag.value = _FORKED.value
    _LIBRARY_FLAGS.append(flag)


@functools.lru_cache(maxsize=None)
def gomp():
    """libgomp, loaded into the process's global symbol scope (None if absent); applies
    ``TW_NUM_THREADS`` on first use."""
    path = ctypes.util.find_library("gomp")
    if not path:
        return None
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    env = os.environ.get("TW_NUM_THREADS")
    if env:
        lib.omp_set_num_threads(int(env))
    return lib


def set_num_threads(n: int):
    """Use ``n`` threads for ``parallel`` loops called from this thread (in a process made by
    fork, parallel loops run serially whatever ``n`` is: see the module docstring)."""
    if int(n) < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    lib = gomp()
    if lib is not None:
        lib.omp_set_num_threads(int(n))


def get_num_threads() -> int:
    """The number of threads ``parallel`` loops use (1 in a process made by fork)."""
    if _FORKED.value:
        return 1
    lib = gomp()
    return lib.omp_get_max_threads() if lib is not None else 1

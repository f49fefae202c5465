"""The CPU backend's part of the calling convention: the packed-call callback of ``te.extern``.

The calling convention itself (argument checks, the thread pool, workspace arenas) is in
``te.runtime``, shared with the GPU backend and with libraries loaded by
``te.runtime.load_module``; its names are re-exported here for the code that imports them from
their old home.
"""
from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from te.runtime.errors import ArgumentError  # noqa: F401  (codegen_llvm.runtime.ArgumentError)
from te.runtime.signature import (INT32_MAX, Signature, as_array_view,  # noqa: F401
                                  check_index_width, dtype_label, fast_converter)
from te.runtime.threads import (FORKED_SYMBOL, _FORKED, forked_flag_address,  # noqa: F401
                                get_num_threads, set_num_threads)
from te.runtime.threads import gomp as _gomp  # noqa: F401
from te.runtime.workspace import (ARENA_ALIGN, _ARENAS, release_workspace,  # noqa: F401
                                  with_workspace, workspace_arena, workspace_size)


class PackedCallback:
    """The C function that compiled code calls for ``tvm_call_packed``: ``int32 (int32 site,
    int64 *values)``. It wraps each buffer as a ``te.nd.NDArray`` view of the memory (no copy)
    and calls the registered Python function; an exception is kept for the caller of the
    built function (``take_error``) and the call returns -1, which makes the code return."""

    PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64))

    def __init__(self, sites):
        self.sites = sites              # per site: (function name, argument kinds)
        self._local = threading.local()
        self.cfunc = self.PROTO(self._call)    # kept alive as long as the module
        self.address = ctypes.cast(self.cfunc, ctypes.c_void_p).value

    def _call(self, site, values):
        from schedule.interp import call_extern
        from te.extern import get_global_func
        from te.nd import NDArray, cpu
        name, kinds = self.sites[site]
        try:
            args, pos = [], 0
            for kind in kinds:
                if kind[0] == "buffer":
                    _, dtype, ndim = kind
                    shape = [values[pos + 1 + d] for d in range(ndim)]
                    args.append(NDArray(_view(values[pos], shape, dtype), cpu(0)))
                    pos += 1 + ndim
                elif kind[0] == "float":
                    bits = ctypes.c_int64(values[pos])
                    args.append(ctypes.cast(ctypes.pointer(bits),
                                            ctypes.POINTER(ctypes.c_double))[0])
                    pos += 1
                else:
                    args.append(bool(values[pos]) if kind[1] == "bool" else int(values[pos]))
                    pos += 1
            call_extern(name, get_global_func(name), args)
        except BaseException as err:        # never unwind through the compiled frames
            self._local.error = err
            return -1
        return 0

    def take_error(self):
        err = getattr(self._local, "error", None)
        self._local.error = None
        return err


def _view(address, shape, dtype):
    """A numpy array over ``prod(shape)`` elements of ``dtype`` at ``address`` (no copy)."""
    dt = np.dtype("float16" if dtype == "float16" else dtype)
    nbytes = math.prod(shape) * dt.itemsize
    if nbytes == 0 or not address:
        return np.empty(shape, dt)
    raw = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(raw, dt).reshape(shape)

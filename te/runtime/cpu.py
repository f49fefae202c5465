"""``CPUFunction``: compiled CPU code at an address, called on arrays with the calling
convention's checks. ``te.build(..., "llvm")`` (JIT code) and ``load_module`` (a shared
library) both make one.

The C function returns an int32 status (0: done; ``ERROR_STATUS + k``: error site k failed)
and takes: the buffers' data pointers, the error record of the in-kernel index checks (when
the function has check sites), the scalar arguments, the hidden size variables, the workspace
arena (when it has one) and the packed-call callback (when it calls ``te.extern`` code).
"""
from __future__ import annotations

import ctypes
import time

from .bench import BenchmarkResult
from .signature import ERROR_SLOTS, Signature, fast_converter, index_error, site_error
from .workspace import with_workspace

ERROR_STATUS = 1000

CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
          "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
          "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
          "float64": ctypes.c_double, "bool": ctypes.c_bool}


def prototype(info):
    """The ctypes function type of a function with this FunctionInfo."""
    d = info.data
    n_ptr = sum(1 for p in d["params"] if "buffer" in p)
    argtypes = [ctypes.c_void_p] * (n_ptr + d["index_error"])
    for _, dtype in d["vars"]:
        if dtype not in CTYPES:
            raise TypeError(f"{d['name']}: a scalar of dtype {dtype} cannot be passed")
        argtypes.append(CTYPES[dtype])
    if d["workspace"] is not None:
        argtypes.append(ctypes.c_void_p)
    if d["packed_calls"]:
        argtypes.append(ctypes.c_void_p)
    return ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)


class CPUFunction:
    """A compiled CPU function: call it on arrays; ``time_evaluator`` times it."""

    def __init__(self, info, address, packed=None):
        """``address``: the C entry point; ``packed``: the callback object of its
        ``te.call_packed`` sites (``address``, ``take_error()``), or None."""
        self.info = info
        self.entry_name = self.name = info.name
        self._sig = Signature(info)
        self._fast = fast_converter(self._sig)
        n_ptr = len(self._sig.buffers)
        self._record_at = n_ptr if self._sig.has_record else None
        self.workspace_bytes = info.data["workspace"]
        self._packed = packed
        cfunc = prototype(info)(address)
        if self.workspace_bytes is not None:    # an arena of its own per call, nested too
            self._cfunc = with_workspace(cfunc, self.workspace_bytes,
                                         packed and packed.address)
        elif packed is not None:
            def with_callback(*cargs, _f=cfunc, _cb=packed.address):
                return _f(*cargs, _cb)
            self._cfunc = with_callback
        else:
            self._cfunc = cfunc

    def __call__(self, *args):
        cargs = self._fast(args) if self._fast is not None else None
        if cargs is None:
            cargs, _keep = self._sig.convert(args)
        if self._record_at is not None:
            self._call_checked(cargs)
            return
        status = self._cfunc(*cargs)
        if status:
            self._raise_status(status, cargs)

    def _raise_status(self, status, cargs=()):
        err = self._packed.take_error() if self._packed is not None else None
        if err is not None:
            raise err
        sites = self._sig.error_sites
        if 0 <= status - ERROR_STATUS < len(sites):
            raise site_error(self.name, sites[status - ERROR_STATUS], self._sig.vars,
                             self._var_values(cargs))
        raise RuntimeError(f"{self.name} returned error status {status}")

    def _var_values(self, cargs):
        """The scalar and size-variable values of a call from its C arguments."""
        start = len(self._sig.buffers) + (self._record_at is not None)
        return list(cargs[start:start + len(self._sig.vars)])

    def _with_record(self, cargs):
        """The C arguments with a fresh error record for the in-kernel index checks."""
        record = (ctypes.c_int64 * ERROR_SLOTS)(-1)
        k = self._record_at
        return (*cargs[:k], ctypes.addressof(record), *cargs[k:]), record

    def _call_checked(self, cargs):
        full, record = self._with_record(cargs)
        status = self._cfunc(*full)
        if status:
            self._raise_status(status, full)
        if record[0] >= 0 or record[ERROR_SLOTS - 1]:
            self._raise_index_error(record, cargs)

    def _raise_index_error(self, record, cargs):
        k = self._record_at
        values = list(cargs[k:k + len(self._sig.vars)])
        site = self._sig.check_sites[record[0]]     # -1 (no site recorded): any, for the text
        raise index_error(self.name, site, record, values)

    def __getitem__(self, name):
        if name != self.entry_name:
            raise KeyError(f"module has one function, {self.entry_name!r}; got {name!r}")
        return self

    def get_function(self, name):
        return self[name]

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, min_repeat_ms=0,
                       **_):
        """A function that runs the module ``number`` times per repeat and returns timings."""
        if isinstance(func_name, str) and func_name != self.entry_name:
            raise KeyError(f"time_evaluator: no function {func_name!r} in this module")
        if number < 1 or repeat < 1:
            raise ValueError("time_evaluator: number and repeat must be >= 1")

        def evaluate(*args):
            cargs, keep = self._sig.convert(args)
            if self._record_at is not None:
                cargs, record = self._with_record(cargs)
                keep = (keep, record)
            fn = self._cfunc
            status = fn(*cargs)                          # warm-up
            if status:
                self._raise_status(status, cargs)
            results = []
            for _ in range(repeat):
                n = number
                while True:
                    t0 = time.perf_counter()
                    for _ in range(n):
                        fn(*cargs)
                    dt = time.perf_counter() - t0
                    if dt * 1000 >= min_repeat_ms or n > 1 << 20:
                        break
                    n *= 2
                results.append(dt / n)
            del keep
            return BenchmarkResult(results)
        return evaluate

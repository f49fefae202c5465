"""The callable result of ``te.build(..., target="llvm")``."""
from __future__ import annotations

import ctypes
import statistics
import time

from .emit import ERROR_STATUS, symbol
from .runtime import ArgumentError, PackedCallback, Signature, fast_converter, with_workspace


class BenchmarkResult:
    """Timings in seconds, like TVM's ``time_evaluator`` result."""

    def __init__(self, results):
        self.results = tuple(results)
        self.mean = statistics.fmean(self.results)
        self.median = statistics.median(self.results)
        self.min = min(self.results)
        self.max = max(self.results)
        self.std = statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    def __repr__(self):
        return (f"BenchmarkResult(mean={self.mean:.6g} s, median={self.median:.6g} s, "
                f"std={self.std:.3g} s, repeats={len(self.results)})")


def site_error(name, site, values):
    """The exception for error site ``site`` (emit.ErrorSite) of function ``name``, given the
    values of its scalar and shape variables: MemoryError for an allocation that failed (its
    byte count overflows 64 bits or malloc returned NULL), ArgumentError for an intermediate
    too large for int32 indices."""
    from schedule.simplify import simplify
    from te.expr import IntImm, const
    from te.functor import free_vars, substitute
    vmap = {v: const(x, v.dtype) for v, x in values.items()}
    count, used = 1, {}
    for f in site.factors:
        used.update((v, values[v]) for v in free_vars(f) if v in values)
        val = simplify(substitute(f, vmap))
        count = count * max(0, val.value) if isinstance(val, IntImm) and count is not None \
            else None
    given = f" ({', '.join(f'{v.name} = {x}' for v, x in used.items())})" if used else ""
    buf = f"intermediate buffer {site.buffer.name}"
    if site.kind == "index_width":
        return ArgumentError(f"{name}: {buf} has {count} elements{given}, more than 2^31 - 1, "
                             "which this function's int32 index arithmetic cannot address; "
                             "declare the size variables as te.var(name, 'int64') (and "
                             "te.placeholder shapes as int64) to handle it")
    if count is None:
        return MemoryError(f"{name}: {buf}{given} could not be allocated: its size "
                           f"{' * '.join(map(str, site.factors))} elements of "
                           f"{site.itemsize} bytes is too large (out of memory)")
    nbytes = count * site.itemsize
    why = "more than 64-bit sizes hold" if nbytes >= 2**63 else "out of memory"
    return MemoryError(f"{name}: {buf} needs {nbytes} bytes{given}: {why}")


class Module:
    """A compiled function: call it on arrays; inspect it with ``get_source``."""

    def __init__(self, func, shape_vars, jit, source_ll, target, workspace=None,
                 packed_sites=(), error_sites=()):
        self.lowered = func
        self.entry_name = func.name
        self.name = func.name
        self.target = target
        self._jit = jit
        self._source_ll = source_ll
        self._sig = Signature(func, shape_vars)
        self._error_sites = tuple(error_sites)     # status ERROR_STATUS + k: site k failed
        self._fast = fast_converter(self._sig)
        n_ptr = len(self._sig.buffers)
        self._record_at = n_ptr if self._sig.index_error is not None else None
        argtypes = [ctypes.c_void_p] * (n_ptr + (self._record_at is not None))
        for v in self._sig.scalars + list(shape_vars):
            argtypes.append(_CTYPES[v.dtype])
        self.workspace_bytes = workspace        # None: the function takes no workspace
        if workspace is not None:
            argtypes.append(ctypes.c_void_p)
        # extern stages: the compiled code calls back into Python through this pointer
        self._packed = PackedCallback(list(packed_sites)) if packed_sites else None
        if self._packed is not None:
            argtypes.append(ctypes.c_void_p)
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)
        cfunc = proto(jit.address(symbol(func.name)))
        if workspace is not None:       # an arena of its own per call, nested calls too
            self._cfunc = with_workspace(cfunc, workspace, self._packed and self._packed.address)
        elif self._packed is not None:
            def with_callback(*cargs, _f=cfunc, _cb=self._packed.address):
                return _f(*cargs, _cb)
            self._cfunc = with_callback
        else:
            self._cfunc = cfunc
        self.imported_modules = []

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
        if 0 <= status - ERROR_STATUS < len(self._error_sites):
            raise site_error(self.name, self._error_sites[status - ERROR_STATUS],
                             self._size_values(cargs))
        raise RuntimeError(f"{self.name} returned error status {status}")

    def _size_values(self, cargs) -> dict:
        """The scalar and shape-variable values of a call from its C arguments."""
        names = self._sig.scalars + self._sig.shape_vars
        start = len(self._sig.buffers) + (self._record_at is not None)
        return dict(zip(names, cargs[start:start + len(names)]))

    def _with_record(self, cargs):
        """The C arguments with a fresh error record for the in-kernel index checks."""
        from schedule.bound_checks import ERROR_SLOTS
        record = (ctypes.c_int64 * ERROR_SLOTS)(-1)
        k = self._record_at
        return (*cargs[:k], ctypes.addressof(record), *cargs[k:]), record

    def _call_checked(self, cargs):
        from schedule.bound_checks import ERROR_SLOTS
        full, record = self._with_record(cargs)
        status = self._cfunc(*full)
        if status:
            self._raise_status(status, full)
        if record[0] >= 0 or record[ERROR_SLOTS - 1]:
            self._raise_index_error(record, cargs)

    def _raise_index_error(self, record, cargs):
        from schedule.bound_checks import site_size
        site = self.lowered.check_sites[record[0]]
        k = self._record_at
        values = list(cargs[k:k + len(self._sig.pre_names)])
        raise IndexError(site.message(self.name, record,
                                      site_size(site, self._sig.pre_names, values)))

    def __getitem__(self, name):
        if name != self.entry_name:
            raise KeyError(f"module has one function, {self.entry_name!r}; got {name!r}")
        return self

    def get_function(self, name):
        return self[name]

    def get_source(self, fmt="ll"):
        """'ll': optimized LLVM IR; 'll-raw': LLVM IR as emitted; 'asm'; 'ir': the loop IR."""
        if fmt in ("ll", "llvm"):
            return self._jit.optimized_ir
        if fmt == "ll-raw":
            return self._source_ll
        if fmt in ("asm", "s"):
            return self._jit.asm
        if fmt in ("ir", "lowered", "tir"):
            return str(self.lowered)
        raise ValueError(f"get_source: unknown format {fmt!r}; use 'll', 'll-raw', 'asm' or 'ir'")

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

    def export_library(self, path):
        raise NotImplementedError("export_library is not supported yet; rebuild the module "
                                  "with te.build in the process that uses it")


_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
           "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
           "float64": ctypes.c_double, "bool": ctypes.c_bool}

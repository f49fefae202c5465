"""The callable result of ``te.build(..., target="cuda")``, and the kernel runtime.

Numpy arguments are copied to the GPU and outputs copied back; numba device arrays and any
object with ``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors) are used in place.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import sys
import time

import numpy as np

from te.runtime import ArgumentError, BenchmarkResult, Signature, as_array_view
from te.runtime.cache_dir import get_cache_dir
from te.runtime.signature import ERROR_SLOTS, index_error

from . import simulate
from .emit import (NUMBA_TYPE, jit_takes_launch_bounds, launch_excess, launch_excess_message,
                   simulator)


def _globals():
    from numba import cuda, types

    g = {"cuda": cuda, "math": math, "np": np, "min": min, "max": max}
    for dt, short in NUMBA_TYPE.items():
        if simulator():
            # what numba's type objects do when called on a value (``types.float32(x)`` is
            # ``np.float32(x)``, ``types.boolean(x)`` is ``bool(x)``), without their argument
            # checks: casts are most of the simulator's time otherwise; its arrays take these
            g[short] = bool if dt == "bool" else getattr(np, dt)
        else:
            g[short] = getattr(types, "boolean" if dt == "bool" else dt)

    g.update(_launch=_launch)
    if simulator():
        g["math"] = _SimulatorMath()
    return g


def _launch(kernel, grid, block, *args):
    """Launch ``kernel`` (numba's, or ``codegen_cuda.simulate``'s) after the launch checks."""
    if min(grid) <= 0 or min(block) <= 0:
        return
    block, grid = [int(b) for b in block], [int(g) for g in grid]
    excess = launch_excess(block, grid)
    if excess is not None:
        raise ArgumentError(f"for these shapes, kernel {getattr(kernel, '__name__', '')} "
                            f"would launch {launch_excess_message(excess, block)}")
    launch = kernel[tuple(grid), tuple(block)]
    if not simulator() or isinstance(kernel, simulate.Kernel):
        launch(*args)
        return
    # numba's simulator runs a block's threads as Python threads, and every shared array it
    # allocates looks up its call site in the stack (a file system call, which lets go of
    # the GIL): at the interpreter's default switch interval (5 ms) each allocation waited
    # that long for the GIL to come back. A short interval while the kernel runs.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)
    try:
        launch(*args)
    finally:
        sys.setswitchinterval(interval)


class _SimulatorMath:
    """``math`` for kernels on the simulator, whose values are numpy scalars: numpy's float32
    has no ``__trunc__``, so ``math.trunc(x)`` (float -> int casts) takes it as a float; and
    where Python's math raises (``log(0)``, ``sqrt(-1)``, ``exp(1000)``, ``floor(nan)``) the
    GPU gives IEEE's -inf, NaN or inf: numpy's function gives them here."""

    _NUMPY = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "atan2": "arctan2",
              "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh", "pow": "power"}

    def __getattr__(self, name):
        f = getattr(math, name)
        alt = getattr(np, self._NUMPY.get(name, name), None)
        if not callable(f) or not isinstance(alt, np.ufunc):
            return f

        def ieee(*args):
            try:
                return f(*args)
            except (ValueError, OverflowError):
                with np.errstate(all="ignore"):
                    return alt(*args)
        setattr(self, name, ieee)       # found once per name
        return ieee

    @staticmethod
    def trunc(x):
        return math.trunc(float(x))


SIMULATOR_SWITCH_INTERVAL = 1e-3        # seconds


_JIT = re.compile(r"^@cuda\.jit(?:\((.*)\))?$", re.M)


def _load(source, name):
    """The namespace of the kernels and the host function of ``source``.

    On a real GPU, with the compile cache on (``TW_CACHE_DIR``, ``te.runtime.cache_dir``), the
    source is written to ``<cache>/cuda/k<sha256>.py`` (once; the name follows the content) and
    run from there with ``cache=True`` on every kernel: numba keeps each kernel's machine code
    in ``__pycache__`` beside the file, and a later process loads it instead of compiling (a
    tiled kernel takes seconds to compile). Otherwise, and on numba's simulator, the source
    runs in memory."""
    g = _globals()
    if simulator() and simulate.runs_here(source):
        # our own block-at-a-time runner (codegen_cuda.simulate), not numba's thread per thread
        g["cuda"] = simulate.SimulatedCuda()
        source = simulate.barriers_as_yields(source)
    cached = None if simulator() else _cache_file(source)
    if cached is None:
        exec(compile(source, f"<tensorweave cuda {name}>", "exec"), g)
    else:
        path, text = cached
        g["__name__"] = "tensorweave_cuda_" + os.path.basename(path)[:-3]
        exec(compile(text, path, "exec"), g)   # numba finds the file (and its cache) by name
    return g


def _cache_file(source):
    """(path, text) of ``source`` with ``cache=True`` on its kernels, written once into the
    compile cache's ``cuda/`` directory; None when the cache is off or cannot be written."""
    root = get_cache_dir()
    if root is None:
        return None
    text = _JIT.sub(lambda m: f"@cuda.jit({', '.join(filter(None, ['cache=True', m[1]]))})",
                    source)
    path = os.path.join(root, "cuda", f"k{hashlib.sha256(text.encode()).hexdigest()[:40]}.py")
    try:
        if not os.path.exists(path):
            from .compile_cache import write_atomic
            write_atomic(path, text)
    except OSError:
        return None
    return path, text


def _is_gpu_array(x):
    return hasattr(x, "copy_to_host") or hasattr(x, "__cuda_array_interface__")


def _gpu_view(arg, name):
    if not _is_gpu_array(arg):
        if hasattr(arg, "__array_interface__"):
            # A numpy view of a te.nd.NDArray's memory, so that outputs are copied back into it
            return as_array_view(np.asarray(arg), name)
        raise ArgumentError(f"argument {name} must be a numpy array or a GPU array (numba device "
                            "array, or any object with __cuda_array_interface__), got "
                            f"{type(arg).__name__}")
    if hasattr(arg, "copy_to_host"):
        dev = arg
    else:
        from numba import cuda
        dev = cuda.as_cuda_array(arg)
    iface = getattr(dev, "__cuda_array_interface__", None)
    if iface:
        ptr = iface["data"][0]
    else:                   # numba's simulator: a fake device array around a numpy array
        ptr = np.asarray(getattr(dev, "_ary", dev)).__array_interface__["data"][0]
    contiguous = dev.is_c_contiguous() if hasattr(dev, "is_c_contiguous") else True
    return ptr, tuple(dev.shape), np.dtype(dev.dtype).name, contiguous, True, dev


class CudaModule:
    """Compiled kernels and the host code that launches them."""

    type_key = "cuda"

    def __init__(self, func, shape_vars, source, kernels, names, target):
        from te.runtime.describe import describe
        self.lowered = func
        self.target = target
        self.kernels = kernels
        self.kernel_names = [k.name for k in kernels]
        self._names = names
        self._setup(describe(func, shape_vars), source)

    def _setup(self, info, source):
        """Load the kernels of ``source`` for the function ``info`` describes (a build and
        ``te.runtime.load_module`` both end here)."""
        self.info = info
        self.entry_name = self.name = info.name
        self._source = source
        self._sig = Signature(info, view=_gpu_view)
        g = _load(source, info.name)
        self._host = g["host"]
        self._globals = g
        # TVM splits host and device code and reads kernels as mod.imported_modules[0]
        # .get_source(); here one module holds both, so it stands for its own device module.
        self.imported_modules = [self]

    def _device_args(self, args):
        from numba import cuda
        cargs, keep = self._sig.convert(args)     # buffers first, then scalars, shape vars
        n_buf = len(self._sig.buffers)
        dev_args, copy_back = [], []
        for obj, spec in zip(keep, self._sig.buffers):
            if isinstance(obj, np.ndarray):
                d = cuda.to_device(np.ascontiguousarray(obj).reshape(-1))
                if spec.is_out:
                    copy_back.append((d, obj))
            else:
                d = obj.reshape(obj.size) if obj.ndim != 1 else obj
            dev_args.append(d)
        record = None
        if self._sig.has_record:                   # the in-kernel index checks' record
            init = np.zeros(ERROR_SLOTS, np.int64)
            init[0] = -1
            record = cuda.to_device(init)
            dev_args.append(record)
        self._record = record
        self._scalars = list(cargs[n_buf:])
        return dev_args + list(cargs[n_buf:]), copy_back

    def __call__(self, *args):
        from numba import cuda
        dev_args, copy_back = self._device_args(args)
        record, scalars = self._record, self._scalars
        self._host(*dev_args)
        for d, host in copy_back:
            host.reshape(-1)[...] = d.copy_to_host()
        cuda.synchronize()
        if record is not None:
            rec = record.copy_to_host()
            if rec[0] >= 0 or rec[-1]:
                site = self._sig.check_sites[int(rec[0])]
                raise index_error(self.name, site, rec, [int(v) for v in scalars])

    def __getitem__(self, name):
        if name != self.entry_name:
            raise KeyError(f"module has one function, {self.entry_name!r}; got {name!r}")
        return self

    def get_function(self, name):
        return self[name]

    @classmethod
    def from_library(cls, info, source, kernel_names, ptx=None):
        """The module of a library that ``export_library`` wrote (``te.runtime.load_module``):
        its kernels are compiled again from their numba source, on a GPU with numba's kernel
        cache (``TW_CACHE_DIR``); ``ptx`` is kept for ``get_source("ptx")``."""
        mod = cls.__new__(cls)
        mod.lowered = None
        mod.target = None
        mod.kernels = None
        mod._names = None
        mod.kernel_names = list(kernel_names)
        mod._ptx = ptx
        mod._setup(info, source)
        return mod

    def export_library(self, path):
        """Write the host code's metadata, the numba source of kernels and host code and, where
        NVVM is available (not on the simulator), the kernels' PTX to ``path``, a ``.tar``
        that ``te.runtime.load_module`` loads (layout: ``te/runtime/library.py``)."""
        import io
        import json
        import tarfile
        from te.runtime import library
        path = os.fspath(path)
        if not path.endswith(".tar"):
            raise ValueError(f"export_library: {path!r}: a CUDA module is written as a .tar "
                             "(metadata, kernel source and PTX); use a name ending in .tar")
        problem = self.info.portable_problem()
        if problem is not None:
            raise ValueError(f"export_library: {self.name} cannot be exported: {problem}")
        meta = {"format": library.LIBRARY_FORMAT, "version": library.LIBRARY_VERSION,
                "kind": "cuda", "entry": self.name,
                "functions": [{"symbol": self.name, "info": self.info.data,
                               "kernels": self.kernel_names}]}
        files = {library.METADATA_NAME: json.dumps(meta, indent=1).encode(),
                 library.CUDA_SOURCE: self._source.encode()}
        ptx = None if simulator() else self.get_source("ptx")
        if ptx is not None:
            files[library.CUDA_PTX] = ptx.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in files.items():
                entry = tarfile.TarInfo(name)
                entry.size, entry.mode, entry.mtime = len(data), 0o644, int(time.time())
                tar.addfile(entry, io.BytesIO(data))
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)
        return path

    def __repr__(self):
        return f"CudaModule({self.name}: {self._sig.arg_names})"

    def get_source(self, fmt="cuda"):
        """'cuda': the numba.cuda kernels and host code; 'ptx': PTX (needs NVVM); 'ir'."""
        if fmt in ("cuda", "py", "source"):
            return self._source
        if fmt in ("ir", "lowered", "tir"):
            if self.lowered is None:
                raise ValueError("get_source('ir'): a module loaded from a library has no "
                                 "loop IR; use 'cuda' or 'ptx'")
            return str(self.lowered)
        if fmt == "ptx":
            if self.kernels is None:            # loaded from a library
                if getattr(self, "_ptx", None) is None:
                    raise ValueError(f"get_source('ptx'): the library of {self.name} was "
                                     "exported without PTX (on the simulator)")
                return self._ptx
            return compile_ptx(self)
        raise ValueError(f"get_source: unknown format {fmt!r}; use 'cuda', 'ptx' or 'ir'")

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, **_):
        """Time the kernels on device arrays (numpy arguments are copied once, first)."""
        from numba import cuda

        def evaluate(*args):
            dev_args, _ = self._device_args(args)
            self._host(*dev_args)
            cuda.synchronize()
            results = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                for _ in range(number):
                    self._host(*dev_args)
                cuda.synchronize()
                results.append((time.perf_counter() - t0) / number)
            return BenchmarkResult(results)
        return evaluate


def compile_ptx(mod: CudaModule, cc=(9, 0)) -> str:
    """PTX of every kernel of ``mod`` for compute capability ``cc`` (without running them);
    each kernel's PTX is cached on disk across processes (``codegen_cuda.compile_cache``)."""
    if simulator():
        raise RuntimeError("PTX needs NVVM; it is not available under NUMBA_ENABLE_CUDASIM=1")
    from .compile_cache import ptx_of
    return "\n".join(ptx_of(mod._source, mod.kernels, cc))


def kernels_ptx(namespace, kernels, cc=(9, 0)) -> str:
    """PTX of ``kernels`` (``emit.Kernel``: names, parameters, launch bounds) whose functions
    are defined in ``namespace`` (the globals of a module's source)."""
    from numba import cuda, types
    if simulator():
        raise RuntimeError("PTX needs NVVM; it is not available under NUMBA_ENABLE_CUDASIM=1")
    out = []
    for k in kernels:
        sig = [getattr(types, _scalar(b.dtype))[::1] for b in k.buffers]
        sig += [getattr(types, _scalar(v.dtype)) for v in k.scalars]
        py = namespace[k.name].py_func
        bounds = dict(launch_bounds=k.launch_bounds) if jit_takes_launch_bounds() else {}
        ptx, _ = cuda.compile_ptx(py, tuple(sig), cc=cc, **bounds)
        out.append(ptx)
    return "\n".join(out)


def _scalar(dtype):
    return "boolean" if dtype == "bool" else dtype

"""The calling convention: argument checks, shape-variable binding, and the thread count.

A built function takes arrays (numpy, te.nd.NDArray, anything with ``__array_interface__`` or
DLPack) without copying. Each call checks the count, dtype, rank, shape (binding symbolic
sizes), C-contiguity and, for outputs, writeability, and names the argument in every error.
Parallel loops run on libgomp's persistent thread pool; ``set_num_threads`` (or the
environment variable ``TW_NUM_THREADS``) sets its size.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

import numpy as np

from te.expr import IntImm, Var


class ArgumentError(TypeError):
    """A built function was called with an argument that does not match its declaration."""


@functools.lru_cache(maxsize=None)
def _gomp():
    path = ctypes.util.find_library("gomp")
    if not path:
        return None
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    env = os.environ.get("TW_NUM_THREADS")
    if env:
        lib.omp_set_num_threads(int(env))
    return lib


def set_num_threads(n: int):
    """Use ``n`` threads for ``parallel`` loops called from this thread."""
    if int(n) < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    lib = _gomp()
    if lib is not None:
        lib.omp_set_num_threads(int(n))


def get_num_threads() -> int:
    """The number of threads ``parallel`` loops use."""
    lib = _gomp()
    return lib.omp_get_max_threads() if lib is not None else 1


def _describe(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def as_array_view(arg, name):
    """(data pointer, shape, dtype name, C-contiguous, writeable) of an array-like argument."""
    if isinstance(arg, np.ndarray):
        return (arg.__array_interface__["data"][0], arg.shape, arg.dtype.name,
                arg.flags.c_contiguous, arg.flags.writeable, arg)
    iface = getattr(arg, "__array_interface__", None)
    if iface is not None:
        ptr, readonly = iface["data"]
        dtype = np.dtype(iface["typestr"])
        shape = tuple(iface["shape"])
        strides = iface.get("strides")
        contiguous = strides is None or tuple(strides) == _c_strides(shape, dtype.itemsize)
        return ptr, shape, dtype.name, contiguous, not readonly, arg
    if hasattr(arg, "__dlpack__"):
        try:
            arr = np.from_dlpack(arg)
        except (BufferError, RuntimeError, TypeError) as err:
            raise ArgumentError(f"argument {name}: cannot view it on the CPU through DLPack "
                                f"({err}); pass a host array") from None
        return as_array_view(arr, name)
    raise ArgumentError(f"argument {name} must be an array (numpy array, te.nd.NDArray, or an "
                        f"object with __array_interface__ or DLPack), got "
                        f"{type(arg).__name__}")


def _c_strides(shape, itemsize):
    strides, acc = [], itemsize
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


class Signature:
    """What a built function expects, prepared once so that each call is cheap."""

    def __init__(self, func, shape_vars):
        from schedule.ir import Buffer
        self.name = func.name
        self.params = func.params
        self.buffers = [p for p in func.params if isinstance(p, Buffer)]
        self.scalars = [p for p in func.params if isinstance(p, Var)]
        self.outputs = set(id(b) for b in func.outputs)
        self.shape_vars = list(shape_vars)
        self.arg_names = ", ".join(p.name for p in func.params)

    def convert(self, args):
        """The C arguments for ``args`` (pointers, scalars, shape variables), all checked."""
        if len(args) != len(self.params):
            raise ArgumentError(f"{self.name} takes {len(self.params)} arguments "
                                f"({self.arg_names}), got {len(args)}")
        env = {}
        ptrs, scalars, keep, out_ptrs, in_ptrs = [], [], [], [], []
        for p, a in zip(self.params, args):
            if isinstance(p, Var):
                if not isinstance(a, (int, float, np.number)):
                    raise ArgumentError(f"argument {p.name} is a scalar of dtype {p.dtype}, got "
                                        f"{type(a).__name__}")
                env[p] = a
                scalars.append(a)
                continue
            ptr, shape, dtype, contiguous, writeable, obj = as_array_view(a, p.name)
            keep.append(obj)
            if dtype != p.dtype:
                raise ArgumentError(f"argument {p.name}: expected dtype {p.dtype}, got {dtype} "
                                    f"(convert with .astype('{p.dtype}'))")
            if len(shape) != len(p.shape):
                raise ArgumentError(f"argument {p.name}: expected {len(p.shape)} dimensions "
                                    f"{_describe(p.shape)}, got shape {tuple(shape)}")
            for d, (dim, got) in enumerate(zip(p.shape, shape)):
                if isinstance(dim, IntImm):
                    if dim.value != got:
                        raise ArgumentError(f"argument {p.name}: dimension {d} must be "
                                            f"{dim.value}, got shape {tuple(shape)}")
                elif isinstance(dim, Var):
                    bound = env.get(dim)
                    if bound is None:
                        env[dim] = got
                    elif bound != got:
                        raise ArgumentError(f"argument {p.name}: dimension {d} is {got} but "
                                            f"{dim.name} = {bound} from an earlier argument")
            if not contiguous:
                raise ArgumentError(f"argument {p.name} is not C-contiguous; pass "
                                    "np.ascontiguousarray(x)")
            is_out = id(p) in self.outputs
            if is_out and not writeable:
                raise ArgumentError(f"argument {p.name} is an output but is read-only")
            (out_ptrs if is_out else in_ptrs).append((ptr, p.name))
            ptrs.append(ptr)
        for ptr, oname in out_ptrs:
            for iptr, iname in in_ptrs:
                if ptr == iptr and ptr:
                    raise ArgumentError(f"argument {oname} (an output) is the same memory as "
                                        f"{iname}; pass a separate output array")
        self._check_shape_exprs(args, env)
        shape_vals = []
        for v in self.shape_vars:
            if v not in env:
                raise ArgumentError(f"{self.name}: cannot tell the value of {v.name} from the "
                                    "argument shapes; pass it as a scalar argument")
            shape_vals.append(env[v])
        return ptrs + scalars + shape_vals, keep

    def _check_shape_exprs(self, args, env):
        from schedule.simplify import simplify
        from te.functor import substitute
        from te.expr import const
        for p, a in zip(self.params, args):
            if isinstance(p, Var):
                continue
            shape = np.shape(a) if not hasattr(a, "shape") else tuple(a.shape)
            for d, dim in enumerate(p.shape):
                if isinstance(dim, (IntImm, Var)):
                    continue
                val = simplify(substitute(dim, {v: const(x, v.dtype) for v, x in env.items()
                                                 if isinstance(v, Var)}))
                if isinstance(val, IntImm) and val.value != shape[d]:
                    raise ArgumentError(f"argument {p.name}: dimension {d} must be {dim} = "
                                        f"{val.value}, got shape {tuple(shape)}")

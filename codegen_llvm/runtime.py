"""The calling convention: argument checks, shape-variable binding, and the thread count.

A built function takes arrays (numpy, te.nd.NDArray, anything with ``__array_interface__`` or
DLPack) without copying. Each call checks the count, dtype, rank, shape (binding symbolic
sizes), C-contiguity and, for outputs, writeability, and names the argument in every error.
Parallel loops run on libgomp's persistent thread pool; ``set_num_threads`` (or the
environment variable ``TW_NUM_THREADS``) sets its size. In a process made by ``fork``
(``os.fork``, multiprocessing's "fork" start method, the default on Linux before Python 3.14)
parallel loops run serially on the calling thread, whatever ``set_num_threads`` says: libgomp's
pool does not survive fork (the child has none of its threads, and a parallel loop would wait
for them forever). Use the "spawn" or "forkserver" start method for parallel children.
Functions with large intermediate buffers get them from a workspace arena of the calling
thread that grows to the largest request and is kept (``with_workspace``;
``release_workspace`` frees the calling thread's idle ones); a call made while another runs
on the same thread (from a ``te.extern`` callback) gets an arena of its own.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import os
import threading

import numpy as np

from te import dtypes
from te.expr import IntImm, Var


from schedule.bound_checks import ArgumentError  # noqa: E402  (shared with the interpreter)


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


# Nonzero in a process made by fork from one that imported this module. libgomp's thread pool
# does not survive fork (the child has none of the parent's threads, and GOMP_parallel waits
# for them forever), so compiled code checks this flag before each parallel loop and, when it
# is set, runs the loop's body on the calling thread alone. jit.py resolves the symbol.
FORKED_SYMBOL = "tw_forked"
_FORKED = ctypes.c_int32(0)


def _after_fork_in_child():
    _FORKED.value = 1


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_flag_address() -> int:
    """The address of the flag that compiled code reads as ``FORKED_SYMBOL``."""
    return ctypes.addressof(_FORKED)


def set_num_threads(n: int):
    """Use ``n`` threads for ``parallel`` loops called from this thread (in a process made by
    fork, parallel loops run serially whatever ``n`` is: see the module docstring)."""
    if int(n) < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    lib = _gomp()
    if lib is not None:
        lib.omp_set_num_threads(int(n))


ARENA_ALIGN = 64


class _IdleArenas(threading.local):
    """This thread's workspace arenas that no running call uses."""

    def __init__(self):
        self.arenas = []        # each [size, 64-byte aligned address, the numpy buffer]


_ARENAS = _IdleArenas()


def _grow(arena, nbytes):
    raw = np.empty(nbytes + ARENA_ALIGN, np.uint8)
    base = raw.__array_interface__["data"][0]
    arena[:] = [nbytes, base + (-base % ARENA_ALIGN), raw]     # frees the previous buffer


def workspace_arena(nbytes: int) -> int:
    """The address of the arena that this thread's next call gets, grown to ``nbytes``."""
    idle = _ARENAS.arenas
    if not idle:
        idle.append([0, 0, None])
    if idle[-1][0] < nbytes:
        _grow(idle[-1], nbytes)
    return idle[-1][1]


def workspace_size() -> int:
    """The bytes of the arena that this thread's next call gets (0: none allocated yet)."""
    idle = _ARENAS.arenas
    return idle[-1][0] if idle else 0


def with_workspace(cfunc, nbytes: int, callback=None):
    """``cfunc`` called with a workspace arena of ``nbytes`` (then the packed-call
    ``callback`` address) after its arguments.

    Each call takes an idle arena of its thread for as long as it runs and puts it back
    after. The arena grows to the largest workspace asked of it and stays allocated (its pages
    stay mapped: allocating megabytes per call cost page faults). A function called while
    another runs on the same thread (from a ``te.extern`` callback, a finalizer or a signal
    handler) finds the outer call's arena taken and gets another, so that it neither
    overwrites the outer call's intermediates nor frees the buffer under it; calls that do
    not nest keep reusing one arena.
    """
    arenas = _ARENAS
    if callback is None:
        def call(*cargs):
            idle = arenas.arenas
            arena = idle.pop() if idle else [0, 0, None]
            try:
                if arena[0] < nbytes:
                    _grow(arena, nbytes)
                return cfunc(*cargs, arena[1])
            finally:
                idle.append(arena)
    else:
        def call(*cargs):
            idle = arenas.arenas
            arena = idle.pop() if idle else [0, 0, None]
            try:
                if arena[0] < nbytes:
                    _grow(arena, nbytes)
                return cfunc(*cargs, arena[1], callback)
            finally:
                idle.append(arena)
    return call


def release_workspace():
    """Free the calling thread's idle workspace arenas (the next call that needs one allocates
    it). Arenas of calls running now (when called from a callback) stay until those end."""
    _ARENAS.arenas.clear()


def get_num_threads() -> int:
    """The number of threads ``parallel`` loops use (1 in a process made by fork)."""
    if _FORKED.value:
        return 1
    lib = _gomp()
    return lib.omp_get_max_threads() if lib is not None else 1


def _describe(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def as_array_view(arg, name):
    """(data pointer, shape, dtype name, C-contiguous, writeable) of an array-like argument."""
    if isinstance(arg, np.ndarray):
        return (arg.__array_interface__["data"][0], arg.shape, dtype_label(arg.dtype),
                arg.flags.c_contiguous, arg.flags.writeable, arg)
    iface = getattr(arg, "__array_interface__", None)
    if iface is not None:
        ptr, readonly = iface["data"]
        dtype = np.dtype(iface["typestr"])
        shape = tuple(iface["shape"])
        strides = iface.get("strides")
        contiguous = strides is None or tuple(strides) == _c_strides(shape, dtype.itemsize)
        return ptr, shape, dtype_label(dtype), contiguous, not readonly, arg
    if hasattr(arg, "__dlpack__"):
        try:
            arr = np.from_dlpack(arg)
        except (BufferError, RuntimeError, TypeError) as err:
            raise ArgumentError(f"argument {name}: cannot view it on the CPU through DLPack "
                                f"({err}); pass a host array") from None
        return as_array_view(arr, name)
    raise ArgumentError(f"argument {name} must be an array (numpy array, te.nd.NDArray, or an "
                        "object with __array_interface__ or DLPack), got "
                        f"{type(arg).__name__}")


def dtype_label(dtype) -> str:
    """The dtype's name, with its byte order when that is not the machine's (kernels read
    native byte order only: a big-endian float32 is not 'float32' to them)."""
    if dtype.isnative:
        return dtype.name
    return f"{dtype.name} in {'big' if dtype.byteorder == '>' else 'little'}-endian byte order"


@functools.lru_cache(maxsize=None)
def _scalar_kind(dtype):
    """(numpy kind, lowest, highest) of a scalar parameter's dtype, looked up once."""
    kind = np.dtype(dtypes.element(dtype)).kind
    if kind in "iu":
        return kind, dtypes.min_value(dtype), dtypes.max_value(dtype)
    return kind, None, None


def _scalar(spec, value):
    """A scalar argument checked against its parameter's dtype: a number, an integer for an
    integer parameter, within its range."""
    kind, lo, hi = _scalar_kind(spec.dtype)
    if isinstance(value, (bool, np.bool_)) and kind != "b":
        value = int(value)
    if not isinstance(value, (int, float, np.number)) or \
            isinstance(value, (complex, np.complexfloating)):
        raise ArgumentError(f"argument {spec.name} is a scalar of dtype {spec.dtype}, got "
                            f"{type(value).__name__}")
    if kind in "iu":
        if not isinstance(value, (int, np.integer)):
            raise ArgumentError(f"argument {spec.name} is a scalar of dtype {spec.dtype}, got "
                                f"{type(value).__name__} {value}; pass an int")
        if not lo <= value <= hi:
            raise ArgumentError(f"argument {spec.name} = {value} does not fit its dtype "
                                f"{spec.dtype} [{lo}, {hi}]")
        return int(value)
    return value


def _c_strides(shape, itemsize):
    strides, acc = [], itemsize
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


INT32_MAX = 2**31 - 1


def _narrow_dims(buf):
    """The dimensions of ``buf`` given by int32 expressions of size variables (passed to the
    compiled code as int32 values)."""
    return tuple(d for d, dim in enumerate(buf.shape)
                 if not isinstance(dim, IntImm) and dtypes.element(dim.dtype) != "int64")


def _needs_width_check(buf) -> bool:
    """Whether a call must check that ``buf``'s size fits its int32 index arithmetic: it has
    a symbolic dimension, and its flat index is int32 or one of its sizes is an int32 value."""
    from schedule.passes.storage_flatten import index_dtype
    symbolic = not all(isinstance(d, IntImm) for d in buf.shape)
    return symbolic and (index_dtype(buf.shape) == "int32" or bool(_narrow_dims(buf)))


def check_index_width(name, buf, shape):
    """ArgumentError when an array of ``shape`` for buffer ``buf`` is too large for the int32
    index arithmetic the function was built with (a 2^32 + 16 element array would wrap to 16
    elements, a 2-D one of more than 2^31 elements to negative offsets)."""
    from schedule.passes.storage_flatten import index_dtype
    hint = ("declare the size variables as te.var(name, 'int64') (and te.placeholder shapes "
            "as int64) to handle it")
    for d in _narrow_dims(buf):
        if shape[d] > INT32_MAX:
            raise ArgumentError(f"argument {name}: dimension {d} ({buf.shape[d]}) is "
                                f"{shape[d]}, more than 2^31 - 1, the largest int32 size this "
                                f"function was built with; {hint}")
    count = math.prod(shape)
    if index_dtype(buf.shape) == "int32" and count > INT32_MAX:
        raise ArgumentError(f"argument {name} has {count} elements (shape {tuple(shape)}), "
                            "more than 2^31 - 1, which this function's int32 index arithmetic "
                            f"cannot address; {hint}")


class _Param:
    """What one buffer parameter expects, prepared once."""

    def __init__(self, buf, is_out):
        self.name, self.buf, self.is_out = buf.name, buf, is_out
        self.dtype = buf.dtype
        self.np_dtype = np.dtype(buf.dtype)
        self.ndim = len(buf.shape)
        self.const_shape = tuple(d.value for d in buf.shape) \
            if all(isinstance(d, IntImm) for d in buf.shape) else None
        self.var_dims = [(d, dim) for d, dim in enumerate(buf.shape) if isinstance(dim, Var)]
        self.expr_dims = [(d, dim) for d, dim in enumerate(buf.shape)
                          if not isinstance(dim, (IntImm, Var))]
        self.width_check = _needs_width_check(buf)
        self.expr_eval = None           # the expressions' evaluators, made on first use


class Signature:
    """What a built function expects, prepared once so that each call is cheap."""

    def __init__(self, func, shape_vars, view=None):
        from schedule.ir import Buffer
        from schedule.bound_checks import compile_preconditions
        self.view = view or as_array_view
        self.name = func.name
        # the hidden error record of in-kernel index checks is not the caller's argument
        self.index_error = getattr(func, "index_error", None)
        self.params = [p for p in func.params if p is not self.index_error]
        outputs = set(id(b) for b in func.outputs)
        self.specs = [_Param(p, id(p) in outputs) if isinstance(p, Buffer) else p
                      for p in self.params]
        self.buffers = [p for p in self.params if isinstance(p, Buffer)]
        self.scalars = [p for p in self.params if isinstance(p, Var)]
        self.shape_vars = list(shape_vars)
        # bounds of accesses that lowering could not prove: checked once per call
        self.preconditions = tuple(getattr(func, "preconditions", ()))
        self.pre_names = self.scalars + self.shape_vars
        self.precheck = compile_preconditions(self.preconditions, self.pre_names)
        if self.preconditions and self.precheck is None:
            raise ArgumentError(f"{self.name}: an index bound depends on a variable that is "
                                "not an argument; pass it in the argument list")
        self.arg_names = ", ".join(p.name for p in self.params)
        self.n_out = sum(1 for p in self.specs if isinstance(p, _Param) and p.is_out)

    def convert(self, args):
        """The C arguments for ``args`` (pointers, scalars, shape variables), all checked."""
        if len(args) != len(self.specs):
            raise ArgumentError(f"{self.name} takes {len(self.specs)} arguments "
                                f"({self.arg_names}), got {len(args)}")
        env = {}
        ptrs, scalars, keep, outs, ins, shaped = [], [], [], [], [], []
        for spec, a in zip(self.specs, args):
            if isinstance(spec, Var):
                a = _scalar(spec, a)
                if spec in env and env[spec] != a:
                    raise ArgumentError(f"argument {spec.name} = {a}, but the shapes of the "
                                        f"arrays before it give {spec.name} = {env[spec]}; "
                                        f"pass {env[spec]}")
                env[spec] = a
                scalars.append(a)
                continue
            if type(a) is np.ndarray and self.view is as_array_view:
                if a.dtype != spec.np_dtype:
                    self._bad_dtype(spec, dtype_label(a.dtype))
                shape = a.shape
                flags = a.flags
                contiguous, writeable = flags.c_contiguous, flags.writeable
                ptr = a.__array_interface__["data"][0]
            else:
                ptr, shape, dtype, contiguous, writeable, obj = self.view(a, spec.name)
                keep.append(obj)
                if dtype != spec.dtype:
                    self._bad_dtype(spec, dtype)
            if shape != spec.const_shape:
                self._check_shape(spec, shape, env)
                if spec.expr_dims:
                    shaped.append((spec, shape))
                if spec.width_check:
                    check_index_width(spec.name, spec.buf, shape)
            if not contiguous:
                raise ArgumentError(f"argument {spec.name} is not C-contiguous; pass "
                                    "np.ascontiguousarray(x)")
            if spec.is_out:
                if not writeable:
                    raise ArgumentError(f"argument {spec.name} is an output but is read-only; "
                                        "pass a writeable array (e.g. np.empty(shape, dtype))")
                outs.append((ptr, shape, spec))
            else:
                ins.append((ptr, shape, spec))
            ptrs.append(ptr)
        for k, (ptr, shape, spec) in enumerate(outs):   # [ptr, end) ranges must not overlap
            end = ptr + math.prod(shape) * spec.np_dtype.itemsize
            for iptr, ishape, ispec in ins + outs[:k]:
                if ptr < iptr + math.prod(ishape) * ispec.np_dtype.itemsize and iptr < end:
                    raise ArgumentError(f"argument {spec.name} (an output) overlaps the memory "
                                        f"of {ispec.name}; pass a separate output array")
        for spec, shape in shaped:          # every variable is bound: check the expressions
            self._check_expr_dims(spec, shape, env)
        shape_vals = []
        for v in self.shape_vars:
            if v not in env:
                raise ArgumentError(f"{self.name}: cannot tell the value of {v.name} from the "
                                    "argument shapes; pass it as a scalar argument")
            shape_vals.append(env[v])
        if self.precheck is not None:
            self.check_preconditions(scalars + shape_vals)
        return ptrs + scalars + shape_vals, keep

    def check_preconditions(self, values):
        """ArgumentError when an access would leave its buffer for these parameter values."""
        try:
            failed = self.precheck(*values)
        except ZeroDivisionError:
            failed = -1
        if failed >= 0:
            from schedule.bound_checks import precondition_message
            raise ArgumentError(precondition_message(self.name, self.preconditions[failed],
                                                     self.pre_names, values))

    @staticmethod
    def _bad_dtype(spec, got):
        raise ArgumentError(f"argument {spec.name}: expected dtype {spec.dtype}, got {got} "
                            f"(convert with .astype('{spec.dtype}'))")

    def _check_shape(self, spec, shape, env):
        buf = spec.buf
        if len(shape) != spec.ndim:
            raise ArgumentError(f"argument {spec.name}: expected {spec.ndim} dimensions "
                                f"{_describe(buf.shape)}, got shape {tuple(shape)}")
        for d, dim in enumerate(buf.shape):
            if isinstance(dim, IntImm) and dim.value != shape[d]:
                raise ArgumentError(f"argument {spec.name}: dimension {d} must be "
                                    f"{dim.value}, got shape {tuple(shape)}")
        for d, dim in spec.var_dims:
            bound = env.get(dim)
            if bound is None:
                env[dim] = shape[d]
            elif bound != shape[d]:
                raise ArgumentError(f"argument {spec.name}: dimension {d} is {shape[d]} but "
                                    f"{dim.name} = {bound} from an earlier argument")

    def _check_expr_dims(self, spec, shape, env):
        """Dimensions given by expressions of size variables (``n + 1``), once every
        variable is bound, whatever the argument order."""
        from te.functor import free_vars
        if spec.expr_eval is None:
            spec.expr_eval = [_dim_evaluator(dim) for _, dim in spec.expr_dims]
        for (d, dim), value in zip(spec.expr_dims, spec.expr_eval):
            try:
                val = value(env)
            except KeyError:
                missing = [v.name for v in free_vars(dim) if v not in env]
                raise ArgumentError(f"argument {spec.name}: dimension {d} is {dim}, but "
                                    f"{', '.join(missing)} is not given by any argument's "
                                    "shape; pass it as a scalar argument") from None
            if val != shape[d]:
                raise ArgumentError(f"argument {spec.name}: dimension {d} must be {dim} = "
                                    f"{val}, got shape {tuple(shape)}")


def _dim_evaluator(dim):
    """A function of the bound sizes ({Var: int}) that computes shape expression ``dim``."""
    from schedule import access_bounds as ab
    from schedule.simplify import simplify
    from te.expr import const
    from te.functor import free_vars, substitute
    poly = ab.Normalizer()(dim)
    names = {}

    def name(v):
        return names.setdefault(v, f"V{len(names)}")
    try:
        src = ab.py_source(poly, lambda v: f"env[{name(v)}]")
    except (TypeError, IndexError):     # an atom without a Python form (a call, a load)
        src = None
    atoms = [a for m in poly for a in m]
    if src is None or any(a[0] not in ("var", "floordiv", "floormod", "min", "max", "cast")
                          for a in atoms):
        def slow(env):                  # an expression the evaluator does not know
            for v in free_vars(dim):
                env[v]                  # KeyError for an unbound variable
            val = simplify(substitute(dim, {v: const(x, v.dtype) for v, x in env.items()}))
            return val.value
        return slow
    g = {n: v for v, n in names.items()}
    g.update(ab.PY_HELPERS)
    return eval("lambda env: " + src, g)


def fast_converter(sig: Signature):
    """A converter specialised to ``sig`` for the common case (C-contiguous numpy arrays of the
    declared dtypes and shapes, no overlap), or None when the signature has scalars or shape
    expressions. It returns the C arguments, or None to defer to ``Signature.convert`` (which
    then either succeeds or raises the detailed error)."""
    if any(isinstance(p, Var) for p in sig.specs):
        return None
    if any(p.expr_dims for p in sig.specs):
        return None
    names = [f"a{k}" for k in range(len(sig.specs))]
    g = {"ndarray": np.ndarray, "from_buffer": ctypes.c_char.from_buffer,
         "addressof": ctypes.addressof}
    lines = ["def fast(args):",
             f"    if len(args) != {len(names)}:",
             "        return None",
             f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args"]
    bound = {}
    for k, (spec, a) in enumerate(zip(sig.specs, names)):
        g[f"D{k}"] = spec.np_dtype
        checks = [f"type({a}) is not ndarray", f"{a}.dtype is not D{k}"]
        if spec.const_shape is not None:
            g[f"S{k}"] = spec.const_shape
            checks.append(f"{a}.shape != S{k}")
        else:
            checks.append(f"len({a}.shape) != {spec.ndim}")
        checks.append(f"not {a}.flags.c_contiguous")
        if spec.width_check:       # too large for int32 indices: convert raises the error
            from schedule.passes.storage_flatten import index_dtype
            if index_dtype(spec.buf.shape) == "int32":
                checks.append(f"{a}.size > {INT32_MAX}")
            checks += [f"{a}.shape[{d}] > {INT32_MAX}" for d in _narrow_dims(spec.buf)
                       if d < spec.ndim]
        if spec.is_out:
            checks.append(f"not {a}.flags.writeable")
        lines.append(f"    if {' or '.join(checks)}:")
        lines.append("        return None")
        if spec.const_shape is None:
            for d, dim in enumerate(spec.buf.shape):
                if isinstance(dim, IntImm):
                    lines.append(f"    if {a}.shape[{d}] != {dim.value}:")
                    lines.append("        return None")
                elif dim in bound:
                    lines.append(f"    if {a}.shape[{d}] != {bound[dim]}:")
                    lines.append("        return None")
                else:
                    bound[dim] = f"v{len(bound)}"
                    lines.append(f"    {bound[dim]} = {a}.shape[{d}]")
        lines.append("    try:")
        lines.append(f"        p{k} = addressof(from_buffer({a}))")
        lines.append("    except (TypeError, ValueError):")
        lines.append("        return None")
        lines.append(f"    e{k} = p{k} + {a}.nbytes")
    outs = [k for k, s in enumerate(sig.specs) if s.is_out]
    ins = [k for k, s in enumerate(sig.specs) if not s.is_out]
    for n, o in enumerate(outs):
        for i in ins + outs[:n]:
            lines.append(f"    if p{o} < e{i} and p{i} < e{o}:")
            lines.append("        return None")
    if any(v not in bound for v in sig.shape_vars):
        return None
    if sig.precheck is not None:        # an access bound fails: convert raises the error
        g["PRE"] = sig.precheck
        lines.append(f"    if PRE({', '.join(bound[v] for v in sig.shape_vars)}) >= 0:")
        lines.append("        return None")
    result = [f"p{k}" for k in range(len(names))] + [bound[v] for v in sig.shape_vars]
    lines.append(f"    return ({', '.join(result)}{',' if len(result) == 1 else ''})")
    exec("\n".join(lines), g)
    return g["fast"]


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

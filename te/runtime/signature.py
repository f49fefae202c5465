"""The calling convention shared by both backends and by loaded libraries: argument checks,
size-variable binding, call-time preconditions and the messages of failed checks.

A built function takes arrays (numpy, te.nd.NDArray, anything with ``__array_interface__`` or
DLPack) without copying. Each call checks the count, dtype, rank, shape (binding symbolic
sizes), C-contiguity and, for outputs, writeability, and names the argument in every error.
Everything here works from a ``FunctionInfo`` (plain data), so a function loaded from a
library gets the same checks, and the same messages, as the one ``te.build`` made.
"""
from __future__ import annotations

import ctypes
import functools
import math

import numpy as np

from te import dtypes

from . import poly
from .errors import ArgumentError

INT32_MAX = 2**31 - 1
ERROR_SLOTS = 8         # the in-kernel error record: site, index value, positions, the flag


def _describe(texts):
    return "[" + ", ".join(texts) + "]"


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


class SizeVar:
    """A scalar argument or hidden size variable: ``index`` into the function's var table."""

    __slots__ = ("index", "name", "dtype")

    def __init__(self, index, name, dtype):
        self.index, self.name, self.dtype = index, name, dtype

    def __repr__(self):
        return f"SizeVar({self.name}: {self.dtype})"


class _Param:
    """What one buffer parameter expects, prepared once."""

    def __init__(self, data, vars_, local_dims, position):
        self.name = data["buffer"]
        self.is_out = data["out"]
        self.dtype = data["dtype"]
        self.np_dtype = np.dtype(self.dtype)
        shape = data["shape"]
        self.ndim = len(shape)
        self.texts = [str(d) if isinstance(d, int) else d["text"] for d in shape]
        self.const_dims = [(d, dim) for d, dim in enumerate(shape) if isinstance(dim, int)]
        self.const_shape = tuple(shape) if len(self.const_dims) == self.ndim else None
        self.var_dims = [(d, vars_[dim["var"]]) for d, dim in enumerate(shape)
                         if isinstance(dim, dict) and "var" in dim]
        self.expr_dims = []
        for d, dim in enumerate(shape):
            if isinstance(dim, dict) and "poly" in dim:
                self.expr_dims.append((d, _poly_evaluator(dim["poly"]),
                                       [vars_[k] for k in poly.variables(dim["poly"])]))
            elif isinstance(dim, dict) and "var" not in dim:
                self.expr_dims.append((d, local_dims[(position, d)], None))
        self.index_dtype = data["index"]
        self.narrow = tuple(data["narrow"])
        symbolic = self.const_shape is None
        self.width_check = symbolic and (self.index_dtype == "int32" or bool(self.narrow))


def _poly_evaluator(p):
    """A function of the bound sizes ({var index: int}) that computes polynomial ``p``."""
    src = poly.source(p, lambda k: f"env[{int(k)}]")
    return eval("lambda env: " + src, dict(poly.HELPERS))


def check_index_width(spec, shape):
    """ArgumentError when an array of ``shape`` for buffer parameter ``spec`` is too large for
    the int32 index arithmetic the function was built with (a 2^32 + 16 element array would
    wrap to 16 elements, a 2-D one of more than 2^31 elements to negative offsets)."""
    hint = ("declare the size variables as te.var(name, 'int64') (and te.placeholder shapes "
            "as int64) to handle it")
    for d in spec.narrow:
        if shape[d] > INT32_MAX:
            raise ArgumentError(f"argument {spec.name}: dimension {d} ({spec.texts[d]}) is "
                                f"{shape[d]}, more than 2^31 - 1, the largest int32 size this "
                                f"function was built with; {hint}")
    count = math.prod(shape)
    if spec.index_dtype == "int32" and count > INT32_MAX:
        raise ArgumentError(f"argument {spec.name} has {count} elements (shape {tuple(shape)}), "
                            "more than 2^31 - 1, which this function's int32 index arithmetic "
                            f"cannot address; {hint}")


class Signature:
    """What a built function expects, prepared once from its FunctionInfo so that each call is
    cheap. ``view`` turns an argument into (pointer, shape, dtype, contiguous, writeable, obj)."""

    def __init__(self, info, view=None):
        d = info.data
        self.info = info
        self.view = view or as_array_view
        self.name = d["name"]
        self.vars = [SizeVar(k, n, t) for k, (n, t) in enumerate(d["vars"])]
        self.has_record = d["index_error"]
        self.specs = []
        for k, p in enumerate(d["params"]):
            if "scalar" in p:
                self.specs.append(self.vars[p["scalar"]])
            else:
                self.specs.append(_Param(p, self.vars, info.local_dims, k))
        self.buffers = [p for p in self.specs if isinstance(p, _Param)]
        self.scalars = [p for p in self.specs if isinstance(p, SizeVar)]
        self.shape_vars = self.vars[len(self.scalars):]
        self.pre_names = self.vars              # the values the preconditions read, in order
        self.preconditions = tuple(d["preconditions"])
        self.check_sites = tuple(d["check_sites"])
        self.error_sites = tuple(d["error_sites"])
        if d["unbound_precondition"]:
            raise ArgumentError(f"{self.name}: an index bound depends on a variable that is "
                                "not an argument; pass it in the argument list")
        self.precheck = compile_preconditions(self.preconditions, len(self.vars))
        self.arg_names = ", ".join(p.name for p in self.specs)
        self.n_out = sum(1 for p in self.buffers if p.is_out)

    def convert(self, args):
        """The C arguments for ``args`` (pointers, scalars, shape variables), all checked."""
        if len(args) != len(self.specs):
            raise ArgumentError(f"{self.name} takes {len(self.specs)} arguments "
                                f"({self.arg_names}), got {len(args)}")
        env = {}
        ptrs, scalars, keep, outs, ins, shaped = [], [], [], [], [], []
        for spec, a in zip(self.specs, args):
            if isinstance(spec, SizeVar):
                a = _scalar(spec, a)
                k = spec.index
                if k in env and env[k] != a:
                    raise ArgumentError(f"argument {spec.name} = {a}, but the shapes of the "
                                        f"arrays before it give {spec.name} = {env[k]}; "
                                        f"pass {env[k]}")
                env[k] = a
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
                    check_index_width(spec, shape)
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
            if v.index not in env:
                raise ArgumentError(f"{self.name}: cannot tell the value of {v.name} from the "
                                    "argument shapes; pass it as a scalar argument")
            shape_vals.append(env[v.index])
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
            raise ArgumentError(precondition_message(self.name, self.preconditions[failed],
                                                     self.vars, values))

    @staticmethod
    def _bad_dtype(spec, got):
        raise ArgumentError(f"argument {spec.name}: expected dtype {spec.dtype}, got {got} "
                            f"(convert with .astype('{spec.dtype}'))")

    def _check_shape(self, spec, shape, env):
        if len(shape) != spec.ndim:
            raise ArgumentError(f"argument {spec.name}: expected {spec.ndim} dimensions "
                                f"{_describe(spec.texts)}, got shape {tuple(shape)}")
        for d, value in spec.const_dims:
            if value != shape[d]:
                raise ArgumentError(f"argument {spec.name}: dimension {d} must be "
                                    f"{value}, got shape {tuple(shape)}")
        for d, var in spec.var_dims:
            bound = env.get(var.index)
            if bound is None:
                env[var.index] = shape[d]
            elif bound != shape[d]:
                raise ArgumentError(f"argument {spec.name}: dimension {d} is {shape[d]} but "
                                    f"{var.name} = {bound} from an earlier argument")

    def _check_expr_dims(self, spec, shape, env):
        """Dimensions given by expressions of size variables (``n + 1``), once every
        variable is bound, whatever the argument order."""
        for d, value, used in spec.expr_dims:
            text = spec.texts[d]
            try:
                if used is not None:
                    for v in used:
                        env[v.index]
                val = value(env)
            except KeyError:
                missing = [v.name for v in self.vars if v.index not in env
                           and (used is None or v in used)]
                raise ArgumentError(f"argument {spec.name}: dimension {d} is {text}, but "
                                    f"{', '.join(missing)} is not given by any argument's "
                                    "shape; pass it as a scalar argument") from None
            if val != shape[d]:
                raise ArgumentError(f"argument {spec.name}: dimension {d} must be {text} = "
                                    f"{val}, got shape {tuple(shape)}")


# ----------------------------------------------------------------------------- preconditions

def compile_preconditions(pre, nvars):
    """A function of the variable values (the FunctionInfo's table order) that returns the index
    of the first failing precondition, or -1; None when there are none."""
    if not pre:
        return None
    name = lambda k: f"v{int(k)}"       # noqa: E731
    lines = [f"def check({', '.join(name(k) for k in range(nvars))}):"]
    for k, p in enumerate(pre):
        src = lambda q: poly.source(q, name)      # noqa: E731
        runs = " or ".join(f"{src(e)} <= 0" for e in p["extents"])
        lo = src(p["lo"][0]) if len(p["lo"]) == 1 else \
            f"max({', '.join(src(q) for q in p['lo'])})"
        hi = src(p["hi"][0]) if len(p["hi"]) == 1 else \
            f"min({', '.join(src(q) for q in p['hi'])})"
        # an empty range (lo > hi): under its guards the access never runs
        ok = f"({lo} > {hi} or ({lo} >= {int(p['least'])} and {hi} < {src(p['size'])}))"
        lines.append(f"    if not ({runs + ' or ' if runs else ''}{ok}):")
        lines.append(f"        return {k}")
    lines.append("    return -1")
    g = dict(poly.HELPERS)
    exec("\n".join(lines), g)           # built from checked integers and known names only
    return g["check"]


def precondition_message(func_name, p, vars_, values):
    """The ArgumentError text for failing precondition ``p``."""
    val = lambda q: poly.evaluate(q, values)       # noqa: E731
    lo = max(val(q) for q in p["lo"])
    hi = min(val(q) for q in p["hi"])
    size = val(p["size"])
    used = set()
    for q in (*p["lo"], *p["hi"], p["size"]):
        used |= poly.variables(q)
    used = sorted(used, key=lambda k: vars_[k].name)
    given = ", ".join(f"{vars_[k].name} = {values[k]}" for k in used)
    what = "writes" if p["write"] else "reads"
    if p["shift"]:
        stage, axis, factor = p["shift"]
        return (f"{func_name}: stage {stage} splits axis {axis} with tail='shift' and "
                f"factor {factor}, but the axis has {val(p['extents'][0])} values"
                + (f" (with {given})" if given else "") +
                f", fewer than the factor: the shifted last piece would start before the "
                f"axis; pass arrays where {axis} has at least {factor} values, or split with "
                "tail='guard'")
    if p["dtype"]:
        return (f"{func_name}: the index arithmetic {p['access']} ranges over [{lo}, {hi}]"
                + (f" (with {given})" if given else "") +
                f", beyond {p['dtype']}: it would wrap around; declare the sizes as "
                f"te.var(name, 'int64') or pass smaller arrays")
    buf, dim = p["buffer"], p["dim"]
    return (f"{func_name}: {what} {p['access']}, whose index {p['index']} in dimension {dim} of "
            f"{buf} ranges over [{lo}, {hi}], but that dimension has size {size}"
            + (f" (with {given})" if given else "") +
            f"; pass a {buf} with a dimension {dim} that covers [{lo}, {hi}], or guard "
            "the access with te.if_then_else")


# ----------------------------------------------------------------------------- kernel errors

def index_error(func_name, site, record, values) -> IndexError:
    """The IndexError for a failed in-kernel check at ``site`` (a check-site dict), from the
    kernel's error record and the values of the function's variables."""
    what = "write" if site["write"] else "read"
    if record[0] < 0:           # the flag without a record: should not happen
        return IndexError(f"{func_name}: an index read from data is out of bounds (the "
                          f"{what} {site['access']} or another checked access)")
    size = site["size_text"]
    if site["size"] is not None:
        try:
            size = poly.evaluate(site["size"], values)
        except (IndexError, ZeroDivisionError):
            pass
    at = ""
    if site["target"]:
        pos = ", ".join(str(int(record[2 + j])) for j in range(site["npos"]))
        at = f" while computing {site['target']}[{pos}]"
    return IndexError(f"{func_name}: index {int(record[1])} is out of bounds for dimension "
                      f"{site['dim']} of {site['buffer']} with size {size} (the {what} "
                      f"{site['access']}{at}); the index must be in [0, {size})")


def site_error(name, site, vars_, values):
    """The exception for CPU error site ``site`` (an error-site dict) of function ``name``,
    given the values of its variables: MemoryError for an allocation that failed (its byte
    count overflows 64 bits or malloc returned NULL), ArgumentError for an intermediate too
    large for int32 indices."""
    count, used = 1, {}
    for f in site["factors"]:
        if f is None:
            count = None
            continue
        for k in sorted(poly.variables(f)):
            used[k] = values[k]
        if count is not None:
            count *= max(0, poly.evaluate(f, values))
    given = f" ({', '.join(f'{vars_[k].name} = {x}' for k, x in used.items())})" \
        if used else ""
    buf = f"intermediate buffer {site['buffer']}"
    if site["kind"] == "index_width":
        return ArgumentError(f"{name}: {buf} has {count} elements{given}, more than 2^31 - 1, "
                             "which this function's int32 index arithmetic cannot address; "
                             "declare the size variables as te.var(name, 'int64') (and "
                             "te.placeholder shapes as int64) to handle it")
    if count is None:
        return MemoryError(f"{name}: {buf}{given} could not be allocated: its size "
                           f"{' * '.join(site['factors_text'])} elements of "
                           f"{site['itemsize']} bytes is too large (out of memory)")
    nbytes = count * site["itemsize"]
    why = "more than 64-bit sizes hold" if nbytes >= 2**63 else "out of memory"
    return MemoryError(f"{name}: {buf} needs {nbytes} bytes{given}: {why}")


# ----------------------------------------------------------------------------- fast path

def fast_converter(sig: Signature):
    """A converter specialised to ``sig`` for the common case (C-contiguous numpy arrays of the
    declared dtypes and shapes, no overlap), or None when the signature has scalars or shape
    expressions. It returns the C arguments, or None to defer to ``Signature.convert`` (which
    then either succeeds or raises the detailed error)."""
    if sig.scalars or any(p.expr_dims for p in sig.buffers):
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
            if spec.index_dtype == "int32":
                checks.append(f"{a}.size > {INT32_MAX}")
            checks += [f"{a}.shape[{d}] > {INT32_MAX}" for d in spec.narrow if d < spec.ndim]
        if spec.is_out:
            checks.append(f"not {a}.flags.writeable")
        lines.append(f"    if {' or '.join(checks)}:")
        lines.append("        return None")
        if spec.const_shape is None:
            consts = dict(spec.const_dims)
            var_of = dict(spec.var_dims)
            for d in range(spec.ndim):
                if d in consts:
                    lines.append(f"    if {a}.shape[{d}] != {int(consts[d])}:")
                    lines.append("        return None")
                elif var_of[d].index in bound:
                    lines.append(f"    if {a}.shape[{d}] != {bound[var_of[d].index]}:")
                    lines.append("        return None")
                else:
                    bound[var_of[d].index] = f"v{len(bound)}"
                    lines.append(f"    {bound[var_of[d].index]} = {a}.shape[{d}]")
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
    if any(v.index not in bound for v in sig.shape_vars):
        return None
    if sig.precheck is not None:        # an access bound fails: convert raises the error
        g["PRE"] = sig.precheck
        lines.append(f"    if PRE({', '.join(bound[v.index] for v in sig.shape_vars)}) >= 0:")
        lines.append("        return None")
    result = [f"p{k}" for k in range(len(names))] + [bound[v.index] for v in sig.shape_vars]
    lines.append(f"    return ({', '.join(result)}{',' if len(result) == 1 else ''})")
    exec("\n".join(lines), g)
    return g["fast"]

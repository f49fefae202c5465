"""A reference interpreter: the executable semantics of the loop IR on numpy arrays.

Expressions are compiled once into Python closures over an environment of variable values;
scalars are numpy scalars of the node's dtype (so int32 wraps and float32 rounds as compiled
code does), vectors are numpy arrays. Parallel, vectorized and thread loops run serially.
Tests compare numpy reference = interpreter = compiled code to tell lowering bugs from codegen
bugs.
"""
from __future__ import annotations

import math

import numpy as np

from te import dtypes
from te.expr import (Add, And, EQ, FloorDiv, FloorMod, GE, GT, IntImm, LE, LT, Max, Min,
                     Mod, Mul, NE, Or, Sub, Var)

from .ir import (Buffer, PrimFunc)


def _np_dtype(dtype):
    base = dtypes.element(dtype)
    return np.dtype("float32") if base == "float16" else np.dtype(base)


def _trunc_div(a, b):
    # a - fmod(a, b) is an exact multiple of b; np.abs would overflow on INT_MIN
    return ((a - np.fmod(a, b)) // b).astype(np.result_type(a, b))


def _trunc_mod(a, b):
    # x % 0 is 0, as x // 0 (numpy's rule, and the compiled code's)
    return np.where(b == 0, 0, a - _trunc_div(a, b) * b).astype(np.result_type(a, b))


_ERF = np.vectorize(math.erf, otypes=[np.float64])

def _bits(x):
    """The bit patterns of an integer array as unsigned integers of the same width."""
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _popcount(x):
    counts = np.vectorize(lambda v: bin(int(v)).count("1"), otypes=[np.int64])(_bits(x))
    return counts.astype(np.asarray(x).dtype)


def _clz(x):
    width = 8 * np.asarray(x).dtype.itemsize
    zeros = np.vectorize(lambda v: width - int(v).bit_length(), otypes=[np.int64])(_bits(x))
    return zeros.astype(np.asarray(x).dtype)


UNARY = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(x.dtype.type(10), x),
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: x.dtype.type(1) / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": lambda x: x.dtype.type(1) / (x.dtype.type(1) + np.exp(-x)),
    "erf": lambda x: _ERF(x).astype(x.dtype), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "fabs": np.abs, "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
    "popcount": _popcount, "clz": _clz,
}
BINARY_CALLS = {"pow": np.power, "fmod": np.fmod, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
                "bitwise_xor": np.bitwise_xor, "shift_left": np.left_shift,
                "shift_right": np.right_shift}
BINARY = {Add: np.add, Sub: np.subtract, Mul: np.multiply, Min: np.minimum, Max: np.maximum,
          EQ: np.equal, NE: np.not_equal, LT: np.less, LE: np.less_equal, GT: np.greater,
          GE: np.greater_equal, And: np.logical_and, Or: np.logical_or,
          FloorDiv: np.floor_divide, FloorMod: np.mod, Mod: _trunc_mod}


def _store_dtype(dtype):
    """The numpy dtype a buffer of ``dtype`` holds its elements in (float16 stays float16)."""
    base = dtypes.element(dtype)
    return np.dtype("float16") if base == "float16" else np.dtype(base)


def _poisoned(n, store_t):
    """A fresh intermediate of ``n`` elements, filled so that a read before a write shows: NaN
    for floats, the byte pattern 0xAB in every byte for integers (-85 in int8, 0xABAB in
    uint16: in range for every width), False for bool (numpy's bool must be 0 or 1)."""
    if store_t.kind == "f":
        return np.full(n, np.nan, dtype=store_t)
    if store_t.kind == "b":
        return np.zeros(n, dtype=store_t)
    return np.full(n * store_t.itemsize, 0xAB, dtype=np.uint8).view(store_t)


def _cast(value, dtype):
    return np.asarray(value).astype(_np_dtype(dtype))[()]


class _Compiler:
    def __init__(self, buffers):
        self.buffers = buffers          # Buffer -> flat numpy array (filled at run time)

    # ---------------------------------------------------------------- expressions
    def expr(self, e):
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            cls = type(e)
            if cls in BINARY:
                return self._binary(e, BINARY[cls])
            raise NotImplementedError(f"interpreter: no rule for {cls.__name__}")
        return method(e)

    def _binary(self, e, fn):
        a, b = self.expr(e.a), self.expr(e.b)
        t = _np_dtype(e.dtype)
        if dtypes.is_bool(e.dtype):
            return lambda env: fn(a(env), b(env))
        return lambda env: _cast(fn(a(env), b(env)), e.dtype) if t.kind != "f" else \
            np.asarray(fn(a(env), b(env)), dtype=t)[()]

    def e_IntImm(self, e):
        v = np.bool_(e.value) if e.dtype == "bool" else _np_dtype(e.dtype).type(e.value)
        return lambda env: v

    def e_FloatImm(self, e):
        v = _np_dtype(e.dtype).type(e.value)
        return lambda env: v

    def e_Var(self, e):
        return lambda env: env[e]

    def e_Div(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dtypes.is_float(e.dtype):
            t = _np_dtype(e.dtype)
            return lambda env: np.asarray(np.divide(a(env), b(env)), dtype=t)[()]
        return lambda env: _cast(_trunc_div(a(env), b(env)), e.dtype)

    def e_Not(self, e):
        a = self.expr(e.a)
        return lambda env: np.logical_not(a(env))

    def e_Select(self, e):
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        return lambda env: _cast(np.where(c(env), t(env), f(env)), e.dtype)

    def e_Cast(self, e):
        v = self.expr(e.value)
        src_float = dtypes.is_float(e.value.dtype)
        if src_float and dtypes.element(e.dtype) == "float16":
            return lambda env: _cast(_cast(v(env), "float16"), e.dtype)
        if src_float and dtypes.is_int(e.dtype):
            # saturating, NaN -> 0: the compiled code's rule (te.dtypes.float_to_int)
            return lambda env: dtypes.float_to_int(v(env), e.dtype)
        if dtypes.is_bool(e.dtype):
            return lambda env: np.asarray(v(env) != 0)[()]
        return lambda env: _cast(v(env), e.dtype)

    def e_Call(self, e):
        if e.op == "tvm_call_packed":
            return self._call_packed(e)
        args = [self.expr(a) for a in e.args]
        if e.op == "if_then_else":
            c, t, f = args
            if dtypes.lanes(e.args[0].dtype) > 1:
                return lambda env: _cast(np.where(c(env), t(env), f(env)), e.dtype)
            return lambda env: t(env) if c(env) else f(env)
        if e.op in UNARY:
            fn, (a,) = UNARY[e.op], args
            return lambda env: _cast(fn(np.asarray(a(env), dtype=_np_dtype(e.dtype))), e.dtype)
        if e.op in BINARY_CALLS:
            fn, (a, b) = BINARY_CALLS[e.op], args
            return lambda env: _cast(fn(a(env), b(env)), e.dtype)
        raise NotImplementedError(f"interpreter: unknown intrinsic {e.op}")

    def e_Let(self, e):
        v, body, var = self.expr(e.value), self.expr(e.body), e.var

        def run(env):
            env = dict(env)
            env[var] = v(env)
            return body(env)
        return run

    def e_Ramp(self, e):
        base, stride, n = self.expr(e.base), self.expr(e.stride), e.lanes
        return lambda env: (base(env) + stride(env) * np.arange(n)).astype(
            _np_dtype(e.dtype))

    def e_Broadcast(self, e):
        v, n = self.expr(e.value), e.lanes
        return lambda env: np.full(n, v(env))

    def e_BufferLoad(self, e):
        idx = self.expr(e.indices[0])
        buf = e.buffer
        bufs = self.buffers
        t = _np_dtype(e.dtype)
        if buf.dtype == "bool":
            # any nonzero byte is true (numpy copies a byte 2 of a bool array as it is)
            return lambda env: np.asarray(bufs[buf].view(np.uint8)[idx(env)] != 0)[()]
        return lambda env: bufs[buf][idx(env)].astype(t)[()]

    # ---------------------------------------------------------------- statements
    def stmt(self, s):
        return getattr(self, "s_" + type(s).__name__)(s)

    def s_SeqStmt(self, s):
        parts = [self.stmt(x) for x in s.seq]

        def run(env):
            for p in parts:
                p(env)
        return run

    def s_For(self, s):
        lo, ext, body, var = self.expr(s.min), self.expr(s.extent), self.stmt(s.body), s.loop_var
        t = _np_dtype(var.dtype).type

        def run(env):
            start = int(lo(env))
            for k in range(start, start + int(ext(env))):
                env[var] = t(k)
                body(env)
        return run

    def s_BufferStore(self, s):
        idx, value, buf, bufs = self.expr(s.indices[0]), self.expr(s.value), s.buffer, \
            self.buffers
        store_t = _store_dtype(buf.dtype)

        def run(env):
            bufs[buf][idx(env)] = np.asarray(value(env)).astype(store_t)
        return run

    def s_IfThenElse(self, s):
        c, t = self.expr(s.condition), self.stmt(s.then_case)
        f = self.stmt(s.else_case) if s.else_case is not None else None

        def run(env):
            if c(env):
                t(env)
            elif f is not None:
                f(env)
        return run

    def s_LetStmt(self, s):
        v, body, var = self.expr(s.value), self.stmt(s.body), s.var

        def run(env):
            env[var] = v(env)
            body(env)
        return run

    def _call_packed(self, e):
        from te.extern import get_global_func
        from te.nd import NDArray, cpu
        from .ir import BufferRef
        name = e.args[0].value
        fn = get_global_func(name)
        parts = []
        for a in e.args[1:]:
            if isinstance(a, BufferRef):
                parts.append((a.buffer, [self.expr(d) for d in a.buffer.shape]))
            else:
                parts.append((None, self.expr(a)))
        bufs = self.buffers

        def run(env):
            vals = []
            for buf, part in parts:
                if buf is None:
                    vals.append(part(env).item())
                else:
                    view = bufs[buf][:math.prod(int(d(env)) for d in part)]
                    vals.append(NDArray(view.reshape([int(d(env)) for d in part]), cpu(0)))
            call_extern(name, fn, vals)
            return np.int32(0)
        return run

    def s_Allocate(self, s):
        body, buf, bufs = self.stmt(s.body), s.buffer, self.buffers
        size = alloc_size(buf)
        store_t = _store_dtype(buf.dtype)

        def run(env):
            n = int(self.expr(size)(env))
            saved = bufs.get(buf)
            bufs[buf] = _poisoned(n, store_t)
            body(env)
            if saved is not None:
                bufs[buf] = saved
        return run

    def s_Evaluate(self, s):
        v = self.expr(s.value)
        return lambda env: v(env)


def call_extern(name, fn, args):
    """Call the registered function ``fn``; its exceptions become ExternError naming it."""
    from te.extern import ExternError
    try:
        fn(*args)
    except Exception as err:
        raise ExternError(f"extern function {name!r} raised {type(err).__name__}: {err}") \
            from err


def alloc_size(buf: Buffer):
    """The number of elements an allocation of ``buf`` needs."""
    from .simplify import simplify
    if buf.strides:
        return simplify(buf.shape[0] * buf.strides[0])
    size = None
    for s in buf.shape:
        size = s if size is None else size * s
    return simplify(size) if size is not None else IntImm(1, "int32")


def run(func: PrimFunc, *args, **scalars):
    """Execute ``func`` on numpy arrays (and scalar values for its Var parameters)."""
    buffers, env = {}, {}
    arrays = [a for a in args]
    params = [p for p in func.params if p is not func.index_error]
    if len(arrays) != len(params):
        raise TypeError(f"{func.name} takes {len(params)} arguments, got {len(arrays)}")
    record = None
    if func.index_error is not None:       # the in-kernel index checks' error record
        from .bound_checks import ERROR_SLOTS
        record = np.zeros(ERROR_SLOTS, np.int64)
        record[0] = -1
        params.append(func.index_error)
        arrays.append(record)
    for p, a in zip(params, arrays):
        if isinstance(p, Buffer):
            arr = np.asarray(a)
            if not arr.flags.c_contiguous:
                raise ValueError(f"argument {p.name} must be C-contiguous")
            buffers[p] = arr.reshape(-1)
            for dim, ext in zip(p.shape, arr.shape):
                if isinstance(dim, Var):
                    env[dim] = _np_dtype(dim.dtype).type(ext)
        else:
            env[p] = _np_dtype(p.dtype).type(a)
    _check_preconditions(func, env)
    compiled = _Compiler(buffers).stmt(func.body)
    with np.errstate(all="ignore"):
        compiled(env)
    if record is not None and (record[0] >= 0 or record[-1]):
        from .bound_checks import site_size
        site = func.check_sites[int(record[0])]
        names = list(env)
        raise IndexError(site.message(func.name, record,
                                      site_size(site, names, [int(env[v]) for v in names])))


def _check_preconditions(func, env):
    """ArgumentError when an access would leave its buffer (as the compiled code's call)."""
    from .bound_checks import ArgumentError, compile_preconditions, precondition_message
    if not func.preconditions:
        return
    names = list(env)
    values = [int(env[v]) if np.issubdtype(type(env[v]), np.integer) else env[v]
              for v in names]
    check = compile_preconditions(func.preconditions, names)
    if check is None:
        raise ArgumentError(f"{func.name}: an index bound depends on a variable that is not "
                            "an argument")
    failed = check(*values)
    if failed >= 0:
        raise ArgumentError(precondition_message(func.name, func.preconditions[failed], names,
                                                 values))

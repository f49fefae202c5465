"""Expression nodes shared by the te graph and the loop IR, with operator overloading.

Every node is a small frozen dataclass hashed by identity (``eq=False``): two variables named
``i`` are different variables. ``a == b`` builds the comparison (``EqualOp``), which as a Python
bool says whether ``a`` and ``b`` are the same node, as in TVM. Building an expression goes
through the ``ExprOp`` mixin, which converts Python numbers, applies the promotion rules of
``te.dtypes`` and refuses the operations that would silently mean something else (integer
``/``, ``bool(expr)``).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from . import dtypes


class ExprOp:
    """Operator overloading for expression nodes; each operator builds a node."""

    __slots__ = ()

    def __add__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return binary(Add, self, other)

    def __radd__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return binary(Add, other, self)

    def __sub__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return binary(Sub, self, other)

    def __rsub__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return binary(Sub, other, self)

    def __mul__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return binary(Mul, self, other)

    def __rmul__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return binary(Mul, other, self)

    def __truediv__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return div(self, other)

    def __rtruediv__(self, other):
        if _is_tensor(other):
            return NotImplemented       # the tensor's reflected operator (te.topi)
        return div(other, self)

    def __floordiv__(self, other):
        return floordiv(self, other)

    def __rfloordiv__(self, other):
        return floordiv(other, self)

    def __mod__(self, other):
        return floormod(self, other)

    def __rmod__(self, other):
        return floormod(other, self)

    def __neg__(self):
        a = convert(self)
        return binary(Sub, const(0, a.dtype), a)

    def __pos__(self):
        return self

    def __abs__(self):
        from .intrin import abs as abs_
        return abs_(self)

    def __pow__(self, other):
        from .intrin import power
        return power(self, other)

    def __lt__(self, other):
        return compare(LT, self, other)

    def __le__(self, other):
        return compare(LE, self, other)

    def __gt__(self, other):
        return compare(GT, self, other)

    def __ge__(self, other):
        return compare(GE, self, other)

    def __and__(self, other):
        return logical_or_bitwise(And, "bitwise_and", self, other)

    def __rand__(self, other):
        return logical_or_bitwise(And, "bitwise_and", other, self)

    def __or__(self, other):
        return logical_or_bitwise(Or, "bitwise_or", self, other)

    def __ror__(self, other):
        return logical_or_bitwise(Or, "bitwise_or", other, self)

    def __xor__(self, other):
        return bitwise("bitwise_xor", self, other)

    def __lshift__(self, other):
        return bitwise("shift_left", self, other)

    def __rshift__(self, other):
        return bitwise("shift_right", self, other)

    def __invert__(self):
        a = convert(self)
        if dtypes.is_bool(a.dtype):
            return Not(a, "bool")
        all_ones = -1 if dtypes.is_signed(a.dtype) else dtypes.max_value(a.dtype)
        return binary(Sub, const(all_ones, a.dtype), a)      # ~a == all ones - a

    def __eq__(self, other):
        if not _comparable(other):
            return NotImplemented
        return EqualOp(self, other, EQ)

    def __ne__(self, other):
        if not _comparable(other):
            return NotImplemented
        return EqualOp(self, other, NE)

    __hash__ = object.__hash__          # nodes are compared and hashed by identity

    def equal(self, other):
        """The IR expression ``self == other`` (what ``self == other`` becomes in an
        expression)."""
        return compare(EQ, self, other)

    def not_equal(self, other):
        return compare(NE, self, other)

    def astype(self, dtype):
        return cast(dtype, self)

    def __bool__(self):
        raise TypeError(
            f"cannot use the symbolic expression {self} as a Python bool; "
            "combine conditions with te.all(...) / te.any(...) and choose values with "
            "te.if_then_else(cond, a, b)")

    def __str__(self):
        from .printer import expr_str
        return expr_str(self)

    def __repr__(self):
        return str(self)


class EqualOp(ExprOp):
    """``a == b`` or ``a != b`` on expressions, as in TVM: the IR comparison wherever it is
    used as an expression (``te.select(i == j, 1.0, 0.0)``, ``where=k % 2 == 0``), and, as a
    Python bool, whether the operands are the same object, so that lists, dicts and sets of
    nodes keep their identity semantics."""

    __slots__ = ("a", "b", "node")

    def __init__(self, a, b, node):
        self.a, self.b, self.node = a, b, node

    def __bool__(self):
        return (self.a is self.b) == (self.node is EQ)

    def asobject(self) -> Expr:
        return compare(self.node, self.a, self.b)

    @property
    def dtype(self):
        return self.asobject().dtype

    def __str__(self):
        return str(self.asobject())


def _is_tensor(value) -> bool:
    """Whether ``value`` is a te Tensor, whose arithmetic builds compute ops (te.topi)."""
    return getattr(type(value), "_tensor_arithmetic", False)


def _comparable(other) -> bool:
    return isinstance(other, (ExprOp, numbers.Number, np.generic)) or \
        isinstance(getattr(other, "var", None), Var)


class Expr(ExprOp):
    """Base class of expression nodes. Subclasses carry a ``dtype`` field."""

    __slots__ = ()


NODE = dataclass(frozen=True, eq=False, repr=False)


@NODE
class IntImm(Expr):
    """An integer (or bool) constant; ``int()``, ``float()``, ``bool()`` and indexing read its
    value, as on TVM's IntImm."""
    value: int
    dtype: str = "int32"

    def __post_init__(self):
        if isinstance(self.value, str):
            _tvm_order(self, "value")

    def __int__(self):
        return int(self.value)

    def __index__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return self.value != 0


@NODE
class FloatImm(Expr):
    """A floating-point constant; ``float()`` reads its value, as on TVM's FloatImm."""
    value: float
    dtype: str = "float32"

    def __post_init__(self):
        if isinstance(self.value, str):
            _tvm_order(self, "value")

    def __float__(self):
        return float(self.value)


@NODE
class Var(Expr):
    name: str
    dtype: str = "int32"


@NODE
class Binary(Expr):
    a: Expr
    b: Expr
    dtype: str


class Add(Binary): pass
class Sub(Binary): pass
class Mul(Binary): pass
class Div(Binary): pass          # floating-point division
class Mod(Binary): pass          # truncated remainder (C semantics)
class FloorDiv(Binary): pass
class FloorMod(Binary): pass
class Min(Binary): pass
class Max(Binary): pass
class EQ(Binary): pass
class NE(Binary): pass
class LT(Binary): pass
class LE(Binary): pass
class GT(Binary): pass
class GE(Binary): pass
class And(Binary): pass
class Or(Binary): pass

for _cls in (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max,
             EQ, NE, LT, LE, GT, GE, And, Or):
    NODE(_cls)

# TruncDiv shares the Div node for integers: Div on integer operands truncates toward zero.
COMPARISONS = (EQ, NE, LT, LE, GT, GE)


@NODE
class Not(Expr):
    a: Expr
    dtype: str = "bool"


@NODE
class Select(Expr):
    condition: Expr
    true_value: Expr
    false_value: Expr
    dtype: str


@NODE
class Cast(Expr):
    value: Expr
    dtype: str

    def __post_init__(self):
        if isinstance(self.value, str):
            _tvm_order(self, "value")
        if not isinstance(self.value, Expr):
            object.__setattr__(self, "value", convert(self.value))


def _tvm_order(node, first):
    """Accept TVM's argument order too: ``IntImm("int32", 5)``, ``FloatImm("float32", 0.5)``,
    ``Cast("float32", x)`` (the dtype first)."""
    value = getattr(node, first)
    if isinstance(value, str) and not isinstance(node.dtype, str):
        object.__setattr__(node, first, node.dtype)
        object.__setattr__(node, "dtype", dtypes.canonical(value))


@NODE
class Call(Expr):
    """A call of a named intrinsic (exp, sqrt, bitwise_and, ...)."""
    op: str
    args: tuple
    dtype: str


@NODE
class StringImm(Expr):
    """A string constant: the name of the function of a ``call_packed``."""
    value: str
    dtype: str = "handle"

    def __str__(self):          # as TVM prints one alone: "vadd" (in the IR printer: 'vadd')
        return '"' + self.value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@NODE
class Let(Expr):
    var: Var
    value: Expr
    body: Expr
    dtype: str


@NODE
class ProducerLoad(Expr):
    """Reading a te Tensor at an index; lowering turns it into a BufferLoad."""
    producer: object
    indices: tuple
    dtype: str


@NODE
class Reduce(Expr):
    """A commutative reduction of ``source`` over ``axis``; ``value_index`` picks a tuple item."""
    combiner: object
    source: tuple
    axis: tuple
    condition: Expr
    value_index: int
    dtype: str
    init: tuple = field(default=())


# ----------------------------------------------------------------------------- construction

def const(value, dtype=None) -> Expr:
    """A constant; the dtype defaults to int32, float32 or bool after the Python type."""
    if isinstance(value, np.generic) and dtype is None:
        dtype = value.dtype.name
    if dtype is None:
        if isinstance(value, (bool, np.bool_)):
            dtype = "bool"
        elif isinstance(value, numbers.Integral):
            dtype = "int32" if -2**31 <= value < 2**31 else "int64"
        else:
            dtype = "float32"
    dtype = dtypes.canonical(dtype)
    if dtypes.is_float(dtype):
        return FloatImm(float(value), dtype)
    if dtypes.is_bool(dtype):
        return IntImm(int(bool(value)), "bool")
    value = int(value)
    lo, hi = dtypes.min_value(dtype), dtypes.max_value(dtype)
    if not lo <= value <= hi:
        raise ValueError(f"the constant {value} does not fit {dtype} [{lo}, {hi}]; "
                         "give it a wider dtype, or cast the tensor it meets first "
                         "(x.astype('int32'))")
    return IntImm(value, dtype)


def convert(value) -> Expr:
    """Turn numbers, IterVars and expressions into an Expr."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, ExprOp):       # EqualOp, TensorSlice: what they stand for
        return value.asobject()
    iv_var = getattr(value, "var", None)
    if isinstance(iv_var, Var):
        return iv_var
    if isinstance(value, (numbers.Number, np.generic, bool)):
        return const(value)
    raise TypeError(f"cannot use {type(value).__name__} {value!r} as a te expression")


def _convert_pair(a, b):
    """Convert two operands; a bare Python number takes the other operand's dtype."""
    a_num = isinstance(a, (numbers.Number, np.number)) and not isinstance(a, np.generic)
    b_num = isinstance(b, (numbers.Number, np.number)) and not isinstance(b, np.generic)
    if a_num and not b_num:
        b = convert(b)
        return _literal(a, b.dtype), b
    if b_num and not a_num:
        a = convert(a)
        return a, _literal(b, a.dtype)
    return convert(a), convert(b)


def _literal(value, other_dtype: str) -> Expr:
    base = dtypes.element(other_dtype)
    if isinstance(value, bool) and dtypes.is_bool(base):
        return const(value, "bool")
    if isinstance(value, float) and not dtypes.is_float(base):
        return const(value, "float32" if dtypes.bits(base) <= 32 else "float64")
    if dtypes.is_bool(base):
        return const(value)
    return const(value, base)


def cast(dtype, value) -> Expr:
    """Convert ``value`` to ``dtype`` (a no-op when it already has it)."""
    value = convert(value)
    dtype = dtypes.canonical(dtype)
    if dtypes.lanes(value.dtype) > 1 and dtypes.lanes(dtype) == 1:
        dtype = dtypes.with_lanes(dtype, dtypes.lanes(value.dtype))
    if value.dtype == dtype:
        return value
    if isinstance(value, IntImm) and dtypes.is_int(dtype):
        return const(dtypes.wrap(value.value, dtype), dtype)
    if isinstance(value, FloatImm):     # the value the constant holds in its own precision
        return const(float(np.dtype(dtypes.element(value.dtype)).type(value.value)), dtype)
    if isinstance(value, IntImm):
        return const(value.value, dtype)
    return Cast(value, dtype)


def _unify(a: Expr, b: Expr) -> tuple[Expr, Expr, str]:
    ta, tb = dtypes.element(a.dtype), dtypes.element(b.dtype)
    t = dtypes.promote(ta, tb)
    return cast(t, a), cast(t, b), t


def binary(cls, a, b) -> Expr:
    a, b = _convert_pair(a, b)
    a, b, t = _unify(a, b)
    if cls in (Add, Sub, Mul, Min, Max) and dtypes.is_bool(t):
        a, b, t = cast("int32", a), cast("int32", b), "int32"
    lanes = max(dtypes.lanes(a.dtype), dtypes.lanes(b.dtype))
    return cls(a, b, dtypes.with_lanes(t, lanes))


def compare(cls, a, b) -> Expr:
    a, b = _convert_pair(a, b)
    a, b, _ = _unify(a, b)
    lanes = max(dtypes.lanes(a.dtype), dtypes.lanes(b.dtype))
    return cls(a, b, dtypes.with_lanes("bool", lanes))


def div(a, b) -> Expr:
    """``a / b``: floating-point division; integer operands are refused with a hint."""
    a, b = _convert_pair(a, b)
    if not dtypes.is_float(a.dtype) and not dtypes.is_float(b.dtype):
        raise TypeError(
            f"integer division '{a} / {b}' is ambiguous; use te.floordiv(a, b) (or a // b) "
            "for floor division, te.truncdiv(a, b) for C-style truncation, or cast an operand "
            "to a float dtype")
    return binary(Div, a, b)


def _int_operands(name, a, b):
    a, b = _convert_pair(a, b)
    a, b, t = _unify(a, b)
    if not dtypes.is_int(t):
        raise TypeError(f"te.{name} needs integer operands; got {a.dtype} and {b.dtype}")
    return a, b, t


def floordiv(a, b) -> Expr:
    """Division rounding toward negative infinity (Python's ``//``)."""
    a, b = _convert_pair(a, b)
    if dtypes.is_float(a.dtype) or dtypes.is_float(b.dtype):
        from .intrin import floor
        return floor(div(a, b))
    a, b, t = _int_operands("floordiv", a, b)
    return FloorDiv(a, b, t)


def floormod(a, b) -> Expr:
    """Remainder of floordiv, with the sign of the divisor (Python's ``%``); for floats
    ``a - floor(a / b) * b``, as TVM lowers it."""
    a, b = _convert_pair(a, b)
    if dtypes.is_float(a.dtype) or dtypes.is_float(b.dtype):
        return binary(Sub, a, binary(Mul, floordiv(a, b), b))
    a, b, t = _int_operands("floormod", a, b)
    return FloorMod(a, b, t)


def truncdiv(a, b) -> Expr:
    """Division rounding toward zero (C's ``/``)."""
    a, b, t = _int_operands("truncdiv", a, b)
    return Div(a, b, t)


def truncmod(a, b) -> Expr:
    """Remainder of truncdiv, with the sign of the dividend (C's ``%``)."""
    a, b, t = _int_operands("truncmod", a, b)
    return Mod(a, b, t)


def logical_or_bitwise(cls, intrinsic, a, b) -> Expr:
    a, b = _convert_pair(a, b)
    if dtypes.is_bool(a.dtype) and dtypes.is_bool(b.dtype):
        return cls(a, b, a.dtype)
    return bitwise(intrinsic, a, b)


def bitwise(name, a, b) -> Expr:
    a, b, t = _int_operands(name, a, b)
    return Call(name, (a, b), t)


def select(condition, true_value, false_value) -> Expr:
    """``true_value if condition else false_value``, both sides may be evaluated."""
    condition = convert(condition)
    if not dtypes.is_bool(condition.dtype):
        condition = compare(NE, condition, 0)
    t, f = _convert_pair(true_value, false_value)
    t, f, dt = _unify(t, f)
    return Select(condition, t, f, t.dtype if dtypes.lanes(t.dtype) > 1 else dt)


def all_(*conds) -> Expr:
    """Logical and of all conditions."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        return const(True)
    out = _as_bool(conds[0])
    for c in conds[1:]:
        out = And(out, _as_bool(c), "bool")
    return out


def any_(*conds) -> Expr:
    """Logical or of all conditions."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        return const(False)
    out = _as_bool(conds[0])
    for c in conds[1:]:
        out = Or(out, _as_bool(c), "bool")
    return out


def _as_bool(c) -> Expr:
    c = convert(c)
    if not dtypes.is_bool(c.dtype):
        raise TypeError(f"condition {c} has dtype {c.dtype}; te.all/te.any need comparisons")
    return c


def is_const(e, value=None) -> bool:
    if not isinstance(e, (IntImm, FloatImm)):
        return False
    return value is None or e.value == value


def as_int(e):
    """The Python int of an integer constant expression, else None."""
    if isinstance(e, (int, np.integer)):
        return int(e)
    if isinstance(e, IntImm):
        return e.value
    return None

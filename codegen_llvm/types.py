"""dtype -> LLVM type, and the table of IR operators -> LLVM instructions, in one place."""
from __future__ import annotations

from llvmlite import ir

from te import dtypes
from te.expr import Add, And, EQ, GE, GT, LE, LT, Mul, NE, Or, Sub

_SCALAR = {
    "float16": ir.FloatType(),      # computed in float32; stored as half
    "float32": ir.FloatType(),
    "float64": ir.DoubleType(),
    "bool": ir.IntType(1),
    "int8": ir.IntType(8), "int16": ir.IntType(16), "int32": ir.IntType(32),
    "int64": ir.IntType(64), "uint8": ir.IntType(8), "uint16": ir.IntType(16),
    "uint32": ir.IntType(32), "uint64": ir.IntType(64),
}
_MEMORY = dict(_SCALAR, float16=ir.HalfType(), bool=ir.IntType(8))


def value_type(dtype: str) -> ir.Type:
    """The register type of values of ``dtype`` (vectors for 'float32x8')."""
    base, lanes = dtypes.split_lanes(dtype)
    t = _SCALAR[base]
    return ir.VectorType(t, lanes) if lanes > 1 else t


def memory_type(dtype: str) -> ir.Type:
    """The in-memory element type (half for float16, i8 for bool)."""
    return _MEMORY[dtypes.element(dtype)]


def mangle(t: ir.Type) -> str:
    """The type suffix of an overloaded intrinsic: f32, v8f32, f64, ..."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    return f"i{t.width}"


# IR arithmetic -> (integer builder method, float builder method)
ARITH = {Add: ("add", "fadd"), Sub: ("sub", "fsub"), Mul: ("mul", "fmul")}
# comparisons -> (operator for icmp, fcmp ordered-or-unordered, operator)
COMPARE = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}
LOGIC = {And: "and_", Or: "or_"}

# intrinsics LLVM knows by name (llvm.<name>.<type>); others go to libm, lane by lane
LLVM_INTRINSICS = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
                   "sqrt": "sqrt", "sin": "sin", "cos": "cos", "fabs": "fabs", "floor": "floor",
                   "ceil": "ceil", "trunc": "trunc", "round": "roundeven", "pow": "pow"}
LIBM = {"tanh": "tanh", "erf": "erf", "log1p": "log1p", "tan": "tan", "asin": "asin",
        "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "exp10": "exp10"}

# functions glibc's libmvec offers in vector form (_ZGV<isa>N<lanes>v_<name>[f])
MVEC = {op: op for op in ("exp", "log", "sin", "cos", "tanh", "erf", "exp2", "exp10", "log2",
                          "log10", "log1p", "tan", "asin", "acos", "atan", "sinh", "cosh")}

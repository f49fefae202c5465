"""dtype strings and the promotion rules shared by the te graph and the loop IR.

A dtype is a string as numpy spells it ("float32", "int8", "bool"); a vector dtype used
inside the loop IR appends the lane count ("float32x8"). Promotion of mixed operands:

* bool with anything -> the other type;
* int with int -> the wider one (same width: the signed one);
* int with float -> the float;
* float with float -> the wider one.

float16 values are stored as half but computed in float32 by the backends.
"""
from __future__ import annotations

import numpy as np

FLOATS = ("float16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
ALL = FLOATS + SIGNED + UNSIGNED + ("bool",)


def split_lanes(dtype: str) -> tuple[str, int]:
    """'float32x8' -> ('float32', 8); 'int32' -> ('int32', 1)."""
    if "x" in dtype:
        base, lanes = dtype.rsplit("x", 1)
        return base, int(lanes)
    return dtype, 1


def element(dtype: str) -> str:
    return split_lanes(dtype)[0]


def lanes(dtype: str) -> int:
    return split_lanes(dtype)[1]


def with_lanes(dtype: str, n: int) -> str:
    base = element(dtype)
    return base if n == 1 else f"{base}x{n}"


def canonical(dtype) -> str:
    """Accept numpy dtypes, Python types and strings; return the canonical name."""
    if isinstance(dtype, str):
        base, n = split_lanes(dtype) if dtype not in ALL else (dtype, 1)
        if base not in ALL:
            raise TypeError(f"unsupported dtype {dtype!r}; supported: {', '.join(ALL)}")
        return with_lanes(base, n)
    if dtype is float:
        return "float32"
    if dtype is int:
        return "int32"
    if dtype is bool:
        return "bool"
    name = np.dtype(dtype).name
    if name not in ALL:
        raise TypeError(f"unsupported dtype {name!r}; supported: {', '.join(ALL)}")
    return name


def is_float(dtype: str) -> bool:
    return element(dtype) in FLOATS


def is_int(dtype: str) -> bool:
    return element(dtype) in SIGNED or element(dtype) in UNSIGNED


def is_signed(dtype: str) -> bool:
    return element(dtype) in SIGNED


def is_bool(dtype: str) -> bool:
    return element(dtype) == "bool"


def bits(dtype: str) -> int:
    base = element(dtype)
    return 1 if base == "bool" else np.dtype(base).itemsize * 8


def wrap(value: int, dtype: str) -> int:
    """The integer ``value`` wrapped around into the range of integer ``dtype``."""
    n = bits(dtype)
    value %= 1 << n
    return value - (1 << n) if is_signed(dtype) and value >= 1 << (n - 1) else value


def promote(a: str, b: str) -> str:
    """The dtype of a binary arithmetic operation on scalar dtypes a and b."""
    if a == b:
        return a
    if is_bool(a):
        return b
    if is_bool(b):
        return a
    if is_float(a) != is_float(b):
        return a if is_float(a) else b
    if bits(a) != bits(b):
        return a if bits(a) > bits(b) else b
    return a if is_signed(a) or is_float(a) else b


def min_value(dtype: str):
    base = element(dtype)
    if base in FLOATS:
        return float(np.finfo(base).min)
    if base == "bool":
        return False
    return int(np.iinfo(base).min)


def max_value(dtype: str):
    base = element(dtype)
    if base in FLOATS:
        return float(np.finfo(base).max)
    if base == "bool":
        return True
    return int(np.iinfo(base).max)


def float_to_int(x, dtype):
    """Float -> integer conversion as every backend does it: truncate toward zero, saturate at
    the dtype's ends, NaN -> 0 (LLVM's fptosi.sat / fptoui.sat, the GPU's cvt.rzi; numpy's
    astype leaves NaN and out-of-range values undefined, and in LLVM they are poison)."""
    dt = np.dtype(element(dtype) if isinstance(dtype, str) else dtype)
    info = np.iinfo(dt)
    v = np.asarray(x, dtype=np.float64)
    t = np.trunc(v)
    nan = np.isnan(t)
    big = t >= float(info.max)          # float(max) rounds up for 64 bits: >= catches it
    small = t <= float(info.min)
    safe = np.where(nan | big | small, 0, t)
    with np.errstate(invalid="ignore"):
        out = safe.astype(dt)
    out = np.where(big, np.array(info.max, dt), out)
    out = np.where(small, np.array(info.min, dt), out)
    return out.astype(dt)[()]

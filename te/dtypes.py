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
    """Float -> integer conversion as every backend does it: truncate toward zero into int64,
    saturating at int64's ends (NaN -> 0), then wrap to ``dtype`` as an integer conversion does
    (float32 -2.2 -> uint8 is 254, as numpy and PyTorch give on x86); uint64 takes values from
    2**63 up unwrapped, saturating at its end. LLVM's plain fptosi / fptoui of NaN or of an
    out-of-range value is poison: the backends use the saturating forms (fptosi.sat)."""
    dt = np.dtype(element(dtype) if isinstance(dtype, str) else dtype)
    v = np.trunc(np.asarray(x, dtype=np.float64))
    nan = np.isnan(v)
    top = 2.0 ** 63
    big, small = v >= top, v < -top
    safe = np.where(nan | big | small, 0.0, v)
    with np.errstate(invalid="ignore", over="ignore"):
        wide = safe.astype(np.int64)
        wide = np.where(big, np.int64(2**63 - 1), wide)
        wide = np.where(small, np.int64(-2**63), wide)
        if dt == np.uint64:
            out = wide.astype(np.uint64)                    # below 2**63: int64, wrapped
            mid = big & (v < 2.0 ** 64)
            upper = np.where(mid, v - top, 0.0).astype(np.uint64) + np.uint64(2**63)
            out = np.where(mid, upper, out)
            return np.where(v >= 2.0 ** 64, np.uint64(2**64 - 1), out).astype(dt)[()]
        return wide.astype(dt)[()]

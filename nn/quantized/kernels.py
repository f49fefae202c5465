"""te kernels of the quantized tensors, and TFLite's fixed-point multipliers.

Every kernel is a te declaration built by ``nn.ops.cpu.build`` (default injective schedule)
and run by ``nn.functions.base._kernel``; the quantization parameters travel as a small
float64 operand ``p`` (integers and float32 values are exact in it), so one compiled kernel
serves every scale and zero point of a shape.

Rounding rules (``rint``: round half to even):

- quantize (PyTorch / fbgemm): ``q = clamp(rint(x * f32(1 / f32(scale)) + zero_point))``
  in float32, the multiply-add fused per tensor to 8 bits (see ``quantize``); NaN gives
  ``qmax`` for 8-bit dtypes and ``qmin`` for qint32, as PyTorch's x86 kernels do.
- dequantize: ``f32(q - zero_point) * f32(scale)`` (per channel: in float64, then float32).
- float requantization (PyTorch's ``requantize_from_int``):
  ``clamp(zero_point + rint(f32(src) * f32(multiplier)))``.
- integer requantization (TFLite / gemmlowp): ``MultiplyByQuantizedMultiplier`` with the
  ``(multiplier, shift)`` of ``quantize_multiplier``; see ``fixed_point_multiply``.
"""
from __future__ import annotations

import math

import numpy as np

import te
from te.topi.broadcast import broadcast_compute

from .dtypes import QDTYPES

INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1
# the common scale of an Add is 2 * max(input scales) / 2**ADD_LEFT_SHIFT (TFLite's 8-bit Add)
ADD_LEFT_SHIFT = 20


def quantize_multiplier(real: float) -> tuple:
    """TFLite's ``QuantizeMultiplier``: ``real ~= m * 2**shift / 2**31`` with int32 ``m`` in
    ``[2**30, 2**31)`` (0 for 0): ``frexp`` in double, the mantissa rounded half away from
    zero; shifts below -31 flush to 0, above 30 saturate."""
    if real < 0 or not math.isfinite(real):
        raise ValueError(f"quantize_multiplier: the multiplier must be finite and >= 0, "
                         f"got {real}")
    if real == 0:
        return 0, 0
    mantissa, shift = math.frexp(real)
    fixed = int(math.floor(mantissa * 2 ** 31 + 0.5))
    if fixed == 2 ** 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return INT32_MAX, 30
    return fixed, shift


# ----------------------------------------------------------------------------- expressions

def _int(e, dtype="int64"):
    return e.astype(dtype)


def _clamp(v, lo, hi):
    return te.min(te.max(v, te.const(lo, v.dtype)), te.const(hi, v.dtype))


def _sat32(v):
    """An int64 expression saturated to int32's range (kept int64)."""
    return _clamp(v, INT32_MIN, INT32_MAX)


def _rint_to_int64(v):
    """A float expression rounded half to even, bounded to +-2**62 (so that adding a zero
    point cannot wrap), as int64."""
    bound = te.const(2.0 ** 62, v.dtype)
    return te.min(te.max(te.round(v), -bound), bound).astype("int64")


def saturating_rounding_doubling_high_mul(a, b):
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` of int32 values held in int64:
    ``(a * b + nudge) / 2**31`` truncated toward zero, ``nudge = 2**30`` for a product >= 0
    and ``1 - 2**30`` below. ``b`` is a multiplier of ``quantize_multiplier`` (>= 0), so the
    product has ``a``'s sign and its one overflow (``a == b == INT32_MIN``) cannot occur;
    each operand appears once or twice, which keeps the nested expressions small."""
    nudge = te.select(a >= 0, te.const(1 << 30, "int64"), te.const(1 - (1 << 30), "int64"))
    return te.truncdiv(a * b + nudge, te.const(1 << 31, "int64"))


def rounding_divide_by_pot(x, exponent):
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded to nearest, ties away
    from zero. gemmlowp writes it ``(x >> e) + ((x & mask) > (mask >> 1) + (x < 0))`` with
    ``mask = 2**e - 1``; the same value is ``(x + 2**e / 2 - (x < 0 and e > 0)) >> e`` (a
    remainder above the threshold is what carries into the shifted bits)."""
    one, zero = te.const(1, "int64"), te.const(0, "int64")
    half = (one << exponent) >> one
    negative = te.select(te.all(x < zero, exponent > zero), one, zero)
    return (x + half - negative) >> exponent


def fixed_point_multiply(x, multiplier, shift):
    """TFLite's ``MultiplyByQuantizedMultiplier(x, m, shift)``:
    ``RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2**max(shift, 0), m),
    max(-shift, 0))``; ``x`` and the left-shifted value saturate to int32 (C++ would
    overflow)."""
    zero = te.const(0, "int64")
    left = te.max(shift, zero)
    right = te.max(-shift, zero)
    shifted = _sat32(_sat32(x) << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier),
                                  right)


def _finish(v, qdtype, low=None):
    """int64 ``v`` clamped to ``qdtype`` (and to ``low`` below, for a fused ReLU), stored."""
    info = QDTYPES[qdtype]
    v = _clamp(v, info.qmin, info.qmax)
    if low is not None:
        v = te.max(v, low)
    return v.astype(info.storage)


def _float_requantize(src, multiplier, zero_point):
    """PyTorch's ``requantize_from_int``: ``zero_point + rint(f32(src) * f32(multiplier))``."""
    return _rint_to_int64(src.astype("float32") * multiplier.astype("float32")) + zero_point


# ----------------------------------------------------------------------------- declarations

def quantize(x, inv_scale, zero_point, qdtype, axis=-1):
    """``x`` (float32) quantized; ``inv_scale`` and ``zero_point`` (float32) hold one value,
    or one per index of axis ``axis`` (``axis=-1``: per tensor).

    As PyTorch's x86 kernels: per tensor to an 8-bit dtype, ``rint(fma(x, inv, zp))`` (the
    fused multiply-add of fbgemm's AVX path: computed in float64, where ``x * inv`` is exact,
    then rounded to float32; the sum is inexact in float64 only when ``|x * inv|`` is below
    2**-40 and the result is ``zp`` either way); per channel and to qint32,
    ``rint(f32(f32(x * inv) + zp))``.
    """
    info = QDTYPES[qdtype]
    nan = info.qmin if info.storage == "int32" else info.qmax
    fused = axis < 0 and info.storage != "int32"

    def body(*i):
        k = 0 if axis < 0 else i[axis]
        if fused:
            wide = x[i].astype("float64") * inv_scale[k].astype("float64")
            v = te.round((wide + zero_point[k].astype("float64")).astype("float32"))
        else:
            v = te.round(x[i] * inv_scale[k] + zero_point[k])
        bounded = te.min(te.max(v, te.const(-2.0 ** 40)), te.const(2.0 ** 40))
        q = te.select(v.not_equal(v), te.const(nan, "int64"), bounded.astype("int64"))
        return _finish(q, qdtype)
    return te.compute(x.shape, body, name="quantize", tag="elemwise")


def dequantize(q, scale, zero_point, axis=-1):
    """``(q - zero_point) * scale`` (int64 ``zero_point``; one value, or one per index of
    ``axis``), as PyTorch: in float32 per tensor (float32 ``scale``), in float64 per channel
    (float64 ``scale``), rounded to float32."""
    def body(*i):
        k = 0 if axis < 0 else i[axis]
        return ((_int(q[i]) - zero_point[k]).astype(scale.dtype) * scale[k]).astype("float32")
    return te.compute(q.shape, body, name="dequantize", tag="elemwise")


def requantize(q, p, qdtype, mode):
    """``q`` (storage ints) to ``qdtype``. ``mode="float"``: ``p = (in_zp, f32 multiplier,
    out_zp)``; ``mode="integer"``: ``p = (in_zp, m, shift, out_zp)``."""
    def body(*i):
        src = _int(q[i]) - _int(p[0])
        if mode == "float":
            return _finish(_float_requantize(src, p[1], _int(p[2])), qdtype)
        return _finish(fixed_point_multiply(src, _int(p[1]), _int(p[2])) + _int(p[3]), qdtype)
    return te.compute(q.shape, body, name="requantize", tag="elemwise")


def quantized_add(a, b, p, qdtype, mode, relu):
    """The seeds' quantized Add: both inputs rescaled to the common scale
    ``2 * max(sa, sb) / 2**20``, added in int32 (int64 for qint32), rescaled to the output.

    ``p = (zpa, zpb, zpo, ma, mb, mo)``: float multipliers (float64) for ``mode="float"``;
    for ``mode="integer"`` (TFLite's Add) ``p = (zpa, zpb, zpo, ma, sa, mb, sb, mo, so)``
    with each ``(m, s)`` from ``quantize_multiplier``.
    """
    acc = "int64" if qdtype == "qint32" else "int32"
    zpo = _int(p[2])

    def body(x, y):
        xs = (_int(x) - _int(p[0])) << te.const(ADD_LEFT_SHIFT, "int64")
        ys = (_int(y) - _int(p[1])) << te.const(ADD_LEFT_SHIFT, "int64")
        if mode == "float":
            total = (_rint_to_int64(xs.astype("float64") * p[3]).astype(acc) +
                     _rint_to_int64(ys.astype("float64") * p[4]).astype(acc))
            out = _rint_to_int64(total.astype("float64") * p[5]) + zpo
        else:
            total = (fixed_point_multiply(xs, _int(p[3]), _int(p[4])).astype(acc) +
                     fixed_point_multiply(ys, _int(p[5]), _int(p[6])).astype(acc))
            out = fixed_point_multiply(_int(total), _int(p[7]), _int(p[8])) + zpo
        return _finish(out, qdtype, zpo if relu else None)
    return broadcast_compute(body, a, b, name="quantized_add", tag="elemwise")


def quantized_mul(a, b, p, qdtype, mode, relu):
    """Quantized Mul: ``(a - zpa) * (b - zpb)`` in int32 (int64 for qint32), requantized.
    ``p = (zpa, zpb, zpo, f32 multiplier)`` (PyTorch's ``qmul``) or, for ``mode="integer"``,
    ``p = (zpa, zpb, zpo, m, shift)``."""
    acc = "int64" if qdtype == "qint32" else "int32"
    zpo = _int(p[2])

    def body(x, y):
        prod = ((_int(x) - _int(p[0])).astype(acc) * (_int(y) - _int(p[1])).astype(acc))
        if mode == "float":
            out = _float_requantize(prod, p[3], zpo)
        else:
            out = fixed_point_multiply(_int(prod), _int(p[3]), _int(p[4])) + zpo
        return _finish(out, qdtype, zpo if relu else None)
    return broadcast_compute(body, a, b, name="quantized_mul", tag="elemwise")


def params(*values) -> np.ndarray:
    """The parameter operand ``p`` of a kernel."""
    return np.array(values, dtype="float64")

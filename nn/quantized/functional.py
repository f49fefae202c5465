"""Quantized operators (PyTorch's ``torch.ops.quantized``): ``requantize``, ``add``,
``add_relu``, ``mul``, ``cat``, ``add_scalar``, ``mul_scalar``. Each is a te kernel of
``nn.quantized.kernels``; the output parameters are given (``scale``, ``zero_point``), except
for the scalar operators, which choose them as PyTorch's do.

``mode="float"`` (the default) rescales with floating-point multipliers, as PyTorch's x86
kernels; ``mode="integer"`` with TFLite / gemmlowp's fixed-point multipliers and shifts.
"""
from __future__ import annotations

import numpy as np

from ..functions import base
from . import kernels
from .dtypes import per_tensor_affine
from .qtensor import QTensor, check_scale, check_zero_point

__all__ = ["requantize", "add", "add_relu", "mul", "cat", "add_scalar", "mul_scalar", "linear",
           "conv2d", "relu", "relu6", "hardtanh", "max_pool2d", "adaptive_avg_pool2d",
           "batch_norm"]

MODES = ("float", "integer")


def _check_mode(mode, what):
    if mode not in MODES:
        raise ValueError(f"{what}: argument 'mode' must be 'float' or 'integer', got {mode!r}")


def _per_tensor(q, what, name="input"):
    if not isinstance(q, QTensor):
        raise TypeError(f"{what}: argument '{name}' must be a quantized tensor (make one with "
                        f"nn.quantize_per_tensor), got {type(q).__name__}")
    if q.qscheme() is not per_tensor_affine:
        raise RuntimeError(f"{what}: argument '{name}' must be quantized per tensor, got "
                           f"{q.qscheme()!r}")
    return q


def _f32(value) -> float:
    return float(np.float32(value))


def requantize(q, scale, zero_point, dtype=None, mode="float"):
    """``q`` with new parameters ``(scale, zero_point)`` and dtype (default: ``q``'s).

    With ``src = q - q.q_zero_point()`` and the multiplier ``M = q.q_scale() / scale`` in
    double:

    - ``mode="float"`` (PyTorch's ``requantize_from_int``):
      ``out = clamp(zero_point + rint(f32(src) * f32(M)))``, ``rint`` half to even.
    - ``mode="integer"`` (TFLite's ``Requantize`` / gemmlowp): ``M = m * 2**shift / 2**31``
      by ``QuantizeMultiplier`` (``frexp``; the mantissa times 2**31 rounded half away from
      zero); ``out = clamp(zero_point + RoundingDivideByPOT(
      SaturatingRoundingDoublingHighMul(src * 2**max(shift, 0), m), max(-shift, 0)))`` where
      ``SRDHM(a, b) = (a * b + (2**30 if a * b >= 0 else 1 - 2**30)) / 2**31`` truncated
      toward zero and ``RDBPOT(x, e) = (x >> e) + ((x & (2**e - 1)) > ((2**e - 1) >> 1) +
      (x < 0))``; ``src`` and ``src * 2**shift`` saturate to int32.
    """
    from .dtypes import as_qdtype
    what = "requantize"
    _per_tensor(q, what)
    _check_mode(mode, what)
    qdtype = q.dtype if dtype is None else as_qdtype(dtype, what)
    scale = check_scale(scale, what)
    zero_point = check_zero_point(zero_point, qdtype, what)
    ints = requantize_ints(q, scale, zero_point, qdtype, mode)
    return QTensor(ints, qdtype, scale, zero_point)


def requantize_ints(q, scale, zero_point, qdtype, mode):
    """The integers of ``requantize`` (an nn.Tensor of ``qdtype``'s storage dtype)."""
    multiplier = q.q_scale() / scale
    if mode == "float":
        p = kernels.params(q.q_zero_point(), _f32(multiplier), zero_point)
    else:
        m, shift = kernels.quantize_multiplier(multiplier)
        p = kernels.params(q.q_zero_point(), m, shift, zero_point)
    return base._kernel(kernels.requantize, q._int._data, p, out_shape=q.shape,
                        qdtype=str(qdtype), mode=mode)


def _binary(a, b, scale, zero_point, what):
    _per_tensor(a, what, "qa")
    _per_tensor(b, what, "qb")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{what}: Add operands should have same data type (got {a.dtype!r} "
                           f"and {b.dtype!r}).")
    shape = base.broadcast_shape(a.shape, b.shape)
    return shape, check_scale(scale, what), check_zero_point(zero_point, a.dtype, what)


def _add(a, b, scale, zero_point, mode, relu, what):
    _check_mode(mode, what)
    shape, scale, zero_point = _binary(a, b, scale, zero_point, what)
    twice_max = 2 * max(a.q_scale(), b.q_scale())
    real = (a.q_scale() / twice_max, b.q_scale() / twice_max,
            twice_max / ((1 << kernels.ADD_LEFT_SHIFT) * scale))
    zps = (a.q_zero_point(), b.q_zero_point(), zero_point)
    if mode == "float":
        p = kernels.params(*zps, *real)
    else:
        if a.dtype == "qint32":
            raise NotImplementedError(f"{what}: mode='integer' adds 8-bit tensors (TFLite's "
                                      "Add); use mode='float' for qint32")
        p = kernels.params(*zps, *(v for r in real for v in kernels.quantize_multiplier(r)))
    ints = base._kernel(kernels.quantized_add, a._int._data, b._int._data, p, out_shape=shape,
                        qdtype=str(a.dtype), mode=mode, relu=relu)
    return QTensor(ints, a.dtype, scale, zero_point)


def add(qa, qb, scale, zero_point, mode="float"):
    """``qa + qb`` quantized to ``(scale, zero_point)``: the inputs rescaled to the common
    scale ``2 * max(sa, sb) / 2**20``, added in int32, the sum rescaled to the output (TFLite's
    8-bit Add; float multipliers in double for ``mode="float"``)."""
    return _add(qa, qb, scale, zero_point, mode, False, "add")


def add_relu(qa, qb, scale, zero_point, mode="float"):
    """``relu(qa + qb)``: ``add`` clamped below at the output zero point."""
    return _add(qa, qb, scale, zero_point, mode, True, "add_relu")


def mul(qa, qb, scale, zero_point, mode="float"):
    """``qa * qb``: ``(qa - za) * (qb - zb)`` in int32 requantized by ``sa * sb / scale``
    (PyTorch's float32 multiplier ``f32(sa * sb * f32(1 / f32(scale)))``)."""
    what = "mul"
    _check_mode(mode, what)
    shape, scale, zero_point = _binary(qa, qb, scale, zero_point, what)
    zps = (qa.q_zero_point(), qb.q_zero_point(), zero_point)
    if mode == "float":
        inv = float(np.float32(1.0) / np.float32(scale))
        p = kernels.params(*zps, _f32(qa.q_scale() * qb.q_scale() * inv))
    else:
        p = kernels.params(*zps, *kernels.quantize_multiplier(
            qa.q_scale() * qb.q_scale() / scale))
    ints = base._kernel(kernels.quantized_mul, qa._int._data, qb._int._data, p, out_shape=shape,
                        qdtype=str(qa.dtype), mode=mode, relu=False)
    return QTensor(ints, qa.dtype, scale, zero_point)


def cat(tensors, scale, zero_point, dim=0, mode="float"):
    """``tensors`` joined along ``dim`` with parameters ``(scale, zero_point)``: an input with
    other parameters is requantized, one with the same is copied as it is."""
    what = "cat"
    _check_mode(mode, what)
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat: expected a non-empty list of quantized tensors")
    for k, t in enumerate(tensors):
        _per_tensor(t, what, f"tensors[{k}]")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError(f"cat: All dtypes must be the same (tensors[0] is "
                               f"{tensors[0].dtype!r}, tensors[{k}] is {t.dtype!r}).")
    qdtype = tensors[0].dtype
    scale = check_scale(scale, what)
    zero_point = check_zero_point(zero_point, qdtype, what)
    ints = [t._int if (t.q_scale(), t.q_zero_point()) == (scale, zero_point)
            else requantize_ints(t, scale, zero_point, qdtype, mode) for t in tensors]
    from ..functions.shape import cat as int_cat
    return QTensor(int_cat(ints, dim), qdtype, scale, zero_point)


def add_scalar(qa, other, mode="float"):
    """``qa + other`` for a number: PyTorch's choice of output parameters. With
    ``c_q = rint(other / s)``: the zero point moves to ``z - c_q`` (integers copied) when it
    stays inside the dtype; else it saturates at the range's end and the scale grows to
    ``s * (qmax - (z - c_q)) / (qmax - qmin)`` (or ``s * (z - c_q - qmin) / (qmax - qmin)``),
    the integers ``q - z + c_q`` requantized to it."""
    what = "add_scalar"
    _per_tensor(qa, what, "qa")
    _check_mode(mode, what)
    s, z = qa.q_scale(), qa.q_zero_point()
    qmin, qmax = qa.dtype.qmin, qa.dtype.qmax
    c_q = int(round(float(other) / s))
    if qmin <= z - c_q <= qmax:
        return QTensor(qa._int.clone(), qa.dtype, s, z - c_q)
    if z - c_q < qmin:
        new_scale, new_zp = (qmax - (z - c_q)) / (qmax - qmin) * s, qmin
    else:
        new_scale, new_zp = ((z - c_q) - qmin) / (qmax - qmin) * s, qmax
    if mode == "float":     # PyTorch's multiplier: f32(s) * (1.0f / f32(new_scale))
        multiplier = _f32(np.float32(s) * (np.float32(1.0) / np.float32(new_scale)))
        p = kernels.params(z - c_q, multiplier, new_zp)
        ints = base._kernel(kernels.requantize, qa._int._data, p, out_shape=qa.shape,
                            qdtype=str(qa.dtype), mode=mode)
    else:
        shifted = QTensor(qa._int, qa.dtype, s, z - c_q)   # q - z + c_q == q - (z - c_q)
        ints = requantize_ints(shifted, new_scale, new_zp, qa.dtype, mode)
    return QTensor(ints, qa.dtype, new_scale, new_zp)


def mul_scalar(qa, other):
    """``qa * other`` for a number, as PyTorch's: ``other > 0`` scales the scale (integers
    copied); ``other == 0`` gives zeros with ``(1.0, 0)``; ``other < 0`` scales by
    ``|other|``, with zero point ``qmax - (z - qmin)`` and integers ``qmax - (q - qmin)``."""
    what = "mul_scalar"
    _per_tensor(qa, what, "qa")
    c = float(other)
    s, z = qa.q_scale(), qa.q_zero_point()
    qmin, qmax = qa.dtype.qmin, qa.dtype.qmax
    if c > 0:
        return QTensor(qa._int.clone(), qa.dtype, s * c, z)
    if c == 0:
        return QTensor(qa._int * 0, qa.dtype, 1.0, 0)
    # qmax - (q - qmin) is q requantized with multiplier -1 around zero point qmin
    p = kernels.params(qmin, -1.0, qmax)
    ints = base._kernel(kernels.requantize, qa._int._data, p, out_shape=qa.shape,
                        qdtype=str(qa.dtype), mode="float")
    return QTensor(ints, qa.dtype, s * -c, qmax - (z - qmin))


# the layer operators (products, activations, pools, batch norm)
from .functional_layers import (adaptive_avg_pool2d, batch_norm, conv2d, hardtanh,  # noqa: E402
                                linear, max_pool2d, relu, relu6)

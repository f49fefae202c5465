"""Quantized tensors, as PyTorch's: ``nn.quantize_per_tensor`` / ``nn.quantize_per_channel``
make a ``QTensor``, integers ``q`` (``int_repr()``) standing for ``scale * (q - zero_point)``.

A QTensor is a class of its own beside ``nn.Tensor``, with the same surface for what a
quantized tensor can do (shape, ``flatten``, ``reshape``, slicing, ``nn.cat``); arithmetic goes
through ``nn.quantized.QFunctional`` / ``nn.quantized.functional``. Its integers are an
``nn.Tensor`` of the storage dtype (uint8, int8, int32), so views and copies are nn's own te
kernels; quantizing and dequantizing are the te kernels of ``nn.quantized.kernels``.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..functions import base
from ..tensor import Tensor, _dim
from . import kernels
from .dtypes import as_qdtype, per_channel_affine, per_tensor_affine

__all__ = ["QTensor", "quantize_per_tensor", "quantize_per_channel", "cat", "concat"]


def check_scale(scale, what) -> float:
    """``scale`` as a float, or a RuntimeError naming it (PyTorch accepts <= 0: we do not)."""
    if isinstance(scale, Tensor):
        scale = scale.item()
    if not isinstance(scale, numbers.Real) or isinstance(scale, bool):
        raise TypeError(f"{what}: argument 'scale' must be a float, got "
                        f"{type(scale).__name__}")
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise RuntimeError(f"{what}: the scale must be a finite number > 0, got scale={scale}")
    return scale


def check_zero_point(zero_point, qdtype, what) -> int:
    """``zero_point`` as an int inside ``qdtype``'s range, or PyTorch's error."""
    if isinstance(zero_point, Tensor):
        zero_point = zero_point.item()
    if not isinstance(zero_point, numbers.Integral) or isinstance(zero_point, bool):
        raise TypeError(f"{what}: argument 'zero_point' must be an int, got "
                        f"{type(zero_point).__name__} {zero_point!r}")
    zero_point = int(zero_point)
    if zero_point > qdtype.qmax:
        raise RuntimeError(f"{what} zero_point {zero_point} is above upper bound "
                           f"({qdtype.qmax} for {qdtype!r}).")
    if zero_point < qdtype.qmin:
        raise RuntimeError(f"{what} zero_point {zero_point} is below lower bound "
                           f"({qdtype.qmin} for {qdtype!r}).")
    return zero_point


def _float_input(x, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: argument 'input' must be an nn.Tensor, got "
                        f"{type(x).__name__}")
    if x.dtype != "float32":
        raise RuntimeError(f"{what}: Quantize only works on float32 tensors, got {x.dtype}")
    return x.detach()


def _run(declare, *arrays, out_shape, **params):
    return base._kernel(declare, *arrays, out_shape=out_shape, **params)


def _inv_scale(scale) -> np.float32:
    """PyTorch's reciprocal of a scale: ``1.0f / float(scale)`` in float32."""
    return np.float32(1.0) / np.float32(scale)


class QTensor:
    """A quantized tensor: per tensor (``scale``, ``zero_point``) or per channel (one pair per
    index of ``axis``)."""
    is_quantized = True
    requires_grad = False
    grad_fn = None
    is_leaf = True
    __array_priority__ = 1001

    def __init__(self, ints: Tensor, dtype, scale=None, zero_point=None, *, scales=None,
                 zero_points=None, axis=None):
        self._int = ints
        self._dtype = dtype
        self._scale, self._zero_point = scale, zero_point
        self._scales, self._zero_points, self._axis = scales, zero_points, axis

    # --------------------------------------------------------------- parameters

    @property
    def dtype(self):
        return self._dtype

    def qscheme(self):
        return per_tensor_affine if self._axis is None else per_channel_affine

    def _per_tensor(self, what):
        if self._axis is not None:
            raise RuntimeError(f"{what}: the tensor is quantized per channel (axis "
                               f"{self._axis}); use q_per_channel_scales() / "
                               "q_per_channel_zero_points()")

    def _per_channel(self, what):
        if self._axis is None:
            raise RuntimeError(f"{what}: the tensor is quantized per tensor; use q_scale() / "
                               "q_zero_point()")

    def q_scale(self) -> float:
        self._per_tensor("q_scale")
        return self._scale

    def q_zero_point(self) -> int:
        self._per_tensor("q_zero_point")
        return self._zero_point

    def q_per_channel_scales(self) -> Tensor:
        self._per_channel("q_per_channel_scales")
        return Tensor(self._scales.copy())

    def q_per_channel_zero_points(self) -> Tensor:
        self._per_channel("q_per_channel_zero_points")
        return Tensor(self._zero_points.copy())

    def q_per_channel_axis(self) -> int:
        self._per_channel("q_per_channel_axis")
        return self._axis

    def _same_params(self, ints) -> QTensor:
        return QTensor(ints, self._dtype, self._scale, self._zero_point, scales=self._scales,
                       zero_points=self._zero_points, axis=self._axis)

    # --------------------------------------------------------------- values

    def int_repr(self) -> Tensor:
        """The integers, a new tensor of the storage dtype."""
        return self._int.clone()

    def dequantize(self) -> Tensor:
        """``scale * (q - zero_point)`` as float32 (a te kernel)."""
        if self._axis is None:
            scale = np.array([self._scale], "float32")
            zero_point = np.array([self._zero_point], "int64")
            axis = -1
        else:
            scale = self._scales
            zero_point = self._zero_points
            axis = self._axis
        return _run(kernels.dequantize, self._int._data, scale, zero_point,
                    out_shape=self.shape, axis=axis)

    # --------------------------------------------------------------- shape

    @property
    def shape(self) -> tuple:
        return self._int.shape

    @property
    def ndim(self) -> int:
        return self._int.ndim

    @property
    def device(self):
        return self._int.device

    def size(self, dim=None):
        return self._int.size(dim)

    def dim(self) -> int:
        return self._int.ndim

    def numel(self) -> int:
        return self._int.numel()

    def __len__(self):
        return len(self._int)

    def is_contiguous(self, memory_format=None) -> bool:
        return self._int.is_contiguous()

    def contiguous(self) -> QTensor:
        return self if self.is_contiguous() else self._same_params(self._int.contiguous())

    def clone(self) -> QTensor:
        return self._same_params(self._int.clone())

    def detach(self) -> QTensor:
        return self

    def cpu(self) -> QTensor:
        return self

    def reshape(self, *shape) -> QTensor:
        ints = self._int.reshape(*shape)
        return self._reshaped(ints)

    def view(self, *shape) -> QTensor:
        return self._reshaped(self._int.view(*shape))

    def flatten(self, start_dim=0, end_dim=-1) -> QTensor:
        return self._reshaped(self._int.flatten(start_dim, end_dim))

    def _reshaped(self, ints) -> QTensor:
        if self._axis is None:
            return self._same_params(ints)
        old, new = self.shape, ints.shape
        lead = math.prod(old[:self._axis])
        for k in range(len(new)):
            if math.prod(new[:k]) == lead and new[k] == old[self._axis]:
                return QTensor(ints, self._dtype, scales=self._scales,
                               zero_points=self._zero_points, axis=k)
        raise RuntimeError(f"reshape: the per-channel quantized tensor of shape {old} (axis "
                           f"{self._axis}) cannot become shape {new}: the channel axis must "
                           "stay a dimension of its own with the same dimensions before it")

    def __getitem__(self, index) -> QTensor:
        ints = self._int[index]
        if self._axis is None:
            return self._same_params(ints)
        return self._channel_slice(index, ints)

    def _channel_slice(self, index, ints) -> QTensor:
        """Basic indexing of a per-channel tensor: the channel axis sliced with its scales,
        or picked by an int (then per tensor, as PyTorch)."""
        index = index if isinstance(index, tuple) else (index,)
        if any(not isinstance(i, (int, np.integer, slice)) and i is not Ellipsis
               for i in index):
            raise NotImplementedError("indexing a per-channel quantized tensor takes ints, "
                                      "slices and ... only; dequantize() it first")
        if Ellipsis in index:
            k = index.index(Ellipsis)
            fill = self.ndim - (len(index) - 1)
            index = index[:k] + (slice(None),) * fill + index[k + 1:]
        index = index + (slice(None),) * (self.ndim - len(index))
        picked = index[self._axis]
        if isinstance(picked, (int, np.integer)):
            c = _dim(int(picked), self.shape[self._axis])
            return QTensor(ints, self._dtype, float(self._scales[c]),
                           int(self._zero_points[c]))
        axis = sum(1 for i in index[:self._axis] if isinstance(i, slice))
        return QTensor(ints, self._dtype, scales=self._scales[picked],
                       zero_points=self._zero_points[picked], axis=axis)

    # --------------------------------------------------------------- printing, operators

    def __repr__(self):
        values = np.array2string(self.dequantize().numpy(), precision=4, separator=", ",
                                 prefix="tensor(")
        if self._axis is None:
            params = f"scale={self._scale}, zero_point={self._zero_point}"
        else:
            params = (f"scale={self._scales.tolist()}, zero_point="
                      f"{self._zero_points.tolist()}, axis={self._axis}")
        return (f"tensor({values}, size={self.shape}, dtype={self._dtype!r}, "
                f"quantization_scheme={self.qscheme()!r}, {params})")

    def _no_arithmetic(self, *args):
        raise NotImplementedError("arithmetic on a quantized tensor: use "
                                  "nn.quantized.QFunctional (add, mul, add_scalar, ...) or "
                                  "dequantize() it first")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arithmetic
    __truediv__ = __rtruediv__ = __matmul__ = __neg__ = _no_arithmetic

    def numpy(self):
        raise TypeError(f"numpy() of a quantized tensor ({self._dtype!r}): use int_repr() "
                        "or dequantize() first")


# ----------------------------------------------------------------------------- factories

def quantize_per_tensor(input, scale, zero_point, dtype) -> QTensor:
    """``input`` (float32) quantized with one scale and zero point, rounding as PyTorch:
    ``clamp(rint(x * f32(1 / scale) + zero_point))``, half to even (``kernels.quantize``)."""
    what = "quantize_per_tensor"
    qdtype = as_qdtype(dtype, what)
    x = _float_input(input, what)
    scale = check_scale(scale, what)
    zero_point = check_zero_point(zero_point, qdtype, what)
    ints = _run(kernels.quantize, x._data, np.array([_inv_scale(scale)], "float32"),
                np.array([zero_point], "float32"), out_shape=x.shape, qdtype=str(qdtype))
    return QTensor(ints, qdtype, scale, zero_point)


def quantize_per_channel(input, scales, zero_points, axis, dtype) -> QTensor:
    """``input`` (float32) quantized with one scale and zero point per index of ``axis``."""
    what = "quantize_per_channel"
    qdtype = as_qdtype(dtype, what)
    x = _float_input(input, what)
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < x.ndim:
        raise RuntimeError(f"{what}: Channel axis out of range in per channel affine "
                           f"quantization. Got: {axis} Expected: [0, {x.ndim})")
    scales = np.asarray(scales._data if isinstance(scales, Tensor) else scales, "float64")
    zps = zero_points._data if isinstance(zero_points, Tensor) else np.asarray(zero_points)
    channels = x.shape[axis]
    for name, values in (("scales", scales), ("zero_points", zps)):
        if values.shape != (channels,):
            raise RuntimeError(f"{what}: length of {name} must equal to channel, expected "
                               f"{channels} got, {values.size}")
    if zps.dtype.kind not in "iu":
        raise TypeError(f"{what}: argument 'zero_points' must hold integers, got "
                        f"{zps.dtype}")
    for c in range(channels):
        check_scale(float(scales[c]), f"{what} (channel {c})")
        check_zero_point(int(zps[c]), qdtype, what)
    zps = zps.astype("int64")
    inv = np.float32(1.0) / scales.astype("float32")
    ints = _run(kernels.quantize, x._data, inv, zps.astype("float32"), out_shape=x.shape,
                qdtype=str(qdtype), axis=int(axis))
    return QTensor(ints, qdtype, scales=scales.copy(), zero_points=zps, axis=int(axis))


# ----------------------------------------------------------------------------- nn.cat

def cat(tensors, dim=0):
    """``nn.cat``: quantized tensors are joined with the first one's parameters (the others
    requantized, as ``torch.cat`` does); other tensors go to ``nn.functions.cat``."""
    if not isinstance(tensors, (list, tuple)) or \
            not any(isinstance(t, QTensor) for t in tensors):
        return _float_cat(tensors, dim)     # its checks and messages as they are
    from .functional import cat as quantized_cat
    first = tensors[0]
    if not isinstance(first, QTensor) or first.qscheme() is not per_tensor_affine:
        raise RuntimeError("cat: quantized tensors must all be quantized per tensor")
    return quantized_cat(tensors, first.q_scale(), first.q_zero_point(), dim)


def _float_cat(tensors, dim):
    from ..functions.shape import cat as float_cat
    return float_cat(tensors, dim)


concat = cat

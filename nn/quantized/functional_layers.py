"""The layer operators of ``nn.quantized.functional`` (PyTorch's
``torch.ao.nn.quantized.functional``): ``linear``, ``conv2d``, ``relu``, ``relu6``,
``hardtanh``, ``max_pool2d``, ``adaptive_avg_pool2d``, ``batch_norm``; each a te kernel on the
integers (``nn.ops.quantized`` / ``nn.ops.quantized_misc``). The products take quint8
activations and qint8 weights (per tensor or per output channel), as PyTorch's x86 engine."""
from __future__ import annotations

import math
import numbers

import numpy as np

from nn.ops import quantized_misc as misc

from ..functions import base
from ..tensor import Tensor
from .dtypes import quint8
from .qgemm import PackedWeight, check_input, check_mode
from .qtensor import QTensor, check_scale, check_zero_point

__all__ = ["linear", "conv2d", "relu", "relu6", "hardtanh", "max_pool2d",
           "adaptive_avg_pool2d", "batch_norm"]


def _pair(v, what):
    if isinstance(v, numbers.Integral):
        return (int(v), int(v))
    v = tuple(int(e) for e in v)
    if len(v) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {v}")
    return v


def linear(input, weight, bias=None, scale=None, zero_point=None, mode="float", relu=False):
    """``input @ weight^T + bias`` quantized to ``(scale, zero_point)`` (quint8); the
    weight is packed at each call (``nn.quantized.Linear`` packs it once)."""
    what = "quantized::linear"
    check_mode(mode, what)
    x = check_input(input, what)
    scale = x.q_scale() if scale is None else check_scale(scale, what)
    zero_point = x.q_zero_point() if zero_point is None else \
        check_zero_point(zero_point, quint8, what)
    return linear_packed(x, PackedWeight(weight, bias), scale, zero_point, relu, mode)


def linear_packed(x, packed, scale, zero_point, relu=False, mode="float"):
    """``linear`` with weights already packed (a ``PackedWeight``)."""
    what = "quantized::linear"
    x = check_input(x, what)
    scale = check_scale(scale, what)
    zero_point = check_zero_point(zero_point, quint8, what)
    if x.ndim < 1 or x.shape[-1] != packed.k:
        k = x.shape[-1] if x.ndim else 0
        raise RuntimeError(f"{what}: The number of rows in the packB should be equal to K: "
                           f"{k} (mat1 and mat2 shapes cannot be multiplied: "
                           f"{math.prod(x.shape[:-1])}x{k} and {packed.k}x"
                           f"{packed.out_channels})")
    lead = x.shape[:-1]
    flat = x.reshape(-1, packed.k) if x.ndim != 2 else x
    ints = packed.run(flat, scale, zero_point, relu, mode)
    return QTensor(Tensor(ints.reshape(lead + (packed.out_channels,))), quint8, scale,
                   zero_point)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=quint8, mode="float",
           relu=False):
    """2-d convolution (NCHW) of quint8 ``input`` with qint8 ``weight`` (OC, C / groups,
    KH, KW), quantized to ``(scale, zero_point)``."""
    what = "quantized::conv2d"
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if dtype != quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    check_mode(mode, what)
    scale = check_scale(scale, what)
    zero_point = check_zero_point(zero_point, quint8, what)
    packed = PackedWeight(weight, bias, groups)
    return conv2d_packed(input, packed, weight.shape[2:], stride, padding, dilation, scale,
                         zero_point, relu, mode)


def conv2d_packed(input, packed, kernel, stride, padding, dilation, scale, zero_point,
                  relu=False, mode="float"):
    """``conv2d`` with weights already packed (a ``PackedWeight``)."""
    what = "quantized::conv2d"
    x = check_input(input, what)
    scale = check_scale(scale, what)
    zero_point = check_zero_point(zero_point, quint8, what)
    if x.ndim != 4:
        raise ValueError(f"Input shape must be `(N, C, H, W)`!, got {tuple(x.shape)}")
    kernel, stride = _pair(kernel, "kernel_size"), _pair(stride, "stride")
    padding, dilation = _pair(padding, "padding"), _pair(dilation, "dilation")
    n, c, h, w = x.shape
    groups = packed.groups
    cin = packed.k // (kernel[0] * kernel[1]) * groups
    if c != cin:
        raise RuntimeError(f"Given groups={groups}, weight of size "
                           f"[{packed.out_channels}, {cin // groups}, {kernel[0]}, "
                           f"{kernel[1]}], expected input{list(x.shape)} to have {cin} "
                           f"channels, but got {c} channels instead")
    oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    if oh < 1 or ow < 1:
        raise RuntimeError(f"{what}: the input {tuple(x.shape)} is smaller than the kernel "
                           f"{kernel} (dilation {dilation}, padding {padding})")
    ints = packed.run(x, scale, zero_point, relu, mode, conv=(tuple(kernel), stride, padding,
                                                              dilation))
    return QTensor(Tensor(ints.reshape(n, packed.out_channels, oh, ow)), quint8, scale,
                   zero_point)


def _same(x, ints, shape=None):
    return QTensor(Tensor(ints.reshape(shape or x.shape)), x.dtype, x.q_scale(),
                   x.q_zero_point())


def _per_tensor_input(x, what):
    if not isinstance(x, QTensor) or x.qscheme().name != "per_tensor_affine":
        raise TypeError(f"{what}: argument 'input' must be a per-tensor quantized tensor, got "
                        f"{type(x).__name__}")
    return x


def _clamp(x, lo, hi):
    p = np.array([lo, hi], "float64")
    return _same(x, base._kernel(misc.qclamp, x._int._data, p, out_shape=x.shape)._data)


def relu(input, inplace=False):
    """``max(q, zero_point)``: ReLU on the integers, the parameters kept."""
    x = _per_tensor_input(input, "relu")
    return _clamp(x, x.q_zero_point(), x.dtype.qmax)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to ``[min_val, max_val]``, the bounds quantized with the input's parameters."""
    x = _per_tensor_input(input, "hardtanh")
    s, z, info = x.q_scale(), x.q_zero_point(), x.dtype

    def q(v):
        return int(min(max(z + round(v / s), info.qmin), info.qmax))
    return _clamp(x, q(min_val), q(max_val))


def relu6(input, inplace=False):
    """``min(max(q, zp), zp + rint(6 / scale))`` (PyTorch's quantized relu6)."""
    return hardtanh(_per_tensor_input(input, "relu6"), 0.0, 6.0)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The largest integer of each window; the parameters kept."""
    what = "quantized max_pool2d"
    if return_indices:
        raise NotImplementedError("return_indices=True is not supported for quantized "
                                  "max_pool2d")
    x = _per_tensor_input(input, what)
    squeeze = x.ndim == 3
    if squeeze:
        x = x.reshape(1, *x.shape)
    if x.ndim != 4:
        raise ValueError(f"{what}: expected a 3-d or 4-d input, got {x.ndim}-d")
    k = _pair(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] else _pair(stride, "stride")
    p, d = _pair(padding, "padding"), _pair(dilation, "dilation")
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise RuntimeError(f"{what}: pad should be at most half of effective kernel size, "
                           f"but got pad={p}, kernel_size={k}")
    out = []
    for dim in (0, 1):
        size = x.shape[2 + dim]
        span = size + 2 * p[dim] - d[dim] * (k[dim] - 1) - 1
        o = (-(-span // s[dim]) if ceil_mode else span // s[dim]) + 1
        if ceil_mode and (o - 1) * s[dim] >= size + p[dim]:
            o -= 1
        if o < 1:
            raise RuntimeError(f"{what}: output size is too small for input {x.shape}")
        out.append(o)
    ints = base._kernel(misc.qmax_pool2d, x._int._data, out_shape=x.shape[:2] + tuple(out),
                        schedule=misc.schedule_qpool, kernel=k, stride=s, padding=p,
                        dilation=d, out_size=tuple(out))._data
    y = _same(x, ints, x.shape[:2] + tuple(out))
    return y.reshape(*y.shape[1:]) if squeeze else y


def adaptive_avg_pool2d(input, output_size):
    """The mean of each adaptive window, ``rint(sum / count)`` on the integers; the
    parameters kept (PyTorch's quantized adaptive_avg_pool2d)."""
    x = _per_tensor_input(input, "adaptive_avg_pool2d")
    squeeze = x.ndim == 3
    if squeeze:
        x = x.reshape(1, *x.shape)
    if isinstance(output_size, numbers.Integral):
        output_size = (output_size, output_size)
    size = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size))
    ints = base._kernel(misc.qadaptive_avg_pool2d, x._int._data,
                        out_shape=x.shape[:2] + size, schedule=misc.schedule_qpool,
                        out_size=size)._data
    y = _same(x, ints, x.shape[:2] + size)
    return y.reshape(*y.shape[1:]) if squeeze else y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, eps=1e-5,
               output_scale=1.0, output_zero_point=0, relu=False):
    """Quantized batch norm (PyTorch's ``quantized::batch_norm``): per channel
    ``rint(alpha * (q - zp) + beta) + zp_out`` with PyTorch's ``alpha`` and ``beta``."""
    what = "quantized::batch_norm"
    x = _per_tensor_input(input, what)
    if x.ndim < 2:
        raise RuntimeError(f"{what}: expected an input with a channel axis, got {x.ndim}-d")
    c = x.shape[1]
    scale = check_scale(output_scale, what)
    zp = check_zero_point(output_zero_point, x.dtype, what)

    def arr(t, default):
        if t is None:
            return np.full(c, default, "float32")
        a = (t._data if isinstance(t, Tensor) else np.asarray(t)).astype("float32")
        if a.shape != (c,):
            raise RuntimeError(f"{what}: Expect weight size to match C ({c}), got "
                               f"{tuple(a.shape)}")
        return a
    mean, var = arr(running_mean, 0.0), arr(running_var, 1.0)
    w, b = arr(weight, 1.0), arr(bias, 0.0)
    inv_sigma = (1.0 / np.sqrt(var + np.float32(eps))).astype("float32")
    alpha = ((inv_sigma * w).astype("float64") * (x.q_scale() / scale)).astype("float32")
    beta = ((b - mean * inv_sigma * w).astype("float64") / scale).astype("float32")
    ab = np.stack([alpha, beta])
    p = np.array([x.q_zero_point(), zp], "float64")
    ints = base._kernel(misc.qbatch_norm, x._int._data, ab, p, out_shape=x.shape,
                        qdtype=str(x.dtype), relu=bool(relu))._data
    return QTensor(Tensor(ints.reshape(x.shape)), x.dtype, scale, zp)

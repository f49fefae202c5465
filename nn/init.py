"""nn.init: PyTorch's parameter initializers, with its names, signatures, gains and errors.

Each initializer fills its tensor in place and returns it. Values are drawn from nn's numpy
generator (``nn.manual_seed`` seeds it) unless a ``numpy.random.Generator`` is passed as
``generator``, and written straight into the tensor's storage, outside the autograd graph (as
PyTorch runs its initializers under ``no_grad``), so a Parameter that requires grad can be
initialized. Initialization is not a forward or backward computation, so numpy does the work.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .device import is_gpu
from .tensor import Tensor, _rng

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table; ``param`` is leaky_relu's
    negative slope, 0.01 by default)."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight: (in, out) features times the receptive field size."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower() if isinstance(mode, str) else mode
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


# ----------------------------------------------------------------------------- writing

def _check(tensor, name):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{name}: expected a Tensor, got {type(tensor).__name__}")


def _write(tensor, values):
    """Copy ``values`` (a number or numpy array) into the storage of ``tensor``, on the CPU or
    the GPU; returns ``tensor``. ``load_state_dict`` copies with it too."""
    data = tensor._data
    if is_gpu(data):
        # a fresh C-order array: a broadcast view has 0 strides on its size-1 axes, which
        # numba's simulator takes for broadcast axes and drops
        data.copy_to_device(np.array(np.broadcast_to(values, data.shape), dtype=data.dtype,
                                     order="C"))
    else:
        np.copyto(data, values, casting="unsafe")
    tensor._bump_version()
    return tensor


def _random(tensor, name):
    _check(tensor, name)
    if not tensor.is_floating_point():
        raise TypeError(f"nn.init.{name}: expected a floating point tensor, got "
                        f"{tensor.dtype}")


# ----------------------------------------------------------------------------- initializers

def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill ``tensor`` from U(a, b)."""
    _random(tensor, "uniform_")
    return _write(tensor, _rng(generator).uniform(a, b, tensor.shape))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill ``tensor`` from N(mean, std^2)."""
    _random(tensor, "normal_")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _write(tensor, _rng(generator).normal(mean, std, tensor.shape))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill ``tensor`` from N(mean, std^2) truncated to [a, b] (redrawing values outside)."""
    _random(tensor, "trunc_normal_")
    if a >= b:
        raise ValueError(f"trunc_normal_: a must be below b, got a={a} and b={b}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    rng = _rng(generator)
    values = rng.normal(mean, std, tensor.numel())
    outside = (values < a) | (values > b)
    for _ in range(100):                # 100 rounds leave none outside for any sane [a, b]
        if not outside.any():
            break
        values[outside] = rng.normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    return _write(tensor, np.clip(values, a, b).reshape(tensor.shape))


def constant_(tensor, val):
    """Fill ``tensor`` with ``val``."""
    _check(tensor, "constant_")
    return _write(tensor, val)


def ones_(tensor):
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1)


def zeros_(tensor):
    """Fill ``tensor`` with zeros."""
    return constant_(tensor, 0)


def eye_(tensor):
    """Fill the 2-d ``tensor`` with the identity matrix (ones on the diagonal)."""
    _check(tensor, "eye_")
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """Fill the 3-, 4- or 5-d convolution weight ``tensor`` with the Dirac delta: a
    convolution that keeps its input channels (in each of ``groups`` groups)."""
    _check(tensor, "dirac_")
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_channels, in_channels, *spatial = tensor.shape
    if out_channels % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = out_channels // groups
    values = np.zeros(tensor.shape)
    centre = tuple(n // 2 for n in spatial)
    for g in range(groups):
        for d in range(min(per_group, in_channels)):
            values[(g * per_group + d, d) + centre] = 1
    return _write(tensor, values)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot's U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot's N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def _empty_noop(tensor):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He's U(-bound, bound), bound = gain * sqrt(3 / fan) (``a``: leaky_relu's slope)."""
    _check(tensor, "kaiming_uniform_")
    if _empty_noop(tensor):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He's N(0, std^2), std = gain / sqrt(fan)."""
    _check(tensor, "kaiming_normal_")
    if _empty_noop(tensor):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill ``tensor`` (2-d or more, trailing dimensions flattened) with a (semi-)orthogonal
    matrix times ``gain``: the Q of the QR decomposition of a normal matrix, signs fixed by
    R's diagonal so that the distribution is uniform."""
    _random(tensor, "orthogonal_")
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, gain * q.reshape(tensor.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill the 2-d ``tensor`` from N(0, std^2) and zero a ``sparsity`` fraction of the rows
    of every column (chosen at random per column)."""
    _random(tensor, "sparse_")
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    rng = _rng(generator)
    values = rng.normal(0.0, std, (rows, cols))
    for col in range(cols):
        values[rng.permutation(rows)[:zeros], col] = 0
    return _write(tensor, values)

"""Observers, as PyTorch's ``torch.ao.quantization.observer``: modules that record statistics
of the tensors passing through them (running min/max, moving averages, a histogram) and turn
them into quantization parameters with ``calculate_qparams()`` -> ``(scale, zero_point)``.

The statistics are numpy arithmetic in float32, step by step as PyTorch's tensor operations
do it, so that the parameters are bit-identical to PyTorch's on the same data:

- affine: ``scale = max(f32(max(max_val, 0) - min(min_val, 0)) / f32(qmax - qmin), eps)``,
  ``zero_point = clamp(qmin - rint(min_neg / scale), qmin, qmax)``;
- symmetric: ``scale = max(max(-min_neg, max_pos) / f32((qmax - qmin) / 2), eps)``,
  ``zero_point = 0`` (128 for quint8, or the range's midpoint for a custom quint8 range).

The histogram observer's search is in ``histogram.py``.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..dtypes import float16, float32
from ..modules.module import Module
from ..quantized.dtypes import (as_qdtype, per_channel_affine, per_channel_symmetric,
                                per_tensor_affine, per_tensor_symmetric, qint8, qint32,
                                quint8)
from ..tensor import Tensor

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "PlaceholderObserver", "NoopObserver",
           "FixedQParamsObserver", "RecordingObserver", "default_debug_observer",
           "default_fixed_qparams_range_neg1to1_observer",
           "default_fixed_qparams_range_0to1_observer", "ReuseInputObserver",
           "default_reuse_input_observer", "weight_observer_range_neg_127_to_127",
           "per_channel_weight_observer_range_neg_127_to_127",
           "default_symmetric_fixed_qparams_observer", "default_affine_fixed_qparams_observer",
           "default_observer", "default_weight_observer", "default_per_channel_weight_observer",
           "default_placeholder_observer", "calculate_qmin_qmax", "get_observer_state_dict",
           "load_observer_state_dict"]

F32_EPS = float(np.finfo(np.float32).eps)
_F32 = np.float32


class _PartialWrapper:
    """A constructor with bound keyword arguments (PyTorch's ``with_args`` result):
    calling it makes a new instance; ``with_args`` binds more."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        for name, make in self.callable_args.items():
            if name not in keywords:
                keywords = {**keywords, name: make()}
        return self.p(*args, **keywords)

    def __repr__(self):
        return repr(self.p) + repr(self.callable_args)

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self)).with_callable_args(**kwargs)


def _host(x, what) -> np.ndarray:
    """The values of ``x`` (an nn.Tensor) as a float32 numpy array."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: expected an nn.Tensor, got {type(x).__name__}")
    return np.asarray(x.detach().cpu().numpy(), dtype=np.float32)


def _np(t) -> np.ndarray:
    """A buffer's values on the host (buffers may live on the GPU after ``model.cuda()``)."""
    return np.asarray(t.detach().cpu().numpy())


def _f32(value) -> Tensor:
    return Tensor(np.asarray(value, dtype=np.float32))


def calculate_qmin_qmax(quant_min, quant_max, has_customized_qrange, dtype, reduce_range):
    """PyTorch's ``calculate_qmin_qmax``: the range of the quantized values."""
    if has_customized_qrange:
        if reduce_range:
            return quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype == qint8:
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype == quint8:
        return (0, 127) if reduce_range else (0, 255)
    return -2 ** 31, 2 ** 31 - 1


class ObserverBase(Module):
    """The base of observers: ``forward`` records statistics and returns its input;
    ``calculate_qparams`` gives the quantization parameters."""

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


_SCHEMES = (per_tensor_affine, per_tensor_symmetric, per_channel_affine, per_channel_symmetric)


class UniformQuantizationObserverBase(ObserverBase):
    """What observers of uniform quantization share: dtype, qscheme, the quantized range
    (``quant_min`` / ``quant_max``, halved by ``reduce_range``), ``eps``, and the formulas of
    the parameters from a min and a max."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=F32_EPS,
                 is_dynamic=False, **kwargs):
        name = type(self).__name__
        dtype = as_qdtype(dtype, name)
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme not in _SCHEMES:
            raise AssertionError("Default Observer only works for per_tensor_affine, "
                                 "per_tensor_symmetric, per_channel_affine and "
                                 f"per_channel_symmetric quantization scheme, got {qscheme!r}")
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers. reduce_range will be deprecated in a future release "
                          "of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", _f32([eps]))
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise AssertionError("Used-specified quantization range must include 0.")
            if quant_min >= quant_max:
                raise AssertionError("qmin must be strictly less than qmax for "
                                     "user-specified quantization range.")
            width = quant_max - quant_min + 1
            limit = 2 ** 32 if dtype == qint32 else 256
            if not 0 < width <= limit:
                raise AssertionError("quantization range should be positive and not exceed "
                                     f"the maximum bit range (={limit}).")
        self.quant_min, self.quant_max = calculate_qmin_qmax(
            quant_min, quant_max, self.has_customized_qrange, dtype, reduce_range)

    def _symmetric(self):
        return self.qscheme in (per_tensor_symmetric, per_channel_symmetric)

    def _calculate_qparams(self, min_val: np.ndarray, max_val: np.ndarray):
        """``(scale, zero_point)`` as nn tensors of shape ``(1,)`` (per tensor) or ``(C,)``."""
        min_val = np.asarray(min_val, np.float32)
        max_val = np.asarray(max_val, np.float32)
        if not _check_min_max_valid(min_val, max_val):
            return _f32([1.0]), Tensor(np.array([0], np.int64))
        qmin, qmax = self.quant_min, self.quant_max
        min_neg = np.minimum(min_val, _F32(0))
        max_pos = np.maximum(max_val, _F32(0))
        eps = _np(self.eps)[0]
        if self._symmetric():
            max_pos = np.maximum(-min_neg, max_pos)
            scale = np.maximum(max_pos / _F32((qmax - qmin) / 2), eps)
            zp = 0
            if self.dtype == quint8:
                zp = (qmin + qmax) // 2 if self.has_customized_qrange else 128
            zero_point = np.full(scale.shape, zp, np.int64)
        else:
            scale = np.maximum((max_pos - min_neg) / _F32(qmax - qmin), eps)
            zero_point = qmin - np.rint(min_neg / scale).astype(np.int32)
            zero_point = np.clip(zero_point, qmin, qmax).astype(np.int32)
        scale = np.asarray(scale, np.float32).reshape(-1)
        zero_point = np.asarray(zero_point).reshape(-1)
        return Tensor(scale), Tensor(zero_point)

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


def _check_min_max_valid(min_val, max_val) -> bool:
    if min_val.size == 0 or max_val.size == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning default "
                      "values.", stacklevel=3)
        return False
    if min_val.ndim == 0:
        if min_val == np.inf and max_val == -np.inf:
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default values.", stacklevel=3)
            return False
    if np.any(min_val > max_val):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


def _is_per_tensor(qscheme):
    return qscheme in (per_tensor_affine, per_tensor_symmetric)


def _is_per_channel(qscheme):
    return qscheme in (per_channel_affine, per_channel_symmetric)


class MinMaxObserver(UniformQuantizationObserverBase):
    """The running min and max of the observed tensors (per tensor)."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=F32_EPS,
                 is_dynamic=False, **kwargs):
        if not _is_per_tensor(qscheme):
            raise NotImplementedError(f"{type(self).__name__}'s qscheme only support "
                                      "nn.per_tensor_symmetric and nn.per_tensor_affine, "
                                      f"got {qscheme!r}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)
        self.register_buffer("min_val", _f32(np.inf))
        self.register_buffer("max_val", _f32(-np.inf))
        if qscheme is per_tensor_symmetric and reduce_range and self.dtype == quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def forward(self, x_orig):
        x = _host(x_orig, type(self).__name__)
        if x.size == 0:
            return x_orig
        self._update(x.min(), x.max())
        return x_orig

    def _update(self, lo, hi):
        self.min_val = _f32(min(lo, _np(self.min_val)))
        self.max_val = _f32(max(hi, _np(self.max_val)))

    def calculate_qparams(self):
        return self._calculate_qparams(_np(self.min_val), _np(self.max_val))

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val, self.max_val = _f32(np.inf), _f32(-np.inf)


class MovingAverageMinMaxObserver(MinMaxObserver):
    """A moving average of the min and max: ``m <- m + c * (m_cur - m)`` (the first tensor
    sets them)."""

    def __init__(self, averaging_constant=0.01, dtype=quint8, qscheme=per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, eps=F32_EPS,
                 is_dynamic=False, **kwargs):
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError("MovingAverageMinMaxObserver doesn't support dynamic "
                                      "quantization for averaging constant of "
                                      f"{averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _update(self, lo, hi):
        old_lo, old_hi = _np(self.min_val), _np(self.max_val)
        if old_lo == np.inf and old_hi == -np.inf:
            self.min_val, self.max_val = _f32(lo), _f32(hi)
            return
        c = _F32(self.averaging_constant)
        self.min_val = _f32(old_lo + c * (_F32(lo) - old_lo))
        self.max_val = _f32(old_hi + c * (_F32(hi) - old_hi))


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """The running min and max of each index of axis ``ch_axis``."""

    def __init__(self, ch_axis=0, dtype=quint8, qscheme=per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=F32_EPS, is_dynamic=False, **kwargs):
        if not _is_per_channel(qscheme):
            raise NotImplementedError(f"{type(self).__name__}'s qscheme only support "
                                      "nn.per_channel_symmetric and nn.per_channel_affine, "
                                      f"got {qscheme!r}")
        if is_dynamic:
            raise NotImplementedError(f"{type(self).__name__} doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", _f32(np.zeros(0)))
        self.register_buffer("max_val", _f32(np.zeros(0)))
        if qscheme is per_channel_symmetric and reduce_range and self.dtype == quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def forward(self, x_orig):
        x = _host(x_orig, type(self).__name__)
        if x.size == 0:
            return x_orig
        if not -x.ndim <= self.ch_axis < x.ndim:
            raise IndexError(f"{type(self).__name__}: ch_axis {self.ch_axis} is out of range "
                             f"for an input of {x.ndim} dimensions")
        y = np.moveaxis(x, self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        self._update(y.min(axis=1), y.max(axis=1))
        return x_orig

    def _update(self, lo, hi):
        old_lo, old_hi = _np(self.min_val), _np(self.max_val)
        if old_lo.size == 0 or old_hi.size == 0:
            self.min_val, self.max_val = _f32(lo), _f32(hi)
        else:
            self.min_val, self.max_val = _f32(np.minimum(lo, old_lo)), _f32(np.maximum(hi, old_hi))

    def calculate_qparams(self):
        return self._calculate_qparams(_np(self.min_val), _np(self.max_val))

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val, self.max_val = _f32(np.zeros(0)), _f32(np.zeros(0))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the buffers take the saved shape (one entry per channel)
        for name in ("min_val", "max_val"):
            if prefix + name in state_dict:
                setattr(self, name, _f32(np.zeros(state_dict[prefix + name].shape)))
        return super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """The moving average of each channel's min and max."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=quint8,
                 qscheme=per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=F32_EPS, is_dynamic=False, **kwargs):
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _update(self, lo, hi):
        old_lo, old_hi = _np(self.min_val), _np(self.max_val)
        if old_lo.size == 0 or old_hi.size == 0:
            self.min_val, self.max_val = _f32(lo), _f32(hi)
            return
        c = _F32(self.averaging_constant)
        self.min_val = _f32(old_lo + c * (lo.astype(np.float32) - old_lo))
        self.max_val = _f32(old_hi + c * (hi.astype(np.float32) - old_hi))


class PlaceholderObserver(ObserverBase):
    """Records nothing: carries a dtype (float16, or a quantized dtype for dynamic
    quantization) to ``from_float``."""

    def __init__(self, dtype=float32, custom_op_name="", compute_dtype=None, quant_min=None,
                 quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = per_tensor_affine if qscheme is None else qscheme
        self.quant_min, self.quant_max = quant_min, quant_max
        self.eps = F32_EPS if eps is None else eps
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype!r}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


class NoopObserver(ObserverBase):
    """Records nothing; carries ``dtype`` (float16 by default)."""

    def __init__(self, dtype=float16, custom_op_name=""):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for NoopObserver")


class FixedQParamsObserver(ObserverBase):
    """Fixed parameters (``scale``, ``zero_point`` buffers) for outputs of known range
    (sigmoid, tanh, softmax); records nothing."""

    def __init__(self, scale, zero_point, dtype=quint8, qscheme=per_tensor_affine,
                 quant_min=0, quant_max=255, is_dynamic=False, **kwargs):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=as_qdtype(dtype, "FixedQParamsObserver"), is_dynamic=False)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("scale", _f32([scale]))
        self.register_buffer("zero_point", Tensor(np.array([zero_point], np.int32)))
        self.qscheme = qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


class RecordingObserver(ObserverBase):
    """Keeps a copy of every tensor it sees (``get_tensor_value()``), for debugging."""

    def __init__(self, dtype=quint8):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for RecordingObserver")

    def get_tensor_value(self):
        return self.tensor_val


class ReuseInputObserver(ObserverBase):
    """Marks an output that reuses its input's observer (PyTorch's FX-mode marker); records
    nothing."""

    def __init__(self):
        super().__init__(quint8, is_dynamic=False)

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for ReuseInputObserver")


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric)
default_debug_observer = RecordingObserver
default_reuse_input_observer = ReuseInputObserver
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=qint8, qscheme=per_tensor_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=quint8, quant_min=0, quant_max=255)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer


def get_observer_state_dict(mod):
    """The observer entries (``...activation_post_process...``) of ``mod.state_dict()``, to
    save a calibration."""
    import collections
    return collections.OrderedDict((k, v) for k, v in mod.state_dict().items()
                                   if "activation_post_process" in k)


def load_observer_state_dict(mod, obs_dict):
    """Load a calibration saved by ``get_observer_state_dict`` into a prepared model with the
    same observers; raises naming the observer keys that are missing or unexpected."""
    result = mod.load_state_dict(obs_dict, strict=False)
    missing = [k for k in result.missing_keys if "activation_post_process" in k]
    if missing:
        raise Exception(f"Missing keys for observer {missing} in state_dict")
    if result.unexpected_keys:
        raise Exception(f"Unexpected keys for observer {list(result.unexpected_keys)} in "
                        "state_dict")

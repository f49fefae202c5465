"""Fake quantization, as PyTorch's ``torch.ao.quantization.fake_quantize``: the forward rounds
``x`` to the quantized grid and back, ``(clamp(zp + rint(x * f32(1 / scale)), qmin, qmax)
- zp) * scale``, and the backward is the straight-through estimator, ``g`` where
``qmin <= zp + rint(x / scale) <= qmax`` and 0 elsewhere. Both are te kernels.

``FakeQuantize`` observes (when ``observer_enabled``) and fake-quantizes (when
``fake_quant_enabled``) what passes through it; quantization-aware training puts one after
each activation and one on each weight.
"""
from __future__ import annotations

import numpy as np

import te

from ..device import move as _move
from ..device import of as _device_of
from ..functions.base import Op, _kernel
from ..modules.module import Module
from ..quantized.dtypes import (as_qdtype, per_channel_symmetric, per_tensor_affine,
                                per_tensor_symmetric, qint8, quint8)
from ..tensor import Tensor
from .observer import (FixedQParamsObserver, _np, MovingAverageMinMaxObserver,
                       MovingAveragePerChannelMinMaxObserver, _is_per_channel, _is_per_tensor,
                       _with_args, default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer)

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine",
           "FakeQuantizeBase", "FakeQuantize", "FusedMovingAvgObsFakeQuantize",
           "FixedQParamsFakeQuantize", "default_fixed_qparams_range_0to1_fake_quant",
           "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_symmetric_fixed_qparams_fake_quant", "default_affine_fixed_qparams_fake_quant",
           "fused_wt_fake_quant_range_neg_127_to_127",
           "fused_per_channel_wt_fake_quant_range_neg_127_to_127", "default_histogram_fake_quant",
           "default_fake_quant", "default_weight_fake_quant",
           "default_per_channel_weight_fake_quant", "default_fused_act_fake_quant",
           "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
           "disable_fake_quant", "enable_fake_quant", "disable_observer", "enable_observer"]


# ----------------------------------------------------------------------------- te kernels

def _grid_int(x, inv_scale, zero_point, k):
    """``int64(zp + rint(x * inv_scale))`` (float32, as PyTorch; bounded so the cast is
    defined)."""
    v = te.round(x * inv_scale[k]) + zero_point[k]
    bound = te.const(2.0 ** 40, "float32")
    return te.min(te.max(v, -bound), bound).astype("int64")


def fake_quantize_kernel(x, inv_scale, scale, zero_point, qmin, qmax, axis=-1):
    """``(clamp(q, qmin, qmax) - zp) * scale`` with ``q`` of ``_grid_int``; the product in
    float64, rounded once to float32 (PyTorch's ``fmin``/``fmax`` work in double)."""
    def body(*i):
        k = 0 if axis < 0 else i[axis]
        q = _grid_int(x[i], inv_scale, zero_point, k)
        q = te.min(te.max(q, te.const(qmin, "int64")), te.const(qmax, "int64"))
        zp = zero_point[k].astype("int64")
        return ((q - zp).astype("float64") * scale[k].astype("float64")).astype("float32")
    return te.compute(x.shape, body, name="fake_quantize", tag="elemwise")


def fake_quantize_grad_kernel(g, x, inv_scale, zero_point, qmin, qmax, axis=-1):
    """The straight-through gradient: ``g`` where the grid value is inside
    ``[qmin, qmax]``, 0 elsewhere."""
    def body(*i):
        k = 0 if axis < 0 else i[axis]
        q = _grid_int(x[i], inv_scale, zero_point, k)
        inside = te.all(q >= te.const(qmin, "int64"), q <= te.const(qmax, "int64"))
        return te.select(inside, g[i], te.const(0.0, g.dtype))
    return te.compute(x.shape, body, name="fake_quantize_grad", tag="elemwise")


class FakeQuantizeAffine(Op):
    """Fake quantization with the straight-through gradient (PyTorch's node is
    ``FakeQuantizePerTensorAffineCachemaskBackward0``)."""

    @staticmethod
    def forward(ctx, x, scale, zero_point, qmin, qmax, axis):
        where = _device_of(x._data)         # the parameters go where the input is
        inv = _move(np.float32(1.0) / scale, where)
        zp = _move(zero_point.astype(np.float32), where)
        scale = _move(scale, where)
        ctx.save_for_backward(x)
        ctx.params = (inv, zp, qmin, qmax, axis)
        return _kernel(fake_quantize_kernel, x._data, inv, scale, zp, out_shape=x.shape,
                       qmin=qmin, qmax=qmax, axis=axis)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        inv, zp, qmin, qmax, axis = ctx.params
        grad = _kernel(fake_quantize_grad_kernel, g._data, x._data, inv, zp,
                       out_shape=x.shape, qmin=qmin, qmax=qmax, axis=axis)
        return grad, None, None, None, None, None


def _values(v, dtype):
    """A number, sequence or nn.Tensor as a flat numpy array of ``dtype``."""
    if isinstance(v, Tensor):
        v = v.detach().cpu().numpy()
    return np.asarray(v, dtype=dtype).reshape(-1)


def _check_range(quant_min, quant_max, what):
    if quant_min > quant_max:
        raise RuntimeError(f"{what}: `quant_min` should be less than or equal to "
                           f"`quant_max`, got quant_min={quant_min}, quant_max={quant_max}")


def _check_input(x, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: argument 'input' must be an nn.Tensor, got "
                        f"{type(x).__name__}")
    if x.dtype != "float32":
        raise RuntimeError(f"{what}: the input must be float32, got {x.dtype}")


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """``torch.fake_quantize_per_tensor_affine``: ``scale`` / ``zero_point`` a number or a
    one-element tensor."""
    what = "fake_quantize_per_tensor_affine"
    _check_input(input, what)
    _check_range(quant_min, quant_max, what)
    scale = _values(scale, np.float32)
    zero_point = _values(zero_point, np.int64)
    if scale.size != 1 or zero_point.size != 1:
        raise RuntimeError(f"{what}: scale and zero_point must hold one value each, got "
                           f"{scale.size} and {zero_point.size}")
    if not quant_min <= zero_point[0] <= quant_max:
        raise RuntimeError(f"{what}: `zero_point` must be between `quant_min` and "
                           f"`quant_max`, got {zero_point[0]}")
    return FakeQuantizeAffine.apply(input, scale, zero_point, int(quant_min), int(quant_max),
                                    -1)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """``torch.fake_quantize_per_channel_affine``: one scale and zero point per index of
    ``axis``."""
    what = "fake_quantize_per_channel_affine"
    _check_input(input, what)
    _check_range(quant_min, quant_max, what)
    axis = int(axis) + (input.ndim if axis < 0 else 0)
    if not 0 <= axis < input.ndim:
        raise RuntimeError(f"{what}: `axis` must be between 0 and number of dimensions of "
                           f"input, got {axis}")
    scale = _values(scale, np.float32)
    zero_point = _values(zero_point, np.int64)
    channels = input.shape[axis]
    if scale.size != channels or zero_point.size != channels:
        raise RuntimeError(f"{what}: dimensions of scale and zero-point are not consistent "
                           f"with input tensor (axis {axis} has {channels} channels, got "
                           f"{scale.size} scales and {zero_point.size} zero points)")
    if np.any(zero_point < quant_min) or np.any(zero_point > quant_max):
        raise RuntimeError(f"{what}: `zero_point` must be between `quant_min` and "
                           "`quant_max`.")
    return FakeQuantizeAffine.apply(input, scale, zero_point, int(quant_min), int(quant_max),
                                    axis)


# ----------------------------------------------------------------------------- modules

def _switch(flag, enabled):
    """A new switch buffer (1 or 0) of ``flag``'s dtype, on the host."""
    return Tensor(np.array([1 if enabled else 0], dtype=_np(flag).dtype))


class FakeQuantizeBase(Module):
    """The base of fake-quantize modules: the ``fake_quant_enabled`` / ``observer_enabled``
    switches (uint8 buffers, as PyTorch's)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", Tensor(np.array([1], np.uint8)))
        self.register_buffer("observer_enabled", Tensor(np.array([1], np.uint8)))

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled = _switch(self.fake_quant_enabled, enabled)

    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled = _switch(self.observer_enabled, enabled)

    def disable_observer(self):
        self.enable_observer(False)

    @classmethod
    def with_args(cls, **kwargs):
        return _with_args(cls, **kwargs)


class FakeQuantize(FakeQuantizeBase):
    """Observes with ``activation_post_process`` and fake-quantizes with its parameters,
    kept in the ``scale`` / ``zero_point`` buffers."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", quint8)
            if hasattr(observer, "p"):
                dtype = getattr(observer.p, "keywords", {}).get("dtype", dtype)
            dtype = as_qdtype(dtype, type(self).__name__)
            if dtype.qmin > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > dtype.qmax:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        self.register_buffer("scale", Tensor(np.array([1.0], np.float32)))
        self.register_buffer("zero_point", Tensor(np.array([0], np.int32)))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if not (_is_per_channel(self.qscheme) or _is_per_tensor(self.qscheme)):
            raise AssertionError("Only per channel and per tensor quantization are supported "
                                 f"in fake quantize got qscheme: {self.qscheme}")
        self.is_per_channel = _is_per_channel(self.qscheme)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if _np(self.observer_enabled)[0] == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.calculate_qparams()
            self.scale = Tensor(_np(scale).astype(np.float32))
            self.zero_point = Tensor(_np(zero_point).astype(np.int32))
        if _np(self.fake_quant_enabled)[0] == 1:
            if self.is_per_channel:
                X = fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                     self.ch_axis, self.quant_min,
                                                     self.quant_max)
            else:
                X = fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                    self.quant_min, self.quant_max)
        return X

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, quant_min={self.quant_min}, quant_max="
                f"{self.quant_max}, dtype={self.dtype!r}, qscheme={self.qscheme}, ch_axis="
                f"{self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the buffers take the saved shape (one entry per channel)
        for name, dtype in (("scale", np.float32), ("zero_point", np.int32)):
            if prefix + name in state_dict:
                setattr(self, name, Tensor(np.zeros(state_dict[prefix + name].shape, dtype)))
        return super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """PyTorch's fused observer + fake-quantize module: the same moving-average observation
    and fake quantization as ``FakeQuantize`` with a moving-average observer (int64
    switches, as PyTorch's)."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                 **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", Tensor(np.array([1], np.int64)))
        self.register_buffer("observer_enabled", Tensor(np.array([1], np.int64)))
        self.is_symmetric_quant = self.qscheme in (per_tensor_symmetric, per_channel_symmetric)

    def forward(self, X):
        """As ``torch.fused_moving_avg_obs_fake_quant``: the observer's moving average, then
        the buffers' parameters from fbgemm's ``ChooseQuantizationParams`` (not the
        observer's ``calculate_qparams``: PyTorch's fused kernel computes them so)."""
        if _np(self.observer_enabled)[0] == 1:
            self.activation_post_process(X.detach())
            lo = _np(self.activation_post_process.min_val).reshape(-1)
            hi = _np(self.activation_post_process.max_val).reshape(-1)
            pairs = [choose_qparams_fbgemm(a, b, self.quant_min, self.quant_max,
                                           self.is_symmetric_quant) for a, b in zip(lo, hi)]
            self.scale = Tensor(np.array([p[0] for p in pairs], np.float32))
            self.zero_point = Tensor(np.array([p[1] for p in pairs], np.int32))
        if _np(self.fake_quant_enabled)[0] == 1:
            if self.is_per_channel:
                return fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                        self.ch_axis, self.quant_min,
                                                        self.quant_max)
            return fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                   self.quant_min, self.quant_max)
        return X


SMALL_SCALE_THRESHOLD = np.float32(6.1e-5)


def choose_qparams_fbgemm(min_val, max_val, qmin, qmax, preserve_sparsity=False):
    """fbgemm's ``ChooseQuantizationParams`` (PyTorch's fused observer kernels): the range
    widened to hold 0 (made symmetric with ``preserve_sparsity``), ``scale = (max - min) /
    (qmax - qmin)`` in double rounded to float32 (0.1 when it vanishes, at least 6.1e-5),
    the zero point from whichever end loses less, rounded half to even and clamped.
    Returns ``(f32 scale, int zero_point)``."""
    f32 = np.float32
    lo, hi = f32(min_val), f32(max_val)
    if lo > hi:
        raise RuntimeError("In ChooseQuantizationParams, min should be less than or equal "
                           "to max")
    sparse = bool(lo < 0 and hi > 0 and preserve_sparsity)
    if sparse:
        sym_min, sym_max = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        max_scale = float(max(abs(lo / f32(sym_min)), abs(hi / f32(sym_max))))
        lo, hi = f32(max_scale * sym_min), f32(max_scale * sym_max)
    lo, hi = min(lo, f32(0)), max(hi, f32(0))
    scale = float(f32((float(hi) - float(lo)) / (qmax - qmin)))    # a float, as fbgemm's
    if scale == 0 or np.isinf(f32(1) / f32(scale)):
        scale = 0.1
    if scale < float(SMALL_SCALE_THRESHOLD):
        original = f32(scale)
        scale = float(SMALL_SCALE_THRESHOLD)
        if lo == 0:
            hi = f32(SMALL_SCALE_THRESHOLD * f32(qmax - qmin))
        elif hi == 0:
            lo = f32(-SMALL_SCALE_THRESHOLD * f32(qmax - qmin))
        else:
            amplifier = f32(SMALL_SCALE_THRESHOLD / original)
            lo, hi = f32(lo * amplifier), f32(hi * amplifier)
    from_min, from_max = qmin - float(lo) / scale, qmax - float(hi) / scale
    error_min = abs(qmin) - abs(float(lo) / scale)
    error_max = abs(qmax) - abs(float(hi) / scale)
    initial = from_min if error_min < error_max else from_max
    if sparse:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return f32(scale), zero_point


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with the fixed parameters of a ``FixedQParamsObserver`` (for
    sigmoid, tanh, softmax outputs in QAT)."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{type(self).__name__}'s observer must be a "
                                 "FixedQParamsObserver")
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point

    def calculate_qparams(self):
        return self.scale, self.zero_point


def _is_fake_quant(module):
    return isinstance(module, FakeQuantizeBase)


def disable_fake_quant(mod):
    """For ``model.apply``: turn fake quantization off in fake-quantize modules."""
    if _is_fake_quant(mod):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    if _is_fake_quant(mod):
        mod.enable_fake_quant()


def disable_observer(mod):
    """For ``model.apply``: freeze the observers of fake-quantize modules."""
    if _is_fake_quant(mod):
        mod.disable_observer()


def enable_observer(mod):
    if _is_fake_quant(mod):
        mod.enable_observer()


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=quint8,
    qscheme=per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric, reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
    dtype=qint8, qscheme=per_channel_symmetric, eps=2 ** -12)


def _histogram_fake_quant():
    from .histogram import HistogramObserver
    return FakeQuantize.with_args(observer=HistogramObserver, quant_min=0, quant_max=255,
                                  dtype=quint8, qscheme=per_tensor_affine, reduce_range=True)


default_histogram_fake_quant = _histogram_fake_quant()

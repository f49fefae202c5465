"""What the quantized modules share: PyTorch's conversion conventions (``from_float``: the
float, fused or QAT module with ``qconfig`` and a calibrated ``activation_post_process``) and
the ``scale`` / ``zero_point`` entries of their state dicts."""
from __future__ import annotations

import numpy as np

from ...modules.module import Module
from ...tensor import Tensor
from ..dtypes import per_channel_affine, per_channel_symmetric, qint8
from ..qtensor import QTensor, check_scale, check_zero_point, quantize_per_channel, \
    quantize_per_tensor


def _number(v):
    if isinstance(v, Tensor):
        v = v._data
    return np.asarray(v).reshape(-1)


def output_qparams(mod, what):
    """``(scale, zero_point)`` of ``mod.activation_post_process`` (a calibrated observer)."""
    obs = getattr(mod, "activation_post_process", None)
    if obs is None or not hasattr(obs, "calculate_qparams"):
        raise RuntimeError(f"{what}.from_float: the input float module must have an observer "
                           "'activation_post_process' (call nn.quantization.prepare and "
                           "calibrate before convert)")
    scale, zp = obs.calculate_qparams()
    return float(_number(scale)[0]), int(_number(zp)[0])


def quantize_weight(weight, observer):
    """``weight`` (float nn.Tensor) quantized with ``observer``'s parameters (the observer has
    seen it): per channel along axis 0 for per-channel schemes, else per tensor."""
    scale, zp = observer.calculate_qparams()
    dtype = getattr(observer, "dtype", qint8)
    scheme = getattr(observer, "qscheme", None)
    w = weight.detach()
    if scheme in (per_channel_affine, per_channel_symmetric):
        axis = int(getattr(observer, "ch_axis", 0))
        return quantize_per_channel(w, Tensor(_number(scale).astype("float64")),
                                    Tensor(_number(zp).astype("int64")), axis, dtype)
    if _number(scale).size != 1:
        raise RuntimeError(f"quantizing a weight: the observer's scheme {scheme!r} is per "
                           f"tensor but it gave {_number(scale).size} scales (nn.quantized "
                           "takes per_tensor_* or per_channel_affine / per_channel_symmetric "
                           "weights; PyTorch's float_qparams scheme is not supported)")
    return quantize_per_tensor(w, float(_number(scale)[0]), int(_number(zp)[0]), dtype)


def float_weight_qparams(mod, what):
    """The quantized weight of a float module ``mod`` (QAT: its ``weight_fake_quant``; else
    ``mod.qconfig.weight()`` applied to the weight, as PyTorch)."""
    fake = getattr(mod, "weight_fake_quant", None)
    if fake is not None:
        fake(mod.weight)
        return quantize_weight(mod.weight, fake)
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise RuntimeError(f"{what}.from_float: the input float module must have 'qconfig' "
                           "defined")
    observer = qconfig.weight()
    observer(mod.weight)
    return quantize_weight(mod.weight, observer)


def inner(mod, kind, what):
    """The ``kind`` (conv / linear) layer of ``mod``: ``mod`` itself or a fused module's
    ``mod[0]``, else an error naming ``nnq.<what>.from_float``; given ``mod``'s qconfig when
    it has neither a qconfig nor a weight fake quantizer."""
    layer = mod
    if not isinstance(mod, kind):
        children = list(mod.children()) if isinstance(mod, Module) else []
        if children and isinstance(children[0], kind):
            layer = children[0]
    if not isinstance(layer, kind):
        raise AssertionError(f"nnq.{what}.from_float only works for {kind.__name__}, got "
                             f"{type(mod).__name__}")
    if getattr(layer, "qconfig", None) is None and \
            getattr(layer, "weight_fake_quant", None) is None:
        layer.qconfig = getattr(mod, "qconfig", None)
    return layer


class QuantizedModule(Module):
    """A module with output parameters ``scale`` / ``zero_point`` saved in its state dict
    under PyTorch's keys (0-d tensors; the scale in float64, so that it reloads exactly:
    PyTorch's is float32)."""

    def _set_qparams(self, scale, zero_point, what, dtype=None):
        from ..dtypes import quint8
        self.scale = check_scale(scale, what)
        self.zero_point = check_zero_point(zero_point, dtype or quint8, what)

    def _extra_state(self):
        """The (key, value) pairs of the state dict besides scale and zero_point."""
        return []

    def _load_extra(self, state, prefix):
        """Load what ``_extra_state`` saves from ``state`` (keys without ``prefix``)."""

    def _extra_keys(self):
        return [k for k, _ in self._extra_state()]

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        destination = super().state_dict(destination, prefix, keep_vars)
        for key, value in self._extra_state():
            destination[prefix + key] = value
        destination[prefix + "scale"] = Tensor(np.array(self.scale, "float64"))   # exact
        destination[prefix + "zero_point"] = Tensor(np.array(self.zero_point, "int64"))
        for key, value in self._extra_state_after():
            destination[prefix + key] = value
        return destination

    def _extra_state_after(self):
        return []

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        # parameters and buffers (BatchNorm2d's) as any module; then PyTorch's other keys
        Module._load_from_state_dict(self, state_dict, prefix, False, missing_keys, [],
                                     error_msgs, assign)
        keys = self._extra_keys() + [k for k, _ in self._extra_state_after()] + \
            ["scale", "zero_point"]
        local = set(self._parameters) | set(self._buffers)
        state = {}
        for key in keys:
            if prefix + key in state_dict:
                state[key] = state_dict[prefix + key]
            else:
                missing_keys.append(prefix + key)
        if strict:
            for key in state_dict:
                rest = key[len(prefix):]
                if key.startswith(prefix) and rest.split(".")[0] not in self._modules and \
                        rest not in keys and rest not in local:
                    unexpected_keys.append(key)
        if len(state) != len(keys):
            return
        self._load_extra(state, prefix)
        self.scale = float(_number(state["scale"])[0])
        self.zero_point = int(_number(state["zero_point"])[0])


def is_quantized(t):
    return isinstance(t, QTensor)

"""``fuse_modules`` / ``fuse_modules_qat``, as PyTorch's ``torch.ao.quantization``: merge
sequences of named submodules (conv + bn [+ relu], conv + relu, linear + relu, linear + bn,
bn + relu) into one module; the first name gets the fused module, the others ``Identity``.

For inference (``fuse_modules``, eval mode) BatchNorm is folded into the conv / linear weight
as PyTorch's ``fuse_conv_bn_weights``, in float32 step by step:
``w' = w * (gamma * rsqrt(var + eps))`` per output channel,
``b' = (b - mean) * rsqrt(var + eps) * gamma + beta`` (``rsqrt`` is ``1 / sqrt``).
``fuse_modules_qat`` keeps conv and bn apart (``nn.intrinsic.ConvBn2d``...) for
``prepare_qat``.
"""
from __future__ import annotations

import copy

import numpy as np

from ..intrinsic import modules as nni
from ..modules.activation import ReLU
from ..modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from ..modules.conv import Conv1d, Conv2d, Conv3d
from ..modules.linear import Identity, Linear
from ..modules.module import Parameter

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules", "fuse_conv_bn",
           "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "get_fuser_method"]


def _host(t):
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float32)


def _rsqrt(var, eps):
    """``torch.rsqrt(var + eps)`` on the CPU: ``1 / sqrt`` (two roundings, float32)."""
    return np.float32(1) / np.sqrt(var + np.float32(eps))


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The weight and bias of a conv followed by an eval-mode BatchNorm, as Parameters."""
    w = _host(conv_w)
    rm, rv = _host(bn_rm), _host(bn_rv)
    b = _host(conv_b) if conv_b is not None else np.zeros_like(rm)
    gamma = _host(bn_w) if bn_w is not None else np.ones_like(rm)
    beta = _host(bn_b) if bn_b is not None else np.zeros_like(rm)
    inv_std = _rsqrt(rv, bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (w.ndim - 2)
    fused_w = w * (gamma * inv_std).reshape(shape)
    fused_b = (b - rm) * inv_std * gamma + beta
    return (Parameter(fused_w.astype(np.float32), conv_w.requires_grad),
            Parameter(fused_b.astype(np.float32),
                      conv_b.requires_grad if conv_b is not None else conv_w.requires_grad))


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The weight and bias of a Linear followed by an eval-mode BatchNorm1d."""
    w = _host(linear_w)
    rm, rv = _host(bn_rm), _host(bn_rv)
    b = _host(linear_b) if linear_b is not None else np.zeros_like(rm)
    bn_scale = _host(bn_w) * _rsqrt(rv, bn_eps)
    fused_w = w * bn_scale[:, None]
    fused_b = (b - rm) * bn_scale + _host(bn_b)
    return (Parameter(fused_w.astype(np.float32), linear_w.requires_grad),
            Parameter(fused_b.astype(np.float32),
                      linear_b.requires_grad if linear_b is not None else True))


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` with ``bn`` (eval mode) folded into its weight and bias."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` with ``bn`` (eval mode) folded in."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             f"bn.num_features == 1, got linear.out_features="
                             f"{linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def _check_qat_bn(layer, bn, what):
    if bn.num_features != getattr(layer, "out_channels", getattr(layer, "out_features", None)):
        raise AssertionError(f"Output channel of {what} must match num_features of "
                             f"{type(bn).__name__}")
    if not bn.affine:
        raise AssertionError(f"Only support fusing {type(bn).__name__} with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError(f"Only support fusing {type(bn).__name__} with "
                             "tracking_running_stats set to True")


_CONV_BN = {Conv1d: nni.ConvBn1d, Conv2d: nni.ConvBn2d, Conv3d: nni.ConvBn3d}
_CONV_BN_RELU = {Conv1d: nni.ConvBnReLU1d, Conv2d: nni.ConvBnReLU2d, Conv3d: nni.ConvBnReLU3d}
_CONV_RELU = {Conv1d: nni.ConvReLU1d, Conv2d: nni.ConvReLU2d, Conv3d: nni.ConvReLU3d}


def fuse_conv_bn(is_qat, conv, bn):
    """Conv + BN: ``nni.ConvBn2d`` for QAT, else the conv with the BN folded in."""
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        _check_qat_bn(conv, bn, type(conv).__name__)
        return _CONV_BN[type(conv)](conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """Conv + BN + ReLU: ``nni.ConvBnReLU2d`` for QAT, else ``nni.ConvReLU2d`` of the folded
    conv."""
    if not conv.training == bn.training == relu.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        _check_qat_bn(conv, bn, type(conv).__name__)
        return _CONV_BN_RELU[type(conv)](conv, bn, relu)
    return _CONV_RELU[type(conv)](fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    """Linear + BatchNorm1d: ``nni.LinearBn1d`` for QAT, else the folded Linear."""
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if is_qat:
        _check_qat_bn(linear, bn, "Linear")
        return nni.LinearBn1d(linear, bn)
    return fuse_linear_bn_eval(linear, bn)


def _pair(fused_cls):
    def fuser(is_qat, first, second):
        return fused_cls(first, second)
    return fuser


DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (Conv1d, BatchNorm1d): fuse_conv_bn,
    (Conv1d, BatchNorm1d, ReLU): fuse_conv_bn_relu,
    (Conv2d, BatchNorm2d): fuse_conv_bn,
    (Conv2d, BatchNorm2d, ReLU): fuse_conv_bn_relu,
    (Conv3d, BatchNorm3d): fuse_conv_bn,
    (Conv3d, BatchNorm3d, ReLU): fuse_conv_bn_relu,
    (Conv1d, ReLU): _pair(nni.ConvReLU1d),
    (Conv2d, ReLU): _pair(nni.ConvReLU2d),
    (Conv3d, ReLU): _pair(nni.ConvReLU3d),
    (Linear, BatchNorm1d): fuse_linear_bn,
    (Linear, ReLU): _pair(nni.LinearReLU),
    (BatchNorm2d, ReLU): _pair(nni.BNReLU2d),
    (BatchNorm3d, ReLU): _pair(nni.BNReLU3d),
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The fuser of a tuple of module types, or None."""
    mapping = {**DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    return mapping.get(tuple(op_list))


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """The fused module followed by Identity modules, one per module of ``mod_list``; the
    first module's forward pre-hooks and the last one's forward hooks move to the fused
    module."""
    types = tuple(type(m) for m in mod_list)
    fuser = get_fuser_method(types, additional_fuser_method_mapping)
    if fuser is None:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    fused = fuser(is_qat, *mod_list)
    for hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(hook)
    mod_list[0]._forward_pre_hooks.clear()
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    mod_list[-1]._forward_hooks.clear()
    rest = []
    for _ in mod_list[1:]:
        identity = Identity()
        identity.training = mod_list[0].training
        rest.append(identity)
    return [fused] + rest


def _get_module(model, key):
    mod = model
    for name in key.split("."):
        mod = getattr(mod, name)
    return mod


def _set_module(model, key, module):
    *path, last = key.split(".")
    parent = model
    for name in path:
        parent = getattr(parent, name)
    setattr(parent, last, module)


def _fuse(model, modules_to_fuse, is_qat, inplace, fuser_func, fuse_custom_config_dict):
    if not inplace:
        model = copy.deepcopy(model)
    extra = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    groups = [modules_to_fuse] if all(isinstance(m, str) for m in modules_to_fuse) \
        else modules_to_fuse
    for names in groups:
        mods = [_get_module(model, name) for name in names]
        for name, new in zip(names, fuser_func(mods, is_qat, extra)):
            _set_module(model, name, new)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse each list of submodule names of ``modules_to_fuse`` (or one list of names) for
    inference; returns the model (a copy unless ``inplace``)."""
    return _fuse(model, modules_to_fuse, False, inplace, fuser_func, fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """``fuse_modules`` for quantization-aware training: conv + bn stay trainable
    (``nni.ConvBn2d``...)."""
    return _fuse(model, modules_to_fuse, True, inplace, fuser_func, fuse_custom_config_dict)

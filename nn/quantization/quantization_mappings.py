"""Which module becomes which, as PyTorch's ``torch.ao.quantization.quantization_mappings``:
float -> quantized (``convert``), float -> QAT (``prepare_qat``), and the modules that get an
observer (``get_default_qconfig_propagation_list``).

One difference from PyTorch: ``nn.ReLU``, ``nn.MaxPool2d``, ``nn.AdaptiveAvgPool2d`` and
``nn.Dropout`` run on quantized tensors in PyTorch as they are; nn's float modules take
``nn.Tensor`` only, so ``convert`` swaps them for ``nn.quantized.ReLU`` / ``MaxPool2d`` /
``AdaptiveAvgPool2d`` (which keep the input's parameters) and ``Identity`` (a class without
``from_float`` is constructed without arguments). They get no observer, as in PyTorch.
"""
from __future__ import annotations

import copy

from .. import intrinsic as nni
from .. import qat as nnqat
from .. import quantized as nnq
from ..intrinsic import qat as nniqat
from ..modules import activation, batchnorm, container, conv, dropout, linear, pooling, sparse
from .fake_quantize import (default_fixed_qparams_range_0to1_fake_quant,
                            default_fixed_qparams_range_neg1to1_fake_quant)
from .stubs import DeQuantStub, QuantStub

__all__ = ["DEFAULT_STATIC_QUANT_MODULE_MAPPINGS", "DEFAULT_QAT_MODULE_MAPPINGS",
           "PASSTHROUGH_MODULE_MAPPINGS", "get_default_static_quant_module_mappings",
           "get_default_qat_module_mappings", "get_default_qconfig_propagation_list",
           "get_static_quant_module_class", "no_observer_set",
           "DEFAULT_MODULE_TO_ACT_POST_PROCESS"]


def _available(pairs):
    """The pairs whose quantized class exists in nn.quantized (by name)."""
    out = {}
    for float_cls, module, name in pairs:
        target = getattr(module, name, None)
        if target is not None:
            out[float_cls] = target
    return out


DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = {
    QuantStub: nnq.modules.Quantize,
    DeQuantStub: nnq.modules.DeQuantize,
    nnq.FloatFunctional: nnq.QFunctional,
    **_available([
        (batchnorm.BatchNorm2d, nnq, "BatchNorm2d"),
        (batchnorm.BatchNorm3d, nnq, "BatchNorm3d"),
        (conv.Conv1d, nnq, "Conv1d"),
        (conv.Conv2d, nnq, "Conv2d"),
        (conv.Conv3d, nnq, "Conv3d"),
        (sparse.Embedding, nnq, "Embedding"),
        (activation.ReLU6, nnq, "ReLU6"),
        (activation.Hardswish, nnq, "Hardswish"),
        (activation.LeakyReLU, nnq, "LeakyReLU"),
        (activation.ELU, nnq, "ELU"),
        (linear.Linear, nnq, "Linear"),
        (nni.ConvReLU1d, nnq, "ConvReLU1d"),
        (nni.ConvReLU2d, nnq, "ConvReLU2d"),
        (nni.ConvReLU3d, nnq, "ConvReLU3d"),
        (nni.LinearReLU, nnq, "LinearReLU"),
        (nni.BNReLU2d, nnq, "BNReLU2d"),
        (nniqat.ConvBn1d, nnq, "Conv1d"),
        (nniqat.ConvBn2d, nnq, "Conv2d"),
        (nniqat.ConvBn3d, nnq, "Conv3d"),
        (nniqat.ConvBnReLU1d, nnq, "ConvReLU1d"),
        (nniqat.ConvBnReLU2d, nnq, "ConvReLU2d"),
        (nniqat.ConvBnReLU3d, nnq, "ConvReLU3d"),
        (nniqat.ConvReLU2d, nnq, "ConvReLU2d"),
        (nniqat.ConvReLU3d, nnq, "ConvReLU3d"),
        (nniqat.LinearReLU, nnq, "LinearReLU"),
        (nnqat.Linear, nnq, "Linear"),
        (nnqat.Conv2d, nnq, "Conv2d"),
        (nnqat.Conv3d, nnq, "Conv3d"),
    ]),
}

# modules PyTorch runs on quantized tensors unchanged (no observer); nn swaps them
PASSTHROUGH_MODULE_MAPPINGS = {
    activation.ReLU: nnq.ReLU,
    pooling.MaxPool2d: nnq.MaxPool2d,
    pooling.AdaptiveAvgPool2d: nnq.AdaptiveAvgPool2d,
    dropout.Dropout: linear.Identity,
}

DEFAULT_QAT_MODULE_MAPPINGS = {
    conv.Conv2d: nnqat.Conv2d,
    conv.Conv3d: nnqat.Conv3d,
    linear.Linear: nnqat.Linear,
    nni.ConvBn1d: nniqat.ConvBn1d,
    nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBn3d: nniqat.ConvBn3d,
    nni.ConvBnReLU1d: nniqat.ConvBnReLU1d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvBnReLU3d: nniqat.ConvBnReLU3d,
    nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.ConvReLU3d: nniqat.ConvReLU3d,
    nni.LinearReLU: nniqat.LinearReLU,
}

_INCLUDE_QCONFIG_PROPAGATE_LIST = {container.Sequential}

# outputs of a known range: in training (QAT) they get fake quantization with fixed parameters
DEFAULT_MODULE_TO_ACT_POST_PROCESS = {
    activation.Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    activation.Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    activation.Softmax: default_fixed_qparams_range_0to1_fake_quant,
    activation.Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}


def _has_special_act_post_process(module):
    return module.training and type(module) in DEFAULT_MODULE_TO_ACT_POST_PROCESS


def _get_special_act_post_process(module):
    return DEFAULT_MODULE_TO_ACT_POST_PROCESS.get(type(module))


def get_default_static_quant_module_mappings():
    """float (fused, QAT) module class -> quantized class, for ``convert``; includes the
    pass-through swaps of ``PASSTHROUGH_MODULE_MAPPINGS``."""
    return {**copy.copy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS), **PASSTHROUGH_MODULE_MAPPINGS}


def get_default_qat_module_mappings():
    """float (fused) module class -> QAT class, for ``prepare_qat``."""
    return copy.copy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list():
    """The module classes that get an observer when they are leaves (PyTorch's: every
    class converted by the static or QAT mappings)."""
    return (set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | _INCLUDE_QCONFIG_PROPAGATE_LIST)


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None):
    """The quantized class of ``float_module_class``, or an error naming it."""
    mapping = {**get_default_static_quant_module_mappings(),
               **(additional_static_quant_mapping or {})}
    if float_module_class not in mapping:
        raise AssertionError(f"Floating point module class {float_module_class} does not "
                             "have a corresponding quantized module class")
    return copy.deepcopy(mapping[float_module_class])


def no_observer_set():
    return set()

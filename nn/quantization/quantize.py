"""The eager-mode flow, as PyTorch's ``torch.ao.quantization.quantize``:

- ``propagate_qconfig_``: each submodule gets ``.qconfig`` (its own, else its parent's);
- ``prepare``: every observed leaf (``get_default_qconfig_propagation_list``), fused module
  and ``FloatFunctional`` gets ``activation_post_process = qconfig.activation()``, called by
  a forward hook on the output (a pre-hook on the input for memoryless observers);
- ``prepare_qat``: float modules swapped for their QAT versions (fake-quantized weights),
  then ``prepare`` with fake-quantize modules as activation observers;
- ``convert``: each module whose class is in the mapping is replaced by
  ``mapping[type(mod)].from_float(mod)``; observers, hooks and qconfigs are removed.
"""
from __future__ import annotations

import copy
import inspect
import warnings

from ..intrinsic.modules import _FusedModule
from ..modules.container import Sequential
from ..modules.dropout import Dropout
from ..quantized.modules.functional_modules import FloatFunctional, QFunctional
from .fake_quantize import FakeQuantizeBase
from .observer import MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver, \
    ObserverBase
from .quantization_mappings import (_get_special_act_post_process,
                                    _has_special_act_post_process,
                                    get_default_qat_module_mappings,
                                    get_default_qconfig_propagation_list,
                                    get_default_static_quant_module_mappings)
from .stubs import DeQuantStub, QuantWrapper

__all__ = ["propagate_qconfig_", "add_quant_dequant", "prepare", "prepare_qat", "convert",
           "quantize", "quantize_qat", "swap_module", "is_activation_post_process",
           "default_eval_fn", "get_default_custom_config_dict"]


def _is_fused(module):
    """A fused module (``nn.intrinsic``) or a fused QAT module (``nn.intrinsic.qat``, which
    PyTorch also makes ``_FusedModule`` subclasses): observed as a whole, never entered."""
    return isinstance(module, _FusedModule) or getattr(type(module), "_is_fused_module", False)


def is_activation_post_process(module):
    """True for observers and fake-quantize modules."""
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


def _propagate(module, qconfig_dict, parent, prefix):
    qconfig = qconfig_dict.get(type(module), parent)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate(child, qconfig_dict, qconfig, f"{prefix}.{name}" if prefix else name)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Give every submodule a ``qconfig`` attribute: its own, else the entry of
    ``qconfig_dict`` for its name or class, else its parent's (None when there is none)."""
    _propagate(module, qconfig_dict or {}, None, "")


def _observer_forward_hook(self, input, output):
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    return self.activation_post_process(input[0])


def _activation_is_memoryless(qconfig):
    act = qconfig.activation()
    if isinstance(act, FakeQuantizeBase) and hasattr(act, "activation_post_process"):
        act = act.activation_post_process
    return (isinstance(act, (MovingAverageMinMaxObserver,
                             MovingAveragePerChannelMinMaxObserver))
            and act.averaging_constant == 1)


def _needs_observation(m):
    return getattr(m, "qconfig", None) is not None


def _insert_observer(m, special=None):
    if _needs_observation(m) and not isinstance(m, DeQuantStub):
        make = m.qconfig.activation if special is None else special
        m.add_module("activation_post_process", make())
        if _activation_is_memoryless(m.qconfig):
            m.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
        else:
            m.register_forward_hook(_observer_forward_hook, prepend=True)


def _add_observer_(module, propagation_list, non_leaf_module_list=None):
    for child in module.children():
        if type(child) is Dropout:
            continue
        if isinstance(child, (FloatFunctional, QFunctional)):
            if _needs_observation(child):
                child.activation_post_process = child.qconfig.activation()
        elif _is_fused(child):
            _insert_observer(child)
        elif non_leaf_module_list is not None and type(child) in non_leaf_module_list:
            _insert_observer(child)
        elif _has_special_act_post_process(child):
            _insert_observer(child, _get_special_act_post_process(child))
        else:
            _add_observer_(child, propagation_list, non_leaf_module_list)
    leaf = not module._modules
    if type(module) in propagation_list and not isinstance(module, Sequential) and (
            leaf or hasattr(module, "weight_fake_quant")):
        _insert_observer(module)


def add_quant_dequant(module):
    """Wrap each leaf that has a qconfig in a ``QuantWrapper``."""
    if not module._modules and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """Propagate the qconfigs and attach observers (a copy of ``model`` unless
    ``inplace``); calibrate by running the model, then ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    propagation_list = allow_list if allow_list is not None \
        else get_default_qconfig_propagation_list()
    propagate_qconfig_(model)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules", stacklevel=2)
    _add_observer_(model, propagation_list, observer_non_leaf_module_list)
    return model


def prepare_qat(model, mapping=None, inplace=False):
    """Swap modules for their QAT versions (``mapping``, default
    ``get_default_qat_module_mappings()``) and attach fake-quantize observers; the model
    must be in training mode."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    mapping = get_default_qat_module_mappings() if mapping is None else mapping
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def _remove_activation_post_process(module):
    if is_activation_post_process(getattr(module, "activation_post_process", None)):
        delattr(module, "activation_post_process")
    for hooks, hook in ((module._forward_pre_hooks, _observer_forward_pre_hook),
                        (module._forward_hooks, _observer_forward_hook)):
        for key in [k for k, fn in hooks.items() if fn is hook]:
            hooks.pop(key)


def _remove_qconfig(module):
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.qconfig
    _remove_activation_post_process(module)


def swap_module(mod, mapping, custom_module_class_mapping=None,
                use_precomputed_fake_quant=False):
    """``mapping[type(mod)].from_float(mod)`` when ``mod`` has a qconfig and its class is
    mapped (hooks other than the observer's carried over), else ``mod``."""
    if getattr(mod, "qconfig", None) is None or type(mod) not in mapping:
        return mod
    target = mapping[type(mod)]
    from_float = getattr(target, "from_float", None)
    if from_float is None:
        new_mod = target()
    elif "use_precomputed_fake_quant" in inspect.signature(from_float).parameters:
        new_mod = from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
    else:
        new_mod = from_float(mod)
    for hook in mod._forward_pre_hooks.values():
        if hook is not _observer_forward_pre_hook:
            new_mod.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new_mod.register_forward_hook(hook)
    return new_mod


def _convert(module, mapping, use_precomputed_fake_quant=False):
    reassign = {}
    for name, mod in module.named_children():
        if not _is_fused(mod):
            _convert(mod, mapping, use_precomputed_fake_quant)
        reassign[name] = swap_module(mod, mapping, None, use_precomputed_fake_quant)
    for name, new in reassign.items():
        module._modules[name] = new
    return module


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Swap the calibrated (or QAT-trained) modules for quantized ones, ``mapping`` default
    ``get_default_static_quant_module_mappings()``; a copy unless ``inplace``."""
    if is_reference:
        raise NotImplementedError("convert: reference quantized modules (is_reference=True) "
                                  "are not implemented")
    if not inplace:
        module = copy.deepcopy(module)
    mapping = get_default_static_quant_module_mappings() if mapping is None else mapping
    _convert(module, mapping, use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def default_eval_fn(model, calib_data):
    """Calibration by running ``model`` on the inputs of ``calib_data`` ((input, target)
    pairs)."""
    for data, _target in calib_data:
        model(data)


def get_default_custom_config_dict():
    """PyTorch's custom-module configuration: nn has no quantizable LSTM / attention yet, so
    there are no custom module classes."""
    return {"float_to_observed_custom_module_class": {},
            "observed_to_quantized_custom_module_class": {}}


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """Post-training static quantization in one call: ``prepare``, ``run_fn(model,
    *run_args)`` to calibrate, ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_qat(model, run_fn, run_args, inplace=False):
    """``prepare_qat``, ``run_fn(model, *run_args)`` (training), ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model

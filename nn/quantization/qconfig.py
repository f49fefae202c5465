"""``QConfig``, as PyTorch's: which observer (or fake-quantize) constructors a module's
activation and weight get, and the defaults of each backend (``x86`` / ``fbgemm``: histogram
activations with ``reduce_range``, per-channel symmetric qint8 weights; ``qnnpack``: full
range activations, per-tensor symmetric weights)."""
from __future__ import annotations

from collections import namedtuple

from ..modules.module import Module
from .fake_quantize import (FakeQuantize, FusedMovingAvgObsFakeQuantize,
                            default_fake_quant, default_fused_act_fake_quant,
                            default_fused_per_channel_wt_fake_quant,
                            default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
                            default_weight_fake_quant)
from .histogram import HistogramObserver
from .observer import (MovingAverageMinMaxObserver, _PartialWrapper, default_debug_observer,
                       default_observer, default_per_channel_weight_observer,
                       default_weight_observer)

__all__ = ["QConfig", "default_qconfig", "default_per_channel_qconfig", "default_qat_qconfig",
           "default_qat_qconfig_v2", "get_default_qconfig", "get_default_qat_qconfig",
           "BACKENDS", "qconfig_equals", "default_debug_qconfig"]

BACKENDS = ("fbgemm", "x86", "qnnpack", "onednn")


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Observer constructors (classes or ``with_args`` partials), not instances: each
    prepared module calls them to make its own observers."""
    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_debug_qconfig = QConfig(weight=default_weight_observer,
                                activation=default_debug_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                 weight=default_fused_wt_fake_quant)


def _check_backend(backend):
    if backend not in BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{list(BACKENDS)}")


def get_default_qconfig(backend="x86", version=0):
    """The post-training qconfig of ``backend``."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             "supported. Version number must be 0")
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=backend != "onednn"),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend="x86", version=1):
    """The quantization-aware-training qconfig of ``backend`` (``version=1``: the fused
    observer + fake-quantize modules, as PyTorch's default)."""
    _check_backend(backend)
    if version not in (0, 1):
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not "
                             "supported. Version number must be 0 or 1")
    fq = FakeQuantize if version == 0 else FusedMovingAvgObsFakeQuantize
    if backend == "qnnpack":
        weight = default_weight_fake_quant if version == 0 else default_fused_wt_fake_quant
        return QConfig(activation=fq.with_args(observer=MovingAverageMinMaxObserver,
                                               quant_min=0, quant_max=255,
                                               reduce_range=False), weight=weight)
    weight = (default_per_channel_weight_fake_quant if version == 0
              else default_fused_per_channel_wt_fake_quant)
    act = dict(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    if backend != "onednn":
        act["reduce_range"] = True
    return QConfig(activation=fq.with_args(**act), weight=weight)


def _ctr_equals(a, b):
    """Observer constructors compared as PyTorch's: ``with_args`` partials by their class,
    positional and keyword arguments (a nested ``observer=`` compared the same way)."""
    if not (isinstance(a, _PartialWrapper) and isinstance(b, _PartialWrapper)):
        return a == b
    ka, kb = dict(a.p.keywords), dict(b.p.keywords)
    same = True
    if "observer" in ka and "observer" in kb:
        same = _ctr_equals(ka.pop("observer"), kb.pop("observer"))
    return same and ka == kb and a.p.func == b.p.func and a.p.args == b.p.args


def qconfig_equals(q1, q2):
    """True when two qconfigs make the same observers (PyTorch's ``qconfig_equals``)."""
    if q1 is None or q2 is None:
        return q1 == q2
    try:
        return _ctr_equals(q1.activation, q2.activation) and _ctr_equals(q1.weight, q2.weight)
    except AttributeError:
        return q1 == q2

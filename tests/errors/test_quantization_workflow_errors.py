"""Misuses of the quantization flow (observers, fake quantization, qconfigs, fusion,
prepare / convert): each raises PyTorch's error (type and message) or a clear one naming
the argument."""
import warnings

import numpy as np
import pytest

import nn
from nn import quantization as tq


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _x(*shape):
    return nn.tensor(np.linspace(-1, 1, int(np.prod(shape)), dtype="float32").reshape(shape))


# ----------------------------------------------------------------------------- observers

def test_per_tensor_observer_rejects_per_channel_schemes():
    with pytest.raises(NotImplementedError, match="qscheme only support"):
        tq.MinMaxObserver(qscheme=nn.per_channel_affine)
    with pytest.raises(NotImplementedError, match="qscheme only support"):
        tq.HistogramObserver(qscheme=nn.per_channel_symmetric)
    with pytest.raises(NotImplementedError, match="qscheme only support"):
        tq.PerChannelMinMaxObserver(qscheme=nn.per_tensor_affine)


def test_custom_range_must_hold_zero_and_be_ordered():
    with pytest.raises(AssertionError, match="must include 0"):
        tq.MinMaxObserver(quant_min=1, quant_max=10)
    with pytest.raises(AssertionError, match="strictly less than qmax"):
        tq.MinMaxObserver(quant_min=0, quant_max=0)
    with pytest.raises(AssertionError, match="maximum bit range"):
        tq.MinMaxObserver(dtype=nn.qint8, quant_min=-200, quant_max=200)


def test_symmetric_quint8_cannot_reduce_range():
    with pytest.raises(NotImplementedError, match="Cannot reduce range for symmetric"):
        tq.MinMaxObserver(qscheme=nn.per_tensor_symmetric, reduce_range=True)


def test_observer_dtype_must_be_quantized():
    with pytest.raises(RuntimeError, match="argument 'dtype' must be a quantized dtype"):
        tq.MinMaxObserver(dtype=nn.float32)


def test_observer_input_must_be_a_tensor():
    with pytest.raises(TypeError, match="MinMaxObserver: expected an nn.Tensor, got list"):
        tq.MinMaxObserver()([1.0, 2.0])


def test_per_channel_axis_out_of_range():
    with pytest.raises(IndexError, match="ch_axis 3 is out of range for an input of 2"):
        tq.PerChannelMinMaxObserver(ch_axis=3)(_x(2, 3))


def test_placeholder_observers_have_no_qparams():
    with pytest.raises(Exception, match="calculate_qparams should not be called"):
        tq.PlaceholderObserver().calculate_qparams()
    with pytest.raises(Exception, match="calculate_qparams should not be called"):
        tq.NoopObserver().calculate_qparams()


# ----------------------------------------------------------------------------- fake quant

def test_fake_quantize_checks_its_arguments():
    x = _x(2, 3)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or equal to"):
        tq.fake_quantize_per_tensor_affine(x, 0.1, 0, 10, 5)
    with pytest.raises(RuntimeError, match="`zero_point` must be between `quant_min`"):
        tq.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255)
    with pytest.raises(RuntimeError, match="not consistent with input tensor"):
        tq.fake_quantize_per_channel_affine(x, nn.tensor([0.1, 0.2]), nn.tensor([0, 0]), 1,
                                            -128, 127)
    with pytest.raises(RuntimeError, match="`axis` must be between 0 and number of"):
        tq.fake_quantize_per_channel_affine(x, nn.tensor([0.1, 0.2]), nn.tensor([0, 0]), 2,
                                            -128, 127)
    with pytest.raises(TypeError, match="argument 'input' must be an nn.Tensor"):
        tq.fake_quantize_per_tensor_affine(np.zeros(3, np.float32), 0.1, 0, 0, 255)


def test_fake_quantize_range_outside_its_dtype():
    with pytest.raises(AssertionError, match="quant_min out of bound"):
        tq.FakeQuantize(quant_min=-1, quant_max=255)
    with pytest.raises(AssertionError, match="quant_max out of bound"):
        tq.FakeQuantize(dtype=nn.qint8, quant_min=-128, quant_max=200)


# ----------------------------------------------------------------------------- qconfig

def test_qconfig_takes_constructors_not_instances():
    with pytest.raises(ValueError, match="QConfig received observer instance"):
        tq.QConfig(activation=tq.MinMaxObserver(), weight=tq.default_weight_observer)


def test_unknown_backend():
    with pytest.raises(AssertionError, match="backend: arm not supported"):
        tq.get_default_qconfig("arm")
    with pytest.raises(AssertionError, match="backend: arm not supported"):
        tq.get_default_qat_qconfig("arm")


# ----------------------------------------------------------------------------- fusion

def _conv_bn(train=False):
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Sigmoid())
    return m.train(train)


def test_fusing_an_unknown_sequence():
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        tq.fuse_modules(_conv_bn(), ["2", "3"])


def test_fusing_modules_in_different_modes():
    m = _conv_bn()
    m[1].train()
    with pytest.raises(AssertionError, match="must be in the same mode"):
        tq.fuse_modules(m, ["0", "1"])


def test_eval_fusion_of_a_training_model():
    from nn.quantization.fuse_modules import fuse_conv_bn_eval
    m = _conv_bn(train=True)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fuse_conv_bn_eval(m[0], m[1])


def test_qat_fusion_needs_matching_channels():
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(3)).train()
    with pytest.raises(AssertionError, match="must match num_features of BatchNorm2d"):
        tq.fuse_modules_qat(m, ["0", "1"])


def test_fused_module_checks_its_parts():
    with pytest.raises(AssertionError, match=r"Incorrect types .* ConvReLU2d: expected "
                                              r"\(Conv2d, ReLU\), got \(Linear, ReLU\)"):
        nn.intrinsic.ConvReLU2d(nn.Linear(2, 2), nn.ReLU())


def test_missing_submodule_name():
    with pytest.raises(AttributeError, match="no attribute 'conv9'"):
        tq.fuse_modules(_conv_bn(), ["conv9", "1"])


# ----------------------------------------------------------------------------- prepare, convert

def test_prepare_qat_needs_training_mode():
    m = nn.Sequential(nn.Linear(3, 2)).eval()
    m.qconfig = tq.get_default_qat_qconfig()
    with pytest.raises(AssertionError, match="prepare_qat only works on models in training"):
        tq.prepare_qat(m)


def test_prepare_without_qconfig_warns():
    with pytest.warns(UserWarning, match="None of the submodule got qconfig applied"):
        tq.prepare(nn.Sequential(nn.Linear(3, 2)).eval())


def test_qat_modules_need_a_qconfig():
    with pytest.raises(AssertionError, match="qconfig must be provided for QAT module"):
        nn.qat.Linear(3, 2)
    with pytest.raises(AssertionError, match="Input float module must have a valid qconfig"):
        nn.qat.Linear.from_float(nn.Linear(3, 2))


def test_converted_model_on_float_input_without_quant_stub():
    m = nn.Sequential(nn.Linear(4, 3)).eval()
    m.qconfig = tq.default_qconfig
    tq.prepare(m, inplace=True)
    m(_x(2, 4))
    tq.convert(m, inplace=True)
    with pytest.raises(NotImplementedError, match="Could not run 'quantized::linear' with "
                                                  "arguments from the 'CPU' backend"):
        m(_x(2, 4))


def test_reference_conversion_is_not_available():
    with pytest.raises(NotImplementedError, match="is_reference=True"):
        tq.convert(nn.Sequential(nn.Linear(2, 2)), is_reference=True)

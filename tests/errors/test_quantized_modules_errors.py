"""Misuses of nn.quantized's modules and layer operators: PyTorch's errors where it has them
(float input to a converted layer, zero point outside the dtype, mismatched shapes), and a
RuntimeError naming the scale where PyTorch accepts a non-positive one."""
import numpy as np
import pytest

import nn


def _x(shape, scale=0.05, zp=3):
    return nn.quantize_per_tensor(nn.Tensor(np.random.default_rng(0).random(shape, "float32")),
                                  scale, zp, nn.quint8)


def _linear(k=8, n=4):
    m = nn.quantized.Linear(k, n)
    m.scale, m.zero_point = 0.1, 10
    return m


def test_float_input_to_converted_linear_and_conv():
    with pytest.raises(NotImplementedError, match="Could not run 'quantized::linear' with "
                       "arguments from the 'CPU' backend.*QuantStub"):
        _linear()(nn.Tensor(np.zeros((2, 8), "float32")))
    with pytest.raises(NotImplementedError, match="quantized::conv2d"):
        nn.quantized.Conv2d(3, 4, 3)(nn.Tensor(np.zeros((1, 3, 5, 5), "float32")))


def test_zero_point_outside_the_dtype():
    with pytest.raises(RuntimeError, match="zero_point 300 is above upper bound"):
        nn.quantized.Quantize(0.1, 300, nn.quint8)
    m = _linear()
    m.zero_point = -1
    with pytest.raises(RuntimeError, match="zero_point -1 is below lower bound"):
        m(_x((2, 8)))
    w = nn.quantize_per_tensor(nn.Tensor(np.zeros((4, 8), "float32")), 0.1, 0, nn.qint8)
    with pytest.raises(RuntimeError, match="zero_point 256 is above upper bound"):
        nn.quantized.functional.linear(_x((2, 8)), w, None, 0.1, 256)


@pytest.mark.parametrize("scale", [0.0, -0.5, float("nan")])
def test_non_positive_scale_is_named(scale):
    m = _linear()
    m.scale = scale
    with pytest.raises(RuntimeError, match="scale"):
        m(_x((2, 8)))
    with pytest.raises(RuntimeError, match="scale"):
        nn.quantized.Quantize(scale, 0, nn.quint8)
    c = nn.quantized.Conv2d(1, 1, 1)
    c.scale = scale
    with pytest.raises(RuntimeError, match="scale"):
        c(_x((1, 1, 2, 2)))


def test_shape_mismatches():
    with pytest.raises(RuntimeError, match="number of rows in the packB should be equal to "
                       "K: 7"):
        _linear()(_x((2, 7)))
    with pytest.raises(RuntimeError, match="expected input.*to have 3 channels, but got 2"):
        nn.quantized.Conv2d(3, 4, 3)(_x((1, 2, 5, 5)))
    with pytest.raises(RuntimeError, match="weight must have shape \\(4, 8\\)"):
        _linear().set_weight_bias(nn.quantize_per_tensor(
            nn.Tensor(np.zeros((4, 7), "float32")), 0.1, 0, nn.qint8))
    w = nn.quantize_per_tensor(nn.Tensor(np.zeros((4, 8), "float32")), 0.1, 0, nn.qint8)
    with pytest.raises(RuntimeError, match="bias should have shape \\(4,\\)"):
        _linear().set_weight_bias(w, nn.Tensor(np.zeros(3, "float32")))
    with pytest.raises(ValueError, match="Input shape must be `\\(N, C, H, W\\)`"):
        nn.quantized.Conv2d(3, 4, 3)(_x((3, 5, 5)))
    a, b = _x((2, 3)), _x((3, 2))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        nn.quantized.QFunctional().add(a, b)


def test_wrong_dtypes_and_arguments():
    with pytest.raises(RuntimeError, match="nn.qint8"):
        _linear().set_weight_bias(nn.quantize_per_tensor(
            nn.Tensor(np.zeros((4, 8), "float32")), 0.1, 0, nn.quint8))
    q8 = nn.quantize_per_tensor(nn.Tensor(np.zeros((2, 8), "float32")), 0.1, 0, nn.qint8)
    with pytest.raises(RuntimeError, match="quint8"):
        _linear()(q8)
    m = _linear()
    m.mode = "fixed"
    with pytest.raises(ValueError, match="'mode' must be 'float' or 'integer'"):
        m(_x((2, 8)))
    with pytest.raises(NotImplementedError, match="Only zero-padding"):
        nn.quantized.Conv2d(3, 4, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.quantized.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        nn.quantized.MaxPool2d(2, padding=2)(_x((1, 1, 4, 4)))
    with pytest.raises(IndexError, match="index out of range"):
        nn.quantized.Embedding(5, 3)(nn.Tensor(np.array([5])))
    with pytest.raises(RuntimeError, match="activation_post_process"):
        nn.quantized.Linear.from_float(nn.Linear(3, 2))

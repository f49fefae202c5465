"""Misuses of nn's quantized tensors and operators: each raises a clear error naming the
argument (PyTorch's message where PyTorch has one)."""
import numpy as np
import pytest

import nn
from nn import quantization as tq


def _x(*shape):
    return nn.tensor(np.linspace(-1, 1, int(np.prod(shape)), dtype="float32").reshape(shape))


def _q(shape=(6,), scale=0.05, zp=100, dtype=nn.quint8):
    return nn.quantize_per_tensor(_x(*shape), scale, zp, dtype)


@pytest.mark.parametrize("zp, dtype, word", [(300, nn.quint8, "above"), (-1, nn.quint8, "below"),
                                              (128, nn.qint8, "above"),
                                              (-129, nn.qint8, "below")])
def test_zero_point_outside_the_dtype(zp, dtype, word):
    with pytest.raises(RuntimeError, match=f"zero_point {zp} is {word} (upper|lower) bound"):
        nn.quantize_per_tensor(_x(3), 0.1, zp, dtype)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_non_positive_scale_names_the_scale(scale):
    with pytest.raises(RuntimeError, match=r"scale must be a finite number > 0, got scale="):
        nn.quantize_per_tensor(_x(3), scale, 0, nn.quint8)
    with pytest.raises(RuntimeError, match="scale"):
        tq.requantize(_q(), scale, 0)


def test_per_channel_bad_scale_and_zero_point():
    with pytest.raises(RuntimeError, match=r"channel 1.*scale=-0.2"):
        nn.quantize_per_channel(_x(3, 2), [0.1, -0.2, 0.3], [0, 0, 0], 0, nn.qint8)
    with pytest.raises(RuntimeError, match="zero_point 200 is above upper bound"):
        nn.quantize_per_channel(_x(3, 2), [0.1, 0.2, 0.3], [0, 0, 200], 0, nn.qint8)
    with pytest.raises(RuntimeError, match="length of scales must equal to channel"):
        nn.quantize_per_channel(_x(3, 2), [0.1, 0.2], [0, 0], 0, nn.qint8)
    with pytest.raises(RuntimeError, match="Channel axis out of range"):
        nn.quantize_per_channel(_x(3, 2), [0.1, 0.2, 0.3], [0, 0, 0], 2, nn.qint8)


@pytest.mark.parametrize("dtype", [nn.float32, nn.uint8, "qint4", "int8", None])
def test_wrong_dtype_names_the_argument(dtype):
    with pytest.raises(RuntimeError, match="argument 'dtype' must be a quantized dtype"):
        nn.quantize_per_tensor(_x(3), 0.1, 0, dtype)


def test_input_must_be_float32():
    with pytest.raises(RuntimeError, match="Quantize only works on float32 tensors, got "
                                           "float64"):
        nn.quantize_per_tensor(nn.tensor(np.zeros(3)), 0.1, 0, nn.quint8)
    with pytest.raises(TypeError, match="argument 'input' must be an nn.Tensor"):
        nn.quantize_per_tensor(np.zeros(3, "float32"), 0.1, 0, nn.quint8)


def test_zero_point_and_scale_types():
    with pytest.raises(TypeError, match="argument 'zero_point' must be an int, got float"):
        nn.quantize_per_tensor(_x(3), 0.1, 1.5, nn.quint8)
    with pytest.raises(TypeError, match="argument 'scale' must be a float, got str"):
        nn.quantize_per_tensor(_x(3), "a", 0, nn.quint8)


def test_add_of_different_shapes():
    f = nn.quantized.QFunctional()
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(6\) must match the size "
                                           r"of tensor b \(3\) at non-singleton dimension 0"):
        f.add(_q((6,)), _q((3,)))


def test_add_of_different_dtypes_and_float_input():
    f = nn.quantized.QFunctional()
    with pytest.raises(RuntimeError, match="Add operands should have same data type"):
        f.add(_q(), _q(dtype=nn.qint8, zp=0))
    with pytest.raises(TypeError, match="argument 'qb' must be a quantized tensor"):
        f.add(_q(), _x(6))
    f.zero_point = 300
    with pytest.raises(RuntimeError, match="zero_point 300 is above upper bound"):
        f.add(_q(), _q())


def test_bad_mode_and_per_channel_input():
    with pytest.raises(ValueError, match="argument 'mode' must be 'float' or 'integer'"):
        tq.requantize(_q(), 0.1, 0, mode="fixed")
    w = nn.quantize_per_channel(_x(2, 3), [0.1, 0.2], [0, 0], 0, nn.qint8)
    with pytest.raises(RuntimeError, match="must be quantized per tensor"):
        tq.requantize(w, 0.1, 0)
    with pytest.raises(RuntimeError, match="quantized per channel"):
        w.q_scale()
    with pytest.raises(RuntimeError, match="quantized per tensor"):
        _q().q_per_channel_scales()


def test_cat_of_mixed_dtypes_and_arithmetic():
    with pytest.raises(RuntimeError, match="All dtypes must be the same"):
        nn.cat([_q(), _q(dtype=nn.qint8, zp=0)])
    with pytest.raises(NotImplementedError, match="QFunctional"):
        _q() + _q()
    with pytest.raises(TypeError, match="use int_repr"):
        _q().numpy()

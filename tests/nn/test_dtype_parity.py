"""dtype parity with PyTorch (CPU): float16 accumulation in float32, bool and integer
operands with Python numbers (promotion, wrap-around), in-place casts back into integer
tensors, remainders by infinity, shifts, and the smaller Tensor protocols (format,
get_device, numpy's __array__)."""
import math

import numpy as np
import pytest
import torch

import nn
import nn.functional as F

INF = float("inf")


def both(fn):
    """``fn`` run on torch and on nn: (torch's result, nn's result)."""
    return fn(torch), fn(nn)


def same(fn):
    """``fn`` gives equal values and dtypes on torch and nn."""
    want, got = both(fn)
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    np.testing.assert_array_equal(np.asarray(got.detach().cpu().tolist()),
                                  np.asarray(want.detach().tolist()))


def _functional(m):
    return torch.nn.functional if m is torch else F


# ----------------------------------------------------------------------------- float16

@pytest.mark.parametrize("fn", [
    lambda m: m.full((100,), 1000., dtype=m.float16).mean(),
    lambda m: m.full((100,), 1000., dtype=m.float16).mean(0, keepdim=True),
    lambda m: m.tensor([300., 400.], dtype=m.float16).norm(),
    lambda m: m.full((300,), 0.1, dtype=m.float16).sum(),
    lambda m: m.full((2, 300), 0.1, dtype=m.float16).sum(1),
    lambda m: m.full((20,), 0.1, dtype=m.float16).cumsum(0),
    lambda m: m.full((100,), 1000., dtype=m.float16).var(),
    lambda m: (m.arange(100, dtype=m.float16) * 500).std(),
    lambda m: m.full((30,), 1.1, dtype=m.float16).prod(),       # torch: in float16
    lambda m: m.full((30,), 1.1, dtype=m.float16).cumprod(0),   # torch: in float32
    lambda m: m.full((1, 64), 0.1, dtype=m.float16) @ m.full((64, 1), 1.5, dtype=m.float16),
    lambda m: m.mm(m.full((2, 64), 0.1, dtype=m.float16), m.full((64, 3), 1.5, dtype=m.float16)),
    lambda m: m.bmm(m.full((2, 1, 64), 0.1, dtype=m.float16),
                    m.full((2, 64, 1), 1.5, dtype=m.float16)),
    lambda m: _functional(m).linear(m.full((3, 64), 0.1, dtype=m.float16),
                                    m.full((2, 64), 1.5, dtype=m.float16),
                                    m.full((2,), 0.25, dtype=m.float16)),
])
def test_float16_accumulates_in_float32(fn):
    same(fn)


def test_float16_matmul_gradients_stay_float16():
    """Values and dtypes of F.linear's output and input gradient in float16, as torch's."""
    def run(m):
        a = m.full((3, 64), 0.1, dtype=m.float16, requires_grad=True)
        out = _functional(m).linear(a, m.full((2, 64), 1.5, dtype=m.float16))
        out.sum().backward()
        return out, a.grad
    (want, want_grad), (got, got_grad) = both(run)
    same(lambda m: got if m is nn else want)
    same(lambda m: got_grad if m is nn else want_grad)
    assert got.dtype == nn.float16 and got_grad.dtype == nn.float16


def test_float16_sum_on_the_gpu_accumulates_in_float32():
    got = nn.full((300,), 0.1, dtype=nn.float16).cuda().sum()
    assert got.dtype == nn.float16 and got.cpu().item() == 30.0


@pytest.mark.parametrize("fn", [
    lambda m: _functional(m).layer_norm(m.tensor([[1., 3., 7.], [2., 5., -1.]],
                                                 dtype=m.float16), (3,)),
    lambda m: _functional(m).group_norm(
        m.tensor([[1., 3., 7., 2.], [2., 5., -1., 0.]], dtype=m.float16).reshape(2, 4, 1), 2),
])
def test_float16_normalizations(fn):
    same(fn)


def test_float16_batch_norm_train_and_eval():
    results = []
    for m in (torch, nn):
        bn = (torch.nn if m is torch else nn).BatchNorm1d(3).half()
        x = m.tensor([[1., 3., 7.], [2., 5., -1.]], dtype=m.float16)
        train = bn(x)
        stats = bn.running_mean.tolist(), bn.running_var.tolist(), str(bn.running_mean.dtype)[-7:]
        bn.eval()
        results.append((str(train.dtype)[-7:], train.tolist(), stats, bn(x).tolist()))
    assert results[1][0] == "float16" and results[1][1:] == results[0][1:]


# ----------------------------------------------------------------------------- bool, bitwise

@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([True, False]) & 6,
    lambda m: m.tensor([True, False]) | 1,
    lambda m: m.tensor([True, False]) ^ 6,
    lambda m: 6 & m.tensor([True, False]),
    lambda m: 1 | m.tensor([True, False]),
    lambda m: 6 ^ m.tensor([True, False]),
    lambda m: m.tensor([True, False]) & m.tensor([True, True]),
    lambda m: m.tensor([True, False]) ^ True,
    lambda m: 5 & m.tensor([6, 3]),
    lambda m: m.tensor([True, False]).clamp(0, 4),
])
def test_bool_with_numbers(fn):
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([3, -7, 5, 1]) << m.tensor([1, 1, 64, -1]),
    lambda m: m.tensor([3, -7, 5, 1]) >> m.tensor([1, 1, 64, -1]),
    lambda m: m.tensor([3, -7]) >> 70,
    lambda m: m.tensor([200], dtype=m.uint8) << 1,
    lambda m: m.tensor([200], dtype=m.uint8) >> 9,
    lambda m: m.tensor([1], dtype=m.int8) << 7,
    lambda m: 1 << m.tensor([3]),
    lambda m: 64 >> m.tensor([3]),
    lambda m: m.tensor([True]) << 1,
    lambda m: m.bitwise_left_shift(m.tensor([3], dtype=m.int16), 2),
])
def test_shifts(fn):
    same(fn)


def test_shift_on_the_gpu():
    assert (nn.tensor([3, -7]).cuda() >> 1).cpu().tolist() == [1, -4]


def test_inplace_shift_and_bitwise():
    t = nn.tensor([3, 5])
    t <<= 1
    t &= 6
    assert t.tolist() == [6, 2]


# ----------------------------------------------------------------------------- remainder by inf

@pytest.mark.parametrize("op", ["remainder", "fmod"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_remainder_by_infinity(op, dtype):
    a = [1., -1., 0., -0., 5.5, INF, math.nan, 3., 2.5]
    b = [INF, INF, -INF, INF, -2., INF, INF, 0., -INF]
    same(lambda m: getattr(m, op)(m.tensor(a, dtype=getattr(m, dtype)),
                                  m.tensor(b, dtype=getattr(m, dtype))))


def test_python_remainder_by_infinity():
    assert (nn.tensor([1., -1.]) % INF).tolist() == [1.0 % INF, -1.0 % INF]


def test_remainder_by_infinity_on_the_gpu():
    assert (nn.tensor([1., -1.]).cuda() % INF).cpu().tolist() == [1.0, INF]


# ----------------------------------------------------------------------------- out-of-range ints

@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1, 2], dtype=m.int8) + 300,
    lambda m: m.tensor([0, 2], dtype=m.uint8) + -1,
    lambda m: m.tensor([3], dtype=m.uint8) * -1,
    lambda m: m.tensor([0, 2, 255], dtype=m.uint8) < -1,
    lambda m: m.tensor([0, 2, 255], dtype=m.uint8) == -1,
    lambda m: m.tensor([1], dtype=m.int32) + 2 ** 40,
    lambda m: m.tensor([-1], dtype=m.int8) & 300,
    lambda m: m.tensor([1], dtype=m.int8) == 257,
])
def test_python_ints_out_of_range_wrap(fn):
    same(fn)


def test_clamp_bound_out_of_range_is_refused():
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without "
                                           "overflow"):
        nn.tensor([1, 2], dtype=nn.int8).clamp(0, 300)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1, 2], dtype=m.uint8).add_(m.tensor([300, 1])),
    lambda m: m.tensor([1, 2], dtype=m.uint8).add_(m.tensor([-3, 1], dtype=m.int8)),
    lambda m: m.tensor([1], dtype=m.int32).add_(m.tensor([2 ** 31])),
    lambda m: m.tensor([1.], dtype=m.float16).add_(m.tensor([1.], dtype=m.float64)),
])
def test_inplace_integer_results_wrap_into_the_tensor(fn):
    same(fn)


def test_inplace_integer_result_wraps_on_the_gpu():
    t = nn.tensor([1, 2], dtype=nn.uint8).cuda()
    t.add_(nn.tensor([300, 1]).cuda())
    assert t.cpu().tolist() == [45, 3]


# ----------------------------------------------------------------------------- protocols

def test_format_of_a_0d_tensor_is_its_value():
    assert f"{nn.tensor(2.5):.2f}" == f"{torch.tensor(2.5):.2f}" == "2.50"
    assert f"{nn.tensor(3):>3}" == "  3"
    assert f"{nn.tensor([1., 2.])}" == str(nn.tensor([1., 2.]))


def test_get_device():
    assert nn.tensor([1.]).get_device() == torch.tensor([1.]).get_device() == -1
    assert nn.tensor([1.]).cuda().get_device() == 0


def test_numpy_asarray_of_a_cpu_tensor():
    got = np.asarray(nn.tensor([1., 2.]))
    assert got.dtype == np.float32 and got.tolist() == [1., 2.]
    assert np.asarray(nn.tensor([1, 2]), dtype="float64").dtype == np.float64


def test_numpy_scalar_times_tensor_is_a_tensor():
    got = np.float32(2) * nn.tensor([1., 2.])
    assert isinstance(got, nn.Tensor)
    same(lambda m: np.float32(2) * m.tensor([1., 2.]))

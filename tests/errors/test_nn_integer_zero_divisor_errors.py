"""Integer division and remainder by a zero element of a divisor tensor raise PyTorch's
RuntimeError("ZeroDivisionError"), as a zero Python number already did; float division by
zero still gives inf / nan, as PyTorch's."""
import numpy as np
import pytest
import torch

import nn


@pytest.mark.parametrize("op", [
    lambda m: m.tensor([5, -5]) % m.tensor([0, 0]),
    lambda m: m.tensor([5, -5]) // m.tensor([2, 0]),
    lambda m: m.remainder(m.tensor([[5], [6]]), m.tensor([1, 0])),
    lambda m: m.fmod(m.tensor([5, -5], dtype=m.int32), m.tensor([0, 1], dtype=m.int32)),
    lambda m: m.div(m.tensor([5]), m.tensor([0]), rounding_mode="trunc"),
    lambda m: 5 % m.tensor([0, 1]),
    lambda m: 5 // m.tensor([0]),
    lambda m: m.tensor([5]) % 0,
], ids=["mod", "floordiv", "remainder_broadcast", "fmod_int32", "trunc_div", "rmod",
        "rfloordiv", "mod_number"])
def test_integer_zero_divisor_raises_as_pytorch(op):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(torch)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(nn)


def test_message_names_the_operation_and_a_way_out():
    with pytest.raises(RuntimeError, match=r"integer remainder by zero .*nn\.where"):
        nn.tensor([5, -5]) % nn.tensor([0, 0])


def test_nonzero_and_float_divisors_still_work():
    for op in (lambda m: m.tensor([7, -7]) % m.tensor([3, 3]),
               lambda m: 7 % m.tensor([3, -3]),
               lambda m: 7 // m.tensor([2, -2]),
               lambda m: m.tensor([5.0, -5.0]) % m.tensor([0.0, 0.0]),
               lambda m: m.fmod(m.tensor([5.0, 0.0]), m.tensor([0.0, 0.0]))):
        np.testing.assert_array_equal(op(nn).numpy(), op(torch).numpy())
